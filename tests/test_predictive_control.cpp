// SPDX-License-Identifier: BSD-3-Clause
// The receding-horizon controller (trajopt/predictive_control.hpp) and its cost on the
// transcription (StateTracking, transcription_problem.hpp): the cost is the LQR's term for term
// (control/tracking_lqr.hpp's matrices on the integrator's own states), its derivatives match
// finite differences, and where no string switches the first correction is the LQR's, the
// difference shrinking as the deviation's square.
#include <gtest/gtest.h>

#include <cmath>
#include <initializer_list>
#include <random>

#include "marionette/control/tracking_lqr.hpp"
#include "marionette/models/field_error.hpp"
#include "marionette/models/integrator.hpp"
#include "marionette/models/model_io.hpp"
#include "marionette/models/rest_pose.hpp"
#include "marionette/trajopt/predictive_control.hpp"
#include "support/transcription_checks.hpp"
#include "transcription_problem.hpp"

namespace marionette {
namespace {

using detail::TranscriptionProblem;
using detail::TranscriptionSetup;

constexpr double kRate_hz = 50.0;

// xr swung `reach` m out and back and r shortened 4 cm, smoothly, over `samples` steps.
Eigen::MatrixXd swing(const ModelPtr& mass, int samples, double reach = 0.1) {
  Eigen::MatrixXd u(samples, mass->nk());
  for (int k = 0; k < samples; ++k) {
    const double s = static_cast<double>(k) / (samples - 1);
    u.row(k) = mass->defaultInputs().transpose();
    u(k, 0) += reach * std::pow(std::sin(M_PI * s), 2);
    u(k, 1) -= 0.04 * (s * s * s * (10 - 15 * s + 6 * s * s));
  }
  return u;
}

// The integrator's states under `u` (the first row the start's) from `start`.
std::vector<State> simulate(const ModelPtr& m, const State& start, const Eigen::MatrixXd& u) {
  IntegratorOptions io;
  io.dt_s = 1.0 / kRate_hz;
  VariationalIntegrator vi(m, io);
  std::vector<State> out = {start};
  State next = vi.makeState();
  for (Eigen::Index k = 1; k < u.rows(); ++k) {
    EXPECT_EQ(vi.step(out.back(), u.row(k).transpose(), next), StepStatus::Ok) << "step " << k;
    out.push_back(next);
  }
  return out;
}

State atRest(const ModelPtr& m, const Eigen::VectorXd& rho) {
  const RestPose rest = computeRestPose(m, rho);
  EXPECT_TRUE(rest.ok) << rest.message;
  IntegratorOptions io;
  io.dt_s = 1.0 / kRate_hz;
  return VariationalIntegrator(m, io).stateFromVelocity(rest.q, Eigen::VectorXd::Zero(m->nd()),
                                                        rho);
}

control::LqrWeights someWeights() {
  control::LqrWeights w;
  w.position = 3e3;
  w.velocity = 20;
  w.rig = 50;
  w.correction = 40;
  w.correction_rate = 2;
  w.correction_accel = 0.01;
  w.terminal = 7;
  return w;
}

// A window of N intervals from `x` (the rig's rows before it: `before`) tracking `reference`
// (states at knots 0..N, rho before them: ref_before) with the LQR's weights alone.
TranscriptionSetup windowSetup(const ModelPtr& m, const State& x, const Eigen::MatrixXd& before,
                               const std::vector<State>& reference,
                               const Eigen::MatrixXd& ref_before, const control::LqrWeights& w) {
  const int N = static_cast<int>(reference.size()) - 1;
  TranscriptionSetup s = test::transcriptionFor(m, "q:xm=0.0;tol=0.05", N);
  s.integrator.dt_s = 1.0 / kRate_hz;
  s.start = x;
  s.goal_rows = false;
  s.rest_knots = 0;
  s.rig_before = before;
  s.weights.effort = s.weights.jerk = s.weights.swing = s.weights.tension_rate = 0;
  s.weights.complementarity = 0;
  detail::StateTracking& t = s.state_tracking;
  t.q.resize(N + 1, m->nd());
  t.p.resize(N + 1, m->nd());
  t.rho.resize(N + 3, m->nk());
  t.rho.row(0) = ref_before.row(1);
  t.rho.row(1) = ref_before.row(0);
  for (int k = 0; k <= N; ++k) {
    const State& r = reference[k];
    t.q.row(k) = r.q.transpose();
    t.p.row(k) = r.p.transpose();
    t.rho.row(k + 2) = r.rho.transpose();
    DynamicsData d(*m);
    const Eigen::VectorXd q = m->configuration(r.q, r.rho);
    forwardKinematics(*m, d, q);
    computeLagrangian(*m, d, q, Eigen::VectorXd::Zero(m->nd()), LagrangianOrder::MassMatrix);
    const Eigen::MatrixXd Minv = d.M.inverse();
    t.velocity_metric.push_back(Minv.transpose() * Minv);
  }
  t.weights = w;
  return s;
}

TEST(PredictiveControl, TheCostIsTheLqrsTermByTermWithExactDerivatives) {
  const ModelPtr mass = loadModel("suspended-mass");
  const int N = 12;
  const double dt = 1.0 / kRate_hz;
  const Eigen::MatrixXd u_ref = swing(mass, N + 1);
  const std::vector<State> reference =
      simulate(mass, atRest(mass, u_ref.row(0).transpose()), u_ref);
  Eigen::MatrixXd ref_before(2, mass->nk());
  ref_before << u_ref.row(0), u_ref.row(0);
  // Another motion: its own start (off the reference's), inputs and rig history.
  Eigen::MatrixXd u = swing(mass, N + 1, 0.13);
  u.col(1).array() += 0.01;
  State x = atRest(mass, u.row(0).transpose());
  x.q[0] += 0.004;
  x.p[0] = 0.002;
  Eigen::MatrixXd before(2, mass->nk());
  before << u(0, 0) - 0.003, u(0, 1) + 0.001, u(0, 0) - 0.005, u(0, 1) + 0.003;
  const control::LqrWeights w = someWeights();
  TranscriptionSetup s = windowSetup(mass, x, before, reference, ref_before, w);
  TranscriptionProblem p(s);
  const Eigen::VectorXd z = p.initialGuess(u);
  p.evaluate(z, false);
  // The LQR's sum on the integrator's own states (knot 0's state terms are constant: left out).
  const std::vector<State> motion = simulate(mass, x, u);
  auto s_at = [&](int k) {
    Eigen::VectorXd d(2 * mass->nd() + 2 * mass->nk());
    const State& a = motion[k];
    const State& r = reference[k];
    const Eigen::VectorXd prev =
        k >= 1 ? Eigen::VectorXd(motion[k - 1].rho - reference[k - 1].rho)
               : Eigen::VectorXd(before.row(0).transpose() - ref_before.row(0).transpose());
    d << a.q - r.q, a.p - r.p, a.rho - r.rho, prev;
    return d;
  };
  const Eigen::MatrixXd R = control::inputCost(*mass, w, dt), Nc = control::crossCost(*mass, w, dt);
  double lqr = 0.0;
  for (int k = 0; k <= N; ++k) {
    const Eigen::VectorXd sk = s_at(k);
    const Eigen::MatrixXd Q = control::stateCost(*mass, reference[k], w, dt);
    if (k == N) {
      lqr += w.terminal * sk.dot(Q * sk);
      break;
    }
    const Eigen::VectorXd uk = motion[k + 1].rho - reference[k + 1].rho;
    lqr += sk.dot(Q * sk) + uk.dot(R * uk) + 2 * sk.dot(Nc * uk);
    if (k == 0) {  // the constant: knot 0's joints, momenta and rig
      const Eigen::VectorXd dq = sk.head(mass->nd()), dp = sk.segment(mass->nd(), mass->nd()),
                            dr = sk.segment(2 * mass->nd(), mass->nk());
      lqr -= w.position * dq.squaredNorm() + w.rig * dr.squaredNorm() +
             w.velocity * dp.dot(s.state_tracking.velocity_metric[0] * dp);
    }
  }
  ASSERT_GT(lqr, 1.0);
  EXPECT_NEAR(p.cost(), lqr, 1e-9 * lqr);
  test::checkProblemDerivatives(p, z, "the closed loop's cost");
  // The Hessian: exact for the joints' and the rig's terms; for the momenta's, Gauss-Newton, exact
  // where they meet the reference.
  const Eigen::VectorXd y = Eigen::VectorXd::Zero(p.constraints());
  TranscriptionSetup on_reference =
      windowSetup(mass, reference[0], ref_before, reference, ref_before, w);
  TranscriptionProblem q(on_reference);
  const Eigen::VectorXd z_ref = q.initialGuess(u_ref);
  const Eigen::MatrixXd H = test::lagrangianHessian(q, z_ref, 0.8, y);
  const Eigen::MatrixXd H_fd = test::lagrangianHessianByDifferences(q, z_ref, 0.8, y);
  EXPECT_LE((H - H_fd).cwiseAbs().maxCoeff(), 1e-5 * H_fd.cwiseAbs().maxCoeff());
  s.state_tracking.weights.velocity = 0;
  TranscriptionProblem positions(s);
  const Eigen::MatrixXd Hp = test::lagrangianHessian(positions, z, 0.8, y);
  const Eigen::MatrixXd Hp_fd = test::lagrangianHessianByDifferences(positions, z, 0.8, y);
  EXPECT_LE((Hp - Hp_fd).cwiseAbs().maxCoeff(), 1e-5 * Hp_fd.cwiseAbs().maxCoeff());
}

// The suspended mass swung along a plan; pushed off it at sample i by inputs `offset` m off the
// plan's for the steps before.  The LQR's first correction there and the controller's (horizon to
// the plan's end, solved to convergence) differ by O(deviation^2): halving the deviation divides
// the difference by about 4, and it is under 1 % of the correction.
TEST(PredictiveControl, TheFirstCorrectionIsTheLqrsWhereNoStringSwitches) {
  const ModelPtr mass = loadModel("suspended-mass");
  const int S = 26, i = 6;
  const double dt = 1.0 / kRate_hz;
  const Eigen::MatrixXd u_ref = swing(mass, S, 0.04);
  const State start = atRest(mass, u_ref.row(0).transpose());
  const std::vector<State> reference = simulate(mass, start, u_ref);
  IntegratorOptions io;
  io.dt_s = dt;
  const control::TrajectoryLinearization lin = control::linearizeTrajectory(mass, u_ref, start, io);
  const control::LqrWeights w = someWeights();
  const control::TrackingGains gains = control::computeTrackingGains(mass, lin, w);
  PredictiveOptions options;
  options.weights = w;
  options.horizon_s = (S - 1 - i) * dt;
  options.iterations = 100;
  const PredictiveController mpc(mass, reference, kRate_hz, options);
  ASSERT_EQ(mpc.horizonSteps(), S - 1 - i);
  DynamicsData data(*mass);
  double difference[2];
  for (int n = 0; n < 2; ++n) {
    const double offset = n == 0 ? 0.004 : 0.002;
    Eigen::MatrixXd u = u_ref;
    for (int k = 1; k <= i; ++k) u.row(k) += offset * Eigen::RowVector2d(1.0, -0.5) * k / i;
    const State x = simulate(mass, start, u.topRows(i + 1)).back();
    // No string switches: the string stays taut along the plan and the pushed motion.
    for (const auto& taut : lin.taut) ASSERT_TRUE(taut[0]);
    const Eigen::VectorXd deviation =
        control::feasibleDeviation(*mass, data, x, reference[i], lin.taut[i]);
    const Eigen::VectorXd lqr =
        gains.correction(i, deviation, (u.row(i - 1) - u_ref.row(i - 1)).transpose());
    Eigen::MatrixXd before(2, mass->nk());
    before << u.row(i - 1), u.row(i - 2);
    const PredictiveSolve solve = mpc.solve(i, x, before, Eigen::MatrixXd());
    ASSERT_FALSE(solve.failed);
    ASSERT_FALSE(solve.kept_warm);
    const Eigen::VectorXd first = (solve.inputs.row(1) - u_ref.row(i + 1)).transpose();
    ASSERT_GT(lqr.norm(), 1e-4);
    difference[n] = (first - lqr).norm();
    EXPECT_LE(difference[n], 0.01 * lqr.norm())
        << "offset " << offset << ": mpc " << first.transpose() << ", lqr " << lqr.transpose();
  }
  // (The correction halves with the deviation; the difference goes as its square.)
  EXPECT_LE(difference[1], 0.3 * difference[0]) << "the difference is not second order";
}

// Solves with a few iterations from states off the reference (every joint's velocity kicked):
// each one's inputs are the warm start's, the solver's, or a step of a half or a quarter towards
// them, whichever first costs less than the warm start re-simulated; the cost it reports is its
// inputs' re-simulated (a solve warm-started from them finds the same), never more than the warm
// start's.  Returns how many took a shorter step.
int checkSolves(const ModelPtr& m, const Eigen::MatrixXd& u_ref, int i,
                std::initializer_list<double> kicks) {
  const std::vector<State> reference = simulate(m, atRest(m, u_ref.row(0).transpose()), u_ref);
  int shorter = 0;
  for (int iterations : {1, 2, 3, 5, 10}) {
    PredictiveOptions options;
    options.weights = someWeights();
    options.weights.position = 10;
    options.point_weight = 10;
    options.horizon_s = 0.3;
    options.iterations = iterations;
    const PredictiveController mpc(m, reference, kRate_hz, options);
    for (double kick : kicks) {
      SCOPED_TRACE(testing::Message()
                   << m->name << ", " << iterations << " iterations, kick " << kick);
      // Every joint's velocity off by a draw of `kick` rad/s (or m/s) std.
      State x = reference[static_cast<std::size_t>(i)];
      std::mt19937 rng(static_cast<unsigned>(1000 * kick + iterations));
      std::normal_distribution<double> draw(0.0, kick);
      DynamicsData d(*m);
      const Eigen::VectorXd q = m->configuration(x.q, x.rho);
      forwardKinematics(*m, d, q);
      computeLagrangian(*m, d, q, Eigen::VectorXd::Zero(m->nd()), LagrangianOrder::MassMatrix);
      Eigen::VectorXd v(m->nd());
      for (int j = 0; j < m->nd(); ++j) v[j] = draw(rng);
      x.p += d.M * v;
      Eigen::MatrixXd before(2, m->nk());
      before << u_ref.row(i - 1), u_ref.row(i - 2);
      const PredictiveSolve solve = mpc.solve(i, x, before, Eigen::MatrixXd());
      EXPECT_FALSE(solve.failed);
      if (solve.failed) continue;
      EXPECT_LE(solve.cost, solve.warm_cost);
      EXPECT_EQ(solve.kept_warm, solve.step_share == 0.0);
      EXPECT_TRUE(solve.step_share == 0.0 || solve.step_share == 0.25 || solve.step_share == 0.5 ||
                  solve.step_share == 1.0)
          << solve.step_share;
      shorter += solve.step_share > 0 && solve.step_share < 1;
      const PredictiveSolve again = mpc.solve(i, x, before, solve.inputs);
      EXPECT_NEAR(again.warm_cost, solve.cost, 1e-9 * solve.warm_cost);
    }
  }
  return shorter;
}

TEST(PredictiveControl, ASolveNeverCostsMoreThanItsWarmStartReSimulated) {
  const ModelPtr mass = loadModel("suspended-mass");
  checkSolves(mass, swing(mass, 41, 0.3), 8, {0.1, 0.2, 0.4, 0.8});
  // PuppetCopter, every input swung by 2 cm (or rad) and back: some solves take a shorter step.
  const ModelPtr copter = loadModel("puppetcopter");
  Eigen::MatrixXd u(41, copter->nk());
  for (int k = 0; k < u.rows(); ++k)
    u.row(k) = (copter->defaultInputs().array() +
                0.02 * std::pow(std::sin(M_PI * k / (u.rows() - 1.0)), 2))
                   .matrix()
                   .transpose();
  EXPECT_GT(checkSolves(copter, u, 10, {0.15, 0.3, 0.6, 0.9, 1.5}), 0)
      << "no solve took a shorter step";
}

TEST(PredictiveControl, BadOptionsAreRefusedNamingTheField) {
  const ModelPtr mass = loadModel("suspended-mass");
  const Eigen::MatrixXd u_ref = swing(mass, 26);
  const std::vector<State> reference =
      simulate(mass, atRest(mass, u_ref.row(0).transpose()), u_ref);
  auto field = [&](PredictiveOptions o) {
    try {
      PredictiveController c(mass, reference, kRate_hz, o);
    } catch (const FieldError& e) {
      return e.field();
    }
    return std::string("accepted");
  };
  PredictiveOptions o;
  EXPECT_EQ(field(o), "accepted");
  o.horizon_s = 0.6;  // the plan is 0.5 s
  EXPECT_EQ(field(o), "horizon_s");
  o.horizon_s = 0.0;
  EXPECT_EQ(field(o), "horizon_s");
  o = PredictiveOptions{};
  o.iterations = 0;
  EXPECT_EQ(field(o), "iterations");
  o = PredictiveOptions{};
  o.weights.velocity = -1;
  EXPECT_EQ(field(o), "weights.velocity");
  o.weights.velocity = NAN;
  EXPECT_EQ(field(o), "weights.velocity");
}

}  // namespace
}  // namespace marionette
