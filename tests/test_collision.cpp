// SPDX-License-Identifier: BSD-3-Clause
// The collision layer: distances against analytic values, strings that snag, the built-in models
// on the built-in stages, self-collision rules, and thread safety.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <random>
#include <thread>

#include "marionette/environments/checked_simulation.hpp"
#include "marionette/environments/collision.hpp"
#include "marionette/environments/scene_contacts.hpp"
#include "marionette/models/dynamics.hpp"
#include "marionette/models/model_io.hpp"
#include "marionette/models/rest_pose.hpp"
#include "support/test_models.hpp"
#include "support/test_paths.hpp"

namespace marionette {
namespace {

using test::probeModel;

Eigen::VectorXd placed(double x, double y, double z, double yaw = 0, double pitch = 0,
                       double roll = 0) {
  Eigen::VectorXd q(6);
  q << x, y, z, yaw, pitch, roll;
  return q;
}

Shape capsule(double r, double len) {
  Shape s;
  s.type = ShapeType::Capsule;
  s.radius_m = r;
  s.length_m = len;
  return s;
}
Shape sphere(double r) {
  Shape s;
  s.type = ShapeType::Sphere;
  s.radius_m = r;
  return s;
}

ScenePtr sceneFrom(const std::string& yaml, const std::string& base_dir = "") {
  return loadSceneString(yaml, "test-scene.yaml", base_dir);
}

CollisionChecker checkerFor(const ModelPtr& model, const ScenePtr& scene,
                            CollisionOptions options = {}) {
  return CollisionChecker(std::make_shared<CollisionModel>(model, scene, options));
}

// ---- Analytic distances -----------------------------------------------------------------------

// A 0.2 m cube at the origin; a capsule r = 0.05, 0.4 long.
constexpr double kDistanceTol = 1e-6;
const char* kCubeScene = R"(
obstacles:
  - {name: cube, box: {size: [0.2, 0.2, 0.2]}}
)";

TEST(CollisionAnalytic, CapsuleAgainstBox) {
  auto checker = checkerFor(probeModel(capsule(0.05, 0.4)), sceneFrom(kCubeScene));
  // Upright beside a face: 0.3 - 0.1 - 0.05.
  ClearanceResult c = checker.clearance(placed(0.3, 0.0, 0.0));
  EXPECT_NEAR(c.distance_m, 0.15, kDistanceTol);
  EXPECT_EQ(c.pair.kind, ContactKind::LinkObstacle);
  EXPECT_EQ(c.pair.first, "body");
  EXPECT_EQ(c.pair.second, "cube");
  EXPECT_NEAR(c.point_first_m.x(), 0.25, kDistanceTol);  // on the capsule
  EXPECT_NEAR(c.point_second_m.x(), 0.1, kDistanceTol);  // on the cube's face
  // Lying along x (pitched 90 deg), its end 0.3 from the centre: again 0.15, off-centre in y, z.
  c = checker.clearance(placed(0.5, 0.05, 0.02, 0, M_PI / 2, 0));
  EXPECT_NEAR(c.distance_m, 0.15, kDistanceTol);
  // Its lower end above a corner: |(0.2, 0.2, 0.2)| - r.
  c = checker.clearance(placed(0.3, 0.3, 0.5));
  EXPECT_NEAR(c.distance_m, std::sqrt(3.0) * 0.2 - 0.05, kDistanceTol);
  EXPECT_FALSE(checker.inCollision(placed(0.3, 0.3, 0.5)).in_collision);
  // Overlapping by 1 mm.
  const CollisionResult hit = checker.inCollision(placed(0.149, 0.0, 0.0));
  EXPECT_TRUE(hit.in_collision);
  EXPECT_EQ(hit.pair.second, "cube");
  EXPECT_EQ(checker.clearance(placed(0.149, 0.0, 0.0)).distance_m, 0.0);
}

TEST(CollisionAnalytic, SphereAgainstPlanes) {
  const ScenePtr scene = sceneFrom(R"(
obstacles:
  - {name: floor, plane: {normal: [0, 0, 1], offset: 0.0}}
  - {name: ramp, plane: {normal: [-1, 0, 1], offset: -0.6}}
)");
  auto checker = checkerFor(probeModel(sphere(0.1)), scene);
  // Above the floor: h - r.
  ClearanceResult c = checker.clearance(placed(0.0, 0.0, 0.35));
  EXPECT_NEAR(c.distance_m, 0.25, 1e-12);
  EXPECT_EQ(c.pair.second, "floor");
  EXPECT_NEAR(c.point_second_m.z(), 0.0, 1e-12);
  // Near the ramp (solid where (-x + z)/sqrt2 <= -0.6/sqrt2): distance (z - x + 0.6)/sqrt2 - r.
  c = checker.clearance(placed(1.0, 0.0, 0.6));
  EXPECT_NEAR(c.distance_m, (0.6 - 1.0 + 0.6) / std::sqrt(2.0) - 0.1, 1e-12);
  EXPECT_EQ(c.pair.second, "ramp");
  EXPECT_FALSE(checker.inCollision(placed(1.0, 0.0, 0.6)).in_collision);
  // Sinking into the floor: a collision, clearance 0.
  EXPECT_TRUE(checker.inCollision(placed(0.0, 0.0, 0.099)).in_collision);
  EXPECT_EQ(checker.inCollision(placed(0.0, 0.0, 0.099)).pair.second, "floor");
  EXPECT_EQ(checker.clearance(placed(0.0, 0.0, 0.099)).distance_m, 0.0);
}

// A surface the puppet may touch (Obstacle::contact: a plane's default), with
// touch_contact_surfaces: a link resting on it or in it by less than the tolerance is not in
// collision, and the stage clearance leaves it out while the clearance to anything keeps it;
// deeper is a collision with it; a plane that says contact: false stays forbidden; without the
// option, touching is a collision as before.  The bounds' floor face, on the floor, is the floor.
TEST(CollisionAnalytic, ASurfaceThePuppetMayTouchIsACollisionOnlyBeyondTheTolerance) {
  const ScenePtr scene = sceneFrom(R"(
bounds: {min: [-5, -5, 0], max: [5, 5, 5]}
obstacles:
  - {name: floor, plane: {normal: [0, 0, 1], offset: 0.0}, friction: 0.3}
  - {name: wall, plane: {normal: [1, 0, 0], offset: -1.0}, contact: false}
  - {name: cube, box: {size: [0.2, 0.2, 0.2]}, pose: {position: [0, 2, 1]}}
)");
  ASSERT_TRUE(scene->obstacles[0].contact);
  EXPECT_EQ(scene->obstacles[0].friction, 0.3);
  EXPECT_FALSE(scene->obstacles[1].contact);
  EXPECT_FALSE(scene->obstacles[2].contact);
  const ModelPtr ball = probeModel(sphere(0.1));
  CollisionOptions touch;
  touch.touch_contact_surfaces = true;
  auto checker = checkerFor(ball, scene, touch);
  auto strict = checkerFor(ball, scene);
  for (double depth_m : {0.0, 0.0005, 0.0009}) {
    SCOPED_TRACE(depth_m);
    const Eigen::VectorXd q = placed(0.0, 0.0, 0.1 - depth_m);
    EXPECT_FALSE(checker.inCollision(q).in_collision);
    const ClearanceResult c = checker.clearance(q);
    EXPECT_FALSE(c.in_collision);
    EXPECT_EQ(c.distance_m, 0.0);  // touching the floor
    EXPECT_EQ(c.pair.second, "floor");
    EXPECT_NEAR(c.stage_distance_m, 1.0 - 0.1, 1e-12);  // the wall, the nearest forbidden
    EXPECT_EQ(c.stage_pair.second, "wall");
    EXPECT_FALSE(checker.checkState(q).in_collision);
    EXPECT_TRUE(strict.inCollision(q).in_collision || depth_m == 0.0);
  }
  const Eigen::VectorXd deep = placed(0.0, 0.0, 0.1 - 0.0011);
  EXPECT_TRUE(checker.inCollision(deep).in_collision);
  EXPECT_EQ(checker.inCollision(deep).pair.second, "floor");
  EXPECT_TRUE(checker.clearance(deep).in_collision);
  // The wall is forbidden: touching it is a collision.
  EXPECT_TRUE(checker.inCollision(placed(-0.9, 0.0, 1.0)).in_collision);
  EXPECT_EQ(checker.inCollision(placed(-0.9, 0.0, 1.0)).pair.second, "wall");
}

// A box the puppet may touch (contact: true: a table top), with touch_contact_surfaces: a ball
// resting on it or in it by less than the tolerance is not in collision, the clearance to
// anything reads 0 with the table, the stage clearance leaves the table out (the forbidden cube
// is the nearest); deeper is a collision with the table; without the option it is forbidden.
TEST(CollisionAnalytic, ABoxThePuppetMayTouchIsACollisionOnlyBeyondTheTolerance) {
  const ScenePtr scene = sceneFrom(R"(
obstacles:
  - {name: table, box: {size: [1, 1, 0.1]}, pose: {position: [0, 0, 0.45]}, contact: true,
     friction: 0.4}
  - {name: cube, box: {size: [0.2, 0.2, 0.2]}, pose: {position: [0, 2, 0.6]}}
)");
  ASSERT_TRUE(scene->obstacles[0].contact);
  EXPECT_EQ(scene->obstacles[0].friction, 0.4);
  const ModelPtr ball = probeModel(sphere(0.1));
  CollisionOptions touch;
  touch.touch_contact_surfaces = true;
  auto checker = checkerFor(ball, scene, touch);
  auto strict = checkerFor(ball, scene);
  for (double depth_m : {0.0, 0.0005, 0.0009}) {
    SCOPED_TRACE(depth_m);
    const Eigen::VectorXd q = placed(0.3, 0.0, 0.6 - depth_m);
    EXPECT_FALSE(checker.inCollision(q).in_collision);
    const ClearanceResult c = checker.clearance(q);
    EXPECT_FALSE(c.in_collision);
    EXPECT_EQ(c.distance_m, 0.0);
    EXPECT_EQ(c.pair.second, "table");
    EXPECT_NEAR(c.stage_distance_m, std::hypot(0.2, 1.9) - 0.1, 1e-6);  // the cube's edge
    EXPECT_EQ(c.stage_pair.second, "cube");
    EXPECT_TRUE(strict.inCollision(q).in_collision || depth_m == 0.0);
  }
  EXPECT_NEAR(checker.clearance(placed(0.3, 0.0, 0.65)).distance_m, 0.05, 1e-9);
  const Eigen::VectorXd deep = placed(0.3, 0.0, 0.6 - 0.0011);
  EXPECT_TRUE(checker.inCollision(deep).in_collision);
  EXPECT_EQ(checker.inCollision(deep).pair.second, "table");
  EXPECT_TRUE(checker.clearance(deep).in_collision);
  // The cube is forbidden: touching it is a collision.
  EXPECT_EQ(checker.inCollision(placed(0.0, 1.85, 0.6)).pair.second, "cube");
}

// Two links that touch as self-contacts (test::armBesideTorso: an arm's end on its torso's
// side), with touch_contact_surfaces: 0.5 mm into the torso is no collision, 1.5 mm is one
// between the two links; without the option, or with the pair excluded from contact in the model
// file, touching is a collision as before.
TEST(CollisionAnalytic, LinksThatTouchAsContactsCollideOnlyBeyondTheTolerance) {
  // The arm's lower end at shoulder angle a: (0, 0.1 + 0.2 sin a, 0.2 - 0.2 cos a); across the
  // torso's side (rolled 0.3 rad), 0.11 m out of the box's centre plane at depth 0.
  auto arm_angle_at_depth = [](double depth_m) {
    auto out_m = [](double a) {
      return (0.1 + 0.2 * std::sin(a)) * std::cos(0.3) + (0.2 - 0.2 * std::cos(a)) * std::sin(0.3);
    };
    double lo = 0.0, hi = 0.2;  // out_m rises with a here
    for (int k = 0; k < 100; ++k) {
      const double mid = 0.5 * (lo + hi);
      (out_m(mid) < 0.11 - depth_m ? lo : hi) = mid;
    }
    return 0.5 * (lo + hi);
  };
  const ScenePtr open = sceneFrom("obstacles: []\n");
  CollisionOptions touch;
  touch.touch_contact_surfaces = true;
  auto checker = checkerFor(test::armBesideTorso(), open, touch);
  auto strict = checkerFor(test::armBesideTorso(), open);
  auto excluded =
      checkerFor(test::armBesideTorso("contacts: {exclude: [[arm, torso]]}\n"), open, touch);
  auto at = [&](double depth_m) {
    Eigen::VectorXd q(3);
    q << 0.0, arm_angle_at_depth(depth_m), 0.0;
    return q;
  };
  EXPECT_FALSE(checker.inCollision(at(-0.001)).in_collision);
  EXPECT_FALSE(strict.inCollision(at(-0.001)).in_collision);
  EXPECT_FALSE(checker.inCollision(at(0.0005)).in_collision);
  EXPECT_FALSE(checker.checkState(at(0.0005)).in_collision);
  EXPECT_NEAR(checker.clearance(at(0.0005), Penetration::Signed).distance_m, -0.0005, 1e-5);
  const CollisionResult deep = checker.inCollision(at(0.0015));
  EXPECT_TRUE(deep.in_collision);
  EXPECT_EQ(deep.pair.kind, ContactKind::LinkLink);
  EXPECT_TRUE(strict.inCollision(at(0.0005)).in_collision);
  EXPECT_TRUE(excluded.inCollision(at(0.0005)).in_collision);
}

// The integrator's contacts from a scene: each plane the puppet may touch, in the model's world
// frame (through its stage pose and the plane's own pose), with its friction, against every
// contact point: the empty stage's floor is floorSurface; a plane that says contact: false gives
// none, and then only the puppet's links touch (none without self-contact); a box that says
// contact: true is a body on the stage.
TEST(CollisionStages, ASceneGivesTheIntegratorTheSurfacesThePuppetMayTouch) {
  const ModelPtr m = loadModel("puppetcopter");
  const auto empty = sceneContacts(*m, *loadScene("empty"));
  ASSERT_TRUE(empty);
  ASSERT_EQ(empty->surfaces.size(), 1u);
  const ContactSurface floor = floorSurface(*m);
  EXPECT_EQ(empty->surfaces[0].name, "floor");
  EXPECT_LT((empty->surfaces[0].normal - floor.normal).norm(), 1e-12);
  EXPECT_NEAR(empty->surfaces[0].offset_m, floor.offset_m, 1e-12);
  EXPECT_EQ(empty->surfaces[0].friction, kDefaultFriction);
  EXPECT_EQ(empty->points.size(), contactPoints(*m).size());
  EXPECT_EQ(contactsProblem(*m, *empty), "");
  // A step raised 10 cm (the plane's pose), tilted about x by 0.1 rad, with friction 0.2.
  const auto raised = sceneContacts(*m, *sceneFrom(R"(
obstacles:
  - {name: step, plane: {normal: [0, 0, 1]}, pose: {position: [0, 0, 0.1], rpy: [0.1, 0, 0]},
     friction: 0.2}
)"));
  ASSERT_TRUE(raised);
  const Eigen::Matrix3d R_world_stage = m->stage_pose.linear().transpose();
  const Eigen::Vector3d n_stage(0, -std::sin(0.1), std::cos(0.1));
  EXPECT_LT((raised->surfaces[0].normal - R_world_stage * n_stage).norm(), 1e-12);
  EXPECT_NEAR(raised->surfaces[0].offset_m,
              n_stage.dot(Eigen::Vector3d(0, 0, 0.1) - m->stage_pose.translation()), 1e-12);
  EXPECT_EQ(raised->surfaces[0].friction, 0.2);
  // Nothing of the scene to touch: the puppet's own links only (the model's contacts: section).
  const auto own = sceneContacts(*m, *sceneFrom(R"(
obstacles:
  - {name: floor, plane: {normal: [0, 0, 1]}, contact: false}
)"));
  ASSERT_TRUE(own);
  EXPECT_TRUE(own->surfaces.empty());
  EXPECT_FALSE(own->self.empty());
  // A box the puppet may touch (a table top, turned 0.2 rad about z): one body fixed on the
  // stage, at its pose in the model's world frame, after the self-contacts, touched by every
  // point with the box's friction and the point's own radius; a box that may not, none.
  const auto table = sceneContacts(*m, *sceneFrom(R"(
obstacles:
  - {name: table, box: {size: [0.6, 0.4, 0.05]}, pose: {position: [0.1, 0, 0.3], rpy: [0, 0, 0.2]},
     contact: true, friction: 0.3}
  - {name: shelf, box: {size: [0.6, 0.4, 0.05]}, pose: {position: [2, 0, 0.3]}}
)"));
  ASSERT_TRUE(table);
  EXPECT_EQ(contactsProblem(*m, *table), "");
  ASSERT_EQ(table->bodies.size(), own->bodies.size() + 1);
  // (And a segment row for each of its capsules' middles.)
  int capsules = 0;
  for (const ContactBody& b : own->bodies) capsules += isCapsule(b);
  ASSERT_EQ(table->self.size(), own->self.size() + table->points.size() + capsules);
  const ContactBody& top = table->bodies.back();
  EXPECT_EQ(top.name, "table");
  EXPECT_EQ(top.frame, kStageFrame);
  EXPECT_LT((top.half_m - Eigen::Vector3d(0.3, 0.2, 0.025)).norm(), 1e-15);
  Eigen::Isometry3d table_stage = Eigen::Isometry3d::Identity();
  table_stage.linear() = Eigen::AngleAxisd(0.2, Eigen::Vector3d::UnitZ()).toRotationMatrix();
  table_stage.translation() = Eigen::Vector3d(0.1, 0, 0.3);
  EXPECT_LT((top.pose.matrix() - (m->stage_pose.inverse() * table_stage).matrix()).norm(), 1e-12);
  for (std::size_t i = own->self.size(); i < table->self.size(); ++i) {
    const SelfContact& pair = table->self[i];
    EXPECT_EQ(pair.body, static_cast<int>(table->bodies.size()) - 1);
    EXPECT_EQ(pair.friction, 0.3);
    EXPECT_EQ(pair.radius_m, pair.segment >= 0 ? table->bodies[pair.segment].radius_m
                                               : table->points[pair.point].radius_m);
  }
  EXPECT_EQ(table->rowName(table->rows() - 1).rfind("table/", 0), 0u);
  const ModelPtr untouching = loadModelString(
      builtinModelText("puppetcopter") + "\ncontacts: {self: false}\n", "untouching");
  EXPECT_FALSE(sceneContacts(*untouching, *sceneFrom(R"(
obstacles:
  - {name: floor, plane: {normal: [0, 0, 1]}, contact: false}
)")));
}

// Signed (an optimizer's rows): an overlap reads as minus its depth, with each shape's point
// deepest inside the other; unsigned, it reads 0 as always.
TEST(CollisionAnalytic, ASignedClearanceReadsAnOverlapAsMinusItsDepth) {
  auto checker = checkerFor(probeModel(capsule(0.05, 0.4)), sceneFrom(kCubeScene));
  for (const double x : {0.149, 0.13, 0.11}) {
    SCOPED_TRACE(x);
    const ClearanceResult c = checker.clearance(placed(x, 0.0, 0.0), Penetration::Signed);
    EXPECT_NEAR(c.distance_m, x - 0.15, kDistanceTol);
    EXPECT_NEAR(c.stage_distance_m, x - 0.15, kDistanceTol);
    EXPECT_TRUE(c.in_collision);
    EXPECT_EQ(c.pair.second, "cube");
    EXPECT_NEAR(c.point_first_m.x(), x - 0.05, kDistanceTol);  // the capsule's deepest point
    EXPECT_NEAR(c.point_second_m.x(), 0.1, kDistanceTol);      // the cube's, on its face
    for (const Eigen::Vector3d& p : {c.point_first_m, c.point_second_m})  // within the overlap
      EXPECT_LE(std::max(std::abs(p.y()), std::abs(p.z())), 0.1 + kDistanceTol) << p.transpose();
    EXPECT_EQ(checker.clearance(placed(x, 0.0, 0.0)).distance_m, 0.0);
  }
  // Apart, the same reading either way.
  EXPECT_NEAR(checker.clearance(placed(0.3, 0.0, 0.0), Penetration::Signed).distance_m, 0.15,
              kDistanceTol);
  // Half-spaces: a sphere sunk 4 cm into the floor.
  auto on_floor = checkerFor(probeModel(sphere(0.1)),
                             sceneFrom("obstacles:\n  - {name: floor, plane: {normal: [0, 0, 1], "
                                       "offset: 0.0}}\n"));
  EXPECT_NEAR(on_floor.clearance(placed(0.0, 0.0, 0.06), Penetration::Signed).distance_m, -0.04,
              1e-12);
  EXPECT_EQ(on_floor.clearance(placed(0.0, 0.0, 0.06)).distance_m, 0.0);
  // Two overlaps, the shallower found first (half-spaces are checked before obstacles): the
  // deeper one is the reading.  A sphere 1 mm into the floor and 3 cm into a cube standing on it.
  auto both = checkerFor(probeModel(sphere(0.1)),
                         sceneFrom("obstacles:\n  - {name: floor, plane: {normal: [0, 0, 1], "
                                   "offset: 0.0}}\n  - {name: cube, box: {size: [0.2, 0.2, 0.2]}, "
                                   "pose: {position: [0, 0, 0.1]}}\n"));
  const ClearanceResult deeper = both.clearance(placed(0.17, 0.0, 0.099), Penetration::Signed);
  EXPECT_NEAR(deeper.distance_m, -0.03, kDistanceTol);
  EXPECT_EQ(deeper.pair.second, "cube");
  EXPECT_NEAR(deeper.stage_distance_m, -0.03, kDistanceTol);
}

// Two round shapes, signed: their axes' segments' distance less the radii, exactly (FCL's EPA,
// which used to measure them overlapping, aborts the process on some pairs of capsules).  A
// capsule turned about its own axis (z) and a ball, each against a tilted capsule, at seeded
// random places in and out of it, against the segments' distance by dense sampling.
TEST(CollisionAnalytic, RoundShapesOverlappingReadTheirAxesDistanceLessTheRadii) {
  const Eigen::Quaterniond tilt(Eigen::AngleAxisd(0.7, Eigen::Vector3d(1, 2, 0).normalized()));
  const std::string scene =
      "obstacles:\n  - {name: rail, capsule: {radius: 0.03, length: 0.3}, pose: {position: "
      "[0, 0, 0], quaternion: [" + std::to_string(tilt.w()) + ", " + std::to_string(tilt.x()) +
      ", " + std::to_string(tilt.y()) + ", " + std::to_string(tilt.z()) + "]}}\n";
  // (The quaternion as the scene reads it: printed to six decimals.)
  const auto printed = [](double v) { return std::stod(std::to_string(v)); };
  const Eigen::Quaterniond rail(printed(tilt.w()), printed(tilt.x()), printed(tilt.y()),
                                printed(tilt.z()));
  const Eigen::Vector3d rail_axis = rail.normalized() * Eigen::Vector3d::UnitZ();
  auto segmentsDistance = [&](const Eigen::Vector3d& a0, const Eigen::Vector3d& a1) {
    double best = std::numeric_limits<double>::infinity();
    const int n = 300;
    for (int i = 0; i <= n; ++i)
      for (int j = 0; j <= n; ++j) {
        const Eigen::Vector3d pa = a0 + (a1 - a0) * (double(i) / n);
        const Eigen::Vector3d pb = rail_axis * 0.3 * (double(j) / n - 0.5);
        best = std::min(best, (pa - pb).norm());
      }
    return best;
  };
  std::mt19937 rng(31);
  std::uniform_real_distribution<double> place(-0.12, 0.12), turn(-3.0, 3.0);
  for (const bool ball : {false, true}) {
    auto checker = checkerFor(probeModel(ball ? sphere(0.05) : capsule(0.05, 0.4)),
                              sceneFrom(scene));
    int overlapping = 0;
    for (int trial = 0; trial < 40; ++trial) {
      const Eigen::Vector3d p(place(rng), place(rng), place(rng));
      const ClearanceResult c =
          checker.clearance(placed(p.x(), p.y(), p.z(), turn(rng)), Penetration::Signed);
      const Eigen::Vector3d half = ball ? Eigen::Vector3d::Zero() : Eigen::Vector3d(0, 0, 0.2);
      const double expected = segmentsDistance(p - half, p + half) - 0.05 - 0.03;
      SCOPED_TRACE(::testing::Message() << (ball ? "ball" : "capsule") << " trial " << trial);
      EXPECT_NEAR(c.distance_m, expected, 1e-3);
      EXPECT_EQ(c.in_collision, expected < 0.0);
      EXPECT_NEAR((c.point_first_m - c.point_second_m).norm(), std::abs(c.distance_m), 1e-9);
      overlapping += expected < 0.0;
    }
    EXPECT_GE(overlapping, 10);
  }
}

// A 0.2 m cube as a triangle mesh, written in the three formats the loader must read.
void writeCubeMeshes(const std::string& dir) {
  const double h = 0.1;
  const double v[8][3] = {{-h, -h, -h}, {h, -h, -h}, {h, h, -h}, {-h, h, -h},
                          {-h, -h, h},  {h, -h, h},  {h, h, h},  {-h, h, h}};
  const int f[12][3] = {{0, 2, 1}, {0, 3, 2}, {4, 5, 6}, {4, 6, 7}, {0, 1, 5}, {0, 5, 4},
                        {1, 2, 6}, {1, 6, 5}, {2, 3, 7}, {2, 7, 6}, {3, 0, 4}, {3, 4, 7}};
  std::ofstream obj(dir + "/cube.obj");
  for (auto& p : v) obj << "v " << p[0] << " " << p[1] << " " << p[2] << "\n";
  for (auto& t : f) obj << "f " << t[0] + 1 << " " << t[1] + 1 << " " << t[2] + 1 << "\n";
  std::ofstream ply(dir + "/cube.ply");
  ply << "ply\nformat ascii 1.0\nelement vertex 8\nproperty float x\nproperty float y\n"
         "property float z\nelement face 12\nproperty list uchar int vertex_indices\nend_header\n";
  for (auto& p : v) ply << p[0] << " " << p[1] << " " << p[2] << "\n";
  for (auto& t : f) ply << "3 " << t[0] << " " << t[1] << " " << t[2] << "\n";
  std::ofstream stl(dir + "/cube.stl");
  stl << "solid cube\n";
  for (auto& t : f) {
    stl << " facet normal 0 0 0\n  outer loop\n";
    for (int k = 0; k < 3; ++k)
      stl << "   vertex " << v[t[k]][0] << " " << v[t[k]][1] << " " << v[t[k]][2] << "\n";
    stl << "  endloop\n endfacet\n";
  }
  stl << "endsolid cube\n";
}

TEST(CollisionAnalytic, CapsuleAgainstMeshInEveryFormat) {
  const std::string dir = test::scratchDir("mesh_formats");
  writeCubeMeshes(dir);
  for (const char* file : {"cube.stl", "cube.obj", "cube.ply"}) {
    SCOPED_TRACE(file);
    const ScenePtr scene =
        sceneFrom(std::string("obstacles:\n  - {name: cube, mesh: {file: ") + file + "}}\n", dir);
    ASSERT_EQ(scene->triangleCount(), 12u);
    auto checker = checkerFor(probeModel(capsule(0.05, 0.4)), scene);
    const ClearanceResult beside = checker.clearance(placed(0.3, 0.0, 0.0));
    EXPECT_NEAR(beside.distance_m, 0.15, kDistanceTol);
    EXPECT_NEAR(beside.point_first_m.x(), 0.25, kDistanceTol);  // on the capsule
    EXPECT_NEAR(beside.point_second_m.x(), 0.1, kDistanceTol);  // on the cube's face
    EXPECT_NEAR(checker.clearance(placed(0.3, 0.3, 0.5)).distance_m, std::sqrt(3.0) * 0.2 - 0.05,
                kDistanceTol);
    EXPECT_TRUE(checker.inCollision(placed(0.149, 0.0, 0.0)).in_collision);
    EXPECT_FALSE(checker.inCollision(placed(0.151, 0.0, 0.0)).in_collision);
    // FCL has no penetration depth for a mesh: an overlap reads 0, signed or not.
    EXPECT_EQ(checker.clearance(placed(0.13, 0.0, 0.0), Penetration::Signed).distance_m, 0.0);
  }
  // Scaled and posed: the cube doubled (0.4 m) and moved 1 m along y.
  const ScenePtr scaled = sceneFrom(
      "obstacles:\n  - {name: cube, mesh: {file: cube.obj, scale: 2.0}, "
      "pose: {position: [0, 1, 0], quaternion: [0.7071067811865476, 0, 0, "
      "0.7071067811865476]}}\n",
      dir);
  auto checker = checkerFor(probeModel(capsule(0.05, 0.4)), scaled);
  EXPECT_NEAR(checker.clearance(placed(0.45, 1.0, 0.0)).distance_m, 0.45 - 0.2 - 0.05,
              kDistanceTol);
}

TEST(CollisionAnalytic, AStringThroughAThinWallSnagsWhileBothEndsAreClear) {
  // A ball hanging 1 m below its anchor; a 1 cm wall between them at mid-height.
  const Eigen::Vector3d anchor(0.0, 0.0, 2.0);
  const ModelPtr model = probeModel(sphere(0.05), Eigen::Isometry3d::Identity(), &anchor);
  const ScenePtr scene = sceneFrom(R"(
obstacles:
  - {name: wall, box: {size: [0.4, 0.4, 0.01]}, pose: {position: [0, 0, 1.5]}}
)");
  auto checker = checkerFor(model, scene);
  const Eigen::VectorXd below = placed(0.0, 0.0, 1.0);
  const CollisionResult hit = checker.inCollision(below);
  ASSERT_TRUE(hit.in_collision);
  EXPECT_EQ(hit.pair.kind, ContactKind::StringObstacle);
  EXPECT_EQ(hit.pair.first, "thread");
  EXPECT_EQ(hit.pair.second, "wall");
  EXPECT_EQ(checker.clearance(below).pair.kind, ContactKind::StringObstacle);
  // The ball itself is 0.45 m from the wall, the anchor 0.495 m.
  CollisionOptions links_only;
  links_only.check_strings = false;
  auto without_strings = checkerFor(model, scene, links_only);
  EXPECT_FALSE(without_strings.inCollision(below).in_collision);
  EXPECT_NEAR(without_strings.clearance(below).distance_m, 0.5 - 0.005 - 0.05, kDistanceTol);
  // Moved aside, the string passes the wall's edge at 0.3 - 0.2 - string radius.
  const Eigen::VectorXd aside = placed(0.6, 0.0, 1.0);
  EXPECT_FALSE(checker.inCollision(aside).in_collision);
  // The string runs from (0.6, 0, 1) to (0, 0, 2): at z = 1.5 +- 0.005 it is at x = 0.3 -+ 0.006.
  const double x_at_wall_top = 0.6 * (2.0 - 1.505);
  const double x_at_edge = x_at_wall_top - 0.2;
  const double perpendicular = x_at_edge / std::sqrt(1.0 + 0.36);  // slope dx/dz = -0.6
  EXPECT_NEAR(checker.clearance(aside).distance_m,
              perpendicular - CollisionOptions{}.string_radius_m, 1e-5);
}

TEST(CollisionAnalytic, APuppetHangingInNothingIsClear) {
  const ScenePtr nothing = sceneFrom("obstacles: []\n");
  for (const std::string& name : builtinModelNames()) {
    SCOPED_TRACE(name);
    const ModelPtr model = loadModel(name);
    const RestPose rest = computeRestPose(model, model->defaultInputs());
    ASSERT_TRUE(rest.ok);
    auto checker = checkerFor(model, nothing);
    const Eigen::VectorXd q = model->configuration(rest.q, model->defaultInputs());
    EXPECT_FALSE(checker.inCollision(q).in_collision);
    const ClearanceResult c = checker.clearance(q);
    EXPECT_FALSE(c.in_collision);
    EXPECT_TRUE(std::isinf(c.stage_distance_m));
  }
}

TEST(CollisionAnalytic, AWrongSizedOrNonFiniteStateIsRefused) {
  auto checker = checkerFor(probeModel(sphere(0.1)), sceneFrom(kCubeScene));
  EXPECT_THROW(checker.inCollision(Eigen::VectorXd::Zero(5)), std::invalid_argument);
  Eigen::VectorXd q = placed(0.3, 0, 0);
  q[2] = std::nan("");
  EXPECT_THROW(checker.clearance(q), std::invalid_argument);
  EXPECT_FALSE(checker.inCollision(placed(0.3, 0, 0)).in_collision);  // still usable
}

// A link posed far beyond the stage (a puppet that has flown away) is out of the stage, and FCL
// is not asked: a box at 1e200 m crashed it (SIGSEGV), one at 1e300 m tripped its GJK assertion.
TEST(CollisionAnalytic, ALinkBeyondTheStagesRangeIsOutOfTheStageWithoutAskingFcl) {
  auto checker = checkerFor(probeModel(sphere(0.1)), sceneFrom(kCubeScene));
  for (double x : {2e4, 1e200, 1e300, -1e300}) {
    SCOPED_TRACE(x);
    const StateCheck c = checker.checkState(placed(x, 0, 0));
    EXPECT_TRUE(c.in_collision);
    EXPECT_EQ(c.pair.kind, ContactKind::OutOfBounds);
    EXPECT_EQ(c.pair.first, "body");
    EXPECT_EQ(c.pair.second, "stage range");
    EXPECT_EQ(c.stage_clearance_m, 0.0);
  }
  // 9 km out is still asked of FCL: clear of the cube, 9 km away.
  EXPECT_NEAR(checker.clearance(placed(9e3, 0, 0)).distance_m, 9e3 - 0.2, 1e-6);
}

// ---- Built-in models on built-in stages -------------------------------------------------------

struct Rest {
  ModelPtr model;
  Eigen::VectorXd q;
};
Rest restOf(const std::string& name) {
  const ModelPtr model = loadModel(name);
  const RestPose rest = computeRestPose(model, model->defaultInputs());
  EXPECT_TRUE(rest.ok) << rest.message;
  return {model, model->configuration(rest.q, model->defaultInputs())};
}

TEST(CollisionStages, EveryBuiltinModelAtRestIsClearOfEveryBuiltinStage) {
  const std::vector<std::string> scenes = builtinSceneNames();
  ASSERT_EQ(scenes,
            (std::vector<std::string>{"empty", "living-room", "pillars", "table", "window"}));
  for (const std::string& name : builtinModelNames()) {
    const Rest rest = restOf(name);
    for (const std::string& scene : scenes) {
      SCOPED_TRACE(name + " in " + scene);
      auto checker = checkerFor(rest.model, loadScene(scene));
      const CollisionResult c = checker.inCollision(rest.q);
      EXPECT_FALSE(c.in_collision) << c.pair.describe();
      EXPECT_GT(checker.clearance(rest.q).stage_distance_m, 0.02);
    }
  }
}

TEST(CollisionStages, APuppetPlacedInTheTableCollidesAndTheReportNamesTableAndLink) {
  const ScenePtr table = loadScene("table");
  const Obstacle& top = table->obstacles[table->obstacleIndex("table_top")];
  for (const std::string& name : builtinModelNames()) {
    SCOPED_TRACE(name);
    const Rest rest = restOf(name);
    // Hang the puppet so that its lowest point is 5 mm inside the table top, over its middle.
    CollisionOptions stage_only;
    stage_only.check_self = false;
    auto free_checker = checkerFor(rest.model, sceneFrom(R"(
obstacles:
  - {name: floor, plane: {normal: [0, 0, 1], offset: -100}}
)"),
                                   stage_only);
    const ClearanceResult low = free_checker.clearance(rest.q);
    ASSERT_EQ(low.pair.second, "floor");
    ASSERT_EQ(low.pair.kind, ContactKind::LinkObstacle);
    const double lowest_z = low.point_first_m.z();  // the lowest point of a link, world frame
    CollisionOptions options;
    Eigen::Isometry3d stage = Eigen::Isometry3d::Identity();
    const double top_surface = top.pose.translation().z() + 0.5 * top.shape.size_m.z();
    stage.translation() = Eigen::Vector3d(top.pose.translation().x() - low.point_first_m.x(),
                                          top.pose.translation().y() - low.point_first_m.y(),
                                          top_surface - 0.005 - lowest_z);
    options.stage_pose = stage;
    auto checker = checkerFor(rest.model, table, options);
    const CollisionResult c = checker.inCollision(rest.q);
    ASSERT_TRUE(c.in_collision);
    EXPECT_EQ(c.pair.kind, ContactKind::LinkObstacle);
    EXPECT_EQ(c.pair.second.rfind("table_", 0), 0u) << c.pair.describe();  // top or a leg
    EXPECT_NE(rest.model->frameIndex(c.pair.first), -1) << c.pair.first;   // a link
  }
}

TEST(CollisionStages, TheModelsStagePoseMapsTheSceneIntoItsWorldFrame) {
  // puppetcopter hangs 1.20 m above the floor: a foot's clearance to it in stage terms equals
  // the rest pose's lowest point + 1.20.
  const Rest rest = restOf("puppetcopter");
  CollisionOptions stage_only;
  stage_only.check_self = false;
  auto checker = checkerFor(rest.model, loadScene("empty"), stage_only);
  const ClearanceResult c = checker.clearance(rest.q);
  EXPECT_EQ(c.stage_pair.second, "floor");
  EXPECT_NEAR(c.stage_distance_m, c.point_first_m.z() + 1.20, 1e-12);
  EXPECT_GT(c.stage_distance_m, 0.03);
  EXPECT_LT(c.stage_distance_m, 0.06);
}

TEST(CollisionStages, BoundsKeepTheLinksInsideTheStageBox) {
  const ScenePtr boxed = sceneFrom(R"(
bounds: {min: [-1, -1, 0], max: [1, 1, 2]}
obstacles: []
)");
  auto checker = checkerFor(probeModel(sphere(0.1)), boxed);
  EXPECT_FALSE(checker.inCollision(placed(0.85, 0, 1)).in_collision);
  EXPECT_NEAR(checker.clearance(placed(0.85, 0, 1)).distance_m, 0.05, 1e-12);
  const CollisionResult out = checker.inCollision(placed(0.95, 0, 1));
  ASSERT_TRUE(out.in_collision);
  EXPECT_EQ(out.pair.kind, ContactKind::OutOfBounds);
  EXPECT_EQ(out.pair.first, "body");
  CollisionOptions no_bounds;
  no_bounds.check_bounds = false;
  EXPECT_FALSE(checkerFor(probeModel(sphere(0.1)), boxed, no_bounds)
                   .inCollision(placed(0.95, 0, 1))
                   .in_collision);
}

// ---- Self-collision ---------------------------------------------------------------------------

double segmentDistance(const Eigen::Vector3d& p0, const Eigen::Vector3d& p1,
                       const Eigen::Vector3d& q0, const Eigen::Vector3d& q1) {
  // Brute force over a fine grid: enough to show two capsules overlap.
  double best = 1e9;
  for (int i = 0; i <= 200; ++i)
    for (int j = 0; j <= 200; ++j)
      best = std::min(best, ((p0 + (p1 - p0) * i / 200.0) - (q0 + (q1 - q0) * j / 200.0)).norm());
  return best;
}

TEST(CollisionSelf, AForearmFoldedIntoTheTorsoIsReported) {
  Rest rest = restOf("marionette25");
  auto checker = checkerFor(rest.model, loadScene("empty"));
  ASSERT_FALSE(checker.inCollision(rest.q).in_collision);
  // Upper arm drawn in against the chest, elbow bent: the forearm starts inside the chest.
  Eigen::VectorXd q = rest.q;
  q[rest.model->variableIndex("shoulder_l_abduct")] = -0.3;
  q[rest.model->variableIndex("elbow_l")] = 2.0;
  const CollisionResult c = checker.inCollision(q);
  ASSERT_TRUE(c.in_collision);
  EXPECT_EQ(c.pair.kind, ContactKind::LinkLink);
  EXPECT_TRUE((c.pair.first == "chest" && c.pair.second == "forearm_l") ||
              (c.pair.first == "forearm_l" && c.pair.second == "chest"))
      << c.pair.describe();
  EXPECT_EQ(checker.clearance(q).pair.kind, ContactKind::LinkLink);
  EXPECT_EQ(checker.clearance(q).distance_m, 0.0);
  // The stage is still clear.
  EXPECT_GT(checker.clearance(q).stage_distance_m, 0.0);
}

TEST(CollisionSelf, AdjacentLinksAreNeverReportedEvenWhereTheyOverlap) {
  Rest rest = restOf("marionette25");
  const Model& m = *rest.model;
  auto cm = std::make_shared<CollisionModel>(rest.model, loadScene("empty"));
  CollisionChecker checker(cm);
  // At every elbow angle the upper arm's and forearm's capsules overlap at the elbow...
  DynamicsData kin(m);
  Eigen::VectorXd q = rest.q;
  for (double elbow : {0.0, 1.2, 2.4}) {
    q[m.variableIndex("elbow_l")] = elbow;
    forwardKinematics(m, kin, q);
    const int ua = m.frameIndex("upper_arm_l"), fa = m.frameIndex("forearm_l");
    auto at = [&](int f, double z) { return pointPosition(kin, f, Eigen::Vector3d(0, 0, z)); };
    const double axis_gap = segmentDistance(at(ua, 0.0), at(ua, -0.16), at(fa, 0.0), at(fa, -0.17));
    EXPECT_LT(axis_gap, 0.015 + 0.01 - 0.005);
    // ...and yet they are never a reported pair.
    const CollisionResult c = checker.inCollision(q);
    EXPECT_FALSE(c.in_collision) << c.pair.describe();
  }
  // No self pair is an adjacent or allowed one; the rule leaves the ones that can meet.
  auto pair_named = [&](const std::string& a, const std::string& b) {
    for (const auto& [i, j] : cm->selfPairs())
      if ((cm->linkName(i) == a && cm->linkName(j) == b) ||
          (cm->linkName(i) == b && cm->linkName(j) == a))
        return true;
    return false;
  };
  EXPECT_FALSE(pair_named("upper_arm_l", "forearm_l"));
  EXPECT_FALSE(pair_named("thigh_r", "shin_r"));
  EXPECT_FALSE(pair_named("chest", "pelvis"));  // allowed in the model file
  EXPECT_FALSE(pair_named("chest", "upper_arm_l"));
  EXPECT_TRUE(pair_named("chest", "forearm_l"));
  EXPECT_TRUE(pair_named("forearm_l", "forearm_r"));
  EXPECT_TRUE(pair_named("shin_l", "shin_r"));
  EXPECT_TRUE(pair_named("head", "forearm_r"));
}

TEST(CollisionSelf, StringsAgainstThePuppetsOwnLinksOnRequest) {
  // Off by default: puppetcopter's back leg strings run up through the torso's envelope box at
  // rest (the real strings run down its back).  On request they are reported, and a string is
  // never checked against the link it is tied to.
  const Rest rest = restOf("puppetcopter");
  CollisionOptions options;
  options.check_strings_vs_links = true;
  options.check_self = false;
  auto checker = checkerFor(rest.model, loadScene("empty"), options);
  const CollisionResult c = checker.inCollision(rest.q);
  ASSERT_TRUE(c.in_collision);
  EXPECT_EQ(c.pair.kind, ContactKind::StringLink);
  EXPECT_EQ(c.pair.first.rfind("leg_", 0), 0u) << c.pair.describe();
  EXPECT_EQ(c.pair.second, "body");
  EXPECT_FALSE(checkerFor(rest.model, loadScene("empty")).inCollision(rest.q).in_collision);
  // A ball on a thread: the thread starts at the ball's centre, inside it, and is not reported.
  const Eigen::Vector3d anchor(0.0, 0.0, 2.0);
  auto ball = checkerFor(probeModel(sphere(0.05), Eigen::Isometry3d::Identity(), &anchor),
                         sceneFrom("obstacles: []\n"), options);
  EXPECT_FALSE(ball.inCollision(placed(0.0, 0.0, 1.0)).in_collision);
}

// ---- Batch and threads ------------------------------------------------------------------------

// Random configurations of puppetcopter swinging about its rest pose, some into the table.
Eigen::MatrixXd randomConfigurations(const Rest& rest, int n, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  const Model& m = *rest.model;
  Eigen::MatrixXd qs(m.nq(), n);
  for (int k = 0; k < n; ++k) {
    Eigen::VectorXd q = rest.q;
    for (int i = 0; i < m.nd(); ++i) {
      const JointLimit& lim = m.dynamic[i].limit;
      const bool translation = m.dynamic[i].name.find("_x") != std::string::npos ||
                               m.dynamic[i].name.find("_y") != std::string::npos ||
                               m.dynamic[i].name.find("_z") != std::string::npos;
      double v = q[i] + (translation ? 0.35 : 1.2) * u(rng);
      if (std::isfinite(lim.lower)) v = std::max(v, lim.lower);
      if (std::isfinite(lim.upper)) v = std::min(v, lim.upper);
      q[i] = v;
    }
    qs.col(k) = q;
  }
  return qs;
}

TEST(CollisionBatch, TrajectoryCheckAgreesWithSingleQueries) {
  const Rest rest = restOf("puppetcopter");
  auto cm = std::make_shared<CollisionModel>(rest.model, loadScene("table"));
  CollisionChecker checker(cm);
  const Eigen::MatrixXd qs = randomConfigurations(rest, 300, 7);
  const TrajectoryCheck batch = checker.checkTrajectory(qs, true);
  int first = -1, collisions = 0;
  double min_clearance = 1e9;
  for (int k = 0; k < qs.cols(); ++k) {
    const CollisionResult c = checker.inCollision(qs.col(k));
    EXPECT_EQ(batch.samples[k].in_collision, c.in_collision) << k;
    const ClearanceResult cl = checker.clearance(qs.col(k));
    EXPECT_EQ(batch.samples[k].clearance_m, c.in_collision ? 0.0 : cl.distance_m) << k;
    // Consistency of the two queries (away from mesh interiors): contact <=> zero distance.
    EXPECT_EQ(c.in_collision, cl.in_collision)
        << k << " " << c.pair.describe() << " / " << cl.pair.describe();
    if (c.in_collision) {
      ++collisions;
      if (first < 0) first = k;
    }
    min_clearance = std::min(min_clearance, batch.samples[k].clearance_m);
  }
  EXPECT_GT(collisions, 10);  // the sample must exercise both outcomes
  EXPECT_LT(collisions, 290);
  EXPECT_EQ(batch.first_collision, first);
  EXPECT_EQ(batch.min_clearance_m, min_clearance);
  const TrajectoryCheck stopped = checker.checkTrajectory(qs, false, true);
  EXPECT_EQ(stopped.first_collision, first);
  EXPECT_FALSE(stopped.samples.back().in_collision && first < qs.cols() - 1);
}

TEST(CollisionThreads, TwoThreadsSharingOneModelAnswerAsOneThreadDoes) {
  const Rest rest = restOf("puppetcopter");
  auto cm = std::make_shared<CollisionModel>(rest.model, loadScene("living-room"));
  const Eigen::MatrixXd qs = randomConfigurations(rest, 400, 11);
  CollisionChecker alone(cm);
  const TrajectoryCheck reference = alone.checkTrajectory(qs, true);
  TrajectoryCheck results[2];
  std::thread threads[2];
  for (int t = 0; t < 2; ++t)
    threads[t] = std::thread([&, t] {
      CollisionChecker mine(cm);  // one checker per thread, one shared CollisionModel
      for (int repeat = 0; repeat < 3; ++repeat) results[t] = mine.checkTrajectory(qs, true);
    });
  for (auto& th : threads) th.join();
  for (const auto& r : results) {
    ASSERT_EQ(r.samples.size(), reference.samples.size());
    for (size_t k = 0; k < r.samples.size(); ++k) {
      EXPECT_EQ(r.samples[k].in_collision, reference.samples[k].in_collision) << k;
      EXPECT_EQ(r.samples[k].clearance_m, reference.samples[k].clearance_m) << k;
    }
    EXPECT_EQ(r.first_collision, reference.first_collision);
  }
}

// ---- Scene files ------------------------------------------------------------------------------

std::string sceneErrorOf(const std::string& yaml, const std::string& base_dir = "") {
  try {
    loadSceneString(yaml, "bad.yaml", base_dir);
  } catch (const SceneError& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(SceneFiles, AnExampleWithEveryShapeAndPoseFormLoads) {
  const std::string dir = test::scratchDir("scene_example");
  writeCubeMeshes(dir);
  std::ofstream(dir + "/scene.yaml") << R"(
obstacles:
  - name: plate
    box: {size: [0.4, 0.4, 0.01]}          # full side lengths, metres
    pose: {position: [0, 0, 1.2], rpy: [0, 0, 0]}
  - {name: ball, sphere: {radius: 0.1}, pose: {position: [1, 0, 1]}}
  - {name: post, cylinder: {radius: 0.05, length: 2}, pose: {position: [0.5, 0.3, 1]}}
  - {name: sofa, mesh: {file: cube.stl, scale: 1.0}, pose: {position: [0, 1, 0], rpy: [0, 0, 1.57]}}
  - {name: rail, capsule: {radius: 0.02, length: 1}, pose: {position: [0, 0, 2], quaternion: [1, 0, 0, 0]}}
  - {name: ground, plane: {normal: [0, 0, 2], offset: 0.2}}
)";
  const ScenePtr s = loadSceneFile(dir + "/scene.yaml");
  ASSERT_EQ(s->obstacles.size(), 6u);
  EXPECT_EQ(s->name, "scene");
  EXPECT_EQ(s->obstacles[0].shape.type, ShapeType::Box);
  EXPECT_EQ(s->obstacles[3].shape.type, ShapeType::Mesh);
  EXPECT_EQ(s->obstacles[3].mesh->triangles.size(), 12u);
  EXPECT_NEAR(s->obstacles[3].pose.linear()(0, 0), std::cos(1.57), 1e-12);
  // The plane's normal is normalised and its offset with it: z <= 0.1.
  EXPECT_NEAR(s->obstacles[5].shape.normal.z(), 1.0, 1e-15);
  EXPECT_NEAR(s->obstacles[5].shape.offset_m, 0.1, 1e-15);
  EXPECT_FALSE(s->bounds.has_value());
}

TEST(SceneFiles, BuiltinScenesLoadWithTheirMeshes) {
  const ScenePtr room = loadScene("living-room");
  EXPECT_GE(room->triangleCount(), 3000u);
  int meshes = 0;
  for (const auto& o : room->obstacles) meshes += o.shape.type == ShapeType::Mesh;
  EXPECT_GE(meshes, 5);
  for (const std::string& name : builtinSceneNames()) {
    const ScenePtr s = loadScene(name);
    EXPECT_EQ(s->name, name);
    EXPECT_TRUE(s->bounds.has_value());
    EXPECT_GE(s->obstacleIndex("floor"), 0);
  }
}

TEST(SceneFiles, BadScenesGetErrorsNamingFileLineAndField) {
  const std::string dir = test::scratchDir("bad_scenes");
  std::ofstream(dir + "/garbage.stl") << "this is not a mesh at all\n";
  std::ofstream(dir + "/far.obj") << "v 5000 0 0\nv 0 1 0\nv 0 0 1\nf 1 2 3\n";
  struct Case {
    std::string yaml, expect;
  };
  const Case cases[] = {
      {"obstacles:\n  - {name: a, sphere: {radius: -1}}\n",
       "bad.yaml:2: obstacles[0].sphere: radius must be between 1e-06 and 1000 m (got -1"},
      {"obstacles:\n  - {name: a, box: {size: [1, 1]}}\n",
       "bad.yaml:2: obstacles[0].box.size: expected a list of 3 numbers"},
      {"obstacles:\n  - {name: a, sphere: {radius: 1}, box: {size: [1, 1, 1]}}\n",
       "obstacles[0]: give exactly one shape"},
      {"obstacles:\n  - {name: a}\n", "obstacles[0]: give exactly one shape"},
      {"obstacles:\n  - {sphere: {radius: 1}}\n", "bad.yaml:2: obstacles[0].name: missing"},
      {"obstacles:\n  - {name: a, cylinder: {radius: 1, length: 1}, contact: true}\n",
       "bad.yaml:2: obstacles[0].contact: only a plane, sphere, capsule or box may be touched "
       "(touching a cylinder is a collision)"},
      {"obstacles:\n  - {name: a, plane: {normal: [0, 0, 1]}, contact: maybe}\n",
       "bad.yaml:2: obstacles[0].contact: expected true or false (got 'maybe')"},
      {"obstacles:\n  - {name: a, plane: {normal: [0, 0, 1]}, friction: -0.1}\n",
       "bad.yaml:2: obstacles[0].friction: must be between 0 and 10 (got -0.1"},
      {"obstacles:\n  - {name: a, plane: {normal: [0, 0, 1]}, friction: .nan}\n",
       "bad.yaml:2: obstacles[0].friction: expected a finite number (got '.nan')"},
      {"obstacles:\n  - {name: a, sphere: {radius: 1}, friction: 0.3}\n",
       "bad.yaml:2: obstacles[0].friction: only an obstacle the puppet may touch (contact: "
       "true; a plane's default) has friction"},
      {"obstacles:\n  - {name: a, sphere: {radius: 1}}\n  - {name: a, sphere: {radius: 1}}\n",
       "bad.yaml:3: obstacles[1].name: duplicate obstacle name 'a'"},
      {"obstacles:\n  - {name: a, sphere: {radius: 1}, colour: [1, 0, 0]}\n",
       "obstacles[0].colour: unknown key 'colour'"},
      {"obstacles:\n  - {name: a, sphere: {radius: 1}, pose: {position: [0, 0, 0], rpy: [0, 0, "
       "0], quaternion: [1, 0, 0, 0]}}\n",
       "obstacles[0].pose: give rpy or quaternion, not both"},
      {"obstacles:\n  - {name: a, sphere: {radius: 1}, pose: {quaternion: [1, 1, 0, 0]}}\n",
       "obstacles[0].pose.quaternion: must be a unit quaternion"},
      {"obstacles:\n  - {name: a, sphere: {radius: 1}, pose: {xyz: [0, 0, 0]}}\n",
       "obstacles[0].pose.xyz: unknown key 'xyz' (expected one of: position, quaternion, rpy)"},
      {"obstacles:\n  - {name: a, plane: {normal: [0, 0, 0]}}\n",
       "obstacles[0].plane.normal: must not be zero"},
      {"obstacles:\n  - {name: a, sphere: {radius: 1}, color: [2, 0, 0]}\n",
       "obstacles[0].color: colour components are in [0, 1]"},
      {"bounds: {min: [0, 0, 0], max: [1, -1, 1]}\n",
       "bad.yaml:1: bounds: min must be below max on every axis (axis 1"},
      {"obstacles:\n  - {name: a, sphere: {radius: nan}}\n",
       "obstacles[0].sphere.radius: expected a finite number (got 'nan')"},
      {"obstacles: [\n", "bad.yaml:2: YAML syntax error"},
      // Beyond the stage's range (mutated scenes with values near 1e308 crashed FCL).
      {"obstacles:\n  - {name: a, box: {size: [0.1, 0.1, 0.1]}, pose: {position: [1e200, 0, 0]}}\n",
       "bad.yaml:2: obstacles[0].pose.position: coordinate x = 1e+200 m is beyond the stage's "
       "range (+-1000 m)"},
      {"obstacles:\n  - {name: a, box: {size: [1e300, 1, 1]}}\n",
       "obstacles[0].box: size must be between 1e-06 and 1000 m (got 1e+300)"},
      {"obstacles:\n  - {name: a, sphere: {radius: 1e-300}}\n",
       "obstacles[0].sphere: radius must be between 1e-06 and 1000 m"},
      {"obstacles:\n  - {name: a, plane: {normal: [0, 0, 1], offset: 1e300}}\n",
       "obstacles[0].plane: offset 1e+300 m is beyond the stage's range"},
      {"obstacles:\n  - {name: a, mesh: {file: cube.stl, scale: 1e200}}\n",
       "obstacles[0].mesh: mesh scale must be between 1e-06 and 1000 (got 1e+200)"},
      {"obstacles:\n  - {name: a, mesh: {file: far.obj}}\n",
       "obstacles[0].mesh.file: mesh '" + dir +
           "/far.obj' (scaled): a vertex's coordinate x = "
           "5000 m is beyond"},
      {"bounds: {min: [-1e300, 0, 0], max: [1, 1, 1]}\n",
       "bad.yaml:1: bounds.min: coordinate x = -1e+300 m is beyond"},
      {"obstacles:\n  - name: sofa\n    mesh: {file: meshes/missing.stl}\n",
       "bad.yaml:3: obstacles[0].mesh.file: cannot load mesh '" + dir + "/meshes/missing.stl'"},
      {"obstacles:\n  - name: junk\n    mesh: {file: garbage.stl}\n",
       "bad.yaml:3: obstacles[0].mesh.file: cannot load mesh '" + dir + "/garbage.stl'"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.yaml);
    const std::string message = sceneErrorOf(c.yaml, dir);
    EXPECT_NE(message.find(c.expect), std::string::npos) << message;
  }
  try {
    loadScene("no-such-scene");
    FAIL();
  } catch (const SceneError& e) {
    EXPECT_NE(std::string(e.what()).find("not a built-in (empty, living-room, pillars, table, "
                                         "window)"),
              std::string::npos)
        << e.what();
  }
}

// What one scene may hold (SceneLimits), checked as it is read: 1,000 obstacles, and 500,000 mesh
// triangles summed over the mesh obstacles (an inline scene of 1,000 sofas took 2.7 GB).
// Instances of a mesh share its triangles and its collision geometry.
// Obstacles the puppet may touch are limited (each is a contact row per contact point in every
// step): 1,000 stacked planes asked for gigabytes of the contact mode problem.  Planes it may not
// touch are not counted.
TEST(SceneFiles, ObstaclesThePuppetMayTouchAreLimited) {
  std::string planes = "obstacles:\n", untouched = "obstacles:\n";
  for (int i = 0; i <= SceneLimits::kContactObstacles; ++i) {
    const std::string plane = "  - {name: p" + std::to_string(i) +
                              ", plane: {normal: [0, 0, 1], offset: " + std::to_string(1e-5 * i) +
                              "}";
    planes += plane + "}\n";
    untouched += plane + ", contact: false}\n";
  }
  try {
    loadSceneStringBuiltinMeshes(planes, "planes.yaml");
    FAIL() << "65 planes the puppet may touch were accepted";
  } catch (const SceneError& e) {
    EXPECT_NE(std::string(e.what()).find("planes.yaml:66: obstacles[64].contact: 65 obstacles "
                                         "the puppet may touch; a scene holds at most 64"),
              std::string::npos)
        << e.what();
  }
  EXPECT_EQ(loadSceneStringBuiltinMeshes(untouched, "untouched.yaml")->obstacles.size(), 65u);
}

TEST(SceneFiles, ObstaclesAndMeshTrianglesAreLimitedAndMeshInstancesShared) {
  std::string spheres = "obstacles:\n";
  for (int i = 0; i <= SceneLimits::kObstacles; ++i)
    spheres += "  - {name: s" + std::to_string(i) + ", sphere: {radius: 0.1}}\n";
  try {
    loadSceneStringBuiltinMeshes(spheres, "many.yaml");
    FAIL();
  } catch (const SceneError& e) {
    EXPECT_NE(std::string(e.what()).find("many.yaml:2: obstacles: 1001 obstacles; a scene holds "
                                         "at most 1000"),
              std::string::npos)
        << e.what();
  }
  const std::string sofa = "  - {name: sofa, mesh: {file: meshes/sofa.stl}}\n";
  const std::size_t per_sofa =
      loadSceneStringBuiltinMeshes("obstacles:\n" + sofa, "one.yaml")->triangleCount();
  ASSERT_GT(per_sofa, 0u);
  const std::size_t fit = SceneLimits::kMeshTriangles / per_sofa;
  std::string sofas = "obstacles:\n";
  for (std::size_t i = 0; i < fit; ++i)
    sofas += "  - {name: sofa" + std::to_string(i) +
             ", mesh: {file: meshes/sofa.stl}, pose: {position: [" + std::to_string(i) +
             ", 0, 0]}}\n";
  const ScenePtr many = loadSceneStringBuiltinMeshes(sofas, "sofas.yaml");
  for (const Obstacle& o : many->obstacles) EXPECT_EQ(o.mesh, many->obstacles[0].mesh);
  // Built-in meshes are read once per process: another scene shares the same triangles, and a
  // scaled instance is a scaled copy of them.
  const ScenePtr other = loadSceneStringBuiltinMeshes("obstacles:\n" + sofa, "other.yaml");
  EXPECT_EQ(other->obstacles[0].mesh, many->obstacles[0].mesh);
  const ScenePtr scaled = loadSceneStringBuiltinMeshes(
      "obstacles:\n  - {name: big, mesh: {file: meshes/sofa.stl, scale: [2, 1, 0.5]}}\n",
      "scaled.yaml");
  const TriangleMesh& a = *other->obstacles[0].mesh;
  const TriangleMesh& b = *scaled->obstacles[0].mesh;
  ASSERT_EQ(a.vertices.size(), b.vertices.size());
  EXPECT_EQ(a.triangles, b.triangles);
  for (std::size_t i = 0; i < a.vertices.size(); ++i)
    EXPECT_EQ(b.vertices[i],
              Eigen::Vector3d(2 * a.vertices[i].x(), a.vertices[i].y(), 0.5 * a.vertices[i].z()));
  try {
    loadSceneStringBuiltinMeshes(sofas + "  - {name: last, mesh: {file: meshes/sofa.stl}}\n",
                                 "sofas.yaml");
    FAIL();
  } catch (const SceneError& e) {
    EXPECT_NE(std::string(e.what()).find("obstacles[" + std::to_string(fit) +
                                         "].mesh: the scene's mesh obstacles reach"),
              std::string::npos)
        << e.what();
  }
}

TEST(SceneFiles, AModelsMeshGeometryIsReadRelativeToTheModelFile) {
  const std::string dir = test::scratchDir("model_mesh");
  writeCubeMeshes(dir);
  std::ofstream(dir + "/block.yaml") << R"(
name: block
dynamic: [{name: z}]
frames: [{name: body, parent: world, tz: z}]
masses: [{name: body, frame: body, mass: 1, inertia: [0.01, 0.01, 0.01]}]
geometry: [{frame: body, mesh: {file: cube.ply, scale: 0.5}}]
)";
  const ModelPtr model = loadModelFile(dir + "/block.yaml");
  EXPECT_EQ(model->geometry[0].shape.mesh_path, dir + "/cube.ply");
  auto checker = checkerFor(model, loadScene("empty"));
  Eigen::VectorXd q(1);
  q << 0.3;  // a 0.1 m cube (0.2 scaled by 0.5) centred 0.3 above the floor
  EXPECT_NEAR(checker.clearance(q).distance_m, 0.25, 1e-6);  // meshes are read as floats
  q << 0.04;
  EXPECT_TRUE(checker.inCollision(q).in_collision);
  // A missing mesh is named when the collision model is built.
  std::ofstream(dir + "/lost.yaml") << R"(
name: lost
dynamic: [{name: z}]
frames: [{name: body, parent: world, tz: z}]
masses: [{name: body, frame: body, mass: 1, inertia: [0.01, 0.01, 0.01]}]
geometry: [{frame: body, mesh: {file: nowhere.stl}}]
)";
  try {
    CollisionModel(loadModelFile(dir + "/lost.yaml"), loadScene("empty"));
    FAIL();
  } catch (const MeshError& e) {
    EXPECT_NE(std::string(e.what()).find(dir + "/nowhere.stl"), std::string::npos) << e.what();
  }
}

// ---- The checked simulation ----------------------------------------------------------------

// The suspended mass carried into the wall below the window (examples/mass-into-wall.csv): the
// checked simulation reports the first contact as the batch trajectory check of the same states
// does, stops there when asked, and stops where its callback says.
TEST(CheckedSimulation, FirstCollisionAgreesWithTheTrajectoryCheckAndStopsWhenAsked) {
  const ModelPtr model = loadModel("suspended-mass");
  auto collision = std::make_shared<CollisionModel>(model, loadScene("window"));
  CollisionChecker checker(collision);
  const InputSchedule inputs =
      InputSchedule::fromCsv(*model, "t,xr\n0,0\n2,0.8\n", "mass-into-wall.csv");
  SimulationOptions options;
  options.dt_s = 0.01;
  options.duration_s = 4.0;
  std::vector<Eigen::VectorXd> states;
  const CheckedSimulationReport report =
      simulateChecked(model, inputs, options, &checker, {}, [&](const CheckedSample& s) {
        states.push_back(model->configuration(*s.row.q, *s.row.rho));
        EXPECT_TRUE(s.checked);
        EXPECT_EQ(s.in_collision, s.clearance_m == 0.0);
        return true;
      });
  ASSERT_EQ(report.samples, 401);
  EXPECT_EQ(report.simulation.steps, 400);
  ASSERT_GE(report.first_collision, 0);
  EXPECT_NEAR(report.first_collision_t_s, 0.77, 0.02);
  EXPECT_EQ(report.first_collision_pair.describe(), "link 'mass' and obstacle 'wall_below_window'");
  EXPECT_EQ(report.min_clearance_m, 0.0);
  Eigen::MatrixXd columns(model->nq(), static_cast<Eigen::Index>(states.size()));
  for (std::size_t i = 0; i < states.size(); ++i)
    columns.col(static_cast<Eigen::Index>(i)) = states[i];
  CollisionChecker batch(collision);
  const TrajectoryCheck check = batch.checkTrajectory(columns, true);
  EXPECT_EQ(check.first_collision, report.first_collision);
  EXPECT_EQ(check.first_pair.describe(), report.first_collision_pair.describe());
  int in_collision = 0;
  for (const TrajectorySample& s : check.samples) in_collision += s.in_collision;
  EXPECT_EQ(in_collision, report.samples_in_collision);

  CheckedSimulationOptions stop;
  stop.stop_at_first_collision = true;
  const CheckedSimulationReport stopped = simulateChecked(model, inputs, options, &checker, stop);
  EXPECT_TRUE(stopped.stopped_at_collision);
  EXPECT_EQ(stopped.samples, report.first_collision + 1);
  EXPECT_EQ(stopped.simulation.steps, report.first_collision);

  int seen = 0;
  const CheckedSimulationReport by_caller = simulateChecked(
      model, inputs, options, nullptr, {}, [&](const CheckedSample&) { return ++seen < 10; });
  EXPECT_TRUE(by_caller.stopped_by_caller);
  EXPECT_TRUE(by_caller.simulation.stopped);
  EXPECT_EQ(by_caller.samples, 10);
  EXPECT_FALSE(by_caller.checked);
  EXPECT_EQ(by_caller.first_collision, -1);
}

}  // namespace
}  // namespace marionette
