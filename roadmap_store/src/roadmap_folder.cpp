// SPDX-License-Identifier: BSD-3-Clause
#include "roadmap_folder.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <mutex>

#include "marionette/common/files.hpp"
#include "marionette/search/roadmap.hpp"

namespace marionette::detail {
namespace {

std::string kindOf(mode_t mode) {
  if (S_ISLNK(mode)) return "a symbolic link";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISCHR(mode) || S_ISBLK(mode)) return "a device";
  return "not a regular file";
}

}  // namespace

RoadmapFolder::RoadmapFolder(std::string path) : path_(std::move(path)) {
  fd();
}

RoadmapFolder::~RoadmapFolder() {
  if (fd_ >= 0) ::close(fd_);
}

int RoadmapFolder::fd() const {
  std::lock_guard<std::mutex> lock(mutex_);  // opened once, by whichever call comes first
  if (fd_ < 0) fd_ = ::open(path_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  return fd_;
}

bool RoadmapFolder::exists(const std::string& name) const {
  struct stat st {};
  return fd() >= 0 && ::fstatat(fd(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0;
}

std::uint64_t RoadmapFolder::fileId(const std::string& name) const {
  struct stat st {};
  if (fd() < 0 || ::fstatat(fd(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) return 0;
  return idOf(st);
}

std::uint64_t RoadmapFolder::idOf(const struct stat& st) {
  if (!S_ISREG(st.st_mode)) return 0;
  // FNV-1a over the four numbers: a rename puts another file there, whose inode may be one the
  // file before last had.
  std::uint64_t id = 1469598103934665603ull;
  for (const std::uint64_t part :
       {static_cast<std::uint64_t>(st.st_ino), static_cast<std::uint64_t>(st.st_size),
        static_cast<std::uint64_t>(st.st_mtim.tv_sec),
        static_cast<std::uint64_t>(st.st_mtim.tv_nsec)})
    id = (id ^ part) * 1099511628211ull;
  return id == 0 ? 1 : id;
}

std::string RoadmapFolder::read(const std::string& name, std::size_t max_bytes) const {
  const std::string shown = pathOf(name);
  if (fd() < 0) throw RoadmapFileUnreadable(shown + ": cannot open its folder");
  const int file = ::openat(fd(), name.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (file < 0) {
    const int error = errno;
    struct stat st {};
    if (::fstatat(fd(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && !S_ISREG(st.st_mode))
      throw RoadmapFileError(shown + ": " + kindOf(st.st_mode) + ", not a regular file");
    throw RoadmapFileUnreadable(shown + ": cannot open (" + std::strerror(error) + ")");
  }
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{file};
  struct stat st {};
  if (::fstat(file, &st) != 0) {
    const int error = errno;
    throw RoadmapFileUnreadable(shown + ": cannot read (" + std::strerror(error) + ")");
  }
  if (!S_ISREG(st.st_mode))
    throw RoadmapFileError(shown + ": " + kindOf(st.st_mode) + ", not a regular file");
  if (static_cast<std::uint64_t>(st.st_size) > max_bytes)
    throw RoadmapFileError(shown + ": " + std::to_string(st.st_size) +
                           " bytes, more than such a roadmap takes (" +
                           std::to_string(max_bytes) + ")");
  // Read to its end, never past the bound (a file that grows meanwhile).
  std::string bytes;
  char buffer[1 << 16];
  while (true) {
    const ssize_t n = ::read(file, buffer, sizeof buffer);
    const int error = errno;
    if (n < 0 && error == EINTR) continue;
    if (n < 0) throw RoadmapFileUnreadable(shown + ": cannot read (" + std::strerror(error) + ")");
    if (n == 0) break;
    bytes.append(buffer, static_cast<std::size_t>(n));
    if (bytes.size() > max_bytes)
      throw RoadmapFileError(shown + ": more than such a roadmap takes (" +
                             std::to_string(max_bytes) + " bytes)");
  }
  return bytes;
}

void RoadmapFolder::write(const std::string& name, const std::string& bytes) const {
  if (fd() < 0) throw FileError("cannot write '" + pathOf(name) + "' (no folder)");
  writeBytesAtomicallyAt(fd(), name, bytes, pathOf(name));
}

std::unique_ptr<FileLock> RoadmapFolder::lock(const std::string& name,
                                              const std::function<bool()>& keep_waiting) const {
  if (fd() < 0) return nullptr;
  return FileLock::acquireAt(fd(), name, keep_waiting);
}

std::string RoadmapFolder::rename(const std::string& from, const std::string& to) const {
  if (fd() < 0) return "cannot open its folder";
  if (::renameat(fd(), from.c_str(), fd(), to.c_str()) != 0) {
    const int error = errno;
    return std::strerror(error);
  }
  return "";
}

}  // namespace marionette::detail
