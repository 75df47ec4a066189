// SPDX-License-Identifier: BSD-3-Clause
#include "marionette/trajopt/horizon_tracking.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

#include "horizon_window.hpp"
#include "marionette/models/cancel.hpp"
#include "marionette/models/rest_pose.hpp"
#include "marionette/models/simulation.hpp"

namespace marionette {
using namespace detail;
namespace {

constexpr double kLimitShare = 0.97;      // the rig's limits asked for (the windows' rows too)

}  // namespace

HorizonTrackingResult trackOverHorizon(const HorizonTracking& s) {
  const ModelPtr& model = s.model;
  const Model& m = *model;
  const int nk = m.nk();
  const auto S = static_cast<int>(s.reference_inputs.rows());
  const auto P = static_cast<int>(s.track_points.size());
  const auto V = static_cast<int>(s.track_variables.size());
  if (S < 2 || s.reference_inputs.cols() != nk ||
      (P > 0 && (s.track_targets_m.rows() != S || s.track_targets_m.cols() != 3 * P ||
                 (!s.track_point_weight.empty() &&
                  static_cast<int>(s.track_point_weight.size()) != P) ||
                 (s.track_sample_weight.size() > 0 &&
                  (s.track_sample_weight.rows() != S || s.track_sample_weight.cols() != P)))) ||
      (V > 0 && (s.track_values.rows() != S || s.track_values.cols() != V ||
                 static_cast<int>(s.track_variable_scale_m.size()) != V)) ||
      static_cast<int>(s.input_scale_m.size()) != nk)
    throw std::invalid_argument("receding horizon: the targets do not fit the reference inputs");
  if (s.rig_history.size() > 0 && s.rig_history.cols() != nk)
    throw std::invalid_argument("receding horizon: the rig's history is rows of inputs");
  for (int j : s.held_inputs)
    if (j < 0 || j >= nk) throw std::invalid_argument("receding horizon: no such held input");
  for (int p : s.track_points)
    if (p < 0 || p >= static_cast<int>(m.points.size()))
      throw std::invalid_argument("receding horizon: no such point");
  const double dt = 1.0 / s.rate_hz;
  const int W = std::max(4, static_cast<int>(std::lround(s.window_s * s.rate_hz)));
  const int A = std::clamp(static_cast<int>(std::lround(s.advance_s * s.rate_hz)), 1, W);
  IntegratorOptions io;
  io.dt_s = dt;
  if (s.collision) io.contacts = s.collision->contacts();
  VariationalIntegrator vi(model, io);

  HorizonTrackingResult out;
  out.inputs = s.reference_inputs;
  out.inputs.row(0) = s.start.rho.transpose();  // (the rig where it starts, before any window)
  for (int j : s.held_inputs) out.inputs.col(j).setConstant(s.start.rho[j]);
  out.windows_planned = (S - 1 + A - 1) / A;
  // Each string's load at the start bounds the windows' multipliers, as the plans' transcription's
  // (no snap); a loaded string is kept taut in the modes.
  using Bound = HorizonTracking::TensionBound;
  StringLoads loads =
      s.tension_bound == Bound::OwnLoad
          ? ownStringLoads(model, s.start.rho, s.reference_inputs.bottomRows(1).transpose())
          : stringLoads(model, s.start.rho);
  loads.strict = s.tension_bound != Bound::WarmStart;
  auto sample = [&](int s0, int k) { return std::min(s0 + k, S - 1); };

  State x = s.start;
  Eigen::MatrixXd warm;  // the last window's chosen inputs, from sample warm_from
  int warm_from = 0;
  for (int s0 = 0; s0 < S - 1; s0 += A) {
    // The rig's two committed rows before s0 (its speed, acceleration and jerk go on from them).
    Eigen::MatrixXd before(2, nk);
    for (int i = 0; i < 2; ++i) {
      const int row = s0 - 1 - i;  // (before the start: the rig's history, if any)
      if (row >= 0)
        before.row(i) = out.inputs.row(row);
      else if (s.rig_history.rows() > 0)  // (a shorter history: its oldest row repeated)
        before.row(i) = s.rig_history.row(std::min<Eigen::Index>(-row - 1,
                                                                 s.rig_history.rows() - 1));
      else
        before.row(i) = out.inputs.row(0);
      for (int j : s.held_inputs) before(i, j) = s.start.rho[j];
    }
    // A window's rows past the motion's end: its last inputs held, as the plan holds them.
    auto holdAfterEnd = [&](Eigen::MatrixXd& rows) {
      for (int k = S - s0; k <= W; ++k) rows.row(k) = rows.row(S - 1 - s0);
    };
    // Stopped (before this window, or within its solve: a window the clock cut short is not
    // used): the reference from here, moved into the rig's limits from where the rig is.
    auto stopHere = [&] {
      out.stopped_at = s0;
      Eigen::MatrixXd rest = out.inputs.bottomRows(S - s0);
      clampToRigLimits(m, before, s0, S, dt, kLimitShare, rest);
      out.inputs.bottomRows(S - s0) = rest;
    };
    if (s.in_time && !s.in_time()) {
      stopHere();
      break;
    }
    // What the rig may do: held inputs where they started, within its limits, still after the
    // motion's end.
    auto admissible = [&](Eigen::MatrixXd& inputs) {
      for (int j : s.held_inputs) inputs.col(j).setConstant(s.start.rho[j]);
      clampToRigLimits(m, before, s0, S, dt, kLimitShare, inputs);
      holdAfterEnd(inputs);
    };
    // The warm start: the last window's inputs where they reach, then the reference's.
    Eigen::MatrixXd guess(W + 1, nk);
    for (int k = 0; k <= W; ++k) {
      const int r = s0 + k - warm_from;
      if (r < warm.rows())
        guess.row(k) = warm.row(r);
      else
        guess.row(k) = s.reference_inputs.row(sample(s0, k));
    }
    guess.row(0) = x.rho.transpose();
    admissible(guess);

    TranscriptionSetup setup;
    setup.model = model;
    setup.integrator = io;
    setup.start = x;
    setup.intervals = W;
    setup.collision = s.collision;
    setup.margin_m = s.margin_m;
    setup.self_margin_m = 0.002;
    setup.weights = s.weights;
    setup.held_inputs = s.held_inputs;
    setup.rig_before = before;
    // The motion's end inside the window: the rig holds its last inputs after it, as the plan
    // does, and the swing after it is weighed as settling.
    if (s0 + W > S - 1) setup.hold_from_knot = S - 1 - s0;
    if (P > 0) {
      setup.track_points = s.track_points;
      setup.track_point_weight = s.track_point_weight;
      setup.track_targets_m.resize(W + 1, 3 * P);
      for (int k = 0; k <= W; ++k)
        setup.track_targets_m.row(k) = s.track_targets_m.row(sample(s0, k));
      if (s.track_sample_weight.size() > 0) {
        setup.track_point_knot_weight.resize(W + 1, P);
        for (int k = 0; k <= W; ++k)
          setup.track_point_knot_weight.row(k) = s.track_sample_weight.row(sample(s0, k));
      }
    }
    setup.track_values.resize(W + 1, V + nk);
    for (int i = 0; i < V; ++i) {
      setup.track_variables.push_back(s.track_variables[i]);
      setup.track_variable_scale_m.push_back(s.track_variable_scale_m[i]);
      setup.track_variable_weight.push_back(1.0);
    }
    for (int j = 0; j < nk; ++j) {
      setup.track_variables.push_back(m.nd() + j);
      setup.track_variable_scale_m.push_back(s.input_scale_m[j]);
      setup.track_variable_weight.push_back(s.hold_weight);
    }
    for (int k = 0; k <= W; ++k) {
      if (V > 0) setup.track_values.row(k).head(V) = s.track_values.row(sample(s0, k));
      setup.track_values.row(k).tail(nk) = s.reference_inputs.row(sample(s0, k));
    }
    auto keep_going = [&](const SolveProgress&) { return !s.in_time || s.in_time(); };
    // The whole step or the warm start (decision 0014; the closed loop's halvings gave other
    // performances, not better ones: decision 0020).
    const WindowSolve solve = solveWindow(setup, guess, loads, vi, s.iterations_per_window,
                                          NlpSolver::kInteriorPoint, 0, admissible, keep_going);
    throwIfCancelled("receding horizon");
    if (s.in_time && !s.in_time()) {
      stopHere();
      break;
    }
    out.iterations += solve.iterations;
    ++out.windows;
    out.solve_failed += !solve.solved;
    out.kept_warm += solve.solved && solve.kept_warm;
    const double cost = solve.cost;
    const Eigen::MatrixXd& chosen = solve.inputs;
    if (!std::isfinite(cost))
      throw SimulationError(s0, s0 * dt,
                            "the receding horizon's window from here has no inputs the "
                            "integrator can follow");
    if (s.progress) s.progress(out.windows, out.windows_planned, cost);

    // Commit its first A steps and move the state along them.
    State next = vi.makeState();
    for (int k = 1; k <= A && s0 + k <= S - 1; ++k) {
      out.inputs.row(s0 + k) = chosen.row(k);
      if (vi.step(x, chosen.row(k).transpose(), next) != StepStatus::Ok)
        throw SimulationError(s0 + k, (s0 + k) * dt,
                              "the receding horizon's committed step failed");
      x = next;
    }
    warm = chosen;
    warm_from = s0;
  }
  return out;
}

}  // namespace marionette
