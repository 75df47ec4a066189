// SPDX-License-Identifier: BSD-3-Clause
// The transcription optimizer's dynamics: the discrete Euler-Lagrange equations as constraints
// between knots (trajopt/src/discrete_mechanics.hpp).  Their Jacobians against central finite
// differences on every built-in model and on random trees, and the integrator's own steps --
// strings going slack and catching -- satisfying them with complementary multipliers.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <random>

#include "clearance_gradient.hpp"
#include "discrete_mechanics.hpp"
#include "ipopt_solver.hpp"
#include "marionette/environments/scene.hpp"
#include "marionette/models/integrator.hpp"
#include "marionette/models/model_io.hpp"
#include "marionette/models/rest_pose.hpp"
#include "quasi_static.hpp"
#include "support/test_models.hpp"
#include "support/transcription_checks.hpp"
#include "nlp_solve.hpp"
#include "transcription_problem.hpp"

namespace marionette {
namespace {

using detail::DiscreteMechanics;
using detail::IntervalTerms;
using detail::KnotConstraints;
using detail::TranscriptionProblem;
using detail::TranscriptionSetup;
using test::checkProblemDerivatives;
using test::expectTheIntegratorsMotionAtRest;
using test::full;
using test::quinticInputs;
using test::relativeError;
using test::transcriptionFor;

// The rig moved smoothly from rest for `steps` steps of 0.02 s: each input swings about its
// default by `share` of its range, at its own frequency.  Returns every full configuration.
std::vector<Eigen::VectorXd> rollout(const ModelPtr& m, int steps, double share,
                                     std::vector<StepReport>* reports = nullptr,
                                     State* start = nullptr) {
  IntegratorOptions opt;
  opt.dt_s = 0.02;
  VariationalIntegrator vi(m, opt);
  const RestPose rest = computeRestPose(m, m->defaultInputs());
  EXPECT_TRUE(rest.ok) << m->name << ": " << rest.message;
  State x{rest.q, Eigen::VectorXd::Zero(m->nd()), m->defaultInputs()};
  if (start) *start = x;
  std::vector<Eigen::VectorXd> qs = {full(x)};
  for (int k = 0; k < steps; ++k) {
    Eigen::VectorXd u = m->defaultInputs();
    for (int i = 0; i < m->nk(); ++i) {
      const KinematicVariable& v = m->kinematic[i];
      const double range = std::min(v.upper - v.lower, 1.0);
      u[i] += share * range * std::sin((3.0 + 1.7 * i) * 0.02 * (k + 1));
      u[i] = std::clamp(u[i], v.lower, v.upper);
    }
    StepReport rep = vi.makeReport();
    EXPECT_EQ(vi.step(x, u, x, &rep), StepStatus::Ok) << m->name << " step " << k;
    qs.push_back(full(x));
    if (reports) reports->push_back(rep);
  }
  return qs;
}

// Every Jacobian of IntervalTerms and KnotConstraints at (q_a, q_b) against central differences.
void checkJacobians(const ModelPtr& m, const Eigen::VectorXd& q_a, const Eigen::VectorXd& q_b,
                    double dt, const std::string& where) {
  DiscreteMechanics dm(m, IntegratorOptions{});
  const int nd = m->nd(), nq = m->nq();
  IntervalTerms t, tp, tm;
  dm.interval(q_a, q_b, dt, t);
  Eigen::MatrixXd D1a(nd, nd), D1b(nd, nd), D2a(nd, nd), D2b(nd, nd);
  const double h = 1e-6;
  for (int i = 0; i < nd; ++i) {
    for (int side = 0; side < 2; ++side) {
      Eigen::VectorXd a = q_a, b = q_b;
      (side ? b : a)[i] += h;
      dm.interval(a, b, dt, tp, false);
      (side ? b : a)[i] -= 2 * h;
      dm.interval(a, b, dt, tm, false);
      (side ? D1b : D1a).col(i) = (tp.D1 - tm.D1) / (2 * h);
      (side ? D2b : D2a).col(i) = (tp.D2 - tm.D2) / (2 * h);
    }
  }
  EXPECT_LE(relativeError(t.D1_a, D1a), 1e-6) << where << " dD1/dq_a";
  EXPECT_LE(relativeError(t.D1_b, D1b), 1e-6) << where << " dD1/dq_b";
  EXPECT_LE(relativeError(t.D2_a, D2a), 1e-6) << where << " dD2/dq_a";
  EXPECT_LE(relativeError(t.D2_b, D2b), 1e-6) << where << " dD2/dq_b";
  const double hdt = 1e-7;
  dm.interval(q_a, q_b, dt + hdt, tp, false);
  dm.interval(q_a, q_b, dt - hdt, tm, false);
  EXPECT_LE(relativeError(t.D1_dt, (tp.D1 - tm.D1) / (2 * hdt)), 1e-6) << where << " dD1/ddt";
  EXPECT_LE(relativeError(t.D2_dt, (tp.D2 - tm.D2) / (2 * hdt)), 1e-6) << where << " dD2/ddt";

  // The knot's rows and the constraint force's Jacobian, with every multiplier nonzero.
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> positive(0.1, 1.0);
  Eigen::VectorXd lambda(dm.constraintRows());
  for (int c = 0; c < lambda.size(); ++c) lambda[c] = positive(rng);
  KnotConstraints k, kp, km;
  dm.knot(q_b, &lambda, k);
  Eigen::MatrixXd G(dm.constraintRows(), nq), F(nd, nq);
  for (int i = 0; i < nq; ++i) {
    Eigen::VectorXd q = q_b;
    q[i] += h;
    dm.knot(q, nullptr, kp);
    q[i] -= 2 * h;
    dm.knot(q, nullptr, km);
    G.col(i) = (kp.g - km.g) / (2 * h);
    F.col(i) = ((kp.G - km.G).leftCols(nd).transpose() * lambda) / (2 * h);
  }
  if (G.size() > 0) {
    EXPECT_LE(relativeError(k.G, G), 1e-6) << where << " dg/dq";
  }
  if (m->nstrings() > 0) {
    EXPECT_LE(relativeError(k.force_q, F), 1e-6) << where << " d(G^T l)/dq";
  }
}

TEST(Transcription, DelJacobiansMatchFiniteDifferencesOnEveryBuiltInModel) {
  for (const std::string& name : builtinModelNames()) {
    const ModelPtr m = loadModel(name);
    const auto qs = rollout(m, 25, 0.05);
    ASSERT_EQ(qs.size(), 26u) << name;
    checkJacobians(m, qs[24], qs[25], 0.02, name);
  }
}

TEST(Transcription, DelJacobiansMatchFiniteDifferencesOnRandomTrees) {
  for (unsigned seed : {3u, 7u, 11u}) {
    const ModelPtr m = test::randomTreeModel(seed, 6, 3);
    std::mt19937 rng(seed);
    Eigen::VectorXd q_a(m->nq()), q_b(m->nq());
    q_a << test::randomVector(rng, m->nd(), 0.5), m->defaultInputs();
    q_b = q_a;
    q_b.head(m->nd()) += test::randomVector(rng, m->nd(), 0.05);
    q_b.tail(m->nk()) += test::randomVector(rng, m->nk(), 0.01);
    checkJacobians(m, q_a, q_b, 0.02, "random tree " + std::to_string(seed));
  }
}

// The clearance rows' gradient against central differences of the signed clearance: a capsule
// on a free body (x, y, z, yaw, pitch, roll) beside a 0.2 m sphere, tilted, apart and sunk into
// it (inside, the gradient points the way out: a wrong sign is off by twice its size).  (A box's
// overlaps are measured by FCL's MPR, whose depth is the exact one only along the box's axes
// (collision_checker.cpp): CollisionAnalytic tests those.)
TEST(Transcription, TheClearanceGradientMatchesFiniteDifferencesApartAndInside) {
  Shape capsule;
  capsule.type = ShapeType::Capsule;
  capsule.radius_m = 0.05;
  capsule.length_m = 0.4;
  const ModelPtr m = test::probeModel(capsule);
  const char* names[6] = {"x", "y", "z", "yaw", "pitch", "roll"};
  const auto collision = std::make_shared<CollisionModel>(
      m, loadSceneString("obstacles:\n  - {name: ball, sphere: {radius: 0.1}}\n", "ball.yaml", ""));
  CollisionChecker checker(collision);
  detail::ClearanceGradient gradient(m, collision);
  DynamicsData data(*m);
  for (const double x : {0.3, 0.13}) {
    SCOPED_TRACE(x);
    Eigen::VectorXd q(6);
    q << x, 0.03, 0.02, 0.3, 0.2, 0.1;
    forwardKinematics(*m, data, q);
    computeStrings(*m, data, q, false);
    const ClearanceResult c = checker.clearance(q, Penetration::Signed);
    EXPECT_EQ(c.distance_m < 0, x < 0.15);
    const Eigen::RowVectorXd analytic = gradient.nearest(data, c);
    const Eigen::RowVectorXd stage = gradient.stage(data, c);
    EXPECT_LE((analytic - stage).cwiseAbs().maxCoeff(), 1e-12);
    const double h = 1e-3;  // FCL's EPA meets a depth to 1e-6
    for (int i = 0; i < 6; ++i) {
      Eigen::VectorXd qp = q, qm = q;
      qp[i] += h;
      qm[i] -= h;
      const double fd = (checker.clearance(qp, Penetration::Signed).distance_m -
                         checker.clearance(qm, Penetration::Signed).distance_m) /
                        (2 * h);
      EXPECT_NEAR(analytic[i], fd, 5e-3) << names[i];
    }
  }
}

// The integrator's steps are solutions of the transcription's equations: with the multipliers
// read from its tensions (and the joint stops' from the residual's own rows), every knot's DEL
// residual vanishes, each multiplier is >= 0, a taut string ends its step at its length and a
// slack one within it -- through the strings' slack/taut switches.
TEST(Transcription, TheIntegratorsStepsSatisfyTheDelEquationsWithComplementarity) {
  int total_switches = 0;
  for (const std::string& name : builtinModelNames()) {
    const ModelPtr m = loadModel(name);
    std::vector<StepReport> reports;
    State start;
    const double dt = 0.02;
    const auto qs = rollout(m, 100, name == "suspended-mass" ? 0.3 : 0.1, &reports, &start);
    ASSERT_EQ(qs.size(), 101u) << name;
    DiscreteMechanics dm(m, IntegratorOptions{});
    const int nd = m->nd(), ns = m->nstrings();
    IntervalTerms before, after;
    KnotConstraints here, next;
    int checked = 0, switches = 0;
    for (std::size_t k = 0; k + 1 < qs.size(); ++k) {
      const StepReport& rep = reports[k];
      if (k > 0) switches += rep.taut != reports[k - 1].taut;
      // A step the integrator took in substeps is not one DEL step, and leaves the next step a
      // momentum of the substep's size.
      if (rep.substeps > 1 || (k > 0 && reports[k - 1].substeps > 1)) continue;
      dm.interval(qs[k], qs[k + 1], dt, after, false);
      dm.knot(qs[k], nullptr, here);
      dm.knot(qs[k + 1], nullptr, next);
      Eigen::VectorXd p_k = start.p;
      if (k > 0) {
        dm.interval(qs[k - 1], qs[k], dt, before, false);
        p_k = before.D2;
      }
      Eigen::VectorXd residual = p_k + after.D1;
      for (int j = 0; j < ns; ++j) {
        const double lambda = DiscreteMechanics::multiplier(rep.tension_N[j], here.span_m[j], dt);
        residual -= lambda * here.G.row(j).head(nd).transpose();
        // Complementary: a pulling string ends the step at its length; any ends within it.
        const double length = std::sqrt(std::max(0.0, here.span_m[j] * here.span_m[j] -
                                                          2 * here.g[j]));
        EXPECT_LE(next.g[j], 1e-8 * length) << name << " step " << k << " string " << j;
        if (lambda > 0) {
          EXPECT_GE(next.g[j], -1e-8 * length) << name << " step " << k;
        }
      }
      // A stop at its bound after the step pushes with the rest of its variable's row.
      for (int r = 0; r < dm.constraintRows() - ns; ++r) {
        const Model::StopRow& stop = m->stops[r];
        if (next.g[ns + r] < -1e-9) continue;
        const double lambda = residual[stop.variable] * stop.sign;
        EXPECT_GE(lambda, -1e-9) << name << " step " << k << " stop " << r;
        residual[stop.variable] -= lambda * stop.sign;
      }
      const double scale = std::max({p_k.cwiseAbs().maxCoeff(), after.D2.cwiseAbs().maxCoeff(),
                                     1e-12});
      EXPECT_LE(residual.cwiseAbs().maxCoeff() / scale, 1e-7) << name << " step " << k;
      ++checked;
    }
    EXPECT_GT(checked, 80) << name;
    total_switches += switches;
    if (name == "suspended-mass") {
      EXPECT_GT(switches, 0) << "its string never went slack";
    }
  }
  EXPECT_GT(total_switches, 0);
}

// The suspended mass's robot moved 10 cm and its string let out 10 cm, fast: the string goes
// slack, then catches.
Eigen::MatrixXd massLetDown(const ModelPtr& mass, int intervals, int move_intervals) {
  Eigen::VectorXd end = mass->defaultInputs();
  end[0] += 0.1;
  end[1] += 0.1;
  return quinticInputs(mass, end, intervals, move_intervals);
}

TEST(Transcription, TheProblemsDerivativesMatchFiniteDifferences) {
  // The suspended mass let down fast (its string goes slack, then catches) by the window's wall,
  // and the planar arm swung: every row kind and every objective term.
  {
    const ModelPtr mass = loadModel("suspended-mass");
    TranscriptionSetup s = transcriptionFor(mass, "point:mass=0.1,0,0.4;radius=0.05", 20, "window");
    TranscriptionProblem p(s);
    checkProblemDerivatives(p, p.initialGuess(massLetDown(mass, 20, 8)), "suspended mass");
    s.goal_knot = 9;  // a goal reached on the way
    TranscriptionProblem on_the_way(s);
    checkProblemDerivatives(on_the_way, on_the_way.initialGuess(massLetDown(mass, 20, 8)),
                            "suspended mass, the goal at knot 9");
  }
  {
    const ModelPtr arm = loadModel("planar-arm");
    TranscriptionSetup s = transcriptionFor(arm, "q:theta1=0.2;tol=0.05", 16);
    TranscriptionProblem p(s);
    Eigen::VectorXd end = arm->defaultInputs();
    end[0] += 0.05;
    checkProblemDerivatives(p, p.initialGuess(quinticInputs(arm, end, 16, 10)), "planar arm");
  }
  {
    // A tree with branches (the Jacobian's blocks keep only the couplings along its chains:
    // an entry they left out would show here), strings, joint stops and the table.
    const ModelPtr pc = loadModel("puppetcopter");
    TranscriptionSetup s =
        transcriptionFor(pc, "point:hand_l=0.05,0.24,0.40;radius=0.04", 6, "table");
    TranscriptionProblem p(s);
    Eigen::VectorXd end = pc->defaultInputs();
    end.head(3) += Eigen::Vector3d(0.01, -0.01, 0.01);
    checkProblemDerivatives(p, p.initialGuess(quinticInputs(pc, end, 6, 4)), "puppetcopter");
  }
}

// The Lagrangian's Hessian against central differences of its gradient: in full for the objective
// and the strings' rows, and the multipliers' coupling to the configurations for the DEL rows
// (their curvature in the configurations, the dynamics' third derivatives, is left out).
TEST(Transcription, TheHessianMatchesFiniteDifferencesOfTheLagrangiansGradient) {
  const ModelPtr mass = loadModel("suspended-mass");
  TranscriptionSetup s = transcriptionFor(mass, "point:mass=0.1,0,0.4;radius=0.05", 12);
  s.goal_knot = 7;  // the point goal's row (J^T J: exact for the mass's point) on the way
  TranscriptionProblem p(s);
  const Eigen::VectorXd z = p.initialGuess(massLetDown(mass, 12, 6));
  const int n = p.variables();
  std::mt19937 rng(3);
  std::uniform_real_distribution<double> any(-1.0, 1.0);
  auto hessianAt = [&](double sigma, const Eigen::VectorXd& y) {
    return test::lagrangianHessian(p, z, sigma, y);
  };
  auto differences = [&](double sigma, const Eigen::VectorXd& y) {
    return test::lagrangianHessianByDifferences(p, z, sigma, y);
  };
  // The objective, the strings' rows (the first DEL row's index is 0; the strings' rows follow
  // the DEL rows) and the goal's (the one row bounded above only).
  Eigen::VectorXd y = Eigen::VectorXd::Zero(p.constraints());
  const int nd = mass->nd(), N = 12;
  for (int r = N * nd; r < N * nd + N * mass->nstrings(); ++r) y[r] = any(rng);
  Eigen::VectorXd z_lower, z_upper, g_lower, g_upper;
  p.bounds(z_lower, z_upper, g_lower, g_upper);
  int goal_rows = 0;
  for (int r = 0; r < p.constraints(); ++r)
    if (g_lower[r] <= -1e19 && g_upper[r] < 1e19) {  // (no bound: beyond Ipopt's 1e19)
      y[r] = 0.8;
      ++goal_rows;
    }
  ASSERT_EQ(goal_rows, 1);
  const Eigen::MatrixXd H = hessianAt(0.7, y), H_fd = differences(0.7, y);
  EXPECT_LE((H - H_fd).cwiseAbs().maxCoeff(), 1e-5 * H_fd.cwiseAbs().maxCoeff());
  // The DEL rows: the multipliers' rows of the Hessian.
  y.setZero();
  for (int r = 0; r < N * nd; ++r) y[r] = any(rng);
  const Eigen::MatrixXd D = hessianAt(0.0, y), D_fd = differences(0.0, y);
  const int first_multiplier = p.lambdaAt(0);
  EXPECT_LE((D - D_fd).bottomRows(n - first_multiplier).cwiseAbs().maxCoeff(),
            1e-5 * D_fd.cwiseAbs().maxCoeff());
  EXPECT_GT(D.bottomRows(n - first_multiplier).cwiseAbs().maxCoeff(), 0.0);
}

// The integrator's motion is complementary (a string pulls or is slack, never both); a string
// made slack while its multiplier still pulls is not, by as much as the smaller of the two.
TEST(Transcription, ComplementarityViolationIsZeroOnTheIntegratorsMotionOnly) {
  const ModelPtr mass = loadModel("suspended-mass");
  TranscriptionSetup s = transcriptionFor(mass, "point:mass=0.1,0,0.4;radius=0.05", 20);
  TranscriptionProblem p(s);
  Eigen::VectorXd z = p.initialGuess(massLetDown(mass, 20, 8));
  EXPECT_LE(p.complementarityViolation(z), 1e-6);
  int pulling = -1;
  for (int k = 0; k < 20 && pulling < 0; ++k)
    if (z[p.lambdaAt(k)] > 0) pulling = k;
  ASSERT_GE(pulling, 0);
  z[p.slackAt(pulling)] = 0.01;  // 1 cm slack on a 0.5 m string: 20 gap units
  EXPECT_GT(p.complementarityViolation(z), 0.5);
}

// The suspended mass moved 15 cm to a point in 60 steps, from a quintic in input space.
struct MassToAPoint {
  static constexpr int N = 60;
  ModelPtr mass = loadModel("suspended-mass");
  TranscriptionSetup s = transcriptionFor(mass, "point:mass=0.15,0,0.5;radius=0.02", N);
  TranscriptionProblem p{s};
  Eigen::VectorXd z0 = p.initialGuess(quinticInputs(mass, shifted(mass->defaultInputs()), N, 20));
  static Eigen::VectorXd shifted(Eigen::VectorXd rho) {
    rho[0] += 0.15;
    return rho;
  }
  // Solved from z0 within 100 iterations.
  detail::InteriorPointResult solve(detail::NlpSolver solver = detail::NlpSolver::kIpopt) {
    p.scaleObjectiveAt(z0);
    detail::InteriorPointResult out = detail::solveNlp(p, z0, 100, solver);
    EXPECT_EQ(out.status, detail::InteriorPointStatus::kConverged)
        << describe(out.status) << " after " << out.iterations << " iterations";
    return out;
  }
};

// The optimizer's answer (complementarity by the penalty) is the integrator's motion: its inputs
// re-simulated by the exact step give its configurations (to the complementarity's tolerance),
// and the puppet ends at rest.
TEST(Transcription, AnOptimizedMotionIsTheIntegratorsAndEndsAtRest) {
  MassToAPoint m;
  const auto solved = m.solve();
  EXPECT_LE(solved.iterations, 60);
  expectTheIntegratorsMotionAtRest(m.mass, m.s, m.p, solved.z);
}

// At fixed modes (each string taut or slack per step, as the integrator's rollout has them) the
// bounds hold complementarity exactly: a taut row's slackness and a slack row's multiplier are
// fixed at 0 -- except a taut row on the knots the rest rows tie to the end (it would repeat the
// end's row), whose slackness x_N's row drives to 0.  The solution is the integrator's motion and
// ends at rest, like the penalty's.
TEST(Transcription, AtFixedModesComplementarityIsExactAndTheMotionTheIntegrators) {
  MassToAPoint m;
  const int N = MassToAPoint::N;
  TranscriptionProblem& p = m.p;
  const std::vector<char> modes = p.modesOf(m.z0);
  const int nc = 1 + static_cast<int>(m.mass->stops.size());
  ASSERT_EQ(modes.size(), static_cast<std::size_t>(N * nc));
  p.setModes(modes);
  Eigen::VectorXd zl, zu, gl, gu;
  p.bounds(zl, zu, gl, gu);
  const int rest_from = N - m.s.rest_knots;
  auto tiedToTheEnd = [&](int k) { return modes[k * nc] && k + 1 >= rest_from && k + 1 < N; };
  int taut = 0, tied = 0;
  for (int k = 0; k < N; ++k) {
    taut += modes[k * nc];
    tied += tiedToTheEnd(k);
    const double upper = zu[modes[k * nc] ? p.slackAt(k) : p.lambdaAt(k)];
    if (tiedToTheEnd(k))
      EXPECT_GT(upper, 1e3) << "step " << k;
    else
      EXPECT_EQ(upper, 0.0) << "step " << k;
  }
  EXPECT_GT(taut, 0);
  EXPECT_EQ(tied, m.s.rest_knots);  // the mass hangs taut at the end
  const auto solved = m.solve();
  const Eigen::VectorXd& z = solved.z;
  for (int k = 0; k < N; ++k) {
    if (tiedToTheEnd(k))
      EXPECT_LE(z[p.slackAt(k)], 1e-9) << "step " << k;
    else
      EXPECT_EQ(z[p.lambdaAt(k)] * z[p.slackAt(k)], 0.0) << "step " << k;
  }
  expectTheIntegratorsMotionAtRest(m.mass, m.s, p, z);
}

// The interior point written for the transcription's structure (interior_point.hpp) against Ipopt
// with MUMPS from the same start: at fixed modes the same optimum; with complementarity as a
// penalty (nonconvex: several local optima) one no worse.
TEST(Transcription, TheInteriorPointFindsIpoptsOptimum) {
  for (const bool modes : {true, false}) {
    MassToAPoint m;
    if (modes) m.p.setModes(m.p.modesOf(m.z0));
    const auto ipopt = m.solve(detail::NlpSolver::kIpopt);
    const auto ours = m.solve(detail::NlpSolver::kInteriorPoint);
    EXPECT_LE(ours.primal_infeasibility, 1e-8) << modes;
    std::printf("modes %d: interior point %d iterations (%d factorizations), Ipopt %d\n", modes,
                ours.iterations, ours.factorizations, ipopt.iterations);
    if (!modes) {
      EXPECT_LE(ours.objective, ipopt.objective * (1 + 1e-6));
      continue;
    }
    EXPECT_NEAR(ours.objective, ipopt.objective, 1e-5 * std::abs(ipopt.objective));
    ASSERT_TRUE(m.p.evaluate(ipopt.z, false));
    const Eigen::VectorXd rows = m.p.rows();
    ASSERT_TRUE(m.p.evaluate(ours.z, false));
    EXPECT_LT((m.p.rows() - rows).lpNorm<Eigen::Infinity>(), 1e-6);
  }
}

// The rest poses along a path (quasiStaticPath) as a guess: at rest every DEL row is met to
// round-off and the strings' rows exactly; moving, the only DEL residual is the motion's inertia,
// a quarter as large when the same move takes twice as long.  A path whose rest poses step more
// than asked, even in eighths of a step, is refused.
TEST(Transcription, TheRestPosesAlongASlowPathLeaveOnlyTheMotionsInertia) {
  const ModelPtr mass = loadModel("suspended-mass");
  constexpr int N = 80;
  const TranscriptionSetup s = transcriptionFor(mass, "point:mass=0.15,0,0.5;radius=0.02", N);
  TranscriptionProblem p(s);
  const int del_rows = N * mass->nd();  // the DEL rows come first
  auto residuals = [&](const Eigen::MatrixXd& inputs) {
    const detail::QuasiStaticPath path =
        detail::quasiStaticPath(mass, inputs, s.start.q, 1.0);
    EXPECT_TRUE(path.ok) << path.message;
    p.evaluate(p.quasiStaticGuess(inputs, path.q, path.tension_N), false);
    return std::make_pair(p.rows().head(del_rows).cwiseAbs().maxCoeff(),
                          p.rows().segment(del_rows, N).cwiseAbs().maxCoeff());
  };
  const auto [still_del, still_string] =
      residuals(quinticInputs(mass, mass->defaultInputs(), N, 20));
  EXPECT_LE(still_del, 1e-12);
  EXPECT_LE(still_string, 1e-12);
  Eigen::VectorXd end = mass->defaultInputs();
  end[0] += 0.15;
  const auto [fast_del, fast_string] = residuals(quinticInputs(mass, end, N, 30));
  const auto [slow_del, slow_string] = residuals(quinticInputs(mass, end, N, 60));
  EXPECT_LE(std::max(fast_string, slow_string), 1e-12);
  EXPECT_GT(fast_del, 1e-6);
  EXPECT_NEAR(fast_del / slow_del, 4.0, 0.4);
  // The fast path's largest step between rows; a steeper stretch than max_step that is
  // continuous (in eighths of the step, each moves an eighth as much) is kept, with the rest
  // poses at the rows; one that steps more than max_step even in eighths is refused.
  const Eigen::MatrixXd fast = quinticInputs(mass, end, N, 30);
  const detail::QuasiStaticPath loose = detail::quasiStaticPath(mass, fast, s.start.q, 1.0);
  ASSERT_TRUE(loose.ok);
  double largest = 0.0;
  for (Eigen::Index r = 1; r < loose.q.rows(); ++r)
    largest = std::max(largest, (loose.q.row(r) - loose.q.row(r - 1)).cwiseAbs().maxCoeff());
  const detail::QuasiStaticPath steep =
      detail::quasiStaticPath(mass, fast, s.start.q, 0.5 * largest);
  ASSERT_TRUE(steep.ok) << steep.message;
  EXPECT_LE((steep.q - loose.q).cwiseAbs().maxCoeff(), 1e-8);
  const detail::QuasiStaticPath refused =
      detail::quasiStaticPath(mass, fast, s.start.q, largest / 20);
  EXPECT_FALSE(refused.ok);
  EXPECT_NE(refused.message.find("jumps"), std::string::npos) << refused.message;
}

}  // namespace
}  // namespace marionette
