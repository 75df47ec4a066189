// SPDX-License-Identifier: BSD-3-Clause
#include "marionette/executor/sensing.hpp"

#include <yaml-cpp/yaml.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <set>
#include <stdexcept>

#include "marionette/common/text.hpp"

namespace marionette::executor {

namespace {
constexpr double kDegree = M_PI / 180.0;
// The largest value a measurement can have, in model units (m or rad): the stage's range.
constexpr double kMaxMeasured = 1e3;

// Model units per wire unit.
double unitScale(const std::string& unit) {
  if (unit == "mm") return 1e-3;
  if (unit == "deg") return kDegree;
  return 1.0;  // m, rad
}
}  // namespace

control::MeasurementSpec Sensing::spec() const {
  control::MeasurementSpec s;
  s.markers = markers;
  s.encoders = encoders;
  s.marker_noise_m = marker_noise_m;
  s.encoder_noise = encoder_noise;
  return s;
}

Sensing Sensing::parse(const YAML::Node& node, const std::string& source, const Model& model) {
  auto where = [&](const YAML::Node& n, const std::string& field, const std::string& what) {
    return source + ":" + std::to_string(n.Mark().line + 1) + ": sensing." + field + ": " + what;
  };
  if (!node.IsMap())
    throw std::invalid_argument(where(node, "", "expected a map (markers, encoders, rate_hz, ...)"));
  Sensing s;
  auto names = [&](const YAML::Node& n, const std::string& field, bool point) {
    if (!n.IsSequence()) throw std::invalid_argument(where(n, field, "expected a list of names"));
    std::vector<std::string> out;
    std::set<std::string> seen;
    for (std::size_t i = 0; i < n.size(); ++i) {
      const std::string name = n[i].as<std::string>();
      const std::string at = field + "[" + std::to_string(i) + "]";
      if (point ? model.pointIndex(name) < 0 : !model.isDynamic(model.variableIndex(name)))
        throw std::invalid_argument(where(
            n[i], at,
            "'" + name + "' is not " + (point ? "a named point" : "a joint (dynamic variable)") +
                " of '" + model.name + "'"));
      if (!seen.insert(name).second)
        throw std::invalid_argument(where(n[i], at, "'" + name + "' is listed twice"));
      out.push_back(name);
    }
    return out;
  };
  auto positive = [&](const YAML::Node& n, const std::string& field, bool zero_ok) {
    double v = NAN;
    try {
      v = n.as<double>();
    } catch (const YAML::Exception&) {
    }
    if (!std::isfinite(v) || v < 0 || (!zero_ok && v == 0))
      throw std::invalid_argument(where(n, field, zero_ok ? "give a number >= 0" : "give a number > 0"));
    return v;
  };
  bool rate_given = false;
  for (const auto& kv : node) {
    const std::string key = kv.first.as<std::string>();
    const YAML::Node& v = kv.second;
    if (key == "markers") {
      s.markers = names(v, key, true);
    } else if (key == "encoders") {
      s.encoders = names(v, key, false);
    } else if (key == "marker_unit" || key == "encoder_unit") {
      const std::string unit = v.as<std::string>();
      const bool ok = key == "marker_unit" ? (unit == "m" || unit == "mm")
                                           : (unit == "rad" || unit == "deg" || unit == "m" ||
                                              unit == "mm");
      if (!ok)
        throw std::invalid_argument(where(
            v, key, "'" + unit + "' (" +
                        (key == "marker_unit" ? std::string("m or mm") : "rad, deg, m or mm") + ")"));
      (key == "marker_unit" ? s.marker_unit : s.encoder_unit) = unit;
    } else if (key == "rate_hz") {
      s.rate_hz = positive(v, key, false);
      rate_given = true;
    } else if (key == "latency_s") {
      s.latency_s = positive(v, key, true);
    } else if (key == "marker_noise_m") {
      s.marker_noise_m = positive(v, key, false);
    } else if (key == "encoder_noise") {
      s.encoder_noise = positive(v, key, false);
    } else {
      throw std::invalid_argument(where(
          kv.first, key,
          "unknown field (markers, encoders, marker_unit, encoder_unit, rate_hz, latency_s, "
          "marker_noise_m, encoder_noise)"));
    }
  }
  if (!s.declared())
    throw std::invalid_argument(where(node, "", "declares no markers and no encoders"));
  if (!rate_given) throw std::invalid_argument(where(node, "rate_hz", "give the measurement rate"));
  if (!(s.rate_hz >= kMinRate_hz && s.rate_hz <= kMaxRate_hz))
    throw std::invalid_argument(where(node, "rate_hz", "must be in [1, 1000] Hz"));
  if (s.latency_s > 1) throw std::invalid_argument(where(node, "latency_s", "at most 1 s"));
  return s;
}

std::vector<std::string> Sensing::names() const {
  std::vector<std::string> n;
  for (const std::string& m : markers)
    for (const char* axis : {".x", ".y", ".z"}) n.push_back(m + axis);
  n.insert(n.end(), encoders.begin(), encoders.end());
  return n;
}

std::vector<std::string> encodeMeasurement(const Sensing& sensing, const Eigen::VectorXd& values) {
  const std::vector<std::string> names = sensing.names();
  std::vector<std::string> fields;
  fields.reserve(names.size());
  const std::size_t nm = 3 * sensing.markers.size();
  char buf[96];
  for (std::size_t i = 0; i < names.size(); ++i) {
    const std::string& unit = i < nm ? sensing.marker_unit : sensing.encoder_unit;
    std::snprintf(buf, sizeof buf, ":%.9g:", values[static_cast<Eigen::Index>(i)] / unitScale(unit));
    fields.push_back(names[i] + buf + unit);
  }
  return fields;
}

bool decodeMeasurement(const Sensing& sensing, const std::vector<std::string>& fields,
                       MeasurementFrame& out, std::string* error) {
  const std::vector<std::string> names = sensing.names();
  auto fail = [&](const std::string& why) {
    if (error) *error = why;
    return false;
  };
  if (fields.empty()) return fail("no time stamp");
  char* end = nullptr;
  const double stamp = std::strtod(fields[0].c_str(), &end);
  if (fields[0].empty() || *end != '\0' || !std::isfinite(stamp) || stamp < 0)
    return fail("time stamp '" + printableBytes(fields[0], 64) +
                "' is not a number of seconds >= 0");
  out.stamp_s = stamp;
  const std::size_t nm = 3 * sensing.markers.size();
  out.values.setConstant(static_cast<Eigen::Index>(names.size()),
                         std::numeric_limits<double>::quiet_NaN());
  for (std::size_t f = 1; f < fields.size(); ++f) {
    const std::string& field = fields[f];
    // The rig's bytes as they may be shown (a message, a log).
    auto bad = [&](const std::string& why) {
      return fail("field '" + printableBytes(field, 64) + "': " + why);
    };
    const auto b = field.rfind(':');
    const auto a = b == std::string::npos || b == 0 ? std::string::npos : field.rfind(':', b - 1);
    if (a == std::string::npos) return bad("expected NAME:VALUE:UNIT");
    const std::string name = field.substr(0, a), num = field.substr(a + 1, b - a - 1),
                      unit = field.substr(b + 1);
    std::size_t i = 0;
    while (i < names.size() && names[i] != name) ++i;
    if (i == names.size()) return bad("not declared");
    const std::string& expected = i < nm ? sensing.marker_unit : sensing.encoder_unit;
    if (unit != expected)
      return bad("unit '" + printableBytes(unit, 16) + "', the rig file says '" + expected + "'");
    const double v = std::strtod(num.c_str(), &end);
    if (num.empty() || *end != '\0' || !std::isfinite(v)) return bad("bad value");
    if (!(std::abs(v * unitScale(unit)) <= kMaxMeasured))
      return bad("beyond the stage's range (1 km, or 1000 rad)");
    if (!std::isnan(out.values[static_cast<Eigen::Index>(i)]))
      return bad("'" + name + "' is given twice");
    out.values[static_cast<Eigen::Index>(i)] = v * unitScale(unit);
  }
  for (std::size_t i = 0; i < names.size(); ++i)
    if (std::isnan(out.values[static_cast<Eigen::Index>(i)]))
      return fail("'" + names[i] + "' is missing");
  return true;
}

}  // namespace marionette::executor
