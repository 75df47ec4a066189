// SPDX-License-Identifier: BSD-3-Clause
#include "marionette/models/rest_pose.hpp"

#include <Eigen/LU>
#include <algorithm>
#include <cmath>
#include <memory>

#include "marionette/common/text.hpp"
#include "marionette/models/cancel.hpp"
#include "marionette/models/contact_rows.hpp"
#include "marionette/models/dynamics.hpp"
#include "marionette/models/integrator.hpp"

namespace marionette {

namespace {

// Contact rows farther than this from touching have no gradient in the rest pose's Newton solve.
constexpr double kContactGradientReach_m = 0.01;
// The most constraint rows (strings, stops, contacts and their held slips) active at once in the
// rest pose's Newton system: kMaxActiveRowsPerJoint per joint and kMaxActiveRowsBase.
constexpr int kMaxActiveRowsPerJoint = 4, kMaxActiveRowsBase = 64;

// projectOntoStrings, and, with `touch`, out of every contact the configuration is inside by
// more than tol_m.
bool projectOntoConstraints(const Model& model, Eigen::VectorXd& q, const Eigen::VectorXd& rho,
                            const std::vector<char>& fixed, double tol_m, ContactRows* touch) {
  DynamicsData d(model);
  const int nd = model.nd(), ns = model.nstrings(), ncon = touch ? touch->rows() : 0;
  Eigen::VectorXd contact_gap(ncon);
  // The largest over-stretch or penetration at qd (d, contact_gap then hold qd's).
  auto violation = [&](const Eigen::VectorXd& qd) {
    const Eigen::VectorXd qf = model.configuration(qd, rho);
    forwardKinematics(model, d, qf);
    double worst = 0.0;
    if (ns) {
      computeStrings(model, d, qf, false);
      worst = (d.distance - d.length).cwiseMax(0.0).maxCoeff();
    }
    for (int r = 0; r < ncon; ++r) {
      contact_gap[r] = touch->gap(d, r);
      worst = std::max(worst, contact_gap[r]);
    }
    return worst;
  };
  // Joint stops first: a joint outside its limits is moved onto them (a fixed one cannot be).
  for (int k = 0; k < nd; ++k) {
    const JointLimit& L = model.dynamic[k].limit;
    if (!L.isStop()) continue;
    const double clamped = std::min(L.upper, std::max(L.lower, q[k]));
    if (clamped != q[k] && !fixed.empty() && fixed[k]) return false;
    q[k] = clamped;
  }
  auto clampFree = [&](Eigen::VectorXd& x) {
    for (int k = 0; k < nd; ++k) {
      const JointLimit& L = model.dynamic[k].limit;
      if (L.isStop()) x[k] = std::min(L.upper, std::max(L.lower, x[k]));
    }
  };
  Eigen::RowVectorXd gradient(nd);
  for (int it = 0; it < 100; ++it) {
    throwIfCancelled("rest pose");
    const double worst = violation(q);
    if (worst <= tol_m) return true;
    // Least-norm Gauss-Newton step on the over-stretched strings' h = 0 and the penetrating
    // contacts' gaps = 0 over the free variables.
    std::vector<Eigen::RowVectorXd> rows;
    std::vector<double> values;
    for (int j = 0; j < ns; ++j)
      if (d.distance[j] - d.length[j] > tol_m) {
        rows.push_back(d.Dh.row(j).head(nd));
        values.push_back(d.h[j]);
      }
    for (int r = 0; r < ncon; ++r)
      if (contact_gap[r] > tol_m) {
        values.push_back(touch->gap(d, r, gradient));
        rows.push_back(gradient);
      }
    Eigen::MatrixXd J(rows.size(), nd);
    Eigen::VectorXd h(rows.size());
    for (std::size_t i = 0; i < rows.size(); ++i) {
      J.row(i) = rows[i];
      h[i] = values[i];
    }
    for (int k = 0; k < nd; ++k)
      if (!fixed.empty() && fixed[k]) J.col(k).setZero();
    // The least-norm step J^T (J J^T + reg I)^-1 h; with more rows than joints (surfaces that
    // coincide) the same step as (J^T J + reg I)^-1 J^T h, an n_d system.
    const double reg = 1e-12 * (1.0 + (J.rows() ? J.rowwise().squaredNorm().maxCoeff() : 0.0));
    Eigen::VectorXd step;
    if (J.rows() <= nd) {
      const Eigen::MatrixXd JJt = J * J.transpose();
      step = -J.transpose() *
             (JJt + reg * Eigen::MatrixXd::Identity(JJt.rows(), JJt.cols())).ldlt().solve(h);
    } else {
      const Eigen::MatrixXd JtJ = J.transpose() * J;
      step = -(JtJ + reg * Eigen::MatrixXd::Identity(nd, nd)).ldlt().solve(J.transpose() * h);
    }
    if (!step.allFinite() || step.cwiseAbs().maxCoeff() == 0.0) return false;
    // Backtrack until the worst over-stretch or penetration decreases.
    double alpha = 1.0;
    Eigen::VectorXd trial = q + step;
    clampFree(trial);
    while (violation(trial) >= worst && alpha > 1e-6) {
      alpha *= 0.5;
      trial = q + alpha * step;
      clampFree(trial);
    }
    if (alpha <= 1e-6) return false;
    q = trial;
  }
  return violation(q) <= tol_m;
}

}  // namespace

bool projectOntoStrings(const Model& model, Eigen::VectorXd& q, const Eigen::VectorXd& rho,
                        const std::vector<char>& fixed, double tol_m) {
  return projectOntoConstraints(model, q, rho, fixed, tol_m, nullptr);
}

RestPose computeRestPose(const ModelPtr& model_ptr, const Eigen::VectorXd& rho,
                         const Eigen::VectorXd* guess, RestPoseOptions options) {
  const Model& model = *model_ptr;
  const int nd = model.nd(), ns = model.nstrings();
  const int nstop = static_cast<int>(model.stops.size());
  RestPose out;
  out.tension_N.setZero(ns);
  out.taut.assign(ns, 0);
  if (rho.size() != model.nk() || !rho.allFinite()) {
    out.message = "inputs must be " + std::to_string(model.nk()) + " finite numbers";
    return out;
  }
  if (guess && (guess->size() != nd || !guess->allFinite())) {
    out.message = "rest pose: the guess must be " + std::to_string(nd) + " finite numbers";
    return out;
  }
  std::unique_ptr<ContactRows> touch;
  if (options.contacts) {
    if (const std::string problem = contactsProblem(model, *options.contacts); !problem.empty()) {
      out.message = "rest pose: " + problem;
      return out;
    }
    touch = std::make_unique<ContactRows>(model, *options.contacts);
  }
  const int ncon = touch ? touch->rows() : 0;
  Eigen::VectorXd q = guess ? *guess : model.initialDynamic();
  projectOntoConstraints(model, q, rho, {}, 1e-12, touch.get());

  // Phase 1: settle.  Damping proportional to each joint's own inertia (rate 8/s) overdamps the
  // slow swings and lets the fast ones ring down; the VI is implicit, so big steps are stable.
  // (None without settling steps: no integrator is made.)
  DynamicsData d(model);
  forwardKinematics(model, d, model.configuration(q, rho));
  computeLagrangian(model, d, model.configuration(q, rho), Eigen::VectorXd::Zero(nd),
                    LagrangianOrder::MassMatrix);
  // A step that fails (a violent first catch, say) is retried at half the time step.
  IntegratorOptions io;
  io.dt_s = options.settle_dt_s;
  io.damping_override = 8.0 * d.M.diagonal();
  io.contacts = options.contacts;
  State x{q, Eigen::VectorXd::Zero(nd), rho};
  StepReport rep;
  bool have_report = false;
  while (options.max_settle_steps > 0 && io.dt_s >= options.settle_dt_s / 64) {
    VariationalIntegrator vi(model_ptr, io);
    State next = vi.makeState();
    rep = vi.makeReport();
    bool failed = false;
    for (; out.settle_steps < options.max_settle_steps; ++out.settle_steps) {
      throwIfCancelled("rest pose");
      if (vi.step(x, rho, next, &rep) != StepStatus::Ok) {
        failed = true;
        break;
      }
      have_report = true;
      const double speed = (next.q - x.q).cwiseAbs().maxCoeff() / io.dt_s;
      x = next;
      if (speed < options.settle_velocity_tol) break;
    }
    if (!failed) break;
    io.dt_s *= 0.5;
  }
  q = x.q;

  // Phase 2: Newton on the KKT system over the strings, the joint stops and the contacts
  // (constraint c < n_s is string c, then the model's stops, then the contact rows), pivoting one
  // constraint at a time (least index first) until complementary.  A touching contact with
  // friction is held where it touches: two more rows, its tangential displacement = 0, whose
  // multipliers tau are its friction force; one whose friction that leaves beyond Coulomb's cone
  // is at the cone's edge instead, about to slide (its friction mu lambda along the direction it
  // had, its point free to settle along the surface), until the equilibrium keeps every friction
  // within its cone.
  const int con0 = ns + nstop, nc = con0 + ncon;
  std::vector<char> active(nc, 0), at_edge(ncon, 0);
  Eigen::VectorXd mu = Eigen::VectorXd::Zero(nc), tau = Eigen::VectorXd::Zero(2 * ncon);
  std::vector<Eigen::Vector2d> edge_direction(ncon, Eigen::Vector2d::Zero());  // unit, tangents
  Eigen::VectorXd gap(nc), hval(nc);
  Eigen::MatrixXd G(nc, nd);
  // Constraint values and gradients at the current q (strings from d, stops from q).
  auto constraints = [&](bool second) {
    const Eigen::VectorXd qf = model.configuration(q, rho);
    forwardKinematics(model, d, qf);
    computeStrings(model, d, qf, second);
    G.setZero();
    for (int j = 0; j < ns; ++j) {
      gap[j] = d.distance[j] - d.length[j];
      hval[j] = d.h[j];
      G.row(j) = d.Dh.row(j).head(nd);
    }
    for (int i = 0; i < nstop; ++i) {
      const Model::StopRow& r = model.stops[i];
      gap[ns + i] = hval[ns + i] = r.sign * (q[r.variable] - r.bound);
      G(ns + i, r.variable) = r.sign;
    }
    // (A contact's gradient only within reach: one farther cannot join the taut set here.)
    for (int r = 0; r < ncon; ++r) {
      double& g = gap[con0 + r];
      g = touch->gap(d, r);
      if (g > -kContactGradientReach_m || active[con0 + r]) g = touch->gap(d, r, G.row(con0 + r));
      hval[con0 + r] = g;
    }
    return qf;
  };
  auto engage = [&](int c) {  // (d at q)
    if (c >= con0 && touch->friction(c - con0) > 0.0) touch->hold(d, c - con0);
  };
  auto disengage = [&](int c) {
    mu[c] = 0.0;
    if (c < con0) return;
    touch->release(c - con0);
    tau.segment<2>(2 * (c - con0)).setZero();
    at_edge[c - con0] = 0;
  };
  // A touching contact's friction force (the tangents' components): its multipliers, or at the
  // cone's edge mu lambda along its direction.
  auto frictionOf = [&](int r) -> Eigen::Vector2d {
    if (at_edge[r]) return touch->friction(r) * mu[con0 + r] * edge_direction[r];
    return tau.segment<2>(2 * r);
  };
  constraints(false);
  const RestPose* prev = options.continue_from;
  const bool prev_contacts = prev && prev->contact_normal_N.size() == ncon;
  for (int c = 0; c < nc; ++c) {
    if (c < ns && have_report)
      active[c] = rep.taut[c];
    else if (prev && c < ns && static_cast<int>(prev->taut.size()) == ns)
      active[c] = prev->taut[c];
    else if (prev && c >= ns && c < con0 && static_cast<int>(prev->at_stop.size()) == nstop)
      active[c] = prev->at_stop[c - ns];
    else if (c >= con0 && have_report)
      active[c] = rep.contact_force_N[c - con0] > 0.0;
    else if (c >= con0 && prev_contacts)
      active[c] = prev->contact_normal_N[c - con0] > 0.0;
    else
      active[c] = gap[c] >= -options.taut_guess_gap;
    if (c < ns && active[c] && have_report)
      mu[c] = rep.tension_N[c] / std::max(1e-9, d.distance[c]);
    else if (c < ns && active[c] && prev && static_cast<int>(prev->tension_N.size()) == ns)
      mu[c] = prev->tension_N[c] / std::max(1e-9, d.distance[c]);
    else if (c >= con0 && active[c])
      mu[c] = have_report     ? rep.contact_force_N[c - con0]
              : prev_contacts ? prev->contact_normal_N[c - con0]
                              : 0.0;
    if (active[c]) engage(c);
  }
  // d/dq of the contacts' generalised force sum lambda_r grad g_r + tau_r^T grad s_r, by central
  // differences of the exact gradients (the rows' curvature through both links' rotations).
  DynamicsData fd(model);
  Eigen::RowVectorXd row(nd);
  Eigen::MatrixXd slip_rows(2, nd);
  Eigen::Vector2d slip;
  auto contactForce = [&](const Eigen::VectorXd& qd, Eigen::VectorXd& f) {
    forwardKinematics(model, fd, model.configuration(qd, rho));
    f.setZero(nd);
    for (int r = 0; r < ncon; ++r) {
      if (!active[con0 + r]) continue;
      touch->gap(fd, r, row);
      f += mu[con0 + r] * row.transpose();
      if (!touch->held(r)) continue;
      touch->slip(fd, r, slip, slip_rows);
      f += slip_rows.transpose() * frictionOf(r);
    }
  };
  double gscale = 0.0;
  const int max_passes = options.max_pivots < 0 ? 4 * nc + 4 : options.max_pivots + 1;
  for (int pass = 0; pass < max_passes; ++pass) {
    std::vector<int> A, held;
    for (int c = 0; c < nc; ++c)
      if (active[c]) A.push_back(c);
    for (int r = 0; r < ncon; ++r)
      if (touch->held(r) && !at_edge[r]) held.push_back(r);
    const int na = static_cast<int>(A.size()), m = na + 2 * static_cast<int>(held.size());
    // Each Newton iteration factors a dense (n_d + m)^2 system: rows active at once beyond a
    // few per joint are surfaces that coincide (stacked planes), and refused, not factored.
    if (m > kMaxActiveRowsPerJoint * nd + kMaxActiveRowsBase) {
      out.message = formatted("rest pose: %d constraint rows active at once (at most %d for %d "
                              "joints): surfaces that coincide?",
                              m, kMaxActiveRowsPerJoint * nd + kMaxActiveRowsBase, nd);
      return out;
    }
    bool converged = false;
    for (int it = 0; it < options.max_newton_iterations; ++it) {
      throwIfCancelled("rest pose");
      const Eigen::VectorXd qf = constraints(true);
      computeLagrangian(model, d, qf, Eigen::VectorXd::Zero(nd), LagrangianOrder::Second);
      const Eigen::VectorXd grad = -d.Lq;  // dV/dq at rest
      if (gscale == 0.0) gscale = std::max(grad.cwiseAbs().maxCoeff(), 1e-12);
      Eigen::VectorXd r1 = grad;
      Eigen::MatrixXd K = Eigen::MatrixXd::Zero(nd + m, nd + m);
      K.topLeftCorner(nd, nd) = -d.Lqq;
      Eigen::VectorXd r(nd + m);
      double cerr = 0.0;
      for (int i = 0; i < na; ++i) {
        const int c = A[i];
        // (At the cone's edge a contact's force is lambda (grad g + mu S^T u).)
        Eigen::VectorXd force = G.row(c).transpose();
        if (c >= con0 && at_edge[c - con0]) {
          touch->slip(d, c - con0, slip, slip_rows);
          force += touch->friction(c - con0) * slip_rows.transpose() * edge_direction[c - con0];
        }
        r1 += mu[c] * force;
        if (c < ns) K.topLeftCorner(nd, nd) += mu[c] * d.D2h[c].topLeftCorner(nd, nd);
        K.block(0, nd + i, nd, 1) = force;
        K.block(nd + i, 0, 1, nd) = G.row(c);
        r[nd + i] = hval[c];
        cerr = std::max(cerr, std::abs(gap[c]));
      }
      for (std::size_t h = 0; h < held.size(); ++h) {
        const int at = nd + na + 2 * static_cast<int>(h);
        touch->slip(d, held[h], slip, slip_rows);
        r1 += slip_rows.transpose() * tau.segment<2>(2 * held[h]);
        K.block(0, at, nd, 2) = slip_rows.transpose();
        K.block(at, 0, 2, nd) = slip_rows;
        r.segment<2>(at) = slip;
        cerr = std::max(cerr, slip.cwiseAbs().maxCoeff());
      }
      if (std::any_of(active.begin() + con0, active.end(), [](char a) { return a != 0; })) {
        constexpr double kStep = 1e-6;  // rad or m: truncation ~1e-12, rounding ~1e-10 relative
        Eigen::VectorXd plus, minus, qd = q;
        for (int j = 0; j < nd; ++j) {
          qd[j] = q[j] + kStep;
          contactForce(qd, plus);
          qd[j] = q[j] - kStep;
          contactForce(qd, minus);
          qd[j] = q[j];
          K.block(0, j, nd, 1) += (plus - minus) / (2 * kStep);
        }
      }
      r.head(nd) = r1;
      out.stationarity = r1.cwiseAbs().maxCoeff();
      if (!r.allFinite()) break;
      if (out.stationarity <= options.stationarity_tol * gscale && cerr <= 1e-12) {
        converged = true;
        break;
      }
      // A tiny Levenberg-Marquardt shift keeps neutral directions (zero stiffness) solvable.
      K.topLeftCorner(nd, nd).diagonal().array() +=
          1e-12 * (1.0 + K.topLeftCorner(nd, nd).cwiseAbs().maxCoeff());
      Eigen::VectorXd delta = -Eigen::PartialPivLU<Eigen::MatrixXd>(K).solve(r);
      if (!delta.allFinite()) break;
      const double big = delta.head(nd).cwiseAbs().maxCoeff();
      if (big > 0.2) delta *= 0.2 / big;  // trust region against a poor settle
      q += delta.head(nd);
      for (int i = 0; i < na; ++i) mu[A[i]] += delta[nd + i];
      for (std::size_t h = 0; h < held.size(); ++h)
        tau.segment<2>(2 * held[h]) += delta.segment<2>(nd + na + 2 * static_cast<int>(h));
    }
    if (!converged) {
      out.message = "rest pose: the equilibrium equations did not converge";
      break;
    }
    int flip = -1;
    for (int c = 0; c < nc && flip < 0; ++c) {
      if (active[c] && mu[c] < -1e-9 * gscale) flip = c;
      if (!active[c] && gap[c] > 1e-12) flip = c;
    }
    // A held contact whose friction left its cone: at the cone's edge, along that friction.
    bool to_edge = false;
    for (int r = 0; r < ncon && flip < 0; ++r) {
      if (!active[con0 + r] || !touch->held(r) || at_edge[r]) continue;
      const Eigen::Vector2d friction = frictionOf(r);
      if (friction.norm() <= touch->friction(r) * mu[con0 + r] * (1.0 + 1e-9)) continue;
      at_edge[r] = 1;
      edge_direction[r] = friction.normalized();
      to_edge = true;
    }
    if (to_edge) {
      ++out.pivots;
      continue;
    }
    if (flip < 0) {
      out.ok = true;
      break;
    }
    ++out.pivots;
    active[flip] ^= 1;
    if (active[flip]) {
      mu[flip] = 0.0;
      engage(flip);
    } else {
      disengage(flip);
    }
  }
  if (!out.ok && out.message.empty()) out.message = "rest pose: the string set did not settle";

  out.q = q;
  const Eigen::VectorXd qf = model.configuration(q, rho);
  forwardKinematics(model, d, qf);
  computeStrings(model, d, qf, false);
  out.potential_J = potentialEnergy(model, d, qf);
  out.max_violation_m = ns ? (d.distance - d.length).cwiseMax(0.0).maxCoeff() : 0.0;
  out.at_stop.assign(active.begin() + ns, active.begin() + con0);
  for (int j = 0; j < ns; ++j) {
    out.taut[j] = active[j];
    out.tension_N[j] = active[j] ? std::max(0.0, mu[j]) * d.distance[j] : 0.0;
  }
  if (touch) {
    out.contact_normal_N.setZero(ncon);
    out.contact_friction_N.setZero(ncon);
    for (int r = 0; r < ncon; ++r) {
      out.max_violation_m = std::max(out.max_violation_m, touch->gap(d, r));
      if (!active[con0 + r]) continue;
      out.contact_normal_N[r] = std::max(0.0, mu[con0 + r]);
      out.contact_friction_N[r] = frictionOf(r).norm();
    }
    // At rest nothing slides: each held contact's friction within Coulomb's cone.
    for (int r = 0; r < ncon && out.ok; ++r) {
      const double limit_N = touch->friction(r) * out.contact_normal_N[r];
      if (out.contact_friction_N[r] > limit_N * (1.0 + 1e-6) + 1e-9 * gscale) {
        out.ok = false;
        out.message = "rest pose: '" + touch->name(r) + "' would slide (its friction " +
                      formatNumber(out.contact_friction_N[r]) +
                      " N over mu N = " + formatNumber(limit_N) + " N)";
      }
    }
  }
  return out;
}

}  // namespace marionette
