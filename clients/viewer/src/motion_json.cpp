// SPDX-License-Identifier: BSD-3-Clause
// One motion's members of the view document: the kinematics of every sample in the stage frame,
// and FCL's clearance of every sample as the planner checks it.
#include "motion_json.hpp"

#include <cmath>
#include <memory>
#include <sstream>
#include <string>

#include "contact_tracks.hpp"
#include "json_parts.hpp"
#include "marionette/common/text.hpp"
#include "marionette/environments/collision.hpp"
#include "marionette/models/dynamics.hpp"
#include "marionette/problem/motion_problem.hpp"

namespace marionette::viewer {
namespace {

// The unit of each kinematic variable: rad when it turns a joint, m otherwise (a translation or
// a string's length).
std::vector<std::string> inputUnits(const Model& model) {
  std::vector<std::string> units(model.nk(), "m");
  for (const Frame& f : model.frames)
    if (f.type == JointType::Rotate && f.variable >= model.nd())
      units[f.variable - model.nd()] = "rad";
  return units;
}

// Per sample, in the stage frame: the link frames' poses and the strings' ends (one JSON row
// each), the strings' lengths, the named points' positions.
struct Kinematics {
  std::vector<std::string> frame_rows, end_rows;
  Eigen::MatrixXd lengths_m;
  std::vector<std::vector<Eigen::Vector3d>> point_paths;
};

Kinematics kinematicsOf(const Model& model, const std::vector<int>& link_frames,
                        const Eigen::MatrixXd& q, Eigen::AlignedBox3d& extent) {
  const Eigen::Isometry3d& stage = model.stage_pose;
  const int n = static_cast<int>(q.rows());
  DynamicsData data(model);
  Kinematics k;
  k.lengths_m.resize(n, model.nstrings());
  k.point_paths.resize(model.points.size());
  for (int i = 0; i < n; ++i) {
    const Eigen::VectorXd qi = q.row(i).transpose();
    forwardKinematics(model, data, qi);
    computeStrings(model, data, qi, false);
    std::ostringstream fr, er;
    fr.precision(7);
    er.precision(7);
    for (std::size_t f = 0; f < link_frames.size(); ++f) {
      Eigen::Isometry3d pose = Eigen::Isometry3d::Identity();
      pose.linear() = data.frame_R[link_frames[f]];
      pose.translation() = data.frame_p[link_frames[f]];
      if (f) fr << ',';
      jsonPose(fr, stage * pose);
      extent.extend((stage * pose).translation());
    }
    for (int s = 0; s < model.nstrings(); ++s) {
      const Eigen::Vector3d a = stage * data.string_puppet_end[s];
      const Eigen::Vector3d e = stage * data.string_rig_end[s];
      er << (s ? "," : "") << a.x() << ',' << a.y() << ',' << a.z() << ',' << e.x() << ',' << e.y()
         << ',' << e.z();
      k.lengths_m(i, s) = data.length[s];
      extent.extend(e);
    }
    for (std::size_t p = 0; p < model.points.size(); ++p)
      k.point_paths[p].push_back(
          stage * pointPosition(data, model.points[p].frame, model.points[p].position_m));
    k.frame_rows.push_back(fr.str());
    k.end_rows.push_back(er.str());
  }
  return k;
}

// FCL's clearance per sample (to anything, to the stage alone), their minima and the first
// collision, the puppet touching what a plan may touch (problemCollisionOptions).
struct Clearance {
  std::vector<double> any_m, stage_m;
  int min_index = -1, stage_min_index = -1, first_collision = -1;
  std::string collision_pair;
};

Clearance clearanceOf(const ModelPtr& model, const ScenePtr& scene, const Eigen::MatrixXd& q) {
  Clearance c;
  CollisionChecker checker(
      std::make_shared<CollisionModel>(model, scene, problemCollisionOptions()));
  const TrajectoryCheck check = checker.checkTrajectory(q.transpose(), true);
  auto lower = [](const std::vector<double>& v, int i, int best) {
    return std::isfinite(v[i]) && (best < 0 || v[i] < v[best]);
  };
  for (int i = 0; i < static_cast<int>(q.rows()); ++i) {
    c.any_m.push_back(check.samples[i].clearance_m);
    c.stage_m.push_back(check.samples[i].stage_clearance_m);
    if (lower(c.any_m, i, c.min_index)) c.min_index = i;
    if (lower(c.stage_m, i, c.stage_min_index)) c.stage_min_index = i;
  }
  c.first_collision = check.first_collision;
  if (c.first_collision >= 0) c.collision_pair = check.first_pair.describe();
  return c;
}

}  // namespace

std::vector<int> linkFrames(const Model& model) {
  std::vector<int> frames;
  std::vector<bool> seen(model.frames.size(), false);
  for (const Geometry& g : model.geometry)
    if (!seen[g.frame]) {
      seen[g.frame] = true;
      frames.push_back(g.frame);
    }
  return frames;
}

void writeMotionMembers(const ModelPtr& model_ptr, const ScenePtr& scene,
                        const std::vector<int>& link_frames, const Motion& motion,
                        Eigen::AlignedBox3d& extent, std::ostream& os) {
  const Model& model = *model_ptr;
  const int n = static_cast<int>(motion.q.rows());
  if (n < 1 || motion.q.cols() != model.nq() || motion.tensions_N.rows() != n ||
      motion.tensions_N.cols() != model.nstrings())
    throw ViewError((motion.name.empty() ? "the motion" : motion.name) +
                    ": its sizes do not fit '" + model.name + "'");
  const long nc = static_cast<long>(motion.contact_names.size());
  auto fits = [&](const Eigen::MatrixXd& forces) {
    return forces.cols() == nc && (nc == 0 || forces.rows() == n);
  };
  if (!fits(motion.contact_normal_N) || !fits(motion.contact_friction_N))
    throw ViewError((motion.name.empty() ? "the motion" : motion.name) +
                    ": its contact forces do not fit its contact_names and samples");
  const Kinematics k = kinematicsOf(model, link_frames, motion.q, extent);
  const ContactTracks contacts = contactTracks(model_ptr, scene, motion.contact_names, motion.q);
  const Clearance c = scene ? clearanceOf(model_ptr, scene, motion.q) : Clearance{};

  os << "\"title\":";
  writeJsonString(os, motion.title);
  os << ",\"name\":";
  writeJsonString(os, motion.name);
  // The header's facts: [key, value, bad].
  std::vector<std::string> problems = motion.problems;
  if (c.first_collision >= 0) {
    std::ostringstream text;
    text.precision(3);
    text << "collision at " << c.first_collision / motion.rate_hz << " s: " << c.collision_pair;
    problems.insert(problems.begin(), text.str());
  }
  os << ",\n\"info\":[";
  bool first = true;
  auto fact = [&](const std::string& key, const std::string& value, bool bad) {
    os << (first ? "[" : ",[");
    first = false;
    writeJsonString(os, key);
    os << ',';
    writeJsonString(os, value);
    os << (bad ? ",true]" : ",false]");
  };
  for (const auto& [key, value] : motion.info) fact(key, value, false);
  for (const auto& p : problems) fact("", p, true);
  os << "],\n\"quality\":";
  jsonPairs(os, motion.quality);

  os << ",\n\"rate_hz\":" << motion.rate_hz << ",\n\"t\":[";
  for (int i = 0; i < n; ++i) os << (i ? "," : "") << i / motion.rate_hz;
  os << "],\n\"frame_poses\":[";
  for (int i = 0; i < n; ++i) os << (i ? ",\n[" : "\n[") << k.frame_rows[i] << ']';
  os << "],\n\"string_ends\":[";
  for (int i = 0; i < n; ++i) os << (i ? ",\n[" : "\n[") << k.end_rows[i] << ']';
  os << "],\n\"string_lengths\":";
  jsonRows(os, k.lengths_m);
  os << ",\n\"tensions\":{\"names\":";
  jsonNames(os, itemNames(model.strings));
  os << ",\"samples\":";
  jsonRows(os, motion.tensions_N);
  os << "},\n\"inputs\":{\"names\":";
  jsonNames(os, itemNames(model.kinematic));
  os << ",\"units\":";
  jsonNames(os, inputUnits(model));
  os << ",\"samples\":";
  jsonRows(os, motion.q.rightCols(model.nk()));
  os << "},\n\"points\":[";
  for (std::size_t p = 0; p < model.points.size(); ++p) {
    os << (p ? ",\n" : "\n") << "{\"name\":";
    writeJsonString(os, model.points[p].name);
    os << ",\"path\":";
    jsonList(os, k.point_paths[p], [&](const Eigen::Vector3d& x) { jsonVector3(os, x); });
    os << '}';
  }
  os << "],\n\"targets\":";
  jsonList(os, motion.goals, [&](const GoalRegion& g) {
    os << "{\"name\":";
    writeJsonString(os, g.point);
    os << ",\"position\":";
    jsonVector3(os, g.position_m);
    os << ",\"radius\":" << g.radius_m << '}';
  });
  os << ",\n\"performance\":{\"names\":";
  jsonNames(os, motion.performance_points);
  os << ",\"samples\":";
  jsonRows(os, motion.performance_m);
  os << '}';
  // The contacts that bore load: their forces, and where each touches, per sample (6 numbers a
  // pair: the point of contact, the unit direction its normal force pushes).
  os << ",\n\"contacts\":{\"names\":";
  jsonNames(os, motion.contact_names);
  const Eigen::MatrixXd none;  // (a plan that touched nothing may hold N x 0 forces)
  os << ",\"normal\":";
  jsonRows(os, nc ? motion.contact_normal_N : none);
  os << ",\"friction\":";
  jsonRows(os, nc ? motion.contact_friction_N : none);
  os << ",\"at\":";
  Eigen::MatrixXd at(nc ? n : 0, 6 * nc);
  for (std::size_t pair = 0; pair < motion.contact_names.size(); ++pair)
    at.middleCols(6 * pair, 6) << contacts.at_m[pair], contacts.push[pair];
  jsonRows(os, at);
  os << '}';
  os << ",\n\"clearance\":";
  if (scene) {
    os << "{\"samples\":";
    jsonColumn(os, c.any_m);
    os << ",\n\"stage_samples\":";
    jsonColumn(os, c.stage_m);
    os << ",\"min_index\":" << c.min_index << ",\"stage_min_index\":" << c.stage_min_index << '}';
  } else {
    os << "null";
  }
  os << ",\n\"collision\":{\"first_index\":" << c.first_collision << ",\"pair\":";
  writeJsonString(os, c.collision_pair);
  os << "},\n\"goal_index\":" << motion.goal_sample;
}

}  // namespace marionette::viewer
