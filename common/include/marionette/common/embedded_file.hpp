// SPDX-License-Identifier: BSD-3-Clause
// Files embedded in a library at build time (cmake/embed_files.cmake): the built-in models, the
// built-in scenes and their meshes, so that the binaries need no data files at run time.
#pragma once

#include <string>
#include <vector>

#pragma GCC visibility push(default)  // the library's API (docs/design.md, layout)

namespace marionette::embedded {

struct File {
  const char* path;           // relative to the embedded folder, '/'-separated
  const unsigned char* data;  // `size` bytes, followed by one 0 byte
  unsigned long size;

  std::string text() const { return std::string(reinterpret_cast<const char*>(data), size); }
};

struct FileSet {
  const File* files;
  unsigned long count;

  // The file at `path`, or nullptr.
  const File* find(const std::string& path) const {
    for (unsigned long i = 0; i < count; ++i)
      if (path == files[i].path) return &files[i];
    return nullptr;
  }
  // The names of the top-level files ending in `.extension`, without it ("table.yaml": "table").
  std::vector<std::string> topLevelNames(const std::string& extension) const {
    std::vector<std::string> out;
    const std::string suffix = "." + extension;
    for (unsigned long i = 0; i < count; ++i) {
      const std::string p = files[i].path;
      if (p.find('/') == std::string::npos && p.size() > suffix.size() &&
          p.compare(p.size() - suffix.size(), suffix.size(), suffix) == 0)
        out.push_back(p.substr(0, p.size() - suffix.size()));
    }
    return out;
  }
};

}  // namespace marionette::embedded

#pragma GCC visibility pop
