// SPDX-License-Identifier: BSD-3-Clause
// marionette: the command-line client.
//
//   marionette --version | version [--json] [SERVER]
//   marionette models [--json] [SERVER]
//   marionette scenes [--json] [SERVER]
//   marionette simulate --model NAME|FILE [--dt S] [--duration S] [--inputs FILE.csv]
//                       [--integrator vi|euler|rk4] [--damping-scale X]
//                       [--start rest|q:NAME=V,...] [--scene NAME|FILE [--stop-on-collision]]
//                       [--summary] [SERVER]
//   SERVER = --server HOST:PORT[,...]|dns:... [--token-file FILE] [--tls-ca FILE] (remote.hpp):
//   the same output from marionette-servers; exit 6 when none can answer.
//
// simulate prints CSV to stdout, one row at t = 0 and one after every step, with the header
//   t,<dynamic variables>,<kinematic variables>,energy,max_violation,<string>_tension...
// and, with --scene, the normal and friction forces (N) of every contact pair the puppet may touch
// (SURFACE/POINT_normal, SURFACE/POINT_friction: docs/scene-format.md) and two more columns:
// collision (0/1) and clearance (m); or, with --summary, one JSON object.  Errors go to stderr with
// a non-zero exit status: 1 a failed step, 2 bad input, 3 a collision with --stop-on-collision
// (after printing the row where it happened). plan, optimize: plan_commands.hpp; bench:
// bench_command.hpp; perform, execute, render: their own files.  Every flag: docs/cli.md.
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "bench_command.hpp"
#include "calibrate_command.hpp"
#include "cli_util.hpp"
#include "execute_command.hpp"
#include "listings.hpp"
#include "marionette/environments/checked_simulation.hpp"
#include "marionette/environments/scene_contacts.hpp"
#include "marionette/models/model_io.hpp"
#include "marionette/models/simulation.hpp"
#include "marionette/models/version.hpp"
#include "marionette/service/wire.hpp"
#include "perform_command.hpp"
#include "plan_commands.hpp"
#include "reach_command.hpp"
#include "remote.hpp"
#include "render_command.hpp"
#include "start_text.hpp"

namespace {

using namespace marionette;
using namespace marionette::cli;
namespace wire = marionette::wire;

constexpr const char* kUsage =
    "usage:\n"
    "  marionette --version | version [--json] [SERVER]\n"
    "  marionette models [--json] [SERVER]\n"
    "  marionette scenes [--json] [SERVER]\n"
    "  marionette simulate --model NAME|FILE [--dt S] [--duration S] [--inputs FILE.csv]\n"
    "                      [--integrator vi|euler|rk4] [--damping-scale X]\n"
    "                      [--start rest|q:NAME=V,...]\n"
    "                      [--scene NAME|FILE [--stop-on-collision]] [--summary] [SERVER]\n"
    "  marionette plan --model NAME|FILE [--scene NAME|FILE] [--planner PLANNER]\n"
    "                  --goal q:NAME=V,...[;tol=X] | point:NAME=x,y,z[;radius=R] |\n"
    "                         rest-of:VAR=V,...[;tol=X]   (each with optional ;at-rest)\n"
    "                  [--start rest|q:NAME=V,...|rest-of:VAR=V,...] [--time-limit S] [--seed N]\n"
    "                  [--rate HZ] [--step S] [--param NAME=VALUE]... [--roadmap FILE]\n"
    "                  [--roadmap-vertices N] [--out plan.json] [--inputs-csv FILE] [--quiet]\n"
    "                  [--max-propagations N] [--plugin LIB.so]... [--raw | OPTIMIZE]\n"
    "                  [--gains] [SERVER]\n"
    "    optimized (the transcription) unless --raw: the search's plan as found\n"
    "  marionette optimize PLAN.json | [--inputs FILE.csv] --model NAME|FILE [--rate HZ]\n"
    "                  [--scene NAME|FILE] [--goal G] [--start S] [OPTIMIZE] --out BETTER.json\n"
    "                  [--inputs-csv FILE] [--quiet]\n"
    "    OPTIMIZE: [--margin M] [--settle S] [--optimize-iterations N] [--optimize-time S]\n"
    "              [--optimizer interior-point|ipopt]\n"
    "              [--weight NAME=V]...\n"
    "  marionette perform --model NAME|FILE [--scene NAME|FILE]\n"
    "                  (--markers F.csv | --pcr F.pcr | --bvh F.bvh [--map MAP.yaml] |\n"
    "                   --keyframes F.yaml)... [--blend S] [--from S] [--to S] [--speed X]\n"
    "                  [--loop N] [--disable STRING|INPUT,...] [--margin M] [--tolerance M]\n"
    "                  [--reach-tolerance M] [--no-retarget] [--calm W] [--free POINT,...]\n"
    "                  [--rate HZ] [--key-rate HZ] [--knots N] [--settle S] [--time-limit S]\n"
    "                  [--kinematic-only] [--weight NAME=V]... --out perf.json\n"
    "                  [--inputs-csv FILE] [--quiet]\n"
    "    exit: 0 exact (collision-free with the margin, within every limit), 4 approximate\n"
    "  marionette reach --model NAME|FILE [--scene NAME|FILE] --point NAME[,NAME...]\n"
    "                  [--poses N] [--swings N] [--out FILE.html] [--json FILE.json]\n"
    "    where the points can be held still and swung to (clouds in the viewer)\n"
    "  marionette bench planners [--quick] [--runs N] [--time-limit S] [--seed N]\n"
    "                  [--max-propagations N] [--plugin LIB.so]...\n"
    "                  [--problems NAME,...] [--planners P,...] [--raw | OPTIMIZE]\n"
    "                  [--save-plans] [--parallel N] [SERVER] --out DIR\n"
    "  marionette execute --plan plan.json | --inputs FILE.csv --model M\n"
    "                  --rig sim: | serial:/dev/ttyX[?baud=N] | udp:HOST:PORT\n"
    "                  [--rig-config RIG.yaml]\n"
    "                  [--rate-scale X] [--send-rate HZ] [--loop | --loops N] [--hold VAR,...]\n"
    "                  [--settle S] [--max-misses N] [--ack-timeout S] [--max-lost-acks N]\n"
    "                  [--log FILE.csv] [--report FILE.json] [--dry-run] [--scene NAME|FILE]\n"
    "                  [--feedback lqr|mpc [--estimator ekf|ekf-euler] [--q POS[,VEL[,RIG]]]\n"
    "                   [--r R[,RATE[,ACCEL]]] [--process-noise POS,VEL] [--max-correction X]\n"
    "                   [--horizon S] [--mpc-iterations N] [--solve-lead S] [--solve-every S]\n"
    "                   [--point-weight W]\n"
    "                   [--max-deviation X] [--max-point-deviation M]\n"
    "                   [--calibrate [--calibration-poses N]\n"
    "                   [--calibration-masses NAME,...] [--calibration-settle S]\n"
    "                   [--calibration-measure S] [--calibration-share X]]]\n"
    "    exit: 0 done, 2 refused (nothing sent), 1 the calibration's fit refused after its\n"
    "    moves, 3 stopped by SIGINT/SIGTERM, 4 link lost or rig refused (or reported a\n"
    "    position beyond a range), 5 too many missed deadlines, 7 a safe stop (the estimate\n"
    "    left its bounds; a frame would have broken a limit), 8 done but an output lost (it\n"
    "    follows on stderr), 9 done but the MPC never acted (open loop)\n"
    "    (each stop holds the last setpoints; every status but 2 means the rig may have moved)\n"
    "  marionette calibrate --model NAME|FILE --rig sim:?... | serial:... | udp:...\n"
    "                  [--rig-config RIG.yaml] --out M-calibrated.yaml [--report FILE.json]\n"
    "                  [--poses N] [--masses NAME,...] [--settle S] [--measure S] [--share X]\n"
    "                  [--hold VAR,...] [--scene NAME|FILE] [--send-rate HZ] [--log FILE.csv]\n"
    "                  [--max-misses N] [--ack-timeout S] [--max-lost-acks N]\n"
    "    holds the rig at N poses, fits the constant string lengths (and masses) at rest\n"
    "  marionette render PLAN.json [--compare B.json] | --model NAME|FILE [--scene NAME|FILE]\n"
    "                  [--inputs FILE.csv [--dt S] [--duration S]]\n"
    "                  [--out FILE.html] [--png FILE.png [--at S] [--size WxH] [--chromium PATH]]\n"
    "                  [--points NAME,...]   (a plan may also take --model / --scene files)\n"
    "                  [--camera front|side|top|X,Y,Z] [--fit puppet|motion|stage]\n"
    "SERVER: --server HOST:PORT[,HOST:PORT...]|dns:///NAME:PORT [--token-file FILE]\n"
    "  [--tls-ca FILE]: ask marionette-servers instead of working in-process (same output;\n"
    "  balanced, retried on UNAVAILABLE; exit 6 when no server can answer).\n";

void printUsage(std::ostream& os) {
  os << kUsage << "PLANNER: " << joinNames(plannerNames(), " | ") << " (default "
     << PlannerOptions{}.planner << ")\n";
}

// `models` / `scenes`: every built-in, or with --server the server's (remote.cpp), printed by
// one printer (listings.hpp).
template <class Listing, class Local, class FromServer>
int listBuiltins(int argc, char** argv, Local local, FromServer from_server,
                 void (*print)(const std::vector<Listing>&, bool, std::ostream&)) {
  const Args a = parseArgs(argc, argv, 2, {"--server", "--token-file", "--tls-ca"}, {"--json"});
  const bool json = a.switches.count("--json") > 0;
  print(a.values.count("--server") ? from_server(a, json) : local(), json, std::cout);
  return 0;
}

// This program's version, and with SERVER the server's (GetServerInfo).
int cmdVersion(int argc, char** argv) {
  const Args a = parseArgs(argc, argv, 2, {"--server", "--token-file", "--tls-ca"}, {"--json"});
  const bool json = a.switches.count("--json");
  if (a.values.count("--server")) return cmdVersionRemote(a, json, MARIONETTE_VERSION);
  if (json)
    JsonLine(std::cout).members.text("version", MARIONETTE_VERSION);
  else
    std::cout << "marionette " MARIONETTE_VERSION "\n";
  return 0;
}

int cmdModels(int argc, char** argv) {
  const auto local = [] {
    std::vector<ModelListing> out;
    for (const std::string& name : builtinModelNames()) {
      const ModelPtr m = loadModel(name);
      out.push_back({m->name, m->description, itemNames(m->dynamic), itemNames(m->kinematic),
                     itemNames(m->strings), itemNames(m->points)});
    }
    return out;
  };
  return listBuiltins<ModelListing>(argc, argv, local, serverModels, printModels);
}

int cmdScenes(int argc, char** argv) {
  const auto local = [] {
    std::vector<SceneListing> out;
    for (const std::string& name : builtinSceneNames()) {
      const ScenePtr s = loadScene(name);
      SceneListing l{s->name, s->description, itemNames(s->obstacles),
                     static_cast<long long>(s->triangleCount()), std::nullopt};
      if (s->bounds) l.bounds_m = std::make_pair(s->bounds->min_m, s->bounds->max_m);
      out.push_back(std::move(l));
    }
    return out;
  };
  return listBuiltins<SceneListing>(argc, argv, local, serverScenes, printScenes);
}

// The CSV rows and the --summary JSON of `simulate`, the same whether the simulation ran here or
// on a server.  With contact pairs, the rows are held to the end: only the pairs that touched
// (a normal or friction force other than 0 in some row) get their two columns.
class SimulationPrinter {
 public:
  SimulationPrinter(bool summary, bool with_scene) : summary_(summary), with_scene_(with_scene) {
    buffer_.reserve(1 << 16);
  }
  ~SimulationPrinter() { flush(); }
  void header(const std::vector<std::string>& dynamic, const std::vector<std::string>& kinematic,
              const std::vector<std::string>& strings, const std::vector<std::string>& contacts) {
    if (summary_) return;
    buffer_ += "t";
    for (const auto& n : dynamic) buffer_ += "," + n;
    for (const auto& n : kinematic) buffer_ += "," + n;
    buffer_ += ",energy,max_violation";
    for (const auto& n : strings) buffer_ += "," + n + "_tension";
    contact_names_ = contacts;
    touched_.assign(contacts.size(), 0);
    if (!contacts.empty()) {
      held_header_ = std::move(buffer_);
      buffer_.clear();
    }
    if (with_scene_) end_of_header_ = ",collision,clearance";
    if (contacts.empty()) buffer_ += end_of_header_ + "\n";
  }
  // q: n_d, rho: n_k, tension: n_s values; normal and friction: one per contact pair (or null).
  void row(double t, const double* q, int nd, const double* rho, int nk, double energy,
           double violation, const double* tension, int ns, bool hit, double clearance,
           const double* normal = nullptr, const double* friction = nullptr, int nc = 0) {
    if (summary_) return;
    std::snprintf(num_, sizeof num_, "%.10g", t);
    buffer_ += num_;
    for (int i = 0; i < nd; ++i) add(q[i]);
    for (int i = 0; i < nk; ++i) add(rho[i]);
    add(energy);
    add(violation);
    for (int i = 0; i < ns; ++i) add(tension[i]);
    std::string end;
    if (with_scene_) {
      end = hit ? ",1" : ",0";
      std::snprintf(num_, sizeof num_, ",%.10g", clearance);
      end += num_;
    }
    if (!contact_names_.empty()) {
      HeldRow held{std::move(buffer_), std::vector<double>(2 * contact_names_.size(), 0.0), end};
      buffer_.clear();
      for (int i = 0; i < nc && i < static_cast<int>(contact_names_.size()); ++i) {
        held.contacts[2 * i] = normal[i];
        held.contacts[2 * i + 1] = friction[i];
        touched_[i] |= normal[i] != 0.0 || friction[i] != 0.0;
      }
      held_.push_back(std::move(held));
      return;
    }
    buffer_ += end + "\n";
    if (buffer_.size() > (1 << 15)) flush();
  }
  void flush() {
    if (!held_header_.empty()) {  // the held rows, with the touched pairs' columns
      buffer_ = std::move(held_header_);
      held_header_.clear();
      for (std::size_t i = 0; i < contact_names_.size(); ++i)
        if (touched_[i])
          buffer_ += "," + contact_names_[i] + "_normal," + contact_names_[i] + "_friction";
      buffer_ += end_of_header_ + "\n";
    }
    for (HeldRow& r : held_) {
      buffer_ += r.start;
      for (std::size_t i = 0; i < contact_names_.size(); ++i)
        if (touched_[i]) {
          add(r.contacts[2 * i]);
          add(r.contacts[2 * i + 1]);
        }
      buffer_ += r.end + "\n";
      if (buffer_.size() > (1 << 15)) write();
    }
    held_.clear();
    write();
  }

 private:
  struct HeldRow {
    std::string start;             // t to the tensions
    std::vector<double> contacts;  // per pair: normal, friction
    std::string end;               // collision, clearance
  };
  void write() {
    std::fwrite(buffer_.data(), 1, buffer_.size(), stdout);
    buffer_.clear();
    std::fflush(stdout);
  }
  void add(double x) {
    std::snprintf(num_, sizeof num_, ",%.10g", x);
    buffer_ += num_;
  }
  bool summary_, with_scene_;
  std::string buffer_, held_header_, end_of_header_;
  std::vector<std::string> contact_names_;
  std::vector<char> touched_;
  std::vector<HeldRow> held_;
  char num_[32];
};

// Contacts over a run, for the --summary JSON.
struct ContactSummary {
  struct Pair {
    std::string kind = "none", first, second, description;
  };
  std::string scene;
  int rows_in_contact = 0;
  double first_t = NAN, min_clearance = INFINITY, min_clearance_t = NAN;
  double min_stage_clearance = INFINITY;
  Pair first_pair, min_pair, min_stage_pair;

  // Its members of the summary object.
  void write(JsonMembers& m) const {
    auto pair = [](JsonMembers& into, const char* name, const Pair& p) {
      JsonLine object(into.key(name), "");
      object.members.text("kind", p.kind);
      object.members.text("first", p.first);
      object.members.text("second", p.second);
    };
    m.text("scene", scene);
    m.key("rows_in_collision") << rows_in_contact;
    if (rows_in_contact > 0) {
      JsonLine first(m.key("first_collision"), "");
      first.members.number("t", first_t);
      pair(first.members, "pair", first_pair);
    } else {
      m.key("first_collision") << "null";
    }
    m.number("min_clearance", min_clearance);
    m.number("min_clearance_t", min_clearance_t);
    pair(m, "min_clearance_pair", min_pair);
    m.number("min_stage_clearance", min_stage_clearance);
    pair(m, "min_stage_clearance_pair", min_stage_pair);
  }
};

ContactSummary::Pair toPair(const ContactPair& p) {
  return {contactKindName(p.kind), p.first, p.second, p.describe()};
}

// The end of `simulate`: a collision with --stop-on-collision (exit 3), or the summary.
int finishSimulate(const std::string& model, bool summary, bool stopped, const ContactSummary* c,
                   const SimulationSummary& sum, IntegratorKind integrator, double dt_s) {
  std::fflush(stdout);
  if (stopped) {
    std::cerr << "marionette simulate: collision at t = " << c->first_t
              << " s: " << c->first_pair.description << "\n";
    if (summary) {
      JsonLine out(std::cout);
      out.members.text("model", model);
      out.members.key("stopped_at_collision") << "true";
      c->write(out.members);
    }
    return 3;
  }
  if (summary) {
    JsonLine out(std::cout);
    JsonMembers& m = out.members;
    m.text("model", model);
    m.text("integrator", toString(integrator));
    m.number("dt", dt_s);
    m.key("steps") << sum.steps;
    m.numbers({{"wall_s", sum.wall_s},
               {"us_per_step", sum.us_per_step},
               {"newton_iterations_mean", sum.newton_iterations_mean},
               {"max_violation", sum.max_violation_m},
               {"min_tension", sum.min_tension_N},
               {"energy_start", sum.energy_start_J},
               {"energy_end", sum.energy_end_J}});
    if (c) c->write(m);
  }
  return 0;
}

// `simulate --server`: the same request, run by the server.
int simulateRemote(const Args& a, const ModelPtr& model, const SimulationOptions& opt,
                   const InputSchedule& inputs, bool summary, bool stop_on_collision) {
  if (opt.integrator != IntegratorKind::VI)
    throw std::invalid_argument("--integrator: a server simulates with vi only");
  Remote remote(remoteOptions(a));
  v1::SimulateRequest req;
  *req.mutable_model() = modelRef(a.values.at("--model"));
  if (a.values.count("--scene")) *req.mutable_scene() = sceneRef(a.values.at("--scene"));
  *req.mutable_start() = startToProto(StartText{"", {}, opt.start});
  if (!inputs.times_s.empty()) wire::inputsToProto(*model, inputs, req.mutable_inputs());
  req.set_dt_s(opt.dt_s);
  req.set_duration_s(opt.duration_s);
  req.set_damping_scale(opt.damping_scale);
  req.set_stop_on_collision(stop_on_collision);
  v1::SimulateResponse out;
  grpc::ClientContext ctx;
  remote.prepare(ctx);
  remote.check(remote.stub().Simulate(&ctx, req, &out), "Simulate");

  const bool with_scene = a.values.count("--scene");
  SimulationPrinter printer(summary, with_scene);
  printer.header({out.dynamic_names().begin(), out.dynamic_names().end()},
                 {out.kinematic_names().begin(), out.kinematic_names().end()},
                 {out.string_names().begin(), out.string_names().end()},
                 {out.contact_names().begin(), out.contact_names().end()});
  for (const v1::SimulationSample& r : out.samples()) {
    if (r.contact_normal_n_size() != out.contact_names_size() ||
        r.contact_friction_n_size() != out.contact_names_size())
      throw std::runtime_error("the server's answer has " +
                               std::to_string(r.contact_normal_n_size()) +
                               " contact forces in a sample for " +
                               std::to_string(out.contact_names_size()) + " contact pairs");
    printer.row(r.t_s(), r.q().data(), r.q_size(), r.inputs().data(), r.inputs_size(), r.energy_j(),
                r.max_violation_m(), r.tension_n().data(), r.tension_n_size(), r.collision(),
                r.clearance_m(), r.contact_normal_n().data(), r.contact_friction_n().data(),
                r.contact_normal_n_size());
  }
  printer.flush();
  ContactSummary c;
  if (with_scene) {
    auto pair = [](const v1::Contact& p) {
      return ContactSummary::Pair{p.kind().empty() ? "none" : p.kind(), p.first(), p.second(),
                                  p.description()};
    };
    c.scene = out.scene();
    c.rows_in_contact = out.samples_in_collision();
    c.first_t = out.first_collision_t_s();
    c.first_pair = pair(out.first_collision());
    c.min_clearance = out.min_clearance_m();
    c.min_clearance_t = out.min_clearance_t_s();
    c.min_pair = pair(out.min_clearance_pair());
    c.min_stage_clearance = out.min_stage_clearance_m();
    c.min_stage_pair = pair(out.min_stage_clearance_pair());
  }
  SimulationSummary sum;
  sum.steps = out.steps();
  sum.us_per_step = out.us_per_step();
  sum.wall_s = out.us_per_step() * out.steps() * 1e-6;
  sum.newton_iterations_mean = out.newton_iterations_mean();
  sum.max_violation_m = out.max_violation_m();
  sum.min_tension_N = out.min_tension_n();
  sum.energy_start_J = out.energy_start_j();
  sum.energy_end_J = out.energy_end_j();
  return finishSimulate(model->name, summary, out.stopped_at_collision(), with_scene ? &c : nullptr,
                        sum, opt.integrator, opt.dt_s);
}

int cmdSimulate(int argc, char** argv) {
  const Args a =
      parseArgs(argc, argv, 2,
                {"--model", "--dt", "--duration", "--inputs", "--integrator", "--damping-scale",
                 "--start", "--scene", "--server", "--token-file", "--tls-ca"},
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
  if (a.values.count("--start")) {
    const StartText start = parseStartText(a.values.at("--start"));
    if (!start.input_values.empty())
      throw std::invalid_argument(
          "--start: simulate starts from 'rest' or 'q:NAME=V,...' (the "
          "inputs at t = 0 are the first row of --inputs)");
    opt.start = start.spec;
  }
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
  if (a.values.count("--server"))
    return simulateRemote(a, model, opt, inputs, summary, stop_on_collision);
  std::unique_ptr<CollisionChecker> checker;
  std::vector<std::string> contact_names;
  if (a.values.count("--scene")) {
    // The puppet touches the scene's surfaces (docs/scene-format.md): they are contacts of its
    // dynamics, and touching them is not a collision.
    CollisionOptions touching;  // (euler and rk4 pass through the surfaces: they stay forbidden)
    touching.touch_contact_surfaces = opt.integrator == IntegratorKind::VI;
    const ScenePtr scene = loadScene(a.values.at("--scene"));
    checker = std::make_unique<CollisionChecker>(
        std::make_shared<CollisionModel>(model, scene, touching));
    if (opt.integrator == IntegratorKind::VI) opt.contacts = sceneContacts(*model, *scene);
  } else if (opt.integrator == IntegratorKind::VI) {
    opt.contacts = sceneContacts(*model, Scene{});  // no stage: the links touch one another
  }
  for (int r = 0; opt.contacts && r < opt.contacts->rows(); ++r)
    contact_names.push_back(opt.contacts->rowName(r));

  SimulationPrinter printer(summary, checker != nullptr);
  printer.header(itemNames(model->dynamic), itemNames(model->kinematic), itemNames(model->strings),
                 contact_names);
  Eigen::VectorXd friction;
  auto on_sample = [&](const CheckedSample& s) {
    const SimulationRow& row = s.row;
    if (row.contact_force_N) friction = row.contact_friction_N->colwise().norm().transpose();
    printer.row(row.t_s, row.q->data(), static_cast<int>(row.q->size()), row.rho->data(),
                static_cast<int>(row.rho->size()), row.energy_J, row.max_violation_m,
                row.tension_N->data(), static_cast<int>(row.tension_N->size()), s.in_collision,
                s.clearance_m, row.contact_force_N ? row.contact_force_N->data() : nullptr,
                friction.data(), row.contact_force_N ? static_cast<int>(friction.size()) : 0);
    return true;
  };
  CheckedSimulationOptions check;
  check.stop_at_first_collision = stop_on_collision;
  const CheckedSimulationReport report =
      simulateChecked(model, inputs, opt, checker.get(), check, on_sample);
  printer.flush();
  ContactSummary contact;
  if (checker) {
    contact.scene = checker->collisionModel().scene().name;
    contact.rows_in_contact = report.samples_in_collision;
    contact.first_t = report.first_collision_t_s;
    contact.first_pair = toPair(report.first_collision_pair);
    contact.min_clearance = report.min_clearance_m;
    contact.min_clearance_t = report.min_clearance_t_s;
    contact.min_pair = toPair(report.min_clearance_pair);
    contact.min_stage_clearance = report.min_stage_clearance_m;
    contact.min_stage_pair = toPair(report.min_stage_clearance_pair);
  }
  return finishSimulate(model->name, summary, report.stopped_at_collision,
                        checker ? &contact : nullptr, report.simulation, opt.integrator, opt.dt_s);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || std::string(argv[1]) == "--help" || std::string(argv[1]) == "-h") {
    printUsage(std::cout);
    return argc < 2 ? 2 : 0;
  }
  const std::string cmd = argv[1];
  if (cmd == "--version") {
    std::cout << "marionette " MARIONETTE_VERSION "\n";
    return 0;
  }
  try {
    if (cmd == "version") return cmdVersion(argc, argv);
    if (cmd == "models") return cmdModels(argc, argv);
    if (cmd == "scenes") return cmdScenes(argc, argv);
    if (cmd == "simulate") return cmdSimulate(argc, argv);
    if (cmd == "plan") return cmdPlan(argc, argv);
    if (cmd == "optimize") return cmdOptimize(argc, argv);
    if (cmd == "perform") return cmdPerform(argc, argv);
    if (cmd == "reach") return cmdReach(argc, argv);
    if (cmd == "bench") return cmdBenchPlanners(argc, argv);
    if (cmd == "execute") return cmdExecute(argc, argv);
    if (cmd == "calibrate") return cmdCalibrate(argc, argv);
    if (cmd == "render") return cmdRender(argc, argv);
    std::cerr << "marionette: unknown command '" << cmd << "'\n";
    printUsage(std::cerr);
    return 2;
  } catch (const RemoteError& e) {
    std::fflush(stdout);
    std::cerr << "marionette " << cmd << ": " << e.what() << "\n";
    return e.exitStatus();
  } catch (const SimulationError& e) {
    std::fflush(stdout);
    std::cerr << "marionette simulate: failed at " << e.what() << "\n";
    return 1;
  } catch (const FieldError& e) {
    std::fflush(stdout);
    std::cerr << "marionette " << cmd << ": " << flagMessage(e) << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::fflush(stdout);
    std::cerr << "marionette " << cmd << ": " << e.what() << "\n";
    return 2;
  } catch (...) {  // (a plugin's code may throw anything)
    std::fflush(stdout);
    std::cerr << "marionette " << cmd << ": failed: something that is not a std::exception was "
                 "thrown\n";
    return 1;
  }
}
