// SPDX-License-Identifier: BSD-3-Clause
#include "marionette/search/plugin.hpp"

#include <dlfcn.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <mutex>

#include "marionette/models/field_error.hpp"
#include "marionette/search/registry.hpp"

namespace marionette {

std::vector<std::string> loadPlannerPlugin(const std::string& path) {
  // One plugin loads at a time: what it registered is what the table gained meanwhile.
  static std::mutex loading;
  std::lock_guard<std::mutex> lock(loading);
  // A name without a slash would be searched for on the library path: always a file.
  const std::string file = path.find('/') == std::string::npos ? "./" + path : path;
  // A regular file only, checked without waiting (dlopen would block for ever on a FIFO).  (By
  // its path, not its descriptor: glibc tells loaded libraries apart by the name dlopen is
  // given, and /proc/self/fd/N names another library each time N is reused.)
  const int fd = ::open(file.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0)
    throw FieldError("plugin", path + ": cannot be loaded (" + std::strerror(errno) + ")");
  struct stat st {};
  const bool regular = ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode);
  ::close(fd);
  if (!regular) throw FieldError("plugin", path + ": cannot be loaded (not a regular file)");
  void* handle = dlopen(file.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char* why = dlerror();
    throw FieldError("plugin", path + ": cannot be loaded (" + (why ? why : "unknown") + ")");
  }
  using Entry = void (*)();
  dlerror();
  const auto entry = reinterpret_cast<Entry>(dlsym(handle, kPluginEntryPoint));
  if (!entry)
    throw FieldError("plugin", path + ": defines no " + kPluginEntryPoint + "()");
  const std::size_t before = plannerTable().size();
  try {
    entry();
  } catch (const std::exception& e) {
    throw FieldError("plugin", path + ": " + kPluginEntryPoint + "() failed: " + e.what());
  } catch (...) {  // whatever it throws, the process goes on
    throw FieldError("plugin", path + ": " + kPluginEntryPoint +
                                   "() failed: it threw something that is not a std::exception");
  }
  const std::vector<PlannerInfo> table = plannerTable();
  std::vector<std::string> added;
  for (std::size_t i = before; i < table.size(); ++i) added.push_back(table[i].name);
  if (added.empty())
    throw FieldError("plugin", path + ": " + kPluginEntryPoint + "() registered no planner");
  return added;
}

}  // namespace marionette
