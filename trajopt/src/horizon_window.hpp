// SPDX-License-Identifier: BSD-3-Clause
// What a window of a receding horizon needs around its transcription, shared by the performance's
// horizon (horizon_tracking.hpp) and the closed loop's (predictive_control.hpp): the rig's limits
// on a window's inputs, its re-simulation, and the strings' loads and modes.
#pragma once

#include <Eigen/Core>
#include <vector>

#include "marionette/models/integrator.hpp"
#include "transcription_problem.hpp"

namespace marionette::detail {

// The re-simulation of `inputs` (rows of n_k, the first the start's) from `x`: false at a step
// that fails.  With peak_N, each string's largest tension over it; with configurations, its
// joints at each row (rows of n_d; a step that fails holds the last).
bool resimulates(VariationalIntegrator& vi, const State& x, const Eigen::MatrixXd& inputs,
                 Eigen::VectorXd* peak_N = nullptr, Eigen::MatrixXd* configurations = nullptr);

// `inputs` (a window's: rows from sample s0, the first the committed one; `before`: rows rho_{-1},
// rho_{-2}) moved, from the first on, into the rig's limits at `share` of each: within its range,
// its speed and its acceleration, and slow enough to stop by the motion's last sample (S - 1,
// after which the rig holds).  Each row is the nearest to what it was that keeps the rows before
// it where they are: braking toward a bound or the end starts in time, so there is always room.
void clampToRigLimits(const Model& m, const Eigen::MatrixXd& before, int s0, int S, double dt,
                      double share, Eigen::MatrixXd& inputs);

// Each string's load at rest at the inputs `rho`: 2.5 times its static tension (at least a tenth
// of the largest) bounds a window's multipliers (no snap); a string with 1 % of the largest is
// loaded.  Empty bounds and none loaded where there is no rest pose.
struct StringLoads {
  Eigen::VectorXd max_tension_N;
  std::vector<char> loaded;  // n_s
};
StringLoads stringLoads(const ModelPtr& model, const Eigen::VectorXd& rho);

// The modes of a window's warm start z0 (its re-simulation's taut set), but a loaded string taut
// from its first taut step on: the solver keeps it pulling rather than letting it go slack to
// catch again.
std::vector<char> windowModes(TranscriptionProblem& problem, const Eigen::VectorXd& z0,
                              const std::vector<char>& loaded, int intervals);

}  // namespace marionette::detail
