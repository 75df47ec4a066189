// SPDX-License-Identifier: BSD-3-Clause
#include "marionette/common/file_lock.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <thread>

namespace marionette {

std::unique_ptr<FileLock> FileLock::acquire(const std::string& path,
                                            const std::function<bool()>& keep_waiting) {
  return acquireAt(AT_FDCWD, path, keep_waiting);
}

std::unique_ptr<FileLock> FileLock::acquireAt(int folder_fd, const std::string& name,
                                              const std::function<bool()>& keep_waiting) {
  // Never through a symbolic link (it could name a file anywhere, which O_CREAT would make), and
  // never waiting on a FIFO to open.
  const int fd = ::openat(folder_fd, name.c_str(),
                          O_RDWR | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0644);
  if (fd < 0) return nullptr;
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return nullptr;
  }
  struct flock whole {};
  whole.l_type = F_WRLCK;
  whole.l_whence = SEEK_SET;  // from the start, l_len 0: the whole file
  while (true) {
    if (::fcntl(fd, F_OFD_SETLK, &whole) == 0) return std::unique_ptr<FileLock>(new FileLock(fd));
    if (errno != EAGAIN && errno != EACCES && errno != EINTR) break;  // no locks here
    if (keep_waiting && !keep_waiting()) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ::close(fd);
  return nullptr;
}

FileLock::~FileLock() {
  ::close(fd_);  // releases the lock
}

}  // namespace marionette
