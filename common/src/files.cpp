// SPDX-License-Identifier: BSD-3-Clause
#include "marionette/common/files.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cctype>
#include <cerrno>
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

void checkWritable(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (path.empty()) throw FileError("an empty path");
  if (fs::is_directory(path, ec)) throw FileError("'" + path + "' is a directory");
  const fs::path parent = fs::path(path).parent_path();
  const std::string folder = parent.empty() ? "." : parent.string();
  if (!fs::is_directory(folder, ec)) throw FileError("'" + folder + "': no such folder");
  if (::access(folder.c_str(), W_OK) != 0) throw FileError("'" + folder + "': cannot write there");
}

std::string readFirstLine(const std::string& path) {
  std::istringstream is(readTextFile(path));
  std::string line;
  std::getline(is, line);
  while (!line.empty() && std::isspace(static_cast<unsigned char>(line.back()))) line.pop_back();
  if (line.empty()) throw FileError("'" + path + "' is empty");
  return line;
}

void writeFileAtomically(const std::string& path, const std::function<void(std::ostream&)>& write) {
  std::ostringstream text;
  write(text);  // what it throws leaves nothing behind
  const std::filesystem::path parent = std::filesystem::path(path).parent_path();
  const int folder =
      ::open(parent.empty() ? "." : parent.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (folder < 0) throw FileError("cannot write '" + path + "'");
  try {
    writeBytesAtomicallyAt(folder, std::filesystem::path(path).filename().string(), text.str(),
                           path);
  } catch (...) {
    ::close(folder);
    throw;
  }
  ::close(folder);
}

void writeBytesAtomicallyAt(int folder_fd, const std::string& name, const std::string& bytes,
                            const std::string& shown) {
  // A temporary of this call's own beside the file (named by host, process and call, so that
  // servers on several machines sharing the folder never pick the same one), written and synced,
  // then one rename, then the folder synced: readers see the old file or the whole new one,
  // however many writers there are, and a crash leaves one of the two on disk.
  static std::atomic<unsigned long> calls{0};
  char host[64] = "host";
  ::gethostname(host, sizeof host - 1);
  host[sizeof host - 1] = '\0';
  for (char* c = host; *c; ++c)
    if (*c == '/') *c = '_';
  const std::string tmp =
      name + ".tmp-" + host + "-" + std::to_string(getpid()) + "-" + std::to_string(++calls);
  const int fd = ::openat(folder_fd, tmp.c_str(),
                          O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0) throw FileError("cannot write '" + shown + "'");
  std::size_t written = 0;
  while (written < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + written, bytes.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    written += static_cast<std::size_t>(n);
  }
  const bool ok = written == bytes.size() && ::fsync(fd) == 0;
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
