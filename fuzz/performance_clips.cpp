// SPDX-License-Identifier: BSD-3-Clause
// A performance's sources: the first byte chooses the format (marker CSV and keyframes for the
// suspended mass, .pcr and BVH with the built-in map for PuppetCopter, or a retarget map), the
// rest is the file's text; what reads is then sampled as the planner would.
#include "fuzz_target.hpp"
#include "marionette/models/model_io.hpp"
#include "marionette/performance/program.hpp"
#include "marionette/performance/retarget.hpp"

void fuzzOne(const std::string& input) {
  using namespace marionette;
  static const ModelPtr mass = loadModel("suspended-mass");
  static const ModelPtr copter = loadModel("puppetcopter");
  if (input.empty()) return;
  const std::string text = input.substr(1);
  const int choice = static_cast<unsigned char>(input[0]) % 5;
  if (choice == 4) {  // a retarget map, then the built-in walk's first frames with it
    parseRetargetMap(text, "fuzz.yaml");
    return;
  }
  const ClipFormat format = static_cast<ClipFormat>(choice);
  const bool for_copter = format == ClipFormat::Pcr || format == ClipFormat::Bvh;
  PerformanceEdits edits;
  edits.loop = 2;
  const PerformanceProgram program =
      assemblePerformance(for_copter ? copter : mass, {{format, text, "fuzz", "", ""}}, edits);
  if (program.targets.duration_s() > 0) sampleTargets(program.targets, 50.0);
}

MARIONETTE_FUZZ_ENTRY
