// SPDX-License-Identifier: BSD-3-Clause
// Rig files (the executor's channel map), for PuppetCopter's 12 inputs.
#include "fuzz_target.hpp"
#include "marionette/executor/protocol.hpp"
#include "marionette/models/model_io.hpp"

void fuzzOne(const std::string& input) {
  static const marionette::ModelPtr model = marionette::loadModel("puppetcopter");
  marionette::executor::RigConfig::parse(input, "fuzz-rig.yaml", *model);
}

MARIONETTE_FUZZ_ENTRY
