// marionette: the command-line client.
//
//   marionette models [--json]
//   marionette simulate --model NAME|FILE [--dt S] [--duration S] [--inputs FILE.csv]
//                       [--integrator vi|euler|rk4] [--damping-scale X]
//                       [--start rest|q:NAME=V,...] [--summary]
//
// simulate prints CSV to stdout, one row at t = 0 and one after every step, with the header
//   t,<dynamic variables>,<kinematic variables>,energy,max_violation,<string>_tension...
// or, with --summary, one JSON object.  Errors go to stderr with a non-zero exit status.
#include <cmath>
#include <cstdio>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "marionette/models/model_io.hpp"
#include "marionette/models/simulation.hpp"

namespace {

using namespace marionette;

constexpr const char* kUsage =
    "usage:\n"
    "  marionette models [--json]\n"
    "  marionette simulate --model NAME|FILE [--dt S] [--duration S] [--inputs FILE.csv]\n"
    "                      [--integrator vi|euler|rk4] [--damping-scale X]\n"
    "                      [--start rest|q:NAME=V,...] [--summary]\n";

std::string jsonString(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          out += buf;
        } else {
          out += c;
        }
    }
  }
  return out + "\"";
}

std::string jsonArray(const std::vector<std::string>& items) {
  std::string out = "[";
  for (size_t i = 0; i < items.size(); ++i) out += (i ? ", " : "") + jsonString(items[i]);
  return out + "]";
}

std::string jsonNumber(double x) {
  if (!std::isfinite(x)) return "null";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.10g", x);
  return buf;
}

// --flag value pairs and bare --switches; anything else is an error naming it.
struct Args {
  std::map<std::string, std::string> values;
  std::map<std::string, bool> switches;
};

Args parseArgs(int argc, char** argv, int first, const std::vector<std::string>& value_flags,
               const std::vector<std::string>& switch_flags) {
  Args a;
  for (int i = first; i < argc; ++i) {
    const std::string arg = argv[i];
    auto has = [](const std::vector<std::string>& v, const std::string& s) {
      for (const auto& x : v)
        if (x == s) return true;
      return false;
    };
    if (has(switch_flags, arg)) {
      a.switches[arg] = true;
    } else if (has(value_flags, arg)) {
      if (i + 1 >= argc) throw std::invalid_argument(arg + " needs a value");
      a.values[arg] = argv[++i];
    } else {
      throw std::invalid_argument("unknown argument '" + arg + "'");
    }
  }
  return a;
}

double parseNumber(const std::string& flag, const std::string& text) {
  char* end = nullptr;
  const double x = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0' || !std::isfinite(x))
    throw std::invalid_argument(flag + ": not a number: '" + text + "'");
  return x;
}

std::vector<std::string> names(const std::vector<DynamicVariable>& v) {
  std::vector<std::string> out;
  for (const auto& x : v) out.push_back(x.name);
  return out;
}
std::vector<std::string> names(const std::vector<KinematicVariable>& v) {
  std::vector<std::string> out;
  for (const auto& x : v) out.push_back(x.name);
  return out;
}
template <class T>
std::vector<std::string> itemNames(const std::vector<T>& v) {
  std::vector<std::string> out;
  for (const auto& x : v) out.push_back(x.name);
  return out;
}

int cmdModels(int argc, char** argv) {
  const Args a = parseArgs(argc, argv, 2, {}, {"--json"});
  const bool json = a.switches.count("--json");
  if (json) std::cout << "[\n";
  const auto all = builtinModelNames();
  for (size_t i = 0; i < all.size(); ++i) {
    const ModelPtr m = loadModel(all[i]);
    if (json) {
      std::cout << "  {\"name\": " << jsonString(m->name)
                << ", \"description\": " << jsonString(m->description)
                << ", \"dynamic\": " << jsonArray(names(m->dynamic))
                << ", \"kinematic\": " << jsonArray(names(m->kinematic))
                << ", \"strings\": " << jsonArray(itemNames(m->strings))
                << ", \"points\": " << jsonArray(itemNames(m->points)) << "}"
                << (i + 1 < all.size() ? "," : "") << "\n";
    } else {
      std::printf("%-16s %2d dynamic, %2d kinematic, %2d strings  %s\n", m->name.c_str(), m->nd(),
                  m->nk(), m->nstrings(), m->description.c_str());
    }
  }
  if (json) std::cout << "]\n";
  return 0;
}

int cmdSimulate(int argc, char** argv) {
  const Args a = parseArgs(
      argc, argv, 2,
      {"--model", "--dt", "--duration", "--inputs", "--integrator", "--damping-scale", "--start"},
      {"--summary"});
  if (!a.values.count("--model")) throw std::invalid_argument("simulate needs --model NAME|FILE");
  const ModelPtr model = loadModel(a.values.at("--model"));
  SimulationOptions opt;
  if (a.values.count("--dt")) opt.dt_s = parseNumber("--dt", a.values.at("--dt"));
  if (a.values.count("--duration"))
    opt.duration_s = parseNumber("--duration", a.values.at("--duration"));
  if (a.values.count("--damping-scale"))
    opt.damping_scale = parseNumber("--damping-scale", a.values.at("--damping-scale"));
  if (a.values.count("--integrator"))
    opt.integrator = parseIntegratorKind(a.values.at("--integrator"));
  if (a.values.count("--start")) opt.start = StartSpec::parse(a.values.at("--start"));
  const InputSchedule inputs = a.values.count("--inputs")
                                   ? InputSchedule::fromCsvFile(*model, a.values.at("--inputs"))
                                   : InputSchedule::constant(*model);
  for (const std::string& w : inputs.speedWarnings(*model))
    std::cerr << "marionette simulate: warning: " << a.values.at("--inputs") << ": " << w << "\n";
  const bool summary = a.switches.count("--summary");
  opt.energy_every_row = !summary;

  std::string buffer;
  buffer.reserve(1 << 16);
  auto flush = [&] {
    std::fwrite(buffer.data(), 1, buffer.size(), stdout);
    buffer.clear();
  };
  if (!summary) {
    buffer += "t";
    for (const auto& v : model->dynamic) buffer += "," + v.name;
    for (const auto& v : model->kinematic) buffer += "," + v.name;
    buffer += ",energy,max_violation";
    for (const auto& s : model->strings) buffer += "," + s.name + "_tension";
    buffer += "\n";
  }
  char num[32];
  auto add = [&](double x) {
    std::snprintf(num, sizeof num, ",%.10g", x);
    buffer += num;
  };
  const SimulationSummary sum = simulate(model, inputs, opt, [&](const SimulationRow& row) {
    if (summary) return;
    std::snprintf(num, sizeof num, "%.10g", row.t_s);
    buffer += num;
    for (int i = 0; i < row.q->size(); ++i) add((*row.q)[i]);
    for (int i = 0; i < row.rho->size(); ++i) add((*row.rho)[i]);
    add(row.energy_J);
    add(row.max_violation_m);
    for (int i = 0; i < row.tension_N->size(); ++i) add((*row.tension_N)[i]);
    buffer += "\n";
    if (buffer.size() > (1 << 15)) flush();
  });
  flush();
  if (summary) {
    std::cout << "{\"model\": " << jsonString(model->name)
              << ", \"integrator\": " << jsonString(toString(opt.integrator))
              << ", \"dt\": " << jsonNumber(opt.dt_s) << ", \"steps\": " << sum.steps
              << ", \"wall_s\": " << jsonNumber(sum.wall_s)
              << ", \"us_per_step\": " << jsonNumber(sum.us_per_step)
              << ", \"newton_iterations_mean\": " << jsonNumber(sum.newton_iterations_mean)
              << ", \"max_violation\": " << jsonNumber(sum.max_violation_m)
              << ", \"min_tension\": " << jsonNumber(sum.min_tension_N)
              << ", \"energy_start\": " << jsonNumber(sum.energy_start_J)
              << ", \"energy_end\": " << jsonNumber(sum.energy_end_J) << "}\n";
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || std::string(argv[1]) == "--help" || std::string(argv[1]) == "-h") {
    std::cout << kUsage;
    return argc < 2 ? 2 : 0;
  }
  const std::string cmd = argv[1];
  try {
    if (cmd == "models") return cmdModels(argc, argv);
    if (cmd == "simulate") return cmdSimulate(argc, argv);
    std::cerr << "marionette: unknown command '" << cmd << "'\n" << kUsage;
    return 2;
  } catch (const SimulationError& e) {
    std::fflush(stdout);
    std::cerr << "marionette simulate: failed at " << e.what() << "\n";
    return 1;
  } catch (const std::exception& e) {
    std::fflush(stdout);
    std::cerr << "marionette " << cmd << ": " << e.what() << "\n";
    return 2;
  }
}
