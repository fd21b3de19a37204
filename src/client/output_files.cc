#include "client/output_files.h"

#include <filesystem>
#include <fstream>
#include <system_error>

namespace lockstep::client {

Status WriteOutputFiles(const std::string& dir,
                        const std::vector<std::pair<std::string, std::string>>& files) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return InvalidArgument("cannot create output directory '" + dir + "': " + ec.message());
  for (const auto& [name, content] : files) {
    const std::string path = dir + "/" + name;
    std::ofstream out(path, std::ios::binary);
    out << content;
    if (!out) return InvalidArgument("cannot write '" + path + "'");
  }
  return Status::Ok();
}

}  // namespace lockstep::client
