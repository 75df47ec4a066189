// SPDX-License-Identifier: BSD-3-Clause
// Trajectory optimization (planner/trajectory_optimization.hpp): the input spline's guarantees,
// the problem's gradients and constraint Jacobian against finite differences.
#include <IpIpoptApplication.hpp>
#include <gtest/gtest.h>

#include <Eigen/Eigenvalues>
#include <atomic>
#include <cmath>
#include <thread>

#include "input_spline.hpp"
#include "marionette/environments/scene.hpp"
#include "marionette/models/input_limits.hpp"
#include "marionette/models/model_io.hpp"
#include "marionette/models/rest_pose.hpp"
#include "marionette/models/simulation.hpp"
#include "marionette/problem/plan_quality.hpp"
#include "marionette/planner/planner.hpp"
#include "marionette/trajopt/trajectory_optimization.hpp"
#include "plan_acceptance.hpp"
#include "trajectory_nlp.hpp"
#include "trajectory_problem.hpp"
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
ProblemSetup setupFor(const ModelPtr& m, const std::string& goal, double duration_s,
                      int segments, double settle_s) {
  ProblemSetup s;
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
ProblemSetup throwSetup(const ModelPtr& mass) {
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
// slack -> taut switch whose tension within 0.1 s (5 steps) exceeds 3 times `load_N`.
int countSnaps(const ModelPtr& m, const State& start, const Eigen::MatrixXd& u, int hold_steps,
               double load_N) {
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
    snaps += peak > 3 * load_N;
  }
  return snaps;
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

// The objective's gradient and the goal rows' Jacobian against central differences.
OptimizationCost checkDerivatives(const ProblemSetup& setup, const Eigen::VectorXd& z,
                                  double rel_tol) {
  TrajectoryProblem problem(setup);
  if (!problem.evaluate(z)) {
    ADD_FAILURE() << "the rollout failed";
    return {};
  }
  const Eigen::VectorXd grad = problem.gradient();
  const Eigen::MatrixXd jac = problem.nonlinearJacobian();
  const int r0 = problem.linearConstraints();
  const OptimizationCost c0 = problem.cost();
  EXPECT_GT(c0.swing, 0.0);
  EXPECT_GT(c0.effort, 0.0);
  Eigen::VectorXd fd(z.size());
  Eigen::MatrixXd jfd(jac.rows(), z.size());
  for (int i = 0; i < z.size(); ++i) {
    const double h = 1e-6;
    Eigen::VectorXd zp = z, zm = z;
    zp[i] += h;
    zm[i] -= h;
    EXPECT_TRUE(problem.evaluate(zp, Evaluation::Value));
    const double fp = problem.cost().total();
    const Eigen::VectorXd gp = problem.constraintValues().tail(jac.rows());
    EXPECT_TRUE(problem.evaluate(zm, Evaluation::Value));
    fd[i] = (fp - problem.cost().total()) / (2 * h);
    jfd.col(i) = (gp - problem.constraintValues().tail(jac.rows())) / (2 * h);
  }
  (void)r0;
  const double scale = fd.cwiseAbs().maxCoeff();
  EXPECT_LE((grad - fd).cwiseAbs().maxCoeff() / scale, rel_tol) << "gradient\n"
                                                                 << grad.transpose() << "\nfd\n"
                                                                 << fd.transpose();
  if (jac.rows() == 0) return c0;  // no goal rows (a performance's problem)
  const double jscale = std::max(1e-12, jfd.cwiseAbs().maxCoeff());
  EXPECT_LE((jac - jfd).cwiseAbs().maxCoeff() / jscale, rel_tol) << "jacobian\n"
                                                                  << jac << "\nfd\n"
                                                                  << jfd;
  return c0;
}

TEST(TrajectoryProblem, GradientsMatchFiniteDifferencesOnThePlanarArm) {
  const ModelPtr arm = loadModel("planar-arm");
  ProblemSetup s = setupFor(arm, "q:theta1=0.2;at-rest", 1.0, 6, 0.4);
  s.end_reference[0] += 0.05;
  TrajectoryProblem probe(s);
  Eigen::VectorXd z(probe.variables());
  ASSERT_EQ(z.size(), 8);
  const double points[2][4] = {{0.31, 0.34, 0.355, 0.35}, {0.45, 0.44, 0.445, 0.45}};  // x, L
  for (int j = 0; j < 2; ++j)
    for (int f = 0; f < 4; ++f) z[probe.spline().variable(j, f)] = points[j][f];
  checkDerivatives(s, z, 1e-5);
}

TEST(TrajectoryProblem, GradientsMatchFiniteDifferencesWithStringsGoingSlack) {
  // The slack measure, the tension rate and their switch are all in the objective.
  const ModelPtr mass = loadModel("suspended-mass");
  const ProblemSetup s = throwSetup(mass);
  TrajectoryProblem probe(s);
  ASSERT_EQ(probe.variables(), 6);
  const Eigen::VectorXd z = throwVariables(mass);
  const OptimizationCost c = checkDerivatives(s, z, 1e-4);
  EXPECT_GT(c.slack, 0.0);
  EXPECT_GT(c.tension_rate, 0.0);
  // The string does go slack and catch again along this motion.
  int slack_steps = 0;
  EXPECT_GT(countCatches(mass, s.start, probe.spline().sampleInputs(z), 0, &slack_steps), 0);
  EXPECT_GT(slack_steps, 0);
}

TEST(TrajectoryProblem, ThePerformancesTrackingTermMatchesFiniteDifferences) {
  // A performance's problem: no goal rows; the arm's tip follows a target moving in a circle
  // (some samples without a target), its error weighed by the tracking term.
  const ModelPtr arm = loadModel("planar-arm");
  ProblemSetup s = setupFor(arm, "q:theta1=0.2", 1.0, 6, 0.4);
  s.goal_rows = false;
  TrajectoryProblem probe(s);
  s.track_points = {arm->pointIndex("tip")};
  const int n = probe.spline().samples();
  s.track_targets_m.resize(n, 3);
  for (int i = 0; i < n; ++i) {
    const double a = 2 * M_PI * i / (n - 1.0);
    s.track_targets_m.row(i) << 0.1 + 0.05 * std::cos(a), 0.0, -0.3 + 0.05 * std::sin(a);
  }
  s.track_targets_m.row(n / 2).setConstant(NAN);
  Eigen::VectorXd z(probe.variables());
  const double points[2][4] = {{0.31, 0.34, 0.355, 0.35}, {0.45, 0.44, 0.445, 0.45}};  // x, L
  for (int j = 0; j < 2; ++j)
    for (int f = 0; f < 4; ++f) z[probe.spline().variable(j, f)] = points[j][f];
  TrajectoryProblem problem(s);
  EXPECT_EQ(problem.goalRows(), 0);
  const OptimizationCost c = checkDerivatives(s, z, 1e-5);
  EXPECT_GT(c.tracking, 0.1 * c.total());

  // Keyframes' variables: the elbow's joint (its state row) and the rig's x (an input row), with
  // gaps; the points' term off, so that theirs alone is checked.
  s.track_points.clear();
  s.track_targets_m.resize(0, 3);
  s.track_variables = {arm->variableIndex("theta2"), arm->variableIndex("x")};
  s.track_variable_scale_m = {0.1, 1.0};
  s.track_values.resize(n, 2);
  for (int i = 0; i < n; ++i) s.track_values.row(i) << 0.3 * std::sin(0.2 * i), 0.32 + 0.001 * i;
  s.track_values(n / 3, 0) = NAN;
  s.track_values(n / 2, 1) = NAN;
  const OptimizationCost v = checkDerivatives(s, z, 1e-5);
  EXPECT_GT(v.tracking, 0.1 * v.total());
  // A column of the wrong length is refused.
  s.track_values.conservativeResize(n - 1, 2);
  EXPECT_THROW(TrajectoryProblem{s}, std::invalid_argument);
}

TEST(TrajectoryProblem, AValueIsTheDerivativeRolloutsToTheBitAndTheHessianIsGaussNewtons) {
  // The thrown mass (a slack/taut switch): a line search's value-only rollout must take the very
  // steps the linearized one takes.
  const ModelPtr mass = loadModel("suspended-mass");
  ProblemSetup s = throwSetup(mass);
  TrajectoryProblem full(s), value(s);
  const Eigen::VectorXd z = throwVariables(mass);
  ASSERT_TRUE(full.evaluate(z, Evaluation::Derivatives));
  ASSERT_TRUE(value.evaluate(z, Evaluation::Value));
  for (const auto& [name, term] : full.cost().terms()) {
    OptimizationCost c = value.cost();
    EXPECT_EQ(*c.byName(name), term) << name;
  }
  EXPECT_EQ(value.constraintValues(), full.constraintValues());
  // Asking for derivatives at the value's point rolls out again; the same point again does not.
  const int rollouts = value.rollouts();
  ASSERT_TRUE(value.evaluate(z, Evaluation::Derivatives));
  ASSERT_TRUE(value.evaluate(z, Evaluation::Value));
  EXPECT_EQ(value.rollouts(), rollouts + 1);

  // The Gauss-Newton Hessian: symmetric positive semidefinite (its lower triangle), and exact
  // for the terms quadratic in z (effort and jerk alone): against central differences of the
  // gradient.
  const Eigen::MatrixXd H = full.hessian().selfadjointView<Eigen::Lower>();
  EXPECT_GT(Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd>(H).eigenvalues().minCoeff(),
            -1e-9 * H.diagonal().maxCoeff());
  for (const std::string& name : OptimizationWeights::names())
    if (name != "effort" && name != "jerk") *s.weights.byName(name) = 0.0;
  TrajectoryProblem quadratic(s);
  ASSERT_TRUE(quadratic.evaluate(z));
  const Eigen::MatrixXd Hq = quadratic.hessian().selfadjointView<Eigen::Lower>();
  Eigen::MatrixXd fd(z.size(), z.size());
  for (int i = 0; i < z.size(); ++i) {
    Eigen::VectorXd zp = z, zm = z;
    zp[i] += 1e-5;
    zm[i] -= 1e-5;
    ASSERT_TRUE(quadratic.evaluate(zp));
    const Eigen::VectorXd gp = quadratic.gradient();
    ASSERT_TRUE(quadratic.evaluate(zm));
    fd.col(i) = (gp - quadratic.gradient()) / 2e-5;
  }
  EXPECT_LE((Hq - fd).cwiseAbs().maxCoeff(), 1e-6 * fd.cwiseAbs().maxCoeff()) << Hq << "\n"
                                                                              << fd;
}

TEST(TrajectoryProblem, TheClearancePenaltyMatchesFiniteDifferences) {
  // The PuppetCopter over the table, its inputs moving, with a margin of 0.3 m so that the
  // penalty counts at every sample: its gradient (FCL's nearest points through the link and
  // string Jacobians) against central differences of the cost.
  const ModelPtr pc = loadModel("puppetcopter");
  ProblemSetup s = setupFor(pc, "point:hand_l=0.05,0.24,0.40", 0.6, 3, 0.0);
  s.collision = std::make_shared<CollisionModel>(pc, loadScene("table"));
  s.margin_m = 0.3;
  s.self_margin_m = 0.05;
  s.weights = OptimizationWeights{};
  for (const std::string& name : OptimizationWeights::names()) *s.weights.byName(name) = 0.0;
  s.weights.clearance = 1.0;
  TrajectoryProblem problem(s);
  ASSERT_EQ(problem.variables(), pc->nk());
  Eigen::VectorXd z = pc->defaultInputs();
  for (int j = 0; j < pc->nk(); ++j) z[j] += 0.03 * ((j % 3) - 1);
  ASSERT_TRUE(problem.evaluate(z));
  ASSERT_GT(problem.cost().clearance, 0.0);
  EXPECT_LT(problem.minStageClearance(), 0.3);
  const Eigen::VectorXd grad = problem.gradient();
  Eigen::VectorXd fd(z.size());
  for (int i = 0; i < z.size(); ++i) {
    Eigen::VectorXd zp = z, zm = z;
    zp[i] += 1e-6;
    zm[i] -= 1e-6;
    ASSERT_TRUE(problem.evaluate(zp));
    const double fp = problem.cost().total();
    ASSERT_TRUE(problem.evaluate(zm));
    fd[i] = (fp - problem.cost().total()) / 2e-6;
  }
  // FCL's nearest points carry its solver's tolerance: 1e-3 of the largest entry.
  const double scale = fd.cwiseAbs().maxCoeff();
  ASSERT_GT(scale, 1e-6);
  EXPECT_LE((grad - fd).cwiseAbs().maxCoeff() / scale, 1e-3) << grad.transpose() << "\n"
                                                              << fd.transpose();
}

TEST(TrajectoryNlp, TheBestPointIsClearOfCollisionThenKeepsTheMarginThenIsCheapest) {
  // The suspended mass lowered toward the floor (its string lengthened) or raised, over 3 s; a
  // goal met anywhere, so that only collision, the margin and the cost decide.
  const ModelPtr mass = loadModel("suspended-mass");
  ProblemSetup s = setupFor(mass, "point:mass=0,0,0.3;radius=10", 3.0, 3, 0.2);
  s.collision = std::make_shared<CollisionModel>(mass, loadScene("empty"));
  s.margin_m = 0.2;
  for (const std::string& name : OptimizationWeights::names()) *s.weights.byName(name) = 0.0;
  s.weights.effort = 1.0;  // the cost: how far the string moves
  TrajectoryProblem problem(s);
  ASSERT_EQ(problem.variables(), 2);  // the end values
  const Eigen::VectorXd d = mass->defaultInputs();
  auto lengthened = [&](double by_m) {
    Eigen::VectorXd z(2);
    z[problem.spline().variable(0, 0)] = d[0];
    z[problem.spline().variable(1, 0)] = d[1] + by_m;
    return z;
  };
  const Eigen::VectorXd through_floor = lengthened(0.6), near_floor = lengthened(0.38),
                        raised = lengthened(-0.42);
  ASSERT_TRUE(problem.evaluate(through_floor));
  EXPECT_EQ(problem.minClearance(), 0.0);
  ASSERT_TRUE(problem.evaluate(near_floor));
  EXPECT_GT(problem.minClearance(), 0.0);
  EXPECT_LT(problem.minStageClearance(), s.margin_m);
  const double near_cost = problem.cost().total();
  ASSERT_TRUE(problem.evaluate(raised));
  EXPECT_GE(problem.minStageClearance(), s.margin_m);
  EXPECT_GT(problem.cost().total(), near_cost);

  auto bestOf = [&](const std::vector<Eigen::VectorXd>& points) {
    TrajectoryNlp nlp(problem, points.front(), [](const TrajectoryNlp::Progress&) { return true; });
    for (const Eigen::VectorXd& z : points) {
      double f = 0.0;
      EXPECT_TRUE(nlp.eval_f(2, z.data(), true, f));
    }
    return nlp.best();
  };
  // The start competes too, before the solver moves it off its bounds.
  {
    TrajectoryNlp nlp(problem, raised, [](const TrajectoryNlp::Progress&) { return true; });
    Eigen::VectorXd x(2);
    ASSERT_TRUE(nlp.get_starting_point(2, true, x.data(), false, nullptr, nullptr, 0, false,
                                       nullptr));
    EXPECT_EQ(nlp.best(), raised);
  }
  EXPECT_EQ(bestOf({through_floor}).size(), 0);   // in collision: never the best
  EXPECT_EQ(bestOf({near_floor}), near_floor);    // clear, short of the margin: better than none
  EXPECT_EQ(bestOf({through_floor, raised, near_floor}), raised);  // the margin before the cost
  // Then the cheaper: 4 cm less far down, short of the margin too.
  const Eigen::VectorXd less_near = lengthened(0.34);
  ASSERT_TRUE(problem.evaluate(less_near));
  ASSERT_LT(problem.minStageClearance(), s.margin_m);
  EXPECT_EQ(bestOf({near_floor, less_near}), less_near);
  EXPECT_EQ(bestOf({less_near, near_floor}), less_near);
}

TEST(TrajectoryNlp, OnAProblemWithAKnownOptimumTheCostFallsMonotonicallyToIt) {
  // The suspended mass lowered 0.2 m by its winch in 1 s, jerk the only cost.  While its string
  // is taut the mass hangs where the string puts it (z = 1 - r), so the optimum is known without
  // the dynamics: the robot still, and for r the least-jerk spline whose end is the goal row's
  // nearest edge (r = 0.7 - 0.95 * 0.01), a linear least-squares solve made here from the
  // spline's samples and the definition of jerk alone.
  const ModelPtr mass = loadModel("suspended-mass");
  ProblemSetup s = setupFor(mass, "point:mass=0,0,0.3;radius=0.01", 1.0, 6, 0.2);
  for (const std::string& name : OptimizationWeights::names()) *s.weights.byName(name) = 0.0;
  s.weights.jerk = 1.0;
  TrajectoryProblem problem(s);
  const InputSpline& spline = problem.spline();
  const int nz = spline.variables(), nf = spline.freePerInput(), n = spline.samples();
  const Eigen::VectorXd d = mass->defaultInputs();
  const double r_end = 0.7 - s.goal_fraction * 0.01;

  // r's samples are affine in its variables: u_r = base + B z_r.  Third differences D u_r.
  Eigen::VectorXd z0(nz);
  for (int f = 0; f < nf; ++f) {
    z0[spline.variable(0, f)] = d[0];
    z0[spline.variable(1, f)] = 0.0;
  }
  const Eigen::VectorXd base = spline.sampleInputs(z0).col(1);
  Eigen::MatrixXd B(n, nf);
  for (int f = 0; f < nf; ++f) {
    Eigen::VectorXd e = z0;
    e[spline.variable(1, f)] = 1.0;
    B.col(f) = spline.sampleInputs(e).col(1) - base;
  }
  Eigen::MatrixXd D = Eigen::MatrixXd::Zero(n - 3, n);
  for (int i = 0; i + 3 < n; ++i) D.row(i).segment(i, 4) << -1.0, 3.0, -3.0, 1.0;
  // The inner points (all but the end value, the last) by least squares with the end fixed.
  const Eigen::MatrixXd A = D * B.leftCols(nf - 1);
  const Eigen::VectorXd b = -D * (base + B.col(nf - 1) * r_end);
  const Eigen::VectorXd inner = A.colPivHouseholderQr().solve(b);
  Eigen::VectorXd optimum = z0;
  for (int f = 0; f + 1 < nf; ++f) optimum[spline.variable(1, f)] = inner[f];
  optimum[spline.variable(1, nf - 1)] = r_end;
  ASSERT_TRUE(problem.evaluate(optimum));
  ASSERT_EQ(problem.constraintViolation(), 0.0);
  const double optimum_cost = problem.cost().total();

  // From the smooth transfer to r = 0.7 (inside the goal, not the least jerk).
  Eigen::VectorXd end = d;
  end[1] = 0.7;
  const Eigen::VectorXd start = spline.transfer(end);
  ASSERT_TRUE(problem.evaluate(start));
  ASSERT_EQ(problem.constraintViolation(), 0.0);
  ASSERT_GT(problem.cost().total(), 1.5 * optimum_cost);
  std::vector<double> costs, violations;
  Ipopt::SmartPtr<TrajectoryNlp> nlp =
      new TrajectoryNlp(problem, start, [&](const TrajectoryNlp::Progress& p) {
        costs.push_back(p.cost);
        violations.push_back(p.constraint_violation);
        return true;
      });
  Ipopt::SmartPtr<Ipopt::IpoptApplication> app = IpoptApplicationFactory();
  app->Options()->SetIntegerValue("print_level", 0);
  app->Options()->SetStringValue("sb", "yes");
  app->Options()->SetStringValue("mu_strategy", "adaptive");
  app->Options()->SetNumericValue("tol", 1e-9);
  ASSERT_EQ(app->Initialize(), Ipopt::Solve_Succeeded);
  const Ipopt::ApplicationReturnStatus status = app->OptimizeTNLP(nlp);
  EXPECT_EQ(status, Ipopt::Solve_Succeeded);
  ASSERT_GT(costs.size(), 2u);
  // Every iteration's cost at most the last one's, or within 1 % of the optimum: an interior
  // point iterate may step a little past the goal row's edge (cheaper, infeasible) and back.
  for (std::size_t i = 1; i < costs.size(); ++i)
    EXPECT_TRUE(costs[i] <= costs[i - 1] || std::abs(costs[i] / optimum_cost - 1) < 0.01)
        << "iteration " << i << ": costs " << ::testing::PrintToString(costs)
        << ", violations " << ::testing::PrintToString(violations);
  EXPECT_LT(violations.back(), 1e-9);
  const Eigen::VectorXd& best = nlp->best();
  ASSERT_EQ(best.size(), nz);
  EXPECT_LT((best - optimum).cwiseAbs().maxCoeff(), 1e-5) << best.transpose() << "\n"
                                                          << optimum.transpose();
  EXPECT_NEAR(nlp->bestCost(), optimum_cost, 1e-6 * optimum_cost);
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

// planMotion then optimizePlan, the end to end path of `plan --optimize`.
TEST(OptimizePlan, ThePlanarArmSwingsLessAndTheResultIsVerifiedByIndependentReSimulation) {
  const PlanRequest req = armRequest();
  const ModelPtr& arm = req.model;
  const Plan raw = planMotion(req);
  ASSERT_EQ(raw.outcome, PlanOutcome::Exact) << raw.message;
  OptimizationOptions o;
  o.method = OptimizationMethod::Shooting;  // (this test's subject)
  o.time_limit_s = 30.0;
  std::vector<double> costs;
  const OptimizedPlan out = optimizePlan(req, raw, o, [&](const PlanProgress& p) {
    EXPECT_EQ(p.phase, "optimize");
    costs.push_back(p.cost);
  });
  ASSERT_TRUE(out.report.improved) << out.report.message;
  EXPECT_EQ(out.plan.outcome, PlanOutcome::Exact) << out.plan.message;
  EXPECT_LT(out.report.after.total(), 0.1 * out.report.before.total());
  EXPECT_LT(out.report.after.settle, out.report.before.settle);
  EXPECT_FALSE(costs.empty());
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

TEST(OptimizePlan, AMarginThatCannotBeMetGivesTheBestVerifiedPlanMarkedApproximate) {
  // The planar arm hangs 0.39 m above the floor: a 1 m margin is out of reach for any motion.
  const PlanRequest req = armRequest();
  const Plan raw = planMotion(req);
  ASSERT_EQ(raw.outcome, PlanOutcome::Exact) << raw.message;
  ASSERT_LT(raw.min_stage_clearance_m, 1.0);
  OptimizationOptions o;
  o.method = OptimizationMethod::Shooting;  // (this test's subject)
  o.margin_m = 1.0;
  o.weights.clearance = 0.0;  // (the penalty would only pull the arm up against the goal)
  const OptimizedPlan out = optimizePlan(req, raw, o);
  ASSERT_TRUE(out.report.improved) << out.report.message;
  EXPECT_EQ(out.plan.outcome, PlanOutcome::Approximate);
  EXPECT_EQ(out.plan.clearance_margin_m, 1.0);
  EXPECT_NE(out.plan.message.find("below the margin 1 m"), std::string::npos) << out.plan.message;
  EXPECT_NE(out.report.message.find("could not meet the margin"), std::string::npos);
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
    detail::acceptCandidate(req, collision, raw, candidate, o, SteadyClock::now(), out, false);
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

TEST(OptimizePlan, APlanThatCannotBeImprovedComesBackUnchangedWithAMessage) {
  // The goal is where the arm already hangs: the plan holds still, and nothing costs less.
  const ModelPtr arm = loadModel("planar-arm");
  const StartState rest = resolveStart(arm, arm->defaultInputs(), StartSpec{});
  PlanRequest req;
  req.model = arm;
  req.goal = GoalSpec::parse("q:theta1=" + std::to_string(rest.q[0]));
  const Plan still = verifyMotion(req, arm->defaultInputs().transpose().replicate(26, 1), 50.0);
  ASSERT_EQ(still.outcome, PlanOutcome::Exact) << still.message;
  OptimizationOptions o;
  o.method = OptimizationMethod::Shooting;  // (this test's subject)
  o.weights.duration = 0.0;  // (with a price on time, the shortest stillness would be cheaper)
  const OptimizedPlan out = optimizePlan(req, still, o);
  EXPECT_FALSE(out.report.improved) << out.report.before.total() << " -> "
                                    << out.report.after.total();
  EXPECT_NE(out.report.message.find("unchanged"), std::string::npos) << out.report.message;
  EXPECT_EQ(out.plan.inputs, still.inputs);
}

Plan planOf(const ModelPtr& model, const Eigen::MatrixXd& inputs, double rate_hz);

TEST(OptimizePlan, APlanTooLongToOptimizeComesBackUnchangedSayingWhy) {
  // 700 s of the planar arm at 50 Hz: its spline would hold 5,596 variables, its basis 35,001 x
  // 2,803 entries (785 MB), the shooting problem's Hessian 250 MB.  Both methods return the plan
  // as it is before anything is built; the limits' edges name what exceeds them.
  const ModelPtr arm = loadModel("planar-arm");
  PlanRequest req;
  req.model = arm;
  req.goal = GoalSpec::parse("q:theta1=0.3");
  const Plan long_plan = planOf(arm, arm->defaultInputs().transpose().replicate(35001, 1), 50.0);
  for (const auto method : {OptimizationMethod::Transcription, OptimizationMethod::Shooting}) {
    OptimizationOptions o;
    o.method = method;
    const OptimizedPlan out = optimizePlan(req, long_plan, o);
    EXPECT_FALSE(out.report.improved);
    EXPECT_NE(out.report.message.find("too long to optimize"), std::string::npos)
        << out.report.message;
    EXPECT_NE(out.report.message.find("spline variables"), std::string::npos)
        << out.report.message;
    EXPECT_EQ(out.plan.inputs, long_plan.inputs);
  }
  EXPECT_EQ(optimizationTooLarge(2, 10.0, 50.0, 4.0), "");
  EXPECT_NE(optimizationTooLarge(2, 700.0, 100.0, 0.1).find("70001 samples"), std::string::npos);
  EXPECT_NE(optimizationTooLarge(1, 300.0, 50.0, 4.0).find("control points"), std::string::npos);
  EXPECT_NE(optimizationTooLarge(9, 60.0, 50.0, 4.0).find("2142 spline variables"),
            std::string::npos);
  // The spline refuses a basis past the bound itself (a last line behind the check).
  EXPECT_THROW(InputSpline(*arm, 700.0, 2800, 50.0, arm->defaultInputs()),
               std::invalid_argument);
}

TEST(OptimizePlan, AGuessThatMissesItsGoalIsReplacedByAnExactPlanThoughItCostsMore) {
  // The start's inputs held 0.3 s (the CLI's straight-line guess, shorter): it misses the goal
  // and costs only its duration; any motion that reaches the goal costs more, and replaces it.
  const PlanRequest req = armRequest();
  const ModelPtr& arm = req.model;
  const Plan held = verifyMotion(req, arm->defaultInputs().transpose().replicate(16, 1), 50.0);
  ASSERT_EQ(held.outcome, PlanOutcome::Approximate) << held.message;
  ASSERT_LT(held.goal_sample, 0);
  OptimizationOptions o;
  o.method = OptimizationMethod::Shooting;  // (this test's subject)
  o.time_limit_s = 30.0;
  const OptimizedPlan out = optimizePlan(req, held, o);
  ASSERT_TRUE(out.report.improved) << out.report.message;
  EXPECT_EQ(out.plan.outcome, PlanOutcome::Exact) << out.plan.message;
  EXPECT_GT(out.report.after.total(), out.report.before.total());
  EXPECT_TRUE(checkInputLimits(*arm, out.plan.inputs, out.plan.rate_hz).empty());
}


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

// The transcription from a guess that misses its goal (the start's inputs held: an approximate
// path): an exact plan a puppeteer could stage, every figure measured by the re-simulation of
// its inputs with the last ones held (no catch, peak tension within 3x, still after a second).
TEST(OptimizePlan, TheTranscriptionTurnsAGuessThatMissesItsGoalIntoAStageWorthyPlan) {
  const PlanRequest req = armRequest();
  const ModelPtr& arm = req.model;
  const Plan held = verifyMotion(req, arm->defaultInputs().transpose().replicate(16, 1), 50.0);
  ASSERT_EQ(held.outcome, PlanOutcome::Approximate) << held.message;
  OptimizationOptions o;
  o.method = OptimizationMethod::Transcription;
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
  o.method = OptimizationMethod::Transcription;
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
  o.method = OptimizationMethod::Transcription;
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
// SIGSEGV): the solves take turns, and each thread gets the plan one thread alone gets.
TEST(OptimizePlan, OptimizationsInSeveralThreadsAtOnceTakeTurnsAndGiveTheSamePlans) {
  const PlanRequest req = armRequest();
  const Plan raw = planMotion(req);
  ASSERT_EQ(raw.outcome, PlanOutcome::Exact) << raw.message;
  OptimizationOptions o;
  o.time_limit_s = 120.0;
  const OptimizedPlan alone = optimizePlan(req, raw, o);
  ASSERT_TRUE(alone.report.improved) << alone.report.message;
  constexpr int kThreads = 4, kEach = 3;
  std::vector<std::vector<Eigen::MatrixXd>> inputs(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < kEach; ++i) {
        OptimizationOptions each = o;
        if (t % 2) each.method = OptimizationMethod::Shooting;  // both engines, and spline fits
        inputs[t].push_back(optimizePlan(req, raw, each).plan.inputs);
      }
    });
  for (std::thread& t : threads) t.join();
  for (int t = 0; t < kThreads; t += 2)
    for (const Eigen::MatrixXd& u : inputs[t]) {
      ASSERT_EQ(u.rows(), alone.plan.inputs.rows());
      EXPECT_TRUE((u.array() == alone.plan.inputs.array()).all());
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

TEST(OptimizePlan, TheDurationIsAVariable) {
  // A straight line in input space over 8 s to inputs whose rest pose meets the goal: with the
  // default price on time the optimized motion is shorter, with none it keeps its length or
  // grows; both are exact and verified.
  const PlanRequest req = armRequest();
  const ModelPtr& arm = req.model;
  Eigen::VectorXd end = arm->defaultInputs();
  end[0] -= 0.06;  // x of the rig: the arm hangs to the left
  const RestPose rest = computeRestPose(arm, end);
  ASSERT_TRUE(rest.ok);
  PlanRequest at = req;
  at.goal = GoalSpec::parse("q:theta1=" + std::to_string(rest.q[0]) + ";tol=0.02");
  const int n = 401;  // 8 s at 50 Hz
  Eigen::MatrixXd u(n, arm->nk());
  for (int i = 0; i < n; ++i) {
    const double s = i / (n - 1.0), w = s * s * s * (10 - 15 * s + 6 * s * s);
    u.row(i) = ((1 - w) * arm->defaultInputs() + w * end).transpose();
  }
  const Plan slow = verifyMotion(at, u, 50.0);
  ASSERT_EQ(slow.outcome, PlanOutcome::Exact) << slow.message;
  OptimizationOptions o;
  o.method = OptimizationMethod::Shooting;  // (this test's subject)
  o.time_limit_s = 30.0;
  const OptimizedPlan shorter = optimizePlan(at, slow, o);
  ASSERT_TRUE(shorter.report.improved) << shorter.report.message;
  EXPECT_EQ(shorter.plan.outcome, PlanOutcome::Exact) << shorter.plan.message;
  EXPECT_LT(shorter.plan.duration_s(), 0.5 * slow.duration_s());
  EXPECT_LT(shorter.report.after.duration, shorter.report.before.duration);
  EXPECT_NE(shorter.report.method.find(" s, from "), std::string::npos) << shorter.report.method;
  o.weights.duration = 0.0;
  const OptimizedPlan free = optimizePlan(at, slow, o);
  if (free.report.improved) {
    EXPECT_GE(free.plan.duration_s(), shorter.plan.duration_s());
  }
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
  const ProblemSetup s = throwSetup(mass);
  TrajectoryProblem probe(s);
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
  const int snaps = countSnaps(mass, start, u, 50, rest.tension_N[0]);
  EXPECT_GT(snaps, 0);
  EXPECT_EQ(hauled.quality.snaps, snaps);
  EXPECT_GE(hauled.quality.string_catches, snaps);
  const std::vector<std::string> shortfalls = stageShortfalls(hauled);
  EXPECT_NE(std::find(shortfalls.begin(), shortfalls.end(),
                      std::to_string(snaps) + (snaps == 1 ? " snap" : " snaps")),
            shortfalls.end())
      << ::testing::PrintToString(shortfalls);
}

}  // namespace
