// SPDX-License-Identifier: BSD-3-Clause
#include "roadmap_graph.hpp"

#include <algorithm>
#include <cmath>

#include "marionette/models/rig_trajectory.hpp"

namespace marionette::roadmap {

double timeLowerBound(const Model& model, const Eigen::VectorXd& a, const Eigen::VectorXd& b) {
  double t = 0.0;
  for (int i = 0; i < model.nk(); ++i)
    t = std::max(t, std::abs(a[i] - b[i]) / model.kinematic[i].max_speed);
  return t;
}

std::vector<int> nearest(const Model& model, const std::vector<RestPoseRoadmap::Vertex>& vs,
                         const Eigen::VectorXd& rho, int k, int self) {
  std::vector<std::pair<double, int>> d;
  for (int i = 0; i < static_cast<int>(vs.size()); ++i)
    if (i != self) d.emplace_back(timeLowerBound(model, rho, vs[i].rho), i);
  const int m = std::min<int>(k, static_cast<int>(d.size()));
  std::partial_sort(d.begin(), d.begin() + m, d.end());
  std::vector<int> out;
  for (int i = 0; i < m; ++i) out.push_back(d[i].second);
  return out;
}

double edgeCost(const EdgeProps& e, const RoadmapOptions& opt) {
  return e.move_s +
         (e.state == RestPoseRoadmap::EdgeState::Valid ? e.settle_s : 0.25 * opt.settle_max_s);
}

void addEdgePair(BGraph& g, const Model& model, const std::vector<RestPoseRoadmap::Vertex>& vs,
                 int a, int b, const RoadmapOptions& opt) {
  for (auto [from, to] : {std::pair<int, int>{a, b}, std::pair<int, int>{b, a}}) {
    if (boost::edge(from, to, g).second) continue;
    EdgeProps e;
    e.move_s = moveDuration(model, vs[from].rho, vs[to].rho, opt.step_s, opt.slowdown);
    e.cost = edgeCost(e, opt);
    boost::add_edge(from, to, e, g);
  }
}

}  // namespace marionette::roadmap
