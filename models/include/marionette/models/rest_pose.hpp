// SPDX-License-Identifier: BSD-3-Clause
// Start states: the rest pose of given inputs, and a configuration made consistent with the
// strings (docs/design.md, the integrator, "Start states").
//
// Contents
//   RestPose / computeRestPose   minimise the potential V(q_d) subject to h_j(q_d, rho) <= 0,
//                                the joint stops and the contacts.
//   projectOntoStrings           move a configuration a little (least-norm steps) so that no
//                                string is over-stretched and no joint is past a stop, keeping
//                                chosen variables fixed.
#pragma once

#include <Eigen/Core>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "marionette/models/contact.hpp"
#include "marionette/models/model.hpp"

#pragma GCC visibility push(default)  // the library's API (docs/design.md, layout)

namespace marionette {

struct RestPose {
  bool ok = false;
  std::string message;        // why not, when !ok
  Eigen::VectorXd q;          // n_d: the equilibrium
  Eigen::VectorXd tension_N;  // n_s: static string tensions (0 when slack)
  std::vector<char> taut;     // n_s
  std::vector<char> at_stop;  // one per model.stops row: the joint rests on that stop
  double stationarity = 0.0;  // |dV/dq + Dh^T mu|_inf at the answer (N*m or N)
  double max_violation_m = 0.0;  // the largest over-stretch of a string or penetration of a contact
  int settle_steps = 0;  // damped-simulation steps before the Newton polish
  int pivots = 0;        // changes of the taut set in the Newton phase (RestPoseOptions::max_pivots)
  double potential_J = 0.0;
  // With RestPoseOptions::contacts, per contact row (Contacts::rowName): the normal force and
  // the size of the friction force it bears at rest (N, 0 where it does not touch); empty
  // without.
  Eigen::VectorXd contact_normal_N, contact_friction_N;
};

struct RestPoseOptions {
  double settle_dt_s = 0.02;
  int max_settle_steps = 5000;
  double settle_velocity_tol = 1e-5;  // |qdot|_inf that ends the settling phase
  double stationarity_tol = 1e-11;    // relative to the largest generalised gravity force
  // Without a settling phase (max_settle_steps = 0), the Newton solve starts with every
  // constraint this near to tight taken as engaged (m or rad), with zero forces ...
  double taut_guess_gap = 1e-9;
  // ... unless this is the rest pose of nearby inputs: continuation, starting from its taut
  // strings, their tensions and the stops it rests on (which stay engaged unless their forces
  // would pull).  Not owned; must outlive the call.
  const RestPose* continue_from = nullptr;
  // The Newton phase's effort: iterations for one taut set, and how many times the set may change
  // (RestPose::pivots: one constraint at a time, or frictions reaching their cone's edge); -1 for
  // 4 per constraint, + 4.  A continuation from a close pose
  // needs few of both, and one that needs more is better answered by settling (fail fast).
  int max_newton_iterations = 60;
  int max_pivots = -1;
  // What the puppet may stand on (IntegratorOptions::contacts: a scene's floor and the bodies it
  // may touch, its own links): the settling touches them as the integrator does, and the
  // equilibrium has their rows, a touching one held where the settling left it (sticking: its
  // friction force, within Coulomb's cone, is what holds it there).  Null: nothing to touch.
  std::shared_ptr<const Contacts> contacts;
};
// The default options, standing on `contacts`.
inline RestPoseOptions standingOn(std::shared_ptr<const Contacts> contacts) {
  RestPoseOptions options;
  options.contacts = std::move(contacts);
  return options;
}

// The stable rest pose for inputs rho (n_k), from the model's initial guess or `guess` (n_d).
// Joint stops are constraints like the strings (rows sign (q - bound) <= 0), and so are the
// contacts (options.contacts; a start inside one is first moved out of it, as out of an
// over-stretched string).  A pose where a touching contact's friction would have to exceed
// Coulomb's cone is no rest pose (the message names the pair).
// A damped simulation (the midpoint VI with heavy, mass-proportional joint damping) finds the
// basin of a stable equilibrium with the right taut strings; a Newton solve of the KKT system
//   dV/dq + Dh_A^T mu = 0,  h_A = 0,  mu >= 0,  h_inactive <= 0
// then polishes it to machine precision.  Static tension T_j = mu_j |a_j - e_j|.
RestPose computeRestPose(const ModelPtr& model, const Eigen::VectorXd& rho,
                         const Eigen::VectorXd* guess = nullptr, RestPoseOptions options = {});

// Starting from q (n_d), moves the variables not marked in `fixed` (n_d, may be empty) onto their
// joint stops and then by Gauss-Newton least-norm steps until no string is over-stretched by
// more than tol_m.
// Returns false (with q left at the best attempt) if that cannot be done.
bool projectOntoStrings(const Model& model, Eigen::VectorXd& q, const Eigen::VectorXd& rho,
                        const std::vector<char>& fixed, double tol_m = 1e-12);

}  // namespace marionette

#pragma GCC visibility pop
