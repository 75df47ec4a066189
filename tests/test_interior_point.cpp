// SPDX-License-Identifier: BSD-3-Clause
// The interior point written for the transcription (trajopt/src/interior_point.hpp) against known
// optima and against Ipopt with MUMPS on the same problems: the same optimum (objective within
// 1e-6 relative, rows within 1e-8), on a small dense problem with inequality rows and bounds
// (Hock & Schittkowski no. 71), a nonconvex optimal-control problem by stages, and the
// transcription's own problems.
#include <gtest/gtest.h>

#include <cmath>
#include <algorithm>
#include <cstdio>

#include "interior_point.hpp"
#include "nlp_solve.hpp"
#include "sparse_nlp.hpp"

namespace marionette {
namespace {

using detail::InteriorPointResult;
using detail::InteriorPointStatus;
using detail::NlpSolver;
using detail::SparseNlp;

// Hock & Schittkowski, "Test examples for nonlinear programming codes", 1981, problem 71:
//   min x1 x4 (x1 + x2 + x3) + x3  s.t.  x1 x2 x3 x4 >= 25,  |x|^2 = 40,  1 <= x <= 5.
class Hs071 : public SparseNlp {
 public:
  int variables() const override { return 4; }
  int constraints() const override { return 2; }
  void bounds(Eigen::VectorXd& zl, Eigen::VectorXd& zu, Eigen::VectorXd& gl,
              Eigen::VectorXd& gu) const override {
    zl = Eigen::VectorXd::Constant(4, 1.0);
    zu = Eigen::VectorXd::Constant(4, 5.0);
    gl = Eigen::Vector2d(25.0, 40.0);
    gu = Eigen::Vector2d(kInfinity, 40.0);
  }
  int jacobianNonzeros() const override { return 8; }
  void jacobianStructure(int* rows, int* cols) const override {
    for (int e = 0; e < 8; ++e) rows[e] = e / 4, cols[e] = e % 4;
  }
  int hessianNonzeros() const override { return 10; }
  void hessianStructure(int* rows, int* cols) const override {
    int e = 0;
    for (int i = 0; i < 4; ++i)
      for (int j = 0; j <= i; ++j) rows[e] = i, cols[e++] = j;
  }
  bool evaluate(const Eigen::VectorXd& x, bool) override {
    x_ = x;
    f_ = x[0] * x[3] * (x[0] + x[1] + x[2]) + x[2];
    g_ = Eigen::Vector2d(x.prod(), x.squaredNorm());
    grad_ = Eigen::Vector4d(x[3] * (2 * x[0] + x[1] + x[2]), x[0] * x[3], x[0] * x[3] + 1,
                            x[0] * (x[0] + x[1] + x[2]));
    return true;
  }
  double cost() const override { return f_; }
  const Eigen::VectorXd& gradient() const override { return grad_; }
  const Eigen::VectorXd& rows() const override { return g_; }
  void jacobianValues(double* v) const override {
    const Eigen::VectorXd& x = x_;
    const double p[4] = {x[1] * x[2] * x[3], x[0] * x[2] * x[3], x[0] * x[1] * x[3],
                         x[0] * x[1] * x[2]};
    for (int j = 0; j < 4; ++j) v[j] = p[j], v[4 + j] = 2 * x[j];
  }
  void hessian(const Eigen::VectorXd& x, double sigma, const Eigen::VectorXd& y,
               double* v) override {
    Eigen::Matrix4d H = Eigen::Matrix4d::Zero();
    H(0, 0) = sigma * 2 * x[3];
    H(1, 0) = sigma * x[3];
    H(2, 0) = sigma * x[3];
    H(3, 0) = sigma * (2 * x[0] + x[1] + x[2]);
    H(3, 1) = sigma * x[0];
    H(3, 2) = sigma * x[0];
    for (int i = 0; i < 4; ++i)
      for (int j = 0; j < i; ++j) {
        double product = 1;
        for (int k = 0; k < 4; ++k)
          if (k != i && k != j) product *= x[k];
        H(i, j) += y[0] * product;
      }
    for (int i = 0; i < 4; ++i) H(i, i) += 2 * y[1];
    int e = 0;
    for (int i = 0; i < 4; ++i)
      for (int j = 0; j <= i; ++j) v[e++] = H(i, j);
  }

 private:
  Eigen::VectorXd x_, g_, grad_;
  double f_ = 0;
};

// A pendulum swung from hanging to a target angle in N steps: per step k = 1..N its angle,
// speed and torque (bounded), the midpoint rule's two rows between neighbouring steps, the
// effort and the speed as cost.  Nonconvex (sin), and staged: variables of step k in stage k.
class Pendulum : public SparseNlp {
 public:
  static constexpr int N = 40;
  static constexpr double dt = 0.05, target = 1.5, torque = 5.0;
  int variables() const override { return 3 * N; }
  int constraints() const override { return 2 * N + 1; }
  void bounds(Eigen::VectorXd& zl, Eigen::VectorXd& zu, Eigen::VectorXd& gl,
              Eigen::VectorXd& gu) const override {
    zl = Eigen::VectorXd::Constant(3 * N, -kInfinity);
    zu = Eigen::VectorXd::Constant(3 * N, kInfinity);
    for (int k = 0; k < N; ++k) zl[3 * k + 2] = -torque, zu[3 * k + 2] = torque;
    gl = gu = Eigen::VectorXd::Zero(2 * N + 1);
    gl[2 * N] = gu[2 * N] = target;
  }
  void stages(std::vector<int>& stage) const override {
    stage.resize(3 * N);
    for (int i = 0; i < 3 * N; ++i) stage[i] = i / 3;
  }
  // Row 2k, 2k+1 (k = 0..N-1): step k+1 from step k (step 0: at rest, hanging, no torque).
  int jacobianNonzeros() const override { return static_cast<int>(entries().size()); }
  void jacobianStructure(int* rows, int* cols) const override {
    const auto e = entries();
    for (std::size_t i = 0; i < e.size(); ++i) rows[i] = e[i].first, cols[i] = e[i].second;
  }
  // Per step its three diagonal entries, then (angle k, angle k-1) for k = 1..N-1.
  int hessianNonzeros() const override { return 3 * N + N - 1; }
  void hessianStructure(int* rows, int* cols) const override {
    for (int i = 0; i < 3 * N; ++i) rows[i] = cols[i] = i;
    for (int k = 1; k < N; ++k) rows[3 * N + k - 1] = 3 * k, cols[3 * N + k - 1] = 3 * (k - 1);
  }
  bool evaluate(const Eigen::VectorXd& z, bool) override {
    z_ = z;
    g_.setZero(2 * N + 1);
    grad_.setZero(3 * N);
    f_ = 0;
    for (int k = 0; k < N; ++k) {
      const double a0 = angle(k - 1), w0 = speed(k - 1), a1 = z[3 * k], w1 = z[3 * k + 1],
                   u = z[3 * k + 2];
      g_[2 * k] = a1 - a0 - dt * 0.5 * (w0 + w1);
      g_[2 * k + 1] = w1 - w0 - dt * (u - 9.81 * std::sin(0.5 * (a0 + a1)));
      f_ += dt * (u * u + 0.1 * w1 * w1);
      grad_[3 * k + 2] = 2 * dt * u;
      grad_[3 * k + 1] = 0.2 * dt * w1;
    }
    g_[2 * N] = z[3 * (N - 1)];
    return true;
  }
  double cost() const override { return f_; }
  const Eigen::VectorXd& gradient() const override { return grad_; }
  const Eigen::VectorXd& rows() const override { return g_; }
  void jacobianValues(double* v) const override {
    int e = 0;
    for (int k = 0; k < N; ++k) {
      const double c = 9.81 * dt * 0.5 * std::cos(0.5 * (angle(k - 1) + z_[3 * k]));
      v[e++] = 1.0;            // (2k, a1)
      v[e++] = -0.5 * dt;      // (2k, w1)
      v[e++] = c;              // (2k+1, a1)
      v[e++] = 1.0;            // (2k+1, w1)
      v[e++] = -dt;            // (2k+1, u)
      if (k == 0) continue;
      v[e++] = -1.0;           // (2k, a0)
      v[e++] = -0.5 * dt;      // (2k, w0)
      v[e++] = c;              // (2k+1, a0)
      v[e++] = -1.0;           // (2k+1, w0)
    }
    v[e++] = 1.0;
  }
  void hessian(const Eigen::VectorXd& z, double sigma, const Eigen::VectorXd& y,
               double* v) override {
    std::fill(v, v + hessianNonzeros(), 0.0);
    for (int k = 0; k < N; ++k) {
      // Row 2k+1's term dt g sin((a0 + a1) / 2): each second derivative -dt g sin / 4.
      const double c = y[2 * k + 1] * -9.81 * dt * 0.25 * std::sin(0.5 * (angle(k - 1) + z[3 * k]));
      v[3 * k] += c;
      if (k > 0) {
        v[3 * (k - 1)] += c;
        v[3 * N + k - 1] += c;
      }
      v[3 * k + 1] += sigma * 0.2 * dt;
      v[3 * k + 2] += sigma * 2 * dt;
    }
  }

 private:
  double angle(int k) const { return k < 0 ? 0.0 : z_[3 * k]; }
  double speed(int k) const { return k < 0 ? 0.0 : z_[3 * k + 1]; }
  std::vector<std::pair<int, int>> entries() const {
    std::vector<std::pair<int, int>> e;
    for (int k = 0; k < N; ++k) {
      e.push_back({2 * k, 3 * k});
      e.push_back({2 * k, 3 * k + 1});
      e.push_back({2 * k + 1, 3 * k});
      e.push_back({2 * k + 1, 3 * k + 1});
      e.push_back({2 * k + 1, 3 * k + 2});
      if (k == 0) continue;
      e.push_back({2 * k, 3 * (k - 1)});
      e.push_back({2 * k, 3 * (k - 1) + 1});
      e.push_back({2 * k + 1, 3 * (k - 1)});
      e.push_back({2 * k + 1, 3 * (k - 1) + 1});
    }
    e.push_back({2 * N, 3 * (N - 1)});
    return e;
  }
  Eigen::VectorXd z_, g_, grad_;
  double f_ = 0;
};

void expectTheSameOptimum(SparseNlp& nlp, const Eigen::VectorXd& start, int iterations) {
  const InteriorPointResult ours = detail::solveNlp(nlp, start, iterations, NlpSolver::kInteriorPoint);
  const InteriorPointResult ipopt = detail::solveNlp(nlp, start, iterations, NlpSolver::kIpopt);
  ASSERT_EQ(ipopt.status, InteriorPointStatus::kConverged) << describe(ipopt.status);
  ASSERT_EQ(ours.status, InteriorPointStatus::kConverged)
      << describe(ours.status) << " after " << ours.iterations << " iterations";
  EXPECT_NEAR(ours.objective, ipopt.objective, 1e-6 * std::max(1.0, std::abs(ipopt.objective)));
  // Both within their relaxed bounds (1e-8 of each), the rows alike.
  EXPECT_LE(ours.primal_infeasibility, 1e-7);
  ASSERT_TRUE(nlp.evaluate(ipopt.z, false));
  const Eigen::VectorXd ipopt_rows = nlp.rows();
  ASSERT_TRUE(nlp.evaluate(ours.z, false));
  EXPECT_LT((nlp.rows() - ipopt_rows).lpNorm<Eigen::Infinity>(),
            1e-8 * std::max(1.0, ipopt_rows.lpNorm<Eigen::Infinity>()));
  EXPECT_LT((ours.z - ipopt.z).lpNorm<Eigen::Infinity>(), 1e-4 * (1 + ipopt.z.norm()));
  std::printf("interior point %d iterations (%d factorizations), Ipopt %d\n", ours.iterations,
              ours.factorizations, ipopt.iterations);
}

TEST(InteriorPoint, SolvesHockSchittkowski71) {
  Hs071 nlp;
  const Eigen::Vector4d start(1, 5, 5, 1);
  const InteriorPointResult r = detail::solveInteriorPoint(nlp, start, {});
  ASSERT_EQ(r.status, InteriorPointStatus::kConverged) << describe(r.status);
  EXPECT_NEAR(r.objective, 17.014017289, 1e-6);
  EXPECT_NEAR(r.z[0], 1.0, 1e-6);
  EXPECT_NEAR(r.z[1], 4.742999637, 1e-6);
  EXPECT_NEAR(r.z[2], 3.821149985, 1e-6);
  EXPECT_NEAR(r.z[3], 1.379408293, 1e-6);
  expectTheSameOptimum(nlp, start, 100);
}

TEST(InteriorPoint, MatchesIpoptOnAStagedNonconvexProblem) {
  Pendulum nlp;
  expectTheSameOptimum(nlp, Eigen::VectorXd::Zero(3 * Pendulum::N), 200);
}

}  // namespace
}  // namespace marionette
