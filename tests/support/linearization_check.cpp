// SPDX-License-Identifier: BSD-3-Clause
#include "support/linearization_check.hpp"

#include <gtest/gtest.h>

#include <algorithm>

#include "marionette/models/dynamics.hpp"

namespace marionette::test {

void checkLinearization(const ModelPtr& m, const State& x, const Eigen::VectorXd& u,
                        const std::string& label, IntegratorOptions opt) {
  SCOPED_TRACE(label);
  opt.dt_s = 0.01;
  opt.residual_rel_tol = 1e-13;  // tight: FD divides solution errors by h
  opt.constraint_tol_m = 1e-14;
  VariationalIntegrator vi(m, opt);
  Eigen::MatrixXd A, B, Tx, Tu;
  ASSERT_EQ(vi.linearize(x, u, A, B, &Tx, &Tu), StepStatus::Ok);
  const int nd = m->nd(), nk = m->nk(), nx = 2 * nd + nk, ns = m->nstrings();
  auto pack = [&](const State& s) {
    Eigen::VectorXd v(nx);
    v << s.q, s.p, s.rho;
    return v;
  };
  auto unpack = [&](const Eigen::VectorXd& v) {
    return State{v.head(nd), v.segment(nd, nd), v.tail(nk)};
  };
  // Steps: 1e-6 in q and rho; in p, M_ii * 1e-6 (a 1e-6 /s velocity change -- a light joint's
  // momentum is tiny, and a fixed step there would be a violent kick).
  Eigen::VectorXd h = Eigen::VectorXd::Constant(nx, 1e-6);
  {
    DynamicsData d(*m);
    Eigen::VectorXd qf(m->nq());
    qf << x.q, x.rho;
    forwardKinematics(*m, d, qf);
    computeLagrangian(*m, d, qf, Eigen::VectorXd::Zero(nd), LagrangianOrder::MassMatrix);
    h.segment(nd, nd) = 1e-6 * d.M.diagonal();
  }
  Eigen::MatrixXd Afd(nx, nx), Bfd(nx, nk), Txfd(ns, nx), Tufd(ns, nk);
  State out = vi.makeState();
  StepReport rep = vi.makeReport(), rep0 = vi.makeReport();
  ASSERT_EQ(vi.step(x, u, out, &rep0), StepStatus::Ok);
  const Eigen::VectorXd x0 = pack(x);
  auto sameContacts = [&] {
    return rep.taut == rep0.taut && rep.stops_active == rep0.stops_active &&
           rep.contacts_sliding == rep0.contacts_sliding &&
           (rep.contact_force_N.array() > 0).matrix() ==
               (rep0.contact_force_N.array() > 0).matrix();
  };
  for (int i = 0; i < nx; ++i) {
    Eigen::VectorXd e = Eigen::VectorXd::Zero(nx);
    e[i] = h[i];
    ASSERT_EQ(vi.step(unpack(x0 + e), u, out, &rep), StepStatus::Ok);
    ASSERT_TRUE(sameContacts()) << "perturbation " << i << " changed the contact set";
    const Eigen::VectorXd fp = pack(out);
    ASSERT_EQ(vi.step(unpack(x0 - e), u, out, &rep), StepStatus::Ok);
    ASSERT_TRUE(sameContacts()) << "perturbation " << i << " changed the contact set";
    Afd.col(i) = (fp - pack(out)) / (2 * h[i]);
    // Tensions come out of the step's solve, ~1e-12 relative: a step 30 times larger keeps
    // their differences above that noise on the light joints (h ~ 1e-11 in p), unless it
    // changes the contact set.
    for (const double factor : {30.0, 1.0}) {
      e[i] = factor * h[i];
      ASSERT_EQ(vi.step(unpack(x0 + e), u, out, &rep), StepStatus::Ok);
      const bool same_plus = sameContacts();
      const Eigen::VectorXd tp = rep.tension_N;
      ASSERT_EQ(vi.step(unpack(x0 - e), u, out, &rep), StepStatus::Ok);
      if (!(same_plus && sameContacts())) continue;
      Txfd.col(i) = (tp - rep.tension_N) / (2 * e[i]);
      break;
    }
  }
  for (int i = 0; i < nk; ++i) {
    Eigen::VectorXd e = Eigen::VectorXd::Zero(nk);
    e[i] = 1e-6;
    ASSERT_EQ(vi.step(x, u + e, out, &rep), StepStatus::Ok);
    ASSERT_TRUE(sameContacts());
    const Eigen::VectorXd fp = pack(out), tp = rep.tension_N;
    ASSERT_EQ(vi.step(x, u - e, out, &rep), StepStatus::Ok);
    ASSERT_TRUE(sameContacts());
    Bfd.col(i) = (fp - pack(out)) / (2e-6);
    Tufd.col(i) = (tp - rep.tension_N) / (2e-6);
  }
  const double errA = (A - Afd).cwiseAbs().maxCoeff() / Afd.cwiseAbs().maxCoeff();
  EXPECT_LE(errA, 1e-5) << "A\n" << A << "\nfd\n" << Afd;
  if (nk > 0) {
    const double errB = (B - Bfd).cwiseAbs().maxCoeff() / Bfd.cwiseAbs().maxCoeff();
    EXPECT_LE(errB, 1e-5) << "B\n" << B << "\nfd\n" << Bfd;
  }
  if (ns == 0) return;
  // The tensions' derivatives (scaled by the largest tension derivative; none when all slack).
  const double scale =
      std::max({Txfd.cwiseAbs().maxCoeff(), nk > 0 ? Tufd.cwiseAbs().maxCoeff() : 0.0, 1e-9});
  if (rep0.tension_N.maxCoeff() > 0) {
    EXPECT_GT(scale, 1e-6);
  }
  EXPECT_LE((Tx - Txfd).cwiseAbs().maxCoeff() / scale, 1e-5) << "dT/dx\n" << Tx << "\nfd\n" << Txfd;
  if (nk > 0) {
    EXPECT_LE((Tu - Tufd).cwiseAbs().maxCoeff() / scale, 1e-5) << "dT/du\n"
                                                               << Tu << "\nfd\n"
                                                               << Tufd;
  }
}

}  // namespace marionette::test
