// SPDX-License-Identifier: BSD-3-Clause
#include "horizon_window.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "marionette/models/rest_pose.hpp"

namespace marionette::detail {

bool resimulates(VariationalIntegrator& vi, const State& x, const Eigen::MatrixXd& inputs,
                 Eigen::VectorXd* peak_N, Eigen::MatrixXd* configurations) {
  State at = x, next = vi.makeState();
  StepReport report = vi.makeReport();
  if (peak_N) peak_N->setZero(vi.model().nstrings());
  if (configurations) {
    configurations->resize(inputs.rows(), x.q.size());
    configurations->rowwise() = x.q.transpose();
  }
  for (Eigen::Index k = 1; k < inputs.rows(); ++k) {
    if (vi.step(at, inputs.row(k).transpose(), next, &report) != StepStatus::Ok) return false;
    if (peak_N) *peak_N = peak_N->cwiseMax(report.tension_N);
    at = next;
    if (configurations) configurations->bottomRows(inputs.rows() - k).rowwise() = at.q.transpose();
  }
  return true;
}

void clampToRigLimits(const Model& m, const Eigen::MatrixXd& before, int s0, int S, double dt,
                      double share, Eigen::MatrixXd& inputs) {
  for (int i = 0; i < m.nk(); ++i) {
    const KinematicVariable& v = m.kinematic[i];
    double previous = before(0, i), current = inputs(0, i);
    for (Eigen::Index k = 1; k < inputs.rows(); ++k) {
      const double speed = current - previous;                         // per step
      const int left = std::max(0, S - 1 - s0 - static_cast<int>(k));  // steps after this row
      double lo = v.lower, hi = v.upper;
      double step = std::numeric_limits<double>::infinity();
      if (std::isfinite(v.max_speed)) step = share * v.max_speed * dt;
      if (std::isfinite(v.max_accel) && v.max_accel > 0) {
        // Slowing by c a step, a step v goes v + v^2 / 2c - v / 2 before it stops (to c / 8):
        // the largest that stops before a bound D away.
        const double c = share * v.max_accel * dt * dt;
        auto stopsWithin = [&](double distance) {
          return c * (std::sqrt(0.25 + 2 * std::max(0.0, distance - c / 8) / c) - 0.5);
        };
        step = std::min(step, c * (left + 1));
        hi = std::min(hi, current + stopsWithin(v.upper - current));
        lo = std::max(lo, current - stopsWithin(current - v.lower));
      }
      lo = std::max(lo, current - step);
      hi = std::min(hi, current + step);
      if (std::isfinite(v.max_accel)) {
        const double change = share * v.max_accel * dt * dt;
        lo = std::max(lo, current + speed - change);
        hi = std::min(hi, current + speed + change);
      }
      double& value = inputs(k, i);
      // (lo > hi where the limits meet at one value, to rounding: that value.)
      value = lo <= hi ? std::clamp(value, lo, hi) : std::clamp(0.5 * (lo + hi), v.lower, v.upper);
      previous = current;
      current = value;
    }
  }
}

StringLoads stringLoads(const ModelPtr& model, const Eigen::VectorXd& rho) {
  const Model& m = *model;
  StringLoads out;
  out.loaded.assign(m.nstrings(), 0);
  if (m.nstrings() == 0) return out;
  const RestPose rest = computeRestPose(model, rho);
  if (!rest.ok || !(rest.tension_N.maxCoeff() > 0)) return out;
  out.max_tension_N = 2.5 * rest.tension_N.cwiseMax(0.1 * rest.tension_N.maxCoeff());
  for (int j = 0; j < m.nstrings(); ++j)
    out.loaded[j] = rest.tension_N[j] >= 0.01 * rest.tension_N.maxCoeff();
  return out;
}

std::vector<char> windowModes(TranscriptionProblem& problem, const Eigen::VectorXd& z0,
                              const std::vector<char>& loaded, int intervals) {
  std::vector<char> modes = problem.modesOf(z0);
  const int rows = problem.unilateralRows();
  for (std::size_t j = 0; j < loaded.size(); ++j) {
    if (!loaded[j]) continue;
    int first = 0;
    while (first < intervals && !modes[first * rows + j]) ++first;
    for (int k = first; k < intervals; ++k) modes[k * rows + j] = 1;
  }
  return modes;
}

}  // namespace marionette::detail
