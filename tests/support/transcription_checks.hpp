// SPDX-License-Identifier: BSD-3-Clause
// What the transcription's tests share: setups from rest, inputs, and the checks of a problem's
// derivatives against central differences and of a solution against the integrator.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "marionette/environments/scene.hpp"
#include "marionette/models/integrator.hpp"
#include "marionette/models/rest_pose.hpp"
#include "marionette/plan/goal.hpp"
#include "transcription_problem.hpp"

namespace marionette::test {

using detail::TranscriptionProblem;
using detail::TranscriptionSetup;

inline Eigen::VectorXd full(const State& x) {
  Eigen::VectorXd q(x.q.size() + x.rho.size());
  q << x.q, x.rho;
  return q;
}

inline double relativeError(const Eigen::MatrixXd& a, const Eigen::MatrixXd& b) {
  return (a - b).cwiseAbs().maxCoeff() / std::max(b.cwiseAbs().maxCoeff(), 1e-12);
}

// A transcription from rest at the default inputs over `intervals` steps of 0.02 s.
inline TranscriptionSetup transcriptionFor(const ModelPtr& m, const std::string& goal,
                                           int intervals, const std::string& scene = "") {
  TranscriptionSetup s;
  s.model = m;
  s.integrator.dt_s = 0.02;
  const RestPose rest = computeRestPose(m, m->defaultInputs());
  EXPECT_TRUE(rest.ok) << rest.message;
  VariationalIntegrator vi(m, s.integrator);
  s.start = vi.stateFromVelocity(rest.q, Eigen::VectorXd::Zero(m->nd()), m->defaultInputs());
  s.intervals = intervals;
  s.goal = GoalSpec::parse(goal);
  if (!scene.empty()) s.collision = std::make_shared<CollisionModel>(m, loadScene(scene));
  return s;
}

// Rig inputs from the default ones to `end` by a quintic, then held (N+1 rows).
inline Eigen::MatrixXd quinticInputs(const ModelPtr& m, const Eigen::VectorXd& end, int intervals,
                                     int move_intervals) {
  Eigen::MatrixXd u(intervals + 1, m->nk());
  for (int k = 0; k <= intervals; ++k) {
    const double t = std::min(1.0, static_cast<double>(k) / move_intervals);
    const double s = t * t * t * (10 - 15 * t + 6 * t * t);
    u.row(k) = (m->defaultInputs() + s * (end - m->defaultInputs())).transpose();
  }
  return u;
}

// The objective's gradient and the rows' Jacobian at z against central differences.
inline void checkProblemDerivatives(TranscriptionProblem& p, const Eigen::VectorXd& z,
                                    const std::string& where) {
  p.evaluate(z, true);
  const Eigen::VectorXd grad = p.gradient(), g0 = p.rows();
  Eigen::MatrixXd J = Eigen::MatrixXd::Zero(p.constraints(), p.variables());
  std::vector<int> rows(p.jacobianNonzeros()), cols(p.jacobianNonzeros());
  p.jacobianStructure(rows.data(), cols.data());
  std::vector<double> values(p.jacobianNonzeros());
  p.jacobianValues(values.data());
  for (int n = 0; n < p.jacobianNonzeros(); ++n) J(rows[n], cols[n]) += values[n];
  Eigen::VectorXd zs, gs;
  p.scaling(zs, gs);
  Eigen::VectorXd grad_fd(p.variables());
  Eigen::MatrixXd J_fd(p.constraints(), p.variables());
  for (int i = 0; i < p.variables(); ++i) {
    const double h = 1e-6 / zs[i];  // the variable's own scale
    Eigen::VectorXd zp = z, zm = z;
    zp[i] += h;
    zm[i] -= h;
    p.evaluate(zp, false);
    const double fp = p.cost();
    const Eigen::VectorXd gp = p.rows();
    p.evaluate(zm, false);
    grad_fd[i] = (fp - p.cost()) / (2 * h);
    J_fd.col(i) = (gp - p.rows()) / (2 * h);
  }
  // Compared in the problem's scales: rows as the solver sees them.
  const Eigen::MatrixXd Js = gs.asDiagonal() * J * zs.cwiseInverse().asDiagonal();
  const Eigen::MatrixXd Js_fd = gs.asDiagonal() * J_fd * zs.cwiseInverse().asDiagonal();
  EXPECT_LE((Js - Js_fd).cwiseAbs().maxCoeff(), 1e-5 * std::max(1.0, Js_fd.cwiseAbs().maxCoeff()))
      << where << " Jacobian";
  const Eigen::VectorXd gsc = grad.cwiseQuotient(zs), gsc_fd = grad_fd.cwiseQuotient(zs);
  EXPECT_LE((gsc - gsc_fd).cwiseAbs().maxCoeff(),
            1e-5 * std::max(1.0, gsc_fd.cwiseAbs().maxCoeff()))
      << where << " gradient";
}

// The Lagrangian's gradient sigma grad f + J^T y at z.
inline Eigen::VectorXd lagrangianGradient(TranscriptionProblem& p, const Eigen::VectorXd& z,
                                          double sigma, const Eigen::VectorXd& y) {
  p.evaluate(z, true);
  std::vector<int> rows(p.jacobianNonzeros()), cols(p.jacobianNonzeros());
  std::vector<double> values(p.jacobianNonzeros());
  p.jacobianStructure(rows.data(), cols.data());
  p.jacobianValues(values.data());
  Eigen::VectorXd grad = sigma * p.gradient();
  for (int e = 0; e < p.jacobianNonzeros(); ++e) grad[cols[e]] += y[rows[e]] * values[e];
  return grad;
}

// The problem's Lagrangian Hessian at z in full (its lower triangle mirrored).
inline Eigen::MatrixXd lagrangianHessian(TranscriptionProblem& p, const Eigen::VectorXd& z,
                                         double sigma, const Eigen::VectorXd& y) {
  const int n = p.variables();
  p.evaluate(z, true);
  std::vector<int> rows(p.hessianNonzeros()), cols(p.hessianNonzeros());
  std::vector<double> values(p.hessianNonzeros());
  p.hessianStructure(rows.data(), cols.data());
  p.hessian(z, sigma, y, values.data());
  Eigen::MatrixXd H = Eigen::MatrixXd::Zero(n, n);
  for (int e = 0; e < p.hessianNonzeros(); ++e) {
    EXPECT_GE(rows[e], cols[e]);
    H(rows[e], cols[e]) += values[e];
    if (rows[e] != cols[e]) H(cols[e], rows[e]) += values[e];
  }
  return H;
}

// The same by central differences of lagrangianGradient, a step of 1e-6 in each variable's
// scale.
inline Eigen::MatrixXd lagrangianHessianByDifferences(TranscriptionProblem& p,
                                                      const Eigen::VectorXd& z, double sigma,
                                                      const Eigen::VectorXd& y) {
  const int n = p.variables();
  Eigen::MatrixXd H(n, n);
  Eigen::VectorXd zs, gs;
  p.scaling(zs, gs);
  for (int i = 0; i < n; ++i) {
    const double h = 1e-6 / zs[i];
    Eigen::VectorXd zp = z, zm = z;
    zp[i] += h;
    zm[i] -= h;
    H.col(i) =
        (lagrangianGradient(p, zp, sigma, y) - lagrangianGradient(p, zm, sigma, y)) / (2 * h);
  }
  return H;
}

// z solves p (the suspended mass to a point, from setup s): its inputs re-simulated by the exact
// step give its configurations, the mass stays where it ends when held a second, at the goal.
inline void expectTheIntegratorsMotionAtRest(const ModelPtr& mass, const TranscriptionSetup& s,
                                             const TranscriptionProblem& p,
                                             const Eigen::VectorXd& z) {
  const Eigen::MatrixXd u = p.inputs(z), q = p.configurations(z);
  VariationalIntegrator vi(mass, s.integrator);
  State x = s.start;
  double worst = 0.0;
  for (int k = 0; k < s.intervals; ++k) {
    ASSERT_EQ(vi.step(x, u.row(k + 1).transpose(), x), StepStatus::Ok);
    worst =
        std::max(worst, (x.q - q.row(k + 1).head(mass->nd()).transpose()).cwiseAbs().maxCoeff());
  }
  EXPECT_LE(worst, 1e-6);
  State held = x;
  for (int k = 0; k < 50; ++k) ASSERT_EQ(vi.step(held, x.rho, held), StepStatus::Ok);
  EXPECT_LE((held.q - x.q).cwiseAbs().maxCoeff(), 1e-6);
  GoalEvaluator goal(mass, s.goal);
  EXPECT_LE(goal.poseError(x.q, x.rho), 0.02);
}

}  // namespace marionette::test
