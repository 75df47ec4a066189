// SPDX-License-Identifier: BSD-3-Clause
// A model's errors and lookups (model.hpp); its builder is model_builder.cpp.
#include "marionette/models/model.hpp"

#include <algorithm>
#include <sstream>

namespace marionette {

namespace {
std::string composeWhat(const std::string& file, int line, const std::string& field,
                        const std::string& message) {
  std::ostringstream os;
  if (!file.empty()) {
    os << file;
    if (line > 0) os << ":" << line;
    os << ": ";
  } else if (line > 0) {
    os << "line " << line << ": ";
  }
  if (!field.empty()) os << field << ": ";
  os << message;
  return os.str();
}
}  // namespace

SourceError::SourceError(std::string file, int line, std::string field, const std::string& message)
    : ErrorOf<std::runtime_error>(composeWhat(file, line, field, message), field),
      file_(std::move(file)),
      message_(message),
      line_(line) {}

// ---- Model lookups ------------------------------------------------------------------------

int Model::frameIndex(const std::string& n) const {
  for (size_t i = 0; i < frames.size(); ++i)
    if (frames[i].name == n) return static_cast<int>(i);
  return -1;
}
int Model::variableIndex(const std::string& n) const {
  for (int i = 0; i < nd(); ++i)
    if (dynamic[i].name == n) return i;
  for (int i = 0; i < nk(); ++i)
    if (kinematic[i].name == n) return nd() + i;
  return -1;
}
int Model::pointIndex(const std::string& n) const {
  for (size_t i = 0; i < points.size(); ++i)
    if (points[i].name == n) return static_cast<int>(i);
  return -1;
}
int Model::stringIndex(const std::string& n) const {
  for (size_t i = 0; i < strings.size(); ++i)
    if (strings[i].name == n) return static_cast<int>(i);
  return -1;
}

namespace {
bool samePair(int a, int b, int x, int y) {
  return (a == x && b == y) || (a == y && b == x);
}
}  // namespace

double SelfContactSpec::frictionOf(int a, int b) const {
  for (auto it = pair_friction.rbegin(); it != pair_friction.rend(); ++it)
    if (samePair(a, b, it->frame_a, it->frame_b)) return it->friction;
  return friction;
}

std::vector<int> Model::stringInputs(int s) const {
  std::vector<int> out;
  const String& str = strings.at(s);
  if (str.length_variable >= nd()) out.push_back(str.length_variable - nd());
  for (int f = str.rig_frame; f >= 0; f = frames[f].parent)
    if (frames[f].variable >= nd()) out.push_back(frames[f].variable - nd());
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::vector<int> Model::pointInputs(int p) const {
  auto above = [&](int ancestor, int frame) {  // ancestor is frame or one of its parents
    for (; frame >= 0; frame = frames[frame].parent)
      if (frame == ancestor) return true;
    return false;
  };
  const int frame = points.at(p).frame;
  std::vector<int> out;
  for (int s = 0; s < nstrings(); ++s)
    if (above(strings[s].puppet_frame, frame) || above(frame, strings[s].puppet_frame))
      for (int i : stringInputs(s)) out.push_back(i);
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::string Model::variableName(int i) const {
  if (i >= 0 && i < nd()) return dynamic[i].name;
  if (i >= nd() && i < nq()) return kinematic[i - nd()].name;
  return "?";
}
Eigen::VectorXd Model::defaultInputs() const {
  Eigen::VectorXd r(nk());
  for (int i = 0; i < nk(); ++i) r[i] = kinematic[i].default_value;
  return r;
}
Eigen::VectorXd Model::configuration(const Eigen::VectorXd& q_d, const Eigen::VectorXd& rho) const {
  Eigen::VectorXd q(nq());
  q << q_d, rho;
  return q;
}
Eigen::VectorXd Model::initialDynamic() const {
  Eigen::VectorXd r(nd());
  for (int i = 0; i < nd(); ++i) r[i] = dynamic[i].initial;
  return r;
}
Eigen::VectorXd Model::dampingVector() const {
  Eigen::VectorXd r(nd());
  for (int i = 0; i < nd(); ++i) r[i] = dynamic[i].damping;
  return r;
}

}  // namespace marionette
