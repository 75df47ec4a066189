// SPDX-License-Identifier: BSD-3-Clause
// A receding-horizon controller that knows the strings' switches: from the puppet's estimated
// state, the contact-implicit transcription of the variational integrator over a short horizon
// (strings as complementarity, at the modes the window's warm start re-simulates to), with the
// closed loop's LQR cost (control/tracking_lqr.hpp, term for term: transcription_problem.hpp's
// StateTracking) and the named points' distance to their targets, warm-started from the last
// solution and stopped after a fixed number of the
// solver's iterations: real-time iteration in the manner of Diehl, Bock & Schlöder, "A Real-Time
// Iteration Scheme for Nonlinear Optimization in Optimal Feedback Control", SIAM J. Control Optim.
// 43(5), 2005; a marionette played by such a predictive model on a real robot: Zimmermann,
// Poranne, Bern & Coros, "PuppetMaster: Robotic Animation of Marionettes", ACM TOG 38(4), 2019.
// With the LQR's weights and no points, where no string switches and the deviation is small, the
// first step is the LQR's (its terminal cost at the plan's end, or the same weights' at the
// horizon's).
//
// Contents
//   PredictiveOptions     the cost (the LQR's weights, the points'), the horizon, the iterations
//                         per solve, the inputs' bounds, the windows past the plan's end.
//   checkPredictiveOptions
//   PredictiveSolve       a window's inputs, iterations, the step towards the solver's taken.
//   PredictiveController  the plan's reference and the window's solve.
#pragma once

#include <Eigen/Core>
#include <cmath>
#include <memory>
#include <vector>

#include "marionette/control/tracking_gains.hpp"
#include "marionette/models/integrator.hpp"

#pragma GCC visibility push(default)  // the library's API (docs/design.md, layout)

namespace marionette {

struct PredictiveOptions {
  control::LqrWeights weights;  // the cost, as the LQR's
  double horizon_s = 0.5;       // (0, 10]; at most the plan's length from where it solves
  int iterations = 3;           // the solver's per solve, [1, 1000]
  // The named points kept to their targets, as a performance's: (|p - target| / 1 cm)^2 per
  // second of each, times this, [0, 1e9] (0: the LQR's cost alone).
  double point_weight = 0.0;
  // The targets: per reference sample, 3 per named point (world, m); empty: the reference's own
  // points.  A closed loop on a calibrated puppet gives the plan's predicted points here: what
  // the plan promised, which the calibrated puppet's re-simulation of its inputs misses.
  Eigen::MatrixXd point_targets_m;
  // Each input within this of the reference's (m or rad, > 0; infinite: none), as the closed
  // loop clamps its setpoints: the solver plans what the rig will be sent.
  double max_correction = INFINITY;
  std::vector<int> held;  // rig inputs kept at the reference's (indices into the inputs)
  // Windows reach past the plan's end, the rig holding its last inputs there (as it does after
  // the run) and the reference going on under them (simulated once), the targets with it: the
  // end comes to rest where the plan's does.  False: windows shrink to the plan's end.
  bool hold_after_end = false;
};

// Throws FieldError naming an option outside its range: "horizon_s", "iterations",
// "weights.position", ...; "horizon_s" also when it is longer than the plan (plan_s).
void checkPredictiveOptions(const PredictiveOptions& options, double plan_s);

struct PredictiveSolve {
  // The rig's inputs for the window's samples i, i + 1, ..., i + H (row 0: the state's), within
  // its range, speed and acceleration (and able to stop by the plan's end); H shorter than the
  // horizon near the plan's end, or (hold_after_end) the rows past it the last's.
  Eigen::MatrixXd inputs;
  int iterations = 0;
  // The step from the warm start taken: 1 (the solver's inputs), or 0.5 or 0.25 of it when the
  // solver's re-simulated cost more; 0 and kept_warm when every one of them did.
  double step_share = 0.0;
  bool kept_warm = false;
  bool failed = false;     // the solver ended without a motion (the warm start's inputs)
  double cost = 0.0;       // the chosen inputs' re-simulated cost
  double warm_cost = 0.0;  // the warm start's (infinite when it cannot be re-simulated)
};

class PredictiveController {
 public:
  // reference: the plan's motion at its rate (its inputs re-simulated: one state per sample,
  // rho_k the rig's input at sample k), at least 3 samples.  Throws FieldError as
  // checkPredictiveOptions, or naming "held" or "point_targets_m" when they do not fit.
  PredictiveController(ModelPtr model, std::vector<State> reference, double rate_hz,
                       PredictiveOptions options);
  ~PredictiveController();
  PredictiveController(PredictiveController&&) noexcept;

  int samples() const;
  int horizonSteps() const;  // H, in the reference's steps
  const PredictiveOptions& options() const;
  // From the state x at sample i (0 <= i < samples() - 1), the rig's two previous inputs before
  // it (rows rho_{i-1}, rho_{i-2}), warm-started from `warm` (rows for samples i, i + 1, ...;
  // fewer or none: the reference's from there).  One solve at a time per controller (it holds
  // the solver's scratch); PredictiveSolve::failed when no inputs can be re-simulated (the
  // reference's from x then, within the limits).
  PredictiveSolve solve(int i, const State& x, const Eigen::MatrixXd& rig_before,
                        const Eigen::MatrixXd& warm) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace marionette

#pragma GCC visibility pop
