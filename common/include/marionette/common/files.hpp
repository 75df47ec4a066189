// SPDX-License-Identifier: BSD-3-Clause
// Internal (not installed): whole files in and out.
#pragma once

#include <cstddef>
#include <functional>
#include <limits>
#include <ostream>
#include <stdexcept>
#include <string>

#pragma GCC visibility push(default)  // the library's API (docs/design.md, layout)

namespace marionette {

// A file that cannot be read or written; what() reads "'PATH': problem" (callers prefix it with
// the flag or option that named the file).
class FileError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The whole file, bytes as they are; FileError for a directory, or a file of more than max_bytes
// (a path such as /dev/zero is refused, not read for ever).
std::string readTextFile(const std::string& path,
                         std::size_t max_bytes = std::numeric_limits<std::size_t>::max());

// The same for a front end's input file: Error(PATH + ": cannot read the <what> (<why>)").
template <class Error>
std::string readInputFile(const std::string& path, std::size_t max_bytes, const std::string& what) {
  try {
    return readTextFile(path, max_bytes);
  } catch (const FileError& e) {
    throw Error(path + ": cannot read the " + what + " (" + e.what() + ")");
  }
}

// Its first line without trailing white space; FileError if that is empty.
std::string readFirstLine(const std::string& path);

// An output the user named, claimed before the work whose result it will hold (a run that moves a
// rig, a long search), so that a name the file system refuses fails before the work, not after
// it.  A regular file, or a new name, is written through a temporary created here beside it and
// renamed over it by commit(): readers see the old file or the whole new one, and a failure
// leaves the old one.  A FIFO or a character device (a pipe, /dev/stdout, /dev/null) is opened
// here and written through: never replaced.  A symbolic link is followed (what it names is
// written; the link stays).  Refused with FileError: a directory, a block device, a socket, a
// link to nothing, a name longer than its folder allows, a folder that does not exist or cannot
// be written.  (Opening a FIFO waits for its reader, as a shell's redirection does.)
class OutputFile {
 public:
  explicit OutputFile(const std::string& path);
  ~OutputFile();  // an uncommitted temporary is removed
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;

  // Writes `bytes` as the file's whole content, once.  FileError when it cannot; when only the
  // rename failed, the temporary holding the bytes is kept, and the message names it.
  void commit(const std::string& bytes);
  const std::string& path() const { return path_; }

 private:
  std::string path_;  // as given
  std::string folder_;
  int folder_fd_ = -1;
  std::string name_, temporary_;  // within the folder
  int fd_ = -1;                   // the temporary's, or the FIFO's / device's
  bool through_ = false;          // written through (a FIFO or a device)
  bool committed_ = false;
};

// OutputFile(path) and commit(what `write` puts in the stream).  `write` runs first: what it
// throws is passed on and leaves nothing behind.
void writeFileAtomically(const std::string& path, const std::function<void(std::ostream&)>& write);
// The same for `name` in the folder open as `folder_fd` (openat, renameat): the temporary is
// created exclusively (never through a symbolic link), and the rename replaces a link at `name`
// rather than the file it names.  FileError names `shown` (the file as the caller knows it).
void writeBytesAtomicallyAt(int folder_fd, const std::string& name, const std::string& bytes,
                            const std::string& shown);

// Whether OutputFile(path) can succeed, checked before work whose result it would lose, without
// creating anything: FileError as OutputFile's.
void checkWritable(const std::string& path);

}  // namespace marionette

#pragma GCC visibility pop
