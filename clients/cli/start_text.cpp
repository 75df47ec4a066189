// SPDX-License-Identifier: BSD-3-Clause
#include "start_text.hpp"

#include <stdexcept>

#include "cli_util.hpp"
#include "marionette/common/text.hpp"

namespace marionette::cli {

StartText parseStartText(const std::string& text) {
  StartText s;
  s.text = text;
  if (text == "rest") return s;
  const bool rest_of = text.rfind("rest-of:", 0) == 0;
  if (!rest_of && text.rfind("q:", 0) != 0)
    throw std::invalid_argument(
        "--start: expected 'rest', 'q:NAME=V,...' or "
        "'rest-of:VAR=V,...' (got '" +
        text + "')");
  const char* kind = rest_of ? "rest-of" : "q";
  for (const std::string& item : splitFields(text.substr(rest_of ? 8 : 2), ',')) {
    std::string name, text_value;
    if (!splitNameValue(item, name, text_value))
      throw std::invalid_argument(std::string("--start: ") + kind + ": expected NAME=VALUE, got '" +
                                  item + "'");
    const double value = parseNumber("--start " + name, text_value);
    (rest_of ? s.input_values : s.spec.positions).emplace_back(name, value);
  }
  return s;
}

void applyStartText(const Model& model, const StartText& start, PlanRequest& req) {
  req.start_text = start.text;
  req.start = start.spec;
  if (start.input_values.empty()) return;
  req.start_inputs = model.defaultInputs();
  for (const auto& [name, value] : start.input_values) {
    const int i = model.variableIndex(name);
    if (i < model.nd())
      throw std::invalid_argument("--start: rest-of: '" + name +
                                  "' is not a kinematic variable of '" + model.name + "'");
    req.start_inputs[i - model.nd()] = value;
  }
}

v1::Start startToProto(const StartText& start) {
  v1::Start s;
  for (const auto& [name, v] : start.input_values) (*s.mutable_input_values())[name] = v;
  for (const auto& [name, v] : start.spec.positions) (*s.mutable_position_values())[name] = v;
  for (const auto& [name, v] : start.spec.velocities) (*s.mutable_velocity_values())[name] = v;
  return s;
}

}  // namespace marionette::cli
