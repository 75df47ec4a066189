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
      path + ".tmp-" + host + "-" + std::to_string(getpid()) + "-" + std::to_string(++calls);
  std::ostringstream text;
  write(text);  // what it throws leaves nothing behind
  const std::string bytes = text.str();
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) throw FileError("cannot write '" + path + "'");
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
    std::remove(tmp.c_str());  // a failed write leaves nothing behind
    throw FileError("writing '" + path + "' failed");
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    throw FileError("cannot replace '" + path + "'");
  }
  const std::filesystem::path parent = std::filesystem::path(path).parent_path();
  const int dir = ::open(parent.empty() ? "." : parent.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir >= 0) {
    ::fsync(dir);  // the rename itself, on disk
    ::close(dir);
  }
}

}  // namespace marionette
