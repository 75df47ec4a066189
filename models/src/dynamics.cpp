// SPDX-License-Identifier: BSD-3-Clause
#include "marionette/models/dynamics.hpp"

#include <algorithm>
#include <cmath>

#include "spatial.hpp"

namespace marionette {

using spatial::ad;
using spatial::ang;
using spatial::Inertia;
using spatial::lin;
using spatial::Mat3;
using spatial::Vec3;
using spatial::Vec6;

DynamicsData::DynamicsData(const Model& model) {
  const int nf = static_cast<int>(model.frames.size());
  const int nd = model.nd(), nq = model.nq(), ns = model.nstrings();
  frame_R.assign(nf, Mat3::Identity());
  frame_p.assign(nf, Vec3::Zero());
  joint_twist.assign(nq, Vec6::Zero());
  joint_cos_sin = Eigen::Matrix2Xd::Zero(2, nq);
  Lq = Eigen::VectorXd::Zero(nd);
  Lv = Eigen::VectorXd::Zero(nd);
  M = Eigen::MatrixXd::Zero(nd, nd);
  Lqv = Eigen::MatrixXd::Zero(nd, nd);
  Lqq = Eigen::MatrixXd::Zero(nd, nd);
  h = Eigen::VectorXd::Zero(ns);
  distance = Eigen::VectorXd::Zero(ns);
  length = Eigen::VectorXd::Zero(ns);
  Dh = Eigen::MatrixXd::Zero(ns, nq);
  D2h.assign(ns, Eigen::MatrixXd::Zero(nq, nq));
  string_puppet_end.assign(ns, Vec3::Zero());
  string_rig_end.assign(ns, Vec3::Zero());
  frame_velocity.assign(nf, Vec6::Zero());
  frame_momentum.assign(nf, Vec6::Zero());
  comp_m.assign(nf, 0.0);
  comp_h.assign(nf, Vec3::Zero());
  comp_J.assign(nf, Mat3::Zero());
  parent_velocity.assign(nd, Vec6::Zero());
  z_twist.assign(nd, Vec6::Zero());
  hessian_variables.assign(nq, 0);
  hessian_columns.assign(nq, Vec3::Zero());
}

void forwardKinematics(const Model& model, DynamicsData& d, const Eigen::VectorXd& q,
                       bool puppet_only, const Eigen::Matrix2Xd* dynamic_cos_sin) {
  const int nd = model.nd();
  static const Mat3 kIdentity = Mat3::Identity();
  static const Vec3 kOrigin = Vec3::Zero();
  const int nf = static_cast<int>(model.frames.size());
  for (int i = 0; i < nf; ++i) {
    if (puppet_only && !model.frame_moved_by_dynamic[i]) continue;
    const Frame& f = model.frames[i];
    const Mat3& Rp = f.parent >= 0 ? d.frame_R[f.parent] : kIdentity;
    const Vec3& pp = f.parent >= 0 ? d.frame_p[f.parent] : kOrigin;
    switch (f.type) {
      case JointType::Fixed:
        if (f.pure_translation)
          d.frame_R[i] = Rp;
        else
          d.frame_R[i].noalias() = Rp * f.offset.linear();
        d.frame_p[i].noalias() = pp + Rp * f.offset.translation();
        break;
      case JointType::Rotate: {
        // g = g_parent * Rot(axis, q): joint twist (p x w, w), w = R_parent axis (docs/design.md,
        // derivatives on the frame tree).
        Mat3& R = d.frame_R[i];
        Vec3 w;
        if (f.axis_index >= 0) {
          // About a coordinate axis k: only the other two columns of R_parent mix.
          double c, s;  // of q
          if (dynamic_cos_sin && f.variable < nd) {
            c = (*dynamic_cos_sin)(0, f.variable);
            s = (*dynamic_cos_sin)(1, f.variable);
          } else {
            c = std::cos(q[f.variable]);
            s = std::sin(q[f.variable]);
          }
          d.joint_cos_sin(0, f.variable) = c;
          d.joint_cos_sin(1, f.variable) = s;
          s *= f.axis_sign;  // of the angle about the axis
          const int k = f.axis_index, a = (k + 1) % 3, b = (k + 2) % 3;
          R.col(k) = Rp.col(k);
          R.col(a) = c * Rp.col(a) + s * Rp.col(b);
          R.col(b) = c * Rp.col(b) - s * Rp.col(a);
          w = f.axis_sign * Rp.col(k);
        } else {
          R.noalias() = Rp * spatial::rotation(f.axis, q[f.variable]);
          w.noalias() = Rp * f.axis;
        }
        d.frame_p[i] = pp;
        d.joint_twist[f.variable] = spatial::twist(pp.cross(w), w);
        break;
      }
      case JointType::Translate: {
        const Vec3 dir = Rp * f.axis;
        d.frame_R[i] = Rp;
        d.frame_p[i] = pp + dir * q[f.variable];
        d.joint_twist[f.variable] = spatial::twist(dir, Vec3::Zero());
        break;
      }
    }
  }
}

namespace {
Inertia compositeOf(const DynamicsData& d, int f) {
  Inertia I;
  I.m = d.comp_m[f];
  I.h = d.comp_h[f];
  I.J = d.comp_J[f];
  return I;
}

// The potential of a joint's own springs at q: its limit's spring (jointLimitTerms) and its
// passive stiffness toward the neutral posture.
LimitTerms jointPotential(const DynamicVariable& v, double q) {
  LimitTerms t;
  if (v.limit.stiffness > 0.0) t = jointLimitTerms(v.limit, q);
  const double k = v.spring.stiffness, dq = q - v.spring.neutral;
  if (k > 0.0) {
    t.V += 0.5 * k * dq * dq;
    t.dV += k * dq;
    t.d2V += k;
  }
  return t;
}
}  // namespace

void computeLagrangian(const Model& model, DynamicsData& d, const Eigen::VectorXd& q,
                       const Eigen::VectorXd& v, LagrangianOrder order) {
  const int nf = static_cast<int>(model.frames.size());
  const int nd = model.nd();
  const Vec3 G(0.0, 0.0, -model.gravity_mps2);

  // Forward: spatial velocity of every frame from the dynamic joints above it (zero, and never
  // written, for the frames no dynamic joint moves: the rig's).
  for (int i = 0; i < nf; ++i) {
    if (!model.frame_moved_by_dynamic[i]) continue;
    const Frame& f = model.frames[i];
    Vec6 V = f.parent >= 0 ? d.frame_velocity[f.parent] : Vec6::Zero();
    if (f.variable >= 0 && f.variable < nd) {
      d.parent_velocity[f.variable] = V;
      V += d.joint_twist[f.variable] * v[f.variable];
    }
    d.frame_velocity[i] = V;
  }

  // Backward: subtree mass, first moment, momentum, and (for the second derivatives) the
  // rotational inertia about the world origin.
  const bool need_J = order != LagrangianOrder::First;
  double T = 0.0, Vg = 0.0;
  for (int i = nf - 1; i >= 0; --i) {
    if (!model.frame_has_mass_below[i]) continue;  // stays zero
    d.comp_m[i] = 0.0;
    d.comp_h[i].setZero();
    if (need_J) d.comp_J[i].setZero();
    d.frame_momentum[i].setZero();
  }
  for (int i = nf - 1; i >= 0; --i) {
    if (!model.frame_has_mass_below[i]) continue;
    const Mat3& R = d.frame_R[i];
    const Vec6& V = d.frame_velocity[i];
    for (int mi : model.frame_masses[i]) {
      const Mass& ms = model.masses[mi];
      const Vec3 c = d.frame_p[i] + R * ms.com_m;
      // Momentum of the body: linear m v_c (v_c = v + w x c), angular c x m v_c + I_c w with
      // I_c w = R I (R^T w): two matrix-vector products, no rotated inertia needed.  (In 3-vector
      // halves: a 6-vector assembled from two 3-vectors and read back whole stalls the loads.)
      const Vec3 w = ang(V), v_origin = lin(V);
      const Vec3 lin_mom = ms.mass_kg * (v_origin + w.cross(c));
      const Vec3 ang_mom = c.cross(lin_mom) + R * (ms.inertia_kgm2 * (R.transpose() * w));
      T += 0.5 * (lin_mom.dot(v_origin) + ang_mom.dot(w));
      Vg -= ms.mass_kg * G.dot(c);
      d.comp_m[i] += ms.mass_kg;
      d.comp_h[i] += ms.mass_kg * c;
      d.frame_momentum[i].head<3>() += lin_mom;
      d.frame_momentum[i].tail<3>() += ang_mom;
      if (need_J)
        d.comp_J[i] += Inertia::fromCom(ms.mass_kg, c, R * ms.inertia_kgm2 * R.transpose()).J;
    }
    const int p = model.frames[i].parent;
    if (p >= 0) {
      d.comp_m[p] += d.comp_m[i];
      d.comp_h[p] += d.comp_h[i];
      if (need_J) d.comp_J[p] += d.comp_J[i];
      d.frame_momentum[p] += d.frame_momentum[i];
    }
  }

  // First derivatives: L_v[k] = xi_k . H_k;  L_q[k] = H_k . [U_k, xi_k] + xi_k . W_k with W_k the
  // gravity wrench on the subtree (force m G at the subtree's centre of mass).
  // (Z_k = [xi_k, U_k] is kept for the second derivatives.)
  for (int k = 0; k < nd; ++k) {
    const int f = model.dynamic_frame[k];
    const Vec6& xi = d.joint_twist[k];
    const Vec6& H = d.frame_momentum[f];
    const Vec6& U = d.parent_velocity[k];
    const Vec3 xl = lin(xi), xa = ang(xi), Hl = lin(H), Ha = ang(H);
    const Vec3 Zl = xa.cross(lin(U)) + xl.cross(ang(U)), Za = xa.cross(ang(U));
    d.Lv[k] = xl.dot(Hl) + xa.dot(Ha);
    d.Lq[k] = -(Hl.dot(Zl) + Ha.dot(Za)) + d.comp_m[f] * xl.dot(G) + xa.dot(d.comp_h[f].cross(G));
    if (need_J) {
      d.z_twist[k].head<3>() = Zl;
      d.z_twist[k].tail<3>() = Za;
    }
  }
  // The joints' own springs: the limits' (Egger, BSc thesis, ETH Zurich 2013 eq. 2.12, spring
  // part, smoothed: see jointLimitTerms) and the passive stiffness toward a neutral posture.
  double Vjoints = 0.0;
  for (int k = 0; k < nd; ++k) {
    const LimitTerms t = jointPotential(model.dynamic[k], q[k]);
    Vjoints += t.V;
    d.Lq[k] -= t.dV;
  }
  d.kinetic_J = T;
  d.potential_J = Vg + Vjoints;
  if (order == LagrangianOrder::First) return;

  // Second derivatives over comparable pairs a <= b (a an ancestor of b, or b itself), from
  // dxi_b/dq_a = [xi_a, xi_b] and dH/dq_a = -ad_a^T H - I ad_a V_a (docs/design.md, derivatives on
  // the frame tree):
  //   M(a,b)    = xi_a . I_b xi_b                    (I_b composite inertia of b's subtree)
  //   Lqv(a,b)  = -Z_a . I_b xi_b
  //   Lqv(b,a)  = -xi_a . P_b                         (a strictly above b)
  //   Lqq(a,b)  = Z_a . P_b + xi_a . Q_b
  // with P_b = I_b Z_b + ad_{xi_b}^T H_b and Q_b = (m_b g_b, h_b x g_b) - ad_{xi_b}^T W_b,
  // g_b = G x w_b (the gravity terms, W_b the subtree's gravity wrench).  Everything that
  // depends on b alone is formed once, so a pair costs five 6-vector dot products.
  const bool second = order == LagrangianOrder::Second;
  for (int b = 0; b < nd; ++b) {
    const int fb = model.dynamic_frame[b];
    const Inertia Ib = compositeOf(d, fb);
    const Vec6& xib = d.joint_twist[b];
    const Vec6 Ixib = Ib * xib;
    Vec6 P, Q;
    if (second) {
      const Vec6& Hb = d.frame_momentum[fb];
      const Vec6 Wb = spatial::twist(d.comp_m[fb] * G, d.comp_h[fb].cross(G));
      const Vec3 gb = G.cross(ang(xib));
      P = Ib * d.z_twist[b] + spatial::adT(xib, Hb);
      Q = spatial::twist(d.comp_m[fb] * gb, d.comp_h[fb].cross(gb)) - spatial::adT(xib, Wb);
    }
    for (int a : model.dynamic_ancestors[b]) {
      const Vec6& xia = d.joint_twist[a];
      const double Mab = xia.dot(Ixib);
      d.M(a, b) = Mab;
      d.M(b, a) = Mab;
      if (!second) continue;
      const Vec6& Za = d.z_twist[a];
      d.Lqv(a, b) = -Za.dot(Ixib);
      if (a != b) d.Lqv(b, a) = -xia.dot(P);
      const double Lqq = Za.dot(P) + xia.dot(Q);
      d.Lqq(a, b) = Lqq;
      d.Lqq(b, a) = Lqq;
    }
  }
  if (!second) return;
  for (int k = 0; k < nd; ++k) d.Lqq(k, k) -= jointPotential(model.dynamic[k], q[k]).d2V;
}

LimitTerms jointLimitTerms(const JointLimit& L, double q) {
  LimitTerms t;
  double depth = 0.0, sign = 0.0;
  if (q > L.upper) {
    depth = q - L.upper;
    sign = 1.0;
  } else if (q < L.lower) {
    depth = L.lower - q;
    sign = -1.0;
  } else {
    return t;
  }
  const double eps = L.softening;
  double phi, dphi, d2phi, s, ds;
  if (eps <= 0.0) {
    phi = 0.5 * depth * depth, dphi = depth, d2phi = 1.0, s = 1.0, ds = 0.0;
  } else if (depth < eps) {
    const double x = depth / eps;
    phi = depth * depth * depth / (6.0 * eps), dphi = 0.5 * depth * x, d2phi = x;
    s = x * x * (3.0 - 2.0 * x), ds = 6.0 * x * (1.0 - x) / eps;
  } else {
    phi = 0.5 * depth * depth - 0.5 * eps * depth + eps * eps / 6.0;
    dphi = depth - 0.5 * eps, d2phi = 1.0, s = 1.0, ds = 0.0;
  }
  t.V = L.stiffness * phi;
  t.dV = sign * L.stiffness * dphi;
  t.d2V = L.stiffness * d2phi;
  t.c = L.damping * s;
  t.dc = sign * L.damping * ds;
  return t;
}

void jointDamping(const Model& model, const Eigen::VectorXd& base, const Eigen::VectorXd& q,
                  Eigen::VectorXd& c, Eigen::VectorXd& dc) {
  for (int i = 0; i < model.nd(); ++i) {
    const LimitTerms t = jointLimitTerms(model.dynamic[i].limit, q[i]);
    c[i] = base[i] + t.c;
    dc[i] = t.dc;
  }
}

Eigen::Vector3d pointPosition(const DynamicsData& d, int frame, const Eigen::Vector3d& local) {
  if (frame < 0) return local;
  return d.frame_p[frame] + d.frame_R[frame] * local;
}

void pointJacobian(const Model& model, const DynamicsData& d, int frame,
                   const Eigen::Vector3d& local, Eigen::MatrixXd& J) {
  J.setZero();
  if (frame < 0) return;
  const Vec3 x = pointPosition(d, frame, local);
  for (int c : model.frame_variable_chain[frame]) {
    const Vec6& xi = d.joint_twist[c];
    J.col(c) = ang(xi).cross(x) + lin(xi);
  }
}

void addPointNormalHessian(const Model& model, const DynamicsData& d, int frame,
                           const Eigen::Vector3d& local, const Eigen::Vector3d& normal,
                           double weight, Eigen::MatrixXd& H) {
  if (frame < 0) return;
  const Vec3 x = pointPosition(d, frame, local);
  const std::vector<int>& chain = model.frame_variable_chain[frame];  // root first
  for (std::size_t j = 0; j < chain.size(); ++j) {
    const Vec6& xb = d.joint_twist[chain[j]];
    const Vec3 moved = ang(xb).cross(x) + lin(xb);  // dp/dq_b
    for (std::size_t i = 0; i <= j; ++i) {
      const double v = weight * normal.dot(ang(d.joint_twist[chain[i]]).cross(moved));
      H(chain[i], chain[j]) += v;
      if (i != j) H(chain[j], chain[i]) += v;
    }
  }
}

void computeStrings(const Model& model, DynamicsData& d, const Eigen::VectorXd& q,
                    bool second_derivatives) {
  const int ns = model.nstrings();
  for (int s = 0; s < ns; ++s) {
    const String& st = model.strings[s];
    const Vec3 a = pointPosition(d, st.puppet_frame, st.puppet_point_m);
    const Vec3 e = pointPosition(d, st.rig_frame, st.rig_point_m);
    const Vec3 dv = a - e;
    const double len = st.length_variable >= 0 ? q[st.length_variable] : st.length_m;
    d.string_puppet_end[s] = a;
    d.string_rig_end[s] = e;
    d.distance[s] = dv.norm();
    d.length[s] = len;
    d.h[s] = 0.5 * (dv.squaredNorm() - len * len);

    // dh/dq = d . (da/dq - de/dq) - l dl/dq, with dx/dq_c = w_c x x + v_c along x's chain.
    auto row = d.Dh.row(s);
    row.setZero();
    if (st.puppet_frame >= 0)
      for (int c : model.frame_variable_chain[st.puppet_frame])
        row[c] += dv.dot(ang(d.joint_twist[c]).cross(a) + lin(d.joint_twist[c]));
    if (st.rig_frame >= 0)
      for (int c : model.frame_variable_chain[st.rig_frame])
        row[c] -= dv.dot(ang(d.joint_twist[c]).cross(e) + lin(d.joint_twist[c]));
    if (st.length_variable >= 0) row[st.length_variable] -= len;
    if (!second_derivatives) continue;
    d.D2h[s].setZero();
    addStringHessian(model, d, s, 1.0, d.D2h[s]);
  }
}

void addStringHessian(const Model& model, DynamicsData& d, int s, double weight,
                      Eigen::MatrixXd& H) {
  const String& st = model.strings[s];
  const Vec3& a = d.string_puppet_end[s];
  const Vec3& e = d.string_rig_end[s];
  const Vec3 dv = a - e;
  // d2h = J^T J + d . d2(a - e) - dl dl^T with J = d(a - e)/dq, whose columns are those of the
  // variables on the two ends' chains: dx/dq_c = w_c x x + v_c.
  std::vector<int>& vars = d.hessian_variables;
  std::vector<Vec3>& cols = d.hessian_columns;
  int n = 0;
  auto gather = [&](int frame, const Vec3& x, double sign) {
    if (frame < 0) return;
    for (int c : model.frame_variable_chain[frame]) {
      const Vec3 col = sign * (ang(d.joint_twist[c]).cross(x) + lin(d.joint_twist[c]));
      const int at = static_cast<int>(std::find(vars.begin(), vars.begin() + n, c) - vars.begin());
      if (at < n) {
        cols[at] += col;
      } else {
        vars[n] = c;
        cols[n++] = col;
      }
    }
  };
  gather(st.puppet_frame, a, 1.0);
  gather(st.rig_frame, e, -1.0);
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j) H(vars[i], vars[j]) += weight * cols[i].dot(cols[j]);
  if (st.length_variable >= 0) H(st.length_variable, st.length_variable) -= weight;
  // d2x/dq_l dq_k = w_l x (w_k x x + v_k) for joint l above (or equal to) joint k on x's chain.
  auto addSecond = [&](int frame, const Vec3& x, double sign) {
    if (frame < 0) return;
    const auto& chain = model.frame_variable_chain[frame];
    for (size_t ik = 0; ik < chain.size(); ++ik) {
      const int k = chain[ik];
      const Vec6& xk = d.joint_twist[k];
      const Vec3 dk = ang(xk).cross(x) + lin(xk);
      for (size_t il = 0; il <= ik; ++il) {
        const int l = chain[il];
        const double val = weight * sign * dv.dot(ang(d.joint_twist[l]).cross(dk));
        H(l, k) += val;
        if (l != k) H(k, l) += val;
      }
    }
  };
  addSecond(st.puppet_frame, a, 1.0);
  addSecond(st.rig_frame, e, -1.0);
}

double maxOverStretch(const Model& model, DynamicsData& d, const Eigen::VectorXd& q) {
  if (model.nstrings() == 0) return 0.0;
  forwardKinematics(model, d, q);
  computeStrings(model, d, q, false);
  return std::max(0.0, (d.distance - d.length).maxCoeff());
}

double mechanicalEnergy(const Model& model, DynamicsData& d, const Eigen::VectorXd& q,
                        const Eigen::VectorXd& qdot) {
  forwardKinematics(model, d, q);
  computeLagrangian(model, d, q, qdot, LagrangianOrder::First);
  return d.kinetic_J + d.potential_J;
}

double potentialEnergy(const Model& model, const DynamicsData& d, const Eigen::VectorXd& q) {
  double V = 0.0;
  for (const Mass& ms : model.masses) {
    const Vec3 c = d.frame_p[ms.frame] + d.frame_R[ms.frame] * ms.com_m;
    V += ms.mass_kg * model.gravity_mps2 * c.z();
  }
  for (int k = 0; k < model.nd(); ++k) V += jointPotential(model.dynamic[k], q[k]).V;
  return V;
}

}  // namespace marionette
