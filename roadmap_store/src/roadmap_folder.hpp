// SPDX-License-Identifier: BSD-3-Clause
// The roadmap folder a cache keeps its files in, opened once: every file in it is reached
// relative to the folder's descriptor (openat), never through a symbolic link (O_NOFOLLOW:
// a roadmap linked to /etc/passwd or /dev/zero is not read, a lock linked elsewhere not
// created), never waited on (O_NONBLOCK: a FIFO in a roadmap's place), and read only if it is
// a regular file, no larger than the caller's bound (fstat, then a bounded read).
#pragma once

#include <sys/stat.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>

#include "marionette/common/file_lock.hpp"

namespace marionette::detail {

class RoadmapFolder {
 public:
  // Opened now, or at the first use after it comes to exist.
  explicit RoadmapFolder(std::string path);
  ~RoadmapFolder();
  RoadmapFolder(const RoadmapFolder&) = delete;
  RoadmapFolder& operator=(const RoadmapFolder&) = delete;

  const std::string& path() const { return path_; }
  std::string pathOf(const std::string& name) const { return path_ + "/" + name; }

  // Whether anything (of any kind) is at `name`.
  bool exists(const std::string& name) const;
  // Which regular file `name` is now (inode, size, modification time), 0 when none is.
  std::uint64_t fileId(const std::string& name) const;
  // The same for a file's status (0 unless a regular file).
  static std::uint64_t idOf(const struct stat& st);
  // The file's bytes.  Throws RoadmapFileError when it is not a regular file (a symbolic link,
  // a FIFO, a directory) or is larger than max_bytes, RoadmapFileUnreadable when it cannot be
  // opened (permissions, no descriptor left).
  std::string read(const std::string& name, std::size_t max_bytes) const;
  // Written atomically (common/files.hpp writeBytesAtomicallyAt); throws FileError.
  void write(const std::string& name, const std::string& bytes) const;
  // The lock file `name` (FileLock::acquireAt); null as there.
  std::unique_ptr<FileLock> lock(const std::string& name,
                                 const std::function<bool()>& keep_waiting) const;
  // Renames `from` to `to` within the folder (a symbolic link is renamed, not followed); "" or
  // why not.
  std::string rename(const std::string& from, const std::string& to) const;

 private:
  int fd() const;  // the folder's descriptor, -1 when it cannot be opened (yet)
  std::string path_;
  mutable std::mutex mutex_;
  mutable int fd_ = -1;
};

}  // namespace marionette::detail
