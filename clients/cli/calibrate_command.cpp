// SPDX-License-Identifier: BSD-3-Clause
#include "calibrate_command.hpp"

#include <yaml-cpp/yaml.h>

#include <cmath>
#include <iostream>
#include <sstream>

#include "marionette/common/files.hpp"
#include "marionette/environments/collision.hpp"
#include "marionette/models/model_io.hpp"
#include "marionette/problem/motion_problem.hpp"

namespace marionette::cli {

using namespace marionette::executor;

namespace {

// The model file's text (`text`, read before anything moved) with the calibrated values in place
// (comments are not kept): the constant strings' `length` and the fitted masses' `mass` and
// `inertia` (every number scaled).
std::string calibratedModelYaml(const std::string& text, const control::Calibration& c) {
  YAML::Node root = YAML::Load(text);
  auto entry = [&](const char* section, const std::string& name) {
    for (YAML::Node item : root[section])
      if (item.IsMap() && item["name"] && item["name"].as<std::string>() == name) return item;
    throw std::invalid_argument("--out: the model file has no " + std::string(section) +
                                " entry '" + name + "' to calibrate");
  };
  std::function<void(YAML::Node, double)> scale = [&](YAML::Node n, double f) {
    if (n.IsScalar()) {
      n = formatted("%.9g", n.as<double>() * f);
    } else if (n.IsSequence()) {
      for (YAML::Node child : n) scale(child, f);
    } else if (n.IsMap()) {
      for (auto kv : n) scale(kv.second, f);
    }
  };
  for (const control::CalibratedParameter& p : c.parameters) {
    if (p.kind == control::CalibratedParameter::Kind::StringLength) {
      entry("strings", p.name)["length"] = formatted("%.9g", p.fitted);
    } else {
      YAML::Node m = entry("masses", p.name);
      m["mass"] = formatted("%.9g", m["mass"].as<double>() * p.fitted);
      if (m["inertia"]) scale(m["inertia"], p.fitted);
    }
  }
  YAML::Emitter out;
  out << root;
  std::ostringstream os;
  os << "# " << c.model->name << ", calibrated at rest by `marionette calibrate`:";
  for (const control::CalibratedParameter& p : c.parameters)
    os << formatted(" %s %.9g +- %.2g %s (model: %.9g);", p.name.c_str(), p.fitted, p.std, p.unit(),
                    p.nominal);
  os << "\n" << out.c_str() << "\n";
  return os.str();
}

void printCalibration(const RigCalibration& c) {
  const control::Calibration& f = c.fit;
  std::cout << formatted(
      "  calibrated at %zu pose(s) (%.1f s): residual %.3g m rms (the model's own "
      "values: %.3g m), chi2/dof %.2f, %d iteration(s)%s\n",
      c.poses.size(), c.elapsed_s, f.rms_residual_m, f.nominal_rms_residual_m, f.chi2_per_dof,
      f.iterations, f.converged ? "" : ", not converged");
  for (const control::CalibratedParameter& p : f.parameters) {
    if (p.kind == control::CalibratedParameter::Kind::StringLength)
      std::cout << formatted("    string %-14s %.4f m  (model %.4f, %+.2f mm +- %.2f mm)\n",
                             p.name.c_str(), p.fitted, p.nominal, 1e3 * (p.fitted - p.nominal),
                             1e3 * p.std);
    else
      std::cout << formatted("    mass   %-14s x%.3f    (+- %.3f)\n", p.name.c_str(), p.fitted,
                             p.std);
  }
}

}  // namespace

std::vector<std::string> rigCalibrationFlags(const std::string& prefix) {
  std::vector<std::string> flags;
  for (const char* name : {"poses", "masses", "settle", "measure", "share"})
    flags.push_back(prefix + name);
  return flags;
}

RigCalibrationOptions parseRigCalibration(const Args& a, const std::string& prefix,
                                          const ModelPtr& model, const ScenePtr& scene,
                                          double send_rate_hz) {
  RigCalibrationOptions o;
  o.send_rate_hz = send_rate_hz;
  auto value = [&](const char* name) -> const std::string* {
    auto it = a.values.find(prefix + name);
    return it == a.values.end() ? nullptr : &it->second;
  };
  if (const std::string* v = value("poses")) {
    const double n = parseNumber(prefix + "poses", *v);
    if (!(n >= 1 && n <= kMaxCalibrationPoses && n == std::floor(n)))
      throw std::invalid_argument(prefix + "poses: a count in [1, " +
                                  std::to_string(kMaxCalibrationPoses) + "]");
    o.poses = static_cast<int>(n);
  }
  if (const std::string* v = value("masses")) o.fit.masses = splitCommas(*v);
  if (const std::string* v = value("settle")) o.settle_s = parseNumber(prefix + "settle", *v);
  if (const std::string* v = value("measure")) o.measure_s = parseNumber(prefix + "measure", *v);
  if (const std::string* v = value("share")) o.share = parseNumber(prefix + "share", *v);
  try {
    checkRigCalibrationOptions(o);
    // The masses named must be the model's (before anything moves).
    for (std::size_t i = 0; i < o.fit.masses.size(); ++i) {
      bool found = false;
      for (const Mass& m : model->masses) found |= m.name == o.fit.masses[i];
      if (!found)
        throw std::invalid_argument(prefix + "masses: '" + o.fit.masses[i] +
                                    "' is not a mass of '" + model->name + "'");
      for (std::size_t j = 0; j < i; ++j)
        if (o.fit.masses[j] == o.fit.masses[i])
          throw std::invalid_argument(prefix + "masses: '" + o.fit.masses[i] + "' is listed twice");
    }
  } catch (const FieldError& e) {
    const std::string field = e.field();
    if (field == "send_rate_hz") throw std::invalid_argument("--send-rate: " + e.problem());
    const std::string flag = field == "settle_s"             ? "settle"
                             : field == "measure_s"          ? "measure"
                             : field.rfind("masses", 0) == 0 ? "masses"
                                                             : field;
    throw std::invalid_argument(prefix + flag + ": " + e.problem());
  }
  if (scene) {
    auto checker = std::make_shared<CollisionChecker>(
        std::make_shared<const CollisionModel>(model, scene, problemCollisionOptions()));
    o.acceptable = [checker](const Eigen::VectorXd& q) {
      return !checker->inCollision(q).in_collision;
    };
  }
  return o;
}

std::vector<std::string> linkFlags() {
  return {"--max-misses", "--ack-timeout", "--max-lost-acks"};
}

LinkOptions parseLinkOptions(const Args& a) {
  LinkOptions o;
  auto count = [&](const char* flag, int& out) {
    if (a.values.count(flag))
      out = static_cast<int>(wholeNumber(flag, a.values.at(flag), 0, 1e6));
  };
  count("--max-misses", o.max_consecutive_misses);
  count("--max-lost-acks", o.max_consecutive_lost_acks);
  if (a.values.count("--ack-timeout")) {
    o.ack_timeout_s = parseNumber("--ack-timeout", a.values.at("--ack-timeout"));
    if (!(o.ack_timeout_s > 0 && o.ack_timeout_s <= 60))
      throw std::invalid_argument("--ack-timeout: must be in (0, 60] s");
  }
  return o;
}

bool commitAfterMotion(OutputFile& file, const std::string& bytes, const std::string& flag,
                       const std::string& command) {
  try {
    file.commit(bytes);
    return true;
  } catch (const FileError& e) {
    std::cerr << "marionette " << command << ": after the rig moved: " << flag << ": "
              << e.what() << "; what it holds follows on stderr\n"
              << bytes;
    if (!bytes.empty() && bytes.back() != '\n') std::cerr << "\n";
    return false;
  }
}

std::optional<RigCalibration> runRigCalibration(RigDriver& rig, const ModelPtr& model,
                                                const RigCalibrationOptions& options,
                                                const LinkOptions& link,
                                                const std::string& command, int* status) {
  RigCalibration c;
  try {
    c = calibrateOnRig(rig, model, options, link);
  } catch (const FieldError& e) {
    // Refused from the model, before anything moved; or a fit the measurements cannot support.
    std::cerr << "marionette " << command << ": calibration: " << e.field() << ": " << e.problem()
              << "\n";
    *status = 2;
    return std::nullopt;
  }
  if (!c.ok) {
    // A move that stopped exits as a run would (3, 4, 5, 7); measurements that could not be
    // fitted, 1.  The rig holds where it is.
    std::cerr << "marionette " << command << ": calibration: " << c.message << "\n";
    *status = c.moves.reason == StopReason::Completed ? 1 : exitStatus(c.moves.reason);
    return std::nullopt;
  }
  printCalibration(c);
  return c;
}

int cmdCalibrate(int argc, char** argv) {
  std::vector<std::string> flags{"--rig",    "--model", "--rig-config", "--out", "--report",
                                 "--scene",  "--send-rate", "--log",     "--hold"};
  for (const std::string& f : rigCalibrationFlags("--")) flags.push_back(f);
  for (const std::string& f : linkFlags()) flags.push_back(f);
  const Args a = parseArgs(argc, argv, 2, flags, {});
  for (const char* required : {"--rig", "--model", "--out"})
    if (!a.values.count(required))
      throw std::invalid_argument(std::string(required) +
                                  ": required (calibrate --rig URI "
                                  "--model M --out M-calibrated.yaml)");
  // Every output is opened before anything moves: a calibration is not repeated for a file it
  // lost.
  const std::unique_ptr<OutputFile> out_file = openOutput(a, "--out");
  const std::unique_ptr<OutputFile> report_file = openOutput(a, "--report");
  checkOutput(a, "--log");
  const std::string model_arg = a.values.at("--model");
  const ModelPtr model = loadModel(model_arg);
  std::string model_text = builtinModelText(model_arg);
  if (model_text.empty())
    model_text = readInputFile<std::invalid_argument>(model_arg, 16u << 20, "model");
  const ScenePtr scene = a.values.count("--scene") ? loadScene(a.values.at("--scene")) : nullptr;
  const double rate =
      a.values.count("--send-rate") ? parseNumber("--send-rate", a.values.at("--send-rate")) : 50.0;
  RigCalibrationOptions options = parseRigCalibration(a, "--", model, scene, rate);
  if (a.values.count("--hold")) options.held = splitCommas(a.values.at("--hold"));
  for (const std::string& name : options.held)
    if (model->variableIndex(name) < model->nd())
      throw std::invalid_argument("--hold: '" + name + "' is not a kinematic variable of '" +
                                  model->name + "' (" + joinNames(itemNames(model->kinematic)) +
                                  ")");
  LinkOptions link = parseLinkOptions(a);
  const std::string uri = a.values.at("--rig");
  RigConfig config = RigConfig::identity(*model);
  if (a.values.count("--rig-config"))
    config = RigConfig::load(a.values.at("--rig-config"), *model);
  else if (uri.rfind("serial:", 0) == 0 || uri.rfind("udp:", 0) == 0)
    throw std::invalid_argument("--rig-config: a hardware rig needs its channel map and sensing");
  std::unique_ptr<RigDriver> rig;
  try {
    rig = openRig(uri, model, config, rate);
  } catch (const LinkError& e) {
    std::cerr << "marionette calibrate: " << e.what() << "; nothing was sent\n";
    return 4;
  }
  if (!rig->sensing()) {
    std::cerr << "marionette calibrate: refused, nothing was sent: --rig: " << rig->uri()
              << " declares no measurements (give the rig file a sensing: section, or "
                 "sim:?noise=0.002&rate=30)\n";
    return 2;
  }
  std::cout << formatted(
      "calibrate: %s on %s, %d pose(s) (each input moved %.0f %% of its range), "
      "settle %g s, measure %g s\n",
      model->name.c_str(), rig->uri().c_str(), options.poses, 100 * options.share, options.settle_s,
      options.measure_s);
  std::unique_ptr<CommandLog> log;
  if (a.values.count("--log")) log = std::make_unique<CommandLog>(a.values.at("--log"), *model);
  link.log = log.get();
  link.stop_requested = installStopHandlers();
  int status = 0;
  const std::optional<RigCalibration> c =
      runRigCalibration(*rig, model, options, link, "calibrate", &status);
  if (!c) return status;
  std::ostringstream report;
  report << "{\n  \"format\": \"marionette-calibration\",\n  \"version\": 1,\n  \"model\": ";
  writeJsonString(report, model->name);
  report << ",\n  \"calibration\": ";
  writeCalibrationJson(report, *c, "  ");
  report << "\n}\n";
  std::string yaml;
  try {
    yaml = calibratedModelYaml(model_text, c->fit);
    // The file written reads back as the calibrated model.
    const ModelPtr back = loadModelString(yaml, a.values.at("--out"));
    for (const control::CalibratedParameter& p : c->fit.parameters) {
      const double v = p.kind == control::CalibratedParameter::Kind::StringLength
                           ? back->strings[static_cast<std::size_t>(p.index)].length_m
                           : back->masses[static_cast<std::size_t>(p.index)].mass_kg /
                                 model->masses[static_cast<std::size_t>(p.index)].mass_kg;
      if (std::abs(v - p.fitted) > 1e-8 * (1 + std::abs(p.fitted)))
        throw std::runtime_error("'" + p.name + "' does not read back");
    }
  } catch (const std::exception& e) {
    std::cerr << "marionette calibrate: after the calibration's moves: --out: the calibrated model "
                 "file cannot be written: "
              << e.what() << "; the fit follows on stderr\n"
              << report.str();
    return 1;
  }
  bool kept = commitAfterMotion(*out_file, yaml, "--out", "calibrate");
  if (kept) std::cout << "  wrote " << a.values.at("--out") << "\n";
  if (report_file) kept = commitAfterMotion(*report_file, report.str(), "--report", "calibrate") && kept;
  return kept ? 0 : kOutputLostAfterMotion;
}

}  // namespace marionette::cli
