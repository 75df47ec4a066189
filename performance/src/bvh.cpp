// SPDX-License-Identifier: BSD-3-Clause
// The BVH parser and its forward kinematics.
#include "marionette/performance/bvh.hpp"

#include <Eigen/Geometry>
#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "marionette/common/text.hpp"
#include "marionette/performance/performance_error.hpp"

namespace marionette {
namespace {

// Whitespace-separated words with their 1-based lines.
class Words {
 public:
  Words(const std::string& text, std::string source) : text_(text), source_(std::move(source)) {}

  bool done() {
    skipSpace();
    return pos_ >= text_.size();
  }
  int line() const { return line_; }
  std::string next(const std::string& field) {
    skipSpace();
    if (pos_ >= text_.size()) fail(field, "unexpected end of file");
    const std::size_t start = pos_;
    while (pos_ < text_.size() && !std::isspace(static_cast<unsigned char>(text_[pos_]))) ++pos_;
    return text_.substr(start, pos_ - start);
  }
  void expect(const std::string& word, const std::string& field) {
    const std::string w = next(field);
    if (w != word) fail(field, "expected '" + word + "', got '" + w + "'");
  }
  double number(const std::string& field) {
    const std::string w = next(field);
    char* end = nullptr;
    const double v = std::strtod(w.c_str(), &end);
    if (end == w.c_str() || *end != '\0' || !std::isfinite(v))
      fail(field, "expected a finite number, got '" + w + "'");
    return v;
  }
  [[noreturn]] void fail(const std::string& field, const std::string& what) const {
    throw PerformanceFileError(source_, line_, field, what);
  }

 private:
  void skipSpace() {
    while (pos_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[pos_]))) {
      if (text_[pos_] == '\n') ++line_;
      ++pos_;
    }
  }
  const std::string& text_;
  std::string source_;
  std::size_t pos_ = 0;
  int line_ = 1;
};

int channelKind(const std::string& name) {
  static const char* kNames[] = {"Xposition", "Yposition", "Zposition",
                                 "Xrotation", "Yrotation", "Zrotation"};
  for (int i = 0; i < 6; ++i)
    if (name == kNames[i]) return i;
  return -1;
}

constexpr int kMaxJoints = 1000;

}  // namespace

int BvhClip::jointIndex(const std::string& name) const {
  for (std::size_t i = 0; i < joints.size(); ++i)
    if (joints[i].name == name) return static_cast<int>(i);
  return -1;
}

BvhClip parseBvh(const std::string& text, const std::string& source) {
  BvhClip clip;
  clip.source = source;
  Words in(text, source);
  in.expect("HIERARCHY", "HIERARCHY");
  int channels = 0;
  // A joint block after its keyword (ROOT, JOINT or End Site) and name.
  std::vector<int> open;  // the joints whose blocks are open
  const std::string root = in.next("ROOT");
  if (root != "ROOT") in.fail("ROOT", "expected 'ROOT', got '" + root + "'");
  auto beginJoint = [&](const std::string& name, bool end_site) {
    if (static_cast<int>(clip.joints.size()) >= kMaxJoints)
      in.fail(name, "more than " + std::to_string(kMaxJoints) + " joints");
    BvhJoint j;
    j.parent = open.empty() ? -1 : open.back();
    j.name = end_site ? clip.joints[j.parent].name + "/end" : name;
    if (!end_site && clip.jointIndex(name) >= 0) in.fail(name, "a second joint of this name");
    const std::string field = j.name;
    in.expect("{", field);
    in.expect("OFFSET", field + ".OFFSET");
    for (int a = 0; a < 3; ++a) j.offset[a] = in.number(field + ".OFFSET");
    j.first_channel = channels;
    if (!end_site) {
      in.expect("CHANNELS", field + ".CHANNELS");
      const double n = in.number(field + ".CHANNELS");
      if (!(n >= 0 && n <= 6 && n == std::floor(n)))
        in.fail(field + ".CHANNELS", "expected a count from 0 to 6");
      for (int c = 0; c < static_cast<int>(n); ++c) {
        const std::string kind = in.next(field + ".CHANNELS");
        const int k = channelKind(kind);
        if (k < 0)
          in.fail(field + ".CHANNELS", "unknown channel '" + kind +
                                           "' (expected X/Y/Z position or rotation)");
        j.channels.push_back(k);
      }
      channels += static_cast<int>(j.channels.size());
    }
    clip.joints.push_back(j);
    open.push_back(static_cast<int>(clip.joints.size()) - 1);
  };
  beginJoint(in.next("ROOT"), false);
  while (!open.empty()) {
    const std::string w = in.next(clip.joints[open.back()].name);
    if (w == "}") {
      open.pop_back();
    } else if (w == "JOINT") {
      if (clip.joints[open.back()].name.size() > 4 &&
          clip.joints[open.back()].name.compare(clip.joints[open.back()].name.size() - 4, 4,
                                                "/end") == 0)
        in.fail(clip.joints[open.back()].name, "an End Site has no joints");
      beginJoint(in.next("JOINT"), false);
    } else if (w == "End") {
      in.expect("Site", clip.joints[open.back()].name + ".End Site");
      beginJoint("", true);
    } else {
      in.fail(clip.joints[open.back()].name,
              "expected JOINT, End Site or '}', got '" + w + "'");
    }
  }
  in.expect("MOTION", "MOTION");
  in.expect("Frames:", "Frames");
  const double frames = in.number("Frames");
  if (!(frames >= 1 && frames <= 1e7 && frames == std::floor(frames)))
    in.fail("Frames", "expected a whole number of frames >= 1");
  in.expect("Frame", "Frame Time");
  in.expect("Time:", "Frame Time");
  clip.frame_time_s = in.number("Frame Time");
  if (!(clip.frame_time_s > 0 && clip.frame_time_s <= 10))
    in.fail("Frame Time", "expected a time in (0, 10] s");
  const int n = static_cast<int>(frames);
  if (n * clip.frame_time_s > kMaxClip_s)
    in.fail("Frames", formatNumber(n * clip.frame_time_s, 6) + " s long; a clip is at most " +
                          formatNumber(kMaxClip_s) + " s");
  // The channels read, and the retargeted points (3 per joint at most) built from them.
  const double values = static_cast<double>(n) *
                        (channels + 3.0 * static_cast<double>(clip.joints.size()));
  if (values > kMaxClipValues)
    in.fail("Frames", "too many values (frames x (channels + 3 x joints) = " +
                          formatNumber(values, 6) + ", at most " + formatNumber(kMaxClipValues) +
                          ")");
  clip.motion.resize(n, channels);
  for (int f = 0; f < n; ++f)
    for (int c = 0; c < channels; ++c)
      clip.motion(f, c) = in.number("frame " + std::to_string(f + 1) + " channel " +
                                    std::to_string(c + 1));
  if (!in.done()) in.fail("MOTION", "more values than Frames x channels");
  return clip;
}

Eigen::MatrixXd jointPositions(const BvhClip& clip, int frame) {
  const int n = static_cast<int>(clip.joints.size());
  Eigen::MatrixXd out(n, 3);
  std::vector<Eigen::Isometry3d> global(n);
  for (int i = 0; i < n; ++i) {
    const BvhJoint& j = clip.joints[i];
    Eigen::Isometry3d local = Eigen::Isometry3d::Identity();
    Eigen::Vector3d translation = j.offset;
    Eigen::Matrix3d rotation = Eigen::Matrix3d::Identity();
    for (std::size_t c = 0; c < j.channels.size(); ++c) {
      const double v = clip.motion(frame, j.first_channel + static_cast<int>(c));
      const int k = j.channels[c];
      if (k < 3)
        translation[k] += v;
      else
        rotation = rotation * Eigen::AngleAxisd(v * M_PI / 180.0, Eigen::Vector3d::Unit(k - 3))
                                  .toRotationMatrix();
    }
    local.translation() = translation;
    local.linear() = rotation;
    global[i] = j.parent < 0 ? local : global[j.parent] * local;
    out.row(i) = global[i].translation().transpose();
  }
  return out;
}

}  // namespace marionette
