// SPDX-License-Identifier: BSD-3-Clause
// Running a simulation: an input schedule for the rig, a start state, and the step loop for any
// of the integrators (the VI, or the Euler / RK4 baselines).  Used by `marionette simulate` and
// by the integrator benchmark.
//
// Contents
//   InputsFileError     a bad inputs CSV, naming its file and line.
//   InputSchedule       rig setpoints over time: CSV "t,<kinematic names...>", linearly
//                       interpolated, held constant outside the given times.
//   StartSpec           rest pose of the initial inputs, optionally with some joints set.
//   SimulationOptions   integrator, dt, duration, damping scale.
//   simulate()          runs it; calls back once per row (t = 0 and after every step).
//   SimulationError     a failed step: names the step and the time.
#pragma once

#include <Eigen/Core>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "marionette/models/contact.hpp"
#include "marionette/models/error.hpp"
#include "marionette/models/field_error.hpp"
#include "marionette/models/model.hpp"

#pragma GCC visibility push(default)  // the library's API (docs/design.md, layout)

namespace marionette {

// A bad inputs CSV: what() is "SOURCE:LINE: problem" (no library field: field() is "").
class InputsFileError : public ErrorOf<std::invalid_argument> {
 public:
  using ErrorOf<std::invalid_argument>::ErrorOf;
};

class InputSchedule {
 public:
  // Every kinematic variable held at its default.
  static InputSchedule constant(const Model& model);
  // Parses CSV text (a UTF-8 byte-order mark is skipped); throws InputsFileError, which names
  // the file and line ("inputs.csv:3: column 'x': ...") and includes problem()'s.
  static InputSchedule fromCsv(const Model& model, const std::string& text,
                               const std::string& source);
  static InputSchedule fromCsvFile(const Model& model, const std::string& path);
  // Where the schedule moves a motor faster than its max_speed (which a real rig cannot follow):
  // one message per column, naming it, the time and the speed.
  std::vector<std::string> speedWarnings(const Model& model) const;
  // The rules every front end applies to a schedule, whatever it came from (a CSV file, a
  // request): at least one row and at most maxRows(model); times finite, >= 0 and strictly
  // increasing; values finite and inside each variable's range.  The first problem, or none.
  static constexpr int kMaxRows = 1000000;
  // At most kMaxCells values (rows x kinematic variables, 80 MB of doubles) in one schedule.
  static constexpr long kMaxCells = 10000000;
  static int maxRows(const Model& model);
  struct Problem {
    int row = -1;       // the row at fault (-1: the schedule as a whole)
    int variable = -1;  // its kinematic index (-1: the time)
    std::string message;
  };
  std::optional<Problem> problem(const Model& model) const;

  // Rig setpoints at time t (n_k).
  Eigen::VectorXd at(double t_s) const;
  void at(double t_s, Eigen::VectorXd& out) const;  // no allocation when out is sized

  std::vector<double> times_s;  // strictly increasing (empty = constant)
  Eigen::MatrixXd values;       // times x n_k
  Eigen::VectorXd defaults;     // n_k
};

struct StartSpec {
  bool from_rest = true;                                   // rest pose of the inputs at t = 0
  std::vector<std::pair<std::string, double>> positions;   // dynamic variables set (rad or m)
  std::vector<std::pair<std::string, double>> velocities;  // their rates (rad/s or m/s)
};

// The start configuration for inputs rho0 (n_k): q (n_d), qdot (n_d) and the static tensions
// (n_s; zero when joints were set).  The rest pose stands on `contacts` (RestPoseOptions::
// contacts: a scene's floor, its own links; the dynamics' IntegratorOptions::contacts) when
// given.  Throws FieldError on a bad specification ("start.positions[\"theta9\"]") and when the
// inputs have no rest pose ("start").
struct StartState {
  Eigen::VectorXd q, qdot, tension_N;
};
StartState resolveStart(const ModelPtr& model, const Eigen::VectorXd& rho0, const StartSpec& start,
                        const std::shared_ptr<const Contacts>& contacts = nullptr);

enum class IntegratorKind { VI, Euler, RK4 };
// "vi" | "euler" | "rk4"; FieldError("integrator", ...) otherwise.
IntegratorKind parseIntegratorKind(const std::string& name);
const char* toString(IntegratorKind k);

struct SimulationOptions {
  IntegratorKind integrator = IntegratorKind::VI;
  double dt_s = 0.01;
  double duration_s = 5.0;
  double damping_scale = 1.0;
  StartSpec start;
  bool energy_every_row = true;  // baselines: an energy costs a Lagrangian sweep per row
  // Surfaces the puppet touches (the vi integrator's IntegratorOptions::contacts; a scene's:
  // sceneContacts).  Null: nothing to touch.  The baselines refuse them (FieldError "contacts").
  std::shared_ptr<const Contacts> contacts;
};

struct SimulationRow {
  double t_s = 0.0;
  const Eigen::VectorXd* q = nullptr;          // n_d
  const Eigen::VectorXd* rho = nullptr;        // n_k
  const Eigen::VectorXd* tension_N = nullptr;  // n_s (over the step ending at t; at t = 0 the
                                               // static tension of the start)
  double energy_J = 0.0;  // J; the VI reports its step's midpoint energy; NaN when not computed
  double max_violation_m = 0.0;
  int newton_iterations = 0;
  // With contacts, per contact row (Contacts: surface-major) over the step ending at t (0 at
  // t = 0): its normal force (N) and its friction force in the world frame (N).  Else null.
  const Eigen::VectorXd* contact_force_N = nullptr;
  const Eigen::Matrix3Xd* contact_friction_N = nullptr;
};

struct SimulationSummary {
  int steps = 0;         // steps taken (fewer than asked for when the row callback stopped it)
  bool stopped = false;  // the row callback said stop
  double wall_s = 0.0;   // integration only
  double us_per_step = 0.0;
  double newton_iterations_mean = 0.0;
  double max_violation_m = 0.0;  // over all rows
  double min_tension_N = 0.0;    // over all strings and rows
  double energy_start_J = 0.0;
  double energy_end_J = 0.0;
  double energy_min_J = 0.0;  // over rows, when energies are computed every row
  double energy_max_J = 0.0;
};

class SimulationError : public ErrorOf<std::runtime_error> {
 public:
  SimulationError(int step, double t_s, const std::string& message);
  int step() const { return step_; }
  double time_s() const { return t_s_; }

 private:
  int step_;
  double t_s_;
};

// Called once per row; returns whether to go on (false ends the run after this row).
using SimulationRowFn = std::function<bool(const SimulationRow&)>;

// Runs the simulation; throws SimulationError on a failed step, FieldError (field_error.hpp) on
// a bad option or start specification (naming the field: "dt_s", "start.positions[...]").
SimulationSummary simulate(const ModelPtr& model, const InputSchedule& inputs,
                           const SimulationOptions& options, const SimulationRowFn& on_row = {});

}  // namespace marionette

#pragma GCC visibility pop
