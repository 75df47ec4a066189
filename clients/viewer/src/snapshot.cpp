// SPDX-License-Identifier: BSD-3-Clause
// Headless Chromium as a camera: the same page, laid out as a still, screenshot at load.
#include "marionette/viewer/snapshot.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>
#include <vector>

#include "marionette/models/field_error.hpp"
#include "marionette/viewer/view.hpp"

namespace marionette::viewer {
namespace {

bool executable(const std::string& path) {
  return !path.empty() && access(path.c_str(), X_OK) == 0;
}

std::string onPath(const std::string& name) {
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path ? path : "/usr/bin:/bin");
  std::string dir;
  while (std::getline(dirs, dir, ':'))
    if (executable(dir + "/" + name)) return dir + "/" + name;
  return "";
}

std::string readTail(const std::string& path, std::size_t max_chars) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string all = ss.str();
  return all.size() > max_chars ? all.substr(all.size() - max_chars) : all;
}

// Percent-encodes a path for a file:// URL.
std::string fileUrl(const std::string& absolute_path) {
  std::string url = "file://";
  for (unsigned char c : absolute_path) {
    if (std::isalnum(c) || c == '/' || c == '-' || c == '_' || c == '.' || c == '~') {
      url += static_cast<char>(c);
    } else {
      char buf[4];
      std::snprintf(buf, sizeof buf, "%%%02X", c);
      url += buf;
    }
  }
  return url;
}

struct TempDir {
  std::string path;
  TempDir() {
    char tmpl[] = "/tmp/marionette-render-XXXXXX";
    if (!mkdtemp(tmpl)) throw ViewError("cannot make a temporary folder for the browser");
    path = tmpl;
  }
  ~TempDir() {
    std::error_code ignored;  // leftovers in /tmp are harmless
    std::filesystem::remove_all(path, ignored);
  }
};

}  // namespace

std::string findChromium(const std::string& preferred) {
  if (!preferred.empty()) return executable(preferred) ? preferred : onPath(preferred);
  if (const char* env = std::getenv("MARIONETTE_CHROMIUM"); env && *env)
    return executable(env) ? env : onPath(env);
  for (const char* name : {"chromium", "chromium-browser", "google-chrome"})
    if (std::string p = onPath(name); !p.empty()) return p;
  return "";
}

PngSize pngSize(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  unsigned char h[24] = {};
  if (!in.read(reinterpret_cast<char*>(h), sizeof h)) return {};
  static const unsigned char signature[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
  for (int i = 0; i < 8; ++i)
    if (h[i] != signature[i]) return {};
  const auto be32 = [&](int o) {
    return static_cast<int>((h[o] << 24) | (h[o + 1] << 16) | (h[o + 2] << 8) | h[o + 3]);
  };
  return {be32(16), be32(20)};
}

void checkSnapshot(const SnapshotOptions& o) {
  if (o.width_px < 16 || o.height_px < 16 || o.width_px > 8192 || o.height_px > 8192)
    throw FieldError("width_px", std::to_string(o.width_px) + "x" + std::to_string(o.height_px) +
                                     " is outside 16x16 .. 8192x8192");
  if (findChromium(o.chromium).empty())
    throw FieldError("chromium",
                     "a still needs headless Chromium and none was found (install Debian's "
                     "`chromium`, as scripts/install-deps.sh does, or name it here or in "
                     "$MARIONETTE_CHROMIUM)");
}

void writeSnapshot(const std::string& html_path, const std::string& png_path,
                   const SnapshotOptions& o) {
  checkSnapshot(o);
  const std::string browser = findChromium(o.chromium);
  char* real = realpath(html_path.c_str(), nullptr);
  if (!real) throw ViewError(html_path + ": cannot find the page");
  const std::string page = real;
  std::free(real);

  TempDir tmp;
  const std::string shot = tmp.path + "/still.png";
  const std::string log = tmp.path + "/chromium.log";
  std::ostringstream at;
  at.precision(9);
  at << o.at_s;
  const std::string url = fileUrl(page) + "?still=1&at=" + at.str();
  // Software WebGL (SwiftShader), no GPU, and none of the browser's own network traffic.
  std::vector<std::string> args = {
      browser,
      "--headless",
      "--no-sandbox",
      "--disable-gpu",
      "--enable-unsafe-swiftshader",
      "--use-angle=swiftshader",
      "--no-first-run",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
      "--disable-extensions",
      "--hide-scrollbars",
      "--force-device-scale-factor=1",
      "--user-data-dir=" + tmp.path + "/profile",
      "--window-size=" + std::to_string(o.width_px) + "," + std::to_string(o.height_px),
      "--screenshot=" + shot,
      url};
  const pid_t pid = fork();
  if (pid < 0) throw ViewError("cannot start " + browser);
  if (pid == 0) {
    const int fd = open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd >= 0) {
      dup2(fd, 1);
      dup2(fd, 2);
    }
    setpgid(0, 0);  // its own process group: a timeout kills the browser's helpers too
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    execv(browser.c_str(), argv.data());
    _exit(127);
  }
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::duration<double>(o.timeout_s);
  int status = 0;
  for (;;) {
    const pid_t r = waitpid(pid, &status, WNOHANG);
    if (r == pid) break;
    if (std::chrono::steady_clock::now() > deadline) {
      kill(-pid, SIGKILL);
      waitpid(pid, &status, 0);
      throw ViewError(browser + " did not finish the still within " +
                      std::to_string(static_cast<int>(o.timeout_s)) + " s");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  kill(-pid, SIGKILL);  // helpers that outlive the browser's main process
  const PngSize size = pngSize(shot);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || size.width == 0)
    throw ViewError(browser + " failed to take the still (exit " +
                    std::to_string(WIFEXITED(status) ? WEXITSTATUS(status) : -1) +
                    "): " + readTail(log, 600));
  if (size.width != o.width_px || size.height != o.height_px)
    throw ViewError(browser + " made a " + std::to_string(size.width) + "x" +
                    std::to_string(size.height) + " image, not the " + std::to_string(o.width_px) +
                    "x" + std::to_string(o.height_px) + " asked for");
  // Into place: copy next to the target, then rename (the temporary folder may be on another
  // file system).
  const std::string partial = png_path + ".partial";
  {
    std::ifstream in(shot, std::ios::binary);
    std::ofstream out(partial, std::ios::binary | std::ios::trunc);
    out << in.rdbuf();
    out.flush();
    if (!out) {
      std::remove(partial.c_str());
      throw ViewError(png_path + ": cannot write");
    }
  }
  if (std::rename(partial.c_str(), png_path.c_str()) != 0) {
    std::remove(partial.c_str());
    throw ViewError(png_path + ": cannot replace the file");
  }
}

}  // namespace marionette::viewer
