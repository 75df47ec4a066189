// SPDX-License-Identifier: BSD-3-Clause
// ModelBuilder's state (the public class: model.hpp): the items added so far, by name, and the
// steps build() takes to validate them and resolve them into a Model.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "marionette/models/model.hpp"

namespace marionette {

struct ModelBuilder::Impl {
  struct PendingFrame {
    std::string name, parent, variable;
    JointType type;
    Eigen::Isometry3d offset;
    Eigen::Vector3d axis;
    SourceRef src;
  };
  struct PendingMass {
    std::string name, frame;
    double mass;
    Eigen::Vector3d com;
    Eigen::Matrix3d inertia;
    SourceRef src;
  };
  struct PendingPoint {
    std::string name, frame;
    Eigen::Vector3d pos;
    SourceRef src;
  };
  struct PendingString {
    std::string name, puppet_frame, rig_frame, length_variable;
    Eigen::Vector3d puppet_point, rig_point;
    double length;
    SourceRef src;
  };
  struct PendingGeometry {
    Geometry g;
    std::string frame;
  };
  struct PendingAllowed {
    std::string a, b;
    SourceRef src;
    double friction = 0.0;  // setContactFriction's
  };
  [[noreturn]] void fail(const SourceRef& src, const std::string& message) const;
  ModelPtr build() const;
  // build()'s steps, in order: validate and resolve each kind of item into the model, derive
  // the structure the algorithms use.
  using NameTable = std::map<std::string, SourceRef>;
  void checkUnique(NameTable& table, const std::string& kind, const std::string& name,
                   const SourceRef& src) const;
  int frameOf(const Model& m, const std::string& name, const SourceRef& src,
              const std::string& what) const;  // -1 for "world"
  void checkCounts() const;                    // ModelLimits
  void buildVariables(Model& m) const;
  std::vector<int> buildFrames(Model& m) const;  // the frame each variable drives (-1: none)
  void deriveFrameChains(Model& m) const;
  void buildMasses(Model& m) const;
  void buildPoints(Model& m) const;
  void buildStrings(Model& m, std::vector<char>& kinematic_used) const;
  void deriveVariableStructure(Model& m, const std::vector<int>& variable_frame,
                               std::vector<char>& kinematic_used) const;
  void buildGeometry(Model& m) const;

  std::string name_, description_, source_file_;
  double gravity_ = 9.81;
  Eigen::Isometry3d stage_pose_ = Eigen::Isometry3d::Identity();
  std::vector<DynamicVariable> dynamic_;
  std::vector<KinematicVariable> kinematic_;
  std::vector<PendingFrame> frames_;
  std::vector<PendingMass> masses_;
  std::vector<PendingPoint> points_;
  std::vector<PendingString> strings_;
  std::vector<PendingGeometry> geometry_;
  std::vector<PendingAllowed> allowed_;
  std::vector<PendingAllowed> contact_excluded_, contact_friction_;
  bool self_contact_ = true;
  double self_friction_ = kDefaultSelfFriction;
  SourceRef self_contact_src_;
};

}  // namespace marionette
