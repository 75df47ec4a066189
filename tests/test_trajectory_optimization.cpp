// SPDX-License-Identifier: BSD-3-Clause
// Trajectory optimization (trajopt/trajectory_optimization.hpp): the input spline's guarantees,
// the warm starts' score against independent rollouts, optimizePlan end to end, plan quality.
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <thread>

#include "input_spline.hpp"
#include "marionette/common/text.hpp"
#include "marionette/environments/scene.hpp"
#include "marionette/models/input_limits.hpp"
#include "marionette/models/model_io.hpp"
#include "marionette/models/rest_pose.hpp"
#include "marionette/models/simulation.hpp"
#include "marionette/problem/plan_quality.hpp"
#include "marionette/planner/planner.hpp"
#include "marionette/trajopt/trajectory_optimization.hpp"
#include "plan_acceptance.hpp"
#include "rollout_score.hpp"
#include "spline_fit.hpp"
#include "warm_starts.hpp"

namespace {

using namespace marionette;
using namespace marionette::detail;

State restStart(const ModelPtr& m, const Eigen::VectorXd& rho, double rate_hz) {
  const StartState s = resolveStart(m, rho, StartSpec{});
  IntegratorOptions o;
  o.dt_s = 1.0 / rate_hz;
  VariationalIntegrator vi(m, o);
  return vi.stateFromVelocity(s.q, s.qdot, rho);
}

// A problem at 50 Hz from the rest pose of the model's default inputs.
RolloutScore::Setup setupFor(const ModelPtr& m, const std::string& goal, double duration_s,
                      int segments, double settle_s) {
  RolloutScore::Setup s;
  s.model = m;
  s.rate_hz = 50.0;
  s.start = restStart(m, m->defaultInputs(), s.rate_hz);
  s.goal = GoalSpec::parse(goal);
  s.duration_s = duration_s;
  s.segments = segments;
  s.settle_s = settle_s;
  s.end_reference = m->defaultInputs();
  return s;
}

// The suspended mass thrown up and caught: xr swings out and back, r shortens fast (the mass
// flies up) then lengthens, so its string goes slack and catches again.
RolloutScore::Setup throwSetup(const ModelPtr& mass) {
  return setupFor(mass, "point:mass=0.1,0,0.4;radius=0.05", 0.8, 5, 0.3);
}
// Per input, its points' offsets from the default inputs (throwSetup's spline).
Eigen::VectorXd throwVariables(const ModelPtr& mass) {
  const Eigen::VectorXd d = mass->defaultInputs();
  const double offsets[2][3] = {{0.05, 0.08, 0.1}, {-0.15, 0.02, 0.05}};
  const InputSpline spline(*mass, 0.8, 5, 50.0, d);
  Eigen::VectorXd z(spline.variables());
  for (int j = 0; j < 2; ++j)
    for (int f = 0; f < 3; ++f) z[spline.variable(j, f)] = d[j] + offsets[j][f];
  return z;
}

// String 0's slack-to-taut switches (and slack steps) stepping the rows of u from `start`,
// then hold_steps more at the last row: an independent count.
int countCatches(const ModelPtr& m, const State& start, const Eigen::MatrixXd& u, int hold_steps,
                 int* slack_steps = nullptr) {
  IntegratorOptions o;
  o.dt_s = 0.02;
  VariationalIntegrator vi(m, o);
  State x = start;
  StepReport rep = vi.makeReport();
  int catches = 0, slack = 0;
  bool was_taut = true;
  for (int k = 1; k < u.rows() + hold_steps; ++k) {
    const int row = std::min<int>(k, static_cast<int>(u.rows()) - 1);
    if (vi.step(x, u.row(row).transpose(), x, &rep) != StepStatus::Ok) return -1;
    slack += !rep.taut[0];
    catches += !was_taut && rep.taut[0];
    was_taut = rep.taut[0];
  }
  if (slack_steps) *slack_steps = slack;
  return catches;
}

// The suspended mass's snaps over `u` and a hold, counted here from the integrator's own steps: a
// slack -> taut switch whose tension within 0.1 s (5 steps) exceeds 3 times `load_N`; the first
// one's row (the switch), the row of the peak tension.
int countSnaps(const ModelPtr& m, const State& start, const Eigen::MatrixXd& u, int hold_steps,
               double load_N, int* first_snap_row = nullptr, int* peak_row = nullptr) {
  IntegratorOptions o;
  o.dt_s = 0.02;
  VariationalIntegrator vi(m, o);
  State x = start;
  StepReport rep = vi.makeReport();
  std::vector<double> tension = {load_N};  // at rest at the start
  for (int k = 1; k < u.rows() + hold_steps; ++k) {
    const int row = std::min<int>(k, static_cast<int>(u.rows()) - 1);
    if (vi.step(x, u.row(row).transpose(), x, &rep) != StepStatus::Ok) return -1;
    tension.push_back(rep.tension_N[0]);
  }
  int snaps = 0;
  for (std::size_t k = 1; k < tension.size(); ++k) {
    if (!(tension[k - 1] <= 0 && tension[k] > 0)) continue;
    double peak = 0;
    for (std::size_t j = k; j < std::min(tension.size(), k + 5); ++j)
      peak = std::max(peak, tension[j]);
    if (peak > 3 * load_N && snaps++ == 0 && first_snap_row) *first_snap_row = static_cast<int>(k);
  }
  if (peak_row)
    *peak_row =
        static_cast<int>(std::max_element(tension.begin(), tension.end()) - tension.begin());
  return snaps;
}

// Each joint's speed rms over the second half of a hold of hold_steps after `u` (rows
// u.rows() - 1 + hold_steps - hold_steps / 2 - 1 to the end), stepped here.
Eigen::VectorXd holdSpeedRms(const ModelPtr& m, const State& start, const Eigen::MatrixXd& u,
                             int hold_steps) {
  IntegratorOptions o;
  o.dt_s = 0.02;
  VariationalIntegrator vi(m, o);
  State x = start;
  const int last = static_cast<int>(u.rows()) - 1 + hold_steps;
  const int from = last - hold_steps / 2 - 1;
  Eigen::VectorXd sum2 = Eigen::VectorXd::Zero(m->nd()), previous;
  for (int k = 1; k <= last; ++k) {
    const int row = std::min<int>(k, static_cast<int>(u.rows()) - 1);
    if (vi.step(x, u.row(row).transpose(), x, nullptr) != StepStatus::Ok) return {};
    if (k > from) sum2 += ((x.q - previous) / o.dt_s).cwiseAbs2();
    if (k >= from) previous = x.q;
  }
  return (sum2 / (last - from)).cwiseSqrt();
}

TEST(InputSpline, StartsAndEndsAtRestAndItsLimitRowsBoundEverySampledDifference) {
  const ModelPtr arm = loadModel("planar-arm");
  const Eigen::VectorXd start = arm->defaultInputs();
  const InputSpline spline(*arm, 1.5, 6, 50.0, start);
  ASSERT_EQ(spline.samples(), 76);
  ASSERT_EQ(spline.variables(), 2 * 4);
  const double points[2][4] = {{0.35, 0.40, 0.38, 0.36},   // x: inner points, then the end value
                               {0.45, 0.50, 0.52, 0.50}};  // L
  Eigen::VectorXd z(spline.variables());
  for (int j = 0; j < 2; ++j)
    for (int f = 0; f < 4; ++f) z[spline.variable(j, f)] = points[j][f];
  const Eigen::MatrixXd u = spline.sampleInputs(z);
  // Samples 0 .. n do not move when a variable past activeVariables(n) does, and do when the
  // last active one does (a prefix: what the sensitivities are computed over).
  for (int n = 0; n < spline.samples(); ++n) {
    const int a = spline.activeVariables(n);
    ASSERT_LE(a, spline.variables());
    Eigen::VectorXd moved = z;
    moved.tail(spline.variables() - a).array() += 0.01;
    EXPECT_EQ(spline.sampleInputs(moved).topRows(n + 1), u.topRows(n + 1)) << n;
    if (a == 0) continue;
    moved = z;
    moved[a - 1] += 0.01;
    EXPECT_NE(spline.sampleInputs(moved).topRows(n + 1), u.topRows(n + 1)) << n;
  }
  EXPECT_EQ(spline.activeVariables(75), spline.variables());
  EXPECT_NEAR((u.row(0).transpose() - start).norm(), 0.0, 1e-15);
  EXPECT_NEAR(u(75, 0), 0.36, 1e-15);
  EXPECT_NEAR(u(75, 1), 0.50, 1e-15);
  // At rest at both ends: the first and last differences vanish to third order.
  EXPECT_LT((u.row(1) - u.row(0)).cwiseAbs().maxCoeff(), 1e-4);
  EXPECT_LT((u.row(75) - u.row(74)).cwiseAbs().maxCoeff(), 1e-4);
  // The fit of its own samples gives back its variables.
  EXPECT_LT((spline.fit(u) - z).cwiseAbs().maxCoeff(), 1e-9);
  // When the limit rows hold, the samples keep every limit at 50 Hz and at 400 Hz.
  const InputSpline::LimitRows rows = spline.limitRows(*arm);
  const Eigen::VectorXd g = rows.matrix * z;
  const bool within = ((g - rows.lower).array() >= -1e-12).all() &&
                      ((rows.upper - g).array() >= -1e-12).all();
  ASSERT_TRUE(within);
  EXPECT_TRUE(checkInputLimits(*arm, u, 50.0).empty());
  const InputSpline fine(*arm, 1.5, 6, 400.0, start);
  EXPECT_TRUE(checkInputLimits(*arm, fine.sampleInputs(z), 400.0).empty());
  // A motion that breaks a row: 30 cm in 0.25 s.
  Eigen::VectorXd fast = z;
  fast[spline.variable(0, 3)] = 0.60;
  fast[spline.variable(0, 2)] = 0.60;
  const Eigen::VectorXd gf = rows.matrix * fast;
  EXPECT_TRUE(((gf - rows.lower).array() < 0).any() || ((rows.upper - gf).array() < 0).any());
}

// The spline nearest to sampled inputs within the rig's limits (the performance's kinematic step),
// by the interior point: where no limit binds, the unconstrained least-squares fit; where they
// do, every limit row kept and Ipopt's optimum (its cross-check) to 10 µm.
TEST(SplineFit, IsTheLeastSquaresFitWithinTheLimitsAndIpoptsOptimum) {
  const ModelPtr arm = loadModel("planar-arm");
  const Eigen::VectorXd start = arm->defaultInputs();
  const InputSpline spline(*arm, 2.0, 10, 50.0, start);
  const InputSpline::LimitRows rows = spline.limitRows(*arm);
  auto within = [&](const Eigen::VectorXd& z) {
    const Eigen::VectorXd g = rows.matrix * z;
    return ((g - rows.lower).array() >= -1e-7).all() && ((rows.upper - g).array() >= -1e-7).all();
  };
  // A slow sway of x: 2 cm at 0.5 Hz, well within every limit.
  Eigen::MatrixXd slow = start.transpose().replicate(spline.samples(), 1);
  for (int n = 0; n < spline.samples(); ++n)
    slow(n, 0) += 0.02 * std::sin(M_PI * n / 50.0) * std::sin(M_PI * n / 50.0);
  const Eigen::VectorXd unconstrained = spline.fit(slow);
  ASSERT_TRUE(within(unconstrained));
  bool converged = false;
  const Eigen::VectorXd fitted = detail::fitWithinLimits(spline, *arm, slow, 1.0, &converged);
  EXPECT_TRUE(converged);
  EXPECT_LT((fitted - unconstrained).cwiseAbs().maxCoeff(), 1e-6);
  // A 30 cm step of x at 1 s: no spline follows it within the speed and acceleration limits.
  Eigen::MatrixXd step = start.transpose().replicate(spline.samples(), 1);
  step.bottomRows(spline.samples() / 2).col(0).array() += 0.30;
  ASSERT_FALSE(within(spline.fit(step)));
  const Eigen::VectorXd ours = detail::fitWithinLimits(spline, *arm, step, 1.0, &converged);
  EXPECT_TRUE(converged);
  EXPECT_TRUE(within(ours));
  EXPECT_TRUE(checkInputLimits(*arm, spline.sampleInputs(ours), 50.0).empty());
  bool ipopt_converged = false;
  const Eigen::VectorXd ipopt = detail::fitWithinLimits(spline, *arm, step, 1.0, &ipopt_converged,
                                                        detail::NlpSolver::kIpopt);
  EXPECT_TRUE(ipopt_converged);
  EXPECT_LT((ours - ipopt).cwiseAbs().maxCoeff(), 1e-5);  // (m: both at their 1e-8 tolerance)
  // And nearer the step than holding still.
  const Eigen::VectorXd still = start.replicate(spline.freePerInput(), 1);
  EXPECT_LT((spline.sampleInputs(ours) - step).norm(),
            0.5 * (spline.sampleInputs(still) - step).norm());
}

// The warm starts' score (rollout_score.hpp) against an independent rollout: the thrown mass's
// swing, settle, effort and goal rows computed here from the integrator's own steps; the string
// going slack priced; a still motion at rest scoring nothing but its duration.
TEST(RolloutScore, ItsTermsAreAnIndependentRolloutsAndAStillMotionScoresOnlyItsDuration) {
  const ModelPtr mass = loadModel("suspended-mass");
  const RolloutScore::Setup s = throwSetup(mass);
  RolloutScore score(s);
  const Eigen::VectorXd z = throwVariables(mass);
  ASSERT_TRUE(score.evaluate(z)) << score.failure();
  const RolloutScore::Terms& c = score.cost();
  const Eigen::MatrixXd u = score.spline().sampleInputs(z);
  const double dt = 1.0 / s.rate_hz;
  const int motion = static_cast<int>(u.rows()) - 1;
  const int hold = static_cast<int>(std::lround(s.settle_s * s.rate_hz));
  // Kinetic energy with the start's mass matrix, over the motion and over the hold.
  DynamicsData data(*mass);
  const Eigen::VectorXd q0 = mass->configuration(s.start.q, s.start.rho);
  forwardKinematics(*mass, data, q0);
  computeLagrangian(*mass, data, q0, Eigen::VectorXd::Zero(mass->nd()),
                    LagrangianOrder::MassMatrix);
  const Eigen::MatrixXd M = data.M;
  double total_mass = 0;
  for (const Mass& m : mass->masses) total_mass += m.mass_kg;
  const double energy_ref = total_mass * mass->gravity_mps2 * 0.01;
  IntegratorOptions o;
  o.dt_s = dt;
  o.max_substep_halvings = 0;
  VariationalIntegrator vi(mass, o);
  State x = s.start, next = vi.makeState();
  double swing = 0, settle = 0;
  Eigen::VectorXd v_end;
  for (int k = 0; k < motion + hold; ++k) {
    ASSERT_EQ(vi.step(x, u.row(std::min(k + 1, motion)).transpose(), next), StepStatus::Ok);
    const Eigen::VectorXd v = (next.q - x.q) / dt;
    (k < motion ? swing : settle) += 0.5 * v.dot(M * v) * dt / energy_ref;
    x = next;
  }
  EXPECT_NEAR(c.swing, s.weights.swing * swing, 1e-9 * swing);
  EXPECT_NEAR(c.settle, s.weights.settle * settle, 1e-9 * settle);
  EXPECT_GT(c.swing, 0);
  // Effort: sum_j sum_s (du / max_speed_j)^2 / dt.
  double effort = 0;
  for (int j = 0; j < mass->nk(); ++j)
    for (int k = 0; k < motion; ++k) {
      const double d = (u(k + 1, j) - u(k, j)) / mass->kinematic[j].max_speed;
      effort += d * d / dt;
    }
  EXPECT_NEAR(c.effort, s.weights.effort * effort, 1e-9 * effort);
  EXPECT_NEAR(c.duration, RolloutScore::kDurationWeight * motion * dt, 1e-12);
  // The string goes slack and catches along this motion: priced.
  int slack_steps = 0;
  EXPECT_GT(countCatches(mass, s.start, u, 0, &slack_steps), 0);
  EXPECT_GT(slack_steps, 0);
  EXPECT_GT(c.slack, 0);
  EXPECT_GT(c.tension_rate, 0);
  EXPECT_GT(score.constraintViolation(), 0);  // the goal 0.1 m out and 0.4 m up is missed
  // The same z again rolls out no more.
  const int rollouts = score.rollouts();
  ASSERT_TRUE(score.evaluate(z));
  EXPECT_EQ(score.rollouts(), rollouts);

  // Held at its start's inputs, at rest at its start, with the goal where it hangs: nothing but
  // the duration, and no violation.
  const ModelPtr arm = loadModel("planar-arm");
  const StartState rest = resolveStart(arm, arm->defaultInputs(), StartSpec{});
  RolloutScore::Setup still_setup = setupFor(
      arm, "q:theta1=" + std::to_string(rest.q[0]) + ";at-rest", 1.0, 4, 0.5);
  RolloutScore still(still_setup);
  ASSERT_TRUE(still.evaluate(still.spline().transfer(arm->defaultInputs())));
  EXPECT_LT(still.cost().swing + still.cost().settle, 1e-12);
  EXPECT_LT(still.cost().effort + still.cost().jerk, 1e-20);  // (the spline's rounding)
  EXPECT_EQ(still.cost().slack, 0.0);
  EXPECT_LT(still.cost().tension_rate, 1e-12);
  EXPECT_EQ(still.constraintViolation(), 0.0);
}

// The clearance price against the collision checker's own distances: PuppetCopter over the table
// held still, a margin of 0.3 m so that every sample counts.
TEST(RolloutScore, TheClearancePriceIsTheCheckersDistanceBelowTheMargin) {
  const ModelPtr pc = loadModel("puppetcopter");
  RolloutScore::Setup s = setupFor(pc, "point:hand_l=0.05,0.24,0.40", 0.6, 3, 0.0);
  s.collision = std::make_shared<CollisionModel>(pc, loadScene("table"));
  s.margin_m = 0.3;
  s.self_margin_m = 0.0;
  RolloutScore score(s);
  const Eigen::VectorXd z = score.spline().transfer(pc->defaultInputs());
  ASSERT_TRUE(score.evaluate(z)) << score.failure();
  CollisionChecker checker(s.collision);
  IntegratorOptions o;
  o.dt_s = 1.0 / s.rate_hz;
  o.max_substep_halvings = 0;
  o.contacts = s.collision->contacts();
  VariationalIntegrator vi(pc, o);
  const Eigen::MatrixXd u = score.spline().sampleInputs(z);
  State x = s.start, next = vi.makeState();
  double price = 0, nearest = std::numeric_limits<double>::infinity();
  for (int k = 0; k + 1 < u.rows(); ++k) {
    ASSERT_EQ(vi.step(x, u.row(k + 1).transpose(), next), StepStatus::Ok);
    const double d = checker.clearance(pc->configuration(next.q, next.rho)).stage_distance_m;
    nearest = std::min(nearest, d);
    if (d < s.margin_m)
      price += RolloutScore::kClearanceWeight / s.rate_hz *
               std::pow((s.margin_m - d) / s.margin_m, 2);
    x = next;
  }
  ASSERT_LT(nearest, s.margin_m);
  EXPECT_NEAR(score.minStageClearance(), nearest, 1e-12);
  EXPECT_NEAR(score.cost().clearance, price, 1e-9 * price);
}

// The planar arm swung to theta1 = -0.2 by EST (seed 1), on the empty stage.
PlanRequest requestFor(const std::string& model, const std::string& scene,
                       const std::string& goal, const std::string& planner, int seed) {
  PlanRequest req;
  req.model = loadModel(model);
  req.scene = loadScene(scene);
  req.goal = GoalSpec::parse(goal);
  req.options.planner = planner;
  req.options.seed = seed;
  return req;
}

PlanRequest armRequest() { return requestFor("planar-arm", "empty", "q:theta1=-0.2", "est", 1); }

// `out` improved within the iteration budget: an exact plan within the input limits whose
// re-simulation with the last inputs held has no snap, its peak tension within 3x and its joint
// speed rms at most `swing_rad_s` a second after the end.
void expectImprovedAndStill(const OptimizedPlan& out, const Model& model,
                            const OptimizationOptions& o, double swing_rad_s) {
  ASSERT_TRUE(out.report.improved) << out.report.message;
  const Plan& p = out.plan;
  EXPECT_EQ(p.outcome, PlanOutcome::Exact) << p.message;
  EXPECT_TRUE(checkInputLimits(model, p.inputs, p.rate_hz).empty());
  ASSERT_TRUE(p.quality.measured);
  EXPECT_EQ(p.quality.snaps, 0);
  EXPECT_LE(p.quality.peak_tension_ratio, 3.0);
  EXPECT_LE(p.quality.residual_joint_speed_rms, swing_rad_s);
  EXPECT_LT(out.report.iterations, o.max_iterations);
}


// planMotion then optimizePlan, the end to end path of `plan --optimize`.
TEST(OptimizePlan, ThePlanarArmSwingsLessAndTheResultIsVerifiedByIndependentReSimulation) {
  const PlanRequest req = armRequest();
  const ModelPtr& arm = req.model;
  const Plan raw = planMotion(req);
  ASSERT_EQ(raw.outcome, PlanOutcome::Exact) << raw.message;
  OptimizationOptions o;
  int events = 0;
  const OptimizedPlan out = optimizePlan(req, raw, o, [&](const PlanProgress& p) {
    EXPECT_EQ(p.phase, "optimize");
    ++events;
  });
  expectImprovedAndStill(out, *arm, o, 0.01);
  ASSERT_TRUE(raw.quality.measured);
  EXPECT_LT(out.plan.quality.residual_joint_speed_rms, raw.quality.residual_joint_speed_rms);
  EXPECT_GT(events, 0);
  EXPECT_GT(out.report.iterations, 0);
  // Independent re-simulation of the returned inputs: the predicted states, the goal, the limits.
  const Plan& p = out.plan;
  std::vector<Eigen::VectorXd> q;
  simulate(arm, planInputs(p), planSimulation(p), [&](const SimulationRow& row) {
    q.push_back(*row.q);
    return true;
  });
  ASSERT_EQ(static_cast<int>(q.size()), p.samples());
  for (int i = 0; i < p.samples(); ++i)
    ASSERT_LT((q[i] - p.predicted.states.row(i).transpose()).cwiseAbs().maxCoeff(), 1e-9) << i;
  EXPECT_TRUE(checkInputLimits(*arm, p.inputs, p.rate_hz).empty());
  EXPECT_LE(std::abs(q.back()[0] - (-0.2)), 0.05);
}

// The planar arm hangs 0.39 m above the floor: a 1 m margin is out of reach for any motion.  The
// transcription's clearance rows cannot be met; what Ipopt ends with breaks the limits, so the
// plan comes back as it was, the report saying why.  The interior point ends within the limits
// and farther from the stage: that motion replaces the plan, approximate, saying so.
TEST(OptimizePlan, AMarginThatCannotBeMetIsSaidAndNeverBroughtNearer) {
  const PlanRequest req = armRequest();
  const Plan raw = planMotion(req);
  ASSERT_EQ(raw.outcome, PlanOutcome::Exact) << raw.message;
  ASSERT_LT(raw.min_stage_clearance_m, 1.0);
  OptimizationOptions o;
  o.solver = OptimizationSolver::Ipopt;
  o.margin_m = 1.0;
  const OptimizedPlan out = optimizePlan(req, raw, o);
  EXPECT_FALSE(out.report.improved);
  EXPECT_NE(out.report.message.find("the plan is unchanged"), std::string::npos)
      << out.report.message;
  EXPECT_EQ(out.plan.inputs, raw.inputs);
  EXPECT_EQ(out.plan.outcome, PlanOutcome::Exact);

  o.solver = OptimizationSolver::InteriorPoint;
  const OptimizedPlan ours = optimizePlan(req, raw, o);
  ASSERT_TRUE(ours.report.improved) << ours.report.message;
  EXPECT_EQ(ours.plan.outcome, PlanOutcome::Approximate);
  EXPECT_GE(ours.plan.min_stage_clearance_m, raw.min_stage_clearance_m);
  EXPECT_NE(ours.report.message.find("could not meet the margin"), std::string::npos)
      << ours.report.message;
}

// Both short of a margin out of reach: a motion that comes nearer the stage than the plan does
// not replace it (the margin is what was asked for), one that keeps as far does.
TEST(OptimizePlan, ShortOfTheMarginAMotionNearerTheStageDoesNotReplaceThePlan) {
  const PlanRequest req = armRequest();
  const Plan raw = planMotion(req);
  ASSERT_EQ(raw.outcome, PlanOutcome::Exact) << raw.message;
  OptimizationOptions o;
  o.margin_m = 1.0;  // (the arm hangs 0.39 m above the floor)
  const CollisionModelPtr collision = collisionModelOf(req);
  int length = -1;
  for (int i = 0; i < req.model->nk(); ++i)
    if (req.model->kinematic[i].name == "L") length = i;
  ASSERT_GE(length, 0);
  for (const double lengthen_m : {0.05, 0.0}) {
    Plan candidate = raw;
    candidate.inputs.col(length).array() += lengthen_m;  // the arm hangs lower
    OptimizedPlan out{raw, {}};
    detail::acceptCandidate(req, collision, raw, candidate, o, SteadyClock::now(), out);
    SCOPED_TRACE(lengthen_m);
    if (lengthen_m > 0) {
      EXPECT_FALSE(out.report.improved);
      EXPECT_NE(out.report.message.find("nearer the stage"), std::string::npos)
          << out.report.message;
      EXPECT_EQ(out.plan.inputs, raw.inputs);
    } else {
      EXPECT_TRUE(out.report.improved) << out.report.message;
      EXPECT_EQ(out.plan.outcome, PlanOutcome::Approximate);  // short of the margin, saying so
    }
  }
}

Plan planOf(const ModelPtr& model, const Eigen::MatrixXd& inputs, double rate_hz);

TEST(OptimizePlan, APlanTooLongToOptimizeComesBackUnchangedSayingWhy) {
  // 700 s of the planar arm at 50 Hz: the warm starts' spline basis would hold 35,001 x 2,803
  // entries (785 MB).  The plan comes back as it is before anything is built; the limits' edges
  // name what exceeds them.
  const ModelPtr arm = loadModel("planar-arm");
  PlanRequest req;
  req.model = arm;
  req.goal = GoalSpec::parse("q:theta1=0.3");
  const Plan long_plan = planOf(arm, arm->defaultInputs().transpose().replicate(35001, 1), 50.0);
  const OptimizedPlan out = optimizePlan(req, long_plan, OptimizationOptions{});
  EXPECT_FALSE(out.report.improved);
  EXPECT_NE(out.report.message.find("too long to optimize (35001 samples x 2803 control points"),
            std::string::npos)
      << out.report.message;
  EXPECT_EQ(out.plan.inputs, long_plan.inputs);
  EXPECT_EQ(optimizationTooLarge(10.0, 50.0, 4.0), "");
  EXPECT_NE(optimizationTooLarge(700.0, 100.0, 0.1).find("70001 samples"), std::string::npos);
  EXPECT_NE(optimizationTooLarge(300.0, 50.0, 4.0).find("control points"), std::string::npos);
  // The spline refuses a basis past the bound itself (a last line behind the check).
  EXPECT_THROW(InputSpline(*arm, 700.0, 2800, 50.0, arm->defaultInputs()),
               std::invalid_argument);
}

// The transcription from a guess that misses its goal (the start's inputs held: an approximate
// path): an exact plan a puppeteer could stage, every figure measured by the re-simulation of
// its inputs with the last ones held (no catch, peak tension within 3x, still after a second).
TEST(OptimizePlan, TheTranscriptionTurnsAGuessThatMissesItsGoalIntoAStageWorthyPlan) {
  const PlanRequest req = armRequest();
  const ModelPtr& arm = req.model;
  const Plan held = verifyMotion(req, arm->defaultInputs().transpose().replicate(16, 1), 50.0);
  ASSERT_EQ(held.outcome, PlanOutcome::Approximate) << held.message;
  OptimizationOptions o;
  o.time_limit_s = 60.0;
  const OptimizedPlan out = optimizePlan(req, held, o);
  expectImprovedAndStill(out, *arm, o, 0.01);
  EXPECT_GE(out.plan.min_stage_clearance_m, o.margin_m);
  EXPECT_EQ(out.plan.quality.string_catches, 0);
}

// A goal no rest pose meets: the suspended mass 13 cm beyond its robot's track (the robot's x
// stops at 1 m, and the mass hangs below it at rest).  The robot run to the end of its track in
// 2 s and stopped: the mass swings out through the goal and keeps swinging.  The transcription
// reaches the goal on the way, then brings the mass to rest (measured by the re-simulation with
// the last inputs held) within the limits and without a snap.
TEST(OptimizePlan, AGoalNoRestPoseMeetsIsReachedSwingingAndThePlanEndsAtRest) {
  const PlanRequest req =
      requestFor("suspended-mass", "empty", "point:mass=1.13,0,0.52;radius=0.05", "est", 1);
  const ModelPtr& mass = req.model;
  const int move = 100, samples = 151;  // 2 s to the end of the track, then held
  Eigen::MatrixXd u = mass->defaultInputs().transpose().replicate(samples, 1);
  for (int k = 0; k < samples; ++k) {
    const double t = std::min(1.0, static_cast<double>(k) / move);
    u(k, 0) = t * t * t * (10 - 15 * t + 6 * t * t);
  }
  const Plan swung = verifyMotion(req, u, 50.0);
  ASSERT_EQ(swung.outcome, PlanOutcome::Exact) << swung.message;
  ASSERT_TRUE(swung.quality.measured);
  ASSERT_GT(swung.quality.residual_joint_speed_rms, 0.1);  // still swinging
  OptimizationOptions o;
  o.time_limit_s = 60.0;
  const OptimizedPlan out = optimizePlan(req, swung, o);
  expectImprovedAndStill(out, *mass, o, 0.1);
  EXPECT_NE(out.report.method.find("no rest pose meets the goal"), std::string::npos)
      << out.report.method;
}

// Budgets in iterations: the same request gives the same plan, bit for bit, with the other core
// busy or not.
// `req` planned, then its plan transcribed twice with the defaults (no deadline), the second
// time with a thread spinning on the other core: improved, and the same iterations and inputs
// bit for bit.
void expectTheSameTranscriptionOnABusyMachine(const PlanRequest& req) {
  const Plan raw = planMotion(req);
  ASSERT_EQ(raw.outcome, PlanOutcome::Exact) << raw.message;
  OptimizationOptions o;
  const OptimizedPlan idle = optimizePlan(req, raw, o);
  std::atomic<bool> stop{false};
  std::thread busy([&] {
    volatile double x = 0.0;
    while (!stop) x = x + std::sin(x + 1.0);
  });
  const OptimizedPlan loaded = optimizePlan(req, raw, o);
  stop = true;
  busy.join();
  ASSERT_TRUE(idle.report.improved) << idle.report.message;
  EXPECT_EQ(idle.report.iterations, loaded.report.iterations);
  ASSERT_EQ(idle.plan.inputs.rows(), loaded.plan.inputs.rows());
  EXPECT_TRUE((idle.plan.inputs.array() == loaded.plan.inputs.array()).all());
}

// A motion that continues a moving rig (a performance's end, settled from where its rig is
// moving): the suspended mass's robot going in at 0.6 m/s and braking at 8 m/s^2 (of 10).  The
// transcription's knots (two plan steps apart) go on from its last step's speed, and the result
// is checked across the join: the inputs, the rig's history before them, within every limit at
// the plan's step.  (The knots took the average speed of the last two steps, and the result was
// checked as if the rig stood still before it: a motion going on at its speed was refused, an
// acceleration of 20 m/s^2 at sample 0.)
TEST(OptimizePlan, AMotionContinuingAMovingRigKeepsItsLimitsAcrossTheJoin) {
  MotionProblem problem;
  problem.model = loadModel("suspended-mass");
  const Model& m = *problem.model;
  const Eigen::VectorXd rho0 = m.defaultInputs();
  problem.start_inputs = rho0;
  problem.goal.kind = GoalSpec::Kind::RestOf;
  for (int j = 0; j < m.nk(); ++j) problem.goal.values.emplace_back(m.kinematic[j].name, rho0[j]);
  problem.goal.at_rest = true;
  problem.goal.tolerance = 0.03;
  const double rate_hz = 50, h = 1 / rate_hz, speed = 0.6, accel = -8.0;
  // The history, the latest first: each step back, the speed one braking step higher.
  Eigen::MatrixXd history = rho0.transpose().replicate(3, 1);
  double x = rho0[0], v = speed;
  for (int i = 0; i < history.rows(); ++i) {
    x -= v * h;
    v -= accel * h;
    history(i, 0) = x;
  }
  const Plan hold = verifyMotion(problem, rho0.transpose().replicate(100, 1), rate_hz);
  OptimizationOptions o;
  o.rig_history = history;
  const OptimizedPlan out = optimizePlan(problem, hold, o);
  ASSERT_TRUE(out.report.improved) << out.report.message;
  const Plan& p = out.plan;
  EXPECT_EQ(p.outcome, PlanOutcome::Exact) << p.message;
  Eigen::MatrixXd joined(history.rows() + p.samples(), m.nk());
  joined << history.colwise().reverse(), p.inputs;
  const auto broken = checkInputLimits(m, joined, rate_hz, 1e-6, static_cast<int>(history.rows()));
  EXPECT_TRUE(broken.empty()) << broken.front().describe();
  // The check from the join on sees what the join does: the same inputs stopped dead there break
  // the acceleration limit at the join's sample.
  Eigen::MatrixXd stopped = joined;
  stopped.bottomRows(p.samples()).rowwise() = p.inputs.row(0);
  const auto dead = checkInputLimits(m, stopped, rate_hz, 1e-6, static_cast<int>(history.rows()));
  ASSERT_FALSE(dead.empty());
  EXPECT_EQ(dead.front().limit, "acceleration");
  EXPECT_EQ(dead.front().sample, history.rows());
  // It goes on at the rig's speed (to one step of its acceleration limit) and brakes to rest.
  EXPECT_NEAR((p.inputs(1, 0) - p.inputs(0, 0)) / h, speed, m.kinematic[0].max_accel * h);
  EXPECT_GT(p.inputs(p.samples() - 1, 0), rho0[0]);
}

TEST(OptimizePlan, TheTranscriptionGivesTheSamePlanOnABusyMachine) {
  expectTheSameTranscriptionOnABusyMachine(armRequest());
}

// The same on PuppetCopter over the table (est, seed 2: 127 knots, a factorization large enough
// that MUMPS's METIS ordering changed the iterates from run to run, so that no two plans were
// the same).
TEST(OptimizePlan, TheTranscriptionGivesTheSamePlanTwiceOnPuppetCopter) {
  expectTheSameTranscriptionOnABusyMachine(
      requestFor("puppetcopter", "table", "point:hand_l=0.05,0.24,0.40;radius=0.04", "est", 2));
}

// A server optimizes several plans at once, one per worker.  MUMPS, Ipopt's linear solver, is not
// thread-safe (two solves at once crashed the server: "PB allocation in DMUMPS_LOAD_INIT", then
// SIGSEGV): Ipopt's solves take turns, the interior point's run at once, and each thread gets the
// plan one thread alone gets with its solver.
TEST(OptimizePlan, OptimizationsInSeveralThreadsAtOnceTakeTurnsAndGiveTheSamePlans) {
  const PlanRequest req = armRequest();
  const Plan raw = planMotion(req);
  ASSERT_EQ(raw.outcome, PlanOutcome::Exact) << raw.message;
  OptimizationOptions o, ip;
  o.solver = OptimizationSolver::Ipopt;
  ip.solver = OptimizationSolver::InteriorPoint;
  const OptimizedPlan alone = optimizePlan(req, raw, o), ip_alone = optimizePlan(req, raw, ip);
  ASSERT_TRUE(alone.report.improved) << alone.report.message;
  ASSERT_TRUE(ip_alone.report.improved) << ip_alone.report.message;
  constexpr int kThreads = 4, kEach = 3;
  std::vector<std::vector<Eigen::MatrixXd>> inputs(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < kEach; ++i) {
        inputs[t].push_back(optimizePlan(req, raw, t % 2 ? ip : o).plan.inputs);
      }
    });
  for (std::thread& t : threads) t.join();
  for (int t = 0; t < kThreads; ++t)
    for (const Eigen::MatrixXd& u : inputs[t]) {
      const Eigen::MatrixXd& expected = (t % 2 ? ip_alone : alone).plan.inputs;
      ASSERT_EQ(u.rows(), expected.rows());
      EXPECT_TRUE((u.array() == expected.array()).all()) << t;
    }
}

// A search path's random walk moves inputs the goal does not need; the rest pose at the goal
// found from the path's end keeps them, the one drawn back towards the start's inputs does not.
// PuppetCopter's left hand over the table (rrt, seed 1), the plan's right leg lowered 5 cm from
// where it first meets the goal: the goal's rest pose from there has the leg lowered, the one
// nearest the start's inputs has it where it started and still meets the goal.
TEST(WarmStarts, TheGoalsRestPoseNearestTheStartKeepsOnlyWhatTheGoalNeeds) {
  const PlanRequest req =
      requestFor("puppetcopter", "table", "point:hand_l=0.05,0.24,0.40;radius=0.04", "rrt", 1);
  Plan plan = planMotion(req);
  ASSERT_EQ(plan.outcome, PlanOutcome::Exact) << plan.message;
  ASSERT_GT(plan.goal_sample, 0);
  const ModelPtr& m = req.model;
  int leg = -1;
  for (int i = 0; i < m->nk(); ++i)
    if (m->kinematic[i].name == "act_leg_r_len") leg = i;
  ASSERT_GE(leg, 0);
  for (int r = plan.goal_sample; r < plan.samples(); ++r) plan.inputs(r, leg) += 0.05;
  OptimizationOptions o;
  const auto far = SteadyClock::now() + std::chrono::seconds(60);
  const CollisionModelPtr collision = collisionModelOf(req);
  const detail::WarmStarts warm = detail::searchWarmStarts(
      req, collision, plan, o, detail::startOf(req, *collision, plan), far);
  ASSERT_TRUE(warm.goal_rest.has_value());
  ASSERT_TRUE(warm.goal_rest_near_start.has_value());
  const Eigen::VectorXd rho0 = plan.inputs.row(0).transpose();
  const Eigen::VectorXd& found = *warm.goal_rest;
  const Eigen::VectorXd& near = *warm.goal_rest_near_start;
  EXPECT_GT(std::abs(found[leg] - rho0[leg]), 0.01);  // where the walk and the 5 cm left it
  EXPECT_NEAR(near[leg], rho0[leg], 1e-9);
  EXPECT_LT((near - rho0).norm(), (found - rho0).norm());
  // Its rest pose meets the goal.
  const RestPose rest = computeRestPose(m, near);
  ASSERT_TRUE(rest.ok) << rest.message;
  GoalEvaluator goal(m, req.goal);
  EXPECT_LE(goal.poseError(rest.q, near), goal.tolerance());
}

Plan planOf(const ModelPtr& model, const Eigen::MatrixXd& inputs, double rate_hz) {
  Plan p;
  p.model = model->name;
  p.rate_hz = rate_hz;
  p.inputs = inputs;
  for (const auto& kv : model->kinematic) p.input_names.push_back(kv.name);
  return p;
}

TEST(PlanQuality, AStillPlanHasNoJerkNoCatchesItsStaticLoadsAndNoResidualSwing) {
  const ModelPtr pc = loadModel("puppetcopter");
  PlanRequest req;
  req.model = pc;
  Plan p = planOf(pc, pc->defaultInputs().transpose().replicate(51, 1), 50.0);
  measurePlanQuality(req, *collisionModelOf(req), p, 1.0);
  ASSERT_TRUE(p.quality.measured);
  EXPECT_LT(p.quality.input_jerk_rms_overall, 1e-9);  // rounding / dt^3
  EXPECT_EQ(p.quality.string_catches, 0);
  EXPECT_EQ(p.quality.snaps, 0);
  EXPECT_NEAR(p.quality.peak_tension_ratio, 1.0, 1e-6);
  EXPECT_LT(p.quality.residual_joint_speed_rms, 1e-9);
  EXPECT_LT(p.quality.residual_kinetic_energy_J, 1e-15);
  EXPECT_DOUBLE_EQ(p.quality.duration_s, 1.0);
  // Exact and clear of everything, it is stage-worthy; short of the stage by a millimetre, not.
  p.outcome = PlanOutcome::Exact;
  EXPECT_TRUE(stageShortfalls(p).empty());
  p.min_stage_clearance_m = 0.019;
  ASSERT_EQ(stageShortfalls(p).size(), 1u);
  EXPECT_EQ(stageShortfalls(p)[0], "0.0190 m from the stage < 0.02");
}

TEST(PlanQuality, JerkOfACubicAndCatchesOfAThrow) {
  // x = 0.30 + c t^3 for 1 s: every third difference is 6 c dt^3, so x's jerk rms is 6 c and L's
  // is 0.
  const ModelPtr arm = loadModel("planar-arm");
  const double c = 0.05;
  Eigen::MatrixXd u(51, 2);
  for (int i = 0; i <= 50; ++i) u.row(i) << 0.30 + c * std::pow(i * 0.02, 3), 0.45;
  PlanRequest req;
  req.model = arm;
  Plan p = planOf(arm, u, 50.0);
  measurePlanQuality(req, *collisionModelOf(req), p, 0.5);
  EXPECT_NEAR(p.quality.input_jerk_rms[0], 6 * c, 1e-6);
  EXPECT_LT(p.quality.input_jerk_rms[1], 1e-9);
  EXPECT_NEAR(p.quality.input_jerk_rms_overall, 6 * c / std::sqrt(2.0), 1e-6);

  // The suspended mass thrown up and caught: every slack-to-taut switch of its string, counted
  // independently here.
  const ModelPtr mass = loadModel("suspended-mass");
  const RolloutScore::Setup s = throwSetup(mass);
  RolloutScore probe(s);
  PlanRequest mreq;
  mreq.model = mass;
  Plan thrown = planOf(mass, probe.spline().sampleInputs(throwVariables(mass)), 50.0);
  measurePlanQuality(mreq, *collisionModelOf(mreq), thrown, 1.0);
  const int catches = countCatches(mass, s.start, thrown.inputs, 50);
  EXPECT_GT(catches, 0);
  EXPECT_EQ(thrown.quality.string_catches, catches);
  EXPECT_GT(thrown.quality.peak_tension_ratio, 1.5);  // a catch is an impulse
  // Gently: none of its catches pulls 3 times the load.
  const RestPose rest = computeRestPose(mass, thrown.inputs.row(0).transpose());
  ASSERT_TRUE(rest.ok);
  EXPECT_EQ(countSnaps(mass, s.start, thrown.inputs, 50, rest.tension_N[0]), 0);
  EXPECT_EQ(thrown.quality.snaps, 0);
}

TEST(PlanQuality, ASnapIsACatchThatPullsThreeTimesTheLoadAndKeepsThePlanOffTheStage) {
  // The winch hauls the suspended mass up at 1 m/s for 0.2 s and stops dead: the mass flies on,
  // the string goes slack, and the mass falls back onto it at about 1 m/s.
  const ModelPtr mass = loadModel("suspended-mass");
  Eigen::MatrixXd u(51, 2);
  for (int i = 0; i <= 50; ++i) u.row(i) << 0.0, 0.5 - std::min(0.02 * i, 0.2);
  PlanRequest req;
  req.model = mass;
  Plan hauled = planOf(mass, u, 50.0);
  hauled.outcome = PlanOutcome::Exact;
  measurePlanQuality(req, *collisionModelOf(req), hauled, 1.0);
  const RestPose rest = computeRestPose(mass, u.row(0).transpose());
  ASSERT_TRUE(rest.ok);
  const State start{rest.q, Eigen::VectorXd::Zero(mass->nd()), u.row(0).transpose()};
  int first_snap_row = -1, peak_row = -1;
  const int snaps =
      countSnaps(mass, start, u, 50, rest.tension_N[0], &first_snap_row, &peak_row);
  EXPECT_GT(snaps, 0);
  EXPECT_EQ(hauled.quality.snaps, snaps);
  EXPECT_GE(hauled.quality.string_catches, snaps);
  // Where and when: the mass's one string, the switch's time and the peak's, as stepped here.
  ASSERT_GT(first_snap_row, 0);
  EXPECT_GT(first_snap_row, 10);  // after the haul's 0.2 s, falling back
  EXPECT_EQ(hauled.quality.first_snap_string, mass->strings[0].name);
  EXPECT_NEAR(hauled.quality.first_snap_t_s, first_snap_row * 0.02, 1e-9);
  EXPECT_EQ(hauled.quality.peak_tension_string, mass->strings[0].name);
  EXPECT_NEAR(hauled.quality.peak_tension_t_s, peak_row * 0.02, 1e-9);
  // The joint that swings most, and its speed, from the hold stepped here.
  const Eigen::VectorXd speed = holdSpeedRms(mass, start, u, 50);
  ASSERT_EQ(speed.size(), mass->nd());
  Eigen::Index most = 0;
  speed.maxCoeff(&most);
  EXPECT_EQ(hauled.quality.swing_joint, mass->dynamic[most].name);
  EXPECT_NEAR(hauled.quality.swing_joint_speed_rms, speed[most], 1e-9 * (1 + speed[most]));
  EXPECT_NEAR(hauled.quality.residual_joint_speed_rms,
              std::sqrt(speed.squaredNorm() / mass->nd()), 1e-9);
  // The shortfalls name them.
  const std::vector<std::string> shortfalls = stageShortfalls(hauled);
  const std::string first = formatted(" (the first: %s at %.2f s)",
                                      mass->strings[0].name.c_str(), first_snap_row * 0.02);
  EXPECT_NE(std::find(shortfalls.begin(), shortfalls.end(),
                      std::to_string(snaps) + (snaps == 1 ? " snap" : " snaps") + first),
            shortfalls.end())
      << ::testing::PrintToString(shortfalls);
}

}  // namespace
