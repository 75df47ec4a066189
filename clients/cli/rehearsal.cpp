// SPDX-License-Identifier: BSD-3-Clause
#include "rehearsal.hpp"

#include "marionette/problem/motion_problem.hpp"

namespace marionette::cli {

Rehearsal rehearse(const executor::Playback& plan, const executor::Stream& stream,
                   const ScenePtr& scene) {
  const ModelPtr& model = plan.model;
  const Model& m = *model;
  const auto collision =
      std::make_shared<const CollisionModel>(model, scene, problemCollisionOptions());
  InputSchedule inputs;
  inputs.defaults = m.defaultInputs();
  inputs.values = stream.rows;
  for (Eigen::Index i = 0; i < stream.rows.rows(); ++i)
    inputs.times_s.push_back(static_cast<double>(i) / stream.rate_hz);

  Rehearsal out;
  out.duration_s = inputs.times_s.back();
  SimulationOptions so;
  so.dt_s = 1.0 / stream.rate_hz;
  so.duration_s = out.duration_s;
  so.energy_every_row = false;
  so.contacts = collision->contacts();
  if (plan.predicted_q.rows() > 0) {  // the plan's own start pose, at rest
    for (int j = 0; j < m.nd(); ++j)
      so.start.positions.emplace_back(m.dynamic[j].name, plan.predicted_q(0, j));
  }
  const int rows = so.contacts ? so.contacts->rows() : 0;
  std::vector<char> bore(rows, 0);
  CollisionChecker checker(collision);
  out.report = simulateChecked(model, inputs, so, &checker, {}, [&](const CheckedSample& s) {
    for (int r = 0; r < rows && s.row.contact_force_N; ++r)
      if ((*s.row.contact_force_N)[r] > 0.0 && !bore[r]) {
        bore[r] = 1;
        out.touched.push_back(so.contacts->rowName(r));
      }
    return true;
  });
  return out;
}

}  // namespace marionette::cli
