// SPDX-License-Identifier: BSD-3-Clause
// Every row's mode at once: the taut set of the strings, stops and contacts and each touching
// contact's friction mode from the linear complementarity problem of the step linearized at the
// current iterate (Stewart & Trinkle, "An implicit time-stepping scheme for rigid body dynamics
// with inelastic collisions and Coulomb friction", IJNME 1996), solved by Lemke's method.  The
// step's fallback when its per-row active set cycles (docs/decisions/0012-contacts-in-the-step.md).
#include <Eigen/LU>
#include <algorithm>
#include <cmath>
#include <vector>

#include "lcp.hpp"
#include "variational_step.hpp"

namespace marionette {

namespace {

// A row farther than this from its bound at the iterate (m or rad) takes no part in the problem
// (should the problem's answer put it beyond its bound, the next iterate's problem takes it).
constexpr double kModeReach = 0.01;
// A contact row farther than this from its surface at the iterate, and not taut, takes part
// without its friction cone (17 of the problem's unknowns per row; Lemke's pivots grow with the
// cube of their count): should the problem's answer make it touch, it touches frictionless for
// one iterate, and the next iterate's problem, where it is taut, gives its friction mode.
constexpr double kFrictionReach_m = 0.001;

}  // namespace

int VariationalIntegrator::Impl::modesFromLcp() {
  // The step's equations linearized at the iterate, in every row's impulse z (a string's in N s,
  // its gradient scaled by its span at q_k; a stop's and a contact's as in the step) and each
  // touching contact's friction impulse lambda_t = D beta, D the cone polygon's vertices
  // (apothem 1), beta >= 0:
  //   H dq = -r + G1^T z - F1^T D beta                      (H the residual's Jacobian in q_{k+1})
  //   w    = -(g + G2 dq) >= 0  _|_  z >= 0                 (every row)
  //   D^T (s + F2 dq) + 1 gamma >= 0  _|_  beta >= 0        (maximal dissipation, s the slip)
  //   mu z_n - 1^T beta >= 0  _|_  gamma >= 0               (Coulomb's cone)
  // A linear complementarity problem in (z, beta, gamma), Stewart & Trinkle's, whose matrix is
  // copositive-plus for H = -M/h + O(h): Lemke's method solves it.
  if (!second_valid_) computeLagrangian(*model_, dyn_, qm_full_, vel_, LagrangianOrder::Second);
  second_valid_ = true;
  assembleJacobian();  // J11 at this iterate (the taut columns are not used)
  const Eigen::PartialPivLU<Eigen::MatrixXd> H(jac_.topLeftCorner(nd_, nd_));

  std::vector<int> rows, friction;  // constraint rows taking part; those with a friction cone
  for (int c = 0; c < nc_; ++c) {
    if (c >= contact_row_ && !contact_near_[c - contact_row_]) continue;
    if (!is_active_[c] && gap2_[c] < -kModeReach) continue;
    rows.push_back(c);
    if (c >= contact_row_ && hasFriction(c) && (is_active_[c] || gap2_[c] >= -kFrictionReach_m))
      friction.push_back(c);
  }
  const int nk = static_cast<int>(rows.size()), nf = static_cast<int>(friction.size());
  constexpr int V = kFrictionFacets;  // the polygon's vertices
  // Bounded before anything is allocated (lcp.hpp): many surfaces near at once (planes stacked)
  // would ask for gigabytes.
  if (static_cast<long>(nk) + static_cast<long>(nf) * (V + 1) > kMaxLcpUnknowns) return -1;
  Eigen::MatrixXd G1(nk, nd_), G2(nk, nd_), F1(2 * nf, nd_), F2(2 * nf, nd_);
  Eigen::VectorXd g(nk), s(2 * nf);
  std::vector<double> row_scale(nk, 1.0);
  for (int i = 0; i < nk; ++i) {
    const int c = rows[i];
    if (c < ns_) {
      row_scale[i] = 1.0 / std::max(dist1_[c], 1e-6);
      G1.row(i) = dyn_.Dh.row(c).head(nd_) * row_scale[i];
      G2.row(i) = dyn2_.Dh.row(c).head(nd_) * row_scale[i];
      g[i] = h2_[c] * row_scale[i];
    } else if (c < contact_row_) {
      const Model::StopRow& r = model_->stops[c - ns_];
      G1.row(i).setZero();
      G1(i, r.variable) = r.sign;
      G2.row(i) = G1.row(i);
      g[i] = gap2_[c];
    } else {
      contactGradient(dyn2_, c, contact_G2_, &contact_F2_);
      G1.row(i) = contact_G1_.row(c - contact_row_);
      G2.row(i) = contact_G2_.row(c - contact_row_);
      g[i] = gap2_[c];
    }
  }
  for (int j = 0; j < nf; ++j) {
    const int r = friction[j] - contact_row_;
    F1.middleRows(2 * j, 2) = contact_F1_.middleRows(2 * r, 2);
    F2.middleRows(2 * j, 2) = contact_F2_.middleRows(2 * r, 2);
    s.segment(2 * j, 2) = slipOf(friction[j]);
  }
  // The polygon's vertices: vertex v between facets v and v + 1, at (d_v + d_v+1) / (1 +
  // d_v.d_v+1).
  Eigen::Matrix<double, 2, V> D;
  for (int v = 0; v < V; ++v) {
    const auto a = facet_normal_.col(v), b = facet_normal_.col((v + 1) % V);
    D.col(v) = (a + b) / (1.0 + a.dot(b));
  }

  const Eigen::VectorXd a0 = H.solve(-residual_free_);
  // (No columns, no solve: Eigen's permutation of an empty right-hand side offsets a null
  // pointer, undefined behaviour that UBSan reports -- fuzz/contact_scene found it.)
  const Eigen::MatrixXd YG = nk > 0 ? Eigen::MatrixXd(H.solve(G1.transpose()))
                                    : Eigen::MatrixXd(nd_, 0);
  const Eigen::MatrixXd YF = nf > 0 ? Eigen::MatrixXd(H.solve(F1.transpose()))
                                    : Eigen::MatrixXd(nd_, 0);
  const int n = nk + nf * (V + 1);
  Eigen::MatrixXd M = Eigen::MatrixXd::Zero(n, n);
  Eigen::VectorXd q = Eigen::VectorXd::Zero(n);
  M.topLeftCorner(nk, nk) = -G2 * YG;
  q.head(nk) = -g - G2 * a0;
  const Eigen::MatrixXd F2YG = F2 * YG, F2YF = F2 * YF, G2YF = G2 * YF;
  const Eigen::VectorXd s_free = s + F2 * a0;
  for (int j = 0; j < nf; ++j) {
    const int b = nk + j * (V + 1);  // beta_j's first index; gamma_j's is b + V
    int normal = 0;
    while (rows[normal] != friction[j]) ++normal;
    M.block(0, b, nk, V) = G2YF.middleCols(2 * j, 2) * D;
    M.block(b, 0, V, nk) = D.transpose() * F2YG.middleRows(2 * j, 2);
    for (int k = 0; k < nf; ++k)
      M.block(b, nk + k * (V + 1), V, V) = -D.transpose() * F2YF.block(2 * j, 2 * k, 2, 2) * D;
    M.block(b, b + V, V, 1).setOnes();
    M(b + V, normal) = frictionOf(friction[j]);
    M.block(b + V, b, 1, V).setConstant(-1.0);
    q.segment(b, V) = D.transpose() * s_free.segment(2 * j, 2);
  }
  // The Newton matrix's regularisation of the slip rows, as a proximal term about the iterate's
  // friction impulses (zero at the step's solution): redundant contacts (a body sticking at both
  // ends) share their internal impulse as the iteration does, not as a pivoting order would (all
  // of it on one, at the edge of its cone, where the step's answer is not complementary).
  for (int j = 0; j < nf; ++j) {
    const int c = friction[j], b = nk + j * (V + 1);
    const double eps = regularizationOf(c);
    const Eigen::Vector2d lambda_t =
        is_active_[c] ? Eigen::Vector2d(lambda_[tangentId(c, 0)], lambda_[tangentId(c, 1)])
                      : Eigen::Vector2d::Zero();
    M.block(b, b, V, V) += eps * D.transpose() * D;
    q.segment(b, V) -= eps * D.transpose() * lambda_t;
  }
  Eigen::VectorXd z, w;
  if (!solveLcpByLemke(M, q, z, w)) return -1;

  // The modes: a row is taut where its impulse is positive, or (a string or a stop) where it is
  // tight with none; a contact sticks where its gamma (the slip's size) is zero, else slides on
  // the facet between its two supporting vertices, or at its one.
  const double z_tol = 1e-12 * std::max(1.0, z.cwiseAbs().maxCoeff());
  const double w_tol = 1e-3 * options_.constraint_tol_m;
  std::vector<char> active(n_ids_, 0);
  Eigen::VectorXd lambda = Eigen::VectorXd::Zero(n_ids_);
  for (int i = 0; i < nk; ++i) {
    const int c = rows[i];
    active[c] = z[i] > z_tol || (c < contact_row_ && w[i] <= w_tol);
    lambda[c] = z[i] * row_scale[i];
  }
  for (int j = 0; j < nf; ++j) {
    const int c = friction[j];
    if (!active[c]) continue;
    const int b = nk + j * (V + 1);
    const Eigen::Vector2d lambda_t = D * z.segment(b, V);
    for (int k = 0; k < 2; ++k) {
      active[tangentId(c, k)] = 1;
      lambda[tangentId(c, k)] = lambda_t[k];
    }
    if (!(z[b + V] > z_tol)) continue;  // sticks
    std::vector<int> support;           // the vertices carrying beta
    for (int v = 0; v < V; ++v)
      if (z[b + v] > z_tol) support.push_back(v);
    int facets[2] = {facetFacing(lambda_t), -1};  // (degenerate supports)
    if (support.size() == 1) {                    // at the vertex between facets v and v + 1
      facets[0] = support[0];
      facets[1] = (support[0] + 1) % V;
    } else if (support.size() == 2 && support[1] == support[0] + 1) {
      facets[0] = support[1];  // on the facet between vertices v and v + 1
    } else if (support.size() == 2 && support[0] == 0 && support[1] == V - 1) {
      facets[0] = 0;
    }
    for (int f : facets)
      if (f >= 0) active[facetId(c, f)] = 1;
  }
  int size = 0;
  for (char a : active) size += a;
  if (size > m_max_) return -1;
  bool changed = false;
  for (int id = 0; id < n_ids_; ++id)
    if (static_cast<bool>(is_active_[id]) != static_cast<bool>(active[id])) {
      changed = true;
      ++active_set_changes_;
    }
  if (!changed) return 0;
  for (int id = 0; id < n_ids_; ++id) {  // (a slack id has no impulse: startActiveSet)
    is_active_[id] = active[id];
    lambda_[id] = active[id] ? lambda[id] : 0.0;
  }
  rebuildActive();
  return 1;
}

}  // namespace marionette
