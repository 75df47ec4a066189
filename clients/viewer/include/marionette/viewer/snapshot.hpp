// SPDX-License-Identifier: BSD-3-Clause
// Still images of a viewer page, taken by headless Chromium (`marionette render --png`).
#pragma once

#include <string>

namespace marionette::viewer {

struct SnapshotOptions {
  int width_px = 1280;
  int height_px = 720;
  double at_s = 0.0;       // the moment shown
  std::string chromium;    // the browser; "" = $MARIONETTE_CHROMIUM, else chromium on the PATH
  double timeout_s = 120;  // the browser is killed after this long
};

// The browser to use ("" if none is found): options.chromium, $MARIONETTE_CHROMIUM, or the
// first of chromium, chromium-browser, google-chrome on the PATH.
std::string findChromium(const std::string& preferred = "");

// Whether a snapshot with these options can be taken.  Throws FieldError naming "width_px" for a
// size outside 16x16 .. 8192x8192, "chromium" when no browser is found.
void checkSnapshot(const SnapshotOptions& options);

// Opens `html_path` (a page from writeViewPage) in headless Chromium, laid out as a still
// (?still=1&at=T) at width x height CSS pixels, and writes a PNG of exactly that size to
// png_path through a temporary file (nothing is left behind on failure).  Throws ViewError
// naming what went wrong (a crash, a timeout, an image of the wrong size), or what checkSnapshot
// throws.
void writeSnapshot(const std::string& html_path, const std::string& png_path,
                   const SnapshotOptions& options);

// Width and height of a PNG file's image, or {0, 0} if it is not a PNG.
struct PngSize {
  int width = 0, height = 0;
};
PngSize pngSize(const std::string& path);

}  // namespace marionette::viewer
