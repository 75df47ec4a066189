// SPDX-License-Identifier: BSD-3-Clause
// TreeSearchSpace: the state and control spaces, propagator, validity, projection, start and goal
// of a request, assembled in the order that keeps the search a function of its seed (the goal's
// sampler takes the sequence's first number, OMPL's process-wide seed the second).
#include "marionette/search/search_space.hpp"

#include <ompl/base/ScopedState.h>

#include <cmath>
#include <optional>
#include <random>
#include <vector>

#include "goal_region.hpp"
#include "marionette/common/text.hpp"
#include "marionette/models/cancel.hpp"
#include "marionette/models/field_error.hpp"
#include "marionette/models/integrator.hpp"
#include "marionette/problem/goal_rest_pose.hpp"
#include "projection.hpp"
#include "propagator.hpp"
#include "seeding.hpp"
#include "state_space.hpp"
#include "validity.hpp"

namespace ob = ompl::base;
namespace oc = ompl::control;

namespace marionette {

namespace {
// The most steps a planner's path may expand to (an hour at 1 ms steps, 30 MB of a 16-input
// trajectory): a path of a million controls is refused before it is built.
constexpr long kMaxPathSteps = 3600000;
}  // namespace

struct TreeSearchSpace::Impl {
  TreeSearchProblem problem;
  ModelPtr model;
  StateLayout layout;
  mutable SearchCounters counters;
  mutable detail::SeedSequence seeds;
  oc::SpaceInformationPtr si;
  ob::ProblemDefinitionPtr pdef;
  ob::ProjectionEvaluatorPtr projection;
};

TreeSearchSpace::TreeSearchSpace(const TreeSearchProblem& problem) : impl_(new Impl) {
  Impl& m = *impl_;
  if (!problem.collision) throw FieldError("collision", "none given");
  m.problem = problem;
  m.model = problem.collision->modelPtr();
  m.layout = StateLayout(*m.model);
  m.seeds.base = problem.seed;
  const Model& model = *m.model;
  const double dt = problem.step_s;
  if (problem.q0.size() != model.nd() || problem.qdot0.size() != model.nd() ||
      problem.rho0.size() != model.nk())
    throw FieldError("start", "expected " + std::to_string(model.nd()) + " joint values and " +
                                  std::to_string(model.nk()) + " inputs");
  if (!(problem.min_control_steps >= 1 && problem.max_control_steps >= problem.min_control_steps))
    throw FieldError("options.min_control_steps", "must be >= 1 and <= max_control_steps");
  detail::quietOmpl();

  auto next_seed = [seeds = &m.seeds] { return (*seeds)(); };
  auto space = detail::makeStateSpace(model, problem.q0, problem.rho0, next_seed);
  auto cspace = detail::makeControlSpace(model, space, next_seed);
  m.si = std::make_shared<oc::SpaceInformation>(space, cspace);
  m.si->setPropagationStepSize(dt);
  m.si->setMinMaxControlDuration(problem.min_control_steps, problem.max_control_steps);
  IntegratorOptions dynamics;
  dynamics.dt_s = dt;
  dynamics.contacts = problem.collision->contacts();  // a touch the validity allows is held
  m.si->setStatePropagator(
      std::make_shared<detail::Propagator>(m.si, m.model, dynamics, m.counters));
  m.si->setStateValidityChecker(
      std::make_shared<detail::Validity>(m.si, problem.collision, dt, m.counters));
  {
    // Cell sizes set explicitly make it "user configured": else the space's setup replaces it
    // with OMPL's default random linear projection of the whole state.
    auto projection = std::make_shared<detail::Projection>(space.get(), m.model, problem.goal,
                                                           problem.point_cell_m);
    projection->defaultCellSizes();
    projection->setCellSizes(std::vector<double>(projection->getCellSizes()));
    space->registerDefaultProjection(projection);
    m.projection = projection;
  }

  ob::ScopedState<> start(space);
  {
    VariationalIntegrator vi(m.model, dynamics);
    const State x0 = vi.stateFromVelocity(problem.q0, problem.qdot0, problem.rho0);
    const Eigen::VectorXd rest = Eigen::VectorXd::Zero(model.nk());
    m.layout.write(x0, rest.data(),
                   start->as<ob::RealVectorStateSpace::StateType>()->values);
  }
  m.pdef = std::make_shared<ob::ProblemDefinition>(m.si);
  m.pdef->addStartState(start);
  // The search aims a tenth inside the tolerance: the verifying re-simulation rounds the rig's
  // inputs differently (resampled at the output rate), and a swinging puppet amplifies that.
  GoalSpec search_goal = problem.goal;
  search_goal.tolerance = 0.9 * problem.goal.effectiveTolerance();
  {
    // Its ompl::RNG draws a seed from OMPL's process-wide generator as it is made: under the lock
    // of every search's seeded section, so that it cannot take another search's seed.
    std::lock_guard<std::recursive_mutex> lock(detail::omplSeedMutex());
    m.pdef->setGoal(std::make_shared<detail::GoalRegion>(m.si, m.model, search_goal, dt,
                                                         m.seeds(), m.counters,
                                                         problem.rest_of_inputs_only));
  }
  // The space information is set up by the search, under the seed lock after the planner is made
  // (setting it up draws from OMPL's process-wide generator).
  if (!m.si->isValid(start.get()))
    throw FieldError("start", "the start state is in collision or outside the limits");
}

TreeSearchSpace::~TreeSearchSpace() = default;

const TreeSearchProblem& TreeSearchSpace::problem() const { return impl_->problem; }
const Model& TreeSearchSpace::model() const { return *impl_->model; }
const StateLayout& TreeSearchSpace::layout() const { return impl_->layout; }
const oc::SpaceInformationPtr& TreeSearchSpace::spaceInformation() const { return impl_->si; }
const ob::ProblemDefinitionPtr& TreeSearchSpace::problemDefinition() const {
  return impl_->pdef;
}
const ob::ProjectionEvaluatorPtr& TreeSearchSpace::projection() const {
  return impl_->projection;
}
const SearchCounters& TreeSearchSpace::counters() const { return impl_->counters; }
std::uint_fast32_t TreeSearchSpace::nextSeed() const { return impl_->seeds(); }

int TreeSearchSpace::offerGoalStates(int count) {
  Impl& m = *impl_;
  auto* region = dynamic_cast<detail::GoalRegion*>(m.pdef->getGoal().get());
  if (!region || m.problem.goal.kind != GoalSpec::Kind::Point || count <= 0) return 0;
  const Model& model = *m.model;
  CollisionChecker checker(m.problem.collision);
  GoalSpec aimed = m.problem.goal;  // as the region aims: a tenth inside the tolerance
  aimed.tolerance = 0.9 * m.problem.goal.effectiveTolerance();
  GoalEvaluator goal(m.model, aimed);
  IntegratorOptions dynamics;
  dynamics.dt_s = m.problem.step_s;
  VariationalIntegrator vi(m.model, dynamics);
  std::mt19937_64 rng(m.seeds());
  const Eigen::VectorXd still = Eigen::VectorXd::Zero(model.nk());
  const auto in_time = [] { return !cancelRequested(); };
  std::vector<std::vector<double>> states;
  // From rest poses of inputs drawn over their ranges (the start's where a range is unbounded),
  // down to the goal; a bounded number of tries, each a few rest-pose solves.
  for (int attempt = 0; attempt < 4 * count && static_cast<int>(states.size()) < count;
       ++attempt) {
    throwIfCancelled("goal states");
    Eigen::VectorXd rho = m.problem.rho0;
    for (int j = 0; j < model.nk(); ++j) {
      const KinematicVariable& v = model.kinematic[j];
      if (std::isfinite(v.lower) && std::isfinite(v.upper))
        rho[j] = std::uniform_real_distribution<double>(v.lower, v.upper)(rng);
    }
    const std::optional<RestVertex> from = restVertex(m.model, checker, rho, nullptr);
    if (!from) continue;
    std::optional<RestVertex> at =
        descendToGoal(m.model, checker, goal, *from, 0.5 * aimed.tolerance, in_time);
    if (!at) at = randomDescent(m.model, checker, goal, *from, 0.5 * aimed.tolerance, rng, in_time);
    if (!at) continue;
    std::vector<double> x(m.layout.dim());
    m.layout.write(vi.stateFromVelocity(at->q, Eigen::VectorXd::Zero(model.nd()), at->rho),
                   still.data(), x.data());
    ob::ScopedState<> state(m.si->getStateSpace());
    std::copy(x.begin(), x.end(), detail::values(state.get()));
    // (Not isSatisfied: that would count the goal as reached by the search, and end it.)
    if (m.si->isValid(state.get()) && region->measure(state.get()).satisfied &&
        region->brakesSafely(state.get()))
      states.push_back(std::move(x));
  }
  const int found = static_cast<int>(states.size());
  region->setGoalStates(std::move(states));
  return found;
}

RigTrajectory TreeSearchSpace::rigTrajectory(const oc::PathControl& path) const {
  const Model& model = *impl_->model;
  const double dt = impl_->problem.step_s;
  RigTrajectory traj(dt, impl_->problem.rho0);
  Eigen::VectorXd rho = impl_->problem.rho0, rhodot = Eigen::VectorXd::Zero(model.nk());
  // OMPL 1.5 has no const accessors of a path's controls; nothing is changed through them.
  auto& readable = const_cast<oc::PathControl&>(path);
  const auto& controls = readable.getControls();
  const auto& durations = readable.getControlDurations();
  // A planner's path (a plugin's too) is checked before it is expanded: each control held for at
  // most the search's longest (every step of it was propagated), finite; at most
  // kMaxPathSteps steps in all.
  const int max_steps = impl_->problem.max_control_steps;
  long total = 0;
  for (std::size_t c = 0; c < controls.size(); ++c) {
    const double steps = durations[c] / dt;
    if (!(steps >= 0 && steps <= max_steps + 0.5))
      throw FieldError("options.planner",
                       formatted("the planner's path holds control %zu for %g s; a control "
                                 "lasts at most %d steps of %g s",
                                 c, durations[c], max_steps, dt));
    const double* u = detail::values(controls[c]);
    for (int j = 0; j < model.nk(); ++j)
      if (!std::isfinite(u[j]))
        throw FieldError("options.planner",
                         formatted("the planner's path holds control %zu, not a number", c));
    total += std::lround(steps);
  }
  if (total > kMaxPathSteps)
    throw FieldError("options.planner", formatted("the planner's path is %ld steps; at most %ld",
                                                  total, kMaxPathSteps));
  for (std::size_t c = 0; c < controls.size(); ++c) {
    const double* u = detail::values(controls[c]);
    const int steps = static_cast<int>(std::lround(durations[c] / dt));
    throwIfCancelled("search path");
    for (int s = 0; s < steps; ++s) {
      rigStep(model, rho.data(), rhodot.data(), u, dt, rho.data(), rhodot.data());
      traj.append(rho, rhodot);
    }
  }
  appendBrake(model, traj);
  appendHold(traj, detail::kStopHoldSteps * dt);
  return traj;
}

}  // namespace marionette
