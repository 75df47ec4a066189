// SPDX-License-Identifier: BSD-3-Clause
// `marionette render`: a plan, a rest pose or a simulated input sequence as one self-contained
// HTML page with a 3-D view, a timeline and plots (clients/viewer), and optionally a still PNG
// of it made by headless Chromium.
#pragma once

namespace marionette::cli {

int cmdRender(int argc, char** argv);

}  // namespace marionette::cli
