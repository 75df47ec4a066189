// SPDX-License-Identifier: BSD-3-Clause
// searchTree: a registered tree planner on the request's TreeSearchSpace, seeded from the
// request, stopped at the first state that meets the goal, the time limit, or a cancel.
#include "marionette/search/tree_search.hpp"

#include <ompl/base/Planner.h>

#include <chrono>

#include "marionette/common/clock.hpp"
#include "marionette/common/text.hpp"
#include "marionette/models/cancel.hpp"
#include "marionette/models/field_error.hpp"
#include "marionette/search/registry.hpp"
#include "marionette/search/search_space.hpp"
#include "planner_parameters.hpp"
#include "reaper.hpp"
#include "seeding.hpp"

namespace ob = ompl::base;
namespace oc = ompl::control;

namespace marionette {
namespace {

// The search's space and planner, released together on the reaper's thread (the planner, which
// holds the tree, first).
struct SearchObjects {
  std::unique_ptr<TreeSearchSpace> space;
  ob::PlannerPtr planner;
  ~SearchObjects() { planner.reset(); }
};

// Runs `work` (a planner's code, maybe a plugin's): a cancel passes through, as does a
// FieldError when keep_field_errors; anything else thrown becomes
// FieldError("options.planner", "'NAME' WHAT: ...").
template <class Work>
void asPlannerFailure(const std::string& name, const char* what, bool keep_field_errors,
                      Work&& work) {
  try {
    work();
  } catch (const PlanCancelled&) {
    throw;
  } catch (const std::exception& e) {
    if (keep_field_errors && dynamic_cast<const FieldError*>(&e)) throw;
    throw FieldError("options.planner", "'" + name + "' " + what + ": " + e.what());
  } catch (...) {
    throw FieldError("options.planner", "'" + name + "' " + what +
                                            ": it threw something that is not a std::exception");
  }
}

}  // namespace

SearchResult searchTree(const TreeSearchProblem& problem, const TreeSearchOptions& options) {
  const auto t_start = SteadyClock::now();
  const TreePlannerFactory make = treePlannerFactory(options.planner);  // FieldError if unknown
  const PlannerInfo info = *findPlanner(options.planner);  // registered for good by now
  auto objects = std::make_shared<SearchObjects>();
  // Freed off this thread when this function returns, however it returns.
  struct DropLater {
    std::shared_ptr<SearchObjects>& objects;
    ~DropLater() { detail::dropLater(std::move(objects)); }
  } drop{objects};
  objects->space = std::make_unique<TreeSearchSpace>(problem);
  if (info.goal_states > 0) objects->space->offerGoalStates(info.goal_states);
  const TreeSearchSpace& space = *objects->space;
  {
    std::lock_guard<std::recursive_mutex> lock(detail::omplSeedMutex());
    ompl::RNG::setSeed(static_cast<std::uint_fast32_t>(space.nextSeed()));
    // A registered factory's (a plugin's) planner may throw anything: the planner's failure,
    // not a field of the request, and never the process's end.
    asPlannerFailure(options.planner, "could not be made", /*keep_field_errors=*/true, [&] {
      objects->planner = make(space, info);
      if (!objects->planner)
        throw FieldError("options.planner", "'" + options.planner + "' made no planner");
      detail::applyParameters(*objects->planner, options.planner, options.parameters);
      // What OMPL's SimpleSetup::setup does, in its order: the space, then the planner.
      if (!space.spaceInformation()->isSetup()) space.spaceInformation()->setup();
      objects->planner->setProblemDefinition(space.problemDefinition());
      objects->planner->setup();
    });
  }
  ob::Planner& planner = *objects->planner;
  const SearchCounters& counters = space.counters();

  // Stops at the first state that meets the goal (SST included, so that a plan is a function of
  // the seed, not of the machine's speed), at the propagation budget, at the caller's deadline,
  // or when cancelled; reports progress about once a second.
  auto last_report = t_start;
  const bool has_deadline = options.time_limit_s > 0.0;
  const auto deadline =
      has_deadline ? t_start + std::chrono::duration_cast<SteadyClock::duration>(
                                   std::chrono::duration<double>(options.time_limit_s))
                   : SteadyClock::time_point::max();
  const ob::ProblemDefinitionPtr& pdef = space.problemDefinition();
  std::string stopped_by;
  ob::PlannerTerminationCondition ptc([&] {
    const auto now = SteadyClock::now();
    if (options.progress && now - last_report >= std::chrono::seconds(1)) {
      last_report = now;
      options.progress(counters, secondsSince(t_start));
    }
    if (counters.goal_reached || pdef->hasExactSolution()) stopped_by = "goal";
    else if (options.max_propagations > 0 && counters.propagations >= options.max_propagations)
      stopped_by = "propagations";
    else if (has_deadline && now >= deadline) stopped_by = "deadline";
    else stopped_by.clear();
    return !stopped_by.empty() || cancelRequested();
  });
  ob::PlannerStatus status;
  asPlannerFailure(options.planner, "failed", /*keep_field_errors=*/false,
                   [&] { status = planner.solve(ptc); });
  throwIfCancelled("tree search");
  SearchResult result;
  result.stopped_by = stopped_by.empty() ? "planner" : stopped_by;  // it ended on its own
  result.stats.search_ended = stopped_by.empty() ? status.asString() : stopped_by;
  result.stats.planning_time_s = secondsSince(t_start);
  result.stats.propagations = counters.propagations;
  result.stats.collision_checks = counters.collision_checks;
  // Motions added (every one is goal-checked once); OMPL's PlannerData would copy the tree.
  result.stats.tree_states = counters.motions;
  result.stats.best_goal_distance = counters.best_goal_distance;
  if (!pdef->hasSolution()) {
    result.message = "no motion found (" + std::string(status.asString()) + ")";
    if (result.stopped_by == "propagations")
      result.message += ": its budget of " + std::to_string(options.max_propagations) +
                        " propagations was spent";
    else if (result.stopped_by == "deadline")
      result.message += ": the deadline (" + formatNumber(options.time_limit_s) +
                        " s, as set) stopped it";
    return result;
  }
  result.found = true;
  if (pdef->hasExactSolution()) result.stats.best_goal_distance = pdef->getSolutionDifference();
  const auto* found = dynamic_cast<const oc::PathControl*>(pdef->getSolutionPath().get());
  if (!found)
    throw FieldError("options.planner", "'" + options.planner +
                                            "' returned a path that is not a control path");
  result.inputs = space.rigTrajectory(*found);
  return result;
}

}  // namespace marionette
