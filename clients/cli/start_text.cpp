#include "start_text.hpp"

#include <sstream>
#include <stdexcept>

#include "cli_util.hpp"

namespace marionette::cli {

StartText parseStartText(const std::string& text) {
  StartText s;
  s.text = text;
  if (text.rfind("rest-of:", 0) != 0) {
    s.spec = StartSpec::parse(text);  // FieldError("start", ...): main() says --start
    return s;
  }
  std::istringstream is(text.substr(8));
  std::string item;
  while (std::getline(is, item, ',')) {
    const auto eq = item.find('=');
    if (eq == std::string::npos || eq == 0)
      throw std::invalid_argument("--start: rest-of: expected VAR=VALUE, got '" + item + "'");
    s.input_values.emplace_back(item.substr(0, eq),
                                parseNumber("--start " + item.substr(0, eq), item.substr(eq + 1)));
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
                                  "' is not a kinematic variable=VALUE of '" + model.name + "'");
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
