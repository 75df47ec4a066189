// Small helpers shared by the CLI's commands: JSON text, argument parsing, numbers.
#pragma once

#include <map>
#include <string>
#include <vector>

namespace marionette::cli {

std::string jsonString(const std::string& s);
std::string jsonArray(const std::vector<std::string>& items);
std::string jsonNumber(double x);  // "null" when not finite

// --flag value pairs and bare --switches; anything else is an error naming it.  `values` keeps
// the last value of a flag, `all` every value of a repeatable one.
struct Args {
  std::map<std::string, std::string> values;
  std::map<std::string, std::vector<std::string>> all;
  std::map<std::string, bool> switches;
  bool has(const std::string& flag) const { return values.count(flag) || switches.count(flag); }
};
Args parseArgs(int argc, char** argv, int first, const std::vector<std::string>& value_flags,
               const std::vector<std::string>& switch_flags);

// A finite number, or std::invalid_argument naming the flag.
double parseNumber(const std::string& flag, const std::string& text);

// "a,b,,c" -> {"a", "b", "c"}.
std::vector<std::string> splitCommas(const std::string& s);

std::string formatted(const char* format, ...) __attribute__((format(printf, 1, 2)));

template <class T>
std::vector<std::string> itemNames(const std::vector<T>& v) {
  std::vector<std::string> out;
  for (const auto& x : v) out.push_back(x.name);
  return out;
}

// Writes a file through a temporary and a rename, so that a failure leaves no half-written
// file.  `write` fills the stream.  Throws std::runtime_error naming the path.
template <class Write>
void writeFileAtomically(const std::string& path, Write write);

}  // namespace marionette::cli

#include <cstdio>
#include <fstream>
#include <stdexcept>

template <class Write>
void marionette::cli::writeFileAtomically(const std::string& path, Write write) {
  const std::string tmp = path + ".tmp";
  try {
    std::ofstream os(tmp);
    if (!os) throw std::runtime_error(path + ": cannot write");
    write(os);
    os.flush();
    if (!os) throw std::runtime_error(path + ": write failed");
  } catch (...) {
    std::remove(tmp.c_str());  // a failed write leaves nothing behind
    throw;
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    throw std::runtime_error(path + ": cannot replace the file");
  }
}
