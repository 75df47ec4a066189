// SPDX-License-Identifier: BSD-3-Clause
#include "marionette/search/decomposition.hpp"

#include <ompl/control/planners/syclop/GridDecomposition.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "marionette/models/field_error.hpp"

namespace ob = ompl::base;
namespace oc = ompl::control;

namespace marionette {
namespace {

constexpr int kBoundSamples = 500;  // states drawn to find the projection's reach
constexpr int kRegionDraws = 20;    // draws per full state asked for in a region

class ProjectionGrid : public oc::GridDecomposition {
 public:
  ProjectionGrid(int cells, const ob::RealVectorBounds& bounds, ob::SpaceInformationPtr si,
                 ob::ProjectionEvaluatorPtr proj)
      : oc::GridDecomposition(cells, 2, bounds),
        si_(std::move(si)),
        projection_(std::move(proj)),
        coords_(projection_->getDimension()) {}

  void project(const ob::State* s, std::vector<double>& coord) const override {
    projection_->project(s, coords_);
    coord.resize(2);
    for (int i = 0; i < 2; ++i) {
      // Inside the grid (a hair within its upper side), whatever the state.
      const double lo = getBounds().low[i], hi = getBounds().high[i];
      const double x = std::isfinite(coords_[i]) ? coords_[i] : lo;
      coord[i] = std::clamp(x, lo, std::nextafter(hi, lo));
    }
  }

  // The draw (of a few from the space's own sampler) whose projection is closest to `coord`.
  void sampleFullState(const ob::StateSamplerPtr& sampler, const std::vector<double>& coord,
                       ob::State* s) const override {
    ob::State* draw = si_->allocState();
    double best = std::numeric_limits<double>::infinity();
    std::vector<double> at;
    for (int k = 0; k < kRegionDraws; ++k) {
      sampler->sampleUniform(draw);
      project(draw, at);
      const double d = std::hypot(at[0] - coord[0], at[1] - coord[1]);
      if (d < best) {
        best = d;
        si_->copyState(s, draw);
      }
    }
    si_->freeState(draw);
  }

 private:
  ob::SpaceInformationPtr si_;
  ob::ProjectionEvaluatorPtr projection_;
  mutable Eigen::VectorXd coords_;
};

}  // namespace

oc::DecompositionPtr projectionGrid(const TreeSearchSpace& space, int cells_per_side) {
  if (cells_per_side < 1 || cells_per_side > 1000)
    throw FieldError("cells_per_side", "must be within [1, 1000]");
  const ob::ProjectionEvaluatorPtr& projection = space.projection();
  const ob::SpaceInformationPtr& si = space.spaceInformation();
  // The reach of the projection's first two coordinates over states drawn uniformly, a tenth
  // wider on each side.
  ob::StateSamplerPtr sampler = si->allocStateSampler();
  ob::State* s = si->allocState();
  Eigen::VectorXd y(projection->getDimension());
  Eigen::Vector2d lo = Eigen::Vector2d::Constant(std::numeric_limits<double>::infinity());
  Eigen::Vector2d hi = -lo;
  for (int k = 0; k < kBoundSamples; ++k) {
    sampler->sampleUniform(s);
    projection->project(s, y);
    for (int i = 0; i < 2; ++i)
      if (std::isfinite(y[i])) {
        lo[i] = std::min(lo[i], y[i]);
        hi[i] = std::max(hi[i], y[i]);
      }
  }
  si->freeState(s);
  ob::RealVectorBounds bounds(2);
  for (int i = 0; i < 2; ++i) {
    if (!(hi[i] > lo[i])) {
      lo[i] = std::isfinite(lo[i]) ? lo[i] - 0.5 : -0.5;
      hi[i] = lo[i] + 1.0;
    }
    const double pad = 0.1 * (hi[i] - lo[i]);
    bounds.setLow(i, lo[i] - pad);
    bounds.setHigh(i, hi[i] + pad);
  }
  return std::make_shared<ProjectionGrid>(cells_per_side, bounds, si, projection);
}

}  // namespace marionette
