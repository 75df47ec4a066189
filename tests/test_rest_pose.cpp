// SPDX-License-Identifier: BSD-3-Clause
// Rest poses: every built-in model has one at its default inputs; it is a true equilibrium
// (checked independently by force and moment balance where the puppet is a free body hung from
// its strings); it is stable (the integrator started there stays); a joint's own spring balances
// gravity where statics says; the PuppetCopter hangs as
// Egger, BSc thesis, ETH Zurich 2013 describes; and a puppet over a raised floor stands on it.
#include <gtest/gtest.h>

#include <cmath>

#include "marionette/models/contact.hpp"
#include "marionette/models/dynamics.hpp"
#include "marionette/models/integrator.hpp"
#include "marionette/models/model_io.hpp"
#include "marionette/models/rest_pose.hpp"
#include "support/test_models.hpp"

namespace marionette {
namespace {

// The rest pose at the default inputs, with the kinematics and strings evaluated there.
void restWithKinematics(const ModelPtr& m, RestPose& rest, DynamicsData& d) {
  const Eigen::VectorXd rho = m->defaultInputs();
  rest = computeRestPose(m, rho);
  ASSERT_TRUE(rest.ok) << rest.message;
  const Eigen::VectorXd q = m->configuration(rest.q, rho);
  forwardKinematics(*m, d, q);
  computeStrings(*m, d, q, false);
}

TEST(RestPose, EveryBuiltinHasAStableRestPose) {
  for (const std::string& name : builtinModelNames()) {
    SCOPED_TRACE(name);
    const ModelPtr m = loadModel(name);
    const RestPose rest = computeRestPose(m, m->defaultInputs());
    ASSERT_TRUE(rest.ok) << rest.message;
    EXPECT_LE(rest.max_violation_m, 1e-12);
    EXPECT_GE(rest.tension_N.minCoeff(), 0.0);
    int taut = 0;
    for (char t : rest.taut) taut += t;
    EXPECT_GT(taut, 0) << "a puppet at rest hangs on at least one string";
    // Stable and static: one second of the (damped) integrator from there moves it < 1 micron.
    VariationalIntegrator vi(m);
    State x = vi.stateFromVelocity(rest.q, Eigen::VectorXd::Zero(m->nd()), m->defaultInputs());
    StepReport rep = vi.makeReport();
    for (int k = 0; k < 100; ++k) ASSERT_EQ(vi.step(x, x.rho, x, &rep), StepStatus::Ok);
    EXPECT_LT((x.q - rest.q).cwiseAbs().maxCoeff(), 1e-6);
    // The static tensions are the integrator's tensions at rest.
    for (int j = 0; j < m->nstrings(); ++j)
      EXPECT_NEAR(rep.tension_N[j], rest.tension_N[j], 1e-6 + 1e-6 * rest.tension_N[j])
          << m->strings[j].name;
  }
}

// A pendulum on a joint spring whose neutral angle is 0.5 rad rests where the spring's torque
// k (0.5 - theta) balances gravity's m g l sin(theta) (solved here by bisection).
TEST(RestPose, AJointSpringBalancesGravity) {
  const ModelPtr m = loadModelString(R"(
name: sprung-pendulum
dynamic:
  - {name: theta, spring: {stiffness: 0.2, neutral: 0.5}}
kinematic:
  - {name: x, default: 0.0, range: [-1.0, 1.0]}
frames:
  - {name: rod, parent: world, ry: theta}
  - {name: rig, parent: world, tx: x}
masses:
  - {name: rod, frame: rod, mass: 0.2, com: [0, 0, -0.15],
     inertia: {ixx: 0.0015, iyy: 0.0015, izz: 2.5e-6}}
points:
  - {name: tip, frame: rod, at: [0, 0, -0.3]}
strings:
  - {name: tip, puppet: tip, rig: {frame: rig, at: [0, 0, 1.0]}, length: 2.0}
)",
                                         "sprung-pendulum");
  const double mgl = 0.2 * 9.81 * 0.15;
  double lo = 0.0, hi = 0.5;
  for (int i = 0; i < 200; ++i) {
    const double mid = 0.5 * (lo + hi);
    (0.2 * (0.5 - mid) - mgl * std::sin(mid) > 0.0 ? lo : hi) = mid;
  }
  const RestPose rest = computeRestPose(m, m->defaultInputs());
  ASSERT_TRUE(rest.ok) << rest.message;
  EXPECT_NEAR(rest.q[0], 0.5 * (lo + hi), 1e-9);
  EXPECT_GT(rest.q[0], 0.1);  // (0.117 rad: far from both the hanging and the neutral angle)
}

// Continuation (the PRM's goal search): after a small input change, a Newton-only solve started
// from the old rest pose with its taut strings lands on the rest pose a full solve (damped
// settling from the model's own guess) finds -- even when the change slackens a string by more
// than the default "nearly tight" guess would catch, or moves a joint off the stop it rested on.
// Guessing by gap alone there loses a string or a stop and fails or lands elsewhere.
TEST(RestPose, ContinuationFromANearbyRestPoseFindsTheSameEquilibrium) {
  const ModelPtr m = loadModel("puppetcopter");
  const Eigen::VectorXd rho0 = m->defaultInputs();
  const RestPose rest0 = computeRestPose(m, rho0);
  ASSERT_TRUE(rest0.ok) << rest0.message;
  const int winch = m->variableIndex("act_arm_l_len") - m->nd();
  const int pitch = m->variableIndex("act_arm_l_pitch") - m->nd();
  for (double dl : {0.004, -0.004}) {
    SCOPED_TRACE(dl);
    Eigen::VectorXd rho = rho0;
    rho[winch] += dl;  // 4 mm of winch: the string slackens or stretches by about that
    rho[pitch] -= 0.02;
    const RestPose full = computeRestPose(m, rho, &rest0.q);
    ASSERT_TRUE(full.ok) << full.message;
    RestPoseOptions continuation;
    continuation.max_settle_steps = 0;
    continuation.continue_from = &rest0;
    const RestPose cont = computeRestPose(m, rho, &rest0.q, continuation);
    ASSERT_TRUE(cont.ok) << cont.message;
    EXPECT_EQ(cont.settle_steps, 0);
    EXPECT_LT((cont.q - full.q).cwiseAbs().maxCoeff(), 1e-7);
    EXPECT_EQ(cont.taut, full.taut);
    EXPECT_EQ(cont.at_stop, full.at_stop);
    EXPECT_LE(cont.max_violation_m, 1e-12);
  }
}

// The Newton phase's budget (continuation's fail-fast): a continuation that changes its taut set
// (strings and stops, one at a time) fails with one pivot fewer than it needs, naming the set,
// and with what it needs lands exactly where the unbudgeted solve does; at least as many pivots
// as constraints that end changed.  One Newton iteration is too few, and says so.
TEST(RestPose, AContinuationOverItsNewtonBudgetFailsFastAndSaysWhy) {
  const ModelPtr m = loadModel("puppetcopter");
  const Eigen::VectorXd rho0 = m->defaultInputs();
  const RestPose rest0 = computeRestPose(m, rho0);
  ASSERT_TRUE(rest0.ok) << rest0.message;
  Eigen::VectorXd rho = rho0;
  rho[m->variableIndex("act_arm_l_len") - m->nd()] += 0.03;  // the arm comes down onto its stop
  RestPoseOptions continuation;
  continuation.max_settle_steps = 0;
  continuation.continue_from = &rest0;
  const RestPose free = computeRestPose(m, rho, &rest0.q, continuation);
  ASSERT_TRUE(free.ok) << free.message;
  int changes = 0;
  for (std::size_t j = 0; j < free.taut.size(); ++j) changes += free.taut[j] != rest0.taut[j];
  for (std::size_t i = 0; i < free.at_stop.size(); ++i)
    changes += free.at_stop[i] != rest0.at_stop[i];
  ASSERT_GT(changes, 0) << "the change must move the taut set for this test to mean anything";
  int needed = 0;
  RestPose budgeted;
  for (; needed < 100; ++needed) {
    continuation.max_pivots = needed;
    budgeted = computeRestPose(m, rho, &rest0.q, continuation);
    if (budgeted.ok) break;
    EXPECT_NE(budgeted.message.find("string set did not settle"), std::string::npos)
        << budgeted.message;
  }
  ASSERT_TRUE(budgeted.ok) << budgeted.message;
  EXPECT_EQ(needed, free.pivots);
  EXPECT_EQ(budgeted.pivots, free.pivots);
  EXPECT_GE(needed, changes);
  EXPECT_LT((budgeted.q - free.q).cwiseAbs().maxCoeff(), 1e-12);
  EXPECT_EQ(budgeted.taut, free.taut);
  continuation.max_pivots = -1;
  continuation.max_newton_iterations = 1;
  const RestPose short_of_iterations = computeRestPose(m, rho, &rest0.q, continuation);
  EXPECT_FALSE(short_of_iterations.ok);
  EXPECT_NE(short_of_iterations.message.find("did not converge"), std::string::npos)
      << short_of_iterations.message;
}

// For puppets hung as free bodies (marionette25, puppetcopter) the strings alone hold the puppet:
// the sum of string forces equals the weight, and their moments cancel the weight's moment.
// This is Newton-Euler statics, independent of the Lagrangian machinery that found the pose.
TEST(RestPose, FreeBodyPuppetsBalanceForcesAndMoments) {
  for (const char* name : {"puppetcopter", "marionette25", "suspended-mass"}) {
    SCOPED_TRACE(name);
    const ModelPtr m = loadModel(name);
    RestPose rest;
    DynamicsData d(*m);
    ASSERT_NO_FATAL_FAILURE(restWithKinematics(m, rest, d));
    Eigen::Vector3d force = Eigen::Vector3d::Zero(), moment = Eigen::Vector3d::Zero();
    double weight = 0.0;
    for (const Mass& ms : m->masses) {
      const Eigen::Vector3d c = d.frame_p[ms.frame] + d.frame_R[ms.frame] * ms.com_m;
      const Eigen::Vector3d w(0, 0, -ms.mass_kg * m->gravity_mps2);
      force += w;
      moment += c.cross(w);
      weight += ms.mass_kg * m->gravity_mps2;
    }
    for (int j = 0; j < m->nstrings(); ++j) {
      const Eigen::Vector3d a = d.string_puppet_end[j], e = d.string_rig_end[j];
      const Eigen::Vector3d f = rest.tension_N[j] * (e - a).normalized();  // pulls a towards e
      force += f;
      moment += a.cross(f);
    }
    // Joint stops act inside the puppet (action and reaction), so they do not enter.
    EXPECT_LT(force.norm(), 1e-9 * weight) << force.transpose();
    EXPECT_LT(moment.norm(), 1e-9 * weight) << moment.transpose();
  }
}

// Egger, "Simulation and Animation of a Robotic Puppet", BSc thesis, ETH Zurich 2013, §2.3: the
// puppet hangs below the platform from its two fixed shoulder strings, limbs down.  Every string is
// taut except the two back-of-leg strings: they attach 4 cm behind the front ones on the same
// thighs, and the front strings hold the legs, so the geometry leaves the back strings (used only
// to fly the puppet) slack at the default winch lengths.
TEST(RestPose, PuppetCopterHangsFromItsShoulderStringsWithArmsOnTheirStops) {
  const ModelPtr m = loadModel("puppetcopter");
  RestPose rest;
  DynamicsData d(*m);
  ASSERT_NO_FATAL_FAILURE(restWithKinematics(m, rest, d));
  auto point = [&](const char* name) {
    const Point& p = m->points[m->pointIndex(name)];
    return pointPosition(d, p.frame, p.position_m);
  };
  // Shoulders where the thesis fixes them: 0.70 m (L_shoulder) below their platform points, up to
  // the sway of the hanging body (the arm and leg strings pull it a few millimetres aside).
  for (const auto& [name, y] : {std::pair<const char*, double>{"shoulder_l", 0.073},
                                std::pair<const char*, double>{"shoulder_r", -0.073}}) {
    const Eigen::Vector3d s = point(name);
    EXPECT_NEAR(s.z(), -0.7, 1e-3) << name;
    EXPECT_LT((s.head<2>() - Eigen::Vector2d(0, y)).norm(), 0.015) << name;
  }
  // Limbs down: hands well below the shoulders, feet below the hips and the knees.
  EXPECT_LT(point("hand_l").z(), point("shoulder_l").z() - 0.15);
  EXPECT_LT(point("hand_r").z(), point("shoulder_r").z() - 0.15);
  const Eigen::Vector3d hip_l = d.frame_p[m->frameIndex("hip_l")];
  const Eigen::Vector3d hip_r = d.frame_p[m->frameIndex("hip_r")];
  EXPECT_LT(point("foot_l").z(), hip_l.z() - 0.15);
  EXPECT_LT(point("foot_r").z(), hip_r.z() - 0.15);
  // Arms hang on their lower stops (alpha = -1.5 rad, Table 2.2): straight down is -pi/2.
  EXPECT_NEAR(rest.q[m->variableIndex("alpha_arm_l_1")], -1.5, 1e-9);
  EXPECT_NEAR(rest.q[m->variableIndex("alpha_arm_r_1")], -1.5, 1e-9);
  // String states.
  for (int j = 0; j < m->nstrings(); ++j) {
    const std::string& n = m->strings[j].name;
    const bool back = n == "leg_l_back" || n == "leg_r_back";
    EXPECT_EQ(rest.taut[j] != 0, !back) << n;
    if (back) {
      EXPECT_EQ(rest.tension_N[j], 0.0) << n;
    } else {
      EXPECT_GT(rest.tension_N[j], 0.0) << n;
    }
  }
  // The shoulder strings carry most of the 0.260 kg puppet's weight.
  const double weight = 0.26036 * 9.81;
  const double shoulders =
      rest.tension_N[m->stringIndex("shoulder_l")] + rest.tension_N[m->stringIndex("shoulder_r")];
  EXPECT_GT(shoulders, 0.7 * weight);
  EXPECT_LT(shoulders, weight);
  // Every joint within Table 2.2's limits.
  for (int k = 0; k < m->nd(); ++k) {
    const JointLimit& L = m->dynamic[k].limit;
    EXPECT_GE(rest.q[k], L.lower - 1e-12) << m->dynamic[k].name;
    EXPECT_LE(rest.q[k], L.upper + 1e-12) << m->dynamic[k].name;
  }
}

// PuppetCopter over a floor 6 cm above its lowest point at rest (its feet would hang through
// it): with the floor as a contact (and its links touching one another), its rest pose stands on
// it -- started inside the floor, moved out first -- with no point in the floor, the feet bearing
// part of its weight: along the floor's normal the strings' tensions and the contacts' normal
// forces balance its weight (friction lies in the floor), each friction within Coulomb's cone,
// and the integrator started there, touching the same floor, stays.  The suspended mass on a
// floor above its string's reach rests on it with its string slack, the floor bearing m g.
TEST(RestPose, APuppetOnARaisedFloorStandsOnIt) {
  for (const char* name : {"puppetcopter", "suspended-mass"}) {
    SCOPED_TRACE(name);
    const ModelPtr m = loadModel(name);
    const Eigen::VectorXd rho = m->defaultInputs();
    const RestPose hanging = computeRestPose(m, rho);
    ASSERT_TRUE(hanging.ok) << hanging.message;
    auto contacts = std::make_shared<Contacts>();
    contacts->points = contactPoints(*m);
    const ContactSurface floor = test::floorEntered(*m, m->configuration(hanging.q, rho), 0.06);
    contacts->surfaces.push_back(floor);
    DynamicsData d(*m);
    addSelfContacts(*m, *contacts);
    RestPoseOptions options;
    options.contacts = contacts;
    const RestPose rest = computeRestPose(m, rho, nullptr, options);
    ASSERT_TRUE(rest.ok) << rest.message;
    EXPECT_LE(rest.max_violation_m, 1e-12);
    ASSERT_EQ(rest.contact_normal_N.size(), contacts->rows());
    int touching = 0;
    double normal_N = 0.0;
    for (int r = 0; r < contacts->surfaceRows(); ++r) {
      touching += rest.contact_normal_N[r] > 0.0;
      normal_N += rest.contact_normal_N[r];
      EXPECT_LE(rest.contact_friction_N[r], floor.friction * rest.contact_normal_N[r] + 1e-12)
          << contacts->rowName(r);
    }
    EXPECT_GT(touching, 0);
    // Along the floor's normal: the weight against the strings and the floor.
    const Eigen::VectorXd q = m->configuration(rest.q, rho);
    forwardKinematics(*m, d, q);
    computeStrings(*m, d, q, false);
    double weight_N = 0.0, up_N = normal_N;
    for (const Mass& ms : m->masses) weight_N += ms.mass_kg * m->gravity_mps2;
    for (int j = 0; j < m->nstrings(); ++j)
      up_N += rest.tension_N[j] *
              floor.normal.dot((d.string_rig_end[j] - d.string_puppet_end[j]).normalized());
    EXPECT_NEAR(up_N, weight_N * floor.normal.dot(Eigen::Vector3d::UnitZ()), 1e-9 * weight_N);
    if (m->nstrings() == 1) {
      EXPECT_EQ(rest.tension_N[0], 0.0);  // slack: the floor bears it
      EXPECT_NEAR(normal_N, weight_N, 1e-9 * weight_N);
    } else {
      EXPECT_GT(normal_N, 0.01 * weight_N);
      EXPECT_LT(normal_N, weight_N);
    }
    // At rest on the floor: a second of the integrator with the same contacts moves it < 1 um.
    IntegratorOptions io;
    io.contacts = contacts;
    VariationalIntegrator vi(m, io);
    State x = vi.stateFromVelocity(rest.q, Eigen::VectorXd::Zero(m->nd()), rho);
    StepReport rep = vi.makeReport();
    for (int k = 0; k < 100; ++k) ASSERT_EQ(vi.step(x, rho, x, &rep), StepStatus::Ok);
    EXPECT_LT((x.q - rest.q).cwiseAbs().maxCoeff(), 1e-6);
    EXPECT_GT(rep.contacts_active, 0);
  }
}

}  // namespace
}  // namespace marionette
