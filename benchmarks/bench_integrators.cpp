// SPDX-License-Identifier: BSD-3-Clause
// Integrator benchmark: for every built-in model, the VI and the Euler / RK4 baselines, at
// dt = 10 ms and 1/30 s, a fixed 60 s motion: the rig moves for 20 s (every input oscillates
// about its default under a smooth envelope), then holds still for 40 s.  Undamped, so the hold
// shows each method's energy behaviour.  Reports microseconds per step (integration only),
// Newton iterations per step, the largest string over-stretch, and the energy change and span
// over the hold (an inelastic string catch in the hold also shows there, as it should).
//
//   build/bin/bench_integrators [--duration S] [--models a,b,...] [--repeats N] [--json]
// Timings are the median (and minimum) of N runs (default 3).  BENCH_DAMPING=X in the environment
// scales the models' joint damping (default 0: undamped).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "bench_motion.hpp"
#include "marionette/common/text.hpp"
#include "marionette/models/model_io.hpp"
#include "marionette/models/simulation.hpp"

using namespace marionette;

namespace {

// The over-stretch beyond which a run is reported diverged (the built-in puppets are ~1 m tall).
constexpr double kDivergedStretch_m = 1.0;

struct Result {
  std::string model, integrator, status = "ok";
  double dt = 0, us_per_step = 0, us_min = 0, newton = 0, max_violation = 0, dE_hold = 0,
         span_hold = 0;
  double energy_scale = 0;
};

// One simulation; `repeats` > 1 reruns it and keeps the median time (the machine is shared and
// its timing noisy; the physics of the reruns is identical).
Result run(const ModelPtr& m, IntegratorKind kind, double dt, double duration, int repeats) {
  Result r;
  r.model = m->name;
  r.integrator = toString(kind);
  r.dt = dt;
  const double move_s = duration / 3.0;
  const InputSchedule in = oscillatingInputs(*m, move_s, duration, dt);
  SimulationOptions opt;
  opt.integrator = kind;
  opt.dt_s = dt;
  opt.duration_s = duration;
  opt.damping_scale = std::getenv("BENCH_DAMPING") ? std::atof(std::getenv("BENCH_DAMPING")) : 0.0;
  double e_hold_start = NAN, e_min = INFINITY, e_max = -INFINITY, e_last = NAN;
  try {
    const SimulationSummary s = simulate(m, in, opt, [&](const SimulationRow& row) {
      if (row.t_s >= move_s - 1e-9) {
        if (std::isnan(e_hold_start)) e_hold_start = row.energy_J;
        e_min = std::min(e_min, row.energy_J);
        e_max = std::max(e_max, row.energy_J);
        e_last = row.energy_J;
      }
      return true;
    });
    std::vector<double> times{s.us_per_step};
    for (int k = 1; k < repeats; ++k) times.push_back(simulate(m, in, opt).us_per_step);
    std::sort(times.begin(), times.end());
    r.us_per_step = times[times.size() / 2];
    r.us_min = times.front();
    r.newton = s.newton_iterations_mean;
    r.max_violation = s.max_violation_m;
    r.dE_hold = e_last - e_hold_start;
    r.span_hold = e_max - e_min;
    r.energy_scale = std::abs(s.energy_start_J);
    // A run that never failed a step can still have left the physics: a string a metre longer
    // than itself (the suspended mass under Euler at 1/30 s: 2.75e13 m) is a divergence.
    if (!(r.max_violation <= kDivergedStretch_m) || !std::isfinite(r.span_hold)) {
      std::ostringstream os;
      os << "diverged: a string over-stretched by " << r.max_violation << " m";
      r.status = os.str();
    }
  } catch (const SimulationError& e) {
    std::ostringstream os;
    os << "failed: " << e.what();
    r.status = os.str();
  } catch (const std::exception& e) {
    r.status = std::string("error: ") + e.what();
  }
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  double duration = 60.0;
  int repeats = 3;
  bool json = false;
  std::vector<std::string> models = builtinModelNames();
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--duration") && i + 1 < argc) {
      duration = std::atof(argv[++i]);
    } else if (!std::strcmp(argv[i], "--repeats") && i + 1 < argc) {
      repeats = std::max(1, std::atoi(argv[++i]));
    } else if (!std::strcmp(argv[i], "--json")) {
      json = true;
    } else if (!std::strcmp(argv[i], "--models") && i + 1 < argc) {
      models = splitCommas(argv[++i]);
    } else {
      std::cerr
          << "usage: bench_integrators [--duration S] [--models a,b] [--repeats N] [--json]\n";
      return 2;
    }
  }
  if (!json)
    std::printf("%-15s %-6s %-8s %10s %8s %8s %12s %12s %12s  %s\n", "model", "method", "dt_s",
                "us/step", "us_min", "newton", "max_viol_m", "dE_hold_J", "span_hold_J", "status");
  bool first = true;
  if (json) std::printf("[\n");
  for (const std::string& name : models) {
    const ModelPtr m = loadModel(name);
    for (double dt : {0.01, 1.0 / 30.0}) {
      for (IntegratorKind k : {IntegratorKind::VI, IntegratorKind::Euler, IntegratorKind::RK4}) {
        const Result r = run(m, k, dt, duration, repeats);
        if (json) {
          std::printf(
              "%s  {\"model\": \"%s\", \"integrator\": \"%s\", \"dt\": %.6g, "
              "\"us_per_step\": %.4g, \"us_min\": %.4g, \"newton_iterations\": %.4g, "
              "\"max_violation_m\": %.4g, \"energy_change_hold_J\": %.4g, "
              "\"energy_span_hold_J\": %.4g, \"status\": \"%s\"}",
              first ? "" : ",\n", r.model.c_str(), r.integrator.c_str(), r.dt, r.us_per_step,
              r.us_min, r.newton, r.max_violation, r.dE_hold, r.span_hold, r.status.c_str());
        } else if (r.status == "ok") {
          std::printf("%-15s %-6s %-8.5f %10.2f %8.2f %8.2f %12.3g %12.3g %12.3g  %s\n",
                      r.model.c_str(), r.integrator.c_str(), r.dt, r.us_per_step, r.us_min,
                      r.newton, r.max_violation, r.dE_hold, r.span_hold, r.status.c_str());
        } else {
          std::printf("%-15s %-6s %-8.5f %10s %8s %8s %12s %12s %12s  %s\n", r.model.c_str(),
                      r.integrator.c_str(), r.dt, "-", "-", "-", "-", "-", "-", r.status.c_str());
        }
        std::fflush(stdout);
        first = false;
      }
    }
  }
  if (json) std::printf("\n]\n");
  return 0;
}
