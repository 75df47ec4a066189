#include "marionette/control/tracking_lqr.hpp"

#include <Eigen/Cholesky>
#include <cmath>

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
  for (Eigen::Index k = 0; k + 1 < inputs.rows(); ++k) {
    const StepStatus st = vi.linearizeStep(out.x.back(), inputs.row(k + 1).transpose(), lin);
    if (st != StepStatus::Ok)
      throw SimulationError(static_cast<int>(k), k * options.dt_s,
                            std::string("the plan's step has no linearization (") +
                                toString(st) + ")");
    out.x.push_back(lin.next);
    out.A.push_back(lin.A);
    out.B.push_back(lin.B);
  }
  return out;
}

std::vector<Eigen::MatrixXd> riccatiGains(const std::vector<Eigen::MatrixXd>& A,
                                          const std::vector<Eigen::MatrixXd>& B,
                                          const std::vector<Eigen::MatrixXd>& Q,
                                          const Eigen::MatrixXd& R, const Eigen::MatrixXd& Q_N,
                                          std::vector<Eigen::MatrixXd>* P_out) {
  const std::size_t N = A.size();
  std::vector<Eigen::MatrixXd> K(N);
  if (P_out) P_out->assign(N + 1, Eigen::MatrixXd());
  Eigen::MatrixXd P = Q_N;
  if (P_out) (*P_out)[N] = P;
  for (std::size_t i = N; i-- > 0;) {
    const Eigen::MatrixXd BtP = B[i].transpose() * P;
    const Eigen::MatrixXd S = R + BtP * B[i];
    K[i] = S.ldlt().solve(BtP * A[i]);
    const Eigen::MatrixXd Pn = Q[i] + A[i].transpose() * P * (A[i] - B[i] * K[i]);
    P = 0.5 * (Pn + Pn.transpose());
    if (P_out) (*P_out)[i] = P;
  }
  return K;
}

Eigen::MatrixXd stateCost(const Model& model, const State& x, const LqrWeights& w) {
  const int nd = model.nd(), nk = model.nk();
  Eigen::MatrixXd Q = Eigen::MatrixXd::Zero(2 * nd + nk, 2 * nd + nk);
  Q.topLeftCorner(nd, nd).diagonal().setConstant(w.position);
  DynamicsData d(model);
  const Eigen::VectorXd q = model.configuration(x.q, x.rho);
  forwardKinematics(model, d, q);
  computeLagrangian(model, d, q, Eigen::VectorXd::Zero(nd), LagrangianOrder::MassMatrix);
  const Eigen::MatrixXd Minv = d.M.llt().solve(Eigen::MatrixXd::Identity(nd, nd));
  Q.block(nd, nd, nd, nd) = w.velocity * Minv.transpose() * Minv;
  Q.bottomRightCorner(nk, nk).diagonal().setConstant(w.rig);
  return Q;
}

TrackingGains computeTrackingGains(const ModelPtr& model, const TrajectoryLinearization& lin,
                                   const LqrWeights& w) {
  auto atLeastZero = [](const char* field, double v) {
    if (!(v >= 0) || !std::isfinite(v)) throw FieldError(field, "must be >= 0");
  };
  atLeastZero("position", w.position);
  atLeastZero("velocity", w.velocity);
  atLeastZero("rig", w.rig);
  atLeastZero("terminal", w.terminal);
  if (!(w.correction > 0) || !std::isfinite(w.correction))
    throw FieldError("correction", "must be > 0");
  std::vector<Eigen::MatrixXd> Q;
  Q.reserve(lin.A.size());
  for (std::size_t k = 0; k < lin.A.size(); ++k) Q.push_back(stateCost(*model, lin.x[k], w));
  const Eigen::MatrixXd R =
      w.correction * Eigen::MatrixXd::Identity(model->nk(), model->nk());
  const Eigen::MatrixXd QN = w.terminal * stateCost(*model, lin.x.back(), w);
  TrackingGains g;
  g.dt_s = lin.dt_s;
  g.weights = w;
  g.K = riccatiGains(lin.A, lin.B, Q, R, QN);
  return g;
}

}  // namespace marionette::control
