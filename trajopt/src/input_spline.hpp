// SPDX-License-Identifier: BSD-3-Clause
// The rig's motion as the trajectory optimizer sees it: per input, a uniform cubic B-spline over
// [0, T] whose control points are the decision variables (docs/design.md, trajectory
// optimization).  It starts and ends at rest: the first three control points are the start
// inputs, the last three one free end value.  Its speed and acceleration are B-splines of the
// control points' first and second differences, so bounding those differences bounds the motion
// between samples too, and every finite difference of its samples at any rate (an average of
// them): the limits hold as linear constraints on the variables.
//
// Contents
//   InputSpline   knots, the variable layout, samples and their derivative, the limit rows.
#pragma once

#include <Eigen/Core>
#include <Eigen/SparseCore>
#include <vector>

#include "marionette/models/model.hpp"

namespace marionette::detail {

class InputSpline {
 public:
  // segments K >= 3 uniform pieces over duration_s; samples at rate_hz (t_n = n / rate_hz,
  // n = 0..N with N = round(duration_s * rate_hz)); start: n_k inputs held at t = 0.
  InputSpline(const Model& model, double duration_s, int segments, double rate_hz,
              const Eigen::VectorXd& start);

  int inputs() const { return nk_; }
  int segments() const { return segments_; }
  int samples() const { return static_cast<int>(basis_.rows()); }  // N + 1
  double knotSpacing() const { return spacing_s_; }
  double duration_s() const { return spacing_s_ * segments_; }  // on the sample grid
  // Variables per input: the free inner control points P_2 .. P_{K-2}, then the end value.
  int freePerInput() const { return segments_ - 2; }
  int variables() const { return nk_ * freePerInput(); }
  // Variable index of input j's free point f (0 .. freePerInput() - 1): point by point, so that
  // what the motion up to a sample depends on is a prefix of z (activeVariables).
  int variable(int j, int f) const { return f * nk_ + j; }
  // How many leading variables samples 0 .. n depend on (the later ones do not touch them).
  int activeVariables(int n) const { return active_[n]; }

  // Control points (K + 3 rows: P_-1 .. P_{K+1}, n_k columns) from the variables z.
  Eigen::MatrixXd controlPoints(const Eigen::VectorXd& z) const;
  // The samples (N + 1) x n_k.
  Eigen::MatrixXd sampleInputs(const Eigen::VectorXd& z) const;
  // d(sample n, input j)/dz: the same coefficients for every input, on that input's variables:
  // sampleWeights(n) holds (f, weight) pairs over f = 0 .. freePerInput() - 1.
  const std::vector<std::pair<int, double>>& sampleWeights(int n) const { return weights_[n]; }
  // The variables that best fit (least squares) a sampled motion of the same duration
  // (rows at rate_hz; missing rows held at the last).
  Eigen::VectorXd fit(const Eigen::MatrixXd& samples) const;
  // The same fit through a coarser spline of `segments` pieces (3 .. segments()), then
  // re-expressed in this one: the motion's course without its wiggles.
  Eigen::VectorXd smoothedFit(const Eigen::MatrixXd& samples, int segments) const;
  // The variables of a smooth transfer from the start to `end` (n_k): the control points follow
  // the quintic smoothstep 10 s^3 - 15 s^4 + 6 s^5 of their index.
  Eigen::VectorXd transfer(const Eigen::VectorXd& end) const;

  // The linear limit rows: for each input, each first difference P_{c+1} - P_c (speed, bound
  // max_speed * H) and second difference P_{c+1} - 2 P_c + P_{c-1} (acceleration, bound
  // max_accel * H^2) that involves a variable.  rows x variables, with their bounds.
  struct LimitRows {
    Eigen::SparseMatrix<double, Eigen::RowMajor> matrix;
    Eigen::VectorXd lower, upper;  // including the fixed start points' contribution
  };
  // share (0, 1]: the bounds as this share of each limit (a margin for solvers that end a
  // little outside their linear constraints).
  LimitRows limitRows(const Model& model, double share = 1.0) const;

 private:
  int nk_, segments_;
  double spacing_s_;
  Eigen::VectorXd start_;
  double rate_hz_;
  const Model* model_;  // outlives the spline (the problem's)
  Eigen::MatrixXd basis_;  // (N + 1) x (K + 3): sample n's weight on control point c
  std::vector<std::vector<std::pair<int, double>>> weights_;
  std::vector<int> active_;  // activeVariables(n)
  // Control point c (0 .. K + 2, i.e. P_{c-1}) as (variable f or -1 for the start, factor).
  int pointVariable(int c) const;
};

}  // namespace marionette::detail
