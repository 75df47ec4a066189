// SPDX-License-Identifier: BSD-3-Clause
// The goal text: "q:NAME=V,...", "point:NAME=x,y,z", "rest-of:VAR=V,..." with options.
#include "marionette/plan/goal_spec.hpp"

#include <cmath>
#include <sstream>
#include <stdexcept>

#include "marionette/common/text.hpp"
#include "marionette/models/field_error.hpp"

namespace marionette {
namespace {

// The fields between separators; a trailing separator ends the text ("a=1;" is "a=1").
std::vector<std::string> items(const std::string& text, char separator) {
  std::vector<std::string> out = splitFields(text, separator);
  if (out.size() > 1 && out.back().empty()) out.pop_back();
  return out;
}

double number(const std::string& text, const std::string& what) {
  double v;
  if (parseFiniteNumber(text, v)) return v;
  throw FieldError("goal", what + ": expected a finite number, got '" + text + "'");
}

const char* kindPrefix(GoalSpec::Kind k) {
  switch (k) {
    case GoalSpec::Kind::Joint: return "q";
    case GoalSpec::Kind::Point: return "point";
    case GoalSpec::Kind::RestOf: return "rest-of";
  }
  return "?";
}

}  // namespace

GoalSpec GoalSpec::parse(const std::string& text) {
  GoalSpec g;
  const auto colon = text.find(':');
  if (colon == std::string::npos)
    throw FieldError("goal",
                     "expected q:NAME=V,..., point:NAME=x,y,z or "
                     "rest-of:VAR=V,... (got '" +
                         text + "')");
  const std::string kind = trimmed(text.substr(0, colon));
  const std::vector<std::string> parts = items(text.substr(colon + 1), ';');
  if (parts.empty() || parts[0].empty())
    throw FieldError("goal", "'" + kind + ":' needs NAME=VALUE");
  if (kind == "q" || kind == "rest-of") {
    g.kind = kind == "q" ? Kind::Joint : Kind::RestOf;
    for (const std::string& item : items(parts[0], ',')) {
      std::string name, value;
      if (!splitNameValue(item, name, value))
        throw FieldError("goal", "expected NAME=VALUE, got '" + item + "'");
      g.values.emplace_back(name, number(value, name));
    }
  } else if (kind == "point") {
    g.kind = Kind::Point;
    const auto eq = parts[0].find('=');
    if (eq == std::string::npos)
      throw FieldError("goal", "expected point:NAME=x,y,z, got '" + parts[0] + "'");
    PointTarget t;
    t.point = trimmed(parts[0].substr(0, eq));
    const std::vector<std::string> xyz = items(parts[0].substr(eq + 1), ',');
    if (t.point.empty() || xyz.size() != 3)
      throw FieldError("goal",
                       "expected point:NAME=x,y,z (three numbers, stage "
                       "coordinates in m), got '" +
                           parts[0] + "'");
    for (int i = 0; i < 3; ++i) t.position_m[i] = number(xyz[i], t.point + " position");
    g.points.push_back(t);
  } else {
    throw FieldError("goal", "unknown kind '" + kind + "' (expected q, point or rest-of)");
  }
  for (std::size_t i = 1; i < parts.size(); ++i) {
    const std::string& opt = parts[i];
    const auto eq = opt.find('=');
    const std::string key = trimmed(opt.substr(0, eq));
    if (key == "at-rest" && eq == std::string::npos) {
      g.at_rest = true;
    } else if ((key == "tol" && g.kind != Kind::Point) ||
               (key == "radius" && g.kind == Kind::Point)) {
      if (eq == std::string::npos) throw FieldError("goal", key + " needs =VALUE");
      g.tolerance = number(trimmed(opt.substr(eq + 1)), key);
      if (!(g.tolerance > 0.0)) throw FieldError("goal", key + " must be > 0");
    } else if (key == "energy" && eq != std::string::npos) {
      g.rest_energy_J = number(trimmed(opt.substr(eq + 1)), "energy");
      if (!(g.rest_energy_J > 0.0)) throw FieldError("goal", "energy must be > 0 J");
      g.at_rest = true;
    } else {
      throw FieldError("goal", "unknown option '" + opt + "' (expected " +
                                   (g.kind == Kind::Point ? "radius=R" : "tol=X") +
                                   ", at-rest or energy=J)");
    }
  }
  return g;
}

void GoalSpec::merge(const GoalSpec& other) {
  if (kind != Kind::Point || other.kind != Kind::Point)
    throw FieldError("goal", "only point goals can be given more than once");
  points.insert(points.end(), other.points.begin(), other.points.end());
  if (!std::isnan(other.tolerance))
    tolerance = std::isnan(tolerance) ? other.tolerance : std::min(tolerance, other.tolerance);
  at_rest = at_rest || other.at_rest;
  rest_energy_J = std::min(rest_energy_J, other.rest_energy_J);
}

double GoalSpec::effectiveTolerance() const {
  if (!std::isnan(tolerance)) return tolerance;
  return kind == Kind::Point ? 0.03 : 0.05;
}

std::string GoalSpec::describe() const {
  std::ostringstream os;
  os.precision(9);
  if (kind == Kind::Point) {
    for (std::size_t i = 0; i < points.size(); ++i) {
      const auto& t = points[i];
      os << (i ? " + " : "") << "point:" << t.point << '=' << t.position_m.x() << ','
         << t.position_m.y() << ',' << t.position_m.z() << ";radius=" << effectiveTolerance();
    }
  } else {
    os << kindPrefix(kind) << ':';
    for (std::size_t i = 0; i < values.size(); ++i)
      os << (i ? "," : "") << values[i].first << '=' << values[i].second;
    os << ";tol=" << effectiveTolerance();
  }
  if (at_rest) os << ";at-rest;energy=" << rest_energy_J;
  return os.str();
}

}  // namespace marionette
