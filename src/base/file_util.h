// Reading a file named on the command line (a flag's FILE, or "-" for standard input) whole: the one place
// every CLI file flag reads its file, so that each refuses a directory and reports failures the same way.
// And the checks of output paths made before the work whose result goes there.
// Thread-safe (no shared state).
#pragma once

#include <string>

#include "base/status.h"

namespace lockstep {

// The bytes of `path` exactly (no newline translation; NUL bytes kept), or of standard input when `path` is
// "-". Errors name the flag and the file, e.g. "-f/--file: 'adir' is a directory", "--context: cannot open
// 'x.txt': No such file or directory", "--dataset: error reading 'd.jsonl': Input/output error".
// An empty file is not an error here: each caller says what empty means for it.
Result<std::string> ReadFlagFile(const std::string& path, const std::string& flag);

// InvalidArgument("<flag>: <what> is a directory") when the open descriptor `fd` is a directory, else Ok.
// For input read as a stream (chat's standard input) rather than whole.
Status RefuseDirectory(int fd, const std::string& flag, const std::string& what);

// Whether a file can be written at `path` (created or replaced), checked before long work whose result goes
// there; creates nothing. InvalidArgument naming the flag: "--json: 'out' is a directory", "--json: cannot
// write 'no/r.json': no folder 'no'", "--json: cannot write 'r.json': Permission denied".
Status CheckOutputFile(const std::string& path, const std::string& flag);

// The same for a directory that will be created (with its missing parents) and written into: `path` must be
// a writable directory, or its nearest existing parent must be one. "--out: 'r.json' is not a directory",
// "--out: cannot create 'f/sub': 'f' is not a directory".
Status CheckOutputDirectory(const std::string& path, const std::string& flag);

}  // namespace lockstep
