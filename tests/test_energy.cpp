// SPDX-License-Identifier: BSD-3-Clause
// Energy behaviour over long runs: the undamped VI's energy error stays bounded and does not
// drift over 10^5 steps at dt = 10 ms (a symplectic method), while explicit Euler at the same
// dt visibly drifts.  And the baselines agree with the VI where they should: RK4 at a small step
// follows the VI's trajectory on a smooth, constrained motion.
#include <gtest/gtest.h>

#include <cmath>

#include "marionette/models/baseline.hpp"
#include "marionette/models/dynamics.hpp"
#include "marionette/models/integrator.hpp"
#include "marionette/models/model_io.hpp"
#include "marionette/models/rest_pose.hpp"

namespace marionette {
namespace {

struct Swing {
  Eigen::VectorXd q, qdot, rho;
};

// The rest pose of the default inputs plus a velocity along the taut strings' null space, scaled
// to `kinetic_J` of kinetic energy: a swing that keeps every string taut.
Swing swingFromRest(const ModelPtr& m, double kinetic_J) {
  const Eigen::VectorXd rho = m->defaultInputs();
  const RestPose rest = computeRestPose(m, rho);
  EXPECT_TRUE(rest.ok) << rest.message;
  DynamicsData d(*m);
  Eigen::VectorXd qf(m->nq());
  qf << rest.q, rho;
  forwardKinematics(*m, d, qf);
  computeStrings(*m, d, qf, false);
  computeLagrangian(*m, d, qf, Eigen::VectorXd::Zero(m->nd()), LagrangianOrder::MassMatrix);
  std::vector<int> taut;
  for (int j = 0; j < m->nstrings(); ++j)
    if (rest.taut[j]) taut.push_back(j);
  Eigen::MatrixXd A(taut.size(), m->nd());
  for (size_t i = 0; i < taut.size(); ++i) A.row(i) = d.Dh.row(taut[i]).head(m->nd());
  // Project a fixed direction onto null(A).
  Eigen::VectorXd v = Eigen::VectorXd::LinSpaced(m->nd(), 1.0, 2.0);
  if (A.rows() > 0) v -= A.transpose() * (A * A.transpose()).ldlt().solve(A * v);
  const double T = 0.5 * v.dot(d.M * v);
  v *= std::sqrt(kinetic_J / T);
  return {rest.q, v, rho};
}

struct EnergyStats {
  double max_error = 0.0;  // max |E_k - E_0|
  double drift = 0.0;      // mean over the last tenth minus mean over the first tenth
  bool stayed_taut = true;
  bool touched_stop = false;
  int steps = 0;
  bool diverged = false;
};

EnergyStats runVI(const ModelPtr& m, const Swing& s, int steps, double dt) {
  IntegratorOptions opt;
  opt.dt_s = dt;
  opt.damping_scale = 0.0;
  VariationalIntegrator vi(m, opt);
  State x = vi.stateFromVelocity(s.q, s.qdot, s.rho);
  StepReport rep = vi.makeReport();
  std::vector<double> E;
  E.reserve(steps);
  EnergyStats st;
  for (int k = 0; k < steps; ++k) {
    if (vi.step(x, s.rho, x, &rep) != StepStatus::Ok) {
      st.diverged = true;
      break;
    }
    E.push_back(rep.energy_J);
    for (int j = 0; j < m->nstrings(); ++j) st.stayed_taut &= rep.taut[j] != 0 || k == 0;
    st.touched_stop |= rep.stops_active > 0;
  }
  st.steps = static_cast<int>(E.size());
  const int tenth = st.steps / 10;
  double first = 0.0, last = 0.0;
  for (int k = 0; k < st.steps; ++k) {
    st.max_error = std::max(st.max_error, std::abs(E[k] - E[0]));
    if (k < tenth) first += E[k] / tenth;
    if (k >= st.steps - tenth) last += E[k] / tenth;
  }
  st.drift = last - first;
  return st;
}

EnergyStats runExplicit(const ModelPtr& m, const Swing& s, int steps, double dt,
                        ExplicitMethod method) {
  ExplicitIntegrator ei(m, method, dt, 0.0);
  ContinuousState x{s.q, s.qdot, s.rho, Eigen::VectorXd::Zero(m->nk())};
  const double E0 = ei.energy(x);
  EnergyStats st;
  for (int k = 0; k < steps; ++k) {
    if (ei.step(x, s.rho, x) != StepStatus::Ok) {
      st.diverged = true;
      break;
    }
    const double E = ei.energy(x);
    if (!std::isfinite(E)) {
      st.diverged = true;
      break;
    }
    st.max_error = std::max(st.max_error, std::abs(E - E0));
    st.drift = E - E0;
    ++st.steps;
  }
  return st;
}

class EnergyTest : public ::testing::TestWithParam<std::string> {};

TEST_P(EnergyTest, UndampedEnergyBoundedOver1e5StepsWhileEulerDrifts) {
  const ModelPtr m = loadModel(GetParam());
  const double dt = 0.01;
  const double kinetic = 0.005;  // J: a swing of a few degrees
  const Swing s = swingFromRest(m, kinetic);
  const EnergyStats vi = runVI(m, s, 100000, dt);
  ASSERT_FALSE(vi.diverged);
  ASSERT_EQ(vi.steps, 100000);
  EXPECT_TRUE(vi.stayed_taut) << "the test swing must keep the string taut (a catch dissipates)";
  EXPECT_FALSE(vi.touched_stop);
  // Bounded: the midpoint rule's energy error oscillates at O((w dt)^2) of the swing's energy.
  EXPECT_LT(vi.max_error, 0.01 * kinetic);
  // Not drifting: over 1000 s the trend is far below the oscillation.
  EXPECT_LT(std::abs(vi.drift), 1e-3 * kinetic);

  const EnergyStats euler = runExplicit(m, s, 10000, dt, ExplicitMethod::Euler);
  const EnergyStats rk4 = runExplicit(m, s, 10000, dt, ExplicitMethod::RK4);
  std::printf(
      "%s: VI |dE|max %.3g J, drift %.3g J over 1e5 steps; Euler %s |dE|max %.3g J over "
      "%d steps; RK4 |dE|max %.3g J over %d steps\n",
      GetParam().c_str(), vi.max_error, vi.drift, euler.diverged ? "(diverged)" : "",
      euler.max_error, euler.steps, rk4.max_error, rk4.steps);
  RecordProperty("vi_max_energy_error_J", std::to_string(vi.max_error));
  RecordProperty("euler_max_energy_error_J", std::to_string(euler.max_error));
  // Euler at the same dt visibly drifts: a hundred times the VI's whole error, in a tenth of the
  // steps (or it diverges).
  EXPECT_TRUE(euler.diverged || euler.max_error > 100 * vi.max_error);
}

INSTANTIATE_TEST_SUITE_P(Models, EnergyTest, ::testing::Values("planar-arm", "arm3d"),
                         [](const ::testing::TestParamInfo<std::string>& p) {
                           std::string n = p.param;
                           for (char& c : n)
                             if (c == '-') c = '_';
                           return n;
                         });

// Two different discretisations of the same constrained dynamics must agree: RK4 at 0.1 ms and the
// VI at 1 ms follow the suspended mass's swing under a moving robot to within a millimetre, and
// the string tensions to within 1 %.
TEST(Baselines, RK4AndVIAgreeOnASmoothConstrainedMotion) {
  const ModelPtr m = loadModel("suspended-mass");
  const Eigen::VectorXd rho0 = m->defaultInputs();
  const RestPose rest = computeRestPose(m, rho0);
  ASSERT_TRUE(rest.ok);
  auto input = [&](double t) {
    Eigen::VectorXd u = rho0;
    u[0] += 0.1 * std::sin(2.0 * t) * std::sin(2.0 * t);  // the robot moves 10 cm, smoothly
    u[1] += 0.05 * (1 - std::cos(1.5 * t));               // and winds 10 cm out and in
    return u;
  };
  IntegratorOptions opt;
  opt.dt_s = 1e-3;
  VariationalIntegrator vi(m, opt);
  State x = vi.stateFromVelocity(rest.q, Eigen::VectorXd::Zero(2), rho0);
  ExplicitIntegrator rk(m, ExplicitMethod::RK4, 1e-4);
  ContinuousState y{rest.q, Eigen::VectorXd::Zero(2), rho0, Eigen::VectorXd::Zero(2)};
  StepReport rv = vi.makeReport(), rr = vi.makeReport();
  for (int k = 1; k <= 2000; ++k) {  // 2 s
    ASSERT_EQ(vi.step(x, input(k * 1e-3), x, &rv), StepStatus::Ok);
    for (int s = 1; s <= 10; ++s)
      ASSERT_EQ(rk.step(y, input((k - 1) * 1e-3 + s * 1e-4), y, &rr), StepStatus::Ok);
    ASSERT_TRUE(rv.taut[0]);
  }
  EXPECT_LT((x.q - y.q).cwiseAbs().maxCoeff(), 1e-3);
  EXPECT_NEAR(rv.tension_N[0], rr.tension_N[0], 0.01 * rr.tension_N[0]);
  // RK4's constraint drifts (no stabilisation) but stays small at this step; the VI's is exact.
  EXPECT_LT(rv.max_violation_m, 1e-9);
}

}  // namespace
}  // namespace marionette
