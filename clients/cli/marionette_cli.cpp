// marionette: the command-line client.
//
//   marionette models [--json]
//   marionette scenes [--json]
//   marionette simulate --model NAME|FILE [--dt S] [--duration S] [--inputs FILE.csv]
//                       [--integrator vi|euler|rk4] [--damping-scale X]
//                       [--start rest|q:NAME=V,...] [--scene NAME|FILE [--stop-on-collision]]
//                       [--summary]
//
// simulate prints CSV to stdout, one row at t = 0 and one after every step, with the header
//   t,<dynamic variables>,<kinematic variables>,energy,max_violation,<string>_tension...
// and, with --scene, two more columns: collision (0/1) and clearance (m); or, with --summary, one
// JSON object.  Errors go to stderr with a non-zero exit status: 1 a failed step, 2 bad input,
// 3 a collision with --stop-on-collision (after printing the row where it happened).
// plan: see plan_commands.hpp and the README ("Planning").
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "cli_util.hpp"
#include "marionette/environments/collision.hpp"
#include "marionette/models/model_io.hpp"
#include "marionette/models/simulation.hpp"
#include "plan_commands.hpp"

namespace {

using namespace marionette;
using namespace marionette::cli;

constexpr const char* kUsage =
    "usage:\n"
    "  marionette models [--json]\n"
    "  marionette scenes [--json]\n"
    "  marionette simulate --model NAME|FILE [--dt S] [--duration S] [--inputs FILE.csv]\n"
    "                      [--integrator vi|euler|rk4] [--damping-scale X]\n"
    "                      [--start rest|q:NAME=V,...]\n"
    "                      [--scene NAME|FILE [--stop-on-collision]] [--summary]\n"
    "  marionette plan --model NAME|FILE [--scene NAME|FILE] [--planner "
    "est|kpiece|rrt|sst|pdst|prm]\n"
    "                  --goal q:NAME=V,...[;tol=X] | point:NAME=x,y,z[;radius=R] |\n"
    "                         rest-of:VAR=V,...[;tol=X]   (each with optional ;at-rest)\n"
    "                  [--start rest|q:NAME=V,...|rest-of:VAR=V,...] [--time-limit S] [--seed N]\n"
    "                  [--rate HZ] [--step S] [--param NAME=VALUE]... [--roadmap FILE]\n"
    "                  [--roadmap-vertices N] [--out plan.json] [--inputs-csv FILE] [--quiet]\n"
    "  marionette bench planners [--quick] [--runs N] [--time-limit S] [--seed N]\n"
    "                  [--problems NAME,...] [--planners P,...] --out DIR\n";

// `models` / `scenes`: every built-in, one JSON object (json_fields: the object's members) or
// one line of text each.
template <class Load, class JsonFields, class TextLine>
int listBuiltins(int argc, char** argv, const std::vector<std::string>& all, Load load,
                 JsonFields json_fields, TextLine text_line) {
  const Args a = parseArgs(argc, argv, 2, {}, {"--json"});
  const bool json = a.switches.count("--json");
  if (json) std::cout << "[\n";
  for (size_t i = 0; i < all.size(); ++i) {
    const auto item = load(all[i]);
    if (json)
      std::cout << "  {" << json_fields(*item) << "}" << (i + 1 < all.size() ? "," : "") << "\n";
    else
      std::cout << text_line(*item) << "\n";
  }
  if (json) std::cout << "]\n";
  return 0;
}

int cmdModels(int argc, char** argv) {
  return listBuiltins(
      argc, argv, builtinModelNames(), [](const std::string& n) { return loadModel(n); },
      [](const Model& m) {
        return "\"name\": " + jsonString(m.name) +
               ", \"description\": " + jsonString(m.description) +
               ", \"dynamic\": " + jsonArray(itemNames(m.dynamic)) +
               ", \"kinematic\": " + jsonArray(itemNames(m.kinematic)) +
               ", \"strings\": " + jsonArray(itemNames(m.strings)) +
               ", \"points\": " + jsonArray(itemNames(m.points));
      },
      [](const Model& m) {
        return formatted("%-16s %2d dynamic, %2d kinematic, %2d strings  %s", m.name.c_str(),
                         m.nd(), m.nk(), m.nstrings(), m.description.c_str());
      });
}

std::string jsonVector(const Eigen::Vector3d& v) {
  return "[" + jsonNumber(v.x()) + ", " + jsonNumber(v.y()) + ", " + jsonNumber(v.z()) + "]";
}

int cmdScenes(int argc, char** argv) {
  return listBuiltins(
      argc, argv, builtinSceneNames(), [](const std::string& n) { return loadScene(n); },
      [](const Scene& s) {
        return "\"name\": " + jsonString(s.name) +
               ", \"description\": " + jsonString(s.description) +
               ", \"obstacles\": " + jsonArray(itemNames(s.obstacles)) +
               ", \"triangles\": " + std::to_string(s.triangleCount()) + ", \"bounds\": " +
               (s.bounds ? "{\"min\": " + jsonVector(s.bounds->min_m) +
                               ", \"max\": " + jsonVector(s.bounds->max_m) + "}"
                         : std::string("null"));
      },
      [](const Scene& s) {
        return formatted("%-12s %2zu obstacles, %6zu triangles  %s", s.name.c_str(),
                         s.obstacles.size(), s.triangleCount(), s.description.c_str());
      });
}

// Thrown from a row callback to end a run at the first contact (--stop-on-collision).
struct StopAtCollision {};

int cmdSimulate(int argc, char** argv) {
  const Args a = parseArgs(argc, argv, 2,
                           {"--model", "--dt", "--duration", "--inputs", "--integrator",
                            "--damping-scale", "--start", "--scene"},
                           {"--summary", "--stop-on-collision"});
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
  const bool stop_on_collision = a.switches.count("--stop-on-collision");
  if (stop_on_collision && !a.values.count("--scene"))
    throw std::invalid_argument("--stop-on-collision needs --scene NAME|FILE");
  std::unique_ptr<CollisionChecker> checker;
  if (a.values.count("--scene"))
    checker = std::make_unique<CollisionChecker>(
        std::make_shared<CollisionModel>(model, loadScene(a.values.at("--scene"))));
  // Over the run: rows in contact, the first contact, the smallest clearance.
  struct {
    int rows_in_contact = 0;
    double first_t = NAN, min_clearance = INFINITY, min_clearance_t = NAN;
    double min_stage_clearance = INFINITY;
    ContactPair first_pair, min_pair, min_stage_pair;
  } contact;

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
    if (checker) buffer += ",collision,clearance";
    buffer += "\n";
  }
  char num[32];
  auto add = [&](double x) {
    std::snprintf(num, sizeof num, ",%.10g", x);
    buffer += num;
  };
  Eigen::VectorXd q_full(model->nq());
  auto on_row = [&](const SimulationRow& row) {
    bool hit = false;
    double clearance = NAN;
    if (checker) {
      q_full << *row.q, *row.rho;
      const CollisionResult c = checker->inCollision(q_full);
      const ClearanceResult cl = checker->clearance(q_full);
      hit = c.in_collision;
      clearance = hit ? 0.0 : cl.distance_m;
      if (hit && contact.rows_in_contact++ == 0) {
        contact.first_t = row.t_s;
        contact.first_pair = c.pair;
      }
      if (clearance < contact.min_clearance) {
        contact.min_clearance = clearance;
        contact.min_clearance_t = row.t_s;
        contact.min_pair = hit ? c.pair : cl.pair;
      }
      if (cl.stage_distance_m < contact.min_stage_clearance) {
        contact.min_stage_clearance = cl.stage_distance_m;
        contact.min_stage_pair = cl.stage_pair;
      }
    }
    if (!summary) {
      std::snprintf(num, sizeof num, "%.10g", row.t_s);
      buffer += num;
      for (int i = 0; i < row.q->size(); ++i) add((*row.q)[i]);
      for (int i = 0; i < row.rho->size(); ++i) add((*row.rho)[i]);
      add(row.energy_J);
      add(row.max_violation_m);
      for (int i = 0; i < row.tension_N->size(); ++i) add((*row.tension_N)[i]);
      if (checker) {
        buffer += hit ? ",1" : ",0";
        add(clearance);
      }
      buffer += "\n";
      if (buffer.size() > (1 << 15)) flush();
    }
    if (hit && stop_on_collision) throw StopAtCollision{};
  };
  SimulationSummary sum;
  bool stopped = false;
  try {
    sum = simulate(model, inputs, opt, on_row);
  } catch (const StopAtCollision&) {
    stopped = true;
  }
  flush();
  auto contact_json = [&] {
    std::ostringstream os;
    auto pair = [](const ContactPair& p) {
      return "{\"kind\": " + jsonString(contactKindName(p.kind)) +
             ", \"first\": " + jsonString(p.first) + ", \"second\": " + jsonString(p.second) + "}";
    };
    os << ", \"scene\": " << jsonString(checker->collisionModel().scene().name)
       << ", \"rows_in_collision\": " << contact.rows_in_contact << ", \"first_collision\": ";
    if (contact.rows_in_contact > 0)
      os << "{\"t\": " << jsonNumber(contact.first_t) << ", \"pair\": " << pair(contact.first_pair)
         << "}";
    else
      os << "null";
    os << ", \"min_clearance\": " << jsonNumber(contact.min_clearance)
       << ", \"min_clearance_t\": " << jsonNumber(contact.min_clearance_t)
       << ", \"min_clearance_pair\": " << pair(contact.min_pair)
       << ", \"min_stage_clearance\": " << jsonNumber(contact.min_stage_clearance)
       << ", \"min_stage_clearance_pair\": " << pair(contact.min_stage_pair);
    return os.str();
  };
  if (stopped) {
    std::cerr << "marionette simulate: collision at t = " << contact.first_t
              << " s: " << contact.first_pair.describe() << "\n";
    if (summary)
      std::cout << "{\"model\": " << jsonString(model->name) << ", \"stopped_at_collision\": true"
                << contact_json() << "}\n";
    return 3;
  }
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
              << ", \"energy_end\": " << jsonNumber(sum.energy_end_J)
              << (checker ? contact_json() : std::string()) << "}\n";
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
    if (cmd == "scenes") return cmdScenes(argc, argv);
    if (cmd == "simulate") return cmdSimulate(argc, argv);
    if (cmd == "plan") return cmdPlan(argc, argv);
    if (cmd == "bench") return cmdBenchPlanners(argc, argv);
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
