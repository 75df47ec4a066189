// SPDX-License-Identifier: BSD-3-Clause
#include "marionette/models/simulation.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <fstream>
#include <limits>
#include <sstream>

#include "marionette/common/files.hpp"
#include "marionette/common/text.hpp"
#include "marionette/models/baseline.hpp"
#include "marionette/models/cancel.hpp"
#include "marionette/models/dynamics.hpp"
#include "marionette/models/integrator.hpp"
#include "marionette/models/rest_pose.hpp"

namespace marionette {

namespace {
// The largest inputs file read: a million rows of a dozen inputs.
constexpr std::size_t kMaxCsvBytes = 256 << 20;
}  // namespace

// ---- InputSchedule ----------------------------------------------------------------------

InputSchedule InputSchedule::constant(const Model& model) {
  InputSchedule s;
  s.defaults = model.defaultInputs();
  s.values.resize(0, model.nk());
  return s;
}

int InputSchedule::maxRows(const Model& model) {
  return static_cast<int>(std::min<long>(kMaxRows, kMaxCells / std::max(1, model.nk())));
}

std::optional<InputSchedule::Problem> InputSchedule::problem(const Model& model) const {
  const auto rows = static_cast<long>(times_s.size());
  if (rows == 0) return Problem{-1, -1, "no samples"};
  if (const int max_rows = maxRows(model); rows > max_rows)
    return Problem{-1, -1, std::to_string(rows) + " samples; at most " + std::to_string(max_rows)};
  for (long r = 0; r < rows; ++r) {
    const double t = times_s[r];
    const int row = static_cast<int>(r);
    if (!std::isfinite(t)) return Problem{row, -1, "the time is not a finite number"};
    if (r == 0 && t < 0.0)
      return Problem{row, -1, "times start at 0 or later (got " + formatNumber(t) + ")"};
    if (r > 0 && !(t > times_s[r - 1]))
      return Problem{row, -1,
                     "times must increase (" + formatNumber(t) + " after " +
                         formatNumber(times_s[r - 1]) + ")"};
    for (int k = 0; k < model.nk(); ++k) {
      const double v = values(r, k);
      const KinematicVariable& kv = model.kinematic[k];
      if (!std::isfinite(v)) return Problem{row, k, "not a finite number"};
      if (v < kv.lower || v > kv.upper)
        return Problem{row, k,
                       formatNumber(v) + " is outside the actuator range [" +
                           formatNumber(kv.lower) + ", " + formatNumber(kv.upper) + "]"};
    }
  }
  return std::nullopt;
}

InputSchedule InputSchedule::fromCsv(const Model& model, const std::string& csv_text,
                                     const std::string& source) {
  InputSchedule s = constant(model);
  auto fail = [&](int line, const std::string& msg) -> void {
    throw InputsFileError(source + ":" + std::to_string(line) + ": " + msg, "");
  };
  // A byte-order mark, as spreadsheets write, is not part of the header.
  const bool bom = csv_text.compare(0, 3, "\xEF\xBB\xBF") == 0;
  std::istringstream in(bom ? csv_text.substr(3) : csv_text);
  std::string line;
  int lineno = 0;
  std::vector<int> column_var;  // kinematic index per column after t
  std::vector<std::vector<double>> rows;
  const std::size_t max_rows = static_cast<std::size_t>(maxRows(model));
  std::vector<int> row_line;
  while (std::getline(in, line)) {
    ++lineno;
    if (trimmed(line).empty() || trimmed(line)[0] == '#') continue;
    const auto cells = splitFields(line, ',');
    if (column_var.empty()) {  // the first line is the header
      if (cells[0] != "t")
        fail(lineno, "the header must start with 't' (got '" + cells[0].substr(0, 40) +
                         "'), then kinematic variable names");
      if (cells.size() < 2) fail(lineno, "the header names no kinematic variable");
      for (size_t c = 1; c < cells.size(); ++c) {
        const int vi = model.variableIndex(cells[c]);
        if (vi < model.nd()) {
          fail(lineno, "column '" + cells[c].substr(0, 40) +
                           "' is not a kinematic variable of model '" + model.name + "' (" +
                           joinNames(itemNames(model.kinematic)) + ")");
        }
        if (std::count(column_var.begin(), column_var.end(), vi - model.nd()))
          fail(lineno, "column '" + cells[c] + "' appears twice");
        column_var.push_back(vi - model.nd());
      }
      continue;
    }
    if (cells.size() != column_var.size() + 1)
      fail(lineno, "expected " + std::to_string(column_var.size() + 1) + " values, got " +
                       std::to_string(cells.size()));
    if (rows.size() >= max_rows) fail(lineno, "more than " + std::to_string(max_rows) + " samples");
    std::vector<double> row(cells.size());
    for (size_t c = 0; c < cells.size(); ++c) {
      const std::string col = c == 0 ? "t" : model.kinematic[column_var[c - 1]].name;
      if (!parseFiniteNumber(cells[c], row[c]))
        fail(lineno, "column '" + col + "': not a finite number: '" + cells[c].substr(0, 40) + "'");
    }
    rows.push_back(row);
    row_line.push_back(lineno);
  }
  if (column_var.empty()) fail(lineno, "no header line 't,<kinematic variables>'");
  if (rows.empty()) fail(lineno, "no data rows");
  s.times_s.resize(rows.size());
  s.values.resize(rows.size(), model.nk());
  for (size_t r = 0; r < rows.size(); ++r) {
    s.times_s[r] = rows[r][0];
    s.values.row(r) = s.defaults.transpose();
    for (size_t c = 0; c < column_var.size(); ++c) s.values(r, column_var[c]) = rows[r][c + 1];
  }
  if (const auto p = s.problem(model)) {
    const std::string column = p->variable < 0 ? "t" : model.kinematic[p->variable].name;
    fail(p->row < 0 ? lineno : row_line[p->row], "column '" + column + "': " + p->message);
  }
  return s;
}

InputSchedule InputSchedule::fromCsvFile(const Model& model, const std::string& path) {
  return fromCsv(model, readInputFile<std::invalid_argument>(path, kMaxCsvBytes, "inputs file"),
                 path);
}

std::vector<std::string> InputSchedule::speedWarnings(const Model& model) const {
  std::vector<std::string> out;
  for (int i = 0; i < model.nk(); ++i) {
    const KinematicVariable& kv = model.kinematic[i];
    for (size_t r = 1; r < times_s.size(); ++r) {
      const double speed =
          std::abs(values(r, i) - values(r - 1, i)) / (times_s[r] - times_s[r - 1]);
      if (speed > kv.max_speed * (1.0 + 1e-9)) {
        std::ostringstream os;
        os << "column '" << kv.name << "' moves at " << speed << "/s between t=" << times_s[r - 1]
           << " and t=" << times_s[r] << " s, faster than its max_speed " << kv.max_speed
           << "/s (a real rig could not follow)";
        out.push_back(os.str());
        break;  // one message per column
      }
    }
  }
  return out;
}

void InputSchedule::at(double t, Eigen::VectorXd& out) const {
  if (times_s.empty()) {
    out = defaults;
    return;
  }
  if (t <= times_s.front()) {
    out = values.row(0).transpose();
    return;
  }
  if (t >= times_s.back()) {
    out = values.row(values.rows() - 1).transpose();
    return;
  }
  const auto it = std::upper_bound(times_s.begin(), times_s.end(), t);
  const size_t i = static_cast<size_t>(it - times_s.begin());
  const double w = (t - times_s[i - 1]) / (times_s[i] - times_s[i - 1]);
  out = (1.0 - w) * values.row(i - 1).transpose() + w * values.row(i).transpose();
}

Eigen::VectorXd InputSchedule::at(double t) const {
  Eigen::VectorXd out(defaults.size());
  at(t, out);
  return out;
}

// ---- Start ------------------------------------------------------------------------------

IntegratorKind parseIntegratorKind(const std::string& name) {
  if (name == "vi") return IntegratorKind::VI;
  if (name == "euler") return IntegratorKind::Euler;
  if (name == "rk4") return IntegratorKind::RK4;
  throw FieldError("integrator", "expected vi, euler or rk4 (got '" + name + "')");
}

const char* toString(IntegratorKind k) {
  switch (k) {
    case IntegratorKind::VI: return "vi";
    case IntegratorKind::Euler: return "euler";
    case IntegratorKind::RK4: return "rk4";
  }
  return "?";
}

SimulationError::SimulationError(int step, double t_s, const std::string& message)
    : ErrorOf<std::runtime_error>([&] {
        std::ostringstream os;
        os << "step " << step << " (t=" << t_s << " s): " << message;
        return os.str();
      }()),
      step_(step),
      t_s_(t_s) {}

StartState resolveStart(const ModelPtr& model_ptr, const Eigen::VectorXd& rho0,
                        const StartSpec& start, const std::shared_ptr<const Contacts>& contacts) {
  const Model& model = *model_ptr;
  const int nd = model.nd();
  // The rest pose of the first inputs, then any joints the caller set (the others move the least
  // that keeps every string within its length).
  const RestPose rest = computeRestPose(model_ptr, rho0, nullptr, standingOn(contacts));
  if (!rest.ok) {
    // The request is well formed, but the puppet has no equilibrium there: a bad argument, the
    // same status in every front end (docs/service.md).
    std::string inputs;
    for (int k = 0; k < model.nk(); ++k)
      inputs += (k ? ", " : "") + model.kinematic[k].name + "=" + formatNumber(rho0[k]);
    throw FieldError("start", "no rest pose at the start inputs (" + inputs + "): " + rest.message);
  }
  StartState out{rest.q, Eigen::VectorXd::Zero(nd), rest.tension_N};
  std::vector<char> fixed(nd, 0);
  auto dynamicIndex = [&](const std::string& list, const std::string& name) {
    const int i = model.variableIndex(name);
    if (i < 0 || i >= nd)
      throw FieldError("start." + list + fieldKey(name),
                       "'" + name + "' is not a dynamic variable of '" + model.name + "' (" +
                           joinNames(itemNames(model.dynamic)) + ")");
    return i;
  };
  for (const auto& [name, value] : start.positions) {
    const int i = dynamicIndex("positions", name);
    out.q[i] = value;
    fixed[i] = 1;
  }
  for (const auto& [name, value] : start.velocities)
    out.qdot[dynamicIndex("velocities", name)] = value;
  if (!start.positions.empty()) {
    out.tension_N.setZero();
    if (!projectOntoStrings(model, out.q, rho0, fixed))
      throw FieldError("start.positions",
                       "no configuration with those joint values keeps every string within its "
                       "length; set fewer joints or change the inputs");
  }
  return out;
}

// ---- The loop ---------------------------------------------------------------------------

SimulationSummary simulate(const ModelPtr& model_ptr, const InputSchedule& inputs,
                           const SimulationOptions& opt, const SimulationRowFn& on_row) {
  const Model& model = *model_ptr;
  if (!(opt.dt_s > 0.0) || !std::isfinite(opt.dt_s)) throw FieldError("dt_s", "must be > 0 s");
  if (!(opt.duration_s >= 0.0) || !std::isfinite(opt.duration_s))
    throw FieldError("duration_s", "must be >= 0 s");
  if (!(opt.damping_scale >= 0.0)) throw FieldError("damping_scale", "must be >= 0");
  const int ns = model.nstrings();

  const Eigen::VectorXd rho0 = inputs.at(0.0);
  StartState start = resolveStart(model_ptr, rho0, opt.start,
                                  opt.integrator == IntegratorKind::VI ? opt.contacts : nullptr);
  Eigen::VectorXd &q = start.q, &qdot = start.qdot, &tension0 = start.tension_N;

  SimulationSummary sum;
  sum.min_tension_N = std::numeric_limits<double>::infinity();
  sum.energy_min_J = std::numeric_limits<double>::infinity();
  sum.energy_max_J = -std::numeric_limits<double>::infinity();
  const int steps = static_cast<int>(std::llround(opt.duration_s / opt.dt_s));
  Eigen::VectorXd rho = rho0, u(model.nk());
  SimulationRow row;
  row.rho = &rho;
  long newton_total = 0;
  int steps_done = 0;
  std::chrono::steady_clock::duration wall{};

  auto record = [&](int k, double energy, double violation, const Eigen::VectorXd& qk,
                    const Eigen::VectorXd& tension, int iterations) {
    row.t_s = k * opt.dt_s;
    row.q = &qk;
    row.tension_N = &tension;
    row.energy_J = energy;
    row.max_violation_m = violation;
    row.newton_iterations = iterations;
    sum.max_violation_m = std::max(sum.max_violation_m, violation);
    if (ns) sum.min_tension_N = std::min(sum.min_tension_N, tension.minCoeff());
    if (std::isfinite(energy)) {
      sum.energy_min_J = std::min(sum.energy_min_J, energy);
      sum.energy_max_J = std::max(sum.energy_max_J, energy);
    }
    return !on_row || on_row(row);
  };
  const double nan = std::numeric_limits<double>::quiet_NaN();
  DynamicsData scratch(model);  // energies and over-stretch outside the integrators

  // The step loop, the same for every integrator: `advance` steps x to the input u, filling
  // `rep`; `energy` gives the row's energy (NaN when not wanted).
  auto loop = [&](auto& x, StepReport& rep, auto&& advance, auto&& energy) {
    sum.energy_start_J = mechanicalEnergy(model, scratch, model.configuration(q, rho0), qdot);
    if (!record(0, sum.energy_start_J, maxOverStretch(model, scratch, model.configuration(q, rho0)),
                q, tension0, 0)) {
      sum.stopped = true;
      sum.energy_end_J = sum.energy_start_J;
      return;
    }
    for (int k = 1; k <= steps; ++k) {
      throwIfCancelled("simulation");
      const double t = k * opt.dt_s;
      inputs.at(t, u);
      const auto t0 = std::chrono::steady_clock::now();
      const StepStatus st = advance(u);
      wall += std::chrono::steady_clock::now() - t0;
      if (st == StepStatus::Unreachable && rep.unreachable_string >= 0)
        throw SimulationError(k, t,
                              std::string(toString(st)) + ": string '" +
                                  model.strings[rep.unreachable_string].name +
                                  "' cannot be that short (or its rig point that far) from here");
      if (st != StepStatus::Ok) throw SimulationError(k, t, toString(st));
      rho = x.rho;
      newton_total += rep.newton_iterations;
      const double e = energy(k == steps);
      if (std::isinf(e) || (std::isnan(e) && (opt.energy_every_row || k == steps)))
        throw SimulationError(k, t, "energy became non-finite (the method diverged)");
      if (k == steps) sum.energy_end_J = e;
      steps_done = k;
      if (!record(k, e, std::max(0.0, rep.max_violation_m), x.q, rep.tension_N,
                  rep.newton_iterations)) {
        sum.stopped = true;
        sum.energy_end_J = e;
        return;
      }
    }
    if (steps == 0) sum.energy_end_J = sum.energy_start_J;
  };

  if (opt.integrator == IntegratorKind::VI) {
    IntegratorOptions io;
    io.dt_s = opt.dt_s;
    io.damping_scale = opt.damping_scale;
    io.contacts = opt.contacts;
    if (opt.contacts)
      if (const std::string problem = contactsProblem(model, *opt.contacts); !problem.empty())
        throw FieldError("contacts", problem);
    VariationalIntegrator vi(model_ptr, io);
    State x = vi.stateFromVelocity(q, qdot, rho0);
    StepReport rep = vi.makeReport();
    if (opt.contacts) {  // (zero in the start's row)
      row.contact_force_N = &rep.contact_force_N;
      row.contact_friction_N = &rep.contact_friction_N;
    }
    loop(
        x, rep, [&](const Eigen::VectorXd& uk) { return vi.step(x, uk, x, &rep); },
        [&](bool) { return rep.energy_J; });  // the VI's step-midpoint energy, free
  } else {
    if (opt.contacts)
      throw FieldError("contacts", "only the vi integrator touches surfaces (" +
                                       std::string(toString(opt.integrator)) +
                                       " would pass through them)");
    const ExplicitMethod method =
        opt.integrator == IntegratorKind::Euler ? ExplicitMethod::Euler : ExplicitMethod::RK4;
    ExplicitIntegrator ei(model_ptr, method, opt.dt_s, opt.damping_scale);
    ContinuousState x{q, qdot, rho0, Eigen::VectorXd::Zero(model.nk())};
    StepReport rep;
    rep.tension_N.setZero(ns);
    rep.taut.assign(ns, 0);
    loop(
        x, rep, [&](const Eigen::VectorXd& uk) { return ei.step(x, uk, x, &rep); },
        [&](bool last) { return (opt.energy_every_row || last) ? ei.energy(x) : nan; });
  }
  sum.steps = steps_done;
  sum.wall_s = std::chrono::duration<double>(wall).count();
  sum.us_per_step = steps_done ? 1e6 * sum.wall_s / steps_done : 0.0;
  sum.newton_iterations_mean = steps_done ? static_cast<double>(newton_total) / steps_done : 0.0;
  if (!ns) sum.min_tension_N = 0.0;
  return sum;
}

}  // namespace marionette
