// SPDX-License-Identifier: BSD-3-Clause
#include "marionette/environments/checked_simulation.hpp"

#include <stdexcept>

namespace marionette {

CheckedSimulationReport simulateChecked(const ModelPtr& model, const InputSchedule& inputs,
                                        const SimulationOptions& options, CollisionChecker* checker,
                                        const CheckedSimulationOptions& check_options,
                                        const CheckedSampleFn& on_sample) {
  if (checker && &checker->collisionModel().model() != model.get())
    throw std::invalid_argument("checked simulation: the collision checker is for model '" +
                                checker->collisionModel().model().name + "', not '" + model->name +
                                "'");
  CheckedSimulationReport report;
  report.checked = checker != nullptr;
  Eigen::VectorXd q_full(model->nq());
  auto on_row = [&](const SimulationRow& row) {
    const int index = report.samples++;
    CheckedSample sample{index, row};
    StateCheck c;
    if (checker) {
      q_full << *row.q, *row.rho;
      c = checker->checkState(q_full);
      sample.checked = true;
      sample.in_collision = c.in_collision;
      sample.clearance_m = c.clearance_m;
      sample.stage_clearance_m = c.stage_clearance_m;
      sample.pair = &c.pair;
      sample.stage_pair = &c.stage_pair;
      if (c.in_collision && report.samples_in_collision++ == 0) {
        report.first_collision = index;
        report.first_collision_t_s = row.t_s;
        report.first_collision_pair = c.pair;
      }
      if (c.clearance_m < report.min_clearance_m) {
        report.min_clearance_m = c.clearance_m;
        report.min_clearance_sample = index;
        report.min_clearance_t_s = row.t_s;
        report.min_clearance_pair = c.pair;
      }
      if (c.stage_clearance_m < report.min_stage_clearance_m) {
        report.min_stage_clearance_m = c.stage_clearance_m;
        report.min_stage_clearance_sample = index;
        report.min_stage_clearance_pair = c.stage_pair;
      }
    }
    if (on_sample && !on_sample(sample)) {
      report.stopped_by_caller = true;
      return false;
    }
    if (c.in_collision && check_options.stop_at_first_collision) {
      report.stopped_at_collision = true;
      return false;
    }
    return true;
  };
  report.simulation = simulate(model, inputs, options, on_row);
  return report;
}

}  // namespace marionette
