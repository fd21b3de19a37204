#include "base/file_util.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace lockstep {

Status RefuseDirectory(int fd, const std::string& flag, const std::string& what) {
  struct stat info {};
  if (::fstat(fd, &info) == 0 && S_ISDIR(info.st_mode))
    return InvalidArgument(flag + ": " + what + " is a directory");
  return Status::Ok();
}

Result<std::string> ReadFlagFile(const std::string& path, const std::string& flag) {
  const bool standard_input = path == "-";
  const std::string what = standard_input ? std::string("standard input") : "'" + path + "'";
  const int fd = standard_input ? STDIN_FILENO : ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return NotFound(flag + ": cannot open " + what + ": " + std::strerror(errno));
  Status status = RefuseDirectory(fd, flag, what);
  std::string bytes;
  char buffer[1 << 16];
  while (status.ok()) {
    const ssize_t n = ::read(fd, buffer, sizeof(buffer));
    if (n > 0) {
      bytes.append(buffer, static_cast<size_t>(n));
    } else if (n == 0) {
      break;
    } else if (errno != EINTR) {
      status = InvalidArgument(flag + ": error reading " + what + ": " + std::strerror(errno));
    }
  }
  if (!standard_input) ::close(fd);
  if (!status.ok()) return status;
  return bytes;
}

}  // namespace lockstep
