// SPDX-License-Identifier: BSD-3-Clause
#include "horizon_window.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "marionette/models/rest_pose.hpp"

namespace marionette::detail {

bool resimulates(VariationalIntegrator& vi, const State& x, const Eigen::MatrixXd& inputs,
                 Eigen::VectorXd* peak_N, Eigen::MatrixXd* configurations) {
  State at = x, next = vi.makeState();
  StepReport report = vi.makeReport();
  if (peak_N) peak_N->setZero(vi.model().nstrings());
  if (configurations) {
    configurations->resize(inputs.rows(), x.q.size());
    configurations->rowwise() = x.q.transpose();
  }
  for (Eigen::Index k = 1; k < inputs.rows(); ++k) {
    if (vi.step(at, inputs.row(k).transpose(), next, &report) != StepStatus::Ok) return false;
    if (peak_N) *peak_N = peak_N->cwiseMax(report.tension_N);
    at = next;
    if (configurations) configurations->bottomRows(inputs.rows() - k).rowwise() = at.q.transpose();
  }
  return true;
}

void clampToRigLimits(const Model& m, const Eigen::MatrixXd& before, int s0, int S, double dt,
                      double share, Eigen::MatrixXd& inputs) {
  for (int i = 0; i < m.nk(); ++i) {
    const KinematicVariable& v = m.kinematic[i];
    double previous = before(0, i), current = inputs(0, i);
    for (Eigen::Index k = 1; k < inputs.rows(); ++k) {
      const double speed = current - previous;                         // per step
      const int left = std::max(0, S - 1 - s0 - static_cast<int>(k));  // steps after this row
      double lo = v.lower, hi = v.upper;
      double step = std::numeric_limits<double>::infinity();
      if (std::isfinite(v.max_speed)) step = share * v.max_speed * dt;
      if (std::isfinite(v.max_accel) && v.max_accel > 0) {
        // Slowing by c a step, a step v goes v + v^2 / 2c - v / 2 before it stops (to c / 8):
        // the largest that stops before a bound D away.
        const double c = share * v.max_accel * dt * dt;
        auto stopsWithin = [&](double distance) {
          return c * (std::sqrt(0.25 + 2 * std::max(0.0, distance - c / 8) / c) - 0.5);
        };
        step = std::min(step, c * (left + 1));
        hi = std::min(hi, current + stopsWithin(v.upper - current));
        lo = std::max(lo, current - stopsWithin(current - v.lower));
      }
      lo = std::max(lo, current - step);
      hi = std::min(hi, current + step);
      if (std::isfinite(v.max_accel)) {
        const double change = share * v.max_accel * dt * dt;
        lo = std::max(lo, current + speed - change);
        hi = std::min(hi, current + speed + change);
      }
      double& value = inputs(k, i);
      // (lo > hi where the limits meet at one value, to rounding: that value.)
      value = lo <= hi ? std::clamp(value, lo, hi) : std::clamp(0.5 * (lo + hi), v.lower, v.upper);
      previous = current;
      current = value;
    }
  }
}

StringLoads stringLoads(const ModelPtr& model, const Eigen::VectorXd& rho) {
  const Model& m = *model;
  StringLoads out;
  out.loaded.assign(m.nstrings(), 0);
  if (m.nstrings() == 0) return out;
  const RestPose rest = computeRestPose(model, rho);
  if (!rest.ok || !(rest.tension_N.maxCoeff() > 0)) return out;
  out.max_tension_N = 2.5 * rest.tension_N.cwiseMax(0.1 * rest.tension_N.maxCoeff());
  for (int j = 0; j < m.nstrings(); ++j)
    out.loaded[j] = rest.tension_N[j] >= 0.01 * rest.tension_N.maxCoeff();
  return out;
}

Eigen::VectorXd staticLoads(const ModelPtr& model, const Eigen::VectorXd& rho0,
                            const std::optional<Eigen::VectorXd>& rho1) {
  Eigen::VectorXd load;
  for (const Eigen::VectorXd* rho : {&rho0, rho1 ? &*rho1 : nullptr}) {
    if (!rho) continue;
    const RestPose rest = computeRestPose(model, *rho);
    if (!rest.ok) continue;
    load = load.size() == 0 ? rest.tension_N : load.cwiseMax(rest.tension_N);
  }
  if (load.size() == 0 || !(load.maxCoeff() > 0)) return {};
  return load;
}

StringLoads ownStringLoads(const ModelPtr& model, const Eigen::VectorXd& rho_start,
                           const Eigen::VectorXd& rho_end) {
  constexpr double kJudgedLoad_N = 0.05;  // (plan_quality.cpp's kLoadedString_N)
  StringLoads out = stringLoads(model, rho_start);  // (loaded as at the start)
  out.strict = true;
  if (out.max_tension_N.size() == 0) return out;
  const Eigen::VectorXd load = staticLoads(model, rho_start, rho_end);
  for (Eigen::Index j = 0; j < load.size(); ++j)
    out.max_tension_N[j] = 2.5 * (load[j] >= kJudgedLoad_N ? load[j] : 0.1 * load.maxCoeff());
  return out;
}

std::vector<char> windowModes(TranscriptionProblem& problem, const Eigen::VectorXd& z0,
                              const std::vector<char>& loaded, int intervals) {
  std::vector<char> modes = problem.modesOf(z0);
  const int rows = problem.unilateralRows();
  for (std::size_t j = 0; j < loaded.size(); ++j) {
    if (!loaded[j]) continue;
    int first = 0;
    while (first < intervals && !modes[first * rows + j]) ++first;
    for (int k = first; k < intervals; ++k) modes[k * rows + j] = 1;
  }
  return modes;
}

WindowSolve solveWindow(TranscriptionSetup setup, const Eigen::MatrixXd& guess,
                        const StringLoads& loads, VariationalIntegrator& vi, int iterations,
                        NlpSolver solver, int halvings,
                        const std::function<void(Eigen::MatrixXd&)>& admissible,
                        const KeepGoing& keep_going) {
  constexpr double kStopReach = 0.1;        // the window's joint stops: those its warm start nears
  constexpr double kContactReach_m = 0.01;  // ... and its contacts
  constexpr double kStepShares[] = {1.0, 0.5, 0.25};
  const int shares = 1 + std::clamp(halvings, 0, 2);
  const Model& m = *setup.model;
  const State x = setup.start;
  setup.rest_knots = 0;
  setup.goal_rows = false;
  // (No goal rows: a goal the evaluator accepts, the first joint where it starts.)
  setup.goal = GoalSpec{};
  setup.goal.kind = GoalSpec::Kind::Joint;
  setup.goal.values.emplace_back(m.dynamic[0].name, x.q[0]);
  Eigen::VectorXd peak_N;
  Eigen::MatrixXd guess_q;
  const bool guess_resimulates = resimulates(vi, x, guess, &peak_N, &guess_q);
  if (loads.max_tension_N.size() > 0 && guess_resimulates)
    setup.max_tension_N =
        loads.strict ? loads.max_tension_N : loads.max_tension_N.cwiseMax(1.05 * peak_N);
  if (setup.integrator.contacts)
    setup.contact_rows = contactRowsNear(setup.model, *setup.integrator.contacts, guess_q, guess,
                                         kContactReach_m);
  setup.model = withStopsNear(setup.model, guess_q, kStopReach, setup.stops_held_off);
  TranscriptionProblem problem(setup);

  // What inputs cost, re-simulated by `vi` and by the transcription's rollout (infinite where a
  // step of either fails).
  auto resimulatedCost = [&](const Eigen::MatrixXd& inputs, bool by_vi) {
    if (!by_vi) return std::numeric_limits<double>::infinity();
    bool rolled_out = false;
    const Eigen::VectorXd z = problem.initialGuess(inputs, &rolled_out);
    if (!rolled_out) return std::numeric_limits<double>::infinity();
    problem.evaluate(z, false);
    return problem.cost();
  };
  bool z0_rolled_out = false;
  const Eigen::VectorXd z0 = problem.initialGuess(guess, &z0_rolled_out);
  problem.setModes(windowModes(problem, z0, loads.loaded, setup.intervals));
  problem.scaleObjectiveAt(z0);
  const InteriorPointResult solve = solveNlp(problem, z0, iterations, solver, keep_going);
  WindowSolve out;
  out.iterations = solve.iterations;
  out.inputs = guess;
  out.warm_cost = std::numeric_limits<double>::infinity();
  if (guess_resimulates && z0_rolled_out) {
    problem.evaluate(z0, false);
    out.warm_cost = problem.cost();
  }
  out.cost = out.warm_cost;
  out.solved = solve.z.size() > 0;
  if (!out.solved) return out;
  const Eigen::MatrixXd solved = problem.inputs(solve.z);
  for (int i = 0; i < shares; ++i) {
    const double share = kStepShares[i];
    Eigen::MatrixXd inputs =
        share == 1.0 ? solved : Eigen::MatrixXd(guess + share * (solved - guess));
    admissible(inputs);
    const double cost = resimulatedCost(inputs, resimulates(vi, x, inputs));
    if (cost < out.warm_cost) {
      out.inputs = std::move(inputs);
      out.cost = cost;
      out.kept_warm = false;
      out.step_share = share;
      break;
    }
  }
  return out;
}

}  // namespace marionette::detail
