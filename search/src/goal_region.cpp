// SPDX-License-Identifier: BSD-3-Clause
#include "goal_region.hpp"

#include <ompl/base/spaces/RealVectorStateSpace.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "state_space.hpp"

namespace ob = ompl::base;
namespace oc = ompl::control;

namespace marionette::detail {

GoalRegion::GoalRegion(const oc::SpaceInformationPtr& si, ModelPtr model, const GoalSpec& spec,
                       double dt_s, std::uint_fast32_t seed, SearchCounters& counters,
                       bool rest_of_inputs_only)
    : ob::GoalSampleableRegion(si),
      csi_(si.get()),
      model_(*model),
      eval_(model, spec),
      inputs_only_(rest_of_inputs_only && spec.kind == GoalSpec::Kind::RestOf),
      layout_(*model),
      dt_s_(dt_s),
      counters_(counters),
      data_(*model) {
  setThreshold(eval_.tolerance());
  rng_.setLocalSeed(seed);
  x_.q.resize(layout_.nd);
  x_.p.resize(layout_.nd);
  x_.rho.resize(layout_.nk);
  rhodot_.resize(layout_.nk);
  brake_[0] = si->allocState();
  brake_[1] = si->allocState();
  stop_ = si->allocControl();
  std::fill(values(stop_), values(stop_) + layout_.nk, 0.0);
}

GoalRegion::~GoalRegion() {
  csi_->freeState(brake_[0]);
  csi_->freeState(brake_[1]);
  csi_->freeControl(stop_);
}

GoalEvaluator::Measure GoalRegion::measure(const ob::State* s) const {
  const double* x = values(s);
  if (!std::isfinite(x[0])) {
    GoalEvaluator::Measure m;
    m.distance = std::numeric_limits<double>::infinity();
    return m;
  }
  layout_.read(x, x_, rhodot_.data());
  if (inputs_only_) {
    // The inputs within the tolerance, the puppet within kHandOffBasin tolerances of its rest
    // pose there: near enough that the optimizer brings it to that rest pose, not another.
    GoalEvaluator::Measure m;
    m.pose_error = eval_.poseError(x_.q, x_.rho);
    m.distance = std::max((x_.rho - eval_.targetInputs()).cwiseAbs().maxCoeff(),
                          m.pose_error / kHandOffBasin);
    m.satisfied = m.distance <= eval_.tolerance();
    return m;
  }
  return eval_.measureFromMomentum(x_.q, x_.rho, x_.p, rhodot_, dt_s_);
}

bool GoalRegion::isSatisfied(const ob::State* s, double* distance) const {
  const GoalEvaluator::Measure m = measure(s);
  ++counters_.motions;
  counters_.best_goal_distance = std::min(counters_.best_goal_distance, m.distance);
  // A goal state from which the brake swings the puppet into something is not a goal (the
  // verifying re-simulation would reject it).  It is reported a tolerance further off, so that
  // searches biased to their closest states (KPIECE) do not keep expanding from dead ends.
  const bool satisfied = m.satisfied && brakesSafely(s);
  if (distance) *distance = m.satisfied && !satisfied ? m.distance + threshold_ : m.distance;
  counters_.goal_reached = counters_.goal_reached || satisfied;
  return satisfied;
}

unsigned int GoalRegion::maxSampleCount() const {
  return eval_.spec().kind == GoalSpec::Kind::Point ? static_cast<unsigned>(goal_states_.size())
                                                   : std::numeric_limits<unsigned>::max();
}

// Brakes the rig from s (the zero control: slewing to rest at max acceleration, as appendBrake)
// and holds it for kStopHoldSteps; every state must be valid.
bool GoalRegion::brakesSafely(const ob::State* s) const {
  const auto& propagator = csi_->getStatePropagator();
  csi_->copyState(brake_[0], s);
  int margin = kStopHoldSteps + 1;  // the step that stops the rig, then the hold
  for (int step = 0; margin > 0; ++step) {
    propagator->propagate(brake_[0], stop_, dt_s_, brake_[1]);
    std::swap(brake_[0], brake_[1]);
    if (!csi_->isValid(brake_[0])) return false;
    const double* x = values(brake_[0]);
    bool stopped = true;
    for (int i = 0; i < layout_.nk; ++i) stopped = stopped && x[layout_.rhoDot() + i] == 0.0;
    if (stopped) --margin;
  }
  return true;
}

void GoalRegion::sampleGoal(ob::State* s) const {
  double* x = values(s);
  if (eval_.spec().kind == GoalSpec::Kind::Point) {
    if (goal_states_.empty()) throw ompl::Exception("a point goal offers no goal states");
    const auto& g = goal_states_[static_cast<std::size_t>(
        rng_.uniformInt(0, static_cast<int>(goal_states_.size()) - 1))];
    std::copy(g.begin(), g.end(), x);
    return;
  }
  const auto& b = si_->getStateSpace()->as<ob::RealVectorStateSpace>()->getBounds();
  const double tol = eval_.tolerance();
  for (int i = 0; i < layout_.nd; ++i) {
    const double t = eval_.targetDynamic()[i];
    const int j = layout_.q() + i;
    x[j] = std::isnan(t) ? rng_.uniformReal(b.low[j], b.high[j])
                         : std::clamp(t + rng_.uniformReal(-tol, tol), b.low[j], b.high[j]);
  }
  for (int i = 0; i < layout_.nk; ++i) {
    const int j = layout_.rho() + i;
    x[j] = eval_.targetInputs().size() ? eval_.targetInputs()[i]
                                       : rng_.uniformReal(b.low[j], b.high[j]);
    x[layout_.rhoDot() + i] = 0.0;
  }
  // Momentum of a puppet at rest there: p = dt/2 dL/dq (VariationalIntegrator).
  Eigen::VectorXd q(model_.nq());
  layout_.configuration(x, q);
  forwardKinematics(model_, data_, q);
  computeLagrangian(model_, data_, q, Eigen::VectorXd::Zero(layout_.nd), LagrangianOrder::First);
  for (int i = 0; i < layout_.nd; ++i) x[layout_.p() + i] = 0.5 * dt_s_ * data_.Lq[i];
}

}  // namespace marionette::detail
