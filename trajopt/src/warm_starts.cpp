// SPDX-License-Identifier: BSD-3-Clause
#include "warm_starts.hpp"

#include <algorithm>
#include <cmath>
#include <random>

#include "marionette/models/cancel.hpp"
#include "marionette/models/rig_trajectory.hpp"
#include "marionette/problem/goal_rest_pose.hpp"
#include "marionette/problem/plan_quality.hpp"
#include "marionette/problem/verification.hpp"
#include "rest_pose_path.hpp"

namespace marionette::detail {

namespace {

// `samples` stretched (or compressed) in time to `rows` rows, linearly interpolated.
Eigen::MatrixXd stretched(const Eigen::MatrixXd& samples, int rows) {
  const int n = static_cast<int>(samples.rows());
  if (rows == n || n < 2) return samples;
  Eigen::MatrixXd out(rows, samples.cols());
  for (int r = 0; r < rows; ++r) {
    if (r % 4096 == 0) throwIfCancelled("plan optimization");
    const double x = rows > 1 ? r * (n - 1.0) / (rows - 1.0) : 0.0;
    const int i = std::min(static_cast<int>(x), n - 2);
    const double w = x - i;
    out.row(r) = (1 - w) * samples.row(i) + w * samples.row(i + 1);
  }
  return out;
}

// The durations the search for a start tries: the plan's own first, shorter and longer ones,
// and multiples of the shortest comfortable transfer's (1.25 x the limits' bound), on the sample
// grid, none shorter than that transfer or 0.2 s.
std::vector<double> candidateDurations(const Model& model, double plan_duration_s, double rate_hz,
                                       double knots_per_s,
                                       const Eigen::VectorXd& rho0, const Eigen::VectorXd& rho_end,
                                       const std::optional<Eigen::VectorXd>& goal_rest) {
  const double dt = 1.0 / rate_hz;
  double shortest = moveDuration(model, rho0, rho_end, dt, 1.0);
  if (goal_rest)
    shortest = std::max(shortest, moveDuration(model, rho0, *goal_rest, dt, 1.0));
  shortest = std::max(0.2, 1.25 * shortest);
  std::vector<double> out = {plan_duration_s};
  auto add = [&](double T) {
    T = std::lround(T * rate_hz) / rate_hz;
    if (T < shortest - 0.5 / rate_hz) return;
    if (!optimizationTooLarge(T, rate_hz, knots_per_s).empty()) return;
    for (double d : out)
      if (std::abs(d - T) < 0.5 / rate_hz) return;
    out.push_back(T);
  };
  for (double f : {0.5, 0.75, 1.25, 1.5}) add(f * plan_duration_s);
  for (double f : {1.0, 1.5, 2.0, 3.0}) add(f * shortest);
  return out;
}

// A collision-free rest pose that meets the goal (within half its tolerance, else within it), by
// damped Gauss-Newton on the rest pose's inputs (the roadmap's goal search) from the rest poses
// of the plan's inputs where it first reaches the goal, where it ends, and at its start, then
// from the four of its rest poses along the way nearest the goal, then by a random
// search from the two vertices nearest it, then from the rest poses of inputs drawn in their
// box; nullopt when none is found (or before in_time says stop).
std::optional<RestVertex> restAtGoal(const MotionProblem& request, CollisionChecker& checker,
                                     GoalEvaluator& goal, const Plan& plan,
                                     const StartState& start,
                                     const std::function<bool()>& in_time) {
  const double aim = 0.5 * goal.tolerance();
  std::vector<std::pair<Eigen::VectorXd, const Eigen::VectorXd*>> froms;
  if (plan.goal_sample >= 0 && plan.goal_sample < plan.samples())
    froms.emplace_back(plan.inputs.row(plan.goal_sample).transpose(), nullptr);
  froms.emplace_back(plan.inputs.row(plan.samples() - 1).transpose(), nullptr);
  froms.emplace_back(plan.inputs.row(0).transpose(), &start.q);
  // Rest vertices with their goal error, the nearest first once sorted.
  using Vertex = std::pair<double, RestVertex>;
  const auto nearer = [](const Vertex& x, const Vertex& y) { return x.first < y.first; };
  std::vector<Vertex> vertices;
  for (const auto& [rho, guess] : froms) {
    if (!in_time()) break;
    const auto from = restVertex(request.model, checker, rho, guess);
    if (!from) continue;
    const double error = goal.poseError(from->q, from->rho);
    if (error <= aim) return from;
    if (const auto v = descendToGoal(request.model, checker, goal, *from, aim, in_time))
      return v;
    vertices.emplace_back(error, *from);
  }
  // Where the rest poses near the plan come no nearer than half the tolerance, one that meets
  // the goal at all (Gauss-Newton, tens of milliseconds) before the random search (seconds).
  for (const Vertex& from : vertices)
    if (const auto v =
            descendToGoal(request.model, checker, goal, from.second, goal.tolerance(), in_time))
      return v;
  // The rest poses of the plan's inputs along the way, nearest the goal first: where the plan
  // lifts a hand over the table, a rest pose there is over it too, and the descent from the ends
  // would have to pass through it.
  std::vector<Vertex> along;
  const int stride = std::max(1, plan.samples() / 40);
  for (int i = stride; i + 1 < plan.samples() && in_time(); i += stride) {
    const auto v = restVertex(request.model, checker, plan.inputs.row(i).transpose(), &start.q);
    if (v) along.emplace_back(goal.poseError(v->q, v->rho), *v);
  }
  std::stable_sort(along.begin(), along.end(), nearer);
  for (std::size_t j = 0; j < along.size() && j < 4; ++j) {
    if (along[j].first <= goal.tolerance()) return along[j].second;
    if (const auto v = descendToGoal(request.model, checker, goal, along[j].second,
                                     goal.tolerance(), in_time))
      return v;
    vertices.push_back(along[j]);
  }
  // Then a random search from the two nearest (bounded in iterations: a rest-pose solve each).
  std::stable_sort(vertices.begin(), vertices.end(), nearer);
  for (std::size_t j = 0; j < vertices.size() && j < 2; ++j) {
    std::mt19937_64 rng(plan.seed ? plan.seed : 1);
    const auto found =
        randomDescent(request.model, checker, goal, vertices[j].second, aim, rng, in_time);
    if (found) return found;
  }
  // The goal may hang on another branch of rest poses than any near the plan (the planar arm's
  // elbow to the left of the bar, its rest poses near the plan's all to the right): the rest poses
  // of inputs drawn uniformly in their box (a seeded count), each descended from, the nearest to
  // the goal first.
  constexpr int kDraws = 64, kDescents = 4;
  std::mt19937_64 rng(plan.seed ? plan.seed : 1);
  std::vector<Vertex> drawn;
  for (int i = 0; i < kDraws && in_time(); ++i) {
    Eigen::VectorXd rho(request.model->nk());
    for (int j = 0; j < rho.size(); ++j) {
      const KinematicVariable& v = request.model->kinematic[j];
      const double u = static_cast<double>(rng() >> 11) * 0x1.0p-53;
      rho[j] = std::isfinite(v.upper - v.lower) ? v.lower + (v.upper - v.lower) * u
                                                : v.default_value;
    }
    if (const auto v = restVertex(request.model, checker, rho, nullptr))
      drawn.emplace_back(goal.poseError(v->q, v->rho), *v);
  }
  std::stable_sort(drawn.begin(), drawn.end(), nearer);
  for (std::size_t j = 0; j < drawn.size() && j < kDescents; ++j) {
    if (drawn[j].first <= goal.tolerance()) return drawn[j].second;
    if (const auto v = descendToGoal(request.model, checker, goal, drawn[j].second,
                                     goal.tolerance(), in_time))
      return v;
  }
  if (!drawn.empty())
    return randomDescent(request.model, checker, goal, drawn.front().second, aim, rng, in_time);
  return std::nullopt;
}

// The rest pose `found` (goal error at most `aim`) with its inputs drawn back towards the start's
// `rho0` as far as the goal and the stage allow: halfway back (or a quarter, an eighth), then
// Gauss-Newton to the goal again, while that succeeds; then each input on its own all the way
// back, where that succeeds.  A search path's random walk moves every input; the rest pose at its
// end keeps the other arm, the head and the legs where the walk left them, and a transfer there
// swings them all.  Drawn back, only what the goal needs has moved.
RestVertex drawnTowardsStart(const ModelPtr& model, CollisionChecker& checker,
                             GoalEvaluator& goal, RestVertex found, const Eigen::VectorXd& rho0,
                             double aim, const std::function<bool()>& in_time) {
  // From `found`, its inputs moved to `rho` and back onto the goal; kept when nearer the start.
  auto tryInputs = [&](const Eigen::VectorXd& rho) {
    std::optional<RestVertex> back = restVertex(model, checker, rho, &found.q);
    if (back && goal.poseError(back->q, back->rho) > aim)
      back = descendToGoal(model, checker, goal, *back, aim, in_time);
    if (!back || !((back->rho - rho0).norm() < (found.rho - rho0).norm())) return false;
    found = std::move(*back);
    return true;
  };
  double fraction = 0.5;
  for (int step = 0; step < 12 && fraction >= 0.125 && in_time(); ++step)
    if (!tryInputs(found.rho + fraction * (rho0 - found.rho))) fraction *= 0.5;
  // Then each input on its own, all the way back.
  for (Eigen::Index i = 0; i < rho0.size() && in_time(); ++i) {
    if (found.rho[i] == rho0[i]) continue;
    Eigen::VectorXd rho = found.rho;
    rho[i] = rho0[i];
    tryInputs(rho);
  }
  return found;
}

// The inputs of a collision-free rest pose that meets the goal (restAtGoal) into goal_rest, and
// the same drawn towards the start's (drawnTowardsStart) into goal_rest_near_start when they
// differ; none when none is found by the deadline.
void searchRestAtGoal(const MotionProblem& request, const CollisionModelPtr& collision,
                      const Plan& plan, const StartState& start,
                      SteadyClock::time_point deadline, WarmStarts& out) {
  CollisionChecker checker(collision);
  GoalEvaluator goal(request.model, request.goal);
  const auto in_time = [&] { return SteadyClock::now() < deadline; };
  const std::optional<RestVertex> found = restAtGoal(request, checker, goal, plan, start, in_time);
  if (!found) return;
  out.goal_rest = found->rho;
  out.nearest_goal_rest = *found;
  const double aim = std::max(0.5 * goal.tolerance(), goal.poseError(found->q, found->rho));
  const RestVertex near = drawnTowardsStart(request.model, checker, goal, *found,
                                            plan.inputs.row(0).transpose(), aim, in_time);
  if (near.rho != found->rho) {
    out.goal_rest_near_start = near.rho;
    out.nearest_goal_rest = near;
  }
}

// A path of rest poses around the folds and the stage from the start's inputs to the rest pose
// at the goal (the one nearest the start's inputs when there is one), when the straight transfer
// passes neither; empty when the transfer does, or when none is found within the budget
// (`why` then says so).
RestPosePath pathAroundFolds(const MotionProblem& request, const CollisionModelPtr& collision,
                             const Plan& plan, const OptimizationOptions& options,
                             const PlanMargins& margins, const StartState& start,
                             const WarmStarts& warm, std::string& why) {
  // The budget in rest poses solved, over the puppet's dynamic variables as the search's
  // propagations are (a rest pose and its clearance cost 0.05-0.1 ms x n_d): 8,000 for the
  // planar arm, 4,000 for arm3d (its path behind the pillars, rrt 27, took 3,239), 800 for
  // PuppetCopter, 640 for marionette25.
  constexpr long kRestPoseWork = 16000;
  RestPosePathSetup setup;
  setup.collision = collision;
  // The start's rest pose may be nearer the stage than the optimization's rows ask: the path
  // keeps what the start keeps, down to the plan's margin.
  setup.stage_margin_m = std::min(
      margins.stage_m, std::max(options.margin_m, 0.98 * margins.start_stage_clearance_m));
  setup.margin_m = margins.stage_worthy_anything_m;
  setup.max_rest_poses = std::max<long>(1, kRestPoseWork / std::max(1, request.model->nd()));
  setup.seed = plan.seed ? plan.seed : 1;
  GoalEvaluator goal(request.model, request.goal);
  const RestVertex& target = warm.nearest_goal_rest;
  const double aim = std::max(0.5 * goal.tolerance(), goal.poseError(target.q, target.rho));
  RestPosePath path = searchRestPosePath(setup, {plan.inputs.row(0).transpose(), start.q},
                                         target.rho, goal, aim);
  if (path.inputs.empty()) {
    why = path.message;
  } else if (path.inputs.size() <= 2) {
    why = "the transfer passes";
    path.inputs.clear();
  } else {
    why = std::to_string(path.inputs.size()) + " rest poses, " +
          std::to_string(path.rest_poses) + " solved";
  }
  return path;
}

}  // namespace

PlanMargins planMargins(const CollisionModelPtr& collision, const OptimizationOptions& options,
                        const Eigen::VectorXd& start_q, const Eigen::VectorXd& rho0) {
  constexpr double kBeyondStageWorthy_m = 0.0025;
  CollisionChecker checker(collision);
  Eigen::VectorXd q_full(start_q.size() + rho0.size());
  q_full << start_q, rho0;
  const StateCheck at_start = checker.checkState(q_full);
  PlanMargins out;
  out.start_clearance_m = at_start.clearance_m;
  out.start_stage_clearance_m = at_start.stage_clearance_m;
  out.stage_m =
      options.margin_m > 0 ? options.margin_m + std::max(0.005, 0.5 * options.margin_m) : 0.0;
  out.anything_m = 0.002;
  out.stage_worthy_anything_m =
      std::clamp(0.9 * at_start.clearance_m, out.anything_m,
                 StageThresholds{}.min_clearance_m + kBeyondStageWorthy_m);
  return out;
}

StartState startOf(const MotionProblem& request, const CollisionModel& collision, const Plan& plan) {
  return resolveStart(request.model, plan.inputs.row(0).transpose(), request.start,
                      collision.contacts());
}

WarmStarts searchWarmStarts(const MotionProblem& request, const CollisionModelPtr& collision,
                            const Plan& plan, const OptimizationOptions& options,
                            const StartState& start, SteadyClock::time_point goal_search_end) {
  WarmStarts out;
  const ModelPtr& model = request.model;
  const Eigen::VectorXd rho0 = plan.inputs.row(0).transpose();
  IntegratorOptions io;
  io.dt_s = 1.0 / plan.rate_hz;
  io.contacts = collision->contacts();
  VariationalIntegrator vi(model, io);

  // A rest pose that meets the goal: the end's static tensions (the tension terms' reference)
  // and the end of the transfer starts.  Searched from the rest poses of the plan's inputs where
  // it reaches the goal, where it ends, and at its start.
  const Eigen::VectorXd rho_end = plan.inputs.row(plan.samples() - 1).transpose();
  searchRestAtGoal(request, collision, plan, start, goal_search_end, out);
  out.margins = planMargins(collision, options, start.q, rho0);
  const PlanMargins& margins = out.margins;
  RestPosePath around;
  if (out.goal_rest)
    around = pathAroundFolds(request, collision, plan, options, margins, start, out,
                             out.rest_pose_path);

  RolloutScore::Setup setup;
  setup.model = model;
  setup.goal = request.goal;
  setup.start = vi.stateFromVelocity(start.q, start.qdot, rho0);
  setup.rate_hz = plan.rate_hz;
  setup.settle_s = options.settle_s;
  setup.weights = options.weights;
  setup.end_reference = out.goal_rest ? *out.goal_rest : rho_end;
  setup.collision = collision;
  setup.margin_m = margins.stage_m;
  auto scoreOf = [&](double duration_s, double knots_per_s) {
    RolloutScore::Setup s = setup;
    s.duration_s = duration_s;
    s.segments = std::max(3, static_cast<int>(std::lround(duration_s * knots_per_s)));
    return std::make_unique<RolloutScore>(s);
  };

  std::vector<WarmStart>& starts = out.ranked;
  auto addStart = [&](RolloutScore& at, Eigen::VectorXd z, const std::string& name,
                      std::optional<Eigen::VectorXd> end_rest, bool clear_rest_poses = false) {
    if (!at.evaluate(z)) return;
    const double violation = at.constraintViolation();
    starts.push_back({violation == 0 && at.minClearance() > 0, std::max(0.1, violation),
                      at.cost().total(), &at, std::move(z), name, std::move(end_rest),
                      clear_rest_poses});
  };
  for (double duration_s : candidateDurations(*model, plan.duration_s(), plan.rate_hz,
                                              options.knots_per_s, rho0, rho_end,
                                              out.goal_rest)) {
    out.scores.push_back(scoreOf(duration_s, options.knots_per_s));
    RolloutScore& at = *out.scores.back();
    const InputSpline& spline = at.spline();
    const Eigen::MatrixXd motion = stretched(plan.inputs, spline.samples());
    addStart(at, spline.fit(motion), "the plan's motion", std::nullopt);
    for (int segments : {3, spline.segments() / 2})
      addStart(at, spline.smoothedFit(motion, segments), "the plan's motion smoothed",
               std::nullopt);
    addStart(at, spline.transfer(rho_end), "a transfer to the plan's end inputs", std::nullopt);
    if (out.goal_rest)
      addStart(at, spline.transfer(*out.goal_rest), "a transfer to a rest pose at the goal",
               out.goal_rest);
    if (out.goal_rest_near_start)
      addStart(at, spline.transfer(*out.goal_rest_near_start),
               "a transfer to the rest pose at the goal nearest the start's inputs",
               out.goal_rest_near_start);
  }
  // A plan that reaches its goal swinging loses it in those fits (arm3d behind the pillars):
  // when no start meets everything, the plan's own motion up to where it first meets a goal it
  // need not rest at, through a spline that follows it (a segment per two samples).  The
  // solver's best point can then be no worse than that.
  if (std::none_of(starts.begin(), starts.end(), [](const WarmStart& a) { return a.feasible; })) {
    const Eigen::MatrixXd reach = !request.goal.at_rest && plan.goal_sample > 0
                                      ? Eigen::MatrixXd(plan.inputs.topRows(plan.goal_sample + 1))
                                      : plan.inputs;
    out.scores.push_back(scoreOf((reach.rows() - 1) / plan.rate_hz, 0.5 * plan.rate_hz));
    RolloutScore& fine = *out.scores.back();
    addStart(fine, fine.spline().fit(reach), "the plan's motion, finely fitted", std::nullopt);
  }
  // The path of rest poses around the folds, slowly (at half the limits: the swing of a stop at
  // each waypoint is small), through a spline that follows it (a segment per two samples).
  if (!around.inputs.empty()) {
    constexpr double kSlowdown = 2.0;
    const Eigen::MatrixXd motion = restPoseMotion(*model, around, plan.rate_hz, kSlowdown);
    out.scores.push_back(scoreOf((motion.rows() - 1) / plan.rate_hz, 0.5 * plan.rate_hz));
    RolloutScore& fine = *out.scores.back();
    addStart(fine, fine.spline().fit(motion), "a path of rest poses around the folds",
             around.inputs.back(), true);
  }
  std::sort(starts.begin(), starts.end(), [](const WarmStart& a, const WarmStart& b) {
    return std::make_pair(a.violation, a.cost) < std::make_pair(b.violation, b.cost);
  });
  const auto feasible =
      std::find_if(starts.begin(), starts.end(), [](const WarmStart& a) { return a.feasible; });
  if (feasible != starts.end() && feasible - starts.begin() > 1)
    std::rotate(starts.begin() + 1, feasible, feasible + 1);
  return out;
}

}  // namespace marionette::detail
