// SPDX-License-Identifier: BSD-3-Clause
// Outputs the user names (common/files.hpp): claimed before the work, written whole, and never a
// special file replaced; and the one number grammar of every flag and file (common/text.hpp).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

#include "marionette/common/files.hpp"
#include "marionette/common/text.hpp"

namespace fs = std::filesystem;
using namespace marionette;

namespace {

struct TempFolder {
  fs::path path;
  TempFolder() {
    char name[] = "/tmp/marionette-files-XXXXXX";
    path = ::mkdtemp(name);
  }
  ~TempFolder() { fs::remove_all(path); }
  std::string operator/(const std::string& name) const { return (path / name).string(); }
};

std::string contents(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

int entries(const fs::path& folder) {
  int n = 0;
  for (const auto& e : fs::directory_iterator(folder)) n += !e.path().empty();
  return n;
}

}  // namespace

TEST(OutputFile, ANameTheFileSystemRefusesFailsWhenOpenedNotWhenWritten) {
  const TempFolder t;
  const std::string long_name = t / std::string(300, 'r');
  EXPECT_THROW(OutputFile{long_name}, FileError);
  EXPECT_THROW(checkWritable(long_name), FileError);
  EXPECT_THROW(OutputFile{t / "no-such-folder/report.json"}, FileError);
  EXPECT_THROW(OutputFile{t.path.string()}, FileError);  // a directory
  EXPECT_EQ(entries(t.path), 0);  // nothing left behind
  // A name the folder allows, however close to its limit, is written.
  const std::string longest = t / std::string(255, 'a');
  OutputFile ok(longest);
  ok.commit("x");
  EXPECT_EQ(contents(longest), "x");
  EXPECT_EQ(entries(t.path), 1);
}

TEST(OutputFile, ARegularFileIsReplacedWholeAtCommitAndKeptUntilThen) {
  const TempFolder t;
  const std::string path = t / "report.json";
  std::ofstream(path) << "old";
  {
    OutputFile out(path);
    EXPECT_EQ(contents(path), "old");  // readers see the old file until the commit
    EXPECT_EQ(entries(t.path), 2);     // its temporary, beside it
    out.commit("new");
    EXPECT_THROW(out.commit("again"), FileError);
  }
  EXPECT_EQ(contents(path), "new");
  EXPECT_EQ(entries(t.path), 1);
  {
    OutputFile abandoned(path);  // never committed: the old file stays, no temporary
  }
  EXPECT_EQ(contents(path), "new");
  EXPECT_EQ(entries(t.path), 1);
}

TEST(OutputFile, ALinkIsFollowedAndStaysALink) {
  const TempFolder t;
  const std::string target = t / "target.json", link = t / "link.json";
  std::ofstream(target) << "old";
  fs::create_symlink(target, link);
  OutputFile(link).commit("new");
  EXPECT_TRUE(fs::is_symlink(link));
  EXPECT_EQ(contents(target), "new");
  // A link to nothing is refused, and left as it is.
  const std::string dangling = t / "dangling.json";
  fs::create_symlink(t / "nowhere/x.json", dangling);
  EXPECT_THROW(OutputFile{dangling}, FileError);
  EXPECT_TRUE(fs::is_symlink(dangling));
}

TEST(OutputFile, SpecialFilesAreWrittenThroughNeverReplaced) {
  const TempFolder t;
  // A FIFO: its reader gets the bytes, and it is a FIFO still.
  const std::string fifo = t / "pipe";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  std::string read;
  std::thread reader([&] { read = contents(fifo); });
  OutputFile(fifo).commit("through the pipe");
  reader.join();
  EXPECT_EQ(read, "through the pipe");
  struct stat st {};
  ASSERT_EQ(::lstat(fifo.c_str(), &st), 0);
  EXPECT_TRUE(S_ISFIFO(st.st_mode));
  // A character device: /dev/null takes anything and stays a device.
  OutputFile("/dev/null").commit("nothing");
  ASSERT_EQ(::lstat("/dev/null", &st), 0);
  EXPECT_TRUE(S_ISCHR(st.st_mode));
  // /dev/full refuses the write: the failure is said, and the device stays.
  OutputFile full("/dev/full");
  EXPECT_THROW(full.commit("no room"), FileError);
  ASSERT_EQ(::lstat("/dev/full", &st), 0);
  EXPECT_TRUE(S_ISCHR(st.st_mode));
  // The atomic writer goes through the same door.
  EXPECT_THROW(writeFileAtomically("/dev/full", [](std::ostream& os) { os << "x"; }), FileError);
  ASSERT_EQ(::lstat("/dev/full", &st), 0);
  EXPECT_TRUE(S_ISCHR(st.st_mode));
}

TEST(OutputFile, WhatWasWrittenIsKeptWhenTheRenameFails) {
  const TempFolder t;
  // The name becomes a folder between the claim and the commit: the rename cannot replace it.
  const std::string path = t / "report.json";
  OutputFile out(path);
  fs::create_directory(path);
  fs::create_directory(path + "/inside");  // (a non-empty folder is never replaced)
  try {
    out.commit("measured");
    FAIL() << "the rename over a folder succeeded";
  } catch (const FileError& e) {
    const std::string what = e.what();
    const std::string::size_type at = what.find("what was written is in '");
    ASSERT_NE(at, std::string::npos) << what;
    const std::string kept = what.substr(at + 24, what.find('\'', at + 24) - at - 24);
    EXPECT_EQ(contents(kept), "measured");
  }
}

TEST(NumberGrammar, DecimalNumbersOnlyForEveryFlagAndFile) {
  double x = 0;
  for (const char* good : {"0", "-1", "+2", "1.5", ".5", "-.5", "5.", "1e3", "1E-3", "2.5e+2"}) {
    EXPECT_TRUE(parseFiniteNumber(good, x)) << good;
  }
  EXPECT_TRUE(parseFiniteNumber("2.5e+2", x));
  EXPECT_EQ(x, 250.0);
  for (const char* bad : {"", " 1", "1 ", "0x10", "0X1p3", "inf", "nan", "-infinity", "1e", "e5",
                          ".", "+", "1.2.3", "1e400", "--1", "1,5", "\t2"}) {
    EXPECT_FALSE(parseFiniteNumber(bad, x)) << "'" << bad << "'";
  }
}
