// Writing a benchmark's result files: the output folder is created if needed, each file written whole; an
// error names the folder or file that could not be written.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "base/status.h"

namespace lockstep::client {

// files: (name within `dir`, content) pairs.
Status WriteOutputFiles(const std::string& dir,
                        const std::vector<std::pair<std::string, std::string>>& files);

}  // namespace lockstep::client
