// SPDX-License-Identifier: BSD-3-Clause
#include "projection.hpp"

#include <ompl/base/spaces/RealVectorStateSpace.h>

#include <algorithm>
#include <cmath>

#include "state_space.hpp"

namespace marionette::detail {

Projection::Projection(const ompl::base::StateSpace* space, ModelPtr model, const GoalSpec& spec,
                       double point_cell_m)
    : ompl::base::ProjectionEvaluator(space),
      point_cell_m_(point_cell_m),
      model_(*model),
      eval_(model, spec),
      layout_(*model),
      data_(*model) {
  q_.resize(model_.nq());
  if (spec.kind == GoalSpec::Kind::Point) {
    point_ = eval_.goalPoints()[0];
    dim_ = 4;
    const auto& b = space->as<ompl::base::RealVectorStateSpace>()->getBounds();
    momentum_scale_.resize(layout_.nd);
    for (int i = 0; i < layout_.nd; ++i) momentum_scale_[i] = 1.0 / b.high[layout_.p() + i];
  } else {
    std::vector<int> vars = eval_.goalVariables();
    for (int i = 0; i < layout_.nd && vars.size() < 2; ++i)
      if (std::find(vars.begin(), vars.end(), i) == vars.end()) vars.push_back(i);
    if (vars.size() > 3) vars.resize(3);
    vars_ = vars;
    dim_ = static_cast<unsigned>(vars_.size());
  }
}

void Projection::defaultCellSizes() {
  cellSizes_.assign(dim_, 0.05);  // a twentieth of the momentum range
  if (point_ >= 0) {
    std::fill(cellSizes_.begin(), cellSizes_.begin() + 3, point_cell_m_);
    return;
  }
  for (unsigned i = 0; i < dim_; ++i) {
    const JointLimit& lim = model_.dynamic[vars_[i]].limit;
    const double range = std::isfinite(lim.upper - lim.lower) ? lim.upper - lim.lower : 2.0;
    cellSizes_[i] = range / 20.0;
  }
}

void Projection::project(const ompl::base::State* s, Eigen::Ref<Eigen::VectorXd> out) const {
  const double* x = values(s);
  if (point_ < 0) {
    for (unsigned i = 0; i < dim_; ++i) out[i] = x[layout_.q() + vars_[i]];
    return;
  }
  layout_.configuration(x, q_);
  if (!std::isfinite(q_[0])) {
    out.setZero();
    return;
  }
  out.head<3>() = pointInStage(model_, data_, q_, point_);
  double speed2 = 0.0;
  for (int i = 0; i < layout_.nd; ++i)
    speed2 += std::pow(x[layout_.p() + i] * momentum_scale_[i], 2);
  out[3] = std::sqrt(speed2 / layout_.nd);
}

}  // namespace marionette::detail
