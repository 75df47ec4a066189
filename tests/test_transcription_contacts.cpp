// SPDX-License-Identifier: BSD-3-Clause
// The transcription's contacts (trajopt/src/transcription_problem.hpp): the contact rows' gaps,
// friction frames and second derivatives against central differences, on PuppetCopter's floor
// and self-contacts and on an arm resting on its torso; the problem's derivatives with contacts
// touching and sliding; and a motion that sets the suspended mass down on a floor, solved at
// fixed modes, is the integrator's own (which touches) and ends standing on the floor.
#include <gtest/gtest.h>

#include <random>

#include "discrete_mechanics.hpp"
#include "ipopt_solver.hpp"
#include "marionette/models/contact_rows.hpp"
#include "marionette/models/model_io.hpp"
#include "support/test_models.hpp"
#include "support/transcription_checks.hpp"
#include "nlp_solve.hpp"

namespace marionette {
namespace {

using detail::DiscreteMechanics;
using detail::KnotConstraints;
using detail::TranscriptionProblem;
using detail::TranscriptionSetup;
using test::relativeError;

// `model`'s contact points on the stage's floor, depth_m into it at q (< 0: above it), with the
// links' self-contacts when `self`.
std::shared_ptr<Contacts> floorContacts(const ModelPtr& model, const Eigen::VectorXd& q,
                                        double depth_m, bool self) {
  auto contacts = std::make_shared<Contacts>();
  contacts->points = contactPoints(*model);
  contacts->surfaces.push_back(test::floorEntered(*model, q, depth_m));
  if (self) addSelfContacts(*model, *contacts);
  return contacts;
}

std::vector<int> allRows(const Contacts& contacts) {
  std::vector<int> rows(contacts.rows());
  for (int r = 0; r < contacts.rows(); ++r) rows[r] = r;
  return rows;
}

// The rows of `contacts` that take part in the step within reach_m at q (ContactRows::partGap).
std::vector<int> rowsNear(const ModelPtr& m, const Contacts& contacts, const Eigen::VectorXd& q,
                          double reach_m) {
  ContactRows rows(*m, contacts);
  DynamicsData d(*m);
  forwardKinematics(*m, d, q);
  std::vector<int> out;
  for (int r = 0; r < contacts.rows(); ++r)
    if (rows.partGap(d, r) > -reach_m) out.push_back(r);
  return out;
}

// Every contact row's derivatives at q, with random multipliers and friction, against central
// differences of the knot's own first derivatives (a step of 1e-5: not the knot's 1e-6).  A
// capsule's middle's point x = a + t (b - a) moves with its material point (x_q) and along the
// capsule (t_q): dx/dq = x_q + (b - a) t_q.
void checkContactRows(const ModelPtr& m, std::shared_ptr<const Contacts> contacts,
                      const Eigen::VectorXd& q, const std::string& where) {
  IntegratorOptions options;
  options.contacts = contacts;
  DiscreteMechanics dm(m, options, allRows(*contacts));
  const int nd = m->nd(), nq = m->nq(), ns = m->nstrings(), nt = dm.contactRows();
  ASSERT_GT(nt, 0) << where;
  std::mt19937 rng(5);
  std::uniform_real_distribution<double> positive(0.1, 1.0), any(-1.0, 1.0);
  Eigen::VectorXd lambda(dm.constraintRows()), beta(2 * nt);
  for (int c = 0; c < lambda.size(); ++c) lambda[c] = positive(rng);
  for (int c = 0; c < beta.size(); ++c) beta[c] = any(rng);
  KnotConstraints k, kp, km;
  dm.knot(q, &lambda, k, &beta);
  const double h = 1e-5;
  Eigen::MatrixXd G(nt, nq), X(3 * nt, nq), A(3 * nt, nq), T(nt, nd), B(6 * nt, nd), force(nd, nd);
  for (int i = 0; i < nq; ++i) {
    Eigen::VectorXd qp = q, qm = q;
    qp[i] += h;
    qm[i] -= h;
    dm.knot(qp, nullptr, kp);
    dm.knot(qm, nullptr, km);
    G.col(i) = (kp.g - km.g).segment(ns, nt) / (2 * h);
    for (int t = 0; t < nt; ++t) {
      X.col(i).segment(3 * t, 3) = (kp.x.col(t) - km.x.col(t)) / (2 * h);
      A.col(i).segment(3 * t, 3) = (kp.axis.col(t) - km.axis.col(t)) / (2 * h);
    }
    if (i >= nd) continue;
    T.col(i) = (kp.t - km.t) / (2 * h);
    const Eigen::Matrix3Xd dB = (kp.basis - km.basis) / (2 * h);
    for (int t = 0; t < nt; ++t)
      B.col(i).segment(6 * t, 6) =
          Eigen::Map<const Eigen::Matrix<double, 6, 1>>(dB.middleCols(2 * t, 2).eval().data());
    // The DEL rows' constraint force, G^T lambda + F^T beta.
    force.col(i) = ((kp.G - km.G).leftCols(nd).transpose() * lambda +
                    (kp.F - km.F).leftCols(nd).transpose() * beta) /
                   (2 * h);
  }
  EXPECT_LE(relativeError(k.G.middleRows(ns, nt), G), 1e-6) << where << " dg/dq";
  Eigen::MatrixXd x_q = k.x_q;
  int segments = 0;
  for (int t = 0; t < nt; ++t) {
    x_q.middleRows(3 * t, 3).leftCols(nd) += k.axis.col(t) * k.t_q.row(t);
    if (!dm.segmentContact(t)) {
      EXPECT_EQ(k.axis.col(t).norm() + k.t[t], 0.0) << where << " a point row's axis and t";
      continue;
    }
    ++segments;
    EXPECT_GT(k.axis.col(t).norm(), 0.0) << where;
  }
  EXPECT_LE(relativeError(x_q, X), 1e-6) << where << " dx/dq";
  EXPECT_LE(relativeError(k.axis_q, A), 1e-6) << where << " d(b - a)/dq";
  EXPECT_LE((k.t_q - T).cwiseAbs().maxCoeff(), 1e-5 * std::max(1.0, T.cwiseAbs().maxCoeff()))
      << where << " dt/dq";
  if (where == "puppetcopter") {
    EXPECT_GT(segments, 0);
    EXPECT_GT(T.cwiseAbs().maxCoeff(), 0.1) << "no middle moves along its capsule";
  }
  Eigen::MatrixXd F(2 * nt, nq), B_q(6 * nt, nd);
  for (int t = 0; t < nt; ++t) {
    F.middleRows(2 * t, 2) = k.basis.middleCols(2 * t, 2).transpose() * k.x_q.middleRows(3 * t, 3);
    B_q.middleRows(6 * t, 6) = k.basis_q[t];
  }
  EXPECT_LE(relativeError(k.F, F), 1e-12) << where << " F = B^T dx/dq";
  EXPECT_LE((B_q - B).cwiseAbs().maxCoeff(), 1e-6) << where << " dB/dq";
  EXPECT_LE(relativeError(k.force_q.leftCols(nd), force), 1e-6) << where << " d(force)/dq";
}

TEST(TranscriptionContacts, TheContactRowsDerivativesMatchFiniteDifferences) {
  {
    // PuppetCopter a little off its rest pose: its points on the floor and every self-contact
    // (capsules' ends against capsules and spheres, whose normals turn as a point moves).
    const ModelPtr pc = loadModel("puppetcopter");
    const RestPose rest = computeRestPose(pc, pc->defaultInputs());
    ASSERT_TRUE(rest.ok) << rest.message;
    std::mt19937 rng(11);
    const Eigen::VectorXd q =
        pc->configuration(rest.q + test::randomVector(rng, pc->nd(), 0.2), pc->defaultInputs());
    checkContactRows(pc, floorContacts(pc, q, 0.01, true), q, "puppetcopter");
  }
  {
    // The arm resting on its torso's side (a box that turns on its hip).
    const ModelPtr arm = test::armBesideTorso();
    Eigen::VectorXd q = Eigen::VectorXd::Zero(arm->nq()), qdot(arm->nd());
    test::armSwingingForward(q, qdot);
    auto contacts = std::make_shared<Contacts>();
    contacts->points = contactPoints(*arm);
    addSelfContacts(*arm, *contacts);
    checkContactRows(arm, contacts, q, "arm beside its torso");
  }
}

// p solved by Ipopt from z0 at `modes`, converged within 200 iterations.
Eigen::VectorXd solvedAt(TranscriptionProblem& p, const Eigen::VectorXd& z0,
                         const std::vector<char>& modes) {
  p.setModes(modes);
  p.scaleObjectiveAt(z0);
  const detail::InteriorPointResult solved = detail::solveNlp(p, z0, 200, detail::NlpSolver::kIpopt);
  EXPECT_EQ(solved.status, detail::InteriorPointStatus::kConverged)
      << describe(solved.status) << " after " << solved.iterations << " iterations";
  return solved.z;
}

// The suspended mass over a floor `drop_m` below where it hangs at rest.
struct MassOverAFloor {
  ModelPtr mass = loadModel("suspended-mass");
  std::shared_ptr<Contacts> contacts;
  TranscriptionSetup setup(const std::string& goal, int intervals, double drop_m) {
    TranscriptionSetup s = test::transcriptionFor(mass, goal, intervals);
    contacts = floorContacts(mass, mass->configuration(s.start.q, s.start.rho), -drop_m, false);
    s.integrator.contacts = contacts;
    s.contact_rows = allRows(*contacts);
    VariationalIntegrator vi(mass, s.integrator);
    s.start = vi.stateFromVelocity(s.start.q, Eigen::VectorXd::Zero(mass->nd()), s.start.rho);
    return s;
  }
};

TEST(TranscriptionContacts, TheProblemsDerivativesMatchFiniteDifferencesWithContactsTouching) {
  {
    // The mass let down 3.5 cm onto a floor 3 cm below while its robot moves 10 cm: it lands and
    // its string, at an angle, pulls it along the floor against friction.
    MassOverAFloor m;
    constexpr int N = 20;
    TranscriptionSetup s = m.setup("point:mass=0.1,0,0.4;radius=0.05", N, 0.03);
    TranscriptionProblem p(s);
    ASSERT_EQ(p.contactRows(), 1);
    Eigen::VectorXd end = m.mass->defaultInputs();
    end[0] += 0.1;
    end[1] += 0.035;
    const Eigen::VectorXd z = p.initialGuess(test::quinticInputs(m.mass, end, N, 8));
    int touching = 0;
    double friction = 0.0;
    for (int k = 0; k < N; ++k) {
      touching += z[p.lambdaAt(k) + 1] > 0;
      friction = std::max(friction, std::abs(z[p.frictionAt(k)]));
    }
    EXPECT_GT(touching, 5);
    EXPECT_GT(friction, 0.0);
    test::checkProblemDerivatives(p, z, "suspended mass on the floor");
  }
  {
    // PuppetCopter's rows within 4 cm at its rest pose (the floor 1 cm under its lowest point,
    // its self-contacts), with multipliers and friction at every step and knots moved at random:
    // every contact term.
    const ModelPtr pc = loadModel("puppetcopter");
    constexpr int N = 4;
    TranscriptionSetup s = test::transcriptionFor(pc, "point:hand_l=0.05,0.24,0.40;radius=0.04", N);
    const Eigen::VectorXd q0 = pc->configuration(s.start.q, s.start.rho);
    auto contacts = floorContacts(pc, q0, -0.01, true);
    s.integrator.contacts = contacts;
    s.contact_rows = rowsNear(pc, *contacts, q0, 0.04);
    // Its feet on the floor, its upper arms against its body (a box) and its forearms against
    // its thighs (capsules: their bases turn as the point moves round them), and the middles
    // of its forearms on its thighs and its thighs side by side (their points slide along them).
    ASSERT_EQ(s.contact_rows.size(), 6u);
    TranscriptionProblem p(s);
    Eigen::VectorXd end = pc->defaultInputs();
    end.head(3) += Eigen::Vector3d(0.01, -0.01, 0.01);
    Eigen::VectorXd z = p.initialGuess(test::quinticInputs(pc, end, N, 3));
    std::mt19937 rng(2);
    std::uniform_real_distribution<double> positive(0.001, 0.01), any(-0.005, 0.005);
    const int ns = pc->nstrings(), nt = p.contactRows();
    // Knots apart by a few centimetres: slips over a step as large, along bases that turn.
    for (int k = 1; k <= N; ++k)
      z.segment(p.xAt(k), pc->nd()) += test::randomVector(rng, pc->nd(), 0.1);
    for (int k = 0; k < N; ++k)
      for (int t = 0; t < nt; ++t) {
        z[p.lambdaAt(k) + ns + t] = positive(rng);
        z[p.frictionAt(k) + 2 * t] = any(rng);
        z[p.frictionAt(k) + 2 * t + 1] = any(rng);
      }
    test::checkProblemDerivatives(p, z, "puppetcopter with contacts");
  }
}

// The Lagrangian's Hessian with contacts against central differences of its gradient: the
// contacts' gap rows' curvature in full, and the DEL rows' coupling of the multipliers and
// friction with the configurations (PuppetCopter's six rows within 4 cm, as above).
TEST(TranscriptionContacts, TheHessiansContactTermsMatchFiniteDifferences) {
  const ModelPtr pc = loadModel("puppetcopter");
  constexpr int N = 4;
  TranscriptionSetup s = test::transcriptionFor(pc, "point:hand_l=0.05,0.24,0.40;radius=0.04", N);
  const Eigen::VectorXd q0 = pc->configuration(s.start.q, s.start.rho);
  s.integrator.contacts = floorContacts(pc, q0, -0.01, true);
  s.contact_rows = rowsNear(pc, *s.integrator.contacts, q0, 0.04);
  TranscriptionProblem p(s);
  Eigen::VectorXd z = p.initialGuess(test::quinticInputs(pc, pc->defaultInputs(), N, 2));
  std::mt19937 rng(4);
  std::uniform_real_distribution<double> positive(0.001, 0.01), any(-1.0, 1.0);
  const int nd = pc->nd(), ns = pc->nstrings(), nt = p.contactRows(), nu = ns + nt;
  for (int k = 1; k <= N; ++k) z.segment(p.xAt(k), nd) += test::randomVector(rng, nd, 0.1);
  for (int k = 0; k < N; ++k)
    for (int t = 0; t < nt; ++t) {
      z[p.lambdaAt(k) + ns + t] = positive(rng);
      z.segment(p.frictionAt(k) + 2 * t, 2) = 0.005 * test::randomVector(rng, 2, 1.0);
    }
  const int n = p.variables();
  // The contacts' gap rows (after the DEL rows, n_u a step: the strings', then the contacts').
  Eigen::VectorXd y = Eigen::VectorXd::Zero(p.constraints());
  for (int k = 0; k < N; ++k)
    for (int t = 0; t < nt; ++t) y[N * nd + k * nu + ns + t] = any(rng);
  const Eigen::MatrixXd H = test::lagrangianHessian(p, z, 0.0, y);
  const Eigen::MatrixXd H_fd = test::lagrangianHessianByDifferences(p, z, 0.0, y);
  EXPECT_GT(H.cwiseAbs().maxCoeff(), 0.0);
  EXPECT_LE((H - H_fd).cwiseAbs().maxCoeff(), 1e-5 * H_fd.cwiseAbs().maxCoeff());
  // The DEL rows: the multipliers' and friction's rows of the Hessian.
  y.setZero();
  for (int r = 0; r < N * nd; ++r) y[r] = any(rng);
  const Eigen::MatrixXd D = test::lagrangianHessian(p, z, 0.0, y);
  const Eigen::MatrixXd D_fd = test::lagrangianHessianByDifferences(p, z, 0.0, y);
  const int first = p.lambdaAt(0);
  EXPECT_GT(D.bottomRows(n - first).cwiseAbs().maxCoeff(), 0.0);
  EXPECT_LE((D - D_fd).bottomRows(n - first).cwiseAbs().maxCoeff(),
            1e-5 * D_fd.bottomRows(n - first).cwiseAbs().maxCoeff());
}

// The mass let down onto a floor 5 cm below it (its string let out 8 cm), to the point where it
// lands, solved at the rollout's modes: the solution's inputs re-simulated by the integrator
// (which touches) give its configurations, the mass stays where it ends, standing on the floor
// with its whole weight -- the string slack -- and never below it.
TEST(TranscriptionContacts, AMassSetDownOnAFloorIsTheIntegratorsMotionAndStandsOnIt) {
  MassOverAFloor m;
  constexpr int N = 60;
  const RestPose rest = computeRestPose(m.mass, m.mass->defaultInputs());
  ASSERT_TRUE(rest.ok);
  // The mass's centre (xm, zm) lands 5 cm lower.
  const std::string goal = "point:mass=" + std::to_string(rest.q[0]) + ",0," +
                           std::to_string(rest.q[1] - 0.05) + ";radius=0.02";
  TranscriptionSetup s = m.setup(goal, N, 0.05);
  TranscriptionProblem p(s);
  Eigen::VectorXd end = m.mass->defaultInputs();
  end[1] += 0.08;
  const Eigen::VectorXd z0 = p.initialGuess(test::quinticInputs(m.mass, end, N, 30));
  const std::vector<char> modes = p.modesOf(z0);
  const int nc = p.unilateralRows();
  int landed = 0;
  for (int k = 0; k < N; ++k) landed += modes[k * nc + 1];
  EXPECT_GT(landed, 10);
  const Eigen::VectorXd z = solvedAt(p, z0, modes);
  test::expectTheIntegratorsMotionAtRest(m.mass, s, p, z);
  // Never below the floor; at the end the floor bears m g, the string nothing.
  ContactRows rows(*m.mass, *m.contacts);
  DynamicsData d(*m.mass);
  const Eigen::MatrixXd q = p.configurations(z);
  for (int k = 0; k <= N; ++k) {
    forwardKinematics(*m.mass, d, q.row(k).transpose());
    EXPECT_LE(rows.gap(d, 0), 1e-9) << "knot " << k;
  }
  const double weight_N = m.mass->masses[0].mass_kg * m.mass->gravity_mps2;
  EXPECT_NEAR(z[p.lambdaAt(N - 1) + 1] / s.integrator.dt_s, weight_N, 1e-6 * weight_N);
  EXPECT_LE(z[p.lambdaAt(N - 1)], 1e-9);
}

// The mass let down onto a floor 3 cm below it while its robot moves 20 cm: it lands swinging and
// slides to a stop.  Solved at the rollout's modes -- touching, sliding on the steps it slides
// (on the facet of its cone that its slip faces, mu N on that facet), then sticking -- to where
// the rollout takes it: the solution is the integrator's motion and comes to rest.
TEST(TranscriptionContacts, AMassDraggedAlongAFloorSlidesAsTheIntegratorHasIt) {
  MassOverAFloor m;
  constexpr int N = 60;
  Eigen::VectorXd end = m.mass->defaultInputs();
  end[0] += 0.2;
  end[1] += 0.035;
  const Eigen::MatrixXd inputs = test::quinticInputs(m.mass, end, N, 30);
  // Where the rollout ends, as the goal.
  TranscriptionSetup s = m.setup("point:mass=0,0,0;radius=0.02", N, 0.03);
  Eigen::VectorXd z0 = TranscriptionProblem(s).initialGuess(inputs);
  const Eigen::VectorXd q_end = z0.segment(TranscriptionProblem(s).xAt(N), m.mass->nd());
  s.goal = GoalSpec::parse("point:mass=" + std::to_string(q_end[0]) + ",0," +
                           std::to_string(q_end[1]) + ";radius=0.02");
  TranscriptionProblem p(s);
  z0 = p.initialGuess(inputs);
  const std::vector<char> modes = p.modesOf(z0);
  const int nc = p.unilateralRows();
  int sliding = 0;
  for (int k = 0; k < N; ++k) sliding += modes[k * nc + 1] >= TranscriptionProblem::kSliding;
  EXPECT_GE(sliding, 3);
  const Eigen::VectorXd z = solvedAt(p, z0, modes);
  test::expectTheIntegratorsMotionAtRest(m.mass, s, p, z);
  // Where it slides, on its mode's facet f: its friction on the facet, mu N along d_f, its slip
  // along d_f.
  for (int k = 0; k < N; ++k) {
    const int facet = modes[k * nc + 1] - TranscriptionProblem::kSliding;
    if (facet < 0) continue;
    const Eigen::Vector2d d(std::cos(2 * M_PI * facet / kFrictionFacets),
                            std::sin(2 * M_PI * facet / kFrictionFacets));
    const double mu_lambda = m.contacts->surfaces[0].friction * z[p.lambdaAt(k) + 1];
    EXPECT_NEAR(d.dot(z.segment(p.frictionAt(k), 2)), mu_lambda, 1e-9 * mu_lambda) << k;
    EXPECT_GT(mu_lambda, 0.0);
  }
}

// A capsule's middle's slip over a step, B_k^T (x_{k+1} - (t_{k+1} - t_k) (b - a)_{k+1} - x_k)
// (its material point's: discrete_mechanics.hpp), and its deepest point's own, B_k^T (x_{k+1} -
// x_k), for contact 0 of `dm` between knots q_a and q_b.
struct MiddleSlip {
  Eigen::Vector2d material, point;
  Eigen::Matrix<double, 3, 2> world_basis;  // B_k in the world
};
MiddleSlip middleSlip(DiscreteMechanics& dm, const Eigen::VectorXd& q_a,
                      const Eigen::VectorXd& q_b) {
  KnotConstraints here, next;
  dm.knot(q_a, nullptr, here);
  dm.knot(q_b, nullptr, next);
  const auto B = here.basis.leftCols(2);
  MiddleSlip out;
  out.point = B.transpose() * (next.x.col(0) - here.x.col(0));
  out.material = out.point - (next.t[0] - here.t[0]) * (B.transpose() * next.axis.col(0));
  out.world_basis = here.rotation.leftCols(3) * B;
  return out;
}

// The rod let down level across the bar 4 cm off its centre, on a rough bar (mu 2): it tips and
// rolls over the bar, its contact moving along it by the bar's radius times its turn while no
// material point slips, until, tipped too far, it slides off.  Along the integrator's motion, the
// transcription's slip of its middle's row is zero at every step where it rolls (its deepest
// point's own displacement is not) and opposes its friction where it slides.
TEST(TranscriptionContacts, ACapsulesMiddleRollingOverABarDoesNotSlip) {
  const ModelPtr m = test::rod();
  const auto contacts = test::onAStageBody(*m, test::bar(), 2.0, true);
  const int row = contacts->rows() - 1;
  ASSERT_TRUE(contacts->segmentRow(row));
  IntegratorOptions options;
  options.dt_s = 0.01;
  options.contacts = contacts;
  VariationalIntegrator vi(m, options);
  Eigen::VectorXd q = Eigen::VectorXd::Zero(6);
  q[0] = 0.04;
  q[2] = test::kRodRadius_m + 0.0005;
  State x = vi.stateFromVelocity(q, Eigen::VectorXd::Zero(6), Eigen::VectorXd());
  StepReport rep = vi.makeReport();
  DiscreteMechanics dm(m, options, {row});
  int rolling = 0, sliding = 0;
  double point_m = 0.0, turned_rad = 0.0;
  for (int k = 0; k < 40; ++k) {
    const State before = x;
    ASSERT_EQ(vi.step(x, x.rho, x, &rep), StepStatus::Ok) << "step " << k;
    if (rep.contact_force_N[row] <= 0.0) continue;
    ASSERT_EQ(rep.substeps, 1);
    const MiddleSlip slip = middleSlip(dm, before.q, x.q);
    const Eigen::Vector3d friction_N = rep.contact_friction_N.col(row);
    if (friction_N.norm() > 0.99 * 2.0 * rep.contact_force_N[row]) {
      // Tipped so far that mu N no longer holds it: it slides, against its friction.
      EXPECT_LT(friction_N.dot(slip.world_basis * slip.material), 0.0) << "step " << k;
      ++sliding;
      continue;
    }
    EXPECT_EQ(sliding, 0) << "step " << k << " sticks again";
    EXPECT_LE(slip.material.norm(), 1e-9) << "step " << k;
    point_m = std::max(point_m, slip.point.norm());
    turned_rad = std::max(turned_rad, std::abs(x.q[4]));
    ++rolling;
  }
  EXPECT_GE(rolling, 20);
  EXPECT_GE(sliding, 3);
  EXPECT_GT(turned_rad, 0.05);
  EXPECT_GT(point_m, 1e-4);  // the contact moves along the rod a tenth of a millimetre a step
}

// marionette25 swinging its left arm in across its pelvis's upper edge (as test_segment_contact
// does): its forearm's middle lands on the edge and slides along it, its deepest point moving
// along the forearm.  The problem's slip rows along the integrator's motion are its material
// point's, whose slip opposes the friction the integrator gave it; and the problem's
// derivatives there match finite differences.
TEST(TranscriptionContacts, ACapsulesMiddleSlidingOnAnEdgeSlipsAsTheIntegratorHasIt) {
  const test::ForearmOnPelvis arm = test::forearmOnPelvis();
  const ModelPtr& m = arm.model;
  const int row = arm.row;
  ASSERT_GE(row, 0);
  ASSERT_TRUE(arm.contacts->segmentRow(row));
  constexpr int N = 22;
  TranscriptionSetup s = test::transcriptionFor(m, "point:hand_l=0,0,1;radius=1", N);
  s.integrator.dt_s = 0.01;
  s.integrator.contacts = arm.contacts;
  s.contact_rows = {row};
  VariationalIntegrator vi(m, s.integrator);
  Eigen::VectorXd q, qdot;
  test::armSwingingInAcrossThePelvis(*m, q, qdot);
  s.start = vi.stateFromVelocity(q, qdot, m->defaultInputs());
  const Eigen::MatrixXd inputs = m->defaultInputs().transpose().replicate(N + 1, 1);
  TranscriptionProblem p(s);
  const Eigen::VectorXd z = p.initialGuess(inputs);
  p.evaluate(z, false);
  const int nu = m->nstrings() + 1, slip_row = N * m->nd() + N * nu;
  DiscreteMechanics dm(m, s.integrator, {row});
  State x = s.start;
  StepReport rep = vi.makeReport();
  int sliding = 0;
  double moved_m = 0.0;
  for (int k = 0; k < N; ++k) {
    const State before = x;
    ASSERT_EQ(vi.step(x, inputs.row(k + 1).transpose(), x, &rep), StepStatus::Ok) << k;
    if (rep.contact_force_N[row] <= 0.0) continue;
    ASSERT_EQ(rep.substeps, 1);
    const MiddleSlip slip =
        middleSlip(dm, m->configuration(before.q, before.rho), m->configuration(x.q, x.rho));
    EXPECT_LE((p.rows().segment(slip_row + 2 * k, 2) - slip.material).norm(), 1e-12) << k;
    // Sliding on its cone (mu N), against its slip.
    const Eigen::Vector3d friction_N = rep.contact_friction_N.col(row);
    EXPECT_NEAR(friction_N.norm(), dm.friction(0) * rep.contact_force_N[row],
                0.02 * friction_N.norm());
    EXPECT_LT(friction_N.dot(slip.world_basis * slip.material),
              -0.9 * friction_N.norm() * slip.material.norm())
        << "step " << k;
    moved_m = std::max(moved_m, (slip.point - slip.material).norm());
    ++sliding;
  }
  EXPECT_GE(sliding, 4);
  EXPECT_GT(moved_m, 1e-3);  // its deepest point moved millimetres along the forearm a step
  test::checkProblemDerivatives(p, z, "marionette25's forearm on its pelvis");
  // The slip rows on their own (small beside the DEL rows' terms): their Jacobian in the knots'
  // configurations against central differences, to 1e-6 of their largest -- the deepest point's
  // move along the forearm in it (without its dt_k/dq term, off by a tenth of it).
  p.evaluate(z, true);
  std::vector<int> rows(p.jacobianNonzeros()), cols(p.jacobianNonzeros());
  p.jacobianStructure(rows.data(), cols.data());
  std::vector<double> values(p.jacobianNonzeros());
  p.jacobianValues(values.data());
  const int nq = m->nq();
  Eigen::MatrixXd J = Eigen::MatrixXd::Zero(2 * N, N * nq), J_fd(2 * N, N * nq);
  for (int n = 0; n < p.jacobianNonzeros(); ++n)
    if (rows[n] >= slip_row && rows[n] < slip_row + 2 * N && cols[n] < N * nq)
      J(rows[n] - slip_row, cols[n]) += values[n];
  for (int i = 0; i < N * nq; ++i) {
    Eigen::VectorXd zp = z, zm = z;
    zp[i] += 1e-6;
    zm[i] -= 1e-6;
    p.evaluate(zp, false);
    const Eigen::VectorXd gp = p.rows().segment(slip_row, 2 * N);
    p.evaluate(zm, false);
    J_fd.col(i) = (gp - p.rows().segment(slip_row, 2 * N)) / 2e-6;
  }
  EXPECT_LE((J - J_fd).cwiseAbs().maxCoeff(), 1e-6 * J_fd.cwiseAbs().maxCoeff());
}

}  // namespace
}  // namespace marionette
