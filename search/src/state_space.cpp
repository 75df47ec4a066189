// SPDX-License-Identifier: BSD-3-Clause
#include "state_space.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "marionette/models/dynamics.hpp"
#include "seeding.hpp"

namespace ob = ompl::base;
namespace oc = ompl::control;

namespace marionette::detail {
namespace {

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
    double* u = values(control);
    for (std::size_t i = 0; i < b.low.size(); ++i)
      u[i] = rng_.uniform01() < 0.125 ? 0.0 : rng_.uniformReal(b.low[i], b.high[i]);
  }
};

bool isTranslation(const Model& model, int variable) {
  for (const Frame& f : model.frames)
    if (f.variable == variable) return f.type == JointType::Translate;
  return false;
}

}  // namespace

MarionetteSpace::MarionetteSpace(const StateLayout& layout, Eigen::VectorXd scale)
    : ob::RealVectorStateSpace(layout.dim()), scale_(std::move(scale)) {
  if (scale_.size() != layout.dim())
    throw std::invalid_argument("MarionetteSpace: a scale per state component");
  setName("marionette");
}

double MarionetteSpace::distance(const ob::State* a, const ob::State* b) const {
  return std::sqrt(squaredDistance(values(a), values(b)));
}

double MarionetteSpace::squaredDistance(const double* x, const double* y,
                                        double stop_above) const {
  // Checked every four terms: the sum's chain of additions, not the test, sets the pace.
  const int n = static_cast<int>(scale_.size());
  const double* scale = scale_.data();
  double d2 = 0.0;
  int i = 0;
  for (; i + 4 <= n; i += 4) {
    for (int j = i; j < i + 4; ++j) {
      const double d = (x[j] - y[j]) / scale[j];
      d2 += d * d;
    }
    if (d2 > stop_above) return d2;
  }
  for (; i < n; ++i) {
    const double d = (x[i] - y[i]) / scale[i];
    d2 += d * d;
  }
  return d2;
}

double MarionetteSpace::getMaximumExtent() const {
  double d2 = 0.0;
  for (int i = 0; i < scale_.size(); ++i) {
    const double d = (bounds_.high[i] - bounds_.low[i]) / scale_[i];
    d2 += d * d;
  }
  return std::sqrt(d2);
}

std::shared_ptr<MarionetteSpace> makeStateSpace(const Model& model, const Eigen::VectorXd& q0,
                                                const Eigen::VectorXd& rho0,
                                                std::function<std::uint_fast32_t()> next_seed) {
  const StateLayout L(model);
  DynamicsData data(model);
  const Eigen::VectorXd qfull0 = model.configuration(q0, rho0);
  forwardKinematics(model, data, qfull0);
  computeLagrangian(model, data, qfull0, Eigen::VectorXd::Zero(L.nd), LagrangianOrder::MassMatrix);
  ob::RealVectorBounds bounds(L.dim());
  Eigen::VectorXd scale(L.dim());
  for (int i = 0; i < L.nd; ++i) {
    const JointLimit& lim = model.dynamic[i].limit;
    const bool translation = isTranslation(model, i);
    const double span = translation ? 1.5 : M_PI;  // for joints without limits
    bounds.setLow(L.q() + i, std::isfinite(lim.lower) ? lim.lower : q0[i] - span);
    bounds.setHigh(L.q() + i, std::isfinite(lim.upper) ? lim.upper : q0[i] + span);
    scale[L.q() + i] = translation ? 0.1 : 0.2;  // 10 cm or 0.2 rad of pose = distance 1
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
    bounds.setLow(L.rhoDot() + i, -vmax);
    bounds.setHigh(L.rhoDot() + i, vmax);
    scale[L.rhoDot() + i] = 4.0 * vmax;
  }
  auto space = std::make_shared<MarionetteSpace>(L, scale);
  space->setBounds(bounds);
  space->setStateSamplerAllocator([raw = space.get(), next_seed](const ob::StateSpace*) {
    std::lock_guard<std::recursive_mutex> lock(omplSeedMutex());
    return std::make_shared<SeededStateSampler>(raw, next_seed());
  });
  return space;
}

std::shared_ptr<oc::RealVectorControlSpace> makeControlSpace(
    const Model& model, const std::shared_ptr<MarionetteSpace>& space,
    std::function<std::uint_fast32_t()> next_seed) {
  auto cspace = std::make_shared<oc::RealVectorControlSpace>(space, model.nk());
  ob::RealVectorBounds cbounds(model.nk());
  for (int i = 0; i < model.nk(); ++i) {
    const double v = model.kinematic[i].max_speed;
    cbounds.setLow(i, std::isfinite(v) ? -v : -1.0);
    cbounds.setHigh(i, std::isfinite(v) ? v : 1.0);
  }
  cspace->setBounds(cbounds);
  cspace->setControlSamplerAllocator([next_seed](const oc::ControlSpace* cs) {
    std::lock_guard<std::recursive_mutex> lock(omplSeedMutex());
    return std::make_shared<SeededControlSampler>(cs, next_seed());
  });
  return cspace;
}

}  // namespace marionette::detail
