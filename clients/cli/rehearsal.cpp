// SPDX-License-Identifier: BSD-3-Clause
#include "rehearsal.hpp"

#include <algorithm>

#include "marionette/models/dynamics.hpp"
#include "marionette/plan/goal.hpp"
#include "marionette/problem/motion_problem.hpp"

namespace marionette::cli {

Rehearsal rehearse(const executor::Playback& plan, const executor::Stream& stream,
                   const ScenePtr& scene, double rate_scale) {
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
  DynamicsData d(m);
  std::vector<Eigen::Vector3d> before, after, actual;  // the named points (stage)
  const Eigen::Index predicted = plan.predicted_q.rows();
  out.report = simulateChecked(model, inputs, so, &checker, {}, [&](const CheckedSample& s) {
    for (int r = 0; r < rows && s.row.contact_force_N; ++r)
      if ((*s.row.contact_force_N)[r] > 0.0 && !bore[r]) {
        bore[r] = 1;
        out.touched.push_back(so.contacts->rowName(r));
      }
    const int play = s.index - stream.play_begin;
    if (predicted == 0 || m.points.empty() || play < 0 || play >= stream.play_rows) return true;
    // The plan's prediction at the same point of the plan, between its samples.
    const double at_s = std::min(play / stream.rate_hz * rate_scale, plan.duration_s);
    const double f = std::min(at_s * plan.rate_hz, static_cast<double>(predicted - 1));
    const Eigen::Index j = std::min<Eigen::Index>(static_cast<Eigen::Index>(f), predicted - 1);
    const Eigen::Index next = std::min<Eigen::Index>(j + 1, predicted - 1);
    const double w = f - static_cast<double>(j);
    const Eigen::VectorXd rho = plan.inputs.at(at_s);
    pointsInStage(m, d, m.configuration(plan.predicted_q.row(j).transpose(), rho), before);
    pointsInStage(m, d, m.configuration(plan.predicted_q.row(next).transpose(), rho), after);
    pointsInStage(m, d, m.configuration(*s.row.q, *s.row.rho), actual);
    for (std::size_t p = 0; p < m.points.size(); ++p) {
      const double dist = (actual[p] - ((1.0 - w) * before[p] + w * after[p])).norm();
      if (dist <= out.deviation_m) continue;
      out.deviation_m = dist;
      out.deviation_point = m.points[p].name;
      out.deviation_at_s = at_s;
    }
    return true;
  });
  return out;
}

}  // namespace marionette::cli
