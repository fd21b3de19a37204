#include "base/file_util.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

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

namespace {

// The folder `path` lies in: "." for a bare name.
std::string ParentOf(const std::string& path) {
  const std::string parent = std::filesystem::path(path).parent_path().string();
  return parent.empty() ? "." : parent;
}

// Whether this process may create entries in the directory `dir` (EROFS on a read-only file system too).
Status CheckWritableDirectory(const std::string& dir, const std::string& flag, const std::string& verb,
                              const std::string& path) {
  if (::access(dir.c_str(), W_OK | X_OK) == 0) return Status::Ok();
  const std::string where = dir == path ? "" : " (in '" + dir + "')";
  return InvalidArgument(flag + ": cannot " + verb + " '" + path + "': " + std::strerror(errno) + where);
}

}  // namespace

Status CheckOutputFile(const std::string& path, const std::string& flag) {
  if (path.empty()) return InvalidArgument(flag + ": the path is empty");
  struct stat info {};
  if (::stat(path.c_str(), &info) == 0) {
    if (S_ISDIR(info.st_mode)) return InvalidArgument(flag + ": '" + path + "' is a directory");
    if (::access(path.c_str(), W_OK) != 0) {
      return InvalidArgument(flag + ": cannot write '" + path + "': " + std::strerror(errno));
    }
    return Status::Ok();
  }
  if (errno != ENOENT) {
    return InvalidArgument(flag + ": cannot write '" + path + "': " + std::strerror(errno));
  }
  const std::string parent = ParentOf(path);
  if (::stat(parent.c_str(), &info) != 0) {
    const std::string why = errno == ENOENT ? "no folder '" + parent + "'" : std::strerror(errno);
    return InvalidArgument(flag + ": cannot write '" + path + "': " + why);
  }
  if (!S_ISDIR(info.st_mode)) {
    return InvalidArgument(flag + ": cannot write '" + path + "': '" + parent + "' is not a directory");
  }
  return CheckWritableDirectory(parent, flag, "write", path);
}

Status CheckOutputDirectory(const std::string& path, const std::string& flag) {
  if (path.empty()) return InvalidArgument(flag + ": the path is empty");
  struct stat info {};
  if (::stat(path.c_str(), &info) == 0) {
    if (!S_ISDIR(info.st_mode)) return InvalidArgument(flag + ": '" + path + "' is not a directory");
    return CheckWritableDirectory(path, flag, "write into", path);
  }
  // Missing: the nearest existing parent must take new folders (ENOTDIR: a file on the way).
  std::string ancestor = path;
  while (::stat(ancestor.c_str(), &info) != 0) {
    if (errno != ENOENT && errno != ENOTDIR) {
      return InvalidArgument(flag + ": cannot create '" + path + "': " + std::strerror(errno));
    }
    const std::string parent = ParentOf(ancestor);
    if (parent == ancestor) break;  // "/" or "." that cannot be stat()ed (a removed working directory)
    ancestor = parent;
  }
  if (::stat(ancestor.c_str(), &info) == 0 && !S_ISDIR(info.st_mode)) {
    return InvalidArgument(flag + ": cannot create '" + path + "': '" + ancestor + "' is not a directory");
  }
  return CheckWritableDirectory(ancestor, flag, "create", path);
}

}  // namespace lockstep
