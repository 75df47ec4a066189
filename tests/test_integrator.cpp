// SPDX-License-Identifier: BSD-3-Clause
// The midpoint variational integrator: periods against theory, exact constraints, unilateral
// strings (slack, free fall, catch), exact linearization against finite differences, no
// allocation in a step (contacts touching too), and a model from a file behaving exactly like the
// same model in code.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <memory>
#include <new>

#include "marionette/models/contact.hpp"
#include "marionette/models/dynamics.hpp"
#include "marionette/models/integrator.hpp"
#include "marionette/models/model_io.hpp"
#include "marionette/models/rest_pose.hpp"
#include "support/linearization_check.hpp"
#include "support/test_models.hpp"

// Counts every operator new in this test binary (Eigen's own allocations are caught separately
// by EIGEN_RUNTIME_NO_MALLOC).
static std::atomic<long> g_allocations{0};
void* operator new(std::size_t n) {
  ++g_allocations;
  if (void* p = std::malloc(n)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept {
  std::free(p);
}
void operator delete(void* p, std::size_t) noexcept {
  std::free(p);
}

namespace marionette {
namespace {

constexpr double kG = 9.81;

State restState(const ModelPtr& m, const Eigen::VectorXd& rho) {
  const RestPose rest = computeRestPose(m, rho);
  EXPECT_TRUE(rest.ok) << rest.message;
  return State{rest.q, Eigen::VectorXd::Zero(m->nd()), rho};
}

TEST(Integrator, SuspendedMassRestTensionIsItsWeight) {
  const ModelPtr m = loadModel("suspended-mass");
  const RestPose rest = computeRestPose(m, m->defaultInputs());
  ASSERT_TRUE(rest.ok) << rest.message;
  EXPECT_NEAR(rest.q[0], 0.0, 1e-12);
  EXPECT_NEAR(rest.q[1], 0.5, 1e-12);  // 1.0 m track minus 0.5 m string
  EXPECT_NEAR(rest.tension_N[0], 0.1244 * kG, 1e-10);
  // The integrator holds it there with the same tension.
  VariationalIntegrator vi(m);
  State x = restState(m, m->defaultInputs());
  StepReport rep = vi.makeReport();
  for (int k = 0; k < 100; ++k) ASSERT_EQ(vi.step(x, x.rho, x, &rep), StepStatus::Ok);
  EXPECT_NEAR(x.q[1], 0.5, 1e-12);
  EXPECT_NEAR(rep.tension_N[0], 0.1244 * kG, 1e-9);
}

// Small-swing period of the pendulum within 0.5 % of 2 pi sqrt(r / g).
TEST(Integrator, SuspendedMassSmallSwingPeriodMatchesTheory) {
  const ModelPtr m = loadModel("suspended-mass");
  for (double r : {0.3, 0.5, 0.8}) {
    for (double dt : {0.01, 1.0 / 30.0}) {
      SCOPED_TRACE("r=" + std::to_string(r) + " dt=" + std::to_string(dt));
      IntegratorOptions opt;
      opt.dt_s = dt;
      opt.damping_scale = 0.0;
      VariationalIntegrator vi(m, opt);
      Eigen::VectorXd rho(2);
      rho << 0.0, r;
      State rest = restState(m, rho);
      // A 0.02 rad swing: the finite-amplitude correction (1 + theta^2 / 16) is 2.5e-5.
      const double v0 = 0.02 * std::sqrt(kG * r);
      State x = vi.stateFromVelocity(rest.q, Eigen::Vector2d(v0, 0.0), rho);
      std::vector<double> crossings;
      double prev = x.q[0];
      const int steps = static_cast<int>(12.0 * 2 * M_PI * std::sqrt(r / kG) / dt);
      for (int k = 1; k <= steps; ++k) {
        ASSERT_EQ(vi.step(x, rho, x), StepStatus::Ok);
        if (prev < 0.0 && x.q[0] >= 0.0)  // upward zero crossing, interpolated
          crossings.push_back((k - 1 + (-prev) / (x.q[0] - prev)) * dt);
        prev = x.q[0];
      }
      ASSERT_GE(crossings.size(), 8u);
      const double period = (crossings.back() - crossings.front()) / (crossings.size() - 1);
      const double theory = 2 * M_PI * std::sqrt(r / kG);
      EXPECT_NEAR(period / theory, 1.0, 0.005);
      // And much better than that at 100 Hz: the midpoint rule's phase error is (w dt)^2 / 24.
      if (dt == 0.01) {
        EXPECT_NEAR(period / theory, 1.0, 5e-4);
      }
    }
  }
}

// A joint's passive spring (`spring: {stiffness, neutral}`): a rod turning in the horizontal plane
// on a 0.05 N m/rad spring, let go 0.02 rad from its neutral angle, swings about that angle with
// period 2 pi sqrt(I / k) (I = 1e-4 + 0.1 * 0.1^2 kg m^2 about the axis), within the midpoint
// rule's (w dt)^2 / 24, and keeps its energy, the spring's k dq^2 / 2 included.
TEST(Integrator, JointSpringSwingsWithItsPeriodAboutItsNeutralAngle) {
  const ModelPtr m = loadModelString(R"(
name: sprung-rod
dynamic:
  - {name: yaw, damping: 0.0, spring: {stiffness: 0.05, neutral: 0.3}}
kinematic:
  - {name: x, default: 0.0, range: [-1.0, 1.0]}
frames:
  - {name: rod, parent: world, rz: yaw}
  - {name: rig, parent: world, tx: x}
masses:
  - {name: rod, frame: rod, mass: 0.1, com: [0.1, 0, 0], inertia: {ixx: 1e-5, iyy: 1e-4, izz: 1e-4}}
points:
  - {name: tip, frame: rod, at: [0.2, 0, 0]}
strings:
  - {name: tip, puppet: tip, rig: {frame: rig, at: [0, 0, 1.0]}, length: 2.0}
)",
                                     "sprung-rod");
  const double inertia_kgm2 = 1e-4 + 0.1 * 0.1 * 0.1, stiffness = 0.05, dt = 0.01;
  IntegratorOptions opt;
  opt.dt_s = dt;
  VariationalIntegrator vi(m, opt);
  const Eigen::VectorXd rho = m->defaultInputs();
  State x = vi.stateFromVelocity(Eigen::VectorXd::Constant(1, 0.32), Eigen::VectorXd::Zero(1), rho);
  DynamicsData d(*m);
  auto energy_J = [&](const State& s) {
    const Eigen::VectorXd q = m->configuration(s.q, rho);
    forwardKinematics(*m, d, q);
    return potentialEnergy(*m, d, q) + 0.5 * s.p[0] * s.p[0] / inertia_kgm2;
  };
  const double energy0 = energy_J(x);
  // (Let go at rest, the discrete momentum already holds dt / 2 of the spring's torque.)
  EXPECT_NEAR(energy0, 0.5 * stiffness * 0.02 * 0.02, 2e-3 * energy0);
  std::vector<double> crossings;
  double prev = x.q[0] - 0.3, worst_energy = 0.0;
  for (int k = 1; k <= 1000; ++k) {
    ASSERT_EQ(vi.step(x, rho, x), StepStatus::Ok);
    const double now = x.q[0] - 0.3;
    if (prev < 0.0 && now >= 0.0) crossings.push_back((k - 1 + (-prev) / (now - prev)) * dt);
    prev = now;
    worst_energy = std::max(worst_energy, std::abs(energy_J(x) - energy0));
  }
  ASSERT_GE(crossings.size(), 8u);
  const double period = (crossings.back() - crossings.front()) / (crossings.size() - 1);
  const double w = std::sqrt(stiffness / inertia_kgm2);
  EXPECT_NEAR(period / (2 * M_PI / w), 1.0, 5e-4);
  // The midpoint rule's energy oscillates by O((w dt)^2) of it; it does not drift.
  EXPECT_LT(worst_energy, 0.01 * energy0);
}

// Taut strings stay exact (|a - e| = l within 1e-9 m) at every step, at every time step from
// 1 ms to 1/30 s, while the rig moves.
TEST(Integrator, TautStringResidualBelowNanometreAtAllTimeSteps) {
  for (const std::string& name : builtinModelNames()) {
    const ModelPtr m = loadModel(name);
    for (double dt : {0.001, 0.005, 0.01, 1.0 / 30.0}) {
      SCOPED_TRACE(name + " dt=" + std::to_string(dt));
      IntegratorOptions opt;
      opt.dt_s = dt;
      VariationalIntegrator vi(m, opt);
      const Eigen::VectorXd rho0 = m->defaultInputs();
      State x = restState(m, rho0);
      StepReport rep = vi.makeReport();
      int taut_steps = 0;
      const int steps = static_cast<int>(3.0 / dt);
      for (int k = 1; k <= steps; ++k) {
        const double t = k * dt;
        // Every rig input moves: 2-3 cm (lengths, translations) or rad, each at its own pace.
        Eigen::VectorXd rho = rho0;
        for (int i = 0; i < m->nk(); ++i)
          rho[i] += (i % 3 == 2 ? 0.02 : 0.03) * std::sin((1.0 + 0.3 * i) * t + 0.4 * i);
        for (int i = 0; i < m->nk(); ++i)
          rho[i] = std::min(m->kinematic[i].upper, std::max(m->kinematic[i].lower, rho[i]));
        ASSERT_EQ(vi.step(x, rho, x, &rep), StepStatus::Ok) << "step " << k;
        EXPECT_LE(rep.max_violation_m, 1e-9);
        EXPECT_LE(rep.constraint_residual_m, 1e-9);  // over the taut strings
        for (int j = 0; j < m->nstrings(); ++j) taut_steps += rep.taut[j] ? 1 : 0;
        EXPECT_GE(rep.tension_N.minCoeff(), 0.0);
      }
      EXPECT_GT(taut_steps, steps / 2);  // the test exercised taut strings
    }
  }
}

// The returned momentum is the discrete Legendre transform of the step it ends, p_{k+1} =
// D2 L_d(q_k, q_{k+1}) = dt/2 dL/dq + dL/dv at the midpoint, recomputed here from the returned
// q_{k+1} alone.  (A step whose iteration ends on a correction without evaluating after it adds
// that correction's first-order term to p; leaving it out is off by up to 1.5e-6 of the momentum.)
TEST(Integrator, ReturnedMomentumIsTheStepsDiscreteLegendreTransform) {
  for (const std::string& name : builtinModelNames()) {
    SCOPED_TRACE(name);
    const ModelPtr m = loadModel(name);
    IntegratorOptions opt;
    opt.dt_s = 0.01;
    VariationalIntegrator vi(m, opt);
    DynamicsData d(*m);
    const Eigen::VectorXd rho0 = m->defaultInputs();
    State x = restState(m, rho0), next = x;
    double worst = 0.0;
    for (int k = 1; k <= 300; ++k) {
      Eigen::VectorXd rho = rho0;
      for (int i = 0; i < m->nk(); ++i)
        rho[i] = std::min(m->kinematic[i].upper,
                          std::max(m->kinematic[i].lower,
                                   rho0[i] + 0.03 * std::sin((2.0 + 0.3 * i) * k * opt.dt_s)));
      ASSERT_EQ(vi.step(x, rho, next), StepStatus::Ok) << "step " << k;
      Eigen::VectorXd qm(m->nq());
      qm << 0.5 * (x.q + next.q), 0.5 * (x.rho + next.rho);
      forwardKinematics(*m, d, qm);
      computeLagrangian(*m, d, qm, (next.q - x.q) / opt.dt_s, LagrangianOrder::First);
      const Eigen::VectorXd p = 0.5 * opt.dt_s * d.Lq + d.Lv;
      const double scale = std::max(
          {1e-12, d.Lv.cwiseAbs().maxCoeff(), 0.5 * opt.dt_s * d.Lq.cwiseAbs().maxCoeff()});
      worst = std::max(worst, (p - next.p).cwiseAbs().maxCoeff() / scale);
      x = next;
    }
    EXPECT_LE(worst, 1e-9);
  }
}

// The discrete momentum is the momentum at t_k, whatever the step size that made it (the substep
// fallback relies on it): a slack mass thrown up and sideways follows the exact parabola through
// one step of dt or four of dt / 4 from the same state, and a swinging pendulum's two answers agree
// to the midpoint rule's O(dt^2) except along the string.  (p = dL/dv + h/2 dL/dq with the velocity
// M^-1 (p - dt/2 dL/dq), once used for the fallback, is off by 3/8 dt g = 3.7 cm/s here.)
TEST(Integrator, DiscreteMomentumDoesNotDependOnTheStepSize) {
  const ModelPtr m = loadModel("suspended-mass");
  IntegratorOptions coarse;
  coarse.dt_s = 0.01;
  coarse.damping_scale = 0.0;
  IntegratorOptions fine = coarse;
  fine.dt_s = coarse.dt_s / 4;
  VariationalIntegrator vc(m, coarse), vf(m, fine);
  const auto oneAndFour = [&](const State& x0, State& a, State& b) {
    ASSERT_EQ(vc.step(x0, x0.rho, a), StepStatus::Ok);
    b = x0;
    for (int s = 0; s < 4; ++s) ASSERT_EQ(vf.step(b, b.rho, b), StepStatus::Ok);
  };
  // Slack: the string (0.95 m) is far longer than the mass's distance from the robot (0.5 m).
  const double mass_kg = 0.1244, vx = 0.7, vz = 1.3;
  State x0{Eigen::Vector2d(0.0, 0.5), mass_kg * Eigen::Vector2d(vx, vz),
           Eigen::Vector2d(0.0, 0.95)};
  State a, b;
  oneAndFour(x0, a, b);
  const double t = coarse.dt_s;
  EXPECT_NEAR(a.q[0], vx * t, 1e-12);
  EXPECT_NEAR(a.q[1], 0.5 + vz * t - 0.5 * kG * t * t, 1e-12);
  EXPECT_NEAR((a.q - b.q).cwiseAbs().maxCoeff(), 0.0, 1e-12);
  EXPECT_NEAR((a.p - b.p).cwiseAbs().maxCoeff(), 0.0, 1e-12);
  EXPECT_NEAR(a.p[1], mass_kg * (vz - kG * t), 1e-12);
  // Taut: a 0.5 m pendulum swinging through 0.3 rad, moving at 0.6 m/s.
  const Eigen::Vector2d rho(0.0, 0.5);
  const double th = 0.3;
  const Eigen::Vector2d q(0.5 * std::sin(th), 1.0 - 0.5 * std::cos(th));
  const Eigen::Vector2d v = 0.6 * Eigen::Vector2d(std::cos(th), std::sin(th));
  const State xp = vc.stateFromVelocity(q, v, rho);
  oneAndFour(xp, a, b);
  const Eigen::Vector2d across(a.q[1] - 1.0, -a.q[0]);  // perpendicular to the string at q_{k+1}
  // Measured 1.7e-6 m and 5.6e-7 N s; converting p as above would put 1e-4 m and 1.4e-3 N s
  // between them.  Along the string the momenta differ by half a step of tension (dt/2 - h/2) T,
  // which the next step's multiplier absorbs.
  EXPECT_LT((a.q - b.q).cwiseAbs().maxCoeff(), 1e-5);
  EXPECT_LT(std::abs((a.p - b.p).dot(across.normalized())), 1e-5);
}

// A string let out faster than free fall goes slack: the mass falls at g (within 1 %) with zero
// tension; when the string stops, it catches: tension returns and the residual is <= 1e-9 m.
TEST(Integrator, SlackStringGivesFreeFallThenCatches) {
  const ModelPtr m = loadModel("suspended-mass");
  IntegratorOptions opt;
  opt.dt_s = 0.005;
  opt.damping_scale = 0.0;  // the paper's free fall is in vacuum
  VariationalIntegrator vi(m, opt);
  const Eigen::VectorXd rho0 = m->defaultInputs();
  State x = restState(m, rho0);
  StepReport rep = vi.makeReport();
  const double z0 = x.q[1];
  const double payout_speed = 3.0;  // m/s, far faster than g t over the pay-out
  const double payout_time = 0.1;   // s: 0.3 m let out
  std::vector<double> t_fall, z_fall;
  bool caught = false;
  double t_catch = 0.0;
  for (int k = 1; k <= 400; ++k) {
    const double t = k * opt.dt_s;
    Eigen::VectorXd rho = rho0;
    rho[1] += payout_speed * std::min(t, payout_time);
    ASSERT_EQ(vi.step(x, rho, x, &rep), StepStatus::Ok) << "step " << k;
    EXPECT_GE(rep.tension_N[0], 0.0);
    EXPECT_LE(rep.max_violation_m, 1e-9);
    if (!caught && !rep.taut[0]) {
      EXPECT_EQ(rep.tension_N[0], 0.0);
      t_fall.push_back(t);
      z_fall.push_back(x.q[1]);
    } else if (!caught && rep.taut[0] && k > 1) {
      caught = true;
      t_catch = t;
    }
    if (caught) {
      EXPECT_TRUE(rep.taut[0]) << "t=" << t;
      EXPECT_LE(rep.constraint_residual_m, 1e-9);
      EXPECT_GT(rep.tension_N[0], 0.0);
    }
  }
  ASSERT_TRUE(caught);
  // Catch when the mass has fallen the 0.3 m let out: t = sqrt(2 * 0.3 / g) = 0.247 s.
  EXPECT_NEAR(t_catch, std::sqrt(2 * 0.3 / kG), 2 * opt.dt_s);
  // Fit z = z0 - a t^2 / 2 over the fall: a = g within 1 %.
  ASSERT_GT(t_fall.size(), 20u);
  double num = 0.0, den = 0.0;
  for (size_t i = 0; i < t_fall.size(); ++i) {
    const double s = 0.5 * t_fall[i] * t_fall[i];
    num += s * (z0 - z_fall[i]);
    den += s * s;
  }
  EXPECT_NEAR(num / den, kG, 0.01 * kG);
  // After the catch the mass hangs at the new length.
  EXPECT_NEAR(x.q[1], 1.0 - (0.5 + 0.3), 0.05);
}

TEST(Integrator, LinearizationMatchesFiniteDifferences) {
  // Taut: a swinging planar arm with the rig moving.
  {
    const ModelPtr m = loadModel("planar-arm");
    State x = restState(m, m->defaultInputs());
    VariationalIntegrator vi(m);
    Eigen::VectorXd u = x.rho;
    for (int k = 0; k < 20; ++k) {  // get some momentum into it
      u[0] = 0.30 + 0.002 * k;
      ASSERT_EQ(vi.step(x, u, x), StepStatus::Ok);
    }
    u[0] += 0.002;
    u[1] -= 0.001;
    test::checkLinearization(m, x, u, "planar-arm taut");
  }
  // Slack: the suspended mass in free flight (string far from taut).
  {
    const ModelPtr m = loadModel("suspended-mass");
    VariationalIntegrator vi(m);
    Eigen::VectorXd rho(2);
    rho << 0.1, 0.9;
    const State x =
        vi.stateFromVelocity(Eigen::Vector2d(0.05, 0.4), Eigen::Vector2d(0.3, 0.2), rho);
    test::checkLinearization(m, x, Eigen::Vector2d(0.12, 0.9), "suspended-mass slack");
  }
  // Random trees (every joint type, branching, full inertias) in a catch step: each string is
  // wound 1 mm shorter than its current span, so the step pulls it taut with an impulse.
  for (unsigned seed : {3u, 7u, 11u}) {
    const ModelPtr m = test::randomTreeModel(seed, 5, 2);
    std::mt19937 rng(seed);
    VariationalIntegrator vi(m);
    const Eigen::VectorXd q = test::randomVector(rng, m->nd(), 0.5);
    Eigen::VectorXd rho = m->defaultInputs();
    Eigen::VectorXd qfull(m->nq());
    qfull << q, rho;
    DynamicsData d(*m);
    forwardKinematics(*m, d, qfull);
    computeStrings(*m, d, qfull, false);
    for (int j = 0; j < m->nstrings(); ++j)
      rho[m->strings[j].length_variable - m->nd()] = d.distance[j] - 1e-3;
    const State x = vi.stateFromVelocity(q, test::randomVector(rng, m->nd(), 0.3), rho);
    const Eigen::VectorXd u = rho + test::randomVector(rng, m->nk(), 0.002);
    test::checkLinearization(m, x, u, "random tree " + std::to_string(seed));
  }
}

// The big models, with joint stops in contact (the PuppetCopter's arms rest on theirs) and several
// strings taut, after half a second of rig motion.
TEST(Integrator, LinearizationMatchesFiniteDifferencesOnTheBigModels) {
  for (const char* name : {"puppetcopter", "marionette25", "arm3d"}) {
    const ModelPtr m = loadModel(name);
    State x = restState(m, m->defaultInputs());
    VariationalIntegrator vi(m);
    StepReport rep = vi.makeReport();
    Eigen::VectorXd u = x.rho;
    for (int k = 1; k <= 50; ++k) {
      for (int i = 0; i < m->nk(); ++i)
        u[i] = m->kinematic[i].default_value + 1e-3 * std::sin(0.1 * k + i);
      ASSERT_EQ(vi.step(x, u, x, &rep), StepStatus::Ok);
    }
    if (std::string(name) == "puppetcopter") {
      EXPECT_GT(rep.stops_active, 0);
    }
    test::checkLinearization(m, x, u, name);
  }
}

// One integration step allocates nothing: Eigen's allocator is switched off and operator new
// is counted (with a contact touching the floor, and with an arm sliding on its torso).
TEST(Integrator, StepDoesNotAllocate) {
  for (const std::string& name : builtinModelNames()) {
    SCOPED_TRACE(name);
    const ModelPtr m = loadModel(name);
    VariationalIntegrator vi(m);
    State x = restState(m, m->defaultInputs());
    State next = vi.makeState();
    StepReport rep = vi.makeReport();
    Eigen::VectorXd u = x.rho;
    ASSERT_EQ(vi.step(x, u, next, &rep), StepStatus::Ok);  // first use sizes everything
    const long before = g_allocations.load();
    Eigen::internal::set_is_malloc_allowed(false);
    for (int k = 0; k < 50; ++k) {
      u[0] += 1e-4;
      const StepStatus st = vi.step(next, u, next, &rep);
      if (st != StepStatus::Ok) {
        Eigen::internal::set_is_malloc_allowed(true);
        FAIL() << toString(st);
      }
    }
    Eigen::internal::set_is_malloc_allowed(true);
    EXPECT_EQ(g_allocations.load(), before);
  }
  // With a contact touching: a sphere resting on the floor.
  Shape ball;
  ball.type = ShapeType::Sphere;
  ball.radius_m = 0.05;
  const ModelPtr m = test::probeModel(ball);
  auto contacts = std::make_shared<Contacts>();
  contacts->points = contactPoints(*m);
  contacts->surfaces.push_back(floorSurface(*m));
  IntegratorOptions options;
  options.contacts = contacts;
  VariationalIntegrator vi(m, options);
  Eigen::VectorXd q = Eigen::VectorXd::Zero(6);
  q[2] = ball.radius_m;
  State x = vi.stateFromVelocity(q, Eigen::VectorXd::Zero(6), Eigen::VectorXd());
  StepReport rep = vi.makeReport();
  ASSERT_EQ(vi.step(x, x.rho, x, &rep), StepStatus::Ok);
  const long before = g_allocations.load();
  Eigen::internal::set_is_malloc_allowed(false);
  bool ok = true;
  for (int k = 0; k < 50 && ok; ++k) ok = vi.step(x, x.rho, x, &rep) == StepStatus::Ok;
  Eigen::internal::set_is_malloc_allowed(true);
  ASSERT_TRUE(ok);
  EXPECT_EQ(rep.contacts_active, 1);
  EXPECT_EQ(g_allocations.load(), before);

  // With a self-contact touching: an arm sliding along its torso.
  const ModelPtr arm = test::armBesideTorso();
  auto own = std::make_shared<Contacts>();
  own->points = contactPoints(*arm);
  addSelfContacts(*arm, *own);
  options.contacts = own;
  VariationalIntegrator arm_vi(arm, options);
  Eigen::VectorXd q_arm, qdot_arm;
  test::armSwingingForward(q_arm, qdot_arm);
  State y = arm_vi.stateFromVelocity(q_arm, qdot_arm, Eigen::VectorXd());
  StepReport arm_rep = arm_vi.makeReport();
  for (int k = 0; k < 20; ++k) ASSERT_EQ(arm_vi.step(y, y.rho, y, &arm_rep), StepStatus::Ok);
  ASSERT_EQ(arm_rep.contacts_active, 1);
  const long before_arm = g_allocations.load();
  Eigen::internal::set_is_malloc_allowed(false);
  int sliding = 0;
  for (int k = 0; k < 50 && ok; ++k) {
    ok = arm_vi.step(y, y.rho, y, &arm_rep) == StepStatus::Ok;
    sliding += arm_rep.contacts_sliding;
  }
  Eigen::internal::set_is_malloc_allowed(true);
  ASSERT_TRUE(ok);
  EXPECT_GT(sliding, 0);
  EXPECT_EQ(g_allocations.load(), before_arm);
}

// A step is a function of its arguments alone: a planner propagating from a tree node with an
// integrator that last stepped elsewhere must get what a simulation arriving at that node gets,
// bit for bit, or plans drift from their verifying re-simulations.
TEST(Integrator, StepIsAFunctionOfItsArgumentsOnly) {
  const ModelPtr m = loadModel("arm3d");
  const IntegratorOptions opt = [] {
    IntegratorOptions o;
    o.dt_s = 0.02;
    return o;
  }();
  VariationalIntegrator running(m, opt), busy(m, opt);
  State x = restState(m, m->defaultInputs());
  State a = running.makeState(), b = running.makeState(), elsewhere = running.makeState();
  const State other = restState(m, Eigen::Vector3d(-0.1, 0.2, 0.9));
  int active_set_changes = 0;
  for (int k = 0; k < 150; ++k) {
    // The rig swings the arm hard enough to slacken and catch its string.
    Eigen::VectorXd u = m->defaultInputs();
    u[0] += 0.15 * std::sin(6.0 * 0.02 * (k + 1));
    u[2] += 0.08 * std::sin(9.0 * 0.02 * (k + 1));
    StepReport rep = running.makeReport();
    ASSERT_EQ(running.step(x, u, a, &rep), StepStatus::Ok) << k;
    active_set_changes += rep.active_set_changes;
    ASSERT_EQ(VariationalIntegrator(m, opt).step(x, u, b), StepStatus::Ok) << k;
    ASSERT_EQ(busy.step(other, other.rho, elsewhere), StepStatus::Ok);
    State c = busy.makeState();
    ASSERT_EQ(busy.step(x, u, c), StepStatus::Ok) << k;
    for (int i = 0; i < m->nd(); ++i) {
      ASSERT_EQ(a.q[i], b.q[i]) << "step " << k << ", q[" << i << "]";
      ASSERT_EQ(a.p[i], b.p[i]) << "step " << k << ", p[" << i << "]";
      ASSERT_EQ(a.q[i], c.q[i]) << "step " << k << ", q[" << i << "]";
    }
    x = a;
  }
  EXPECT_GT(active_set_changes, 0);  // the string did go slack and taut again
}

// The planar arm built in code is the same model as the file: identical trajectories, bit for
// bit.
TEST(Integrator, ModelFromFileEqualsModelBuiltInCode) {
  ModelBuilder b("planar-arm");
  DynamicVariable t1, t2;
  t1.name = "theta1";
  t2.name = "theta2";
  t1.damping = t2.damping = 0.002;
  KinematicVariable x, L;
  x.name = "x";
  x.default_value = 0.30;
  x.lower = -0.40;
  x.upper = 0.60;
  L.name = "L";
  L.default_value = 0.45;
  L.lower = 0.05;
  L.upper = 1.0;
  x.max_speed = L.max_speed = 0.5;
  x.max_accel = L.max_accel = 4.0;
  b.addDynamic(t1).addDynamic(t2).addKinematic(x).addKinematic(L);
  Eigen::Isometry3d down = Eigen::Isometry3d::Identity(), up = Eigen::Isometry3d::Identity();
  down.translation() = Eigen::Vector3d(0, 0, -0.30);
  up.translation() = Eigen::Vector3d(0, 0, 0.30);
  b.addJointFrame("link1", "world", JointType::Rotate, Eigen::Vector3d::UnitY(), "theta1");
  b.addFixedFrame("elbow", "link1", down);
  b.addJointFrame("link2", "elbow", JointType::Rotate, Eigen::Vector3d::UnitY(), "theta2");
  b.addJointFrame("rig_carriage", "world", JointType::Translate, Eigen::Vector3d::UnitX(), "x");
  b.addFixedFrame("rig", "rig_carriage", up);
  b.addMass("link1", "link1", 0.20, Eigen::Vector3d(0, 0, -0.15),
            Eigen::Vector3d(0.0015, 0.0015, 2.5e-6).asDiagonal());
  b.addMass("link2", "link2", 0.15, Eigen::Vector3d(0, 0, -0.125),
            Eigen::Vector3d(7.8125e-4, 7.8125e-4, 1.875e-6).asDiagonal());
  b.addString("tip", "link2", Eigen::Vector3d(0, 0, -0.25), "rig", Eigen::Vector3d::Zero(), "L",
              0.0);
  const ModelPtr code = b.build();
  const ModelPtr file = loadModel("planar-arm");

  VariationalIntegrator vc(code), vf(file);
  State xc = restState(code, code->defaultInputs());
  State xf = restState(file, file->defaultInputs());
  ASSERT_EQ(xc.q, xf.q);
  for (int k = 1; k <= 300; ++k) {
    Eigen::VectorXd u = xc.rho;
    u[0] = 0.30 + 0.1 * std::sin(0.02 * k);
    ASSERT_EQ(vc.step(xc, u, xc), StepStatus::Ok);
    ASSERT_EQ(vf.step(xf, u, xf), StepStatus::Ok);
  }
  EXPECT_EQ(xc.q, xf.q);
  EXPECT_EQ(xc.p, xf.p);
}

}  // namespace
}  // namespace marionette
