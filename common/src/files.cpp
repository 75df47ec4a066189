// SPDX-License-Identifier: BSD-3-Clause
#include "marionette/common/files.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace marionette {

std::string readTextFile(const std::string& path, std::size_t max_bytes) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) throw FileError("'" + path + "' is a directory");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw FileError("cannot read '" + path + "'");
  std::string text;
  char buffer[1 << 16];
  while (in.read(buffer, sizeof buffer) || in.gcount() > 0) {
    text.append(buffer, static_cast<std::size_t>(in.gcount()));
    if (text.size() > max_bytes)
      throw FileError("'" + path + "' is larger than " + std::to_string(max_bytes) + " bytes");
  }
  if (in.bad()) throw FileError("cannot read '" + path + "'");
  return text;
}

std::string readFirstLine(const std::string& path) {
  std::istringstream is(readTextFile(path));
  std::string line;
  std::getline(is, line);
  while (!line.empty() && std::isspace(static_cast<unsigned char>(line.back()))) line.pop_back();
  if (line.empty()) throw FileError("'" + path + "' is empty");
  return line;
}

namespace {

std::string errnoText() {
  return std::strerror(errno);
}

// What an output path names, after a symbolic link (followed): where a regular file's (or a new
// name's) temporary goes, or a FIFO or character device to write through.  FileError for what is
// never written: a directory, a block device, a socket, a link to nothing.
struct OutputTarget {
  std::string folder, name;  // a regular file or a new name
  bool through = false;      // a FIFO or a character device: `path` written through
};

OutputTarget outputTarget(const std::string& path) {
  if (path.empty()) throw FileError("an empty path");
  OutputTarget t;
  std::string target = path;
  struct stat st {};
  if (::lstat(path.c_str(), &st) == 0 && S_ISLNK(st.st_mode)) {
    if (::stat(path.c_str(), &st) != 0)
      throw FileError("'" + path + "' is a symbolic link to nothing");
    if (S_ISREG(st.st_mode)) {  // the file it names is replaced, not the link
      char* real = ::realpath(path.c_str(), nullptr);
      if (!real) throw FileError("cannot follow '" + path + "' (" + errnoText() + ")");
      target = real;
      std::free(real);
    }
  } else if (::stat(path.c_str(), &st) != 0) {
    st.st_mode = 0;  // a new name
  }
  if (S_ISDIR(st.st_mode)) throw FileError("'" + path + "' is a directory");
  if (S_ISFIFO(st.st_mode) || S_ISCHR(st.st_mode)) {
    t.through = true;
    return t;
  }
  if (S_ISBLK(st.st_mode)) throw FileError("'" + path + "' is a block device: never written");
  if (st.st_mode != 0 && !S_ISREG(st.st_mode))
    throw FileError("'" + path + "' is not a file that can be written");
  const std::filesystem::path p(target);
  t.folder = p.parent_path().empty() ? "." : p.parent_path().string();
  t.name = p.filename().string();
  if (t.name.empty() || t.name == "." || t.name == "..")
    throw FileError("'" + path + "' names no file");
  return t;
}

// The folder open for openat, checked for the name's length; FileError naming `path`.
int openFolderFor(const OutputTarget& t, const std::string& path) {
  const int fd = ::open(t.folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) {
    const std::string why = errnoText();
    throw FileError("'" + t.folder + "': " + (errno == ENOENT ? "no such folder" : why));
  }
  const long max_name = ::fpathconf(fd, _PC_NAME_MAX);
  if (max_name > 0 && static_cast<long>(t.name.size()) > max_name) {
    ::close(fd);
    throw FileError("'" + path + "': the file name is " + std::to_string(t.name.size()) +
                    " bytes, longer than its folder allows (" + std::to_string(max_name) + ")");
  }
  return fd;
}

// A temporary of this call's own beside `name` (named by host, process and call, so that servers
// on several machines sharing the folder never pick the same one, and short enough for any name
// the folder takes), created exclusively and never through a link.  Its descriptor, or -1.
int createTemporary(int folder_fd, const std::string& name, std::string& temporary) {
  static std::atomic<unsigned long> calls{0};
  char host[64] = "host";
  ::gethostname(host, sizeof host - 1);
  host[sizeof host - 1] = '\0';
  for (char* c = host; *c; ++c)
    if (*c == '/') *c = '_';
  const std::string suffix = ".tmp-" + std::string(host).substr(0, 32) + "-" +
                             std::to_string(getpid()) + "-" + std::to_string(++calls);
  long max_name = ::fpathconf(folder_fd, _PC_NAME_MAX);
  if (max_name <= 0) max_name = 255;
  const std::size_t keep = static_cast<std::size_t>(
      std::max(1L, max_name - static_cast<long>(suffix.size())));
  temporary = name.substr(0, keep) + suffix;
  return ::openat(folder_fd, temporary.c_str(),
                  O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
}

// All of `bytes` to fd (a write interrupted by a signal is resumed); false on an error.
bool writeAll(int fd, const std::string& bytes) {
  std::size_t written = 0;
  while (written < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + written, bytes.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    written += static_cast<std::size_t>(n);
  }
  return true;
}

}  // namespace

void checkWritable(const std::string& path) {
  const OutputTarget t = outputTarget(path);
  if (t.through) return;
  const int fd = openFolderFor(t, path);
  const bool can = ::faccessat(fd, ".", W_OK, 0) == 0;
  ::close(fd);
  if (!can) throw FileError("'" + t.folder + "': cannot write there");
}

OutputFile::OutputFile(const std::string& path) : path_(path) {
  const OutputTarget t = outputTarget(path);
  if (t.through) {
    through_ = true;
    fd_ = ::open(path.c_str(), O_WRONLY | O_NOCTTY | O_CLOEXEC);
    if (fd_ < 0) throw FileError("cannot write '" + path + "' (" + errnoText() + ")");
    return;
  }
  folder_fd_ = openFolderFor(t, path);
  folder_ = t.folder;
  name_ = t.name;
  fd_ = createTemporary(folder_fd_, name_, temporary_);
  if (fd_ < 0) {
    const std::string why = errnoText();
    ::close(folder_fd_);
    throw FileError("cannot write in '" + t.folder + "' (" + why + ")");
  }
}

OutputFile::~OutputFile() {
  if (fd_ >= 0) ::close(fd_);
  if (!committed_ && !temporary_.empty()) ::unlinkat(folder_fd_, temporary_.c_str(), 0);
  if (folder_fd_ >= 0) ::close(folder_fd_);
}

void OutputFile::commit(const std::string& bytes) {
  if (committed_ || fd_ < 0) throw FileError("'" + path_ + "' was written already");
  const bool wrote = writeAll(fd_, bytes) && (through_ || ::fsync(fd_) == 0);
  const std::string why = errnoText();
  ::close(fd_);
  fd_ = -1;
  if (through_) {
    committed_ = true;
    if (!wrote) throw FileError("writing '" + path_ + "' failed (" + why + ")");
    return;
  }
  if (!wrote) throw FileError("writing '" + path_ + "' failed (" + why + ")");
  if (::renameat(folder_fd_, temporary_.c_str(), folder_fd_, name_.c_str()) != 0) {
    // What was written is kept: the caller's result is not lost.
    committed_ = true;
    const std::string kept = (std::filesystem::path(folder_) / temporary_).string();
    throw FileError("cannot replace '" + path_ + "' (" + errnoText() + "); what was written is in '" +
                    kept + "'");
  }
  committed_ = true;
  ::fsync(folder_fd_);  // the rename itself, on disk
}

void writeFileAtomically(const std::string& path, const std::function<void(std::ostream&)>& write) {
  std::ostringstream text;
  write(text);  // what it throws leaves nothing behind
  OutputFile(path).commit(text.str());
}

void writeBytesAtomicallyAt(int folder_fd, const std::string& name, const std::string& bytes,
                            const std::string& shown) {
  // Written and synced, then one rename, then the folder synced: readers see the old file or the
  // whole new one, however many writers there are, and a crash leaves one of the two on disk.
  std::string tmp;
  const int fd = createTemporary(folder_fd, name, tmp);
  if (fd < 0) throw FileError("cannot write '" + shown + "'");
  const bool ok = writeAll(fd, bytes) && ::fsync(fd) == 0;
  ::close(fd);
  if (!ok) {
    ::unlinkat(folder_fd, tmp.c_str(), 0);  // a failed write leaves nothing behind
    throw FileError("writing '" + shown + "' failed");
  }
  if (::renameat(folder_fd, tmp.c_str(), folder_fd, name.c_str()) != 0) {
    ::unlinkat(folder_fd, tmp.c_str(), 0);
    throw FileError("cannot replace '" + shown + "'");
  }
  ::fsync(folder_fd);  // the rename itself, on disk
}

}  // namespace marionette
