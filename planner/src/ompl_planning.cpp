// SPDX-License-Identifier: BSD-3-Clause
// The OMPL control glue (docs/design.md, planning; Johnson & Murphey, ICRA 2007 §VII): the state x
// = (q_d, p, rho, rho_dot) in one real vector, controls = target rig velocities, a propagator that
// steps the rig and the variational integrator, validity = finite (the integrator converged),
// inside joint limits and actuator ranges, and no collision of links or strings.
//
// Why rho_dot is in the state: a control held for k steps is a target velocity that the rig
// slews to at its max acceleration (rigStep), so the plans respect acceleration limits as well
// as speed limits; without the rate in the state a new control would jump the rig's speed.
#include "ompl_planning.hpp"

#include <ompl/base/ProjectionEvaluator.h>
#include <ompl/base/goals/GoalSampleableRegion.h>
#include <ompl/base/spaces/RealVectorStateSpace.h>
#include <ompl/control/PathControl.h>
#include <ompl/control/SimpleSetup.h>
#include <ompl/control/spaces/RealVectorControlSpace.h>
#include <ompl/util/Console.h>
#include <ompl/util/RandomNumbers.h>

#include <chrono>
#include <cmath>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <stdexcept>
#include <thread>

#include "marionette/common/clock.hpp"
#include "marionette/common/text.hpp"
#include "marionette/models/dynamics.hpp"
#include "marionette/models/field_error.hpp"
#include "marionette/models/integrator.hpp"

namespace ob = ompl::base;
namespace oc = ompl::control;

namespace marionette::detail {
namespace {

// Offsets of the parts of x in the real vector.
struct Layout {
  int nd = 0, nk = 0;
  int p() const { return nd; }
  int rho() const { return 2 * nd; }
  int rhodot() const { return 2 * nd + nk; }
  int dim() const { return 2 * nd + 2 * nk; }
};

double* values(ob::State* s) {
  return s->as<ob::RealVectorStateSpace::StateType>()->values;
}
const double* values(const ob::State* s) {
  return s->as<ob::RealVectorStateSpace::StateType>()->values;
}

// Per-request seeds: every sampler the planner allocates gets the next number of this
// sequence, so a single-threaded search is a function of the request's seed alone.
struct SeedSequence {
  unsigned long base;
  unsigned long next = 0;
  std::uint_fast32_t operator()() {
    // splitmix64 of (base, counter): distinct, well-mixed, never 0.
    unsigned long long z = base * 0x9E3779B97F4A7C15ull + (++next) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    return static_cast<std::uint_fast32_t>(z % 4294967291ull) + 1;
  }
};

// Distance: each component divided by its scale, momentum and rig rates down-weighted, so that
// pose dominates (Johnson & Murphey, ICRA 2007 §VII measures nearness by configuration).
class MarionetteSpace : public ob::RealVectorStateSpace {
 public:
  MarionetteSpace(const Layout& layout, Eigen::VectorXd scale)
      : ob::RealVectorStateSpace(layout.dim()), scale_(std::move(scale)) {
    setName("marionette");
  }
  double distance(const ob::State* a, const ob::State* b) const override {
    const double *x = values(a), *y = values(b);
    double d2 = 0.0;
    for (int i = 0; i < scale_.size(); ++i) {
      const double d = (x[i] - y[i]) / scale_[i];
      d2 += d * d;
    }
    return std::sqrt(d2);
  }
  double getMaximumExtent() const override {
    double d2 = 0.0;
    for (int i = 0; i < scale_.size(); ++i) {
      const double d = (bounds_.high[i] - bounds_.low[i]) / scale_[i];
      d2 += d * d;
    }
    return std::sqrt(d2);
  }
  const Eigen::VectorXd& scale() const { return scale_; }

 private:
  Eigen::VectorXd scale_;  // per component: the length that counts as distance 1
};

class SeededStateSampler : public ob::StateSampler {
 public:
  SeededStateSampler(const MarionetteSpace* space, std::uint_fast32_t seed)
      : ob::StateSampler(space), space_(space) {
    rng_.setLocalSeed(seed);
  }
  void sampleUniform(ob::State* s) override {
    const auto& b = space_->getBounds();
    double* x = values(s);
    for (std::size_t i = 0; i < b.low.size(); ++i) x[i] = rng_.uniformReal(b.low[i], b.high[i]);
  }
  // Near in the space's own metric: component i within distance * scale_i of `near`.
  void sampleUniformNear(ob::State* s, const ob::State* near, double distance) override {
    const auto& b = space_->getBounds();
    double* x = values(s);
    const double* c = values(near);
    const double w = distance / std::sqrt(static_cast<double>(b.low.size()));
    for (std::size_t i = 0; i < b.low.size(); ++i) {
      const double r = w * space_->scale()[i];
      x[i] = rng_.uniformReal(std::max(b.low[i], c[i] - r), std::min(b.high[i], c[i] + r));
    }
  }
  void sampleGaussian(ob::State* s, const ob::State* mean, double stddev) override {
    const auto& b = space_->getBounds();
    double* x = values(s);
    const double* c = values(mean);
    const double w = stddev / std::sqrt(static_cast<double>(b.low.size()));
    for (std::size_t i = 0; i < b.low.size(); ++i)
      x[i] = std::clamp(rng_.gaussian(c[i], w * space_->scale()[i]), b.low[i], b.high[i]);
  }

 private:
  const MarionetteSpace* space_;
};

// Target rig velocities: uniform within +-max_speed, and exactly 0 with probability 1/8 per
// input (a rig that stops is what "at rest" goals need, and uniform sampling never gives 0).
class SeededControlSampler : public oc::ControlSampler {
 public:
  SeededControlSampler(const oc::ControlSpace* space, std::uint_fast32_t seed)
      : oc::ControlSampler(space) {
    rng_.setLocalSeed(seed);
  }
  void sample(oc::Control* control) override {
    const auto& b = space_->as<oc::RealVectorControlSpace>()->getBounds();
    double* u = control->as<oc::RealVectorControlSpace::ControlType>()->values;
    for (std::size_t i = 0; i < b.low.size(); ++i)
      u[i] = rng_.uniform01() < 0.125 ? 0.0 : rng_.uniformReal(b.low[i], b.high[i]);
  }
};

// After braking, plans hold the rig still this many steps: the puppet swings on after the rig
// stops, and a goal state must be safe through that too.
constexpr int kStopHoldSteps = 5;

struct Counters {
  long propagations = 0;
  long collision_checks = 0;
  long motions = 0;  // goal checks = motions added (every planner checks each new motion)
  double best_goal_distance = std::numeric_limits<double>::infinity();
  bool goal_reached = false;  // some motion satisfied the goal (SST adds its path only at the end)
};

class Propagator : public oc::StatePropagator {
 public:
  Propagator(const oc::SpaceInformationPtr& si, const Model& model, ModelPtr model_ptr,
             const Layout& layout, double dt, Counters& counters)
      : oc::StatePropagator(si),
        model_(model),
        layout_(layout),
        counters_(counters),
        vi_(std::move(model_ptr),
            [&] {
              IntegratorOptions o;
              o.dt_s = dt;
              return o;
            }()),
        dt_(dt) {
    x_ = vi_.makeState();
    rho_next_.resize(layout.nk);
    rhodot_next_.resize(layout.nk);
  }
  void propagate(const ob::State* state, const oc::Control* control, double duration,
                 ob::State* result) const override {
    const double* in = values(state);
    double* out = values(result);
    const double* u = control->as<oc::RealVectorControlSpace::ControlType>()->values;
    const int nd = layout_.nd, nk = layout_.nk,
              steps = std::max(1, int(std::lround(duration / dt_)));
    for (int i = 0; i < nd; ++i) {
      x_.q[i] = in[i];
      x_.p[i] = in[layout_.p() + i];
    }
    for (int i = 0; i < nk; ++i) {
      x_.rho[i] = in[layout_.rho() + i];
      rhodot_next_[i] = in[layout_.rhodot() + i];
    }
    bool ok = std::isfinite(in[0]);
    for (int s = 0; s < steps && ok; ++s) {
      rigStep(model_, x_.rho.data(), rhodot_next_.data(), u, dt_, rho_next_.data(),
              rhodot_next_.data());
      ++counters_.propagations;
      try {
        ok = vi_.step(x_, rho_next_, x_) == StepStatus::Ok;
      } catch (const PlanCancelled&) {
        ok = false;  // never thrown through OMPL: the termination condition ends the search
      }
    }
    if (!ok) {
      // A failed step is an invalid state, never a wrong one.
      for (int i = 0; i < layout_.dim(); ++i) out[i] = std::numeric_limits<double>::quiet_NaN();
      return;
    }
    for (int i = 0; i < nd; ++i) {
      out[i] = x_.q[i];
      out[layout_.p() + i] = x_.p[i];
    }
    for (int i = 0; i < nk; ++i) {
      out[layout_.rho() + i] = x_.rho[i];
      out[layout_.rhodot() + i] = rhodot_next_[i];
    }
  }
  bool canPropagateBackward() const override { return false; }

 private:
  const Model& model_;
  Layout layout_;
  Counters& counters_;
  mutable VariationalIntegrator vi_;
  mutable State x_;
  mutable Eigen::VectorXd rho_next_, rhodot_next_;
  double dt_;
};

class Validity : public ob::StateValidityChecker {
 public:
  Validity(const ob::SpaceInformationPtr& si, const CollisionModelPtr& collision,
           const Layout& layout, double dt, Counters& counters)
      : ob::StateValidityChecker(si),
        dt_(dt),
        model_(collision->model()),
        layout_(layout),
        checker_(collision),
        counters_(counters) {
    q_.resize(model_.nq());
  }
  bool isValid(const ob::State* state) const override {
    const double* x = values(state);
    for (int i = 0; i < layout_.dim(); ++i)
      if (!std::isfinite(x[i])) return false;
    for (int i = 0; i < layout_.nd; ++i) {
      const JointLimit& lim = model_.dynamic[i].limit;
      // Stops are exact constraints (a hair of tolerance for the solver); a spring limit may be
      // entered by its softening depth, which is where its force is fully on.
      const double slack = lim.isSpring() ? lim.softening : 1e-6;
      if (x[i] < lim.lower - slack || x[i] > lim.upper + slack) return false;
      q_[i] = x[i];
    }
    for (int i = 0; i < layout_.nk; ++i) {
      const KinematicVariable& kv = model_.kinematic[i];
      const double r = x[layout_.rho() + i], v = x[layout_.rhodot() + i];
      if (r < kv.lower - 1e-9 || r > kv.upper + 1e-9) return false;
      // The rig must be able to stop inside its range: braking at max_accel from v (in whole
      // steps, as appendBrake does) travels at most v^2 / (2a) + |v| dt.
      const double stop = v * std::abs(v) / (2.0 * kv.max_accel) + v * dt_;
      if (r + stop < kv.lower - 1e-9 || r + stop > kv.upper + 1e-9) return false;
      q_[layout_.nd + i] = r;
    }
    ++counters_.collision_checks;
    return !checker_.inCollision(q_).in_collision;
  }

 private:
  double dt_;
  const Model& model_;
  Layout layout_;
  mutable CollisionChecker checker_;
  Counters& counters_;
  mutable Eigen::VectorXd q_;
};

class Goal : public ob::GoalSampleableRegion {
 public:
  Goal(const oc::SpaceInformationPtr& si, ModelPtr model, const GoalSpec& spec,
       const Layout& layout, double dt, std::uint_fast32_t seed, Counters& counters)
      : ob::GoalSampleableRegion(si),
        csi_(si.get()),
        model_(*model),
        eval_(model, spec),
        layout_(layout),
        dt_(dt),
        counters_(counters),
        data_(*model) {
    setThreshold(eval_.tolerance());
    rng_.setLocalSeed(seed);
    qd_.resize(layout.nd);
    p_.resize(layout.nd);
    rho_.resize(layout.nk);
    rhodot_.resize(layout.nk);
    brake_[0] = si->allocState();
    brake_[1] = si->allocState();
    stop_ = si->allocControl();
    double* u = stop_->as<oc::RealVectorControlSpace::ControlType>()->values;
    std::fill(u, u + layout.nk, 0.0);
  }
  ~Goal() override {
    csi_->freeState(brake_[0]);
    csi_->freeState(brake_[1]);
    csi_->freeControl(stop_);
  }
  GoalEvaluator::Measure measure(const ob::State* s) const {
    const double* x = values(s);
    for (int i = 0; i < layout_.nd; ++i) {
      qd_[i] = x[i];
      p_[i] = x[layout_.p() + i];
    }
    for (int i = 0; i < layout_.nk; ++i) {
      rho_[i] = x[layout_.rho() + i];
      rhodot_[i] = x[layout_.rhodot() + i];
    }
    if (!std::isfinite(x[0])) {
      GoalEvaluator::Measure m;
      m.distance = std::numeric_limits<double>::infinity();
      return m;
    }
    return eval_.measureFromMomentum(qd_, rho_, p_, rhodot_, dt_);
  }
  double distanceGoal(const ob::State* s) const override { return measure(s).distance; }
  bool isSatisfied(const ob::State* s, double* distance) const override {
    const GoalEvaluator::Measure m = measure(s);
    ++counters_.motions;
    counters_.best_goal_distance = std::min(counters_.best_goal_distance, m.distance);
    // A plan ends by braking the rig to a stop; a goal state from which that brake swings the
    // puppet into something is not a goal (the verifying re-simulation would reject it).  It is
    // reported a tolerance further off, so that searches biased to their closest states (KPIECE)
    // do not keep expanding from dead ends.
    const bool satisfied = m.satisfied && brakesSafely(s);
    if (distance) *distance = m.satisfied && !satisfied ? m.distance + threshold_ : m.distance;
    counters_.goal_reached = counters_.goal_reached || satisfied;
    return satisfied;
  }
  // Goal bias (Johnson & Murphey, ICRA 2007 §VII) needs goal states: joint and rest-of goals give
  // them directly (targets within the tolerance, the other joints anywhere in their limits, puppet
  // still); a point goal would need inverse kinematics of a hanging puppet, so it offers none.
  unsigned int maxSampleCount() const override {
    return eval_.spec().kind == GoalSpec::Kind::Point ? 0u : std::numeric_limits<unsigned>::max();
  }
  // Brakes the rig from s (the zero control: slewing to rest at max acceleration, as
  // appendBrake) and holds it for kStopHoldSteps; every state must be valid.  Plans end the
  // same way, so the verifying re-simulation covers exactly what is checked here.
  bool brakesSafely(const ob::State* s) const {
    const auto& propagator = csi_->getStatePropagator();
    csi_->copyState(brake_[0], s);
    int margin = kStopHoldSteps + 1;  // the step that stops the rig, then the hold
    for (int step = 0; margin > 0; ++step) {
      propagator->propagate(brake_[0], stop_, dt_, brake_[1]);
      std::swap(brake_[0], brake_[1]);
      if (!csi_->isValid(brake_[0])) return false;
      const double* x = values(brake_[0]);
      bool stopped = true;
      for (int i = 0; i < layout_.nk; ++i) stopped = stopped && x[layout_.rhodot() + i] == 0.0;
      if (stopped) --margin;
    }
    return true;
  }

  void sampleGoal(ob::State* s) const override {
    double* x = values(s);
    const auto& b = si_->getStateSpace()->as<ob::RealVectorStateSpace>()->getBounds();
    const double tol = eval_.tolerance();
    for (int i = 0; i < layout_.nd; ++i) {
      const double t = eval_.targetDynamic()[i];
      x[i] = std::isnan(t) ? rng_.uniformReal(b.low[i], b.high[i])
                           : std::clamp(t + rng_.uniformReal(-tol, tol), b.low[i], b.high[i]);
    }
    for (int i = 0; i < layout_.nk; ++i) {
      const int j = layout_.rho() + i;
      x[j] = eval_.targetInputs().size() ? eval_.targetInputs()[i]
                                         : rng_.uniformReal(b.low[j], b.high[j]);
      x[layout_.rhodot() + i] = 0.0;
    }
    // Momentum of a puppet at rest there: p = dt/2 dL/dq (VariationalIntegrator).
    Eigen::VectorXd q(model_.nq());
    for (int i = 0; i < model_.nq(); ++i)
      q[i] = i < layout_.nd ? x[i] : x[layout_.rho() + i - layout_.nd];
    forwardKinematics(model_, data_, q);
    computeLagrangian(model_, data_, q, Eigen::VectorXd::Zero(layout_.nd), LagrangianOrder::First);
    for (int i = 0; i < layout_.nd; ++i) x[layout_.p() + i] = 0.5 * dt_ * data_.Lq[i];
  }

 private:
  oc::SpaceInformation* csi_;
  const Model& model_;
  mutable GoalEvaluator eval_;
  Layout layout_;
  double dt_;
  Counters& counters_;
  mutable ompl::RNG rng_;
  mutable DynamicsData data_;
  mutable Eigen::VectorXd qd_, p_, rho_, rhodot_;
  mutable ob::State* brake_[2];
  oc::Control* stop_;
};

// KPIECE and PDST grid the state through a projection: the goal's points in the stage (point
// goals), else the goal's joints (padded with the first other joints) -- what the search needs
// to spread over.
class Projection : public ob::ProjectionEvaluator {
 public:
  // point_cell_m: the grid's cell size along the goal point's coordinates (point goals).
  Projection(const ob::StateSpace* space, ModelPtr model, const GoalSpec& spec,
             const Layout& layout, double point_cell_m)
      : ob::ProjectionEvaluator(space),
        point_cell_m_(point_cell_m),
        model_(*model),
        eval_(model, spec),
        layout_(layout),
        data_(*model) {
    q_.resize(model_.nq());
    if (spec.kind == GoalSpec::Kind::Point) {
      point_ = eval_.goalPoints()[0];
      dim_ = 4;  // the point, and how fast the puppet moves (arrivals must be slow enough to stop)
      const auto& b = space->as<ob::RealVectorStateSpace>()->getBounds();
      momentum_scale_.resize(layout.nd);
      for (int i = 0; i < layout.nd; ++i) momentum_scale_[i] = 1.0 / b.high[layout.p() + i];
    } else {
      std::vector<int> vars = eval_.goalVariables();
      for (int i = 0; i < layout.nd && vars.size() < 2; ++i)
        if (std::find(vars.begin(), vars.end(), i) == vars.end()) vars.push_back(i);
      if (vars.size() > 3) vars.resize(3);
      vars_ = vars;
      dim_ = static_cast<unsigned>(vars_.size());
    }
  }
  unsigned int getDimension() const override { return dim_; }
  void defaultCellSizes() override {
    cellSizes_.assign(dim_, 0.05);  // a twentieth of the momentum range
    if (point_ >= 0) std::fill(cellSizes_.begin(), cellSizes_.begin() + 3, point_cell_m_);
    if (point_ < 0)
      for (unsigned i = 0; i < dim_; ++i) {
        const JointLimit& lim = model_.dynamic[vars_[i]].limit;
        const double range = std::isfinite(lim.upper - lim.lower) ? lim.upper - lim.lower : 2.0;
        cellSizes_[i] = range / 20.0;
      }
  }
  void project(const ob::State* s, Eigen::Ref<Eigen::VectorXd> out) const override {
    const double* x = values(s);
    if (point_ < 0) {
      for (unsigned i = 0; i < dim_; ++i) out[i] = x[vars_[i]];
      return;
    }
    for (int i = 0; i < layout_.nd; ++i) q_[i] = x[i];
    for (int i = 0; i < layout_.nk; ++i) q_[layout_.nd + i] = x[layout_.rho() + i];
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

 private:
  double point_cell_m_;
  const Model& model_;
  GoalEvaluator eval_;
  Layout layout_;
  mutable DynamicsData data_;
  mutable Eigen::VectorXd q_;
  int point_ = -1;
  Eigen::VectorXd momentum_scale_;  // 1 / the momentum bounds
  std::vector<int> vars_;
  unsigned dim_ = 2;
};

ob::PlannerPtr makePlanner(const PlannerInfo& info, const oc::SpaceInformationPtr& si) {
  const TreePlannerFactory make = treePlannerFactory(info);
  if (!make) throw std::invalid_argument("planner '" + info.name + "' is not a tree search");
  return make(si, info);
}

// OMPL's seed generator is process-wide: planners take their RNG seeds from it when they are
// constructed and set up, and every sampler draws one as it is made (its ompl::RNG member, then
// re-seeded locally).  Seeding it and constructing under one lock, and making samplers under it
// too (they are made during searches, in other threads), makes that part a function of the
// request's seed even with searches running in other threads.  Recursive: a planner's setup,
// under the lock, makes samplers.
std::recursive_mutex& omplSeedMutex() {
  static std::recursive_mutex m;
  return m;
}

void quietOmpl() {
  static std::once_flag once;
  std::call_once(once, [] { ompl::msg::setLogLevel(ompl::msg::LOG_NONE); });
}

}  // namespace

TreeSearchSettings treeSearchSettings(const PlannerOptions& options) {
  // The table's defaults per planner (planners.cpp), unless the options set them.
  const PlannerInfo* info = findPlanner(options.planner);
  TreeSearchSettings s;
  if (options.min_control_steps > 0) s.min_control_steps = options.min_control_steps;
  s.max_control_steps =
      std::max(s.min_control_steps,
               options.max_control_steps > 0 ? options.max_control_steps : info->max_control_steps);
  s.point_cell_m = info->point_cell_m;
  return s;
}

namespace {

// The planner of `info` on a throwaway space: enough to list and try its parameters.
ob::PlannerPtr throwawayPlanner(const PlannerInfo& info) {
  quietOmpl();
  // Constructing a planner draws a seed from OMPL's process-wide generator: under the same lock
  // as a search's seeding, so that it cannot take a search's seed.
  std::lock_guard<std::recursive_mutex> lock(omplSeedMutex());
  auto space = std::make_shared<ob::RealVectorStateSpace>(1);
  space->setBounds(0, 1);
  auto cspace = std::make_shared<oc::RealVectorControlSpace>(space, 1);
  cspace->setBounds(ob::RealVectorBounds(1));
  return makePlanner(info, std::make_shared<oc::SpaceInformation>(space, cspace));
}

// The values each OMPL parameter of the table's planners may take.  OMPL checks none of them
// (goal_bias = 2 or range = -1 were taken; nan, or kpiece's bad_score_factor = 0, broke the
// search), and suggests ranges for some only.  Bounds from OMPL's range suggestions and
// documentation: the score factors are in (0, 1].
struct ParameterRange {
  double lower, upper;
  bool lower_open;  // (lower, upper] rather than [lower, upper]
  bool whole;       // a whole number (0/1 for a flag)
};
const std::map<std::string, ParameterRange>& parameterRanges() {
  static const std::map<std::string, ParameterRange> ranges = {
      {"goal_bias", {0, 1, false, false}},
      {"intermediate_states", {0, 1, false, true}},
      {"border_fraction", {0, 1, true, false}},
      {"bad_score_factor", {0, 1, true, false}},
      {"good_score_factor", {0, 1, true, false}},
      {"max_close_samples", {1, 1e6, false, true}},
      {"range", {0, 1e4, false, false}},
      {"pruning_radius", {0, 100, false, false}},
      {"selection_radius", {0, 100, false, false}},
  };
  return ranges;
}

// "" when `value` is one a parameter may take, else what it must be.
std::string parameterProblem(const std::string& key, const std::string& value) {
  const auto it = parameterRanges().find(key);
  if (it == parameterRanges().end()) return {};
  const ParameterRange& r = it->second;
  double x = 0.0;
  const bool number = parseFiniteNumber(value, x);
  const bool fits = number && (r.lower_open ? x > r.lower : x >= r.lower) && x <= r.upper &&
                    (!r.whole || x == std::floor(x));
  if (fits) return {};
  return std::string("must be ") + (r.whole ? "a whole number" : "a number") + " in " +
         (r.lower_open ? "(" : "[") + formatNumber(r.lower) + ", " + formatNumber(r.upper) +
         "] (got '" + value.substr(0, 40) + (value.size() > 40 ? "...'" : "'") + ")";
}

// Sets the request's OMPL parameters on `planner`; FieldError naming the parameter when the
// planner has no such parameter, the value is outside its range, or OMPL refuses it.
void applyParameters(ob::Planner& planner, const std::string& name,
                     const std::map<std::string, std::string>& params) {
  for (const auto& [key, value] : params) {
    const std::string field = "options.params" + fieldKey(key);
    if (!planner.params().hasParam(key)) {
      std::map<std::string, std::string> known;
      planner.params().getParams(known);
      std::vector<std::string> names;
      for (const auto& kv : known) names.push_back(kv.first);
      throw FieldError(field, "planner '" + name + "' has no parameter '" + key +
                                  "' (it has: " + joinNames(names) + ")");
    }
    if (const std::string problem = parameterProblem(key, value); !problem.empty())
      throw FieldError(field, "planner '" + name + "': " + key + " " + problem);
    bool set = false;
    try {
      set = planner.params().setParam(key, value);
    } catch (const std::exception&) {
    }
    if (!set)
      throw FieldError(field, "planner '" + name + "': " + key + " cannot be '" + value + "'");
  }
}

}  // namespace

std::map<std::string, std::string> treePlannerParameters(const PlannerInfo& info) {
  std::map<std::string, std::string> out;
  throwawayPlanner(info)->params().getParams(out);
  return out;
}

void checkTreePlannerParameters(const PlannerInfo& info,
                                const std::map<std::string, std::string>& params) {
  applyParameters(*throwawayPlanner(info), info.name, params);
}

// Frees search trees off the planning thread: dropping a tree of a million motions takes
// longer than a cancelled call may (it must stop within 100 ms).  One thread, started on first
// use; it finishes its queue and is joined at exit.
class Reaper {
 public:
  static Reaper& instance() {
    static Reaper reaper;
    return reaper;
  }
  void drop(std::shared_ptr<void> garbage) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      queue_.push_back(std::move(garbage));
    }
    cv_.notify_one();
  }
  ~Reaper() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    cv_.notify_one();
    thread_.join();
  }

 private:
  Reaper() : thread_([this] { run(); }) {}
  void run() {
    while (true) {
      std::shared_ptr<void> garbage;
      {
        std::unique_lock<std::mutex> lock(mutex_);
        cv_.wait(lock, [&] { return stop_ || !queue_.empty(); });
        if (queue_.empty()) return;
        garbage = std::move(queue_.front());
        queue_.pop_front();
      }
      garbage.reset();
    }
  }
  std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<std::shared_ptr<void>> queue_;
  bool stop_ = false;
  std::thread thread_;
};

// Hands its object to the reaper when it goes out of scope (declare it before anything else
// that refers to the object, so that it goes last).
struct DropLater {
  std::shared_ptr<void> object;
  ~DropLater() { Reaper::instance().drop(std::move(object)); }
};

SearchResult searchTree(const SearchProblem& problem) {
  const PlanRequest& request = problem.request;
  const CollisionModelPtr& collision = problem.collision;
  const Eigen::VectorXd &q0 = problem.start.q, &qdot0 = problem.start.qdot, &rho0 = problem.rho0;
  const GoalSpec& goal_spec = request.goal;
  const ProgressFn& progress = problem.progress;
  // problem.cancelled is this thread's CancelScope (planMotion installed it): cancelRequested().
  quietOmpl();
  const auto t_start = SteadyClock::now();
  const PlannerOptions& opt = request.options;
  const ModelPtr& model_ptr = request.model;
  const Model& model = *model_ptr;
  Layout L{model.nd(), model.nk()};
  const double dt = opt.step_s;

  // Bounds and metric scales.  Momentum bounds: the mass matrix at the start times 6 rad/s (or
  // m/s) per joint -- generous for a swinging puppet; they only shape sampling.
  DynamicsData data(model);
  const Eigen::VectorXd qfull0 = model.configuration(q0, rho0);
  forwardKinematics(model, data, qfull0);
  computeLagrangian(model, data, qfull0, Eigen::VectorXd::Zero(L.nd), LagrangianOrder::MassMatrix);
  ob::RealVectorBounds bounds(L.dim());
  Eigen::VectorXd scale(L.dim());
  for (int i = 0; i < L.nd; ++i) {
    const JointLimit& lim = model.dynamic[i].limit;
    const bool translation = [&] {
      for (const Frame& f : model.frames)
        if (f.variable == i) return f.type == JointType::Translate;
      return false;
    }();
    const double span = translation ? 1.5 : M_PI;  // for joints without limits
    const double lo = std::isfinite(lim.lower) ? lim.lower : q0[i] - span;
    const double hi = std::isfinite(lim.upper) ? lim.upper : q0[i] + span;
    bounds.setLow(i, lo);
    bounds.setHigh(i, hi);
    scale[i] = translation ? 0.1 : 0.2;  // 10 cm or 0.2 rad of pose = distance 1
    const double pmax = std::max(1e-6, 6.0 * data.M.row(i).cwiseAbs().sum());
    bounds.setLow(L.p() + i, -pmax);
    bounds.setHigh(L.p() + i, pmax);
    scale[L.p() + i] = pmax;  // the whole momentum range = distance 1
  }
  for (int i = 0; i < L.nk; ++i) {
    const KinematicVariable& kv = model.kinematic[i];
    bounds.setLow(L.rho() + i, kv.lower);
    bounds.setHigh(L.rho() + i, kv.upper);
    scale[L.rho() + i] = std::max(1e-6, (kv.upper - kv.lower) / 4.0);
    const double vmax = std::isfinite(kv.max_speed) ? kv.max_speed : 1.0;
    bounds.setLow(L.rhodot() + i, -vmax);
    bounds.setHigh(L.rhodot() + i, vmax);
    scale[L.rhodot() + i] = 4.0 * vmax;
  }
  auto space = std::make_shared<MarionetteSpace>(L, scale);
  space->setBounds(bounds);
  auto cspace = std::make_shared<oc::RealVectorControlSpace>(space, L.nk);
  ob::RealVectorBounds cbounds(L.nk);
  for (int i = 0; i < L.nk; ++i) {
    const double v = model.kinematic[i].max_speed;
    cbounds.setLow(i, std::isfinite(v) ? -v : -1.0);
    cbounds.setHigh(i, std::isfinite(v) ? v : 1.0);
  }
  cspace->setBounds(cbounds);

  SeedSequence seeds{opt.seed};
  space->setStateSamplerAllocator([space_raw = space.get(), &seeds](const ob::StateSpace*) {
    std::lock_guard<std::recursive_mutex> lock(omplSeedMutex());
    return std::make_shared<SeededStateSampler>(space_raw, seeds());
  });
  cspace->setControlSamplerAllocator([&seeds](const oc::ControlSpace* cs) {
    std::lock_guard<std::recursive_mutex> lock(omplSeedMutex());
    return std::make_shared<SeededControlSampler>(cs, seeds());
  });

  Counters counters;
  // The search (and its tree) is freed on the reaper's thread when this function returns.
  auto setup = std::make_shared<oc::SimpleSetup>(cspace);
  const DropLater drop_setup{setup};
  oc::SimpleSetup& ss = *setup;
  const oc::SpaceInformationPtr& si = ss.getSpaceInformation();
  si->setPropagationStepSize(dt);
  const TreeSearchSettings settings = treeSearchSettings(opt);
  si->setMinMaxControlDuration(settings.min_control_steps, settings.max_control_steps);
  ss.setStatePropagator(std::make_shared<Propagator>(si, model, model_ptr, L, dt, counters));
  ss.setStateValidityChecker(std::make_shared<Validity>(si, collision, L, dt, counters));
  {
    // Cell sizes set explicitly make it "user configured": else the space's setup replaces it
    // with OMPL's default random linear projection of the whole state.
    auto projection =
        std::make_shared<Projection>(space.get(), model_ptr, goal_spec, L, settings.point_cell_m);
    projection->defaultCellSizes();
    projection->setCellSizes(std::vector<double>(projection->getCellSizes()));
    space->registerDefaultProjection(projection);
  }

  ob::ScopedState<> start(space);
  for (int i = 0; i < L.nd; ++i) start[i] = q0[i];
  {
    VariationalIntegrator vi(model_ptr, [&] {
      IntegratorOptions o;
      o.dt_s = dt;
      return o;
    }());
    const State x0 = vi.stateFromVelocity(q0, qdot0, rho0);
    for (int i = 0; i < L.nd; ++i) start[L.p() + i] = x0.p[i];
  }
  for (int i = 0; i < L.nk; ++i) {
    start[L.rho() + i] = rho0[i];
    start[L.rhodot() + i] = 0.0;
  }
  ss.setStartState(start);
  // The search aims a tenth inside the tolerance: the verifying re-simulation rounds the rig's
  // inputs differently (resampled at the output rate), and a swinging puppet amplifies that.
  GoalSpec search_goal = goal_spec;
  search_goal.tolerance = 0.9 * goal_spec.effectiveTolerance();
  auto goal = std::make_shared<Goal>(si, model_ptr, search_goal, L, dt, seeds(), counters);
  ss.setGoal(goal);

  ob::PlannerPtr planner;
  {
    std::lock_guard<std::recursive_mutex> lock(omplSeedMutex());
    ompl::RNG::setSeed(static_cast<std::uint_fast32_t>(seeds()));
    planner = makePlanner(*findPlanner(opt.planner), si);
    applyParameters(*planner, opt.planner, opt.params);
    ss.setPlanner(planner);
    ss.setup();
  }
  if (!si->isValid(start.get()))
    throw FieldError("start", "the start state is in collision or outside the limits");

  SearchResult result;
  // Stops at the first exact solution (SST included, so that a plan is a function of the seed,
  // not of the machine's speed), at the time limit, or when cancelled; reports progress ~1 Hz.
  auto last_report = t_start;
  const auto deadline = t_start + std::chrono::duration<double>(opt.time_limit_s);
  const ob::ProblemDefinitionPtr& pdef = ss.getProblemDefinition();
  ob::PlannerTerminationCondition ptc([&] {
    const auto now = SteadyClock::now();
    if (progress && now - last_report >= std::chrono::seconds(1)) {
      last_report = now;
      PlanProgress p;
      p.phase = "search";
      p.elapsed_s = secondsSince(t_start);
      p.propagations = counters.propagations;
      p.states = counters.motions;
      p.best_goal_distance = counters.best_goal_distance;
      progress(p);
    }
    return now >= deadline || counters.goal_reached || pdef->hasExactSolution() ||
           cancelRequested();
  });
  const ob::PlannerStatus status = ss.solve(ptc);
  throwIfCancelled("tree search");
  result.stats.planning_time_s = secondsSince(t_start);
  result.stats.propagations = counters.propagations;
  result.stats.collision_checks = counters.collision_checks;
  // Motions added (every one is goal-checked once); OMPL's PlannerData would copy the tree.
  result.stats.tree_states = counters.motions;
  result.stats.best_goal_distance = counters.best_goal_distance;
  if (!pdef->hasSolution()) {
    result.message = "no motion found (" + std::string(status.asString()) + ")";
    return result;
  }
  result.found = true;
  if (pdef->hasExactSolution()) result.stats.best_goal_distance = pdef->getSolutionDifference();
  oc::PathControl path(*pdef->getSolutionPath()->as<oc::PathControl>());

  // The rig motion along the path: replay the controls through the same rig model (the
  // dynamics are re-simulated later, at the output rate).
  RigTrajectory traj(dt, rho0);
  Eigen::VectorXd rho = rho0, rhodot = Eigen::VectorXd::Zero(L.nk);
  const auto& controls = path.getControls();
  const auto& durations = path.getControlDurations();
  for (std::size_t c = 0; c < controls.size(); ++c) {
    const double* u = controls[c]->as<oc::RealVectorControlSpace::ControlType>()->values;
    const int steps = static_cast<int>(std::lround(durations[c] / dt));
    for (int s = 0; s < steps; ++s) {
      rigStep(model, rho.data(), rhodot.data(), u, dt, rho.data(), rhodot.data());
      traj.append(rho, rhodot);
    }
  }
  appendBrake(model, traj);
  appendHold(traj, kStopHoldSteps * dt);
  result.inputs = std::move(traj);
  return result;
}

}  // namespace marionette::detail
