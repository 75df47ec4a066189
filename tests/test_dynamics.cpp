// SPDX-License-Identifier: BSD-3-Clause
// The Lagrangian and string derivatives computed by tree recursion must equal central finite
// differences, on random trees (every joint type, branching, full inertias) and on every
// built-in model; and the kinetic energy itself must equal an independent sum over bodies of
// 1/2 m |c_dot|^2 + 1/2 w^T I w with velocities obtained by differentiating poses numerically.
#include <gtest/gtest.h>

#include <functional>

#include "marionette/models/dynamics.hpp"
#include "marionette/models/model_io.hpp"
#include "support/test_models.hpp"

namespace marionette {
namespace {

constexpr double kStep = 1e-6;

// max |A - B| / (1 + max |B|): the error relative to the matrix's own scale.
double relErr(const Eigen::MatrixXd& A, const Eigen::MatrixXd& B) {
  if (A.size() == 0) return 0.0;
  return (A - B).cwiseAbs().maxCoeff() / (1e-12 + B.cwiseAbs().maxCoeff());
}

struct Evaluated {
  double L;
  Eigen::VectorXd Lq, Lv;
};

Evaluated evalL(const Model& m, DynamicsData& d, const Eigen::VectorXd& q,
                const Eigen::VectorXd& v) {
  forwardKinematics(m, d, q);
  computeLagrangian(m, d, q, v, LagrangianOrder::First);
  return {d.kinetic_J - d.potential_J, d.Lq, d.Lv};
}

// Independent kinetic energy: each mass's COM velocity and angular velocity by differentiating
// its pose along q + s v numerically.
double independentKinetic(const Model& m, const Eigen::VectorXd& q, const Eigen::VectorXd& v) {
  DynamicsData dp(m), dm(m), d0(m);
  Eigen::VectorXd vfull = Eigen::VectorXd::Zero(m.nq());
  vfull.head(m.nd()) = v;
  const double s = 1e-6;
  forwardKinematics(m, dp, q + s * vfull);
  forwardKinematics(m, dm, q - s * vfull);
  forwardKinematics(m, d0, q);
  double T = 0.0;
  for (const Mass& ms : m.masses) {
    const auto c = [&](const DynamicsData& d) {
      return Eigen::Vector3d(d.frame_p[ms.frame] + d.frame_R[ms.frame] * ms.com_m);
    };
    const Eigen::Vector3d cdot = (c(dp) - c(dm)) / (2 * s);
    const Eigen::Matrix3d Rdot = (dp.frame_R[ms.frame] - dm.frame_R[ms.frame]) / (2 * s);
    const Eigen::Matrix3d W = Rdot * d0.frame_R[ms.frame].transpose();  // skew(w)
    const Eigen::Vector3d w(W(2, 1), W(0, 2), W(1, 0));
    const Eigen::Matrix3d R = d0.frame_R[ms.frame];
    T += 0.5 * ms.mass_kg * cdot.squaredNorm() +
         0.5 * w.dot(R * ms.inertia_kgm2 * R.transpose() * w);
  }
  return T;
}

void checkModel(const Model& m, unsigned seed) {
  SCOPED_TRACE("model " + m.name + " seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  DynamicsData d(m);
  const int nd = m.nd(), nq = m.nq();
  const Eigen::VectorXd qd = m.initialDynamic() + test::randomVector(rng, nd, 0.4);
  Eigen::VectorXd rho = m.defaultInputs() + test::randomVector(rng, m.nk(), 0.05);
  const Eigen::VectorXd q = m.configuration(qd, rho);
  const Eigen::VectorXd v = test::randomVector(rng, nd, 1.5);

  // Analytic values.
  forwardKinematics(m, d, q);
  computeLagrangian(m, d, q, v, LagrangianOrder::Second);
  const Eigen::VectorXd Lq = d.Lq, Lv = d.Lv;
  const Eigen::MatrixXd M = d.M, Lqv = d.Lqv, Lqq = d.Lqq;
  const double T = d.kinetic_J;
  computeStrings(m, d, q, true);
  const Eigen::MatrixXd Dh = d.Dh;
  const std::vector<Eigen::MatrixXd> D2h = d.D2h;

  // The energy itself, independently.
  EXPECT_NEAR(T, independentKinetic(m, q, v), 1e-7 * (1.0 + std::abs(T)));
  EXPECT_NEAR(T, 0.5 * v.dot(M * v), 1e-12 * (1.0 + std::abs(T)));
  EXPECT_LT(relErr(Lv, M * v), 1e-12);
  EXPECT_LT(relErr(M, M.transpose()), 1e-14);
  EXPECT_LT(relErr(Lqq, Lqq.transpose()), 1e-12);

  // Central differences in q_d and v.
  Eigen::VectorXd Lq_fd(nd), Lv_fd(nd);
  Eigen::MatrixXd Lqq_fd(nd, nd), Lqv_fd(nd, nd), M_fd(nd, nd);
  for (int a = 0; a < nd; ++a) {
    Eigen::VectorXd dq = Eigen::VectorXd::Zero(nq);
    dq[a] = kStep;
    const Evaluated p = evalL(m, d, q + dq, v), n = evalL(m, d, q - dq, v);
    Lq_fd[a] = (p.L - n.L) / (2 * kStep);
    Lqq_fd.row(a) = (p.Lq - n.Lq).transpose() / (2 * kStep);
    Lqv_fd.row(a) = (p.Lv - n.Lv).transpose() / (2 * kStep);
    Eigen::VectorXd dv = Eigen::VectorXd::Zero(nd);
    dv[a] = kStep;
    const Evaluated pv = evalL(m, d, q, v + dv), nv = evalL(m, d, q, v - dv);
    Lv_fd[a] = (pv.L - nv.L) / (2 * kStep);
    M_fd.row(a) = (pv.Lv - nv.Lv).transpose() / (2 * kStep);
  }
  EXPECT_LT(relErr(Lq, Lq_fd), 1e-6) << "Lq\n" << Lq.transpose() << "\nfd\n" << Lq_fd.transpose();
  EXPECT_LT(relErr(Lv, Lv_fd), 1e-6);
  EXPECT_LT(relErr(M, M_fd), 1e-6);
  EXPECT_LT(relErr(Lqv, Lqv_fd), 1e-6) << "Lqv\n" << Lqv << "\nfd\n" << Lqv_fd;
  EXPECT_LT(relErr(Lqq, Lqq_fd), 1e-6) << "Lqq\n" << Lqq << "\nfd\n" << Lqq_fd;

  // Strings: Dh and D2h over all of q (dynamic and kinematic).
  const int ns = m.nstrings();
  Eigen::MatrixXd Dh_fd(ns, nq);
  std::vector<Eigen::MatrixXd> D2h_fd(ns, Eigen::MatrixXd(nq, nq));
  for (int a = 0; a < nq; ++a) {
    Eigen::VectorXd dq = Eigen::VectorXd::Zero(nq);
    dq[a] = kStep;
    forwardKinematics(m, d, q + dq);
    computeStrings(m, d, q + dq, false);
    const Eigen::VectorXd hp = d.h;
    const Eigen::MatrixXd Dhp = d.Dh;
    forwardKinematics(m, d, q - dq);
    computeStrings(m, d, q - dq, false);
    Dh_fd.col(a) = (hp - d.h) / (2 * kStep);
    for (int s = 0; s < ns; ++s) D2h_fd[s].row(a) = (Dhp.row(s) - d.Dh.row(s)) / (2 * kStep);
  }
  EXPECT_LT(relErr(Dh, Dh_fd), 1e-6) << "Dh\n" << Dh << "\nfd\n" << Dh_fd;
  for (int s = 0; s < ns; ++s)
    EXPECT_LT(relErr(D2h[s], D2h_fd[s]), 1e-6) << "string " << m.strings[s].name;
}

TEST(Dynamics, DerivativesMatchFiniteDifferencesOnRandomTrees) {
  for (unsigned seed = 1; seed <= 12; ++seed) {
    const ModelPtr m = test::randomTreeModel(seed, 3 + seed % 6, 1 + seed % 3);
    checkModel(*m, seed);
  }
}

TEST(Dynamics, DerivativesMatchFiniteDifferencesOnBuiltinModels) {
  for (const std::string& name : builtinModelNames()) {
    const ModelPtr m = loadModel(name);
    for (unsigned seed = 1; seed <= 3; ++seed) checkModel(*m, seed);
  }
}

// A pendulum with a known closed form: point-like rod about y, L = 1/2 I w^2 + m g l cos(theta).
TEST(Dynamics, PlanarArmMassMatrixMatchesClosedForm) {
  const ModelPtr m = loadModel("planar-arm");
  DynamicsData d(*m);
  const double t1 = 0.3, t2 = -0.7;
  Eigen::VectorXd q(m->nq());
  q << t1, t2, 0.3, 0.45;
  forwardKinematics(*m, d, q);
  computeLagrangian(*m, d, q, Eigen::VectorXd::Zero(2), LagrangianOrder::MassMatrix);
  // Two-link arm: M11 = I1 + m1 c1^2 + I2 + m2 (l1^2 + c2^2 + 2 l1 c2 cos t2), etc.
  const double m1 = 0.2, m2 = 0.15, l1 = 0.3, c1 = 0.15, c2 = 0.125;
  const double I1 = m1 * 0.09 / 12, I2 = m2 * 0.0625 / 12;
  const double M11 = I1 + m1 * c1 * c1 + I2 + m2 * (l1 * l1 + c2 * c2 + 2 * l1 * c2 * std::cos(t2));
  const double M12 = I2 + m2 * (c2 * c2 + l1 * c2 * std::cos(t2));
  const double M22 = I2 + m2 * c2 * c2;
  EXPECT_NEAR(d.M(0, 0), M11, 1e-14);
  EXPECT_NEAR(d.M(0, 1), M12, 1e-14);
  EXPECT_NEAR(d.M(1, 1), M22, 1e-14);
  // Potential: z of COMs below the shoulder.
  const double V =
      -9.81 * (m1 * c1 * std::cos(t1) + m2 * (l1 * std::cos(t1) + c2 * std::cos(t1 + t2)));
  EXPECT_NEAR(d.potential_J, V, 1e-13);
}

}  // namespace
}  // namespace marionette
