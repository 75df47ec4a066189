// SPDX-License-Identifier: BSD-3-Clause
// Planning a motion: one request in, one verified Plan out.
//
// Contents
//   PlannerOptions   planner id and parameters, budget and deadline, seed, output rate, control
//                    holding.
//   defaultPropagationBudget()  the tree search's budget when the options set none.
//   PlanRequest      model, scene, start, goal, options.
//   (PlanProgress, what long plans report while they run: problem/progress.hpp.)
//   checkPlannerOptions()  the options alone, as planMotion checks them first.
//   planMotion()     plans with a planner of the registry (search/registry.hpp): OMPL's tree planners
//                    over the variational integrator, or the rest-pose roadmap (prm); then
//                    resamples the inputs at the output rate, re-simulates and re-checks them
//                    (the Plan's predicted states are that re-simulation's).
//   (verifyMotion(), the same verification of inputs given by the caller, is in
//   problem/verification.hpp.)
#pragma once

#include <Eigen/Core>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "marionette/environments/collision.hpp"
#include "marionette/environments/scene.hpp"
#include "marionette/models/model.hpp"
#include "marionette/models/simulation.hpp"
#include "marionette/plan/plan.hpp"
#include "marionette/problem/motion_problem.hpp"
#include "marionette/problem/progress.hpp"
#include "marionette/problem/verification.hpp"
#include "marionette/models/cancel.hpp"
#include "marionette/plan/goal.hpp"
#include "marionette/search/registry.hpp"
#include "marionette/search/roadmap_options.hpp"
#include "marionette/search/roadmap_store.hpp"

#pragma GCC visibility push(default)  // the library's API (docs/design.md, layout)

namespace marionette {

struct PlannerOptions {
  std::string planner = "est";  // est | kpiece | rrt | sst | pdst | prm | a registered one
  // The caller's deadline on the search (s of wall clock; 0: none; a prm build is extra).  It
  // only stops the search, and the plan then says so: a search it ends depends on the machine.
  double time_limit_s = 0.0;
  // Tree planners: integrator steps the search may take; 0 = defaultPropagationBudget(model).
  // A search ended by it (or by reaching the goal) is a function of (request, planner, seed).
  long max_propagations = 0;
  // The search hands its path to the optimizer (runPipeline sets it when it optimizes): a
  // rest-of goal's search then ends once the inputs are the goal's, and the optimizer brings the
  // puppet to its rest pose there.  The plan as found is still judged against the whole goal.
  bool hand_off_to_optimizer = false;
  unsigned long seed = 1;       // the same seed gives the same plan
  double output_rate_hz = 50.0;  // of the input sequence (and of the re-simulation)
  double step_s = 0.02;         // integrator step while planning (s)
  // Tree planners: a control (a target rig velocity) is held for min..max integration steps;
  // 0 = the planner's default, 2..15, except kpiece 2..50: longer pushes let its grid reach
  // swings far from rest (arm3d behind the pillars: 80 % -> 100 % of runs; est and pdst do
  // worse with them).  See docs/benchmarks.md.
  int min_control_steps = 0;
  int max_control_steps = 0;
  // OMPL planner parameters by their ParamSet names (e.g. goal_bias, range, selection_radius);
  // an unknown name is an error that lists the known ones.
  std::map<std::string, std::string> parameters;
  // prm: the roadmap's options (its step_s is step_s above).  The roadmap has its own seed
  // (roadmap.seed), so that queries with any `seed` share one roadmap; `seed` drives the query.
  // Where roadmaps are kept is the request's RoadmapStore.
  RoadmapOptions roadmap;
  // prm: query the roadmap as built, without the verdicts earlier queries found (which the
  // query's own are still added to).  A benchmark's runs are then independent of each other
  // and of the server that answers them.
  bool roadmap_as_built = false;
};

// The motion problem (model, scene, start, goal: problem/motion_problem.hpp) and how to plan it.
struct PlanRequest : MotionProblem {
  PlannerOptions options;
  // prm: where roadmaps are kept between requests (not owned; shared by concurrent requests;
  // marionette::roadmap_store's RoadmapCache is one).  Null: a roadmap is built for this request
  // alone.
  RoadmapStore* roadmaps = nullptr;
};

// The search settings that are ours, not the OMPL planner's: control durations (integration
// steps) and the projection's cell size along a goal point (m): the options' where they set
// them, else the planner's defaults (its PlannerInfo).
struct TreeSearchSettings {
  int min_control_steps = 2, max_control_steps = 15;
  double point_cell_m = 0.05;
};
// FieldError("options.planner") for an unknown planner.
TreeSearchSettings treeSearchSettings(const PlannerOptions& options);

// The tree search's propagations when PlannerOptions::max_propagations is 0: kSearchWork over the
// puppet's dynamic variables.  A propagation costs about the same per dynamic variable on every
// puppet (a few microseconds each, measured in docs/decisions/0019-budgets-in-work.md), so the
// budget takes about as long on each: 1,000,000 propagations for the planar arm, 100,000 for
// PuppetCopter.
constexpr long kSearchWork = 2'000'000;  // propagations x dynamic variables
long defaultPropagationBudget(const Model& model);

// FieldError naming the field ("options.planner", "options.parameters[\"range\"]",
// "options.time_limit_s", "options.output_rate_hz", "options.step_s") when the planner is unknown, a
// parameter is not one of its own, or a number is out of range.
void checkPlannerOptions(const PlannerOptions& options);

// Throws FieldError on a bad request (unknown planner or parameter, bad goal or start, start in
// collision, rate or limits out of range), naming the field ("options.time_limit_s",
// "goal.points[0].point", "start"); PlanCancelled when `cancelled` (installed as the thread's
// CancelScope for the whole call, rest poses and re-simulations included) said stop;
// SimulationError when a number of the plan is not finite (requireFiniteNumbers).  Never
// returns an unverified plan: Plan::outcome is Exact only if the re-simulation of the returned
// inputs is collision-free, within every limit, and satisfies the goal.
Plan planMotion(const PlanRequest& request, const ProgressFn& progress = {},
                const CancelFn& cancelled = {});

}  // namespace marionette

#pragma GCC visibility pop
