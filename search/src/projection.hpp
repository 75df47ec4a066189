// SPDX-License-Identifier: BSD-3-Clause
// Internal: the projection KPIECE and PDST grid the state through (and Syclop's decomposition):
// for point goals the goal point in the stage and how fast the puppet moves (arrivals must be
// slow enough to stop), else the goal's joints padded with the first other joints (2-3) -- what
// the search needs to spread over.
#pragma once

#include <ompl/base/ProjectionEvaluator.h>

#include "marionette/models/dynamics.hpp"
#include "marionette/plan/goal.hpp"
#include "marionette/search/state_layout.hpp"

namespace marionette::detail {

class Projection : public ompl::base::ProjectionEvaluator {
 public:
  // point_cell_m: the grid's cell size along the goal point's coordinates (point goals).
  Projection(const ompl::base::StateSpace* space, ModelPtr model, const GoalSpec& spec,
             double point_cell_m);
  unsigned int getDimension() const override { return dim_; }
  void defaultCellSizes() override;
  void project(const ompl::base::State* s, Eigen::Ref<Eigen::VectorXd> out) const override;

 private:
  double point_cell_m_;
  const Model& model_;
  GoalEvaluator eval_;
  StateLayout layout_;
  mutable DynamicsData data_;
  mutable Eigen::VectorXd q_;
  int point_ = -1;
  Eigen::VectorXd momentum_scale_;  // 1 / the momentum bounds
  std::vector<int> vars_;
  unsigned dim_ = 2;
};

}  // namespace marionette::detail
