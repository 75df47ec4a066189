// SPDX-License-Identifier: BSD-3-Clause
// Scratch folders for tests that write files (meshes, scene and model files).
#pragma once

#include <unistd.h>

#include <filesystem>
#include <string>

namespace marionette::test {

// A fresh, empty folder under the system's temporary directory, unique to this process and
// `name`.
inline std::string scratchDir(const std::string& name) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() /
                                    ("marionette-test-" + std::to_string(::getpid()) + "-" + name);
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir.string();
}

}  // namespace marionette::test
