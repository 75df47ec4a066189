// SPDX-License-Identifier: BSD-3-Clause
// A capsule's middle touching a body (contact.hpp's segment rows): segmentCoreGap against the
// best of a dense sampling of its spheres, the row's gradient against central differences, a rod
// let down across a bar (two capsules crossing at their middles) and across a ridge (a box's edge)
// rests on it without entering it and with its weight borne, and falls through without the row;
// the step's linearization with the rod sticking and sliding on the bar against finite
// differences; marionette25's forearm swung into its pelvis's edge stops on it, and its rig
// oscillating for 20 s with its links touching runs to the end; a step without a solution with
// the middles is taken without them and says so.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "marionette/models/contact.hpp"
#include "marionette/models/contact_rows.hpp"
#include "marionette/models/dynamics.hpp"
#include "marionette/models/integrator.hpp"
#include "marionette/models/model_io.hpp"
#include "marionette/models/rest_pose.hpp"
#include "support/linearization_check.hpp"
#include "support/test_models.hpp"

namespace marionette {
namespace {

using test::bar;
using test::kRodRadius_m;
using test::onAStageBody;
using test::ridge;
using test::rod;

// The greatest of coreGap over n + 1 evenly spaced points of the segment.
double sampledSegmentGap(const ContactBody& body, const Eigen::Vector3d& a,
                         const Eigen::Vector3d& b, double radius_m, int n) {
  double best = -1e300;
  for (int i = 0; i <= n; ++i) {
    const double t = static_cast<double>(i) / n;
    best = std::max(best, coreGap(body, a + t * (b - a), radius_m).gap_m);
  }
  return best;
}

TEST(SegmentContact, TheSegmentsGapIsTheBestOfItsSpheres) {
  std::mt19937 rng(3);
  std::uniform_real_distribution<double> u(-1.0, 1.0), size(0.0, 0.2);
  int inside = 0, middle = 0;
  for (int trial = 0; trial < 600; ++trial) {
    ContactBody body;
    if (trial % 3 == 0) {  // a box
      body.half_m = Eigen::Vector3d(size(rng), size(rng), size(rng)) + Eigen::Vector3d::Constant(0.01);
    } else if (trial % 3 == 1) {  // a capsule
      body.half_m.z() = size(rng) + 0.01;
      body.radius_m = 0.5 * size(rng);
    } else {  // a box with a rounded edge (radius) and a flat side (half 0 on x)
      body.half_m = Eigen::Vector3d(0.0, size(rng), size(rng) + 0.01);
      body.radius_m = 0.2 * size(rng);
    }
    const Eigen::Vector3d a = 0.3 * Eigen::Vector3d(u(rng), u(rng), u(rng));
    // Every fifth along a face or an axis (ties along the segment), the rest anywhere.
    Eigen::Vector3d b = a + 0.4 * Eigen::Vector3d(u(rng), u(rng), u(rng));
    if (trial % 5 == 0) b[trial % 3] = a[trial % 3];
    const double radius_m = 0.02;
    const SegmentGap s = segmentCoreGap(body, a, b, radius_m);
    const double sampled = sampledSegmentGap(body, a, b, radius_m, 20000);
    SCOPED_TRACE(trial);
    // No sample beats it (to round-off), and it is within the sampling's resolution of the best.
    EXPECT_GE(s.gap_m, sampled - 1e-12);
    EXPECT_LE(s.gap_m - sampled, 1e-4 * (b - a).norm());
    // It is coreGap's at its own point.
    ASSERT_GE(s.t, 0.0);
    ASSERT_LE(s.t, 1.0);
    EXPECT_LE((s.x_core - (a + s.t * (b - a))).norm(), 1e-15);
    const CoreGap at = coreGap(body, s.x_core, radius_m);
    EXPECT_NEAR(at.gap_m, s.gap_m, 1e-12);
    EXPECT_LE((at.normal_core - s.normal_core).norm(), 1e-9);
    inside += s.gap_m > radius_m + body.radius_m;
    middle += s.t > 0.0 && s.t < 1.0;
  }
  // Both branches, and points inside the segment, were exercised.
  EXPECT_GT(inside, 20);
  EXPECT_GT(middle, 100);
}

IntegratorOptions options10ms(std::shared_ptr<const Contacts> contacts) {
  IntegratorOptions options;
  options.dt_s = 0.01;
  options.contacts = std::move(contacts);
  return options;
}

TEST(SegmentContact, TheRowsGradientMatchesCentralDifferences) {
  const ModelPtr m = rod();
  for (const ContactBody& stage : {bar(), ridge()}) {
    SCOPED_TRACE(stage.name);
    const auto contacts = onAStageBody(*m, stage, 0.5, true);
    ASSERT_EQ(contactsProblem(*m, *contacts), "");
    const int row = contacts->rows() - 1;
    ASSERT_TRUE(contacts->segmentRow(row));
    EXPECT_EQ(contacts->rowName(row), stage.name + "/" + contacts->bodies[0].name);
    ContactRows rows(*m, *contacts);
    DynamicsData d(*m);
    // Crossing it near its middle, tilted and turned: the deepest point inside the segment.
    Eigen::VectorXd q(6);
    q << 0.03, 0.01, 0.015, 0.2, 0.1, 0.3;
    forwardKinematics(*m, d, q);
    Eigen::RowVectorXd gradient(6);
    const double gap = rows.gap(d, row, gradient);
    EXPECT_GT(gap, -0.01);
    const double h = 1e-6;
    Eigen::RowVectorXd central(6);
    for (int i = 0; i < 6; ++i) {
      Eigen::VectorXd qp = q, qm = q;
      qp[i] += h;
      qm[i] -= h;
      forwardKinematics(*m, d, qp);
      const double gp = rows.gap(d, row);
      forwardKinematics(*m, d, qm);
      central[i] = (gp - rows.gap(d, row)) / (2 * h);
    }
    EXPECT_LE((gradient - central).norm(), 1e-7 * gradient.norm()) << gradient << "\n" << central;
  }
}

struct Landing {
  double lowest_m = 1e300;        // the rod's centre, lowest
  double max_penetration_m = 0.0;  // the step's report, largest
  double force_N = 0.0;            // the segment row's normal force at the end
  int active = 0;                  // rows touching at the end
};

// The rod let down level from 5 cm across `stage` (centred over it, at right angles) for 1 s.
Landing letDownAcross(const ContactBody& stage, bool segment) {
  const ModelPtr m = rod();
  const auto contacts = onAStageBody(*m, stage, 0.5, segment);
  VariationalIntegrator vi(m, options10ms(contacts));
  Eigen::VectorXd q = Eigen::VectorXd::Zero(6);
  q[2] = kRodRadius_m + 0.05;
  State x = vi.stateFromVelocity(q, Eigen::VectorXd::Zero(6), Eigen::VectorXd());
  StepReport rep = vi.makeReport();
  Landing out;
  for (int k = 0; k < 100; ++k) {
    if (vi.step(x, x.rho, x, &rep) != StepStatus::Ok) ADD_FAILURE() << "step " << k;
    out.lowest_m = std::min(out.lowest_m, x.q[2]);
    out.max_penetration_m = std::max(out.max_penetration_m, rep.max_penetration_m);
  }
  out.active = rep.contacts_active;
  if (segment) out.force_N = rep.contact_force_N[contacts->rows() - 1];
  return out;
}

TEST(SegmentContact, ARodLetDownAcrossABarOrARidgeRestsOnItsMiddle) {
  const double weight_N = 1.0 * rod()->gravity_mps2;
  for (const ContactBody& stage : {bar(), ridge()}) {
    SCOPED_TRACE(stage.name);
    const Landing on = letDownAcross(stage, true);
    EXPECT_LE(on.max_penetration_m, 1e-9);
    // Resting on its middle, its centre a radius above the top: the weight borne by that row.
    EXPECT_GE(on.lowest_m, kRodRadius_m - 1e-9);
    EXPECT_EQ(on.active, 1);
    EXPECT_NEAR(on.force_N, weight_N, 1e-6 * weight_N);
    // Without the row, its ends off the body, it falls into it (past the bar; on the ridge, until
    // its ends catch on the slopes 12 cm down).
    const Landing through = letDownAcross(stage, false);
    EXPECT_LT(through.lowest_m, -0.1);
  }
}

TEST(SegmentContact, TheLinearizationWithTheRodOnTheBarMatchesFiniteDifferences) {
  const ModelPtr m = rod();
  for (const double friction : {0.5, 0.05}) {
    SCOPED_TRACE(friction);
    const auto contacts = onAStageBody(*m, bar(), friction, true);
    const IntegratorOptions options = options10ms(contacts);
    VariationalIntegrator vi(m, options);
    // Landing across the bar turned a little (yaw 0.2): on the rough bar at rest, it sticks; on
    // the slippery one moving along its own axis, it slides along it.
    const bool slippery = friction < 0.1;
    Eigen::VectorXd q(6), qdot = Eigen::VectorXd::Zero(6);
    q << 0.02, 0.0, kRodRadius_m + 0.002, 0.2, 0.0, 0.0;
    if (slippery) qdot.head<2>() = 0.3 * Eigen::Vector2d(std::cos(0.2), std::sin(0.2));
    State x = vi.stateFromVelocity(q, qdot, Eigen::VectorXd());
    StepReport rep = vi.makeReport();
    int touching = 0;
    for (int k = 0; k < 100 && touching < 5; ++k) {
      ASSERT_EQ(vi.step(x, x.rho, x, &rep), StepStatus::Ok) << "step " << k;
      touching = rep.contact_force_N[contacts->rows() - 1] > 0.0 ? touching + 1 : 0;
    }
    ASSERT_EQ(touching, 5) << "the rod never rested on the bar";
    EXPECT_EQ(rep.contacts_sliding, slippery ? 1 : 0);
    test::checkLinearization(m, x, x.rho, slippery ? "sliding" : "sticking", options);
  }
}

// The greatest gap of its forearm's middle against its pelvis over marionette25 swinging its
// left arm in across its pelvis's upper edge (from hanging at its initial pose with the arm
// 0.4 rad forward and 0.1 rad out, at 3 rad/s), for 0.3 s; and the most force that row bore.
struct Swing {
  double deepest_m = -1e300;
  double force_N = 0.0;
};
Swing swingTheArmIn(bool segments) {
  const test::ForearmOnPelvis arm = test::forearmOnPelvis();
  const ModelPtr& m = arm.model;
  const int row = arm.row;
  EXPECT_GE(row, 0);
  auto contacts = std::make_shared<Contacts>(*arm.contacts);
  if (!segments)
    contacts->self.erase(std::remove_if(contacts->self.begin(), contacts->self.end(),
                                        [](const SelfContact& c) { return c.segment >= 0; }),
                         contacts->self.end());
  VariationalIntegrator vi(m, options10ms(contacts));
  DynamicsData d(*m);
  ContactRows measure(*m, *arm.contacts);  // the segment row, with or without it in the step
  Eigen::VectorXd q, qdot;
  test::armSwingingInAcrossThePelvis(*m, q, qdot);
  State x = vi.stateFromVelocity(q, qdot, m->defaultInputs());
  StepReport rep = vi.makeReport();
  Swing out;
  for (int k = 0; k < 30; ++k) {
    if (vi.step(x, x.rho, x, &rep) != StepStatus::Ok) ADD_FAILURE() << "step " << k;
    forwardKinematics(*m, d, m->configuration(x.q, x.rho));
    out.deepest_m = std::max(out.deepest_m, measure.gap(d, row));
    if (segments) out.force_N = std::max(out.force_N, rep.contact_force_N[row]);
  }
  return out;
}

TEST(SegmentContact, Marionette25sForearmStopsOnItsPelvissEdge) {
  // Its middle meets the edge (both ends clear) and bears up to 7 N, never entering it; without
  // the segment rows it passes 2 cm through.
  const Swing with = swingTheArmIn(true);
  EXPECT_LE(with.deepest_m, 1e-9);
  EXPECT_GT(with.force_N, 1.0);
  const Swing without = swingTheArmIn(false);
  EXPECT_GT(without.deepest_m, 0.01);
}

// marionette25 hanging over the floor, its rig's every input oscillating for 20 s (the step-cost
// benchmark's motion: 3 cm along x and y, 2 cm in length, at 0.3 + 0.07 i Hz, faded in and out),
// with the floor and its links as contacts: every step completes (one failed at 14.3 s, a forearm's
// middle creeping deeper than its touching elbow on the chest: kSegmentMargin_m's band), its
// capsules' middles bear load, and none enters a body deeper than twice the margin (the ends'
// rows stand for a middle within it).
TEST(SegmentContact, Marionette25FollowsItsRigWithItsLinksTouching) {
  const ModelPtr m = loadModel("marionette25");
  auto contacts = std::make_shared<Contacts>();
  contacts->points = contactPoints(*m);
  contacts->surfaces.push_back(floorSurface(*m));
  addSelfContacts(*m, *contacts);
  VariationalIntegrator vi(m, options10ms(contacts));
  auto inputs = [&](double t) {
    Eigen::VectorXd u = m->defaultInputs();
    const double fade = std::pow(std::sin(M_PI * t / 20.0), 2);
    for (int i = 0; i < m->nk(); ++i) {
      bool moves_frame = false;
      for (const Frame& f : m->frames) moves_frame |= f.variable == m->nd() + i;
      u[i] += fade * (moves_frame ? 0.03 : 0.02) * std::sin(2 * M_PI * (0.3 + 0.07 * i) * t);
    }
    return u;
  };
  const RestPose rest = computeRestPose(m, inputs(0.0));
  ASSERT_TRUE(rest.ok) << rest.message;
  State x = vi.stateFromVelocity(rest.q, Eigen::VectorXd::Zero(m->nd()), inputs(0.0));
  StepReport rep = vi.makeReport();
  ContactRows rows(*m, *contacts);
  DynamicsData d(*m);
  int middles_loaded = 0;
  double deepest_m = -1.0;
  for (int k = 1; k <= 2000; ++k) {
    ASSERT_EQ(vi.step(x, inputs(0.01 * k), x, &rep), StepStatus::Ok) << "step " << k;
    forwardKinematics(*m, d, m->configuration(x.q, x.rho));
    bool loaded = false;
    for (int r = 0; r < contacts->rows(); ++r) {
      if (!contacts->segmentRow(r)) continue;
      loaded = loaded || rep.contact_force_N[r] > 0.0;
      deepest_m = std::max(deepest_m, rows.gap(d, r));
    }
    middles_loaded += loaded;
  }
  EXPECT_GT(middles_loaded, 10);
  EXPECT_LE(deepest_m, 2 * kSegmentMargin_m + 1e-9);
}

// A step with the capsules' middles that has no solution, substeps included, while the end rows
// alone have one: marionette25 on the table's stage turning its forearm along its chest with its
// elbow on it (a kpiece plan's re-simulation, 8.98 s, its state to the bit), where the elbow's row
// and the forearm's middle are one constraint twice.  The step is taken without the middles and
// says so, and its end equals the step's without segment rows.
TEST(SegmentContact, AStepWithoutASolutionWithTheMiddlesIsTakenWithoutThemAndSaysSo) {
  const std::vector<double> q = {0.17746190759100938,
                                 0.29983620903141955,
                                 -0.67572212886225791,
                                 1.0015031293850463,
                                 1.1368152464087269,
                                 -0.69256067564155455,
                                 -0.5,
                                 0.7933371253073932,
                                 0.20952803919105734,
                                 -0.29999999999999999,
                                 -0.38439677449557896,
                                 -1.3930460097776096,
                                 1.1208726388762145,
                                 0.09067366597838615,
                                 0.95702073192684733,
                                 1.5,
                                 1.6535312354955405,
                                 0.80000000000000004,
                                 -0.5,
                                 0.61517500927903412,
                                 1.9476331251599563,
                                 0.80000000000000004,
                                 0.26895698743585816,
                                 -0.80000000000000004,
                                 1.123418382913365};
  const std::vector<double> p = {
      -0.529725172051277,     1.0899018651602101,     0.12751857311741377,  -0.26568399699130024,
      0.13424448977443348,    0.29208594366416413,    0.11556439741650254,  0.0031503961412710012,
      0.0039334324771711175,  0.0039318721001535316,  0.010516800636974976, 0.0043275049263085605,
      0.0019927222270196688,  -0.0032937774760093607, 0.010886737491626795, -0.0051232819227926638,
      -0.0052668149237945962, -0.0024637742855201637, 0.014625228564673321, 0.009620191246437931,
      0.015927099854711746,   0.0032099411525187021,  0.05571577884706104,  -0.011053270016830112,
      -0.00097400541518842477};
  const std::vector<double> rho = {0.37005760257125181,   0.10879690751895407,  0.63412149804278728,
                                   0.042635123392318591,  -0.01731911332226738, 0.78711132648318294,
                                   0.46709374386977609,   0.17724704358169327,  0.77575053089645263,
                                   -0.075593487073757099, -0.16721583049047151, 0.97389696232567802,
                                   0.17660711877695637,   0.13665530976796209,  1.021107945949288,
                                   -0.42241296909110609,  0.12981716522256395,  0.61711682026943548,
                                   -0.42777783374323336,  0.23189722649086486,  1.3091682968743654};
  const std::vector<double> next_rho = {
      0.37107300653272174,  0.10839780397453706,   0.62982480358206427,  0.047849941863638418,
      -0.01731911332226738, 0.79530678939021993,   0.46701945775641762,  0.17664778606517828,
      0.78469446483801952,  -0.075593487073757099, -0.16145826949045025, 0.9662436865809404,
      0.17523612414472356,  0.13717793832308334,   1.0252797111639915,   -0.42241296909110609,
      0.1376128501335783,   0.61112021161399666,   -0.42514692954028238, 0.23189722649086486,
      1.3094674869204681};
  const ModelPtr m = loadModel("marionette25");
  auto contacts = std::make_shared<Contacts>();
  contacts->points = contactPoints(*m);
  contacts->surfaces.push_back(floorSurface(*m));
  addSelfContacts(*m, *contacts);
  auto ends_only = std::make_shared<Contacts>(*contacts);
  ends_only->self.erase(std::remove_if(ends_only->self.begin(), ends_only->self.end(),
                                       [](const SelfContact& c) { return c.segment >= 0; }),
                        ends_only->self.end());
  IntegratorOptions options = options10ms(contacts);
  options.dt_s = 0.02;  // (the plan's 50 Hz)
  auto vec = [](const std::vector<double>& v) {
    return Eigen::Map<const Eigen::VectorXd>(v.data(), static_cast<Eigen::Index>(v.size())).eval();
  };
  const State x{vec(q), vec(p), vec(rho)};
  VariationalIntegrator with(m, options);
  State next = with.makeState();
  StepReport rep = with.makeReport();
  ASSERT_EQ(with.step(x, vec(next_rho), next, &rep), StepStatus::Ok);
  EXPECT_EQ(rep.segment_rows_dropped, 1);
  options.contacts = ends_only;
  VariationalIntegrator without(m, options);
  State plain = without.makeState();
  StepReport plain_rep = without.makeReport();
  ASSERT_EQ(without.step(x, vec(next_rho), plain, &plain_rep), StepStatus::Ok);
  EXPECT_EQ(plain_rep.segment_rows_dropped, 0);
  EXPECT_LE((next.q - plain.q).cwiseAbs().maxCoeff(), 1e-12);
}

}  // namespace
}  // namespace marionette
