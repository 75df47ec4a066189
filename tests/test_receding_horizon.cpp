// SPDX-License-Identifier: BSD-3-Clause
// Targets followed over a receding horizon on the transcription
// (marionette/trajopt/horizon_tracking.hpp): the targets' terms, the settling after the motion's
// end and the rig's history going into a window against finite differences, and on the suspended
// mass, a motion the integrator made followed from a reference that stands still: re-simulated,
// within the rig's limits, a held input exactly held, the same inputs every time.
#include <gtest/gtest.h>

#include <cmath>

#include "marionette/models/input_limits.hpp"
#include "marionette/models/integrator.hpp"
#include "marionette/models/model_io.hpp"
#include "marionette/models/rest_pose.hpp"
#include "marionette/trajopt/horizon_tracking.hpp"
#include "support/transcription_checks.hpp"
#include "transcription_problem.hpp"

namespace marionette {
namespace {

using detail::TranscriptionProblem;
using detail::TranscriptionSetup;

constexpr double kRate_hz = 50.0;

// xr swung 0.15 m out and back and r shortened 8 cm, smoothly, over `samples` steps at 50 Hz.
Eigen::MatrixXd swing(const ModelPtr& mass, int samples) {
  Eigen::MatrixXd u(samples, mass->nk());
  for (int k = 0; k < samples; ++k) {
    const double s = static_cast<double>(k) / (samples - 1);
    const double bump = std::pow(std::sin(M_PI * s), 2);
    u.row(k) = mass->defaultInputs().transpose();
    u(k, 0) += 0.15 * bump;
    u(k, 1) -= 0.08 * (s * s * s * (10 - 15 * s + 6 * s * s));
  }
  return u;
}

// The mass point's positions (rows of 3) and every state of the integrator's motion under `u`.
Eigen::MatrixXd massPoints(const ModelPtr& mass, const State& start, const Eigen::MatrixXd& u) {
  IntegratorOptions io;
  io.dt_s = 1.0 / kRate_hz;
  VariationalIntegrator vi(mass, io);
  DynamicsData data(*mass);
  const Point& point = mass->points[mass->pointIndex("mass")];
  Eigen::MatrixXd out(u.rows(), 3);
  State x = start, next = vi.makeState();
  for (Eigen::Index k = 0; k < u.rows(); ++k) {
    if (k > 0) {
      EXPECT_EQ(vi.step(x, u.row(k).transpose(), next), StepStatus::Ok) << "step " << k;
      x = next;
    }
    forwardKinematics(*mass, data, mass->configuration(x.q, x.rho));
    out.row(k) = pointPosition(data, point.frame, point.position_m).transpose();
  }
  return out;
}

double rms(const Eigen::MatrixXd& a, const Eigen::MatrixXd& b) {
  return std::sqrt((a - b).rowwise().squaredNorm().mean());
}

// A receding horizon's window of the suspended mass: N knots, no goal rows, no rest knots.
TranscriptionSetup massWindow(const ModelPtr& mass, int N) {
  TranscriptionSetup s = test::transcriptionFor(mass, "q:xm=0.0;tol=0.05", N);
  s.goal_rows = false;
  s.rest_knots = 0;
  return s;
}

TEST(RecedingHorizon, TheTargetsAndTheRigGoingInHaveExactDerivatives) {
  const ModelPtr mass = loadModel("suspended-mass");
  const int N = 12;
  TranscriptionSetup s = massWindow(mass, N);
  // A window mid-motion: the rig moving in, a point's target and two variables' (one of them
  // a rig input, weighted), a sample of each without one.
  s.rig_before.resize(2, mass->nk());
  s.rig_before << -0.01, 0.505, -0.025, 0.512;
  // The mass's target and, weighted a quarter, the robot's (a performance's untargeted point
  // held near its calm reference).
  s.track_points = {mass->pointIndex("mass"), mass->pointIndex("robot")};
  s.track_point_weight = {1.0, 0.25};
  s.track_targets_m.resize(N + 1, 6);
  s.track_values.resize(N + 1, 2);
  for (int k = 0; k <= N; ++k) {
    s.track_targets_m.row(k) << 0.01 * k, 0.0, 0.48 - 0.002 * k, 0.003 * k, 0.0, 1.0;
    s.track_values.row(k) << 0.004 * k, 0.02 - 0.001 * k;
  }
  s.track_targets_m(3, 0) = std::numeric_limits<double>::quiet_NaN();
  s.track_values(5, 1) = std::numeric_limits<double>::quiet_NaN();
  // The mass's samples near a miss weighed more (a performance's reweighted pass).
  s.track_point_knot_weight = Eigen::MatrixXd::Ones(N + 1, 2);
  s.track_point_knot_weight.block(6, 0, 3, 1) << 2.5, 4.0, 1.5;
  s.track_variables = {mass->variableIndex("xm"), mass->variableIndex("xr")};
  s.track_variable_scale_m = {1.0, 0.5};
  s.track_variable_weight = {1.0, 0.3};
  s.weights.tracking = 0.7;
  // The motion's end at knot 9: the rig held after it, the swing weighed as settling.
  s.hold_from_knot = 9;
  s.weights.settle = 4.0;
  TranscriptionProblem p(s);
  Eigen::VectorXd end = mass->defaultInputs();
  end[0] += 0.05;
  const Eigen::VectorXd z = p.initialGuess(test::quinticInputs(mass, end, N, 8));
  test::checkProblemDerivatives(p, z, "targets and the rig going in");
  // The objective's Hessian: the mass's point is linear in q, so Gauss-Newton is its own.
  const Eigen::VectorXd y = Eigen::VectorXd::Zero(p.constraints());
  const Eigen::MatrixXd H = test::lagrangianHessian(p, z, 0.9, y);
  const Eigen::MatrixXd H_fd = test::lagrangianHessianByDifferences(p, z, 0.9, y);
  EXPECT_LE((H - H_fd).cwiseAbs().maxCoeff(), 1e-5 * H_fd.cwiseAbs().maxCoeff());
  // The first second difference reads the rig going in: a_0 = rho_1 - 2 rho_0 + rho_-1 in the
  // guess, and its row holds.
  p.evaluate(z, false);
  Eigen::VectorXd z_lower, z_upper, g_lower, g_upper;
  p.bounds(z_lower, z_upper, g_lower, g_upper);
  const Eigen::MatrixXd rho = p.inputs(z);
  const int accel_row = N * mass->nd() + N * mass->nstrings() + N * mass->nk();
  for (int i = 0; i < mass->nk(); ++i) {
    EXPECT_NEAR(z[p.accelAt(0) + i], rho(1, i) - 2 * rho(0, i) + s.rig_before(0, i), 1e-15);
    EXPECT_NEAR(p.rows()[accel_row + i], 0.0, 1e-15);
  }
  // The speed rows from knot 9 on are held at 0; before it, the rig's limit.
  const int speed_row = accel_row - N * mass->nk();
  for (int k = 0; k < N; ++k) {
    const double bound = g_upper[speed_row + k * mass->nk()];
    if (k >= 9)
      EXPECT_EQ(bound, 0.0) << k;
    else
      EXPECT_GT(bound, 0.0) << k;
  }
}

TEST(RecedingHorizon, APointsWeightIsAsMuchAsListingItThatManyTimes) {
  const ModelPtr mass = loadModel("suspended-mass");
  const int N = 8;
  TranscriptionSetup once = massWindow(mass, N);
  once.track_points = {mass->pointIndex("mass")};
  once.track_point_weight = {3.0};
  once.track_targets_m.resize(N + 1, 3);
  for (int k = 0; k <= N; ++k) once.track_targets_m.row(k) << 0.02 * k, 0.0, 0.45;
  TranscriptionSetup thrice = once;
  thrice.track_points.assign(3, mass->pointIndex("mass"));
  thrice.track_point_weight.clear();  // (all 1)
  thrice.track_targets_m = once.track_targets_m.replicate(1, 3);
  TranscriptionProblem a(once), b(thrice);
  Eigen::VectorXd end = mass->defaultInputs();
  end[0] += 0.05;
  const Eigen::VectorXd z = a.initialGuess(test::quinticInputs(mass, end, N, 6));
  a.evaluate(z, true);
  b.evaluate(z, true);
  EXPECT_GT(a.cost(), 0.0);
  EXPECT_NEAR(a.cost(), b.cost(), 1e-12 * b.cost());
  EXPECT_LE((a.gradient() - b.gradient()).cwiseAbs().maxCoeff(),
            1e-12 * b.gradient().cwiseAbs().maxCoeff());
  // A weight per point or none: any other count is refused.
  TranscriptionSetup wrong = once;
  wrong.track_point_weight = {1.0, 2.0};
  EXPECT_THROW(TranscriptionProblem{wrong}, std::invalid_argument);
}

// A point's weight at a knot is as much as its weight with a target at that knot alone: knot 5
// weighed 2.5 (the rest 0) costs what the target at knot 5 alone does, weighed 2.5.
TEST(RecedingHorizon, APointsKnotWeightIsItsWeightAtThatKnot) {
  const ModelPtr mass = loadModel("suspended-mass");
  const int N = 8;
  TranscriptionSetup weighed = massWindow(mass, N);
  weighed.track_points = {mass->pointIndex("mass")};
  weighed.track_targets_m.resize(N + 1, 3);
  for (int k = 0; k <= N; ++k) weighed.track_targets_m.row(k) << 0.02 * k, 0.0, 0.45;
  weighed.track_point_knot_weight = Eigen::MatrixXd::Zero(N + 1, 1);
  weighed.track_point_knot_weight(5, 0) = 2.5;
  TranscriptionSetup alone = weighed;
  alone.track_point_knot_weight.resize(0, 0);
  alone.track_point_weight = {2.5};
  for (int k = 0; k <= N; ++k)
    if (k != 5) alone.track_targets_m.row(k).setConstant(std::numeric_limits<double>::quiet_NaN());
  TranscriptionProblem a(weighed), b(alone);
  Eigen::VectorXd end = mass->defaultInputs();
  end[0] += 0.05;
  const Eigen::VectorXd z = a.initialGuess(test::quinticInputs(mass, end, N, 6));
  a.evaluate(z, true);
  b.evaluate(z, true);
  EXPECT_GT(b.cost(), 0.0);
  EXPECT_NEAR(a.cost(), b.cost(), 1e-12 * b.cost());
  EXPECT_LE((a.gradient() - b.gradient()).cwiseAbs().maxCoeff(),
            1e-12 * b.gradient().cwiseAbs().maxCoeff());
  // One row a knot and one column a point, none negative: anything else is refused.
  TranscriptionSetup wrong = weighed;
  wrong.track_point_knot_weight = Eigen::MatrixXd::Ones(N, 1);
  EXPECT_THROW(TranscriptionProblem{wrong}, std::invalid_argument);
  wrong.track_point_knot_weight = Eigen::MatrixXd::Ones(N + 1, 1);
  wrong.track_point_knot_weight(2, 0) = -1.0;
  EXPECT_THROW(TranscriptionProblem{wrong}, std::invalid_argument);
}

TEST(RecedingHorizon, FollowsAMotionTheIntegratorMadeWithinTheRigsLimits) {
  const ModelPtr mass = loadModel("suspended-mass");
  const RestPose rest = computeRestPose(mass, mass->defaultInputs());
  ASSERT_TRUE(rest.ok);
  IntegratorOptions io;
  io.dt_s = 1.0 / kRate_hz;
  VariationalIntegrator vi(mass, io);
  const State start =
      vi.stateFromVelocity(rest.q, Eigen::VectorXd::Zero(mass->nd()), mass->defaultInputs());
  const int samples = 101;  // 2 s
  const Eigen::MatrixXd truth = swing(mass, samples);
  const Eigen::MatrixXd targets = massPoints(mass, start, truth);

  HorizonTracking h;
  h.model = mass;
  h.rate_hz = kRate_hz;
  h.start = start;
  // A reference that stands still: what moves the rig is the solver's.
  h.reference_inputs = mass->defaultInputs().transpose().replicate(samples, 1);
  h.track_points = {mass->pointIndex("mass")};
  h.track_targets_m = targets;
  h.input_scale_m = {1.0, 1.0};
  const HorizonTrackingResult out = trackOverHorizon(h);
  EXPECT_EQ(out.windows_planned, 5);  // 2 s advanced by 0.4 s
  EXPECT_EQ(out.windows, 5);
  EXPECT_EQ(out.solve_failed, 0);
  EXPECT_EQ(out.stopped_at, -1);
  EXPECT_TRUE(checkInputLimits(*mass, out.inputs, kRate_hz).empty());
  const double standing = rms(massPoints(mass, start, h.reference_inputs), targets);
  const double followed = rms(massPoints(mass, start, out.inputs), targets);
  EXPECT_GT(standing, 0.05);
  EXPECT_LT(followed, 0.1 * standing) << followed << " m rms, " << standing << " standing still";

  // Counted in iterations: the same inputs again, bit for bit.
  const HorizonTrackingResult again = trackOverHorizon(h);
  EXPECT_EQ((again.inputs - out.inputs).cwiseAbs().maxCoeff(), 0.0);

  // A held input keeps its start's value exactly; the other follows as it can.
  h.held_inputs = {1};
  const HorizonTrackingResult held = trackOverHorizon(h);
  EXPECT_EQ((held.inputs.col(1).array() - mass->defaultInputs()[1]).abs().maxCoeff(), 0.0);
  EXPECT_TRUE(checkInputLimits(*mass, held.inputs, kRate_hz).empty());
  EXPECT_LT(rms(massPoints(mass, start, held.inputs), targets), standing);
}

// The rig going into the first window at 0.6 m/s (its history, braking at 8 m/s^2), the mass's
// target where it hangs: the windows go on at the rig's speed and brake within its limits, checked
// across the join.  Without the history the windows take the rig for standing still, and the same
// check sees the dead stop at the join.
TEST(RecedingHorizon, TheRigGoesOnFromItsHistory) {
  const ModelPtr mass = loadModel("suspended-mass");
  const Model& m = *mass;
  const Eigen::VectorXd rho0 = m.defaultInputs();
  const RestPose rest = computeRestPose(mass, rho0);
  ASSERT_TRUE(rest.ok);
  IntegratorOptions io;
  io.dt_s = 1.0 / kRate_hz;
  VariationalIntegrator vi(mass, io);
  const double dt_s = 1.0 / kRate_hz, speed_m_s = 0.6, accel_m_s2 = -8.0;
  Eigen::MatrixXd history = rho0.transpose().replicate(2, 1);  // the latest first
  double x_m = rho0[0], v_m_s = speed_m_s;
  for (int i = 0; i < history.rows(); ++i) {
    x_m -= v_m_s * dt_s;
    v_m_s -= accel_m_s2 * dt_s;
    history(i, 0) = x_m;
  }
  const int samples = 51;
  HorizonTracking t;
  t.model = mass;
  t.rate_hz = kRate_hz;
  t.start = vi.stateFromVelocity(rest.q, Eigen::VectorXd::Zero(m.nd()), rho0);
  t.reference_inputs = rho0.transpose().replicate(samples, 1);
  t.track_points = {m.pointIndex("mass")};
  t.track_targets_m = massPoints(mass, t.start, t.reference_inputs);
  t.input_scale_m = {1.0, 1.0};
  auto joined = [&](const Eigen::MatrixXd& inputs) {
    Eigen::MatrixXd out(history.rows() + inputs.rows(), m.nk());
    out << history.colwise().reverse(), inputs;
    return out;
  };
  t.rig_history = history;
  const HorizonTrackingResult going_on = trackOverHorizon(t);
  const auto broken = checkInputLimits(m, joined(going_on.inputs), kRate_hz, 1e-6, 2);
  EXPECT_TRUE(broken.empty()) << broken.front().describe();
  EXPECT_NEAR((going_on.inputs(1, 0) - going_on.inputs(0, 0)) / dt_s, speed_m_s,
              m.kinematic[0].max_accel * dt_s);
  t.rig_history.resize(0, 0);
  const HorizonTrackingResult standing = trackOverHorizon(t);
  const auto dead = checkInputLimits(m, joined(standing.inputs), kRate_hz, 1e-6, 2);
  ASSERT_FALSE(dead.empty());
  EXPECT_EQ(dead.front().limit, "acceleration");
  EXPECT_EQ(dead.front().sample, 2);
}

}  // namespace
}  // namespace marionette
