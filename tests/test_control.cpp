// SPDX-License-Identifier: BSD-3-Clause
// Estimation and control on the variational integrator: the EKF against the Kalman filter on a
// linear system (and a late measurement fused at its own tick), the Euler baseline likewise,
// the tracking LQR's gains against a Riccati recursion on finite-difference linearizations and
// against the cost they minimize, and a push on the suspended mass rejected.
#include <gtest/gtest.h>

#include <Eigen/Cholesky>
#include <cmath>
#include <functional>
#include <random>
#include <utility>
#include <vector>

#include "marionette/control/estimator.hpp"
#include "marionette/control/measurement.hpp"
#include "marionette/control/tracking_lqr.hpp"
#include "marionette/models/field_error.hpp"
#include "marionette/models/model_io.hpp"
#include "marionette/models/rest_pose.hpp"

namespace marionette::control {
namespace {

constexpr double kG = 9.81;
constexpr double kMass = 0.5, kDamping = 0.3, kDt = 0.02;

// A point mass on two slides (x, z) with viscous damping, under gravity, no strings: the VI's
// one-step map is affine in (q, p), so the EKF must be the Kalman filter.  The rig (one input)
// moves a carriage that touches nothing.
ModelPtr slidingMass() {
  ModelBuilder b("sliding-mass");
  for (const char* name : {"x", "z"}) {
    DynamicVariable v;
    v.name = name;
    v.damping = kDamping;
    b.addDynamic(v);
  }
  KinematicVariable r;
  r.name = "carriage";
  b.addKinematic(r);
  b.addJointFrame("slide_x", "world", JointType::Translate, Eigen::Vector3d::UnitX(), "x");
  b.addJointFrame("body", "slide_x", JointType::Translate, Eigen::Vector3d::UnitZ(), "z");
  b.addJointFrame("carriage", "world", JointType::Translate, Eigen::Vector3d::UnitY(), "carriage");
  b.addMass("body", "body", kMass, Eigen::Vector3d::Zero(), 1e-4 * Eigen::Matrix3d::Identity());
  b.addPoint("marker", "body", Eigen::Vector3d::Zero());
  return b.build();
}

// The textbook Kalman filter on z = (x, z, p_x, p_z), written from the midpoint rule by hand:
//   m (q' - q) / dt + c (q' - q) = p - dt m g e_z / 2,   p' = m (q' - q) / dt - dt m g e_z / 2.
struct KalmanFilter {
  Eigen::Matrix4d A = Eigen::Matrix4d::Identity();
  Eigen::Vector4d affine = Eigen::Vector4d::Zero();
  Eigen::Matrix4d Q = Eigen::Matrix4d::Zero();
  Eigen::Matrix<double, 4, 4> H = Eigen::Matrix4d::Zero();  // marker x, y, z; encoder x
  Eigen::Vector4d R;
  Eigen::Vector4d x;
  Eigen::Matrix4d P;

  KalmanFilter(double sq, double sv, double sm, double se) {
    const double a = kMass / kDt + kDamping;
    const Eigen::Vector2d gz(0, -kDt * kMass * kG / 2);  // the gravity term of both equations
    A.block<2, 2>(0, 2) = Eigen::Matrix2d::Identity() / a;
    A.block<2, 2>(2, 2) = Eigen::Matrix2d::Identity() * (kMass / kDt) / a;
    affine.head<2>() = gz / a;
    affine.tail<2>() = (kMass / kDt) * gz / a + gz;
    Q.topLeftCorner<2, 2>().diagonal().setConstant(sq * sq);
    Q.bottomRightCorner<2, 2>().diagonal().setConstant(sv * sv * kMass * kMass);  // p = m v
    H(0, 0) = 1;  // marker x
    H(2, 1) = 1;  // marker z (its y is 0 whatever the state)
    H(3, 0) = 1;  // encoder x
    R << sm * sm, sm * sm, sm * sm, se * se;
  }
  void predict() {
    x = A * x + affine;
    P = A * P * A.transpose() + Q;
  }
  void update(const Eigen::Vector4d& y) {
    const Eigen::Matrix4d S = H * P * H.transpose() + Eigen::Matrix4d(R.asDiagonal());
    const Eigen::Matrix4d K = P * H.transpose() * S.inverse();
    x += K * (y - H * x);
    P = (Eigen::Matrix4d::Identity() - K * H) * P;
  }
};

// The Kalman filter started where Estimator::reset(q0, v0) starts: p0 = m v0 + dt/2 dL/dq =
// m v0 - dt/2 m g e_z, covariance diag(0.1^2, (0.2 m)^2) (linearOptions' initial uncertainty).
KalmanFilter startedKalmanFilter(double sq, double sv, const Eigen::Vector2d& q0,
                                 const Eigen::Vector2d& v0) {
  KalmanFilter kf(sq, sv, 0.004, 0.01);
  kf.x << q0, kMass * v0 + Eigen::Vector2d(0, -0.5 * kDt * kMass * kG);
  kf.P.setZero();
  kf.P.topLeftCorner<2, 2>().diagonal().setConstant(0.01);
  kf.P.bottomRightCorner<2, 2>().diagonal().setConstant(0.04 * kMass * kMass);
  return kf;
}

EstimatorOptions linearOptions(ProcessModel process) {
  EstimatorOptions o;
  o.process = process;
  o.dt_s = kDt;
  o.position_std = 1e-3;
  o.velocity_std = 0.05;
  o.initial_position_std = 0.1;
  o.initial_velocity_std = 0.2;
  return o;
}

std::shared_ptr<const MeasurementModel> markerAndEncoder(const ModelPtr& m) {
  MeasurementSpec spec;
  spec.markers = {"marker"};
  spec.encoders = {"x"};
  spec.marker_noise_m = 0.004;
  spec.encoder_noise = 0.01;
  return std::make_shared<MeasurementModel>(m, spec);
}

// The VI-EKF and the hand-written Kalman filter, both started at (q0, v0) with the rig at 0.
struct LinearFilters {
  ModelPtr m = slidingMass();
  EstimatorOptions o = linearOptions(ProcessModel::VariationalIntegrator);
  Estimator ekf{m, markerAndEncoder(m), o};
  KalmanFilter kf;
  LinearFilters(const Eigen::Vector2d& q0, const Eigen::Vector2d& v0)
      : kf(startedKalmanFilter(o.position_std, o.velocity_std, q0, v0)) {
    ekf.reset(q0, v0, Eigen::VectorXd::Zero(1));
  }
};

TEST(Estimator, OnALinearSystemTheVariationalEkfIsTheKalmanFilter) {
  LinearFilters f(Eigen::Vector2d(0.1, 0.3), Eigen::Vector2d(0.5, 1.0));
  Estimator& ekf = f.ekf;
  KalmanFilter& kf = f.kf;
  EXPECT_LT((ekf.covariance() - kf.P).cwiseAbs().maxCoeff(), 1e-15);

  std::mt19937 rng(7);
  std::normal_distribution<double> noise(0.0, 0.02);
  Eigen::VectorXd u(1);
  for (int k = 1; k <= 60; ++k) {
    u[0] = 0.01 * k;  // the rig moves; nothing here depends on it
    ASSERT_EQ(ekf.predict(u), StepStatus::Ok);
    kf.predict();
    if (k % 3 != 0) {  // a measurement two ticks in three
      Eigen::Vector4d y(std::sin(0.1 * k) + noise(rng), noise(rng), 0.3 + noise(rng),
                        std::sin(0.1 * k) + noise(rng));
      ASSERT_EQ(ekf.update(k, y), Estimator::Fusion::Used);
      kf.update(y);
    }
    const State& x = ekf.viState();
    Eigen::Vector4d z;
    z << x.q, x.p;
    ASSERT_LT((z - kf.x).cwiseAbs().maxCoeff(), 1e-10) << "tick " << k;
    ASSERT_LT((ekf.covariance() - kf.P).cwiseAbs().maxCoeff(), 1e-10) << "tick " << k;
  }
  EXPECT_EQ(ekf.counts().updates, 40);
}

TEST(Estimator, ALateMeasurementIsFusedAtItsOwnTickAndPredictedAgainToNow) {
  LinearFilters f(Eigen::Vector2d(0, 0.3), Eigen::Vector2d(0.2, 0));
  Estimator& ekf = f.ekf;
  KalmanFilter& kf = f.kf;
  const Eigen::VectorXd u = Eigen::VectorXd::Zero(1);
  // A measurement stamped before the reset (a rig whose clock started earlier): nothing to fuse
  // it into, and the estimate is untouched (it was fused into an empty history slot before).
  const Eigen::Vector4d early(0.5, 0.5, 0.5, 0.5);
  EXPECT_EQ(ekf.update(-1, early), Estimator::Fusion::TooOld);
  EXPECT_EQ(ekf.counts().too_old, 1);
  EXPECT_EQ(ekf.counts().updates, 0);
  // Ticks 1..3 predicted; a measurement of tick 1 arrives after tick 3.
  const Eigen::Vector4d y1(0.01, 0.0, 0.29, 0.012);
  kf.predict();
  kf.update(y1);
  kf.predict();
  kf.predict();
  for (int k = 0; k < 3; ++k) ekf.predict(u);
  EXPECT_EQ(ekf.update(1, y1), Estimator::Fusion::Used);
  EXPECT_EQ(ekf.counts().repredictions, 2);
  Eigen::Vector4d z;
  z << ekf.viState().q, ekf.viState().p;
  EXPECT_LT((z - kf.x).cwiseAbs().maxCoeff(), 1e-12);
  EXPECT_LT((ekf.covariance() - kf.P).cwiseAbs().maxCoeff(), 1e-12);
  // One older than the last fused, or beyond the history, or from the future: not used.
  EXPECT_EQ(ekf.update(0, y1), Estimator::Fusion::TooOld);
  EXPECT_EQ(ekf.update(4, y1), Estimator::Fusion::TooOld);
  EXPECT_EQ(ekf.counts().too_old, 3);
}

TEST(Estimator, OnALinearSystemTheEulerEkfIsTheKalmanFilterOfEulersMap) {
  const ModelPtr m = slidingMass();
  const EstimatorOptions o = linearOptions(ProcessModel::Euler);
  Estimator ekf(m, markerAndEncoder(m), o);
  ekf.reset(Eigen::Vector2d(0, 0.3), Eigen::Vector2d(0.2, 0.1), Eigen::VectorXd::Zero(1));
  // Explicit Euler on (q, qdot): q' = q + dt qdot, qdot' = qdot + dt (-g e_z - c/m qdot).
  KalmanFilter kf(o.position_std, o.velocity_std, 0.004, 0.01);
  kf.A.setIdentity();
  kf.A.block<2, 2>(0, 2) = kDt * Eigen::Matrix2d::Identity();
  kf.A.block<2, 2>(2, 2) *= 1 - kDt * kDamping / kMass;
  kf.affine << 0, 0, 0, -kDt * kG;
  kf.Q.bottomRightCorner<2, 2>().diagonal().setConstant(o.velocity_std * o.velocity_std);
  kf.x << 0, 0.3, 0.2, 0.1;
  kf.P.setZero();
  kf.P.topLeftCorner<2, 2>().diagonal().setConstant(0.01);
  kf.P.bottomRightCorner<2, 2>().diagonal().setConstant(0.04);
  EXPECT_LT((ekf.covariance() - kf.P).cwiseAbs().maxCoeff(), 1e-15);
  for (int k = 1; k <= 30; ++k) {
    ASSERT_EQ(ekf.predict(Eigen::VectorXd::Zero(1)), StepStatus::Ok);
    kf.predict();
    const Eigen::Vector4d y(0.01 * k, 0.0, 0.3 - 0.001 * k, 0.01 * k);
    ekf.update(k, y);
    kf.update(y);
    // The Jacobian is taken by central differences: exact on a linear map but for rounding.
    ASSERT_LT((ekf.q() - kf.x.head<2>()).cwiseAbs().maxCoeff(), 1e-8) << "tick " << k;
    ASSERT_LT((ekf.covariance() - kf.P).cwiseAbs().maxCoeff(), 1e-8) << "tick " << k;
  }
}

TEST(Estimator, BadOptionsNameTheField) {
  const ModelPtr m = slidingMass();
  EstimatorOptions o;
  o.dt_s = 0;
  try {
    Estimator e(m, markerAndEncoder(m), o);
    FAIL() << "accepted dt_s = 0";
  } catch (const FieldError& e) {
    EXPECT_EQ(e.field(), "dt_s");
  }
  // Noise beyond its bounds overflows the covariance (1e300 made it NaN in one step).
  for (const auto& [field, set] : std::vector<std::pair<std::string, std::function<void()>>>{
           {"position_std", [&] { o.position_std = 1e300; }},
           {"velocity_std", [&] { o.velocity_std = 1e3; }},
           {"initial_position_std", [&] { o.initial_position_std = 2; }}}) {
    o = EstimatorOptions{};
    set();
    try {
      Estimator e(m, markerAndEncoder(m), o);
      FAIL() << "accepted " << field;
    } catch (const FieldError& e) {
      EXPECT_EQ(e.field(), field);
    }
  }
  MeasurementSpec spec;
  spec.markers = {"marker", "elbow"};
  try {
    MeasurementModel mm(m, spec);
    FAIL() << "accepted an unknown point";
  } catch (const FieldError& e) {
    EXPECT_EQ(e.field(), "markers[1]");
  }
  spec.markers = {};
  spec.encoders = {"carriage"};
  EXPECT_THROW(MeasurementModel(m, spec), FieldError);  // a rig input is not a joint
  EXPECT_THROW(parseProcessModel("ukf"), FieldError);
}

// The measurement Jacobian against central differences of h on a model with rotations.
TEST(Measurement, PointJacobiansMatchFiniteDifferences) {
  const ModelPtr m = loadModel("puppetcopter");
  MeasurementSpec spec = MeasurementSpec::allPoints(*m, 0.002);
  spec.encoders = {m->dynamic[0].name, m->dynamic[5].name};
  const MeasurementModel mm(m, spec);
  EXPECT_EQ(mm.size(), 3 * static_cast<int>(m->points.size()) + 2);
  DynamicsData d(*m);
  std::mt19937 rng(3);
  std::uniform_real_distribution<double> u(-0.5, 0.5);
  Eigen::VectorXd q = m->configuration(m->initialDynamic(), m->defaultInputs());
  for (int i = 0; i < m->nd(); ++i) q[i] += u(rng);
  Eigen::VectorXd y, yp, ym;
  Eigen::MatrixXd H;
  mm.evaluate(d, q, y, &H);
  for (int i = 0; i < m->nd(); ++i) {
    Eigen::VectorXd qp = q, qm = q;
    qp[i] += 1e-6;
    qm[i] -= 1e-6;
    mm.evaluate(d, qp, yp);
    mm.evaluate(d, qm, ym);
    EXPECT_LT(((yp - ym) / 2e-6 - H.col(i)).cwiseAbs().maxCoeff(), 1e-7) << m->dynamic[i].name;
  }
  // Markers are in stage coordinates: the model hangs 1.2 m up.
  const int head = m->pointIndex("head_top");
  forwardKinematics(*m, d, q);
  const Eigen::Vector3d world = pointPosition(d, m->points[head].frame, m->points[head].position_m);
  EXPECT_LT((y.segment<3>(3 * head) - (world + Eigen::Vector3d(0, 0, 1.2))).norm(), 1e-12);
}

// ---- The tracking LQR ------------------------------------------------------------------------

// The suspended mass swung by its robot: inputs for 1 s at 30 Hz from rest.
struct SwingPlan {
  ModelPtr model = loadModel("suspended-mass");
  IntegratorOptions options;
  Eigen::MatrixXd inputs;
  State start;
  explicit SwingPlan(double rate_hz = 30) {
    options.dt_s = 1.0 / rate_hz;
    const int n = static_cast<int>(std::lround(rate_hz)) + 1;  // 1 s
    inputs.resize(n, 2);
    for (int k = 0; k < n; ++k) {
      const double t = k * options.dt_s;
      inputs(k, 0) = 0.1 * (1 - std::cos(M_PI * t));
      inputs(k, 1) = 0.5 - 0.05 * std::sin(M_PI * t);
    }
    const RestPose rest = computeRestPose(model, inputs.row(0).transpose());
    VariationalIntegrator vi(model, options);
    start = vi.stateFromVelocity(rest.q, Eigen::VectorXd::Zero(2), inputs.row(0).transpose());
  }
};

Eigen::VectorXd flatten(const State& x) {
  Eigen::VectorXd v(x.q.size() + x.p.size() + x.rho.size());
  v << x.q, x.p, x.rho;
  return v;
}

TEST(TrackingLqr, GainsEqualTheRiccatiRecursionOnFiniteDifferenceLinearizations) {
  const SwingPlan plan;
  const TrajectoryLinearization lin =
      linearizeTrajectory(plan.model, plan.inputs, plan.start, plan.options);
  ASSERT_EQ(lin.A.size(), 30u);
  // A_k, B_k by central differences of the step on (q, p, rho) and u.
  IntegratorOptions tight = plan.options;  // converged far below the differences' step
  tight.residual_rel_tol = 1e-14;
  tight.constraint_tol_m = 1e-14;
  VariationalIntegrator vi(plan.model, tight);
  std::vector<Eigen::MatrixXd> A_fd, B_fd;
  const int nd = 2, nk = 2, nx = 6;
  for (std::size_t k = 0; k < lin.A.size(); ++k) {
    const Eigen::VectorXd u = plan.inputs.row(k + 1).transpose();
    Eigen::MatrixXd A(nx, nx), B(nx, nk);
    for (int i = 0; i < nx + nk; ++i) {
      const double h = 1e-5;
      State xp = lin.x[k], xm = lin.x[k];
      Eigen::VectorXd up = u, um = u;
      auto bump = [&](State& s, Eigen::VectorXd& uu, double d) {
        if (i < nd) s.q[i] += d;
        else if (i < 2 * nd) s.p[i - nd] += d;
        else if (i < nx) s.rho[i - 2 * nd] += d;
        else uu[i - nx] += d;
      };
      bump(xp, up, h);
      bump(xm, um, -h);
      State np = vi.makeState(), nm = vi.makeState();
      ASSERT_EQ(vi.step(xp, up, np), StepStatus::Ok);
      ASSERT_EQ(vi.step(xm, um, nm), StepStatus::Ok);
      const Eigen::VectorXd col = (flatten(np) - flatten(nm)) / (2 * h);
      if (i < nx) A.col(i) = col;
      else B.col(i - nx) = col;
    }
    ASSERT_LT((A - lin.A[k]).cwiseAbs().maxCoeff(), 1e-5 * (1 + lin.A[k].cwiseAbs().maxCoeff()));
    A_fd.push_back(A);
    B_fd.push_back(B);
  }
  const LqrWeights w;
  const TrackingGains gains = computeTrackingGains(plan.model, lin, w);
  const double dt = plan.options.dt_s;
  std::vector<Eigen::MatrixXd> Q;
  for (std::size_t k = 0; k < lin.A.size(); ++k) {
    Q.push_back(stateCost(*plan.model, lin.x[k], w, dt));
    gainDynamics(Eigen::MatrixXd(A_fd[k]), Eigen::MatrixXd(B_fd[k]), nk, A_fd[k], B_fd[k]);
  }
  const Eigen::MatrixXd QN = w.terminal * stateCost(*plan.model, lin.x.back(), w, dt);
  const std::vector<Eigen::MatrixXd> K_fd =
      riccatiGains(A_fd, B_fd, Q, inputCost(*plan.model, w, dt), QN, nullptr,
                   crossCost(*plan.model, w, dt));
  ASSERT_EQ(gains.K[0].cols(), nx + nk);
  for (std::size_t k = 0; k < K_fd.size(); ++k) {
    const double scale = 1 + gains.K[k].cwiseAbs().maxCoeff();
    EXPECT_LT((gains.K[k] - K_fd[k]).cwiseAbs().maxCoeff(), 1e-4 * scale) << "step " << k;
  }
  // The gains act: the position error feeds the robot's input.
  EXPECT_GT(gains.K[0].cwiseAbs().maxCoeff(), 0.1);
}

// The quadratic form is the cost the header writes out term by term: position, velocity
// through the mass matrix, rig, correction, its rate and its acceleration.
TEST(TrackingLqr, TheQuadraticCostIsEachTermOfTheWeights) {
  const SwingPlan plan;
  const Model& m = *plan.model;
  LqrWeights w;
  w.position = 3e3, w.velocity = 7, w.rig = 50, w.correction = 20;
  w.correction_rate = 4, w.correction_accel = 0.3;
  const double dt = plan.options.dt_s;
  const Eigen::MatrixXd Q = stateCost(m, plan.start, w, dt), R = inputCost(m, w, dt),
                        N = crossCost(m, w, dt);
  ASSERT_EQ(Q.rows(), 8);
  ASSERT_EQ(N.rows(), 8);
  DynamicsData d(m);
  const Eigen::VectorXd q = m.configuration(plan.start.q, plan.start.rho);
  forwardKinematics(m, d, q);
  computeLagrangian(m, d, q, Eigen::VectorXd::Zero(2), LagrangianOrder::MassMatrix);
  std::mt19937 rng(11);
  std::normal_distribution<double> g(0, 0.01);
  for (int trial = 0; trial < 4; ++trial) {
    Eigen::VectorXd s(8), u(2);
    for (int i = 0; i < 8; ++i) s[i] = g(rng);
    for (int i = 0; i < 2; ++i) u[i] = g(rng);
    const Eigen::VectorXd dq = s.head(2), dp = s.segment(2, 2), drho = s.segment(4, 2),
                          prev = s.tail(2);
    const double direct = w.position * dq.squaredNorm() +
                          w.velocity * d.M.llt().solve(dp).squaredNorm() +
                          w.rig * drho.squaredNorm() + w.correction * u.squaredNorm() +
                          w.correction_rate * ((u - drho) / dt).squaredNorm() +
                          w.correction_accel * ((u - 2 * drho + prev) / (dt * dt)).squaredNorm();
    const double form = s.dot(Q * s) + u.dot(R * u) + 2 * s.dot(N * u);
    EXPECT_NEAR(form, direct, 1e-10 * direct) << "trial " << trial;
  }
  // The gains' state carries the rig a step later into its previous slot.
  Eigen::MatrixXd A = Eigen::MatrixXd::Random(6, 6), B = Eigen::MatrixXd::Random(6, 2), As, Bs;
  gainDynamics(A, B, 2, As, Bs);
  Eigen::VectorXd s = Eigen::VectorXd::Random(8), u = Eigen::VectorXd::Random(2);
  const Eigen::VectorXd next = As * s + Bs * u;
  EXPECT_LT((next.head(6) - (A * s.head(6) + B * u)).norm(), 1e-14);
  EXPECT_EQ(next.tail(2), s.segment(4, 2));
}

// The gains minimize the quadratic cost of the linear system: x_0^T P_0 x_0 is the closed loop's
// cost, and the cost is stationary in every gain (a finite-difference check of its gradient).
TEST(TrackingLqr, GainsMinimizeTheQuadraticCostAndTheValueIsItsCost) {
  const SwingPlan plan;
  const TrajectoryLinearization lin =
      linearizeTrajectory(plan.model, plan.inputs, plan.start, plan.options);
  const LqrWeights w;
  const double dt = plan.options.dt_s;
  std::vector<Eigen::MatrixXd> Q, A(lin.A.size()), B(lin.A.size());
  for (std::size_t k = 0; k < lin.A.size(); ++k) {
    Q.push_back(stateCost(*plan.model, lin.x[k], w, dt));
    gainDynamics(lin.A[k], lin.B[k], 2, A[k], B[k]);
  }
  const Eigen::MatrixXd R = inputCost(*plan.model, w, dt);
  const Eigen::MatrixXd N = crossCost(*plan.model, w, dt);
  const Eigen::MatrixXd QN = w.terminal * stateCost(*plan.model, lin.x.back(), w, dt);
  std::vector<Eigen::MatrixXd> P;
  const std::vector<Eigen::MatrixXd> K = riccatiGains(A, B, Q, R, QN, &P, N);
  auto cost = [&](const std::vector<Eigen::MatrixXd>& gains, const Eigen::VectorXd& x0) {
    Eigen::VectorXd x = x0;
    double J = 0;
    for (std::size_t k = 0; k < gains.size(); ++k) {
      const Eigen::VectorXd u = -gains[k] * x;
      J += x.dot(Q[k] * x) + u.dot(R * u) + 2 * x.dot(N * u);
      x = A[k] * x + B[k] * u;
    }
    return J + x.dot(QN * x);
  };
  Eigen::VectorXd x0(8);
  // The mass off the plan, moving; the rig off, and off differently a step earlier.
  x0 << 0.02, -0.01, 0.003, 0.0, 0.01, 0.0, 0.004, -0.002;
  const double J = cost(K, x0);
  EXPECT_NEAR(J, x0.dot(P[0] * x0), 1e-9 * J);
  std::mt19937 rng(5);
  std::normal_distribution<double> g(0, 1);
  for (int trial = 0; trial < 5; ++trial) {
    const std::size_t k = static_cast<std::size_t>(trial * 6);
    Eigen::MatrixXd D(2, 8);
    for (int i = 0; i < D.size(); ++i) D.data()[i] = g(rng);
    D *= 1e-3 * K[k].norm() / D.norm();
    std::vector<Eigen::MatrixXd> Kp = K, Km = K;
    Kp[k] += D;
    Km[k] -= D;
    const double Jp = cost(Kp, x0), Jm = cost(Km, x0);
    EXPECT_LT(std::abs(Jp - Jm) / 2, 1e-6 * J) << "gradient at step " << k;  // stationary
    EXPECT_GT(Jp + Jm - 2 * J, 0.0) << "a minimum at step " << k;
  }
}

// The weights' bounds: outside them a weight is refused by name (1e308 everywhere made half of a
// plan's gains NaN); at their extremes, at 30 Hz and at 1 kHz, every gain is finite.
TEST(TrackingLqr, WeightsOutsideTheirBoundsAreRefusedAndAtTheBoundsTheGainsAreFinite) {
  LqrWeights huge;
  for (auto& [name, value] : weightFields(huge)) *value = 1e308;
  try {
    checkLqrWeights(huge);
    FAIL() << "accepted weights of 1e308";
  } catch (const FieldError& e) {
    EXPECT_EQ(e.field(), "position");
  }
  LqrWeights none;
  none.correction = 0;
  EXPECT_THROW(checkLqrWeights(none), FieldError);
  for (const double rate_hz : {30.0, 1000.0}) {
    const SwingPlan plan(rate_hz);
    const TrajectoryLinearization lin =
        linearizeTrajectory(plan.model, plan.inputs, plan.start, plan.options);
    LqrWeights top, lopsided;
    for (auto& [name, value] : weightFields(top)) *value = kMaxLqrWeight;
    for (auto& [name, value] : weightFields(lopsided)) *value = 0;
    lopsided.position = lopsided.terminal = kMaxLqrWeight;
    for (LqrWeights w : {top, lopsided}) {
      for (const double correction : {kMinCorrectionWeight, kMaxLqrWeight}) {
        w.correction = correction;
        const TrackingGains g = computeTrackingGains(plan.model, lin, w);
        ASSERT_EQ(g.K.size(), lin.A.size());
        for (const Eigen::MatrixXd& K : g.K)
          ASSERT_TRUE(K.allFinite()) << rate_hz << " Hz, correction " << correction;
      }
    }
  }
}

// A push on the swinging mass: open loop it swings on; the LQR's feedback on the true state
// brings it back onto the plan.
TEST(TrackingLqr, APushOnTheSuspendedMassIsRejected) {
  SwingPlan plan;
  // 3 s: the plan's swing, then held.
  const Eigen::Index n = plan.inputs.rows();
  plan.inputs.conservativeResize(91, Eigen::NoChange);
  for (Eigen::Index k = n; k < 91; ++k) plan.inputs.row(k) = plan.inputs.row(n - 1);
  const TrajectoryLinearization lin =
      linearizeTrajectory(plan.model, plan.inputs, plan.start, plan.options);
  const TrackingGains gains = computeTrackingGains(plan.model, lin, LqrWeights{});
  VariationalIntegrator vi(plan.model, plan.options);
  DynamicsData d(*plan.model);
  double end_error[3], max_correction = 0.0;
  // closed = 2: no weight on the correction's acceleration; its setpoints jerk harder.
  LqrWeights no_accel;
  no_accel.correction_accel = 0;
  const TrackingGains jerky = computeTrackingGains(plan.model, lin, no_accel);
  double max_accel[3] = {0, 0, 0};
  for (int closed = 0; closed < 3; ++closed) {
    Eigen::VectorXd sent[2] = {plan.inputs.row(0).transpose(), plan.inputs.row(0).transpose()};
    State x = plan.start, next = x;
    Eigen::VectorXd previous_rig = Eigen::VectorXd::Zero(2);
    for (Eigen::Index k = 1; k < plan.inputs.rows(); ++k) {
      if (k == 10) x.p[0] += 0.1244 * 0.3;  // 0.3 m/s sideways
      Eigen::VectorXd u = plan.inputs.row(k).transpose();
      if (closed) {
        const Eigen::VectorXd dx =
            feasibleDeviation(*plan.model, d, x, lin.x[k - 1], lin.taut[k - 1]);
        u += (closed == 1 ? gains : jerky)
                 .correction(static_cast<std::size_t>(k - 1), dx, previous_rig);
        previous_rig = dx.tail(2);
        if (closed == 1)
          max_correction = std::max(max_correction, (u - plan.inputs.row(k).transpose()).norm());
      }
      // The sent setpoints' second difference less the plan's: the correction's acceleration.
      if (k >= 2) {
        const Eigen::VectorXd plan_accel =
            plan.inputs.row(k) - 2 * plan.inputs.row(k - 1) + plan.inputs.row(k - 2);
        const double dt2 = plan.options.dt_s * plan.options.dt_s;
        max_accel[closed] =
            std::max(max_accel[closed], ((u - 2 * sent[1] + sent[0]) - plan_accel).norm() / dt2);
      }
      sent[0] = sent[1];
      sent[1] = u;
      ASSERT_EQ(vi.step(x, u, next), StepStatus::Ok);
      std::swap(x, next);
    }
    end_error[closed] = (x.q - lin.x.back().q).norm();
  }
  EXPECT_GT(end_error[0], 0.02);                  // open loop: still swinging
  EXPECT_LT(end_error[1], 0.05 * end_error[0]);   // closed loop: back on the plan
  EXPECT_LT(max_correction, 0.1);  // the rate weight keeps the robot from jumping
  // The acceleration weight smooths the corrections (the push is in the open-loop rows too).
  EXPECT_LT(max_accel[1], 0.5 * max_accel[2])
      << "with the acceleration weight " << max_accel[1] << " m/s^2, without " << max_accel[2];
}

}  // namespace
}  // namespace marionette::control
