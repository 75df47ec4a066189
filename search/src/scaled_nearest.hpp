// SPDX-License-Identifier: BSD-3-Clause
// Internal: the nearest state of a search tree in the search's metric (MarionetteSpace), found
// exactly by a scan that stops adding up a state's terms once it is farther than the nearest so
// far; and the kinodynamic RRT using it.
//
// OMPL's default for a metric space, GNAT (Brin, "Near Neighbor Search in Large Metric Spaces",
// VLDB 1995), prunes by the triangle inequality.  In the search's 64-92 dimensions
// (PuppetCopter, marionette25) that prunes little: on marionette25 its queries took more than
// half of RRT's time, most of it in the distance's chain of additions (decision 0004).  The scan visits every state, in a block of memory of their
// own, but adds up a far one's terms only until it is out of the running.  It finds the same
// state: the sums it completes are distance()'s to the bit (MarionetteSpace::squaredDistance),
// and a sum of non-negative terms never falls as terms are added.
#pragma once

#include <ompl/control/planners/rrt/RRT.h>
#include <ompl/datastructures/NearestNeighbors.h>
#include <ompl/util/Exception.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <memory>
#include <utility>
#include <vector>

#include "state_space.hpp"

namespace marionette::detail {

template <typename T>
class ScaledNearest final : public ompl::NearestNeighbors<T> {
 public:
  // `coordinates`: an element's state values (the space's dimension of them), which must not
  // change while it is held.
  using Coordinates = std::function<const double*(const T&)>;
  ScaledNearest(std::shared_ptr<const MarionetteSpace> space, Coordinates coordinates)
      : space_(std::move(space)),
        coordinates_(std::move(coordinates)),
        dim_(space_->getDimension()) {}

  bool reportsSortedResults() const override { return true; }
  void clear() override {
    items_.clear();
    coords_.clear();
  }
  void add(const T& data) override {
    items_.push_back(data);
    const double* x = coordinates_(data);
    coords_.insert(coords_.end(), x, x + dim_);
  }
  bool remove(const T& data) override {
    const auto it = std::find(items_.begin(), items_.end(), data);
    if (it == items_.end()) return false;
    const std::size_t i = static_cast<std::size_t>(it - items_.begin());
    items_.erase(it);
    coords_.erase(coords_.begin() + i * dim_, coords_.begin() + (i + 1) * dim_);
    return true;
  }
  T nearest(const T& data) const override {
    if (items_.empty())
      throw ompl::Exception("No elements found in nearest neighbors data structure");
    const double* x = coordinates_(data);
    std::size_t best = 0;
    double best2 = std::numeric_limits<double>::infinity();
    for (std::size_t i = 0; i < items_.size(); ++i) {
      const double d2 = space_->squaredDistance(x, &coords_[i * dim_], best2);
      if (d2 < best2) {
        best2 = d2;
        best = i;
      }
    }
    return items_[best];
  }
  void nearestK(const T& data, std::size_t k, std::vector<T>& nbh) const override {
    std::vector<std::pair<double, std::size_t>> by = sorted(data);
    by.resize(std::min(k, by.size()));
    nbh.clear();
    for (const auto& [d2, i] : by) nbh.push_back(items_[i]);
  }
  void nearestR(const T& data, double radius, std::vector<T>& nbh) const override {
    nbh.clear();
    for (const auto& [d2, i] : sorted(data))
      if (std::sqrt(d2) <= radius) nbh.push_back(items_[i]);
  }
  std::size_t size() const override { return items_.size(); }
  void list(std::vector<T>& data) const override { data = items_; }

 private:
  // Every element's squared distance from data and its index, nearest first.
  std::vector<std::pair<double, std::size_t>> sorted(const T& data) const {
    const double* x = coordinates_(data);
    std::vector<std::pair<double, std::size_t>> by(items_.size());
    for (std::size_t i = 0; i < items_.size(); ++i)
      by[i] = {space_->squaredDistance(x, &coords_[i * dim_]), i};
    std::sort(by.begin(), by.end());
    return by;
  }

  std::shared_ptr<const MarionetteSpace> space_;
  Coordinates coordinates_;
  std::size_t dim_;
  std::vector<T> items_;
  std::vector<double> coords_;  // items_[i]'s state at [i dim_, (i + 1) dim_)
};

// OMPL's kinodynamic RRT with the exact scan above for its nearest states, on the search's
// space (OMPL's default elsewhere).
class ScaledNearestRRT : public ompl::control::RRT {
 public:
  using ompl::control::RRT::RRT;
  void setup() override {
    ompl::control::RRT::setup();
    auto space = std::dynamic_pointer_cast<const MarionetteSpace>(si_->getStateSpace());
    if (!space || (nn_ && nn_->size() > 0)) return;
    nn_ = std::make_shared<ScaledNearest<Motion*>>(space, [](Motion* const& m) {
      return values(static_cast<const ompl::base::State*>(m->state));
    });
    nn_->setDistanceFunction(
        [this](const Motion* a, const Motion* b) { return distanceFunction(a, b); });
  }
};

}  // namespace marionette::detail
