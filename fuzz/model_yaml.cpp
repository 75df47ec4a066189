// Model YAML: parsed and built (loadModelString); a model that loads is stepped a few times from
// its rest pose, as `simulate` would (a model with no dynamic variable crashed there).
#include "fuzz_target.hpp"
#include "marionette/models/model_io.hpp"

void fuzzOne(const std::string& input) {
  const marionette::ModelPtr model = marionette::loadModelString(input, "fuzz.yaml");
  if (model->nd() > 12) return;  // the step's cost grows as n_d^3: small models only
  marionette::SimulationOptions options;
  options.dt_s = 0.01;
  options.duration_s = 0.03;
  marionette::simulate(model, marionette::InputSchedule::constant(*model), options);
}

MARIONETTE_FUZZ_ENTRY
