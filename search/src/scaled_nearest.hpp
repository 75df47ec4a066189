// SPDX-License-Identifier: BSD-3-Clause
// Internal: the nearest state of a search tree in the search's metric (MarionetteSpace), found
// exactly by a scan that stops adding up a state's terms once it is farther than the nearest so
// far; and OMPL's kinodynamic RRT and SST using it.
//
// OMPL's default for a metric space, GNAT (Brin, "Near Neighbor Search in Large Metric Spaces",
// VLDB 1995), prunes by the triangle inequality.  In the search's 64-92 dimensions
// (PuppetCopter, marionette25) that prunes little: on marionette25 its queries took more than
// half of RRT's time, most of it in the distance's chain of additions (decision 0004).  The scan
// visits every state, in a block of memory of their own, but adds up a far one's terms only
// until it is out of the running.  It finds the same states, except where two are equally near
// (a tie, which GNAT breaks by its own visiting order, the scan by the order of insertion): the
// sums it completes are distance()'s to the bit (MarionetteSpace::squaredDistance), and a sum of
// non-negative terms never falls as terms are added.
#pragma once

#include <ompl/control/planners/rrt/RRT.h>
#include <ompl/control/planners/sst/SST.h>
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

// Metric: squaredDistance(x, y, stop_above) as MarionetteSpace's (the sum, or once it passes
// stop_above some value above it) and getDimension(), the coordinates' count.  The distance
// function OMPL sets (setDistanceFunction) is not used.
template <typename T, typename Metric = MarionetteSpace>
class ScaledNearest final : public ompl::NearestNeighbors<T> {
 public:
  // `coordinates`: an element's state values (the metric's dimension of them), which must not
  // change while it is held.
  using Coordinates = std::function<const double*(const T&)>;
  ScaledNearest(std::shared_ptr<const Metric> space, Coordinates coordinates)
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
  bool remove(const T& data) override {  // O(n): OMPL 1.5's RRT and SST never remove
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
    std::vector<T> one;
    nearestK(data, 1, one);
    return one.front();
  }
  // The k nearest, nearest first (ties by their place here): a scan keeping the k best so far,
  // a state's sum stopped once it passes the k-th.
  void nearestK(const T& data, std::size_t k, std::vector<T>& nbh) const override {
    nbh.clear();
    if (k == 0) return;
    const double* x = coordinates_(data);
    std::vector<std::pair<double, std::size_t>> best;  // a max-heap of (squared distance, index)
    best.reserve(k + 1);
    for (std::size_t i = 0; i < items_.size(); ++i) {
      const double bound =
          best.size() < k ? std::numeric_limits<double>::infinity() : best.front().first;
      const double d2 = space_->squaredDistance(x, &coords_[i * dim_], bound);
      if (best.size() < k) {
        best.emplace_back(d2, i);
        std::push_heap(best.begin(), best.end());
      } else if (d2 < bound) {
        std::pop_heap(best.begin(), best.end());
        best.back() = {d2, i};
        std::push_heap(best.begin(), best.end());
      }
    }
    std::sort_heap(best.begin(), best.end());
    for (const auto& [d2, i] : best) nbh.push_back(items_[i]);
  }
  // Those within `radius` (the distance's own comparison, sqrt of the completed sum), nearest
  // first; a sum is stopped only well beyond the radius.
  void nearestR(const T& data, double radius, std::vector<T>& nbh) const override {
    nbh.clear();
    const double* x = coordinates_(data);
    const double stop_above = radius * radius * (1.0 + 1e-9);
    std::vector<std::pair<double, std::size_t>> within;
    for (std::size_t i = 0; i < items_.size(); ++i) {
      const double d2 = space_->squaredDistance(x, &coords_[i * dim_], stop_above);
      if (d2 <= stop_above && std::sqrt(d2) <= radius) within.emplace_back(d2, i);
    }
    std::sort(within.begin(), within.end());
    for (const auto& [d2, i] : within) nbh.push_back(items_[i]);
  }
  std::size_t size() const override { return items_.size(); }
  void list(std::vector<T>& data) const override { data = items_; }

 private:
  std::shared_ptr<const Metric> space_;
  Coordinates coordinates_;
  std::size_t dim_;
  std::vector<T> items_;
  std::vector<double> coords_;  // items_[i]'s state at [i dim_, (i + 1) dim_)
};

// The scan from this many dimensions of the search's space; below, GNAT's pivots prune (the
// planar arm and the suspended mass, 8: SST through the window took 3.2 s with GNAT and reached
// its 10 s limit with the scan; arm3d, 14, is faster scanned: decision 0004).
inline constexpr unsigned int kScanFromDimension = 12;

// The search's space where the scan is for it, else null.
inline std::shared_ptr<const MarionetteSpace> scannedSpace(const ompl::base::StateSpacePtr& s) {
  auto space = std::dynamic_pointer_cast<const MarionetteSpace>(s);
  return space && space->getDimension() >= kScanFromDimension ? space : nullptr;
}

// OMPL's kinodynamic RRT with the exact scan above for its nearest states, on the search's
// space of kScanFromDimension or more (OMPL's default elsewhere); it replaces any structure
// setNearestNeighbors gave.
class ScaledNearestRRT : public ompl::control::RRT {
 public:
  using ompl::control::RRT::RRT;
  void setup() override {
    ompl::control::RRT::setup();
    const auto space = scannedSpace(si_->getStateSpace());
    if (!space || (nn_ && nn_->size() > 0)) return;
    nn_ = std::make_shared<ScaledNearest<Motion*>>(space, [](Motion* const& m) {
      return values(static_cast<const ompl::base::State*>(m->state));
    });
    nn_->setDistanceFunction(
        [this](const Motion* a, const Motion* b) { return distanceFunction(a, b); });
  }
};

// OMPL's SST (its tree and its witnesses) the same way.
class ScaledNearestSST : public ompl::control::SST {
 public:
  using ompl::control::SST::SST;
  void setup() override {
    ompl::control::SST::setup();
    const auto space = scannedSpace(si_->getStateSpace());
    if (!space || (nn_ && nn_->size() > 0) || (witnesses_ && witnesses_->size() > 0)) return;
    const auto coordinates = [](Motion* const& m) {
      return values(static_cast<const ompl::base::State*>(m->state_));
    };
    const auto distance = [this](const Motion* a, const Motion* b) {
      return distanceFunction(a, b);
    };
    nn_ = std::make_shared<ScaledNearest<Motion*>>(space, coordinates);
    nn_->setDistanceFunction(distance);
    witnesses_ = std::make_shared<ScaledNearest<Motion*>>(space, coordinates);
    witnesses_->setDistanceFunction(distance);
  }
};

}  // namespace marionette::detail
