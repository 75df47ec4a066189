// SPDX-License-Identifier: BSD-3-Clause
// What a step and its linearization cost, side by side in one run: the step with the Newton
// systems solved by the pivoting dense LU and by the joint tree's factorisation (the default,
// IntegratorOptions::tree_factorization), and the exact linearization (linearizeStep: A_k, B_k
// and the tensions' derivatives, the optimizer's and the filter's workload), each timed over the
// same 20 s of rig motion (bench_motion.hpp), alternately over several rounds.  Prints per round
// the microseconds per step of each, then the medians and the ratios tree / dense and
// linearization / tree step (the default).  The two steps' states are compared too (they must agree
// to round-off).  With --floor, also the tree step with the floor's contact rows
// (IntegratorOptions::contacts: every sphere and capsule end against the stage's floor), and its
// ratio to the step without: the rows' cost when nothing touches (the motion keeps the feet off
// the floor), whose states must be the same to the bit (exit 1 if not); and the step with the
// floor raised 1 cm above the puppet's lowest point at rest (let onto it over a second), so that
// its feet bear load, push and slide (with friction) as the rig moves: its ratio to the step
// without, and how many contacts touched and slid per step.  With --self, also the step with the
// floor and the puppet's links touching one another (addSelfContacts): its ratio to the step
// without, how many contacts touched and slid per step, and the ratio of its steps where nothing
// touched, timed one by one, to the step without's (what idle rows cost).
//
//   build/bin/bench_step_cost [--models marionette25,puppetcopter] [--dt 0.01] [--rounds 5]
//                             [--duration 20] [--floor] [--self]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "bench_motion.hpp"
#include "marionette/common/text.hpp"
#include "marionette/models/contact.hpp"
#include "marionette/models/dynamics.hpp"
#include "marionette/models/integrator.hpp"
#include "marionette/models/model_io.hpp"
#include "marionette/models/rest_pose.hpp"

using namespace marionette;

namespace {

constexpr double kRaise_m = 0.01;  // the floor above the puppet's lowest point at rest

struct Run {
  double us_per_step = 0.0;
  std::vector<State> states;             // x_0 .. x_n
  double touching = 0.0, sliding = 0.0;  // contacts per step, mean
  double substepped = 0.0;               // fraction of steps that took the substep fallback
  double at_once = 0.0;                  // fraction that took every row's mode at once
  // The steps where nothing touched (no contact taut, one solve, no substeps), timed one by one:
  // what idle contact rows cost.
  double idle_us_per_step = 0.0;
  double idle_fraction = 0.0;
};

// Steps through the schedule from x0, keeping every state; -1 us on a failed step.
Run runSteps(const ModelPtr& m, const InputSchedule& in, const State& x0,
             const IntegratorOptions& o) {
  VariationalIntegrator vi(m, o);
  Run r;
  State x = x0, next = vi.makeState();
  StepReport rep = vi.makeReport();
  const int n = static_cast<int>(in.values.rows()) - 1;
  r.states.reserve(n + 1);
  r.states.push_back(x);
  Eigen::VectorXd u(m->nk());
  const auto t0 = std::chrono::steady_clock::now();
  auto before = t0;
  double idle_s = 0.0;
  int idle_steps = 0;
  for (int k = 0; k < n; ++k) {
    u = in.values.row(k + 1).transpose();
    const StepStatus st = vi.step(x, u, next, &rep);
    const auto after = std::chrono::steady_clock::now();
    if (rep.contacts_active == 0 && rep.substeps == 1 && rep.modes_at_once == 0) {
      idle_s += std::chrono::duration<double>(after - before).count();
      ++idle_steps;
    }
    before = after;
    if (st != StepStatus::Ok) {
      std::fprintf(stderr, "bench_step_cost: step %d (t = %.2f s): %s\n", k + 1, (k + 1) * o.dt_s,
                   toString(st));
      return Run{-1.0, {}};
    }
    std::swap(x, next);
    r.states.push_back(x);
    r.touching += rep.contacts_active;
    r.sliding += rep.contacts_sliding;
    r.substepped += rep.substeps > 1;
    r.at_once += rep.modes_at_once > 0;
  }
  r.us_per_step =
      1e6 * std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / n;
  r.idle_us_per_step = idle_steps ? 1e6 * idle_s / idle_steps : 0.0;
  r.idle_fraction = static_cast<double>(idle_steps) / n;
  r.touching /= n;
  r.sliding /= n;
  r.substepped /= n;
  r.at_once /= n;
  return r;
}

// linearizeStep at every state of a run (each from the recorded state, as an optimizer does).
double runLinearizations(const ModelPtr& m, const InputSchedule& in, const std::vector<State>& xs,
                         const IntegratorOptions& o) {
  VariationalIntegrator vi(m, o);
  StepLinearization lin;
  const int n = static_cast<int>(xs.size()) - 1;
  Eigen::VectorXd u(m->nk());
  const auto t0 = std::chrono::steady_clock::now();
  for (int k = 0; k < n; ++k) {
    u = in.values.row(k + 1).transpose();
    if (vi.linearizeStep(xs[k], u, lin) != StepStatus::Ok) return -1.0;
  }
  return 1e6 * std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / n;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> models = {"marionette25", "puppetcopter"};
  double dt = 0.01, duration_s = 20.0;
  int rounds = 5;
  bool floor = false, self = false;
  for (int i = 1; i < argc; ++i) {
    const char* flag = argv[i];
    const auto value = [&]() -> const char* {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "bench_step_cost: %s needs a value\n", flag);
        std::exit(2);
      }
      return argv[++i];
    };
    if (!std::strcmp(flag, "--models")) {
      models = splitCommas(value());
    } else if (!std::strcmp(flag, "--dt")) {
      dt = std::atof(value());
    } else if (!std::strcmp(flag, "--rounds")) {
      rounds = std::atoi(value());
    } else if (!std::strcmp(flag, "--duration")) {
      duration_s = std::atof(value());
    } else if (!std::strcmp(flag, "--floor")) {
      floor = true;
    } else if (!std::strcmp(flag, "--self")) {
      self = true;
    } else {
      std::fprintf(stderr,
                   "bench_step_cost: unknown flag %s\nusage: bench_step_cost [--models a,b] "
                   "[--dt S] [--rounds N] [--duration S] [--floor] [--self]\n",
                   flag);
      return 2;
    }
  }
  if (!(dt > 0 && dt <= 0.1) || rounds < 1 || !(duration_s >= 1 && duration_s <= 600)) {
    std::fprintf(stderr,
                 "bench_step_cost: --dt in (0, 0.1] s, --rounds >= 1, --duration in [1, 600] s\n");
    return 2;
  }
  bool any_failed = false;
  for (const std::string& name : models) {
    ModelPtr m;
    try {
      m = loadModel(name);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "bench_step_cost: --models: %s\n", e.what());
      return 2;
    }
    const InputSchedule in = oscillatingInputs(*m, duration_s, duration_s, dt);
    const Eigen::VectorXd rho0 = in.values.row(0).transpose();
    const RestPose rest = computeRestPose(m, rho0);
    IntegratorOptions dense;
    dense.dt_s = dt;
    dense.tree_factorization = false;
    IntegratorOptions tree = dense;
    tree.tree_factorization = true;
    IntegratorOptions with_floor = tree;
    auto contacts = std::make_shared<Contacts>();
    contacts->points = contactPoints(*m);
    contacts->surfaces.push_back(floorSurface(*m));
    with_floor.contacts = contacts;
    IntegratorOptions with_self = tree;
    {
      auto both = std::make_shared<Contacts>(*contacts);
      addSelfContacts(*m, *both);
      with_self.contacts = both;
    }
    const State x0 = VariationalIntegrator(m, dense).stateFromVelocity(
        rest.q, Eigen::VectorXd::Zero(m->nd()), rho0);
    // The floor raised to the lowest contact point's bottom at rest, then 1 cm more over a second
    // in which the puppet, at rest inputs, settles onto it: its feet bear load from the start.
    IntegratorOptions on_floor = tree;
    State x_on = x0;
    {
      DynamicsData d(*m);
      Eigen::VectorXd q(m->nq());
      q << rest.q, rho0;
      forwardKinematics(*m, d, q);
      auto raised = std::make_shared<Contacts>(*contacts);
      ContactSurface& surface = raised->surfaces[0];
      double top = -1e300;
      for (const ContactPoint& p : raised->points)
        top = std::max(top, surface.offset_m + p.radius_m -
                                surface.normal.dot(pointPosition(d, p.frame, p.local_m)));
      surface.offset_m -= top;
      for (int k = 1; k <= 100; ++k) {
        surface.offset_m += kRaise_m / 100;  // (normal . x <= offset is solid: up is +offset)
        on_floor.contacts = std::make_shared<Contacts>(*raised);
        VariationalIntegrator settle(m, on_floor);
        if (const StepStatus st = settle.step(x_on, rho0, x_on); st != StepStatus::Ok) {
          std::fprintf(stderr, "bench_step_cost: %s: settling onto the floor: %s\n", name.c_str(),
                       toString(st));
          return 1;
        }
      }
      on_floor.contacts = raised;
    }
    std::printf("\n%s, dt = %g s, %g s of rig motion (n_d = %d, %d strings)\n", name.c_str(), dt,
                duration_s, m->nd(), m->nstrings());
    std::printf("| round | step, dense LU (us) | step, tree (us) | linearizeStep (us) |%s\n",
                floor ? " step, tree, the floor's contacts (us) | step, on the floor (us) |" : "");
    std::printf("| --- | --- | --- | --- |%s\n", floor ? " --- | --- |" : "");
    std::vector<double> d_us, t_us, l_us, tree_ratio, lin_ratio, f_us, floor_ratio, o_us, on_ratio,
        s_us, self_ratio, idle_ratio;
    Run on, sf;
    bool on_failed = false;
    double max_dq = 0.0;
    bool floor_same = true;
    for (int r = 1; r <= rounds; ++r) {
      Run d, t, f;
      if (r % 2) {
        d = runSteps(m, in, x0, dense);
        t = runSteps(m, in, x0, tree);
        if (floor) f = runSteps(m, in, x0, with_floor);
        if (floor) on = runSteps(m, in, x_on, on_floor);
        if (self) sf = runSteps(m, in, x0, with_self);
      } else {
        if (self) sf = runSteps(m, in, x0, with_self);
        if (floor) on = runSteps(m, in, x_on, on_floor);
        if (floor) f = runSteps(m, in, x0, with_floor);
        t = runSteps(m, in, x0, tree);
        d = runSteps(m, in, x0, dense);
      }
      if (floor && f.us_per_step < 0) {
        std::fprintf(stderr, "bench_step_cost: %s: a step with the floor failed\n", name.c_str());
        return 1;
      }
      if (floor && on.us_per_step < 0) {  // reported, and the other columns go on
        on_failed = true;
        on.us_per_step = std::numeric_limits<double>::quiet_NaN();
      }
      if (self && sf.us_per_step < 0) {
        std::fprintf(stderr, "bench_step_cost: %s: a step with self-contact failed\n",
                     name.c_str());
        return 1;
      }
      if (self) {
        s_us.push_back(sf.us_per_step);
        self_ratio.push_back(sf.us_per_step / t.us_per_step);
        idle_ratio.push_back(sf.idle_us_per_step / t.idle_us_per_step);
      }
      if (d.us_per_step < 0 || t.us_per_step < 0) {
        std::fprintf(stderr, "bench_step_cost: %s: a step failed\n", name.c_str());
        return 1;
      }
      const double l = runLinearizations(m, in, t.states, tree);
      if (l < 0) {
        std::fprintf(stderr, "bench_step_cost: %s: a linearization failed\n", name.c_str());
        return 1;
      }
      for (std::size_t k = 0; k < d.states.size(); ++k)
        max_dq = std::max(max_dq, (d.states[k].q - t.states[k].q).cwiseAbs().maxCoeff());
      d_us.push_back(d.us_per_step);
      t_us.push_back(t.us_per_step);
      l_us.push_back(l);
      tree_ratio.push_back(t.us_per_step / d.us_per_step);
      lin_ratio.push_back(l / t.us_per_step);
      std::printf("| %d | %.2f | %.2f | %.2f |", r, d.us_per_step, t.us_per_step, l);
      if (floor) {
        for (std::size_t k = 0; k < t.states.size(); ++k)
          floor_same &= f.states[k].q == t.states[k].q && f.states[k].p == t.states[k].p;
        f_us.push_back(f.us_per_step);
        floor_ratio.push_back(f.us_per_step / t.us_per_step);
        o_us.push_back(on.us_per_step);
        on_ratio.push_back(on.us_per_step / t.us_per_step);
        std::printf(" %.2f | %.2f |", f.us_per_step, on.us_per_step);
      }
      std::printf("\n");
      std::fflush(stdout);
    }
    std::printf(
        "%s: step %.2f us (dense LU), %.2f us (tree): ratio %.2f; linearizeStep %.2f us = %.2f "
        "tree steps; the two steps' trajectories differ by at most %.1e (rad or m)\n",
        name.c_str(), median(d_us), median(t_us), median(tree_ratio), median(l_us),
        median(lin_ratio), max_dq);
    if (floor)
      std::printf(
          "%s: with the floor's %d contact rows, %.2f us: ratio %.2f to the tree step; "
          "states %s\n",
          name.c_str(), contacts->rows(), median(f_us), median(floor_ratio),
          floor_same ? "the same to the bit" : "DIFFERENT (a contact touched)");
    if (floor && on_failed)
      std::printf("%s: on the floor: FAILED (a step did not converge, above)\n", name.c_str());
    else if (floor)
      std::printf(
          "%s: on the floor, %.2f us: ratio %.2f to the tree step; per step %.2f "
          "contacts touching, %.2f sliding; %.1f %% of steps took every row's mode at once, "
          "%.1f %% substepped\n",
          name.c_str(), median(o_us), median(on_ratio), on.touching, on.sliding, 100.0 * on.at_once,
          100.0 * on.substepped);
    if (self)
      std::printf(
          "%s: with the floor and its links touching one another (%d contact rows), %.2f us: "
          "ratio %.2f to the tree step; per step %.2f contacts touching, %.2f sliding; the "
          "steps where nothing touched (%.1f %%), ratio %.2f to the tree step's\n",
          name.c_str(), with_self.contacts->rows(), median(s_us), median(self_ratio), sf.touching,
          sf.sliding, 100.0 * sf.idle_fraction, median(idle_ratio));
    any_failed |= on_failed;
    if (!floor_same) return 1;
  }
  return any_failed ? 1 : 0;
}
