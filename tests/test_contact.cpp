// SPDX-License-Identifier: BSD-3-Clause
// Contacts with the stage's surfaces in the integrator's step (contact.hpp): contacts that do not
// fit the model refused naming the field, a sphere let down onto the floor rests on it (no
// penetration, its weight borne exactly, no energy gained), a frictionless floor leaves the
// horizontal motion alone, a fall too fast for one step lands by substeps, the step's
// linearization with a contact touching against finite differences, PuppetCopter's feet let
// down onto the floor, and nothing changes where nothing touches; the puppet's links touching
// one another (self-contact): which pairs, the model file's contacts: section, an arm swung into
// its torso, the linearization with it; a box on the stage (a table top) the puppet touches.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <set>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "marionette/models/contact.hpp"
#include "marionette/models/dynamics.hpp"
#include "marionette/models/field_error.hpp"
#include "marionette/models/integrator.hpp"
#include "marionette/models/model_io.hpp"
#include "marionette/models/rest_pose.hpp"
#include "support/linearization_check.hpp"
#include "support/test_models.hpp"

namespace marionette {
namespace {

Shape sphere(double radius_m) {
  Shape s;
  s.type = ShapeType::Sphere;
  s.radius_m = radius_m;
  return s;
}

// The floor and every contact point of `model`.
std::shared_ptr<const Contacts> onTheFloor(const Model& model) {
  auto contacts = std::make_shared<Contacts>();
  contacts->points = contactPoints(model);
  contacts->surfaces.push_back(floorSurface(model));
  return contacts;
}

// Options stepping at 10 ms with the floor and every contact point of `model`.
IntegratorOptions withTheFloor(const Model& model) {
  IntegratorOptions options;
  options.dt_s = 0.01;
  options.contacts = onTheFloor(model);
  return options;
}

// Options stepping at 10 ms with the floor raised by `raise_m` (m) and every contact point.
IntegratorOptions withTheFloorRaised(const Model& model, double raise_m) {
  IntegratorOptions options = withTheFloor(model);
  auto raised = std::make_shared<Contacts>(*options.contacts);
  raised->surfaces[0].offset_m += raise_m;
  options.contacts = raised;
  return options;
}

// A rigid body (test::probeModel) carrying a capsule of radius 2 cm and length 30 cm along its x
// axis, centred at `centre` in the body's frame.
ModelPtr capsuleAlongX(const Eigen::Vector3d& centre) {
  Shape capsule;
  capsule.type = ShapeType::Capsule;
  capsule.radius_m = 0.02;
  capsule.length_m = 0.30;
  Eigen::Isometry3d along_x = Eigen::Isometry3d::Identity();
  along_x.linear() = Eigen::AngleAxisd(M_PI / 2, Eigen::Vector3d::UnitY()).toRotationMatrix();
  along_x.translation() = centre;
  return test::probeModel(capsule, along_x);
}

TEST(Contact, AModelsSpheresAndCapsuleEndsAreItsContactPoints) {
  const ModelPtr m = capsuleAlongX(Eigen::Vector3d(0.05, 0, 0));
  const std::vector<ContactPoint> points = contactPoints(*m);
  ASSERT_EQ(points.size(), 2u);
  EXPECT_NEAR((points[0].local_m - Eigen::Vector3d(0.20, 0, 0)).norm(), 0.0, 1e-12);
  EXPECT_NEAR((points[1].local_m - Eigen::Vector3d(-0.10, 0, 0)).norm(), 0.0, 1e-12);
  EXPECT_EQ(points[0].radius_m, 0.02);
  // The floor under a model hung 1.2 m up: a point on the stage's floor is on the plane, one
  // below it on the solid side, one above it on the free side.
  const ModelPtr pc = loadModel("puppetcopter");
  const ContactSurface floor = floorSurface(*pc);
  auto side = [&](double z_stage) {
    return floor.normal.dot(pc->stage_pose.inverse() * Eigen::Vector3d(0.3, -0.2, z_stage)) -
           floor.offset_m;
  };
  EXPECT_NEAR(side(0.0), 0.0, 1e-12);
  EXPECT_NEAR(side(-0.1), -0.1, 1e-12);
  EXPECT_NEAR(side(0.1), 0.1, 1e-12);
  EXPECT_NEAR(floor.normal.norm(), 1.0, 1e-12);
  // PuppetCopter's upper and lower arms' capsules meet at its elbows: each elbow is one contact
  // point (two identical rows would make the step's Newton matrix singular when it touches).
  const std::vector<ContactPoint> pc_points = contactPoints(*pc);
  DynamicsData d(*pc);
  Eigen::VectorXd q(pc->nq());
  q << pc->initialDynamic(), pc->defaultInputs();
  forwardKinematics(*pc, d, q);
  for (std::size_t i = 0; i < pc_points.size(); ++i)
    for (std::size_t j = 0; j < i; ++j)
      EXPECT_GT((pointPosition(d, pc_points[i].frame, pc_points[i].local_m) -
                 pointPosition(d, pc_points[j].frame, pc_points[j].local_m))
                    .norm(),
                1e-6)
          << pc_points[i].link << " and " << pc_points[j].link;
  EXPECT_EQ(pc_points.size(), 15u);  // its head's sphere and 8 capsules' 16 ends, the elbows once
  std::set<std::string> names;       // unique, for reports and tables
  for (const ContactPoint& p : pc_points) names.insert(p.name);
  EXPECT_EQ(names.size(), pc_points.size());
  for (const ContactPoint& p : pc_points)  // a sphere by its geometry's name, a capsule's ends
    EXPECT_TRUE(p.name == p.link || p.name == p.link + "+z" || p.name == p.link + "-z") << p.name;
  Contacts on_floor{pc_points, {floor}, {}, {}};
  EXPECT_EQ(on_floor.rowName(0), "floor/" + pc_points[0].name);
}

// Contacts that do not fit the model are refused when the integrator is made, naming the field.
TEST(Contact, ContactsThatDoNotFitTheModelAreRefusedNamingTheField) {
  const ModelPtr m = loadModel("puppetcopter");
  auto refusal = [&](const std::function<void(Contacts&)>& spoil) -> std::string {
    auto contacts = std::make_shared<Contacts>(*onTheFloor(*m));
    spoil(*contacts);
    IntegratorOptions options;
    options.contacts = contacts;
    try {
      VariationalIntegrator vi(m, options);
    } catch (const std::invalid_argument& e) {
      return e.what();
    }
    return "";
  };
  EXPECT_EQ(refusal([](Contacts&) {}), "");
  int rig_frame = -1;
  for (int f = 0; f < static_cast<int>(m->frames.size()) && rig_frame < 0; ++f)
    if (!m->frame_moved_by_dynamic[f]) rig_frame = f;
  ASSERT_GE(rig_frame, 0);
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const std::pair<std::function<void(Contacts&)>, const char*> cases[] = {
      {[](Contacts& c) { c.points[2].frame = 999; }, "contacts.points[2].frame: 999"},
      {[&](Contacts& c) { c.points[0].frame = rig_frame; }, "contacts.points[0].frame: '"},
      {[&](Contacts& c) { c.points[1].local_m.x() = nan; }, "contacts.points[1].local_m"},
      {[](Contacts& c) { c.points[3].radius_m = -0.01; }, "contacts.points[3].radius_m"},
      {[](Contacts& c) { c.surfaces[0].normal *= 2.0; }, "contacts.surfaces[0].normal"},
      {[&](Contacts& c) { c.surfaces[0].offset_m = nan; }, "contacts.surfaces[0].offset_m"},
      {[&](Contacts& c) { c.surfaces[0].friction = nan; }, "contacts.surfaces[0].friction"},
      {[](Contacts& c) { c.surfaces[0].friction = -0.1; }, "contacts.surfaces[0].friction"},
  };
  for (const auto& [spoil, field] : cases) {
    const std::string why = refusal(spoil);
    EXPECT_NE(why.find(field), std::string::npos) << "expected " << field << ", got: " << why;
  }
}

// Let down from 25 cm with a horizontal velocity onto a frictionless floor: free fall, an
// inelastic landing, then at rest on the floor.  Every step keeps the sphere out of the floor
// (to the step's tolerance, far below 1 mm), the mechanical energy never increases, the floor
// bears exactly its weight at rest, and, frictionless, the horizontal motion goes on untouched.
TEST(Contact, ASphereLetDownOntoTheFloorRestsOnIt) {
  constexpr double kRadius = 0.05, kMass = 1.0;
  const ModelPtr m = test::probeModel(sphere(kRadius));
  IntegratorOptions options;
  options.dt_s = 0.01;
  auto frictionless = std::make_shared<Contacts>(*onTheFloor(*m));
  frictionless->surfaces[0].friction = 0.0;
  options.contacts = frictionless;
  ASSERT_EQ(options.contacts->rows(), 1);
  VariationalIntegrator vi(m, options);
  Eigen::VectorXd q = Eigen::VectorXd::Zero(6), qdot = Eigen::VectorXd::Zero(6);
  q[2] = kRadius + 0.25;
  qdot[0] = 0.2;  // x, m/s
  State x = vi.stateFromVelocity(q, qdot, Eigen::VectorXd());
  StepReport rep = vi.makeReport();
  double energy = std::numeric_limits<double>::infinity();
  int landed_at = -1;
  for (int k = 1; k <= 150; ++k) {
    ASSERT_EQ(vi.step(x, x.rho, x, &rep), StepStatus::Ok) << "step " << k;
    EXPECT_LE(rep.max_penetration_m, 1e-9) << "step " << k;
    EXPECT_GE(x.q[2] - kRadius, -1e-9) << "step " << k;
    EXPECT_LE(rep.energy_J, energy + 1e-9) << "step " << k;
    energy = rep.energy_J;
    if (landed_at < 0 && rep.contacts_active > 0) landed_at = k;
  }
  // It falls 0.25 m in sqrt(2 * 0.25 / g) = 0.226 s.
  ASSERT_GT(landed_at, 0);
  EXPECT_NEAR(landed_at * options.dt_s, std::sqrt(2 * 0.25 / m->gravity_mps2), 0.02);
  EXPECT_EQ(rep.contacts_active, 1);
  EXPECT_NEAR(rep.contact_force_N[0], kMass * m->gravity_mps2, 1e-6 * kMass * m->gravity_mps2);
  EXPECT_NEAR(x.q[2], kRadius, 1e-9);
  EXPECT_NEAR(x.q[0], 0.2 * 150 * options.dt_s, 1e-9);  // frictionless
  EXPECT_NEAR(x.p[0], kMass * 0.2, 1e-9);
}

// Thrown down at 10 m/s: the landing step starts 8 cm above the floor, farther than the rows
// that take part in a step (5 cm), and its answer would end inside: the step falls back to
// substeps, which land the sphere on the floor, not through it.
TEST(Contact, AFastFallLandsThroughTheSubstepsNotThroughTheFloor) {
  constexpr double kRadius = 0.05;
  const ModelPtr m = test::probeModel(sphere(kRadius));
  IntegratorOptions options = withTheFloor(*m);
  VariationalIntegrator vi(m, options);
  Eigen::VectorXd q = Eigen::VectorXd::Zero(6), qdot = Eigen::VectorXd::Zero(6);
  q[2] = kRadius + 0.08;
  qdot[2] = -10.0;
  State x = vi.stateFromVelocity(q, qdot, Eigen::VectorXd());
  StepReport rep = vi.makeReport();
  ASSERT_EQ(vi.step(x, x.rho, x, &rep), StepStatus::Ok);
  EXPECT_GT(rep.substeps, 1);
  EXPECT_EQ(rep.contacts_active, 1);
  EXPECT_LE(rep.max_penetration_m, 1e-9);
  EXPECT_NEAR(x.q[2], kRadius, 1e-9);
  for (int k = 0; k < 20; ++k) ASSERT_EQ(vi.step(x, x.rho, x, &rep), StepStatus::Ok);
  EXPECT_NEAR(x.q[2], kRadius, 1e-9);
  EXPECT_NEAR(rep.contact_force_N[0], m->gravity_mps2, 1e-6 * m->gravity_mps2);
}

// A capsule lying across the floor, tipped so that one end lands first and the body turns about
// it: the step's linearization, with that end touching, against central differences (the
// contact row's curvature through the body's rotations included).
// The capsule along x (capsuleAlongX) tipped onto what `options` touch (top at z = 0), its +x
// end landing first; once it has rested on that end for three steps, the step's linearization
// against central differences.
void checkLinearizationOnOneEnd(const ModelPtr& m, const IntegratorOptions& options,
                                const std::string& what) {
  VariationalIntegrator vi(m, options);
  Eigen::VectorXd q(6), qdot(6);
  q << 0, 0, 0.12, 0.2, -0.4, 0.1;  // the +x end low
  qdot << 0.1, 0, 0, 0.5, 0, 0.3;
  State x = vi.stateFromVelocity(q, qdot, Eigen::VectorXd());
  StepReport rep = vi.makeReport();
  int touching = 0;
  for (int k = 0; k < 200 && touching < 3; ++k) {
    ASSERT_EQ(vi.step(x, x.rho, x, &rep), StepStatus::Ok);
    touching = rep.contacts_active == 1 ? touching + 1 : 0;
  }
  ASSERT_EQ(touching, 3) << "the capsule never rested on one end";
  test::checkLinearization(m, x, x.rho, what, options);
}

TEST(Contact, TheLinearizationWithAContactTouchingMatchesFiniteDifferences) {
  const ModelPtr m = capsuleAlongX(Eigen::Vector3d(0.05, 0.01, 0));
  checkLinearizationOnOneEnd(m, withTheFloor(*m), "a capsule on one end");
}

// PuppetCopter hangs from its two shoulder strings with its feet 4.3 cm above the floor.  On a
// floor 6 cm higher, lifted by its head string (10 cm shorter) and let down again over a second,
// it lands on its feet: they touch, stay out of the floor, bear part of its weight over the last
// half second (the shoulder strings the rest), and the run completes.
TEST(Contact, PuppetCopterLetDownOntoARaisedFloorStandsOnItsFeet) {
  const ModelPtr m = loadModel("puppetcopter");
  const IntegratorOptions options = withTheFloorRaised(*m, 0.06);
  const int head = m->variableIndex("act_head_len") - m->nd();
  Eigen::VectorXd u = m->defaultInputs();
  u[head] -= 0.10;
  const RestPose lifted = computeRestPose(m, u);
  ASSERT_TRUE(lifted.ok) << lifted.message;
  VariationalIntegrator vi(m, options);
  State x = vi.stateFromVelocity(lifted.q, Eigen::VectorXd::Zero(m->nd()), u);
  StepReport rep = vi.makeReport();
  double weight_N = 0.0;
  for (const Mass& mass : m->masses) weight_N += mass.mass_kg * m->gravity_mps2;
  // Over the last half second: the floor's force, and the strings' and the floor's vertical
  // forces together, which bear the weight (the momentum's change over it is small).
  DynamicsData d(*m);
  Eigen::VectorXd q_full(m->nq());
  int first_touch = -1;
  double borne_Ns = 0.0, vertical_Ns = 0.0;
  for (int k = 1; k <= 300; ++k) {
    u[head] = m->kinematic[head].default_value - 0.10 * std::max(0.0, 1.0 - k / 100.0);
    const State before = x;
    ASSERT_EQ(vi.step(x, u, x, &rep), StepStatus::Ok) << "step " << k;
    EXPECT_LE(rep.max_penetration_m, 1e-6) << "step " << k;
    if (first_touch < 0 && rep.contacts_active > 0) first_touch = k;
    if (k <= 250) continue;
    // Tensions act over the step at q_k's string directions.
    q_full << before.q, before.rho;
    forwardKinematics(*m, d, q_full);
    computeStrings(*m, d, q_full, false);
    double up_N = rep.contact_force_N.sum();
    for (int j = 0; j < m->nstrings(); ++j) {
      const Eigen::Vector3d along = d.string_rig_end[j] - d.string_puppet_end[j];
      up_N += rep.tension_N[j] * along.z() / along.norm();
    }
    borne_Ns += rep.contact_force_N.sum() * options.dt_s;
    vertical_Ns += up_N * options.dt_s;
  }
  EXPECT_GT(first_touch, 1) << "touching from the start";
  EXPECT_GE(rep.contacts_active, 2);
  EXPECT_GT(borne_Ns / 0.5, 0.02 * weight_N);
  EXPECT_NEAR(vertical_Ns / 0.5, weight_N, 0.02 * weight_N);
  EXPECT_GT(rep.tension_N[m->stringIndex("shoulder_l")], 0.0);
}

// PuppetCopter standing on the raised floor (let down as above), its legs swung forward and back
// by their strings (the two leg lengths in opposite phase, 0.5 Hz, amplitudes 1 to 5 cm) for 6 s:
// the feet touch, bear load, stick and slide, never enter the floor, and every step converges
// (the feet's modes, which the per-row active set chose in cycles, chosen at once when it does).
TEST(Contact, PuppetCopterSwingsItsLegsOnTheFloor) {
  const ModelPtr m = loadModel("puppetcopter");
  const IntegratorOptions options = withTheFloorRaised(*m, 0.06);
  const int head = m->variableIndex("act_head_len") - m->nd();
  const int leg_l = m->variableIndex("act_leg_l_len") - m->nd();
  const int leg_r = m->variableIndex("act_leg_r_len") - m->nd();
  double weight_N = 0.0;
  for (const Mass& mass : m->masses) weight_N += mass.mass_kg * m->gravity_mps2;
  Eigen::VectorXd lifted_u = m->defaultInputs();
  lifted_u[head] -= 0.10;
  const RestPose lifted = computeRestPose(m, lifted_u);
  ASSERT_TRUE(lifted.ok) << lifted.message;
  for (double amplitude_m : {0.01, 0.02, 0.03, 0.05}) {
    SCOPED_TRACE("amplitude " + std::to_string(amplitude_m) + " m");
    VariationalIntegrator vi(m, options);
    Eigen::VectorXd u = lifted_u;
    State x = vi.stateFromVelocity(lifted.q, Eigen::VectorXd::Zero(m->nd()), u);
    StepReport rep = vi.makeReport();
    int touching = 0, sliding = 0;
    double borne_Ns = 0.0, worst_penetration_m = 0.0;
    const int swing = 200, steps = swing + 600;
    for (int k = 1; k <= steps; ++k) {
      u[head] = m->kinematic[head].default_value - 0.10 * std::max(0.0, 1.0 - k / 100.0);
      const double phase = k > swing ? std::sin(M_PI * (k - swing) * options.dt_s) : 0.0;
      u[leg_l] = m->kinematic[leg_l].default_value + amplitude_m * phase;
      u[leg_r] = m->kinematic[leg_r].default_value - amplitude_m * phase;
      ASSERT_EQ(vi.step(x, u, x, &rep), StepStatus::Ok) << "step " << k;
      worst_penetration_m = std::max(worst_penetration_m, rep.max_penetration_m);
      if (k <= swing) continue;
      touching += rep.contacts_active > 0;
      sliding += rep.contacts_sliding > 0;
      borne_Ns += rep.contact_force_N.sum() * options.dt_s;
    }
    EXPECT_LE(worst_penetration_m, 1e-6);
    EXPECT_GT(touching, 0.9 * (steps - swing));
    EXPECT_GT(sliding, 0);
    EXPECT_GT(borne_Ns / ((steps - swing) * options.dt_s), 0.02 * weight_N);
  }
}

// PuppetCopter with its feet loaded on a floor 1 cm above their rest (raised over a second at
// rest), every rig input oscillating for 20 s (input i at 0.3 + 0.07 i Hz, 0.08 rad for angles,
// 3 cm for the rig's travel, 2 cm for winches, enveloped by sin^2): the feet's modes and normal
// forces, chosen one row at a time, cycle in some steps (each foot's answering the other's), and
// those steps take every row's mode at once (StepReport::modes_at_once); every step converges and
// the feet never enter the floor.
TEST(Contact, PuppetCopterOnTheFloorFollowsItsWholeRigMoving) {
  const ModelPtr m = loadModel("puppetcopter");
  const RestPose rest = computeRestPose(m, m->defaultInputs());
  ASSERT_TRUE(rest.ok) << rest.message;
  auto floor = std::make_shared<Contacts>(*onTheFloor(*m));
  ContactSurface& surface = floor->surfaces[0];
  DynamicsData d(*m);
  Eigen::VectorXd q_full(m->nq());
  q_full << rest.q, m->defaultInputs();
  forwardKinematics(*m, d, q_full);
  double top_m = -1e300;  // the lowest point's depth into the floor at rest
  for (const ContactPoint& p : floor->points)
    top_m = std::max(top_m, surface.offset_m + p.radius_m -
                                surface.normal.dot(pointPosition(d, p.frame, p.local_m)));
  surface.offset_m -= top_m;
  IntegratorOptions options;
  options.dt_s = 0.01;
  State x = VariationalIntegrator(m, options)
                .stateFromVelocity(rest.q, Eigen::VectorXd::Zero(m->nd()), m->defaultInputs());
  for (int k = 1; k <= 100; ++k) {  // the floor up by 1 cm over a second
    surface.offset_m += 0.0001;
    options.contacts = std::make_shared<Contacts>(*floor);
    ASSERT_EQ(VariationalIntegrator(m, options).step(x, x.rho, x), StepStatus::Ok) << "step " << k;
  }
  std::vector<double> amplitude(m->nk(), 0.02);
  for (const Frame& f : m->frames)
    if (f.variable >= m->nd())
      amplitude[f.variable - m->nd()] = f.type == JointType::Rotate ? 0.08 : 0.03;
  VariationalIntegrator vi(m, options);
  StepReport rep = vi.makeReport();
  Eigen::VectorXd u = x.rho;
  int touching = 0, at_once = 0;
  double worst_penetration_m = 0.0;
  const int steps = 2000;
  for (int k = 1; k <= steps; ++k) {
    const double t_s = k * options.dt_s, envelope = std::pow(std::sin(M_PI * k / steps), 2);
    for (int i = 0; i < m->nk(); ++i) {
      const KinematicVariable& v = m->kinematic[i];
      u[i] = std::clamp(
          v.default_value + envelope * amplitude[i] * std::sin(2 * M_PI * (0.3 + 0.07 * i) * t_s),
          v.lower, v.upper);
    }
    ASSERT_EQ(vi.step(x, u, x, &rep), StepStatus::Ok) << "step " << k;
    worst_penetration_m = std::max(worst_penetration_m, rep.max_penetration_m);
    touching += rep.contacts_active > 0;
    at_once += rep.modes_at_once > 0;
  }
  EXPECT_LE(worst_penetration_m, 1e-6);
  EXPECT_GT(touching, steps / 2);
  EXPECT_GT(at_once, 0);
}

// Where nothing touches, the contact rows change nothing: PuppetCopter, its feet 4.3 cm above
// the floor (near enough for their rows to take part in every step), steps exactly as without
// the floor; and so it does at the planner's 20 ms step, its rig swung hard enough that the modes
// of its strings and stops cycle in some steps (which then take substeps, with the floor as
// without it: every row's mode at once is for steps where a contact takes part).
TEST(Contact, NothingTouchingChangesNothing) {
  const ModelPtr m = loadModel("puppetcopter");
  IntegratorOptions with;
  with.contacts = onTheFloor(*m);
  VariationalIntegrator a(m), b(m, with);
  const RestPose rest = computeRestPose(m, m->defaultInputs());
  ASSERT_TRUE(rest.ok);
  State xa{rest.q, Eigen::VectorXd::Zero(m->nd()), m->defaultInputs()}, xb = xa;
  Eigen::VectorXd u = xa.rho;
  for (int k = 1; k <= 100; ++k) {
    for (int i = 0; i < m->nk(); ++i)
      u[i] = m->kinematic[i].default_value + 0.02 * std::sin(0.05 * k + i);
    ASSERT_EQ(a.step(xa, u, xa), StepStatus::Ok);
    ASSERT_EQ(b.step(xb, u, xb), StepStatus::Ok);
  }
  EXPECT_EQ(xa.q, xb.q);
  EXPECT_EQ(xa.p, xb.p);

  IntegratorOptions coarse;
  coarse.dt_s = 0.02;
  IntegratorOptions coarse_with = coarse;
  coarse_with.contacts = with.contacts;
  VariationalIntegrator c(m, coarse), d(m, coarse_with);
  StepReport rc = c.makeReport(), rd = d.makeReport();
  State xc{rest.q, Eigen::VectorXd::Zero(m->nd()), m->defaultInputs()}, xd = xc;
  int substepped = 0;
  for (int k = 1; k <= 500; ++k) {
    for (int i = 0; i < m->nk(); ++i) {
      const KinematicVariable& v = m->kinematic[i];
      u[i] = std::clamp(v.default_value + 0.02 * std::sin(0.06 * k * (1 + 0.1 * i) + i), v.lower,
                        v.upper);
    }
    ASSERT_EQ(c.step(xc, u, xc, &rc), StepStatus::Ok) << k;
    ASSERT_EQ(d.step(xd, u, xd, &rd), StepStatus::Ok) << k;
    ASSERT_EQ(rd.contacts_active, 0) << k;
    substepped += rc.substeps > 1;
    ASSERT_EQ(xc.q, xd.q) << "step " << k;
  }
  EXPECT_GT(substepped, 0);  // the path this checks was taken
}

// A 1 kg capsule lying down a plane tilted by theta (about y, so that down the slope is its
// axis), with friction mu, let go at rest and stepped for `seconds`.
struct SlopeRun {
  double slid_m = 0.0;         // along the slope, between the first and last steps' midpoints
  double elapsed_s = 0.0;      // between those midpoints
  double energy_lost_J = 0.0;  // T + V, between the same midpoints
  int sliding = 0;             // contacts sliding in the last step
  Eigen::Vector3d friction_N = Eigen::Vector3d::Zero();  // summed over its contacts, last step
  double normal_N = 0.0;
};
SlopeRun slideDownASlope(double theta, double mu, double seconds, bool modes_at_once) {
  const ModelPtr m = capsuleAlongX(Eigen::Vector3d::Zero());
  auto contacts = std::make_shared<Contacts>();
  contacts->points = contactPoints(*m);
  ContactSurface slope;
  slope.name = "slope";
  slope.normal = Eigen::Vector3d(std::sin(theta), 0, std::cos(theta));
  slope.friction = mu;
  contacts->surfaces.push_back(slope);
  IntegratorOptions options;
  options.dt_s = 0.01;
  options.contacts = contacts;
  options.modes_at_once = modes_at_once;
  VariationalIntegrator vi(m, options);
  Eigen::VectorXd q = Eigen::VectorXd::Zero(6);
  q[2] = 0.02 / std::cos(theta);  // both end spheres (radius 2 cm) on the plane
  q[4] = theta;                   // pitch: the axis along the slope
  State x = vi.stateFromVelocity(q, Eigen::VectorXd::Zero(6), Eigen::VectorXd());
  const Eigen::Vector3d down(std::cos(theta), 0, -std::sin(theta));
  StepReport rep = vi.makeReport();
  SlopeRun run;
  const int steps = static_cast<int>(std::lround(seconds / options.dt_s));
  double first_s = 0.0, first_energy = 0.0;
  for (int k = 1; k <= steps; ++k) {
    const State before = x;
    EXPECT_EQ(vi.step(x, x.rho, x, &rep), StepStatus::Ok) << "step " << k;
    EXPECT_LE(rep.max_penetration_m, 1e-9) << "step " << k;
    const double s = down.dot(0.5 * (before.q + x.q).head<3>());
    if (k == 1) {
      first_s = s;
      first_energy = rep.energy_J;
    }
    run.slid_m = s - first_s;
    run.energy_lost_J = first_energy - rep.energy_J;
  }
  run.elapsed_s = (steps - 1) * options.dt_s;
  run.sliding = rep.contacts_sliding;
  run.friction_N = rep.contact_friction_N.rowwise().sum();
  run.normal_N = rep.contact_force_N.sum();
  return run;
}

// Coulomb's law on a slope: a body holds below the angle whose tangent is mu and slides above it
// (the threshold to 2 %: 0.98 and 1.02 of it), held by exactly the weight's component along the
// slope; sliding, it accelerates at g (sin theta - mu cos theta) and loses energy at the rate
// friction predicts, mu N per metre slid.  The same with every row's mode chosen at once
// (IntegratorOptions::modes_at_once: the fallback's linear complementarity problem).
void frictionOnASlope(bool at_once) {
  constexpr double kMu = 0.5, kMass = 1.0;
  const double g = test::probeModel(sphere(0.01))->gravity_mps2;
  const double repose = std::atan(kMu);
  const Eigen::Vector3d down(std::cos(0.98 * repose), 0, -std::sin(0.98 * repose));
  {
    SCOPED_TRACE("below");
    const double theta = 0.98 * repose;
    const SlopeRun run = slideDownASlope(theta, kMu, 1.0, at_once);
    EXPECT_EQ(run.sliding, 0);
    EXPECT_LT(std::abs(run.slid_m), 1e-7);
    // The floor holds the weight: along the slope friction, across it the normal force.
    EXPECT_NEAR(run.friction_N.dot(-down), kMass * g * std::sin(theta), 1e-6 * kMass * g);
    EXPECT_NEAR(run.friction_N.norm(), kMass * g * std::sin(theta), 1e-6 * kMass * g);
    EXPECT_NEAR(run.normal_N, kMass * g * std::cos(theta), 1e-6 * kMass * g);
  }
  {
    SCOPED_TRACE("above");
    const double theta = 1.02 * repose;
    const SlopeRun run = slideDownASlope(theta, kMu, 1.0, at_once);
    EXPECT_EQ(run.sliding, 2);
    const double a = g * (std::sin(theta) - kMu * std::cos(theta));
    const double t0 = 0.005, t1 = t0 + run.elapsed_s;  // the midpoints' times
    EXPECT_NEAR(run.slid_m, 0.5 * a * (t1 * t1 - t0 * t0), 0.01 * run.slid_m);
    EXPECT_NEAR(run.energy_lost_J, kMu * kMass * g * std::cos(theta) * run.slid_m,
                0.01 * run.energy_lost_J);
    EXPECT_NEAR(run.friction_N.norm(), kMu * kMass * g * std::cos(theta), 1e-6 * kMass * g);
  }
}

TEST(Contact, FrictionHoldsBelowMuNAndSlidesAboveIt) {
  for (bool at_once : {false, true}) {
    SCOPED_TRACE(at_once ? "modes at once" : "modes one row at a time");
    frictionOnASlope(at_once);
  }
}

// Dragged along the floor by a string whose carriage runs away at 0.1 m/s: the capsule stays put
// while the string is slack, then slides behind it, the string's tension exactly the sliding
// friction, mu m g; with the rows' modes chosen one at a time and at once.
void dragAlongTheFloor(bool at_once) {
  constexpr double kRadius = 0.02, kLength = 0.5, kMu = 0.5;
  Shape capsule;
  capsule.type = ShapeType::Capsule;
  capsule.radius_m = kRadius;
  capsule.length_m = 0.30;
  Eigen::Isometry3d along_x = Eigen::Isometry3d::Identity();
  along_x.linear() = Eigen::AngleAxisd(M_PI / 2, Eigen::Vector3d::UnitY()).toRotationMatrix();
  const Eigen::Vector3d attach(0.15, 0, 0), anchor(0.15 + kLength - 0.005, 0, kRadius);
  const ModelPtr m = test::draggedProbeModel(capsule, along_x, attach, anchor, kLength);
  IntegratorOptions options = withTheFloor(*m);
  options.modes_at_once = at_once;
  ASSERT_EQ(options.contacts->surfaces[0].friction, kMu);
  VariationalIntegrator vi(m, options);
  Eigen::VectorXd q = Eigen::VectorXd::Zero(6);
  q[2] = kRadius;
  State x = vi.stateFromVelocity(q, Eigen::VectorXd::Zero(6), Eigen::VectorXd::Zero(1));
  Eigen::VectorXd carriage(1);
  StepReport rep = vi.makeReport();
  double tension_Ns = 0.0;
  for (int k = 1; k <= 150; ++k) {
    carriage[0] = 0.1 * k * options.dt_s;
    ASSERT_EQ(vi.step(x, carriage, x, &rep), StepStatus::Ok) << "step " << k;
    EXPECT_LE(rep.max_penetration_m, 1e-9) << "step " << k;
    if (k <= 4) {  // slack for 5 mm
      EXPECT_EQ(rep.taut[0], 0) << "step " << k;
      EXPECT_LT(std::abs(x.q[0]), 1e-9) << "step " << k;
    }
    if (k > 100) tension_Ns += rep.tension_N[0] * options.dt_s;
  }
  EXPECT_EQ(rep.taut[0], 1);
  EXPECT_EQ(rep.contacts_sliding, 2);
  EXPECT_NEAR(x.q[0], 0.1 * 1.5 - 0.005, 1e-6);  // behind the carriage at the string's length
  EXPECT_NEAR(tension_Ns / 0.5, kMu * m->gravity_mps2, 1e-3 * kMu * m->gravity_mps2);
}

TEST(Contact, AStringDragsABodyAlongTheFloorAgainstItsFriction) {
  for (bool at_once : {false, true}) {
    SCOPED_TRACE(at_once ? "modes at once" : "modes one row at a time");
    dragAlongTheFloor(at_once);
  }
}

// The step's linearization with friction, against central differences: a capsule sliding
// straight (on one facet of the cone), obliquely (at a vertex of it) and turning; a ball turning
// as it slides; a ball held on a slope (sticking, its friction force the weight's pull along the
// slope).
TEST(Contact, TheLinearizationWithFrictionMatchesFiniteDifferences) {
  const ModelPtr m = capsuleAlongX(Eigen::Vector3d(0.03, 0, 0));
  IntegratorOptions options = withTheFloor(*m);
  VariationalIntegrator vi(m, options);
  struct Case {
    const char* label;
    double vx, vy, yaw_rate;
    int sliding;
  };
  for (const Case& c :
       {Case{"sliding on a facet", 0.3, 0.0, 0.0, 2},
        Case{"sliding at a vertex", 0.3, 0.05, 0.0, 2}, Case{"turning", 0.2, 0.0, 1.5, 2}}) {
    Eigen::VectorXd q = Eigen::VectorXd::Zero(6), qdot = Eigen::VectorXd::Zero(6);
    q[2] = 0.02;
    q[3] = 0.3;  // yaw
    qdot[0] = c.vx;
    qdot[1] = c.vy;
    qdot[3] = c.yaw_rate;
    State x = vi.stateFromVelocity(q, qdot, Eigen::VectorXd());
    StepReport rep = vi.makeReport();
    for (int k = 0; k < 3; ++k) ASSERT_EQ(vi.step(x, x.rho, x, &rep), StepStatus::Ok);
    ASSERT_EQ(rep.contacts_active, 2) << c.label;
    ASSERT_EQ(rep.contacts_sliding, c.sliding) << c.label;
    test::checkLinearization(m, x, x.rho, c.label, options);
  }
  // A sphere off its body's centre, turning as it slides on one facet: its slip depends on the
  // rotation (with the slip's q_k derivative taken at q_{k+1}, A is 3e-4 off).
  Eigen::Isometry3d off_centre = Eigen::Isometry3d::Identity();
  off_centre.translation() = Eigen::Vector3d(0.05, 0.0, 0.0);
  const ModelPtr ball = test::probeModel(sphere(0.03), off_centre);
  options.contacts = onTheFloor(*ball);
  VariationalIntegrator ball_vi(ball, options);
  Eigen::VectorXd q = Eigen::VectorXd::Zero(6), qdot = Eigen::VectorXd::Zero(6);
  q[2] = 0.03;
  qdot[0] = 0.3;
  qdot[3] = 3.0;  // yaw, rad/s
  State x = ball_vi.stateFromVelocity(q, qdot, Eigen::VectorXd());
  StepReport rep = ball_vi.makeReport();
  for (int k = 0; k < 3; ++k) ASSERT_EQ(ball_vi.step(x, x.rho, x, &rep), StepStatus::Ok);
  ASSERT_EQ(rep.contacts_sliding, 1);
  test::checkLinearization(ball, x, x.rho, "a ball turning as it slides", options);
  // A ball held on a slope of 0.3 rad by its friction (mu 0.5: it would slide above 0.46 rad).
  {
    const ModelPtr held = test::probeModel(sphere(0.03));
    auto slope = std::make_shared<Contacts>();
    slope->points = contactPoints(*held);
    ContactSurface plane;
    plane.normal = Eigen::Vector3d(std::sin(0.3), 0, std::cos(0.3));
    slope->surfaces.push_back(plane);
    options.contacts = slope;
    VariationalIntegrator held_vi(held, options);
    Eigen::VectorXd q0 = Eigen::VectorXd::Zero(6);
    q0.head<3>() = 0.03 * plane.normal;
    State rest = held_vi.stateFromVelocity(q0, Eigen::VectorXd::Zero(6), Eigen::VectorXd());
    for (int k = 0; k < 3; ++k) ASSERT_EQ(held_vi.step(rest, rest.rho, rest, &rep), StepStatus::Ok);
    ASSERT_EQ(rep.contacts_active, 1);
    ASSERT_EQ(rep.contacts_sliding, 0);
    ASSERT_GT(rep.contact_friction_N.col(0).norm(), 1.0);
    test::checkLinearization(held, rest, rest.rho, "a ball held on a slope", options);
  }
}

// The model's contact points and self-contacts (no surface).
std::shared_ptr<const Contacts> itsOwnBody(const Model& model) {
  auto contacts = std::make_shared<Contacts>();
  contacts->points = contactPoints(model);
  addSelfContacts(model, *contacts);
  return contacts;
}

TEST(SelfContact, LinksThatMayOverlapDoNotTouchAndTheModelFileChoosesTheRest) {
  // marionette25: a forearm's ends against the chest, not the upper arm's (allowed_collisions)
  // nor the forearm against its own upper arm (adjacent).
  const ModelPtr m25 = loadModel("marionette25");
  const auto contacts = itsOwnBody(*m25);
  std::set<std::string> names;
  for (int r = 0; r < contacts->rows(); ++r) names.insert(contacts->rowName(r));
  EXPECT_TRUE(names.count("chest_0/forearm_l_5-z")) << names.size() << " rows";
  const int chest = m25->frameIndex("chest"), upper_arm = m25->frameIndex("upper_arm_l"),
            forearm = m25->frameIndex("forearm_l"), thigh = m25->frameIndex("thigh_l");
  EXPECT_FALSE(framesTouch(*m25, chest, upper_arm));
  EXPECT_FALSE(framesTouch(*m25, forearm, upper_arm));
  EXPECT_TRUE(framesTouch(*m25, forearm, thigh));
  EXPECT_TRUE(framesTouch(*m25, chest, forearm));
  for (const SelfContact& c : contacts->self) EXPECT_EQ(c.friction, kDefaultSelfFriction);
  // The elbow is one point, the upper arm's end (15 mm) and the forearm's (10 mm): against the
  // chest, which only the forearm may touch, it is the forearm's end, as the collision checker
  // has it (the upper arm's would touch 5 mm early); against a thigh, the upper arm's.
  std::map<std::string, double> radius;
  for (int r = contacts->surfaceRows(); r < contacts->rows(); ++r)
    radius[contacts->rowName(r)] = contacts->self[r - contacts->surfaceRows()].radius_m;
  ASSERT_TRUE(radius.count("chest_0/upper_arm_l_3-z"));
  EXPECT_EQ(radius["chest_0/upper_arm_l_3-z"], 0.01);
  ASSERT_TRUE(radius.count("thigh_l_7/upper_arm_l_3-z")) << "no elbow-thigh row";
  EXPECT_EQ(radius["thigh_l_7/upper_arm_l_3-z"], 0.015);
  for (const ContactPoint& p : contacts->points) {
    if (p.name == "upper_arm_l_3-z") {
      EXPECT_EQ(p.radius_m, 0.015);  // on the floor: the larger
    }
  }

  const ModelPtr arm = test::armBesideTorso();
  // The arm's two ends against the torso, and its middle (a segment row).
  const auto arm_rows = itsOwnBody(*arm);
  ASSERT_EQ(arm_rows->self.size(), 3u);
  EXPECT_TRUE(arm_rows->segmentRow(arm_rows->rows() - 1));
  const ModelPtr excluded = test::armBesideTorso("contacts: {exclude: [[arm, torso]]}\n");
  EXPECT_TRUE(itsOwnBody(*excluded)->self.empty());
  const ModelPtr off = test::armBesideTorso("contacts: {self: false}\n");
  EXPECT_TRUE(itsOwnBody(*off)->self.empty());
  const ModelPtr frictions = test::armBesideTorso(
      "contacts:\n  friction: 0.2\n  pairs:\n    - {links: [torso, arm], friction: 0.7}\n");
  const auto pairs = itsOwnBody(*frictions);
  for (const SelfContact& c : pairs->self) EXPECT_EQ(c.friction, 0.7);

  // 70 balls on their own joints: 70 x 69 self-contacts, more than addSelfContacts makes.
  std::string balls = "name: balls\ndynamic:\n";
  std::string frames = "frames:\n", masses = "masses:\n", geometry = "geometry:\n";
  for (int i = 0; i < 70; ++i) {
    const std::string n = "b" + std::to_string(i);
    balls += "  - {name: " + n + "}\n";
    frames += "  - {name: " + n + ", parent: world, tx: " + n + "}\n";
    masses += "  - {name: " + n + ", frame: " + n +
              ", mass: 0.1, com: [0, 0, 0], inertia: [1e-4, 1e-4, 1e-4]}\n";
    geometry += "  - {frame: " + n + ", sphere: {radius: 0.01}, pose: {xyz: [0, " +
                std::to_string(0.05 * i) + ", 0]}}\n";
  }
  const ModelPtr many = loadModelString(balls + frames + masses + geometry, "balls");
  Contacts too_many;
  too_many.points = contactPoints(*many);
  try {
    addSelfContacts(*many, too_many);
    ADD_FAILURE() << "4830 self-contacts were made";
  } catch (const FieldError& e) {
    EXPECT_EQ(e.field(), "contacts") << e.what();
  }

  struct Bad {
    const char* text;
    const char* names;
  };
  for (const Bad& bad :
       {Bad{"contacts: {friction: -1}\n", "contacts.friction"},
        Bad{"contacts: {friction: 11}\n", "contacts.friction"},
        Bad{"contacts: {exclude: [[arm, elbow]]}\n", "contacts.exclude[0]"},
        Bad{"contacts: {exclude: [arm]}\n", "contacts.exclude[0]"},
        Bad{"contacts:\n  pairs:\n    - {links: [arm, torso]}\n", "contacts.pairs[0]"},
        Bad{"contacts:\n  pairs:\n    - {links: [arm, torso], friction: .nan}\n",
            "contacts.pairs[0].friction"},
        Bad{"contacts: {self: maybe}\n", "contacts.self"},
        Bad{"contacts: {exclude: 5}\n", "contacts.exclude"},
        Bad{"contacts: {exclude: [[arm, arm]]}\n", "contacts.exclude[0]"},
        Bad{"contacts: {selff: true}\n", "contacts"}}) {
    try {
      test::armBesideTorso(bad.text);
      ADD_FAILURE() << bad.text << " was accepted";
    } catch (const ModelError& e) {
      EXPECT_NE(std::string(e.what()).find(bad.names), std::string::npos)
          << bad.text << ": " << e.what();
      EXPECT_NE(std::string(e.what()).find("arm-beside-torso:"), std::string::npos) << e.what();
    }
  }
}

// The arm's lower end's depth into the torso (m, > 0 inside), from the kinematics and the box.
double armDepthIntoTorso(const Model& m, const Eigen::VectorXd& q) {
  DynamicsData d(m);
  forwardKinematics(m, d, q);
  const int torso = m.frameIndex("torso"), arm = m.frameIndex("arm");
  const Eigen::Vector3d end = pointPosition(d, arm, Eigen::Vector3d(0, 0, -0.2));
  const Eigen::Matrix3d box = d.frame_R[torso] * Eigen::AngleAxisd(0.3, Eigen::Vector3d::UnitX());
  const Eigen::Vector3d local = box.transpose() * (end - d.frame_p[torso]);
  const Eigen::Vector3d half(0.15, 0.10, 0.15);
  const Eigen::Vector3d outside = local - local.cwiseMax(-half).cwiseMin(half);
  const double inside = (half - local.cwiseAbs()).minCoeff();
  return 0.01 - (outside.norm() > 0.0 ? outside.norm() : -inside);
}

struct ArmRun {
  double max_depth_m = 0.0;
  int touching = 0, sliding = 0;
  double max_energy_rise_J = 0.0;
};

// The arm let go 0.1 rad out from the torso, swinging forward at 3 rad/s, for `seconds`.
// Options stepping at 5 ms with `contacts`.
IntegratorOptions at5ms(std::shared_ptr<const Contacts> contacts) {
  IntegratorOptions options;
  options.dt_s = 0.005;
  options.contacts = std::move(contacts);
  return options;
}

ArmRun swingAlongTheTorso(const ModelPtr& m, double seconds) {
  const IntegratorOptions options = at5ms(itsOwnBody(*m));
  VariationalIntegrator vi(m, options);
  Eigen::VectorXd q, qdot;
  test::armSwingingForward(q, qdot);
  State x = vi.stateFromVelocity(q, qdot, Eigen::VectorXd());
  StepReport rep = vi.makeReport();
  ArmRun run;
  double first_energy_J = 0.0;
  const int steps = static_cast<int>(std::lround(seconds / options.dt_s));
  for (int k = 0; k < steps; ++k) {
    if (vi.step(x, x.rho, x, &rep) != StepStatus::Ok) {
      ADD_FAILURE() << "step " << k;
      break;
    }
    run.max_depth_m = std::max(run.max_depth_m, armDepthIntoTorso(*m, x.q));
    run.touching += rep.contacts_active > 0;
    run.sliding += rep.contacts_sliding > 0;
    if (k == 0) first_energy_J = rep.energy_J;
    run.max_energy_rise_J = std::max(run.max_energy_rise_J, rep.energy_J - first_energy_J);
  }
  return run;
}

// An arm swinging along its torso slides on it: its end stays out of the torso to 1 mm, slides
// while it swings, and friction takes its energy (never more than it started with: 1e-5 J of the
// 0.1 J, the midpoint energy's own ripple).
// Excluded in the model file, the same arm passes into the torso.
TEST(SelfContact, AnArmSwingingAlongItsTorsoSlidesOnItAndPassesThroughWhenExcluded) {
  const ArmRun run = swingAlongTheTorso(test::armBesideTorso(), 3.0);
  EXPECT_LE(run.max_depth_m, 1e-3);
  EXPECT_GT(run.touching, 500);
  EXPECT_GT(run.sliding, 300);
  EXPECT_LE(run.max_energy_rise_J, 1e-5);
  const ArmRun through =
      swingAlongTheTorso(test::armBesideTorso("contacts: {exclude: [[arm, torso]]}\n"), 1.0);
  EXPECT_GT(through.max_depth_m, 0.012);
}

// Against a torso too heavy to turn (1e4 kg m^2), the arm's end on the torso's side moves as it
// does on a fixed plane where that side is (a surface contact): the same slide, the same stop,
// the same forces.
TEST(SelfContact, OnATorsoTooHeavyToTurnTheArmMovesAsOnAFixedPlane) {
  std::vector<State> ends;
  std::vector<StepReport> reports;
  for (const bool self : {true, false}) {
    const ModelPtr m =
        test::armBesideTorso(self ? "contacts: {friction: 1}\n" : "contacts: {self: false}\n", 1e4);
    auto contacts = std::make_shared<Contacts>();
    contacts->points = contactPoints(*m);
    if (self) {
      addSelfContacts(*m, *contacts);
    } else {
      ContactSurface side;  // the box's +y face, rolled 0.3 rad about x
      side.normal = Eigen::Vector3d(0, std::cos(0.3), std::sin(0.3));
      side.offset_m = 0.10;
      side.friction = 1.0;
      contacts->surfaces.push_back(side);
    }
    VariationalIntegrator vi(m, at5ms(contacts));
    Eigen::VectorXd q, qdot;
    test::armSwingingForward(q, qdot);
    State x = vi.stateFromVelocity(q, qdot, Eigen::VectorXd());
    StepReport rep = vi.makeReport();
    int sliding = 0;
    for (int k = 0; k < 400; ++k) {
      ASSERT_EQ(vi.step(x, x.rho, x, &rep), StepStatus::Ok) << "step " << k;
      sliding += rep.contacts_sliding;
    }
    EXPECT_GT(sliding, 50);
    ends.push_back(x);
    reports.push_back(rep);
  }
  EXPECT_LT(std::abs(ends[0].q[0]), 1e-6);  // the torso barely turns
  EXPECT_LT((ends[0].q.tail(2) - ends[1].q.tail(2)).cwiseAbs().maxCoeff(), 1e-6);
  EXPECT_EQ(reports[0].contacts_sliding, 0);  // stopped on the side
  EXPECT_EQ(reports[1].contacts_sliding, 0);
  EXPECT_NEAR(reports[0].contact_force_N.sum(), reports[1].contact_force_N.sum(), 1e-3 * 0.036);
  EXPECT_NEAR(reports[0].contact_friction_N.colwise().norm().sum(),
              reports[1].contact_friction_N.colwise().norm().sum(), 1e-3 * 0.036);
}

TEST(SelfContact, TheLinearizationWithTheArmOnItsTorsoMatchesFiniteDifferences) {
  // With friction 3 the arm stops, well inside its cone: finite differences keep its modes.  (On
  // a torso that cannot turn, the arm's two joints could not take the contact's three
  // directions: its force along the arm would be indeterminate, and so would the step.)
  const ModelPtr m = test::armBesideTorso("contacts: {friction: 3.0}\n");
  const IntegratorOptions options = at5ms(itsOwnBody(*m));
  VariationalIntegrator vi(m, options);
  // Sliding along the torso as it swings (the torso turning), then stuck to it for 0.25 s (not
  // at the edge of its cone, where finite differences would change its mode).
  Eigen::VectorXd q, qdot;
  test::armSwingingForward(q, qdot);
  State x = vi.stateFromVelocity(q, qdot, Eigen::VectorXd());
  StepReport rep = vi.makeReport();
  bool slid = false, stuck = false;
  int stuck_steps = 0;
  for (int k = 0; k < 1000 && !(slid && stuck); ++k) {
    ASSERT_EQ(vi.step(x, x.rho, x, &rep), StepStatus::Ok);
    if (rep.contacts_active == 0 || k < 30) continue;
    const bool sliding = rep.contacts_sliding > 0;
    stuck_steps = sliding ? 0 : stuck_steps + 1;
    if (sliding ? !slid : !stuck && stuck_steps == 50) {
      test::checkLinearization(m, x, x.rho, sliding ? "the arm sliding" : "the arm stuck", options);
      (sliding ? slid : stuck) = true;
    }
  }
  EXPECT_TRUE(slid);
  EXPECT_TRUE(stuck);
}

// A box fixed on the stage (a table top) centred at `centre_m` with half sides `half_m`, that
// every contact point of `model` may touch with Coulomb's `friction` (sceneContacts' stage body).
IntegratorOptions onABox(const Model& model, const Eigen::Vector3d& centre_m,
                         const Eigen::Vector3d& half_m, double friction) {
  auto contacts = std::make_shared<Contacts>();
  contacts->points = contactPoints(model);
  Eigen::Isometry3d pose = Eigen::Isometry3d::Identity();
  pose.translation() = centre_m;
  contacts->bodies.push_back({"table", kStageFrame, pose, half_m, 0.0});
  for (std::size_t p = 0; p < contacts->points.size(); ++p)
    contacts->self.push_back({static_cast<int>(p), 0, friction, contacts->points[p].radius_m});
  IntegratorOptions options;
  options.dt_s = 0.01;
  options.contacts = contacts;
  return options;
}

// A sphere let down onto a frictionless table top (a box on the stage, its top at z = 0) lands
// when free fall says, rests on it with its weight borne exactly, never enters it and gains no
// energy, and keeps its horizontal speed; faster, it slides off the table's edge, round it (the
// gap's normal out of the edge) without entering the box, and falls.
TEST(StageBody, ASphereLandsOnATableTopRestsOnItAndSlidesOffItsEdge) {
  constexpr double kRadius = 0.05, kMass = 1.0;
  const ModelPtr m = test::probeModel(sphere(kRadius));
  const IntegratorOptions options =
      onABox(*m, Eigen::Vector3d(0, 0, -0.1), Eigen::Vector3d(0.2, 0.2, 0.1), 0.0);
  ASSERT_EQ(contactsProblem(*m, *options.contacts), "");
  ASSERT_EQ(options.contacts->rowName(0), "table/" + options.contacts->points[0].link);
  VariationalIntegrator vi(m, options);
  for (const double speed_mps : {0.05, 0.5}) {
    SCOPED_TRACE(speed_mps);
    Eigen::VectorXd q = Eigen::VectorXd::Zero(6), qdot = Eigen::VectorXd::Zero(6);
    q[2] = kRadius + 0.25;
    qdot[0] = speed_mps;
    State x = vi.stateFromVelocity(q, qdot, Eigen::VectorXd());
    StepReport rep = vi.makeReport();
    double energy = std::numeric_limits<double>::infinity();
    int landed_at = -1;
    for (int k = 1; k <= 150; ++k) {
      ASSERT_EQ(vi.step(x, x.rho, x, &rep), StepStatus::Ok) << "step " << k;
      EXPECT_LE(rep.max_penetration_m, 1e-9) << "step " << k;
      // Outside the box by the radius: the distance from its centre to the box.
      const Eigen::Vector3d centre = x.q.head<3>();
      const Eigen::Vector3d nearest =
          centre.cwiseMax(Eigen::Vector3d(-0.2, -0.2, -0.2)).cwiseMin(Eigen::Vector3d(0.2, 0.2, 0));
      EXPECT_GE((centre - nearest).norm() - kRadius, -1e-9) << "step " << k;
      EXPECT_LE(rep.energy_J, energy + 1e-9) << "step " << k;
      energy = rep.energy_J;
      if (landed_at < 0 && rep.contacts_active > 0) landed_at = k;
    }
    ASSERT_GT(landed_at, 0);
    EXPECT_NEAR(landed_at * options.dt_s, std::sqrt(2 * 0.25 / m->gravity_mps2), 0.02);
    if (speed_mps < 0.1) {
      EXPECT_EQ(rep.contacts_active, 1);
      EXPECT_NEAR(rep.contact_force_N[0], kMass * m->gravity_mps2, 1e-6 * kMass * m->gravity_mps2);
      EXPECT_NEAR(x.q[2], kRadius, 1e-9);
      EXPECT_NEAR(x.q[0], speed_mps * 150 * options.dt_s, 1e-9);
    } else {
      // Off the edge at x = 0.2 by about 0.5 s, then a second of free fall.
      EXPECT_EQ(rep.contacts_active, 0);
      EXPECT_LT(x.q[2], -2.0);
      EXPECT_GT(x.q[0], 0.2);
    }
  }
}

// A capsule tipped onto a table top, one end landing first (turned so that it lands inside the
// top, away from its edges), with friction (mu 0.5): the step's linearization with that
// stage-body row touching against central differences.
TEST(StageBody, TheLinearizationOnATableTopMatchesFiniteDifferences) {
  const ModelPtr m = capsuleAlongX(Eigen::Vector3d(0.05, 0.01, 0));
  checkLinearizationOnOneEnd(
      m, onABox(*m, Eigen::Vector3d(0, 0, -0.1), Eigen::Vector3d(0.5, 0.5, 0.1), 0.5),
      "a capsule on one end on a table top");
}

}  // namespace
}  // namespace marionette
