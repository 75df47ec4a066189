// SPDX-License-Identifier: BSD-3-Clause
// The window of a receding horizon, one solver shared by the performance's horizon
// (horizon_tracking.hpp) and the closed loop's (predictive_control.hpp): a window's transcription
// completed and solved, its result kept only where its re-simulation is better; and what it needs
// around it: the rig's limits on a window's inputs, its re-simulation, the strings' loads and
// modes.
#pragma once

#include <Eigen/Core>
#include <functional>
#include <optional>
#include <vector>

#include "marionette/models/integrator.hpp"
#include "nlp_solve.hpp"
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

// Each string's larger static tension (N) at the rest poses of the inputs `rho0` and `rho1`
// (when given); empty when neither rests.
Eigen::VectorXd staticLoads(const ModelPtr& model, const Eigen::VectorXd& rho0,
                            const std::optional<Eigen::VectorXd>& rho1);

// Each string's load at rest at the inputs `rho`: 2.5 times its static tension (at least a tenth
// of the largest) bounds a window's multipliers (no snap); a string with 1 % of the largest is
// loaded.  Empty bounds and none loaded where there is no rest pose.  A window's strings may pull
// as hard as its warm start's re-simulation has them pull (1.05 times), unless `strict`.
struct StringLoads {
  Eigen::VectorXd max_tension_N;
  std::vector<char> loaded;  // n_s
  bool strict = false;
};
StringLoads stringLoads(const ModelPtr& model, const Eigen::VectorXd& rho);

// As above, strict, but each string's load its larger static tension at the rest poses of
// `rho_start` and `rho_end`, and a string carrying kJudgedLoad_N or more at either bounded by 2.5
// times its own load, as a plan's peak tension ratio is judged (plan_quality.hpp), not by the
// floor of a tenth of the largest: only the lighter strings keep that (their catches are judged
// against it, as snaps).  Loaded for the modes as at `rho_start`.
StringLoads ownStringLoads(const ModelPtr& model, const Eigen::VectorXd& rho_start,
                           const Eigen::VectorXd& rho_end);

// The modes of a window's warm start z0 (its re-simulation's taut set), but a loaded string taut
// from its first taut step on: the solver keeps it pulling rather than letting it go slack to
// catch again.
std::vector<char> windowModes(TranscriptionProblem& problem, const Eigen::VectorXd& z0,
                              const std::vector<char>& loaded, int intervals);

// One window from `guess` (its rig inputs, rows of n_k, the first the start's): `setup` as the
// caller fills it (its model without stops held off; integrator, start, intervals, weights, targets, rig
// rows), completed as every window is -- no goal rows; no string pulling more than its load
// bound or than the warm start has it pull (5 % more: a window whose warm start catches a string
// harder has room to soften it, not a bound its modes cannot meet); the joint stops within 0.1
// (rad or m) and the contacts within 1 cm of the warm start's re-simulation as rows -- solved at
// windowModes for at most `iterations`.  The solver's iterate is not a motion until re-simulated
// (with `vi`, every stop and contact, and in the transcription's own rollout): its inputs, made
// `admissible` (the rig's limits, held inputs, the hold after the end), are kept if their
// re-simulation costs less than the warm start's; else the step towards them is halved, up to
// `halvings` times (at most 2), as a line search on the re-simulated cost; else the warm start is
// kept.  keep_going (asked at every iteration) false stops the solve.
struct WindowSolve {
  Eigen::MatrixXd inputs;  // what is kept: a share of the step to the solver's, or the warm start
  double cost = 0.0;       // their re-simulated cost (infinite: no step of them can be followed)
  double warm_cost = 0.0;  // the warm start's
  int iterations = 0;
  bool solved = false;     // the solver ended with an iterate
  bool kept_warm = true;
  double step_share = 0.0;  // of the step from the warm start to the solver's inputs kept
};
WindowSolve solveWindow(TranscriptionSetup setup, const Eigen::MatrixXd& guess,
                        const StringLoads& loads, VariationalIntegrator& vi, int iterations,
                        NlpSolver solver, int halvings,
                        const std::function<void(Eigen::MatrixXd&)>& admissible,
                        const KeepGoing& keep_going = {});

}  // namespace marionette::detail
