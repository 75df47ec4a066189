#include "marionette/common/files.hpp"

#include <unistd.h>

#include <atomic>
#include <cctype>
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
  if (::access(folder.c_str(), W_OK) != 0)
    throw FileError("'" + folder + "': cannot write there");
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
  // A temporary of this call's own beside the file, then one rename: readers see the old file or
  // the new one, never a part, however many writers there are.
  static std::atomic<unsigned long> calls{0};
  const std::string tmp = path + ".tmp" + std::to_string(getpid()) + "-" + std::to_string(++calls);
  try {
    std::ofstream os(tmp, std::ios::binary);
    if (!os) throw FileError("cannot write '" + path + "'");
    write(os);
    os.flush();
    if (!os) throw FileError("writing '" + path + "' failed");
  } catch (...) {
    std::remove(tmp.c_str());  // a failed write leaves nothing behind
    throw;
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    throw FileError("cannot replace '" + path + "'");
  }
}

}  // namespace marionette
