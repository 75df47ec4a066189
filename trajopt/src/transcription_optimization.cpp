// SPDX-License-Identifier: BSD-3-Clause
#include "transcription_optimization.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <vector>

#include "marionette/common/text.hpp"
#include "marionette/models/rest_pose.hpp"
#include "marionette/models/simulation.hpp"
#include "marionette/problem/plan_quality.hpp"
#include "horizon_window.hpp"
#include "plan_acceptance.hpp"
#include "quasi_static.hpp"
#include "nlp_solve.hpp"
#include "transcription_problem.hpp"
#include "warm_starts.hpp"

namespace marionette::detail {
namespace {

// The modes to solve at: the warm start's (problem.modesOf(z)), but every string that is `loaded`
// and taut over the warm start's last step taut from the first step the warm start has it taut:
// a stage-worthy motion neither lets a loaded string go slack nor catches it twice.  (A string
// slack at the start, loaded only at the goal, cannot be taut at the first knot.)
std::vector<char> solvingModes(TranscriptionProblem& problem, const Eigen::VectorXd& z,
                               const std::vector<char>& loaded) {
  std::vector<char> modes = problem.modesOf(z);
  const int rows = problem.unilateralRows();
  const int N = rows > 0 ? static_cast<int>(modes.size()) / rows : 0;
  for (std::size_t j = 0; j < loaded.size(); ++j) {
    if (!loaded[j] || N == 0 || !modes[(N - 1) * rows + j]) continue;
    int first = 0;
    while (!modes[first * rows + j]) ++first;
    for (int k = first; k < N; ++k) modes[k * rows + j] = 1;
  }
  return modes;
}

// A stage-worthy plan touches nothing (StageThresholds::min_clearance_m): from a start that
// touches nothing, every contact stays apart, where the warm start or a choice of modes may have
// it touch (a random walk's forearm brushing the thigh).
std::vector<char> contactsApart(const TranscriptionProblem& problem, std::vector<char> modes,
                                const PlanMargins& margins) {
  if (margins.start_clearance_m < StageThresholds{}.min_clearance_m) return modes;
  const std::size_t rows = problem.unilateralRows();
  for (std::size_t k = 0; k < modes.size() / rows; ++k)
    for (int t = 0; t < problem.contactRows(); ++t) modes[k * rows + problem.stringRows() + t] = 0;
  return modes;
}

// The knots' inputs at the plan's step: `factor` plan steps per knot, linearly interpolated.
Eigen::MatrixXd interpolated(const Eigen::MatrixXd& knots, int factor) {
  Eigen::MatrixXd out((knots.rows() - 1) * factor + 1, knots.cols());
  for (Eigen::Index n = 0; n < out.rows(); ++n) {
    const Eigen::Index k = std::min<Eigen::Index>(n / factor, knots.rows() - 2);
    const double w = static_cast<double>(n - k * factor) / factor;
    out.row(n) = (1 - w) * knots.row(k) + w * knots.row(k + 1);
  }
  return out;
}

// One solve of the transcription on knots every `factor`-th plan step: the candidate plan (the
// plan with the solution's inputs at its step, not yet verified) and how the solve ended.
struct TranscriptionSolve {
  Plan candidate;
  std::string method;   // for the report
  std::string message;  // non-empty: no candidate, and why
  int iterations = 0;
  InteriorPointStatus status = InteriorPointStatus::kConverged;
  bool capped = false, converged = false, worthy = false;
  Eigen::VectorXd z;  // the transcription's variables the candidate is from
};

}  // namespace

PreparedTranscription prepareTranscription(const MotionProblem& request,
                                           const CollisionModelPtr& collision, const Plan& plan,
                                           const OptimizationOptions& options,
                                           const WarmStarts& warm, const StartState& start,
                                           int factor, bool stage_worthy_distance) {
  const ModelPtr& model = request.model;
  const Eigen::VectorXd rho0 = plan.inputs.row(0).transpose();
  TranscriptionSetup setup;
  setup.model = model;
  setup.integrator.dt_s = factor / plan.rate_hz;
  setup.integrator.contacts = collision->contacts();
  // A knot's change of speed happens within one plan step: the acceleration rows ask for
  // 1 / factor of their share.
  setup.accel_share = setup.limit_share / factor;
  VariationalIntegrator vi(model, setup.integrator);
  setup.start = vi.stateFromVelocity(start.q, start.qdot, rho0);
  // The rig going in, at the knots' spacing: a knot back at its last step's speed, so that the
  // first knot's acceleration row bounds the join at the plan's step (the knots' inputs are
  // interpolated linearly); two back where the second difference going in is its last step's
  // acceleration.  (The samples `factor` and 2 `factor` back, as they were, gave the knot the
  // average speed of the last `factor` steps: a rig braking at its limit into the join then
  // broke it at the plan's step.)
  const Eigen::MatrixXd& history = options.rig_history;
  if (history.rows() > 0) {
    if (history.cols() != model->nk())
      throw std::invalid_argument("optimization: the rig's history needs one column per input");
    const Eigen::RowVectorXd r0 = rho0.transpose(), r1 = history.row(0),
                             r2 = history.row(std::min<Eigen::Index>(1, history.rows() - 1));
    const Eigen::RowVectorXd step = r0 - r1, change = r0 - 2 * r1 + r2;  // per plan step (^2)
    setup.rig_before.resize(2, model->nk());
    const double f = factor;
    setup.rig_before.row(0) = r0 - f * step;
    setup.rig_before.row(1) = r0 - 2 * f * step + f * f * change;
  }
  setup.goal = request.goal;
  setup.collision = collision;
  // Rows beyond the margins the plan must keep, so that the re-simulation's difference from the
  // solver's motion does not take it below.
  const PlanMargins& margins = warm.margins;
  setup.margin_m = margins.stage_m;
  setup.self_margin_m =
      stage_worthy_distance ? margins.stage_worthy_anything_m : margins.anything_m;
  // The motion at the knots, then its last inputs held for the settle time: the puppet must be
  // at rest by the end.  A goal no rest pose meets (arm3d's hand swung up behind the pillars,
  // past where its string can hold it) is reached at the motion's last knot instead, and the
  // hold, at least kComeToRest_s, brings the puppet to rest wherever it then hangs: damping a
  // swing by moving the strings takes a few of its periods (about 1 s on arm3d: from 1 s the
  // solver finds no motion, from 3 s it does).
  constexpr double kComeToRest_s = 3.0;
  const bool reach_swinging = !request.goal.at_rest && !warm.goal_rest;
  const double hold_s =
      reach_swinging ? std::max(options.settle_s, kComeToRest_s) : options.settle_s;
  const int hold = std::max(setup.rest_knots + 2,
                            static_cast<int>(std::lround(hold_s * plan.rate_hz / factor)));
  auto knotsOf = [&](const Eigen::MatrixXd& motion) {
    const int samples = static_cast<int>(motion.rows());
    const int intervals = (samples - 1 + factor - 1) / factor + hold;
    Eigen::MatrixXd knots(intervals + 1, motion.cols());
    for (int k = 0; k <= intervals; ++k)
      knots.row(k) = motion.row(std::min(k * factor, samples - 1));
    return knots;
  };

  // The warm start: the first ranked motion that is quasi-static at the knots (the rest poses
  // along its inputs move no variable faster than kQuasiStaticSpeed between knots, in eighths of
  // a step where they move faster: no jump), from its rest poses with the strings' static
  // tensions; when none is, the best ranked motion rolled out by the integrator; the plan's own
  // when none can be.  A goal reached swinging is reached by none of the ranked motions'
  // rest poses, nor by their smoothed fits: the plan's own motion to where it first meets the
  // goal, rolled out.  Of the ranked motions (40-55), the first kQuasiStaticTries are tried: the
  // rest are the same transfers and fits at other durations, whose rest poses pass the same
  // folds (on the shown suite the one taken was at most the 11th; on marionette25 each refusal
  // costs 0.15 s, and all of them 7.5 s a solve, up to twice a request).
  constexpr double kQuasiStaticSpeed = 2.5;  // rad/s or m/s
  constexpr int kQuasiStaticTries = 12;
  const double max_step = kQuasiStaticSpeed * setup.integrator.dt_s;
  Eigen::MatrixXd guess = knotsOf(plan.inputs);
  std::string from = "the plan's motion";
  std::optional<Eigen::VectorXd> end_rest = warm.goal_rest;
  QuasiStaticPath path;
  auto nameOf = [&](const WarmStart& candidate) {
    return candidate.name + " over " +
           formatNumber((candidate.inputs().rows() - 1) / plan.rate_hz) + " s";
  };
  // A path of rest poses around the folds goes first unless the best ranked motion meets
  // everything in its rollout: ranked by the rollout, it loses to motions that swing less there
  // but whose rest poses pass a fold or the stage.
  std::vector<const WarmStart*> order;
  for (const WarmStart& candidate : warm.ranked) order.push_back(&candidate);
  const auto around = std::find_if(order.begin(), order.end(),
                                   [](const WarmStart* c) { return c->clear_rest_poses; });
  if (around != order.end() && !order.front()->feasible)
    std::rotate(order.begin(), around, around + 1);
  if (order.size() > static_cast<std::size_t>(kQuasiStaticTries)) order.resize(kQuasiStaticTries);
  for (const WarmStart* each : order) {
    const WarmStart& candidate = *each;
    if (reach_swinging) break;  // (the plan's own motion, below)
    Eigen::MatrixXd knots = knotsOf(candidate.inputs());
    path = quasiStaticPath(model, knots, start.q, max_step);
    if (!path.ok) continue;
    guess = std::move(knots);
    from = "the rest poses along " + nameOf(candidate);
    if (candidate.end_rest) end_rest = candidate.end_rest;
    break;
  }
  if (reach_swinging && plan.goal_sample > 0) {
    guess = knotsOf(plan.inputs.topRows(plan.goal_sample + 1));
    from = "the plan's motion to the goal";
  } else if (!path.ok && !warm.ranked.empty()) {
    guess = knotsOf(warm.ranked.front().inputs());
    from = nameOf(warm.ranked.front());
    if (warm.ranked.front().end_rest) end_rest = warm.ranked.front().end_rest;
  }
  setup.intervals = static_cast<int>(guess.rows()) - 1;
  if (reach_swinging) {
    // Passed through at speed, where the re-simulation at the plan's step strays from the
    // knots' motion more than at rest: aimed at half the tolerance (at 0.9, arm3d est 3's
    // re-simulation missed by 0.7 mm).
    setup.goal_knot = setup.intervals - hold;
    setup.goal_fraction = 0.5;
  }
  const Eigen::MatrixXd guess_q =
      path.ok ? path.q : rolloutConfigurations(model, setup.start, guess, setup.integrator);
  setup.weights = options.weights;
  // No string pulls more than 2.5 times its load (its static tension, at least a tenth of the
  // largest), so that its peak stays within 3 times at the knots -- but for a string lighter
  // than a tenth of the largest, whose peak is judged against its own load (plan_quality.hpp;
  // the performances' windows bound that too: horizon_window.hpp, ownStringLoads).  A string
  // loaded at either end (1 % of the largest) is "loaded" for the modes.
  const Eigen::VectorXd static_N = staticLoads(model, rho0, end_rest);
  std::vector<char> loaded(model->nstrings(), 0);
  if (static_N.size() > 0) {
    setup.max_tension_N = 2.5 * static_N.cwiseMax(0.1 * static_N.maxCoeff());
    for (int j = 0; j < static_N.size(); ++j)
      loaded[j] = static_N[j] >= 0.01 * static_N.maxCoeff();
  }
  setup.model = withStopsNear(model, guess_q, 0.1, setup.stops_held_off);
  // What the puppet touches is physics here as in the re-simulation: the rows the warm start
  // comes within kContactReach_m of, as complementarity (the others touch only there).
  constexpr double kContactReach_m = 0.01;
  if (setup.integrator.contacts)
    setup.contact_rows =
        contactRowsNear(model, *setup.integrator.contacts, guess_q, guess, kContactReach_m);
  PreparedTranscription out;
  out.problem = std::make_unique<TranscriptionProblem>(setup);
  TranscriptionProblem& problem = *out.problem;

  out.z0 = path.ok ? problem.quasiStaticGuess(guess, path.q, path.tension_N)
                   : problem.initialGuess(guess);
  problem.setModes(contactsApart(problem, solvingModes(problem, out.z0, loaded), margins));
  problem.scaleObjectiveAt(out.z0);
  std::ostringstream method;
  method << "contact-implicit transcription of the variational integrator at fixed modes, "
         << setup.intervals << " steps of " << formatNumber(setup.integrator.dt_s) << " s";
  if (!setup.contact_rows.empty()) {
    int touching = 0;  // of the rows, those the modes have touching somewhere
    const std::vector<char>& solving = problem.modes();
    for (std::size_t t = 0; t < setup.contact_rows.size(); ++t)
      for (int k = 0; k < setup.intervals; ++k)
        if (solving[k * problem.unilateralRows() + model->nstrings() + t]) {
          ++touching;
          break;
        }
    method << ", " << setup.contact_rows.size() << " contact rows (" << touching << " touching)";
  }
  method << ", from " << from;
  if (!warm.rest_pose_path.empty() && !reach_swinging)
    method << " (a path of rest poses around the folds: " << warm.rest_pose_path << ")";
  if (reach_swinging)
    method << "; no rest pose meets the goal: reached at "
           << formatNumber(setup.goal_knot * factor / plan.rate_hz) << " s, then "
           << formatNumber(hold_s) << " s to come to rest";
  out.method = method.str();
  return out;
}

namespace {

TranscriptionSolve solveTranscription(const MotionProblem& request,
                                      const CollisionModelPtr& collision, const Plan& plan,
                                      const OptimizationOptions& options, const WarmStarts& warm,
                                      const StartState& start, int factor,
                                      SteadyClock::time_point t0, const ProgressFn& progress,
                                      const CancelFn& cancelled,
                                      bool stage_worthy_distance = false,
                                      const Eigen::VectorXd* from = nullptr) {
  TranscriptionSolve out;
  PreparedTranscription prepared = prepareTranscription(request, collision, plan, options, warm,
                                                        start, factor, stage_worthy_distance);
  TranscriptionProblem& problem = *prepared.problem;
  // From another solve's variables where given (the same knots and modes), else the warm start's.
  const bool continued = from && from->size() == prepared.z0.size();
  const Eigen::VectorXd& z0 = continued ? *from : prepared.z0;
  if (continued) prepared.method += "; started from the first solve's variables";
  out.method = std::string(options.solver == OptimizationSolver::Ipopt ? "ipopt " : "interior-point ") +
               prepared.method;

  // Converged for a plan's purposes (it is re-simulated and verified after): the barrier down to
  // kBarrier, the rows met to kFeasible (in their units) and the objective within kPlateau of its
  // value kWindow iterations before, outside the solver's restoration phase (whose figures are
  // another problem's).  Or the plan's purposes met: every kCheckEvery iterations once the rows
  // are met to kNearlyFeasible, the iterate is re-simulated and verified as the returned plan
  // would be, and one that is stage-worthy ends the solve (the solver can spend a hundred
  // iterations tightening rows of the hold to 1e-5 that the re-simulation no longer notices).
  // Counted in iterations: the same request stops at the same iterate on any machine; a
  // deadline the caller set only stops it, and says so.
  constexpr double kFeasible = 1e-5, kPlateau = 0.01, kBarrier = 1e-5;
  constexpr double kNearlyFeasible = 1e-3;
  constexpr int kCheckEvery = 10;
  constexpr std::size_t kWindow = 5;
  std::vector<double> objectives;
  Eigen::VectorXd worthy_iterate;
  auto iterateIsStageWorthy = [&](const Eigen::VectorXd& iterate) {
    Plan candidate = plan;
    candidate.inputs = interpolated(problem.inputs(iterate), factor);
    std::string why;
    return verifyCandidate(request, collision, candidate, options, why) &&
           stageWorthy(request, *collision, std::move(candidate), options.margin_m);
  };
  auto keep_going = [&](const SolveProgress& p) {
    if (cancelled && cancelled()) return false;
    if (progress) {
      PlanProgress e;
      e.phase = "optimize";
      e.elapsed_s = secondsSince(t0);
      e.iteration = p.iteration;
      e.cost = p.objective;
      e.constraint_violation = p.primal_infeasibility;
      progress(e);
    }
    out.capped = options.time_limit_s > 0 && secondsSince(t0) >= options.time_limit_s;
    if (out.capped) return false;
    if (p.restoring) return true;
    objectives.push_back(p.objective);
    const std::size_t n = objectives.size();
    out.converged = p.barrier <= kBarrier && p.primal_infeasibility <= kFeasible &&
                    n > kWindow &&
                    std::abs(objectives[n - 1 - kWindow] - p.objective) <=
                        kPlateau * std::abs(objectives[n - 1 - kWindow]);
    if (!out.converged && p.iteration > 0 && p.iteration % kCheckEvery == 0 &&
        p.primal_infeasibility <= kNearlyFeasible)
      out.converged = out.worthy = iterateIsStageWorthy(*p.iterate);
    if (out.worthy) worthy_iterate = *p.iterate;
    return !out.converged;
  };
  const InteriorPointResult solved =
      solveNlp(problem, z0, options.max_iterations,
               options.solver == OptimizationSolver::Ipopt ? NlpSolver::kIpopt
                                                           : NlpSolver::kInteriorPoint,
               keep_going);
  out.status = solved.status;
  if (cancelled && cancelled()) throw PlanCancelled("plan optimization");
  throwIfCancelled("plan optimization");
  out.iterations = solved.iterations;
  if (solved.z.size() == 0) {
    out.message = "the solver ended without a motion (" + describe(out.status) + ")";
    return out;
  }
  out.candidate = plan;
  out.z = out.worthy ? worthy_iterate : solved.z;
  out.candidate.inputs = interpolated(problem.inputs(out.z), factor);
  return out;
}

}  // namespace

int coarseKnotFactor(double rate_hz) {
  constexpr double kKnotRate_hz = 25.0;
  return std::max(1, static_cast<int>(std::floor(rate_hz / kKnotRate_hz + 1e-9)));
}

void transcribePlan(const MotionProblem& request, const CollisionModelPtr& collision,
                    const Plan& plan, const OptimizationOptions& options,
                    SteadyClock::time_point t0, const ProgressFn& progress,
                    const CancelFn& cancelled, OptimizedPlan& out) {
  OptimizationReport& report = out.report;
  const StartState start = startOf(request, *collision, plan);
  // Whether a plan is stage-worthy re-simulates it with a hold: each plan's verdict once.
  std::optional<bool> plan_worthy, out_worthy;
  auto planWorthy = [&] {
    if (!plan_worthy) plan_worthy = stageWorthy(request, *collision, plan, options.margin_m);
    return *plan_worthy;
  };
  auto outWorthy = [&] {
    if (!out_worthy) out_worthy = stageWorthy(request, *collision, out.plan, options.margin_m);
    return *out_worthy;
  };

  // The candidate motions near the plan, each rolled out and ranked; the rest pose at the goal
  // searched as far as its own iteration bounds go, a caller's deadline only stopping it: bounded
  // by a share of a clock budget, PuppetCopter rrt 4's search ended on either side of it from run
  // to run, and its plan with it.
  const auto deadline =
      options.time_limit_s > 0
          ? t0 + std::chrono::duration_cast<SteadyClock::duration>(
                     std::chrono::duration<double>(options.time_limit_s))
          : SteadyClock::time_point::max();
  const WarmStarts warm = searchWarmStarts(request, collision, plan, options, start, deadline);

  // Solved first on knots every factor-th plan step at no less than kKnotRate_hz (the puppet's
  // swing, a few hertz, is resolved at that rate; a knot costs the solver's factorization more
  // than anything else).  The plan interpolates the knots linearly, and its re-simulation at its
  // own step differs from the solver's motion at the knots' by O(dt^2): on a fast motion enough
  // for catches and swing the solver did not see.  A motion so solved (the solver converged) that
  // is not stage-worthy is solved again on knots at the plan's own step, whose re-simulation is
  // the solver's motion.
  const int coarse = coarseKnotFactor(plan.rate_hz);
  TranscriptionSolve solve =
      solveTranscription(request, collision, plan, options, warm, start, coarse, t0, progress,
                         cancelled);
  report.method = solve.method;
  report.iterations = solve.iterations;
  if (!solve.message.empty()) {
    report.time_s = secondsSince(t0);
    report.message = solve.message;
    return;
  }
  acceptCandidate(request, collision, plan, std::move(solve.candidate), options, t0, out);
  const bool solved = solve.converged || solve.status == InteriorPointStatus::kConverged;
  // Another solve's candidate, verified and ranked once, into a trial that replaces the result
  // only when stage-worthy; the report's method says which it is (`then`, else `otherwise`).
  auto takeIfStageWorthy = [&](TranscriptionSolve again, const std::string& then,
                               const std::string& otherwise) {
    report.iterations += again.iterations;
    OptimizedPlan trial{out.plan, report};
    trial.report.improved = false;
    trial.report.message.clear();
    if (again.message.empty())
      acceptCandidate(request, collision, plan, std::move(again.candidate), options, t0, trial);
    if (trial.report.improved && stageWorthy(request, *collision, trial.plan, options.margin_m)) {
      trial.report.method = then;
      out = std::move(trial);
      out_worthy = true;
      solve = std::move(again);
    } else {
      report.method = otherwise;
      solve.capped = solve.capped || again.capped;
    }
  };
  if (coarse > 1 && solved && !solve.worthy &&
      !(out.report.improved && outWorthy())) {
    TranscriptionSolve fine =
        solveTranscription(request, collision, plan, options, warm, start, 1, t0, progress,
                           cancelled);
    const std::string then = solve.method + "; not stage-worthy, then " + fine.method;
    takeIfStageWorthy(std::move(fine), then,
                      solve.method + "; not stage-worthy, nor on knots at the plan's step");
  }
  // A motion that comes nearer anything than a stage-worthy plan may, from a start that does not:
  // solved again, its knots kept that far (PlanMargins), and taken when stage-worthy.  Where that
  // motion is the solver's, solved from it (the same knots and modes, a few millimetres to move:
  // marionette25's random requests rrt 265 and 875 took 20 iterations so, 63 and 30 from the warm
  // start again); else from the warm start.
  const PlanMargins& margins = warm.margins;
  if (!solve.capped && !(out.report.improved && outWorthy()) &&
      out.plan.min_clearance_m < StageThresholds{}.min_clearance_m &&
      margins.stage_worthy_anything_m > margins.anything_m) {
    TranscriptionSolve wider =
        solveTranscription(request, collision, plan, options, warm, start, coarse, t0, progress,
                           cancelled, true, out.report.improved ? &solve.z : nullptr);
    const std::string knots =
        "its knots " + formatNumber(margins.stage_worthy_anything_m) + " m from anything";
    const std::string then =
        report.method + "; nearer anything than 5 mm, then " + wider.method + ", " + knots;
    takeIfStageWorthy(std::move(wider), then, report.method + "; nor with " + knots);
  }
  // Never a worse answer than the plan without saying so: a stage-worthy plan stays unless what
  // would replace it is stage-worthy too.
  if (report.improved && planWorthy() && !outWorthy()) {
    out.plan = plan;
    report.improved = false;
    report.message =
        "the optimized motion is not stage-worthy and the plan is; the plan is unchanged";
  }
  std::string how;
  if (solve.capped)
    how = "the optimization's deadline (" + formatNumber(options.time_limit_s) +
          " s, as set) stopped the solver";
  else if (solve.status == InteriorPointStatus::kIterationLimit)
    how = "the solver used its budget (" + std::to_string(options.max_iterations) +
          " iterations a solve)";
  else if (solve.status != InteriorPointStatus::kConverged && !solve.converged)
    how = "the solver stopped (" + describe(solve.status) + ")";
  if (!how.empty())
    report.message = how + " after " + std::to_string(report.iterations) + " iterations" +
                     (report.message.empty() ? "" : "; " + report.message);
}

}  // namespace marionette::detail
