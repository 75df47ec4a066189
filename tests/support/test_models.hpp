// SPDX-License-Identifier: BSD-3-Clause
// Models built in code for tests: random trees that exercise every joint type, branching and
// strings on both kinds of variables; a free body carrying one shape; an arm beside its torso; a
// floor at a chosen height under a puppet; a rod across a bar or a ridge on the stage;
// marionette25's forearm swinging onto its pelvis.
#pragma once

#include <Eigen/Geometry>
#include <memory>
#include <random>
#include <string>

#include "marionette/models/contact.hpp"
#include "marionette/models/model.hpp"
#include "marionette/models/shape.hpp"

namespace marionette::test {

// A random tree of n_dynamic joints (rotations and translations about random axes, random
// constant offsets between them, branching), each body with a random mass, COM and full inertia;
// a rig of n_strings string carriages, each moved by two kinematic variables (x, y) and wound
// to a kinematic length.  Deterministic in seed.
ModelPtr randomTreeModel(unsigned seed, int n_dynamic, int n_strings);

// A rigid body placed by q = (x, y, z, yaw, pitch, roll) -- translations, then rotations about
// z, y, x -- carrying `shape` at `local`, and optionally a string of constant length from its
// origin to the world point `anchor`.
ModelPtr probeModel(const Shape& shape,
                    const Eigen::Isometry3d& local = Eigen::Isometry3d::Identity(),
                    const Eigen::Vector3d* anchor = nullptr);

// test::probeModel pulled by a string of length_m from `attach` (body frame) to a carriage at
// `anchor` + (carriage_x, 0, 0) in the world, carriage_x its one rig input (m).
ModelPtr draggedProbeModel(const Shape& shape, const Eigen::Isometry3d& local,
                           const Eigen::Vector3d& attach, const Eigen::Vector3d& anchor,
                           double length_m);

// Random state helpers.
Eigen::VectorXd randomVector(std::mt19937& rng, int n, double scale);

// An arm resting on its torso's side (self-contact): the torso a box 30 x 20 x 30 cm rolled by
// 0.3 rad, its side a slope under the arm, turning about the vertical on a hip joint held by a
// spring (2 N m/rad; 1 kg); the arm a capsule 20 cm long, radius 1 cm (0.1 kg) on a shoulder 10 cm
// out and 20 cm up, fixed in the world (neither link the other's parent: they may touch), turning
// about x (out from the torso) and y (swinging forward).  Hanging, its lower end would be 1.45 cm
// deep in the torso. `contacts` is the model file's section; the torso's moment of inertia about
// the vertical (kg m^2) makes it as good as fixed when large.
ModelPtr armBesideTorso(const std::string& contacts = "", double torso_inertia_kgm2 = 0.01);
// Its joints (hip, shoulder, swing) let go 0.1 rad out from the torso, swinging forward at
// 3 rad/s: it falls onto the torso's side and slides along it.
void armSwingingForward(Eigen::VectorXd& q, Eigen::VectorXd& qdot);

// The stage's floor (floorSurface) moved along its normal so that the puppet at q (n_q) enters
// it by depth_m at its deepest contact point (depth_m < 0: that far above it).
ContactSurface floorEntered(const Model& model, const Eigen::VectorXd& q, double depth_m);

// A rod (test::probeModel: 1 kg) carrying a capsule 30 cm long, radius 2 cm, along its x axis.
constexpr double kRodRadius_m = 0.02, kRodLength_m = 0.30;
ModelPtr rod();
// A horizontal bar along y (a capsule on the stage, radius 3 cm), its top at z = 0.
ContactBody bar();
// A ridge along y (a box 20 cm square turned 45 degrees about y), its edge at z = 0.
ContactBody ridge();
// A body on the stage that `model`'s contact points touch, and its capsules' middles with
// `segment` (as sceneContacts makes them), with Coulomb's `friction`.
std::shared_ptr<Contacts> onAStageBody(const Model& model, const ContactBody& stage,
                                       double friction, bool segment);

// marionette25 with its contact points and self-contacts (addSelfContacts), and the row of its
// left forearm's middle on its pelvis ("pelvis_1/forearm_l_5", a segment row).
struct ForearmOnPelvis {
  ModelPtr model;
  std::shared_ptr<Contacts> contacts;
  int row = -1;
};
ForearmOnPelvis forearmOnPelvis();
// Its start: hanging at its initial pose with the left arm 0.4 rad forward and 0.1 rad out,
// swinging in at 3 rad/s, across its pelvis's upper edge (n_d each).
void armSwingingInAcrossThePelvis(const Model& marionette25, Eigen::VectorXd& q,
                                  Eigen::VectorXd& qdot);

}  // namespace marionette::test
