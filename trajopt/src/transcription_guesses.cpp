// SPDX-License-Identifier: BSD-3-Clause
// TranscriptionProblem's initial guesses: the integrator's rollout of rig inputs, or the rest
// poses along them (transcription_problem.hpp), with their multipliers; and what of the model a
// guess comes near (its stops and contact rows).
#include <algorithm>

#include "marionette/models/contact_rows.hpp"
#include "transcription_problem.hpp"

namespace marionette::detail {
namespace {

constexpr double kTouching_m = 1e-6;  // a guess's contact this near (or inside) touches

}  // namespace

// `model` with only the joint stops that `configurations` (rows of n_d) come within `reach`
// (rad or m) of as unilateral rows; the others into held_off.  A stop the motion never nears
// costs the transcription a multiplier per knot and nothing else: kept off as a bound, it is
// neither a variable nor a force.
ModelPtr withStopsNear(const ModelPtr& model, const Eigen::MatrixXd& configurations, double reach,
                       std::vector<Model::StopRow>& held_off) {
  held_off.clear();
  if (model->stops.empty()) return model;
  auto reduced = std::make_shared<Model>(*model);
  reduced->stops.clear();
  for (const Model::StopRow& stop : model->stops) {
    const double nearest =
        (stop.sign * (stop.bound - configurations.col(stop.variable).array())).minCoeff();
    (nearest < reach ? reduced->stops : held_off).push_back(stop);
  }
  return reduced;
}

// The rows of `contacts` whose gap comes within reach_m of touching at some knot of a motion
// (configurations, rows of n_d; its inputs, rows of n_k): the transcription's contact rows.  A
// row never near would cost it 19 rows and 4 variables per step and nothing else: the re-simulation
// still touches there if the solver's motion does.  A capsule's middle is near where it would take
// part in the integrator's step (ContactRows::partGap: deeper than its ends).
std::vector<int> contactRowsNear(const ModelPtr& model, const Contacts& contacts,
                                 const Eigen::MatrixXd& configurations,
                                 const Eigen::MatrixXd& inputs, double reach_m) {
  ContactRows rows(*model, contacts);
  DynamicsData data(*model);
  std::vector<char> near(contacts.rows(), 0);
  for (Eigen::Index k = 0; k < configurations.rows(); ++k) {
    const Eigen::Index input = std::min(k, inputs.rows() - 1);
    forwardKinematics(
        *model, data,
        model->configuration(configurations.row(k).transpose(), inputs.row(input).transpose()));
    for (int r = 0; r < contacts.rows(); ++r)
      if (!near[r] && rows.partGap(data, r) > -reach_m) near[r] = 1;
  }
  std::vector<int> out;
  for (int r = 0; r < contacts.rows(); ++r)
    if (near[r]) out.push_back(r);
  return out;
}

// The configurations (rows of n_d) of the integrator's rollout of `inputs` from `start`; a step
// that fails holds the last.
Eigen::MatrixXd rolloutConfigurations(const ModelPtr& model, const State& start,
                                      const Eigen::MatrixXd& inputs, const IntegratorOptions& io) {
  Eigen::MatrixXd out(inputs.rows(), model->nd());
  VariationalIntegrator vi(model, io);
  State x = start, next = vi.makeState();
  out.row(0) = x.q.transpose();
  for (Eigen::Index k = 1; k < inputs.rows(); ++k) {
    if (vi.step(x, inputs.row(k).transpose(), next) == StepStatus::Ok) x = next;
    out.row(k) = x.q.transpose();
  }
  return out;
}

Eigen::VectorXd TranscriptionProblem::initialGuess(const Eigen::MatrixXd& inputs,
                                                   bool* resimulated) {
  const double dt = setup_.integrator.dt_s;
  VariationalIntegrator vi(setup_.model, setup_.integrator);
  State x = setup_.start, next = vi.makeState();
  StepReport report = vi.makeReport();
  Eigen::VectorXd z = Eigen::VectorXd::Zero(n_z_);
  if (resimulated) *resimulated = true;
  KnotConstraints here;  // at knot k: its spans for step k's multipliers
  Eigen::VectorXd q(nq_);
  knotConfiguration(z, 0, q);
  mechanics_.knot(q, nullptr, here);
  for (int k = 0; k < N_; ++k) {
    const Eigen::VectorXd u = inputs.row(std::min<Eigen::Index>(k + 1, inputs.rows() - 1));
    if (vi.step(x, u, next, &report) == StepStatus::Ok) {
      for (int j = 0; j < ns_; ++j)
        z[lambdaAt(k) + j] = DiscreteMechanics::multiplier(report.tension_N[j], here.span_m[j], dt);
      // A contact's normal force, and its friction (world, on its point: -B beta / dt) in its
      // slip basis at x_k.
      for (int t = 0; t < nt_; ++t) {
        const int row = mechanics_.contactRow(t);
        z[lambdaAt(k) + ns_ + t] = report.contact_force_N[row] * dt;
        const Eigen::Matrix<double, 3, 2> world_basis =
            here.rotation.middleCols(3 * t, 3) * here.basis.middleCols(2 * t, 2);
        z.segment(frictionAt(k) + 2 * t, 2) =
            -dt * world_basis.transpose() * report.contact_friction_N.col(row);
      }
      x = next;
    } else {
      x.rho = u;  // held where it was
      if (resimulated) *resimulated = false;
    }
    z.segment(xAt(k + 1), nq_) << x.q, x.rho;
    knotConfiguration(z, k + 1, q);
    mechanics_.knot(q, nullptr, here);
    z.segment(slackAt(k), nu_) = (-here.g.head(nu_)).cwiseMax(0.0);
  }
  setStopMultipliers(z);
  setSecondDifferences(z);
  return z;
}

Eigen::VectorXd TranscriptionProblem::quasiStaticGuess(const Eigen::MatrixXd& inputs,
                                                       const Eigen::MatrixXd& rest_q,
                                                       const Eigen::MatrixXd& tension_N) {
  const double dt = setup_.integrator.dt_s;
  Eigen::VectorXd z = Eigen::VectorXd::Zero(n_z_);
  KnotConstraints here;
  Eigen::VectorXd q(nq_);
  knotConfiguration(z, 0, q);
  mechanics_.knot(q, nullptr, here);
  for (int k = 0; k < N_; ++k) {
    const Eigen::Index row = std::min<Eigen::Index>(k + 1, inputs.rows() - 1);
    for (int j = 0; j < ns_; ++j)
      z[lambdaAt(k) + j] = DiscreteMechanics::multiplier(tension_N(row, j), here.span_m[j], dt);
    z.segment(xAt(k + 1), nq_) << rest_q.row(row).transpose(), inputs.row(row).transpose();
    knotConfiguration(z, k + 1, q);
    mechanics_.knot(q, nullptr, here);
    z.segment(slackAt(k), nu_) = (-here.g.head(nu_)).cwiseMax(0.0);
    for (int t = 0; t < nt_; ++t)
      if (here.g[ns_ + t] > -kTouching_m) z[lambdaAt(k) + ns_ + t] = 1e-3 * lambda_ref_[ns_ + t];
  }
  setStopMultipliers(z);
  setSecondDifferences(z);
  return z;
}

void TranscriptionProblem::setSecondDifferences(Eigen::VectorXd& z) const {
  auto rho = [&](int k, int i) {
    if (k >= 1) return z[xAt(k) + nd_ + i];
    if (k < 0 && setup_.rig_before.size() > 0) return setup_.rig_before(-k - 1, i);
    return setup_.start.rho[i];
  };
  for (int k = 0; k < N_; ++k)
    for (int i = 0; i < nk_; ++i)
      z[accelAt(k) + i] = rho(k + 1, i) - 2 * rho(k, i) + rho(k - 1, i);
}

void TranscriptionProblem::setStopMultipliers(Eigen::VectorXd& z) {
  // The stops' multipliers: what their variables' DEL rows still need (>= 0) at the stops the
  // next knot rests on.
  const double dt = setup_.integrator.dt_s;
  KnotConstraints here;
  Eigen::VectorXd q(nq_);
  IntervalTerms before, after;
  KnotConstraints next_knot;
  Eigen::VectorXd q_prev(nq_), q_next(nq_);
  for (int k = 0; k < N_ && nc_ > nu_; ++k) {
    knotConfiguration(z, k, q);
    knotConfiguration(z, k + 1, q_next);
    mechanics_.interval(q, q_next, dt, after, false);
    mechanics_.knot(q, nullptr, here);
    mechanics_.knot(q_next, nullptr, next_knot);
    Eigen::VectorXd residual = setup_.start.p + after.D1;
    if (k > 0) {
      knotConfiguration(z, k - 1, q_prev);
      mechanics_.interval(q_prev, q, dt, before, false);
      residual = before.D2 + after.D1;
    }
    residual -= here.G.topRows(nu_).leftCols(nd_).transpose() * z.segment(lambdaAt(k), nu_);
    residual -= here.F.leftCols(nd_).transpose() * z.segment(frictionAt(k), 2 * nt_);
    for (int r = 0; r < nc_ - nu_; ++r) {
      const Model::StopRow& stop = setup_.model->stops[r];
      if (next_knot.g[nu_ + r] < -1e-9) continue;
      z[lambdaAt(k) + nu_ + r] = std::max(0.0, residual[stop.variable] * stop.sign);
    }
  }
}

}  // namespace marionette::detail
