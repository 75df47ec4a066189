// SPDX-License-Identifier: BSD-3-Clause
// Plan files (JSON) as the executor and the viewer read them.
#include "fuzz_target.hpp"
#include "marionette/plan/plan_file.hpp"

void fuzzOne(const std::string& input) {
  marionette::readPlanJson(input, "fuzz.json");
}

MARIONETTE_FUZZ_ENTRY
