// SPDX-License-Identifier: BSD-3-Clause
#include "marionette/control/tracking_lqr.hpp"

#include <Eigen/Cholesky>
#include <cmath>
#include <string>

#include "marionette/common/text.hpp"
#include "marionette/models/cancel.hpp"
#include "marionette/models/dynamics.hpp"
#include "marionette/models/field_error.hpp"
#include "marionette/models/simulation.hpp"

namespace marionette::control {

TrajectoryLinearization linearizeTrajectory(const ModelPtr& model, const Eigen::MatrixXd& inputs,
                                            const State& start, const IntegratorOptions& options) {
  if (inputs.cols() != model->nk() || inputs.rows() < 1)
    throw FieldError("inputs", "needs at least one row of " + std::to_string(model->nk()) +
                                   " values");
  VariationalIntegrator vi(model, options);
  TrajectoryLinearization out;
  out.dt_s = options.dt_s;
  out.x.reserve(inputs.rows());
  out.x.push_back(start);
  StepLinearization lin;
  out.taut.emplace_back(model->nstrings(), 0);
  for (Eigen::Index k = 0; k + 1 < inputs.rows(); ++k) {
    throwIfCancelled("linearization");
    const StepStatus st = vi.linearizeStep(out.x.back(), inputs.row(k + 1).transpose(), lin);
    if (st != StepStatus::Ok)
      throw SimulationError(static_cast<int>(k), k * options.dt_s,
                            std::string("the plan's step has no linearization (") +
                                toString(st) + ")");
    out.x.push_back(lin.next);
    out.A.push_back(lin.A);
    out.B.push_back(lin.B);
    out.taut.push_back(lin.report.taut);
    if (k == 0) out.taut[0] = lin.report.taut;
  }
  return out;
}

Eigen::VectorXd feasibleDeviation(const Model& model, DynamicsData& d, const State& x,
                                  const State& ref, const std::vector<char>& taut) {
  const int nd = model.nd(), nk = model.nk();
  Eigen::VectorXd dx(2 * nd + nk);
  dx << x.q - ref.q, x.p - ref.p, x.rho - ref.rho;
  std::vector<int> rows;
  for (int j = 0; j < model.nstrings(); ++j)
    if (j < static_cast<int>(taut.size()) && taut[j]) rows.push_back(j);
  if (rows.empty()) return dx;
  const Eigen::VectorXd q = model.configuration(ref.q, ref.rho);
  forwardKinematics(model, d, q);
  computeStrings(model, d, q, false);
  computeLagrangian(model, d, q, Eigen::VectorXd::Zero(nd), LagrangianOrder::MassMatrix);
  const int m = static_cast<int>(rows.size());
  Eigen::MatrixXd Gq(m, nd), Gr(m, nk);
  for (int i = 0; i < m; ++i) {
    Gq.row(i) = d.Dh.row(rows[i]).head(nd);
    Gr.row(i) = d.Dh.row(rows[i]).tail(nk);
  }
  const Eigen::LLT<Eigen::MatrixXd> Mllt(d.M);
  const Eigen::MatrixXd MinvGt = Mllt.solve(Gq.transpose());  // nd x m
  const Eigen::LDLT<Eigen::MatrixXd> S(Gq * MinvGt);
  // dq -= M^-1 G^T S^-1 (G_q dq + G_rho drho);  dp -= G^T S^-1 G M^-1 dp.
  dx.head(nd) -= MinvGt * S.solve(Gq * dx.head(nd) + Gr * dx.tail(nk));
  dx.segment(nd, nd) -= Gq.transpose() * S.solve(MinvGt.transpose() * dx.segment(nd, nd));
  return dx;
}

namespace {
// The backward recursion, step i's A, B and Q from step(i, A, B, Q) (references into the
// caller's storage, or scratch it fills): a caller that makes them step by step holds one set
// in memory, not one per step.
template <class StepFn>
std::vector<Eigen::MatrixXd> riccati(std::size_t steps, const StepFn& step,
                                     const Eigen::MatrixXd& R, const Eigen::MatrixXd& Q_N,
                                     std::vector<Eigen::MatrixXd>* P_out,
                                     const Eigen::MatrixXd& N) {
  std::vector<Eigen::MatrixXd> K(steps);
  if (P_out) P_out->assign(steps + 1, Eigen::MatrixXd());
  Eigen::MatrixXd P = Q_N;
  if (P_out) (*P_out)[steps] = P;
  for (std::size_t i = steps; i-- > 0;) {
    throwIfCancelled("feedback gains");
    const Eigen::MatrixXd *A = nullptr, *B = nullptr, *Q = nullptr;
    step(i, A, B, Q);
    const Eigen::MatrixXd BtP = B->transpose() * P;
    const Eigen::MatrixXd S = R + BtP * *B;
    Eigen::MatrixXd cross = BtP * *A;  // B^T P A + N^T
    if (N.size()) cross += N.transpose();
    K[i] = S.ldlt().solve(cross);
    const Eigen::MatrixXd Pn = *Q + A->transpose() * P * *A - cross.transpose() * K[i];
    P = 0.5 * (Pn + Pn.transpose());
    if (P_out) (*P_out)[i] = P;
  }
  return K;
}
}  // namespace

std::vector<Eigen::MatrixXd> riccatiGains(const std::vector<Eigen::MatrixXd>& A,
                                          const std::vector<Eigen::MatrixXd>& B,
                                          const std::vector<Eigen::MatrixXd>& Q,
                                          const Eigen::MatrixXd& R, const Eigen::MatrixXd& Q_N,
                                          std::vector<Eigen::MatrixXd>* P_out,
                                          const Eigen::MatrixXd& N) {
  auto step = [&](std::size_t i, const Eigen::MatrixXd*& Ai, const Eigen::MatrixXd*& Bi,
                  const Eigen::MatrixXd*& Qi) {
    Ai = &A[i];
    Bi = &B[i];
    Qi = &Q[i];
  };
  return riccati(A.size(), step, R, Q_N, P_out, N);
}

namespace {
// The correction's acceleration is C s + du, C = [0 .. -2 I_rho, I_prev] (n_k x n_s).
Eigen::MatrixXd accelerationRows(const Model& model) {
  const int nx = 2 * model.nd() + model.nk(), nk = model.nk();
  Eigen::MatrixXd C = Eigen::MatrixXd::Zero(nk, nx + nk);
  C.block(0, nx - nk, nk, nk).diagonal().setConstant(-2.0);
  C.rightCols(nk).diagonal().setOnes();
  return C;
}
}  // namespace

void gainDynamics(const Eigen::MatrixXd& A, const Eigen::MatrixXd& B, int nk,
                  Eigen::MatrixXd& A_s, Eigen::MatrixXd& B_s) {
  const Eigen::Index nx = A.rows();
  A_s.setZero(nx + nk, nx + nk);
  A_s.topLeftCorner(nx, nx) = A;
  A_s.block(nx, nx - nk, nk, nk).setIdentity();
  B_s.setZero(nx + nk, B.cols());
  B_s.topRows(nx) = B;
}

Eigen::MatrixXd inputCost(const Model& model, const LqrWeights& w, double dt_s) {
  const double dt2 = dt_s * dt_s;
  return (w.correction + w.correction_rate / dt2 + w.correction_accel / (dt2 * dt2)) *
         Eigen::MatrixXd::Identity(model.nk(), model.nk());
}

Eigen::MatrixXd crossCost(const Model& model, const LqrWeights& w, double dt_s) {
  const int nd = model.nd(), nk = model.nk(), nx = 2 * nd + nk;
  const double dt2 = dt_s * dt_s;
  Eigen::MatrixXd N = w.correction_accel / (dt2 * dt2) * accelerationRows(model).transpose();
  N.block(nx - nk, 0, nk, nk).diagonal().array() -= w.correction_rate / dt2;
  return N;
}

Eigen::MatrixXd stateCost(const Model& model, const State& x, const LqrWeights& w, double dt_s) {
  const int nd = model.nd(), nk = model.nk(), nx = 2 * nd + nk;
  const double dt2 = dt_s * dt_s;
  const Eigen::MatrixXd C = accelerationRows(model);
  Eigen::MatrixXd Q = w.correction_accel / (dt2 * dt2) * C.transpose() * C;
  Q.topLeftCorner(nd, nd).diagonal().array() += w.position;
  DynamicsData d(model);
  const Eigen::VectorXd q = model.configuration(x.q, x.rho);
  forwardKinematics(model, d, q);
  computeLagrangian(model, d, q, Eigen::VectorXd::Zero(nd), LagrangianOrder::MassMatrix);
  const Eigen::MatrixXd Minv = d.M.llt().solve(Eigen::MatrixXd::Identity(nd, nd));
  Q.block(nd, nd, nd, nd) += w.velocity * Minv.transpose() * Minv;
  Q.block(nx - nk, nx - nk, nk, nk).diagonal().array() += w.rig + w.correction_rate / dt2;
  return Q;
}

Eigen::VectorXd TrackingGains::correction(std::size_t k, const Eigen::VectorXd& deviation,
                                          const Eigen::VectorXd& previous_rig_deviation) const {
  const Eigen::MatrixXd& G = K.at(k);
  const Eigen::Index nx = deviation.size();
  return -(G.leftCols(nx) * deviation + G.rightCols(G.cols() - nx) * previous_rig_deviation);
}

std::vector<std::pair<const char*, double*>> weightFields(LqrWeights& w) {
  return {{"position", &w.position},
          {"velocity", &w.velocity},
          {"rig", &w.rig},
          {"correction", &w.correction},
          {"correction_rate", &w.correction_rate},
          {"correction_accel", &w.correction_accel},
          {"terminal", &w.terminal}};
}

std::vector<std::pair<const char*, double>> weightFields(const LqrWeights& w) {
  LqrWeights copy = w;
  std::vector<std::pair<const char*, double>> out;
  for (const auto& [name, value] : weightFields(copy)) out.emplace_back(name, *value);
  return out;
}

void checkLqrWeights(const LqrWeights& w) {
  for (const auto& [name, value] : weightFields(w)) {
    const bool correction = std::string(name) == "correction";
    const double lowest = correction ? kMinCorrectionWeight : 0.0;
    if (!(value >= lowest && value <= kMaxLqrWeight))
      throw FieldError(name, "must be in [" + formatNumber(lowest, 6) + ", " +
                                 formatNumber(kMaxLqrWeight, 6) + "], got " +
                                 formatNumber(value, 6));
  }
}

bool LqrWeights::operator==(const LqrWeights& o) const {
  return position == o.position && velocity == o.velocity && rig == o.rig &&
         correction == o.correction && correction_rate == o.correction_rate &&
         correction_accel == o.correction_accel && terminal == o.terminal;
}

TrackingGains planTrackingGains(const ModelPtr& model, const Eigen::MatrixXd& inputs,
                                const Eigen::VectorXd& q0, double rate_hz,
                                const LqrWeights& weights) {
  if (!(rate_hz > 0) || !std::isfinite(rate_hz)) throw FieldError("rate_hz", "must be > 0");
  if (q0.size() != model->nd())
    throw FieldError("q0", "needs " + std::to_string(model->nd()) + " values");
  IntegratorOptions io;
  io.dt_s = 1.0 / rate_hz;
  VariationalIntegrator vi(model, io);
  if (inputs.rows() < 1 || inputs.cols() != model->nk())
    throw FieldError("inputs", "needs at least one row of " + std::to_string(model->nk()) +
                                   " values");
  // The linearization holds A_k and B_k for every step: bounded before it is made.
  const double nx = 2.0 * model->nd() + model->nk();
  const double values = static_cast<double>(inputs.rows()) * nx * (nx + model->nk());
  if (values > kMaxGainsValues)
    throw FieldError("inputs", std::to_string(inputs.rows()) + " samples of a " +
                                   formatNumber(nx) + "-dimensional state: " +
                                   formatNumber(values, 3) +
                                   " linearization values, more than the " +
                                   formatNumber(kMaxGainsValues, 3) + " gains are computed over");
  const State start =
      vi.stateFromVelocity(q0, Eigen::VectorXd::Zero(model->nd()), inputs.row(0).transpose());
  return computeTrackingGains(model, linearizeTrajectory(model, inputs, start, io), weights);
}

TrackingGains computeTrackingGains(const ModelPtr& model, const TrajectoryLinearization& lin,
                                   const LqrWeights& w) {
  checkLqrWeights(w);
  // Each step's cost and the gains' dynamics made as the recursion reaches it.
  Eigen::MatrixXd A_s, B_s, Q;
  auto step = [&](std::size_t k, const Eigen::MatrixXd*& A, const Eigen::MatrixXd*& B,
                  const Eigen::MatrixXd*& Qk) {
    Q = stateCost(*model, lin.x[k], w, lin.dt_s);
    gainDynamics(lin.A[k], lin.B[k], model->nk(), A_s, B_s);
    A = &A_s;
    B = &B_s;
    Qk = &Q;
  };
  const Eigen::MatrixXd QN = w.terminal * stateCost(*model, lin.x.back(), w, lin.dt_s);
  TrackingGains g;
  g.dt_s = lin.dt_s;
  g.weights = w;
  g.K = riccati(lin.A.size(), step, inputCost(*model, w, lin.dt_s), QN, nullptr,
                crossCost(*model, w, lin.dt_s));
  // Within the weights' bounds the recursion stays finite; should it not, no gain leaves here.
  for (std::size_t k = 0; k < g.K.size(); ++k)
    if (!g.K[k].allFinite())
      throw SimulationError(static_cast<int>(k), static_cast<double>(k) * lin.dt_s,
                            "the feedback gains are not finite (the Riccati recursion "
                            "overflowed for these weights)");
  return g;
}

}  // namespace marionette::control
