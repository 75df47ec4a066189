// SPDX-License-Identifier: BSD-3-Clause
// Coulomb friction in the step's Newton iteration: each touching contact's mode (sticking, or
// sliding on a facet or at a vertex of its 16-facet cone), chosen by solving its own Coulomb
// problem against its mobility, and the rows' regularisation in the Newton matrix
// (docs/decisions/0012-contacts-in-the-step.md).
#include <Eigen/Cholesky>
#include <Eigen/LU>
#include <algorithm>
#include <cmath>

#include "variational_step.hpp"

namespace marionette {

const Eigen::Matrix2d& VariationalIntegrator::Impl::mobility(int c) {
  const int r = c - contact_row_;
  if (mobility_known_[r]) return mobility_[r];
  // h T^T J M^-1 J^T T at q_k (the mass matrix as factorised for the step's first guess).
  Eigen::Matrix2d& A = mobility_[r];
  for (int k = 0; k < 2; ++k) {
    scale_tmp_ = contact_F1_.row(2 * r + k).transpose();
    if (mass_lu_ok_) {
      mass_lu_->solveInPlace(scale_tmp_);
    } else {
      llt_.solveInPlace(scale_tmp_);
    }
    A.col(k) = h_ * (contact_F1_.middleRows(2 * r, 2) * scale_tmp_);
  }
  A = 0.5 * (A + A.transpose()).eval();
  mobility_known_[r] = 1;
  return A;
}

Eigen::Matrix2d VariationalIntegrator::Impl::constrainedMobility(int c) {
  // Sticking, with the Newton matrix factorised for the taut set as it is: the impulse that
  // moves its slip rows by b with every other taut row held is C b (C from two solves), so the
  // slip answers the impulse as C^-1.
  if (!kkt_factored_ || sliding(c) || position_[tangentId(c, 0)] < 0) return mobility(c);
  // (Once per factorisation: the chord's iterations reuse it.)
  const int r = c - contact_row_;
  if (constrained_mobility_of_[r] == factorizations_) return constrained_mobility_[r];
  const int m = static_cast<int>(active_.size());
  Eigen::Matrix2d C;
  for (int k = 0; k < 2; ++k) {
    auto rhs = mobility_rhs_.head(nd_ + m);
    auto sol = mobility_sol_.head(nd_ + m);
    rhs.setZero();
    rhs[nd_ + position_[tangentId(c, k)]] = 1.0;
    kkt_->solve(rhs, sol);
    for (int j = 0; j < 2; ++j) C(j, k) = sol[nd_ + position_[tangentId(c, j)]];
  }
  const Eigen::Matrix2d A = C.inverse();
  constrained_mobility_of_[r] = factorizations_;
  if (!A.allFinite() || !(A.trace() > 0.0) || !(A.determinant() > 0.0))
    constrained_mobility_[r] = mobility(c);
  else
    constrained_mobility_[r] = 0.5 * (A + A.transpose());
  return constrained_mobility_[r];
}

int VariationalIntegrator::Impl::facetFacing(const Eigen::Vector2d& v) const {
  int best = 0;
  for (int i = 1; i < kFrictionFacets; ++i)
    if (facet_normal_.col(i).dot(v) > facet_normal_.col(best).dot(v)) best = i;
  return best;
}

double VariationalIntegrator::Impl::regularizationOf(int c) {
  const Eigen::Matrix2d& A = mobility(c);
  return regularization_ * std::max(A.trace(), 1e-300);
}

void VariationalIntegrator::Impl::frictionMode(int c, int facets[2]) {
  facets[0] = facets[1] = -1;
  if (lambda_[c] == 0.0) return;  // just landed: sticks until it has a normal impulse
  // The contact's own problem, every other taut row held: its slip answers its friction impulse
  // as slip + A (lambda' - lambda_t), A its mobility over the step (constrainedMobility).  Of
  // sticking, sliding on one facet or at a vertex, the mode whose solution satisfies Coulomb's law
  // with maximal dissipation (one, for A positive definite).
  const Eigen::Vector2d lambda_t(lambda_[tangentId(c, 0)], lambda_[tangentId(c, 1)]);
  const Eigen::Vector2d slip = slipOf(c);
  const Eigen::Matrix2d A = constrainedMobility(c);
  const double a = std::max(0.0, frictionOf(c) * lambda_[c]);  // the apothem
  const double tol = 1e-9 * std::max(a, lambda_t.norm()) + 1e-300;
  auto inside = [&](const Eigen::Vector2d& l) {
    for (int i = 0; i < kFrictionFacets; ++i)
      if (facet_normal_.col(i).dot(l) > a + tol) return false;
    return true;
  };
  const Eigen::Vector2d stick = lambda_t - A.ldlt().solve(slip);
  if (inside(stick)) return;
  const double half_edge = a * std::tan(M_PI / kFrictionFacets);
  int best = -1;
  double best_dissipation = -1.0;
  for (int i = 0; i < kFrictionFacets; ++i) {
    const auto d = facet_normal_.col(i);
    const Eigen::Vector2d e(-d[1], d[0]);
    // On facet i: lambda' = a d + beta e, the slip along -d (psi >= 0), beta within the edge.
    const double eAe = e.dot(A * e);
    if (!(eAe > 0.0)) continue;
    const double beta = -e.dot(slip + A * (a * d - lambda_t)) / eAe;
    const Eigen::Vector2d v = slip + A * (a * d + beta * e - lambda_t);
    const double psi = -d.dot(v);
    if (psi >= 0.0 && std::abs(beta) <= half_edge + tol && psi > best_dissipation) {
      best = i;
      best_dissipation = psi;
    }
  }
  if (best >= 0) {
    facets[0] = best;
    return;
  }
  for (int i = 0; i < kFrictionFacets; ++i) {
    const int j = (i + 1) % kFrictionFacets;
    const auto di = facet_normal_.col(i), dj = facet_normal_.col(j);
    // At the vertex of facets i and j: the slip in the cone of -d_i and -d_j.
    const Eigen::Vector2d vertex = a * (di + dj) / (1.0 + di.dot(dj));
    const Eigen::Vector2d v = slip + A * (vertex - lambda_t);
    Eigen::Matrix2d D;
    D << di, dj;
    const Eigen::Vector2d psi = D.partialPivLu().solve(-v);
    if (psi.minCoeff() >= -tol) {
      facets[0] = i;
      facets[1] = j;
      return;
    }
  }
  // (None within round-off: slide on the facet the sticking impulse leans on.)
  facets[0] = facetFacing(stick);
}

bool VariationalIntegrator::Impl::updateFriction(int c, int& count) {
  // A mode its Newton step has not yet solved for (just landed, just set to slide) stays.
  if (mode_unsolved_[c - contact_row_]) return false;
  int want[2];
  frictionMode(c, want);
  auto wanted = [&](int i) { return i == want[0] || i == want[1]; };
  // Every facet that would flip may (kMaxFlips), and the taut set has room, or none flips.
  int flips = 0, grow = 0;
  for (int i = 0; i < kFrictionFacets; ++i) {
    const int f = facetId(c, i);
    if (static_cast<bool>(is_active_[f]) == wanted(i)) continue;
    if (flips_[f] >= kMaxFlips) return false;
    ++flips;
    grow += wanted(i) ? 1 : -1;
  }
  if (flips == 0 || count + grow > m_max_) return false;
  for (int i = 0; i < kFrictionFacets; ++i) {
    const int f = facetId(c, i);
    if (static_cast<bool>(is_active_[f]) == wanted(i)) continue;
    is_active_[f] = wanted(i);
    lambda_[f] = 0.0;
    ++flips_[f];
    ++active_set_changes_;
  }
  count += grow;
  mode_unsolved_[c - contact_row_] = 1;
  return true;
}

bool VariationalIntegrator::Impl::slideStalledContact(int count) {
  int worst = -1;
  double worst_slip = options_.constraint_tol_m;
  for (int c = contact_row_; c < nc_; ++c) {
    if (!is_active_[c] || !hasFriction(c) || sliding(c)) continue;
    const double slip = slipOf(c).norm();
    if (slip > worst_slip) {
      worst = c;
      worst_slip = slip;
    }
  }
  if (worst < 0 || count + 1 > m_max_) return false;
  // The facet against the slip: friction along d, the slip along -d.
  const int f = facetId(worst, facetFacing(-slipOf(worst)));
  if (flips_[f] >= kMaxFlips) return false;
  is_active_[f] = 1;
  lambda_[f] = 0.0;
  ++flips_[f];
  ++active_set_changes_;
  mode_unsolved_[worst - contact_row_] = 1;
  return true;
}

}  // namespace marionette
