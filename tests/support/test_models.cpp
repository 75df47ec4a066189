// SPDX-License-Identifier: BSD-3-Clause
#include "support/test_models.hpp"

#include <Eigen/Geometry>
#include <algorithm>
#include <cmath>
#include <memory>

#include "marionette/models/dynamics.hpp"
#include "marionette/models/model_io.hpp"

namespace marionette::test {

Eigen::VectorXd randomVector(std::mt19937& rng, int n, double scale) {
  std::uniform_real_distribution<double> u(-scale, scale);
  Eigen::VectorXd v(n);
  for (int i = 0; i < n; ++i) v[i] = u(rng);
  return v;
}

ModelPtr randomTreeModel(unsigned seed, int n_dynamic, int n_strings) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(-1.0, 1.0), pos(0.2, 1.0);
  auto randomUnit = [&] {
    Eigen::Vector3d a(u(rng), u(rng), u(rng));
    return Eigen::Vector3d(a.normalized());
  };
  ModelBuilder b("random-tree-" + std::to_string(seed));
  std::vector<std::string> bodies;
  for (int i = 0; i < n_dynamic; ++i) {
    const std::string var = "q" + std::to_string(i);
    const std::string body = "body" + std::to_string(i);
    const std::string offset = "offset" + std::to_string(i);
    DynamicVariable v;
    v.name = var;
    v.damping = 0.01;
    b.addDynamic(v);
    // Parent: world for the first, otherwise a random earlier body (branching tree).
    const std::string parent =
        bodies.empty() ? "world"
                       : bodies[std::uniform_int_distribution<int>(0, bodies.size() - 1)(rng)];
    Eigen::Isometry3d T = Eigen::Isometry3d::Identity();
    T.linear() = Eigen::AngleAxisd(u(rng) * 3.0, randomUnit()).toRotationMatrix();
    T.translation() = 0.3 * Eigen::Vector3d(u(rng), u(rng), u(rng));
    b.addFixedFrame(offset, parent, T);
    const bool translate = (i % 4 == 3);
    b.addJointFrame(body, offset, translate ? JointType::Translate : JointType::Rotate,
                    randomUnit(), var);
    // A full inertia: random rotation of principal moments obeying the triangle inequality.
    Eigen::Vector3d moments(pos(rng), pos(rng), pos(rng));
    moments *= 0.01;
    std::sort(moments.data(), moments.data() + 3);
    moments[2] = std::min(moments[2], 0.9 * (moments[0] + moments[1]));
    const Eigen::Matrix3d Rm = Eigen::AngleAxisd(u(rng) * 3.0, randomUnit()).toRotationMatrix();
    const Eigen::Matrix3d I = Rm * moments.asDiagonal() * Rm.transpose();
    b.addMass(body, body, 0.2 + pos(rng), 0.2 * Eigen::Vector3d(u(rng), u(rng), u(rng)), I);
    bodies.push_back(body);
  }
  for (int s = 0; s < n_strings; ++s) {
    const std::string k = std::to_string(s);
    KinematicVariable x, y, len;
    x.name = "sx" + k;
    y.name = "sy" + k;
    len.name = "len" + k;
    len.default_value = 1.0;
    b.addKinematic(x).addKinematic(y).addKinematic(len);
    Eigen::Isometry3d up = Eigen::Isometry3d::Identity();
    up.translation() = Eigen::Vector3d(0.1 * s, 0.0, 1.0);
    b.addFixedFrame("rig_base" + k, "world", up);
    b.addJointFrame("rig_x" + k, "rig_base" + k, JointType::Translate, Eigen::Vector3d::UnitX(),
                    x.name);
    b.addJointFrame("rig_yaw" + k, "rig_x" + k, JointType::Rotate, Eigen::Vector3d::UnitZ(),
                    y.name);
    const std::string body = bodies[(s * 7 + 3) % bodies.size()];
    b.addString("string" + k, body, 0.1 * Eigen::Vector3d(u(rng), u(rng), u(rng)), "rig_yaw" + k,
                Eigen::Vector3d(0.2, 0.0, 0.0), len.name, 0.0);
  }
  return b.build();
}

namespace {

ModelBuilder probeBuilder(const Shape& shape, const Eigen::Isometry3d& local) {
  ModelBuilder b("probe");
  const char* names[6] = {"x", "y", "z", "yaw", "pitch", "roll"};
  for (const char* n : names) b.addDynamic({n, 0.0, 0.0, {}, {}});
  b.addJointFrame("tx", "world", JointType::Translate, Eigen::Vector3d::UnitX(), "x");
  b.addJointFrame("ty", "tx", JointType::Translate, Eigen::Vector3d::UnitY(), "y");
  b.addJointFrame("tz", "ty", JointType::Translate, Eigen::Vector3d::UnitZ(), "z");
  b.addJointFrame("yaw", "tz", JointType::Rotate, Eigen::Vector3d::UnitZ(), "yaw");
  b.addJointFrame("pitch", "yaw", JointType::Rotate, Eigen::Vector3d::UnitY(), "pitch");
  b.addJointFrame("body", "pitch", JointType::Rotate, Eigen::Vector3d::UnitX(), "roll");
  b.addMass("body", "body", 1.0, Eigen::Vector3d::Zero(), 0.01 * Eigen::Matrix3d::Identity());
  Geometry g;
  g.name = "shape";
  g.shape = shape;
  g.pose = local;
  b.addGeometry(g, "body");
  return b;
}

}  // namespace

ModelPtr probeModel(const Shape& shape, const Eigen::Isometry3d& local,
                    const Eigen::Vector3d* anchor) {
  ModelBuilder b = probeBuilder(shape, local);
  if (anchor) {
    b.addString("thread", "body", Eigen::Vector3d::Zero(), "world", *anchor, "", 2.0);
  }
  return b.build();
}

ModelPtr draggedProbeModel(const Shape& shape, const Eigen::Isometry3d& local,
                           const Eigen::Vector3d& attach, const Eigen::Vector3d& anchor,
                           double length_m) {
  ModelBuilder b = probeBuilder(shape, local);
  KinematicVariable carriage;
  carriage.name = "carriage_x";
  b.addKinematic(carriage);
  Eigen::Isometry3d base = Eigen::Isometry3d::Identity();
  base.translation() = anchor;
  b.addFixedFrame("rail", "world", base);
  b.addJointFrame("carriage", "rail", JointType::Translate, Eigen::Vector3d::UnitX(),
                  carriage.name);
  b.addString("tow", "body", attach, "carriage", Eigen::Vector3d::Zero(), "", length_m);
  return b.build();
}

ModelPtr armBesideTorso(const std::string& contacts, double torso_inertia_kgm2) {
  const std::string inertia = std::to_string(torso_inertia_kgm2);
  return loadModelString(R"(
name: arm-beside-torso
defaults: {limit_stiffness: 2.0, limit_damping: 0.05}
dynamic:
  - {name: hip, initial: 0.0, limits: [-0.001, 0.001]}
  - {name: shoulder, initial: 0.0}
  - {name: swing, initial: 0.0}
frames:
  - {name: hip, parent: world, rz: hip}
  - {name: torso, parent: hip, tz: 0.0}
  - {name: shoulder_side, parent: world, ty: 0.10}
  - {name: shoulder_joint, parent: shoulder_side, tz: 0.20}
  - {name: upper_arm, parent: shoulder_joint, rx: shoulder}
  - {name: arm, parent: upper_arm, ry: swing}
masses:
  - {name: torso, frame: torso, mass: 1.0, com: [0, 0, 0], inertia: [)" +
                             inertia + ", " + inertia + ", " + inertia + R"(]}
  - {name: arm, frame: arm, mass: 0.1, com: [0, 0, -0.1], inertia: [3.4e-4, 3.4e-4, 1e-5]}
geometry:
  - {name: torso, frame: torso, box: {size: [0.30, 0.20, 0.30]}, pose: {rpy: [0.3, 0, 0]}}
  - {name: arm, frame: arm, capsule: {radius: 0.01, length: 0.20}, pose: {xyz: [0, 0, -0.1]}}
)" + contacts,
                         "arm-beside-torso");
}

void armSwingingForward(Eigen::VectorXd& q, Eigen::VectorXd& qdot) {
  q.resize(3);
  qdot.resize(3);
  q << 0.0, 0.1, 0.0;
  qdot << 0.0, 0.0, 3.0;
}

ContactSurface floorEntered(const Model& model, const Eigen::VectorXd& q, double depth_m) {
  ContactSurface floor = floorSurface(model);
  DynamicsData d(model);
  forwardKinematics(model, d, q);
  double deepest = -1e300;  // the deepest point into the floor's plane
  for (const ContactPoint& p : contactPoints(model))
    deepest = std::max(deepest, floor.offset_m + p.radius_m -
                                    floor.normal.dot(pointPosition(d, p.frame, p.local_m)));
  floor.offset_m += depth_m - deepest;
  return floor;
}

ModelPtr rod() {
  Shape capsule;
  capsule.type = ShapeType::Capsule;
  capsule.radius_m = kRodRadius_m;
  capsule.length_m = kRodLength_m;
  Eigen::Isometry3d along_x = Eigen::Isometry3d::Identity();
  along_x.linear() = Eigen::AngleAxisd(M_PI / 2, Eigen::Vector3d::UnitY()).toRotationMatrix();
  return test::probeModel(capsule, along_x);
}

std::shared_ptr<Contacts> onAStageBody(const Model& model, const ContactBody& stage,
                                       double friction, bool segment) {
  auto contacts = std::make_shared<Contacts>();
  contacts->points = contactPoints(model);
  contacts->bodies = contactBodies(model);
  const int b = static_cast<int>(contacts->bodies.size());
  contacts->bodies.push_back(stage);
  for (std::size_t p = 0; p < contacts->points.size(); ++p)
    contacts->self.push_back({static_cast<int>(p), b, friction, contacts->points[p].radius_m});
  if (segment)
    for (int c = 0; c < b; ++c)
      if (segmentRowFor(contacts->bodies, c, b)) {
        SelfContact row{-1, b, friction, contacts->bodies[c].radius_m};
        row.segment = c;
        contacts->self.push_back(row);
      }
  return contacts;
}

ContactBody bar() {
  ContactBody b;
  b.name = "bar";
  b.pose.linear() = Eigen::AngleAxisd(M_PI / 2, Eigen::Vector3d::UnitX()).toRotationMatrix();
  b.pose.translation() = Eigen::Vector3d(0, 0, -0.03);
  b.half_m.z() = 0.5;
  b.radius_m = 0.03;
  return b;
}

ContactBody ridge() {
  ContactBody b;
  b.name = "ridge";
  b.pose.linear() = Eigen::AngleAxisd(M_PI / 4, Eigen::Vector3d::UnitY()).toRotationMatrix();
  b.pose.translation() = Eigen::Vector3d(0, 0, -0.1 * std::sqrt(2.0));
  b.half_m = Eigen::Vector3d(0.1, 0.5, 0.1);
  return b;
}

ForearmOnPelvis forearmOnPelvis() {
  ForearmOnPelvis out;
  out.model = loadModel("marionette25");
  out.contacts = std::make_shared<Contacts>();
  out.contacts->points = contactPoints(*out.model);
  addSelfContacts(*out.model, *out.contacts);
  for (int r = 0; r < out.contacts->rows(); ++r)
    if (out.contacts->rowName(r) == "pelvis_1/forearm_l_5") out.row = r;
  return out;
}

void armSwingingInAcrossThePelvis(const Model& marionette25, Eigen::VectorXd& q,
                                  Eigen::VectorXd& qdot) {
  const int abduct = marionette25.variableIndex("shoulder_l_abduct");
  q = marionette25.initialDynamic();
  qdot = Eigen::VectorXd::Zero(marionette25.nd());
  q[marionette25.variableIndex("shoulder_l_flex")] = 0.4;
  q[abduct] = 0.1;
  qdot[abduct] = -3.0;
}

}  // namespace marionette::test
