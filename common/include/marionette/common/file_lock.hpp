// SPDX-License-Identifier: BSD-3-Clause
// Internal (not installed): an exclusive lock on a file, between threads, processes and machines
// sharing a folder.
#pragma once

#include <functional>
#include <memory>
#include <string>

#pragma GCC visibility push(default)  // the library's API (docs/design.md, layout)

namespace marionette {

// An open-file-description lock (Linux's F_OFD_SETLK) on a lock file: exclusive between any two
// FileLocks, whether in one process or on two machines over NFS (the kernel and the NFS lock
// protocol hold it, and release it when the holder dies, SIGKILL included).  The lock file
// itself is left in place; only the lock on it matters.
class FileLock {
 public:
  // Waits for the lock on `path` (created if missing), polling every 20 ms while `keep_waiting`
  // (if given) says so.  Returns null when the lock file cannot be opened (a read-only folder, a
  // missing one: the caller goes on without it), is not a regular file (a symbolic link is
  // never followed, a FIFO never waited on), or when keep_waiting said stop.
  static std::unique_ptr<FileLock> acquire(const std::string& path,
                                           const std::function<bool()>& keep_waiting = {});
  // The same for `name` in the folder open as `folder_fd` (openat): a lock file that a symbolic
  // link elsewhere in the path cannot redirect either.
  static std::unique_ptr<FileLock> acquireAt(int folder_fd, const std::string& name,
                                             const std::function<bool()>& keep_waiting = {});
  ~FileLock();
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;

 private:
  explicit FileLock(int fd) : fd_(fd) {}
  int fd_;
};

}  // namespace marionette

#pragma GCC visibility pop
