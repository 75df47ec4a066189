// SPDX-License-Identifier: BSD-3-Clause
// What a plan is for: a joint-space pose, task-space targets for named points, or the rest pose
// of given inputs, each optionally "at rest" -- and its text form, which the CLI's --goal takes
// and a plan file records.  Plain data: names are checked against a model by the planner's
// GoalEvaluator (planner/goal.hpp).
#pragma once

#include <Eigen/Core>
#include <limits>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "marionette/models/contact.hpp"

#pragma GCC visibility push(default)  // the library's API (docs/design.md, layout)

namespace marionette {

struct GoalSpec {
  enum class Kind { Joint, Point, RestOf };
  Kind kind = Kind::Joint;
  // Joint: dynamic variables and their target values (rad or m).
  // RestOf: kinematic variables and their values (the others at their defaults); the goal is the
  //         rest pose of those inputs, and the inputs themselves.
  std::vector<std::pair<std::string, double>> values;
  // Point: named points of the puppet and target positions in stage coordinates (m; the frame
  // scene files use, floor at z = 0).  Every target must be met.
  struct PointTarget {
    std::string point;
    Eigen::Vector3d position_m = Eigen::Vector3d::Zero();
  };
  std::vector<PointTarget> points;
  // Joint / RestOf: max |error| over the variables (rad or m); Point: radius (m).  NaN = default
  // (0.05 rad, 0.03 m, 0.05).
  double tolerance = std::numeric_limits<double>::quiet_NaN();
  bool at_rest = false;
  double rest_energy_J = 2e-3;  // "at rest": puppet kinetic energy below this, rig stopped
  // RestOf, not part of the text: where its rest pose is solved from (n_d; empty: the model's
  // initial pose) and what the puppet stands on there (null: hanging free) -- a performance's
  // last key frame, found by continuation on its stage, which a solve from the initial pose
  // hanging free may not find.
  Eigen::VectorXd rest_guess_q;
  std::shared_ptr<const Contacts> rest_contacts;

  // Parses "q:NAME=V,...[;tol=X]", "point:NAME=x,y,z[;radius=R]", "rest-of:VAR=V,...[;tol=X]",
  // each with an optional ";at-rest" (and ";energy=J").  Throws FieldError("goal", ...) naming
  // the part that is wrong.
  static GoalSpec parse(const std::string& text);
  // Merges another point target into this one (repeated --goal point:...).
  void merge(const GoalSpec& other);
  std::string describe() const;  // canonical text, parseable again
  double effectiveTolerance() const;
};

}  // namespace marionette

#pragma GCC visibility pop
