// SPDX-License-Identifier: BSD-3-Clause
// VariationalIntegrator's solver and its scratch (the public class: integrator.hpp).  The step
// and its helpers are in integrator.cpp, the Newton iteration in integrator_newton.cpp, the
// friction's modes in integrator_friction.cpp, every row's mode at once in integrator_modes.cpp,
// the exact linearization in integrator_linearization.cpp.
#pragma once

#include <Eigen/Cholesky>
#include <Eigen/Core>
#include <memory>
#include <vector>

#include "marionette/models/dynamics.hpp"
#include "marionette/models/integrator.hpp"
#include "step_kkt.hpp"
#include "tree_lu.hpp"

namespace marionette {

// Trust region (rad or m): a Newton correction, or the initial guess's move, larger than this
// within a single step leaves the basin of the step's solution.
constexpr double kStepLimit = 0.25;
// A contact row whose sphere is farther than this from its surface at q_k (m) takes no part in
// the step: its gradient is not formed, and should the step's answer end inside the surface, the
// step fails and the substep fallback (a point moving faster than 5 m/s at 10 ms) takes it.
constexpr double kContactReach_m = 0.05;
// A self-contact row's: two links rarely close 1 cm in a step (1 m/s at 10 ms), and a hanging
// puppet has dozens of pairs within 5 cm (an arm beside the body) whose gradients would cost
// every step.  Closer in one step, the step falls back to substeps.
constexpr double kSelfContactReach_m = 0.01;
// Times a row may join or leave the active set within one step (so that it cannot thrash).
constexpr int kMaxFlips = 4;
// A regularisation of the contact rows in the Newton matrix only, relative to the contact's
// mobility (mobility(): about its rows' own terms of the Schur complement S): the iteration's
// impulse corrections solve (S + eps diag S) dl = r.  Redundant contacts (a capsule lying flat
// sticks at both ends: the same slip along its axis twice; two feet on hinged legs: the same
// sideways slip) then move their internal impulse by the rows' inconsistency / eps: little where it
// is an iteration's curvature, which the next iterations remove, and enough where it lasts (a
// string dragging a body that sticks at both ends) for the friction cone to give way.  The rows
// themselves are exact (a gap closed, a sticking point's slip zero), and the converged step does
// not depend on it; it slows the iteration's convergence to a factor eps per iteration at worst.
constexpr double kContactRegularization = 1e-4;

struct VariationalIntegrator::Impl {
  Impl(ModelPtr model, IntegratorOptions options);

  // The public operations (integrator.hpp documents them).
  StepStatus step(const State& x, const Eigen::VectorXd& rho_next, State& next, StepReport* report);
  StepStatus linearize(const State& x, const Eigen::VectorXd& rho_next, Eigen::MatrixXd& A,
                       Eigen::MatrixXd& B, Eigen::MatrixXd* tension_x, Eigen::MatrixXd* tension_u);
  StepStatus linearizeStep(const State& x, const Eigen::VectorXd& rho_next, StepLinearization& out);
  State stateFromVelocity(const Eigen::VectorXd& q, const Eigen::VectorXd& qdot,
                          const Eigen::VectorXd& rho);
  State makeState() const;
  StepReport makeReport() const;

  // The first taut set (the rows tight at q_k, contacts sticking) and multipliers (0).
  void startActiveSet();
  // Semismooth Newton on (q_{d,k+1}, lambda) and the taut set.  Iterations, or -1.
  int solveNewton(const State& x, const Eigen::VectorXd& rho_next);
  void evaluateResidual(const State& x, const Eigen::VectorXd& rho_next, bool jacobian,
                        bool second_derivatives = false);
  void applyMultipliers();  // residual_ from residual_free_ and the taut set's lambda
  void assembleJacobian();  // the Lagrangian block and the multipliers' blocks
  void assembleMultiplierBlocks();
  StepStatus stepOnce(const State& x, const Eigen::VectorXd& rho_next, State& next,
                      StepReport* report);
  void assembleFullQ(const Eigen::VectorXd& qd, const Eigen::VectorXd& rho, Eigen::VectorXd& q);
  // Fills gap (and h) for every constraint at q, the strings taken from d (computed at q), the
  // contacts from d's kinematics (and their spheres' centres into contact_points).
  // Self-contact rows not near at q_k (contact_near_) only with every_self_row (else their gap
  // reads -1: they take no part in the iteration; the step's end checks them); with it, a row
  // whose body's bounding sphere is beyond kSelfContactReach_m reads an upper bound of its gap.
  void constraintsAt(const Eigen::VectorXd& q, const DynamicsData& d, Eigen::VectorXd& gap,
                     Eigen::VectorXd* h, Eigen::Matrix3Xd& contact_points,
                     bool every_self_row = true);
  // Contact row c's point, and its surface (c < self_row_) or self-contact (c >= self_row_).
  bool isSegmentRow(int c) const { return c >= self_row_ && selfContact(c).segment >= 0; }
  // (Not of a segment row.)
  const ContactPoint& contactPoint(int c) const {
    return c >= self_row_ ? contacts_->points[selfContact(c).point]
                          : contacts_->points[(c - contact_row_) % contacts_->points.size()];
  }
  const ContactSurface& contactSurface(int c) const {
    return contacts_->surfaces[(c - contact_row_) / contacts_->points.size()];
  }
  const SelfContact& selfContact(int c) const { return contacts_->self[c - self_row_]; }
  double frictionOf(int c) const {
    return c >= self_row_ ? selfContact(c).friction : contactSurface(c).friction;
  }
  // Self-contact row c at d's kinematics (contact.hpp): its gap, the normal out of the body and
  // the sphere's centre in the body's core frame, the core frame's pose, the centre (world).
  // A segment row's sphere is at its segment's point that enters deepest (segmentCoreGap), at
  // segment_z along the capsule's core z axis; its capsule's core pose is set by the caller.
  struct SelfGeometry {
    double gap = 0.0;
    Eigen::Vector3d normal_core = Eigen::Vector3d::Zero(), x_core = Eigen::Vector3d::Zero();
    Eigen::Vector3d origin, centre = Eigen::Vector3d::Zero();  // (set by the caller)
    Eigen::Matrix3d rotation;
    // A segment row's capsule's core (world; set by the caller).
    Eigen::Matrix3d segment_R = Eigen::Matrix3d::Identity();
    Eigen::Vector3d segment_o = Eigen::Vector3d::Zero();
    double segment_z = 0.0;  // its sphere's centre on the capsule's core z axis (m)
    SegmentGap segment;      // segmentCoreGap's answer, and the ends it was given
    Eigen::Vector3d segment_a = Eigen::Vector3d::Zero(), segment_b = Eigen::Vector3d::Zero();
  };
  SelfGeometry selfGeometry(const DynamicsData& d, int c) const;
  // The same from the points' and bodies' poses of the last poseSelfContacts (one pose per point
  // and body for all the rows that share it): every point and body, or only the near rows'
  // (near_points_, near_bodies_).
  void poseSelfContacts(const DynamicsData& d, bool every = true);
  SelfGeometry selfGeometryPosed(int c) const;
  SelfGeometry selfGap(int c, SelfGeometry g) const;  // g's centre and core pose set
  // A segment row's (selfGap's for it): g's core and capsule poses set.
  SelfGeometry segmentGap(int c, SelfGeometry g) const;
  // Whether segment row c takes part at the poses of the last poseSelfContacts: its deepest
  // point inside the segment, deeper than its ends by margin_m (segmentRowGap); its gap then,
  // else -1 (its ends' rows stand for it).  The step takes it from q_k where it is deeper by
  // kSegmentMargin_m, and fails one that did not take part and ends deeper by twice that (the
  // substeps then take it): without the band between, a middle creeping deeper than a touching
  // end never took part in any substep and failed each one at its end.
  double segmentRowGapPosed(int c, double margin_m) const;
  // A segment row's capsule's point at segment_z (its core's z axis, m) in the body's core frame,
  // at the poses of the last poseSelfContacts: where its friction holds it over the step.
  Eigen::Vector3d segmentPointPosed(int c, double segment_z) const;
  // Its material point's Jacobian (3 x n_q, into point_J_) and its point in the capsule's frame.
  void segmentPointJacobian(const DynamicsData& d, int c, double segment_z);
  // J_point - J_body at the sphere's centre (3 x n_d, into rel_J_), at d's kinematics.
  void selfRelativeJacobian(const DynamicsData& d, int c, const SelfGeometry& g);
  // Self-contact row c's generalized impulse lambda_n G^T - F^T lambda_t at q (d's kinematics
  // there, n_d), its normal and slip basis taken at q: how the step's residual depends on q_k.
  Eigen::VectorXd selfImpulse(const DynamicsData& d, int c, double lambda_n,
                              const Eigen::Vector2d& lambda_t);
  // Self-contact row c's normal and slip basis at q_k (before its gradients there).
  void startSelfRow(int c);
  // Contact row c's gradient at d's kinematics into G's row c - contact_row_ (and, with F, its
  // tangential rows T^T J into F's rows 2 (c - contact_row_) + 0, 1).
  void contactGradient(const DynamicsData& d, int c, Eigen::MatrixXd& G,
                       Eigen::MatrixXd* F = nullptr);
  // Friction's unknowns.  A touching contact row c with friction has two tangential impulses
  // (ids tangentId(c, 0..1), their rows the slip over the step) and its cone's facets (ids
  // facetId(c, i), each a unilateral row d_i^T lambda_t - mu lambda_n <= 0 whose multiplier is
  // the slip along -d_i).  Ids from nc_ on; ids below nc_ are the constraint rows.
  bool hasFriction(int c) const { return frictionOf(c) > 0.0; }
  int tangentId(int c, int k) const { return nc_ + 2 * (c - contact_row_) + k; }
  int facetId(int c, int i) const { return facet_id0_ + kFrictionFacets * (c - contact_row_) + i; }
  int contactOfId(int id) const {  // the contact row of a friction id
    return contact_row_ + (id < facet_id0_ ? (id - nc_) / 2 : (id - facet_id0_) / kFrictionFacets);
  }
  // Contact row c's slip over the step: T^T (p(q_{k+1}) - p(q_k)), its centre's displacement
  // along the surface (exact, so that redundant contacts sticking stay consistent: a body that
  // stays put satisfies every one of them); a self-contact's in its body's core frame, along the
  // tangents there at q_k.
  Eigen::Vector2d slipOf(int c) const {
    const int r = c - contact_row_;
    return slip_basis_[r].transpose() * (contact_p2_.col(r) - contact_p1_.col(r));
  }
  // active_ and position_ from is_active_.
  void rebuildActive();
  // True if a contact row is in the taut set: the rows may be dependent (two contacts sticking on
  // one body), and the linearization solves by a complete orthogonal decomposition.
  bool contactsActive() const { return !active_.empty() && active_.back() >= contact_row_; }
  // Every constraint row and every touching contact's facets complementary: an active one's
  // multiplier >= 0 (to the tolerances), an inactive one's row <= 0.
  bool complementary(double lambda_tol, double facet_tol) const;
  // Contact row c's tangent basis at q_k (world).
  const Eigen::Matrix<double, 3, 2>& tangentsOf(int c) const { return tangents_[c - contact_row_]; }
  // Touching contact c's friction mode for the current iterate: sticking, or sliding on one
  // facet or at a vertex, the mode of its own Coulomb problem (every other taut row held:
  // constrainedMobility()), solved exactly.  facets: their indices, or -1.
  void frictionMode(int c, int facets[2]);
  // Sets contact c's facets to its friction mode (none flipping beyond kMaxFlips, the taut set
  // within m_max_); true if any changed.
  bool updateFriction(int c, int& count);
  // Every row's mode at once (the step's fallback when its active set cycles, lcp_modes_): the
  // taut set and each touching contact's friction mode from the linear complementarity problem of
  // the step linearized at the current iterate, solved by Lemke's method, with its impulses.
  // 1 if the modes changed, 0 if not, -1 if Lemke's method fails.  Allocates.
  int modesFromLcp();
  bool lcp_modes_ = false;  // solveNewton takes its modes from modesFromLcp()
  // True if a contact row takes part in the step: touching, or having joined or left the taut
  // set (only a near row may).
  bool contactsTookPart() const;
  // The facet whose normal is most along v (in the tangent plane).
  int facetFacing(const Eigen::Vector2d& v) const;
  // Puts the sticking contact that slips most over the current iterate (beyond the tolerance)
  // into sliding against its slip; false if none (or it may not flip, or the taut set is full).
  bool slideStalledContact(int count);
  // Contact row c's mobility over the step, h T^T J M^-1 J^T T at q_k (m per N s of friction
  // impulse), and the Newton matrix's regularisation of its rows, kContactRegularization times
  // its trace (computed once per step).
  const Eigen::Matrix2d& mobility(int c);
  double regularizationOf(int c);
  // Contact row c's mobility with every other taut row held, from the last factorisation when it
  // sticks in it (else mobility()).
  Eigen::Matrix2d constrainedMobility(int c);
  bool kkt_factored_ = false;  // kkt_ holds the factorisation of the taut set in active_
  Eigen::VectorXd mobility_rhs_, mobility_sol_;     // n_d + m_max
  double regularization_ = kContactRegularization;  // (the linearization's: none)
  std::vector<char> mode_unsolved_;  // per contact row: its friction mode changed since the last
                                     // Newton solve
  bool sliding(int c) const {
    for (int i = 0; i < kFrictionFacets; ++i)
      if (is_active_[facetId(c, i)]) return true;
    return false;
  }

  ModelPtr model_;
  IntegratorOptions options_;
  int nd_, nk_, ns_;
  // Unilateral constraints: the n_s strings, the model's joint stops, then the contact rows
  // (n_c in all).  Row c is g_c(q) <= 0 with gap_c its violation in metres (strings: |a - e| - l;
  // contacts: a sphere's depth into its surface) or radians/metres (stops: sign (q - bound)),
  // G_c its gradient, and h_c the function Newton drives to zero (strings: 1/2 (|a-e|^2 - l^2);
  // stops and contacts: the gap).  A string's G_c is Dh's row c in dyn_ (at q_k) or dyn2_ (at
  // q_{k+1}); a stop's is sign e_variable, the same at both; a contact's is -normal^T times its
  // point's Jacobian, in contact_G1_ (at q_k) and contact_G2_ (at q_{k+1}).
  int nc_;
  int contact_row_;                           // the first contact row (n_s + stops)
  int self_row_;                              // the first self-contact row
  std::shared_ptr<const Contacts> contacts_;  // or null
  int facet_id0_;                             // the first facet id (nc_ + 2 contact rows)
  int n_ids_;                                 // constraint rows and friction ids
  int m_max_;  // largest feasible taut set: every string, one stop per limited joint and
               // as many contact rows as there are joints (more would be dependent),
               // each with its friction's two impulses and two facets
  Eigen::Matrix<double, 2, kFrictionFacets> facet_normal_;  // d_i in the tangent plane
  // Per contact row: its tangents at q_k (world), and the basis its slip is measured in (the
  // same; a self-contact's: its tangents in the body's core frame).
  std::vector<Eigen::Matrix<double, 3, 2>> tangents_, slip_basis_;
  // Per contact row: a segment row's material point its friction holds over the step (its
  // deepest point at q_k, on the capsule's core z axis, m).
  std::vector<double> segment_z_m_;
  // The step taken without the segment rows (its last fallback: StepReport::segment_rows_dropped).
  bool segments_off_ = false;
  bool has_segment_rows_ = false;
  Eigen::MatrixXd point_J2_, rel_J_;  // 3 x n_q, 3 x n_d: a self-contact's body's, relative
  // Per body: the radius of a sphere about its core's centre holding it, |half_m| + radius_m.
  std::vector<double> body_bound_m_;
  bool self_rows_near_ = false;  // some self-contact row is near at q_k (contact_near_)
  Eigen::Matrix3Xd posed_points_, posed_origins_;  // poseSelfContacts: per point, per body (world)
  std::vector<Eigen::Matrix3d> posed_rotations_;   // per body
  std::vector<int> near_points_, near_bodies_;     // those of the self rows near at q_k
  std::vector<char> point_near_, body_near_;       // per point, per body: in the lists
  // The same at q_k, and how far each point and body moved over the step (m; a body's rotation
  // as the Frobenius norm of R_{k+1} - R_k): the step's end bounds a far row's gap by them.
  Eigen::Matrix3Xd posed_points1_, posed_origins1_;
  std::vector<Eigen::Matrix3d> posed_rotations1_;
  Eigen::VectorXd point_moved_m_, body_moved_m_, body_turned_;
  // Whether self-contact row c, not near at q_k, may end inside at q_{k+1} (then its gap is
  // evaluated): its gap at q_k plus how far its point moved in the body's frame, at most.
  bool mayHaveReached(int c) const;
  DynamicsData dyn_;   // kinematics at q_k and the midpoint, the Lagrangian
  DynamicsData dyn2_;  // kinematics and strings at q_{k+1}
  bool rig2_valid_ = false, rigm_valid_ = false;  // rig frames current in dyn2_ / dyn_
  bool second_valid_ = false;         // dyn_ holds the Lagrangian's second derivatives at this q_m
  Eigen::VectorXd damping_;           // n_d, scaled
  std::vector<int> angle_variables_;  // dynamic variables of coordinate-axis rotations
  // 2 x n_d: their cos and sin at q_k, q_m and q_{k+1}.
  Eigen::Matrix2Xd cos_sin1_, cos_sin_m_, cos_sin2_;

  // Per-step scratch.
  Eigen::VectorXd q1_full_, q2_full_, qm_full_;  // n_q
  Eigen::VectorXd qd2_, vel_;                    // n_d
  Eigen::VectorXd guess_;                        // n_d: the step's first guess of q_{d,k+1}
  Eigen::VectorXd lambda_;                       // n_ids (entries for active ones)
  Eigen::VectorXd gap1_, gap2_;                  // n_c
  // n_ids: the function Newton drives to zero for each active id (strings: h; stops and
  // contacts: the gap; tangential: the slip; facets: d^T lambda_t - mu lambda_n, for every facet
  // of a touching contact).
  Eigen::VectorXd h2_;
  Eigen::MatrixXd contact_G1_, contact_G2_;  // contact rows x n_d: gradients at q_k, q_{k+1}
  Eigen::MatrixXd contact_F1_, contact_F2_;  // 2 contact rows x n_d: T^T J at q_k, q_{k+1}
  // Per contact row: its centre at q_k, q_{k+1} (world; a self-contact's in its body's core
  // frame).
  Eigen::Matrix3Xd contact_p1_, contact_p2_;
  std::vector<char> contact_near_;  // per contact row: within kContactReach_m at q_k (G1 known)
  // The rows the step's iteration looks at, ascending: every string and stop, and the contact
  // rows near at q_k (only those may join the taut set; a self row not near reads gap -1, a
  // surface row's gap is checked by the step's end).
  std::vector<int> live_rows_;
  std::vector<Eigen::Matrix2d> mobility_;  // per contact row: mobility()
  std::vector<char> mobility_known_;       // per contact row: mobility_ computed this step
  // Per contact row: constrainedMobility() and the factorisation (factorizations_) it is of.
  std::vector<Eigen::Matrix2d> constrained_mobility_;
  std::vector<long> constrained_mobility_of_;
  Eigen::VectorXd scale_tmp_;              // n_d
  bool mass_lu_ok_ = false;                // mass_lu_ (else llt_) holds M(q_k)
  Eigen::MatrixXd point_J_;                // 3 x n_q: a contact point's Jacobian
  Eigen::VectorXd dist1_;                  // n_s: string spans at q_k
  Eigen::VectorXd residual_;               // n_d
  Eigen::VectorXd residual_free_;          // n_d: residual_ without the constraint forces
  std::vector<int> active_;                // active ids (taut constraints), ascending
  std::vector<char> is_active_;            // n_ids
  std::vector<int> position_;              // n_ids: place in active_, or -1
  std::vector<int> flips_;                 // per id: taut-set changes this step
  std::vector<int> stop_partner_;          // per constraint: the same joint's other stop, or -1
  int active_set_changes_ = 0;
  double momentum_scale_ = 1.0;
  // The iteration ended on a correction without evaluating after it (the stopping rule in
  // solveNewton): dyn_ holds the iterate before last_correction_ (n_d).
  bool corrected_after_evaluation_ = false;
  Eigen::VectorXd last_correction_;
  Eigen::VectorXd damping_now_, damping_slope_;  // n_d: c(q_m), dc/dq at this evaluation
  // The Newton system of m active ids is jac_'s leading n_d + m square block, its right-hand
  // side and solution rhs_'s and sol_'s heads (no allocation when m changes).
  Eigen::MatrixXd jac_;
  std::unique_ptr<StepKkt> kkt_;
  Eigen::VectorXd rhs_, sol_;
  double h_ = 0.0;  // the step size being solved (dt or a substep)
  State sub_;       // substep fallback scratch
  Eigen::VectorXd sub_u_, tension_sum_, contact_force_sum_;
  Eigen::Matrix3Xd friction_sum_;
  StepReport sub_report_;
  long factorizations_ = 0;
  // Mass matrix factorisation for the initial guess: by the tree's pattern, or (the reference
  // step, or an unsafe pivot) dense Cholesky.
  std::unique_ptr<TreeLu> mass_lu_;
  Eigen::LLT<Eigen::MatrixXd> llt_;
  Eigen::VectorXd tmp_nd_;
};

}  // namespace marionette
