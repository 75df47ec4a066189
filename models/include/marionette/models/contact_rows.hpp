// SPDX-License-Identifier: BSD-3-Clause
// Every contact row's geometry at a configuration, as the integrator's step has it (contact.hpp:
// a surface row's gap offset + r - n . p(q), a body row's r + r_body - |x - clamp(x)|, a segment
// row's at its capsule's point that enters deepest): its gap
// and gradient, where its point is in the frame friction is written in, and a touching row's
// point held where it touches -- two tangential rows, its displacement along the surface (along
// the body, in the body's frame).  The rest pose stands on these rows (rest_pose.hpp: a puppet
// standing with friction has one answer, the one its settling found); the transcription of the
// integrator makes them its contact rows (trajopt).  One per thread: it holds scratch.
#pragma once

#include <Eigen/Core>
#include <string>
#include <vector>

#include "marionette/models/contact.hpp"
#include "marionette/models/dynamics.hpp"

#pragma GCC visibility push(default)  // the library's API (docs/design.md, layout)

namespace marionette {

class ContactRows {
 public:
  // A gradient's place: a row of a (column-major) matrix, or a row vector.
  using GradientRow = Eigen::Ref<Eigen::RowVectorXd, 0, Eigen::InnerStride<>>;

  // model and contacts outlive it.
  ContactRows(const Model& model, const Contacts& contacts);

  int rows() const { return contacts_.rows(); }
  std::string name(int row) const { return contacts_.rowName(row); }
  double friction(int row) const;  // Coulomb's mu of the row's pair

  // Row `row`'s gap at d's kinematics (forwardKinematics done), and its gradient (1 x n_d) into
  // `gradient` when given.
  double gap(const DynamicsData& d, int row, GradientRow gradient);
  double gap(const DynamicsData& d, int row) const { return pose(d, row).gap; }
  // Its gap where it takes part in the integrator's step: a segment row's only where its middle
  // enters deeper than its ends (segmentRowGap), else -infinity; any other row's gap.
  double partGap(const DynamicsData& d, int row) const;
  // Where row `row`'s point is for its friction, at d's kinematics: its centre x in the body's
  // core frame (world for a surface) and the slip basis B there (the surface's tangentBasis, a
  // body's coreTangents of the normal out of its core at x), so that its slip over a step is
  // B_k^T (x_{k+1} - x_k) and its friction force's rows are B^T dx/dq (the integrator's).  With
  // x_jacobian, dx/dq (3 x n_d) into it: R^T (J_point - J_body), exact.  R B is the basis in the
  // world: the step's friction force f on the point is the impulse -dt (R B)^T f on the rows
  // B^T dx/dq (the generalized force -(dx/dq)^T B beta).
  //
  // A segment row's point is its capsule's point that enters deepest, x = a + t (b - a) with a,
  // b its core segment's ends in the core frame: x_jacobian is then its material point's (t
  // held), and t and the axis b - a say where it is, so that the material point held at t_k is
  // at x_{k+1} - (t_{k+1} - t_k) axis_{k+1} after the step.  With axis_jacobian, d(b - a)/dq
  // (3 x n_d) into it (zero for a point row).
  struct SlipFrame {
    Eigen::Matrix3d R = Eigen::Matrix3d::Identity();  // the core frame's rotation (world)
    Eigen::Vector3d x = Eigen::Vector3d::Zero();
    Eigen::Matrix<double, 3, 2> basis = Eigen::Matrix<double, 3, 2>::Zero();
    double t = 0.0;                                  // a segment row's place along its capsule
    Eigen::Vector3d axis = Eigen::Vector3d::Zero();  // a segment row's b - a (core frame, m)
  };
  SlipFrame slipFrame(const DynamicsData& d, int row, Eigen::MatrixXd* x_jacobian = nullptr,
                      Eigen::MatrixXd* axis_jacobian = nullptr);

  // Holds `row` from d's kinematics on: its point's displacement from here along the two
  // tangents of its normal here (a body row's in the body's frame; a segment row's point is its
  // capsule's material point that enters deepest here).  Released: not held.
  void hold(const DynamicsData& d, int row);
  void release(int row) { held_[row] = 0; }
  bool held(int row) const { return held_[row] != 0; }
  // A held row's two tangential displacements (m) and their gradient (2 x n_d) at d: exact at
  // zero displacement (a body row's tangents turn with the body; their turn is left out).
  void slip(const DynamicsData& d, int row, Eigen::Vector2d& s, Eigen::Ref<Eigen::MatrixXd> S);

 private:
  struct Posed {
    int frame = -1;           // the point's frame
    Eigen::Vector3d local_m;  // its centre there
    Eigen::Vector3d p;        // and in the world
    Eigen::Matrix3d R;  // a body row's core frame (world)
    Eigen::Vector3d o;  // its origin (world)
    Eigen::Vector3d n;  // the unit normal out of the surface or the core (world)
    double gap = 0.0;
    double t = 0.0;                                    // a segment row's: segmentCoreGap's t,
    Eigen::Vector3d a_core = Eigen::Vector3d::Zero();  // and its segment's ends (core frame)
    Eigen::Vector3d b_core = Eigen::Vector3d::Zero();
  };
  Posed pose(const DynamicsData& d, int row) const;
  int pointFrame(int row) const;  // the frame of its point (a segment row's capsule's)
  int bodyFrame(int row) const;   // a body row's body's frame (kStageFrame), -1 for a surface
  // J_point - J_body at the point `posed` has (3 x n_d, into rel_J_).
  void relativeJacobian(const DynamicsData& d, int row, const Posed& posed);

  const Model& model_;
  const Contacts& contacts_;
  int nd_;
  std::vector<char> held_;
  // Per row, while held: the point's anchor (world for a surface or the stage's body, else in
  // the body's frame coordinates) and the two tangents (the same frames).
  std::vector<Eigen::Vector3d> anchor_;
  std::vector<Eigen::Vector3d> held_point_m_;  // the point held, in its frame
  std::vector<Eigen::Matrix<double, 3, 2>> tangents_;
  Eigen::MatrixXd point_J_, body_J_, rel_J_;
};

}  // namespace marionette

#pragma GCC visibility pop
