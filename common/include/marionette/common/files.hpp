// SPDX-License-Identifier: BSD-3-Clause
// Internal (not installed): whole files in and out.
#pragma once

#include <cstddef>
#include <functional>
#include <limits>
#include <ostream>
#include <stdexcept>
#include <string>

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

// Writes a file through a temporary next to it and a rename, so that readers see the old file
// or the whole new one, and a failure leaves the old file and no temporary behind.  `write`
// fills the stream; what it throws is passed on after the cleanup.
void writeFileAtomically(const std::string& path, const std::function<void(std::ostream&)>& write);
// The same for `name` in the folder open as `folder_fd` (openat, renameat): the temporary is
// created exclusively (never through a symbolic link), and the rename replaces a link at `name`
// rather than the file it names.  FileError names `shown` (the file as the caller knows it).
void writeBytesAtomicallyAt(int folder_fd, const std::string& name, const std::string& bytes,
                            const std::string& shown);

// Whether writeFileAtomically(path) can succeed, checked before work whose result it would lose:
// FileError if path is a directory, or its folder does not exist or cannot be written.
void checkWritable(const std::string& path);

}  // namespace marionette
