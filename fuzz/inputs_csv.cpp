// SPDX-License-Identifier: BSD-3-Clause
// Input CSV files, read for two models; a schedule that loads is sampled across its times.
#include "fuzz_target.hpp"
#include "marionette/models/model_io.hpp"

void fuzzOne(const std::string& input) {
  static const marionette::ModelPtr models[] = {marionette::loadModel("planar-arm"),
                                                marionette::loadModel("suspended-mass")};
  for (const auto& model : models) {
    try {
      const auto schedule = marionette::InputSchedule::fromCsv(*model, input, "fuzz.csv");
      Eigen::VectorXd rho(model->nk());
      const double end = schedule.times_s.back() + 1.0;
      for (int i = 0; i <= 8; ++i) schedule.at(end * i / 8.0, rho);
      schedule.speedWarnings(*model);
    } catch (const std::invalid_argument&) {
    }
  }
}

MARIONETTE_FUZZ_ENTRY
