// SPDX-License-Identifier: BSD-3-Clause
// Kinematics, the puppet's Lagrangian and the string constraints, with exact first and second
// derivatives computed by recursion over the frame tree (docs/design.md, derivatives on the frame
// tree) -- no finite differences.
//
// Contents
//   DynamicsData          per-thread scratch + results for one Model (no allocation after
//                         construction).
//   forwardKinematics     frame poses and joint twists at q.
//   computeLagrangian     L = T - V and dL/dq, dL/dv, and optionally M, d2L/dqdv, d2L/dq2.
//   computeStrings        string constraint values h, distances, Dh and (optionally) D2h.
//   addStringHessian      weight * D2h of one string added into a matrix, sparsely.
//   pointPosition / pointJacobian   world position of a point fixed in a frame, and d/dq.
//   addPointNormalHessian  weight * the second derivative of a point along a fixed direction.
//
// Sizes: n_d dynamic variables, n_k kinematic, n_q = n_d + n_k, n_s strings.
// L depends only on q_d and v = dq_d/dt (the rig is massless); strings depend on all of q.
//
// Sign conventions:
//   string constraint h_j = 1/2 (|a_j - e_j|^2 - l_j^2) <= 0  (a on the puppet, e on the rig)
//   potential V = gravity + joint-limit springs (1/2 k (q - limit)^2 beyond a limit).
#pragma once

#include <Eigen/Core>
#include <vector>

#include "marionette/models/model.hpp"

#pragma GCC visibility push(default)  // the library's API (docs/design.md, layout)

namespace marionette {

using Vector6d = Eigen::Matrix<double, 6, 1>;

struct DynamicsData {
  explicit DynamicsData(const Model& model);

  // ---- forwardKinematics outputs ----
  std::vector<Eigen::Matrix3d> frame_R;  // per frame: world rotation
  std::vector<Eigen::Vector3d> frame_p;  // per frame: world position of the origin (m)
  std::vector<Vector6d> joint_twist;     // per q index: spatial twist xi^s of its joint (v, w)
  Eigen::Matrix2Xd joint_cos_sin;        // 2 x n_q: cos q_i, sin q_i of each coordinate-axis
                                         // rotation's variable (unset for the others)

  // ---- computeLagrangian outputs ----
  double kinetic_J = 0.0;
  double potential_J = 0.0;
  Eigen::VectorXd Lq;   // n_d: dL/dq_d
  Eigen::VectorXd Lv;   // n_d: dL/dv = M v
  Eigen::MatrixXd M;    // n_d x n_d: mass matrix = d2L/dv2       (order >= MassMatrix)
  Eigen::MatrixXd Lqv;  // n_d x n_d: (a,b) = d2L/dq_a dv_b        (order Second)
  Eigen::MatrixXd Lqq;  // n_d x n_d: d2L/dq2, symmetric           (order Second)

  // ---- computeStrings outputs ----
  Eigen::VectorXd h;                               // n_s: constraint values (m^2)
  Eigen::VectorXd distance;                        // n_s: |a - e| (m)
  Eigen::VectorXd length;                          // n_s: string length l (m)
  Eigen::MatrixXd Dh;                              // n_s x n_q: dh/dq
  std::vector<Eigen::MatrixXd> D2h;                // n_s of n_q x n_q (order Second)
  std::vector<Eigen::Vector3d> string_puppet_end;  // n_s: world positions a_j
  std::vector<Eigen::Vector3d> string_rig_end;     // n_s: world positions e_j

  // ---- internal scratch (per frame / per dynamic variable) ----
  std::vector<Vector6d> frame_velocity;          // spatial velocity of each frame (dynamic part)
  std::vector<Vector6d> frame_momentum;          // subtree momentum H
  std::vector<double> comp_m;                    // subtree mass
  std::vector<Eigen::Vector3d> comp_h;           // subtree first moment sum(m c)
  std::vector<Eigen::Matrix3d> comp_J;           // subtree rotational inertia about world origin
  std::vector<Vector6d> parent_velocity;         // per dynamic variable: U_k (velocity above joint)
  std::vector<Vector6d> z_twist;                 // per dynamic variable: Z_k = [xi_k, U_k]
  std::vector<int> hessian_variables;            // addStringHessian: the variables moving a string
  std::vector<Eigen::Vector3d> hessian_columns;  // and d(a - e)/dq's columns for them
};

// Frame poses and joint twists at q (n_q).  With puppet_only, only the frames a dynamic
// variable moves are updated: the rig's must already hold this q's kinematic part.  With
// dynamic_cos_sin (2 x n_d), the coordinate-axis rotations of dynamic variables take their cos and
// sin from it instead of computing them (a caller that has them by angle addition).
void forwardKinematics(const Model& model, DynamicsData& data, const Eigen::VectorXd& q,
                       bool puppet_only = false, const Eigen::Matrix2Xd* dynamic_cos_sin = nullptr);

enum class LagrangianOrder { First, MassMatrix, Second };

// After forwardKinematics at q: evaluates L at (q_d, v) with v the n_d dynamic velocities.
// First fills kinetic_J, potential_J, Lq, Lv; MassMatrix adds M; Second adds M, Lqv, Lqq.
// q_d is needed for the joint-limit springs.
void computeLagrangian(const Model& model, DynamicsData& data, const Eigen::VectorXd& q,
                       const Eigen::VectorXd& v, LagrangianOrder order);

// After forwardKinematics at q: fills h, distance, length, Dh, string ends; D2h if second.
void computeStrings(const Model& model, DynamicsData& data, const Eigen::VectorXd& q,
                    bool second_derivatives);

// After computeStrings at q: H += weight * D2h of string s (H n_q x n_q), touching only the
// entries of the variables that move the string's ends (a few dozen of D2h's n_q^2), the way to
// form sum_j lambda_j D2h_j.
void addStringHessian(const Model& model, DynamicsData& data, int string, double weight,
                      Eigen::MatrixXd& H);

// After forwardKinematics: world position of a point given in frame coordinates (-1 = world).
Eigen::Vector3d pointPosition(const DynamicsData& data, int frame, const Eigen::Vector3d& local);
// d(point)/dq into J (3 x n_q; overwritten).
void pointJacobian(const Model& model, const DynamicsData& data, int frame,
                   const Eigen::Vector3d& local, Eigen::MatrixXd& J);
// H += weight * d2(normal . point)/dq2 (H n_q x n_q), touching only the variables that move the
// frame: for a at or above b on its chain, d2 p / dq_a dq_b = w_a x (w_b x p + v_b) (the joints'
// spatial twists (v, w)).  A contact row's curvature, the way to form sum_c lambda_c D2g_c.
void addPointNormalHessian(const Model& model, const DynamicsData& data, int frame,
                           const Eigen::Vector3d& local, const Eigen::Vector3d& normal,
                           double weight, Eigen::MatrixXd& H);

// Joint-limit spring and damper at q (Egger, BSc thesis, ETH Zurich 2013 eq. 2.12), smoothed so
// that Newton's method sees a continuous residual and Jacobian: at depth d beyond a limit, the
// spring potential is k phi(d), phi(d) = d^3 / (6 eps) for d < eps and d^2/2 - eps d/2 + eps^2/6
// beyond (C^2, the thesis's k (d - eps/2) force once past eps); the damper coefficient is c s(d /
// eps), s the C^1 smoothstep 3x^2 - 2x^3 (1 beyond).  eps = limit.softening.
struct LimitTerms {
  double V = 0.0;    // potential (J)
  double dV = 0.0;   // dV/dq
  double d2V = 0.0;  // d2V/dq2
  double c = 0.0;    // damper coefficient
  double dc = 0.0;   // dc/dq
};
LimitTerms jointLimitTerms(const JointLimit& limit, double q);
// Each dynamic variable's damping coefficient at q (n_d or more; its first n_d entries): `base`
// (n_d) plus its joint-limit damper, into c, and dc/dq_i into dc (both n_d, sized by the caller).
void jointDamping(const Model& model, const Eigen::VectorXd& base, const Eigen::VectorXd& q,
                  Eigen::VectorXd& c, Eigen::VectorXd& dc);

// The largest over-stretch max(0, |a - e| - l) over the strings at configuration q (n_q), m.
double maxOverStretch(const Model& model, DynamicsData& data, const Eigen::VectorXd& q);

// Kinetic + potential energy (J) at configuration q (n_q) and dynamic velocity qdot (n_d).
double mechanicalEnergy(const Model& model, DynamicsData& data, const Eigen::VectorXd& q,
                        const Eigen::VectorXd& qdot);

// Potential energy of gravity and joint-limit springs only (J), after forwardKinematics.
double potentialEnergy(const Model& model, const DynamicsData& data, const Eigen::VectorXd& q);

}  // namespace marionette

#pragma GCC visibility pop
