// SPDX-License-Identifier: BSD-3-Clause
// Model YAML: parsed and built (loadModelString).  A model that loads is stepped a few times by
// the variational integrator from its initial configuration, as `simulate` would (a model with
// no dynamic variable crashed there), and its rest pose solved by Newton's method alone.  (The
// rest pose's settling phase, up to 5,000 steps, held the target at ~110 executions a second;
// the physics tests cover it.)
#include "fuzz_target.hpp"
#include "marionette/models/integrator.hpp"
#include "marionette/models/model_io.hpp"
#include "marionette/models/rest_pose.hpp"

void fuzzOne(const std::string& input) {
  using namespace marionette;
  const ModelPtr model = loadModelString(input, "fuzz.yaml");
  if (model->nd() > 12) return;  // the step's cost grows as n_d^3: small models only
  const Eigen::VectorXd rho = model->defaultInputs();
  Eigen::VectorXd q0(model->nd());
  for (int i = 0; i < model->nd(); ++i) q0[i] = model->dynamic[i].initial;
  VariationalIntegrator vi(model);
  State x = vi.stateFromVelocity(q0, Eigen::VectorXd::Zero(model->nd()), rho);
  StepReport report = vi.makeReport();
  for (int k = 0; k < 3; ++k)
    if (vi.step(x, rho, x, &report) != StepStatus::Ok) break;
  RestPoseOptions newton_only;
  newton_only.max_settle_steps = 0;
  computeRestPose(model, rho, nullptr, newton_only);
}

MARIONETTE_FUZZ_ENTRY
