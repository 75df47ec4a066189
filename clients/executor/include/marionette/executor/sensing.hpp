// SPDX-License-Identifier: BSD-3-Clause
// What a rig measures of its puppet (PROTOCOL.md v2, "Sensing"): the rig file's `sensing:`
// section, and the measurement frames the rig sends unasked,
//   $MEA,SEQ,STAMP,NAME:VALUE:UNIT,...*CRC
// SEQ the rig's own count of MEA frames (1, 2, 3, ...), STAMP the time the values were taken, in
// seconds since the rig took the run's first SET, on the rig's clock; one field per declared
// value: "hand_l.x:412.5:mm", "elbow:12.5:deg".
//
// Contents
//   Sensing            markers (named points, stage coordinates) and encoders (joints), their
//                      units on the wire, rate, latency and noise.
//   MeasurementFrame   one decoded MEA frame, values in the model's units (m, rad).
//   encodeMeasurement / decodeMeasurement
#pragma once

#include <Eigen/Core>
#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "marionette/control/measurement.hpp"
#include "marionette/models/model.hpp"

namespace YAML {
class Node;
}

namespace marionette::executor {

struct Sensing {
  std::vector<std::string> markers;   // named points of the model: x, y, z each (stage)
  std::vector<std::string> encoders;  // dynamic variables
  std::string marker_unit = "m";      // "m" or "mm" on the wire
  std::string encoder_unit = "rad";   // "rad" or "deg" (an encoder on a slide: "m" or "mm")
  double rate_hz = 0.0;               // how often the rig measures, in [kMinRate_hz, kMaxRate_hz]
  double latency_s = 0.0;             // from taking the values to the frame reaching the host
  double marker_noise_m = 0.002;      // each coordinate's standard deviation (the filter's R)
  double encoder_noise = 0.002;       // rad or m

  static constexpr double kMinRate_hz = 1.0, kMaxRate_hz = 1000.0;

  bool declared() const { return !markers.empty() || !encoders.empty(); }
  // The values' names, in order: "hand_l.x", "hand_l.y", "hand_l.z", ..., then the encoders
  // (control::MeasurementModel::names()).
  std::vector<std::string> names() const;
  control::MeasurementSpec spec() const;
  // The `sensing:` map of a rig file; errors read "FILE:LINE: sensing.FIELD: ...".
  static Sensing parse(const YAML::Node& node, const std::string& source, const Model& model);
};

using Clock = std::chrono::steady_clock;

struct MeasurementFrame {
  std::uint32_t seq = 0;
  double stamp_s = 0.0;    // on the rig's clock, since it took the run's first SET
  Eigen::VectorXd values;  // MeasurementModel order: markers' x, y, z, then encoders (m, rad)
  Clock::time_point received;
};

// The MEA fields (after the stamp) for values in model units, in names() order.
std::vector<std::string> encodeMeasurement(const Sensing& sensing, const Eigen::VectorXd& values);
// The reverse: every declared value exactly once, in any order, in the declared unit, within
// the stage's range (1,000 m, or 1,000 rad); a stamp that is a finite number >= 0.  On failure
// returns false and says why.
bool decodeMeasurement(const Sensing& sensing, const std::vector<std::string>& fields,
                       MeasurementFrame& out, std::string* error);

}  // namespace marionette::executor
