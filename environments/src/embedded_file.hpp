// Files embedded in the library at build time (cmake/embed_files.cmake).
#pragma once

namespace marionette::embedded {

struct File {
  const char* path;           // relative to the embedded folder, '/'-separated
  const unsigned char* data;  // `size` bytes (followed by one 0 byte)
  unsigned long size;
};

// environments/scenes/: the built-in scene files and their meshes.
extern const File kSceneFiles[];
extern const unsigned long kSceneFiles_count;

}  // namespace marionette::embedded
