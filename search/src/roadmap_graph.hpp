// SPDX-License-Identifier: BSD-3-Clause
// Internal to the roadmap: its Boost.Graph type and the edge operations build and query share --
// the time metric (a lower bound of a move's duration at the speed limits), k nearest
// vertices in it, and adding a pair of unchecked edges.
#pragma once

#include <boost/graph/adjacency_list.hpp>
#include <mutex>
#include <string>
#include <vector>

#include "marionette/search/roadmap.hpp"

namespace marionette {

struct EdgeProps {
  double move_s = 0.0;
  double settle_s = 0.0;
  RestPoseRoadmap::EdgeState state = RestPoseRoadmap::EdgeState::Unknown;
  double cost = 0.0;  // A* weight (s): move + settle (an estimate until the edge is simulated)
  bool from_build = false;  // a verdict of the learning phase (its reach simulations)
};
using BGraph = boost::adjacency_list<boost::vecS, boost::vecS, boost::directedS, boost::no_property,
                                     EdgeProps>;
// The roadmap's graph and its locks, out of the public header.
struct RestPoseRoadmap::Graph {
  BGraph g;
  std::mutex mutex;       // the graph's edge verdicts
  std::mutex save_mutex;  // one save at a time
};

namespace roadmap {

// Lower bound of the time to move the inputs from a to b (n_k each) at the speed limits (s).
double timeLowerBound(const Model& model, const Eigen::VectorXd& a, const Eigen::VectorXd& b);
// The k nearest vertices to rho by the time metric (excluding `self`).
std::vector<int> nearest(const Model& model, const std::vector<RestPoseRoadmap::Vertex>& vs,
                         const Eigen::VectorXd& rho, int k, int self);
// An edge's A* weight (s): its move plus its settling time once simulated and valid, an estimate
// (a quarter of settle_max_s) until then.
double edgeCost(const EdgeProps& e, const RoadmapOptions& opt);
// Unchecked edges a -> b and b -> a, unless there already.
void addEdgePair(BGraph& g, const Model& model, const std::vector<RestPoseRoadmap::Vertex>& vs,
                 int a, int b, const RoadmapOptions& opt);
// FNV-1a, 128 bits, as 32 hex digits: the fingerprint's hash and a roadmap file's checksum.
std::string hash128(const std::string& text);

}  // namespace roadmap
}  // namespace marionette
