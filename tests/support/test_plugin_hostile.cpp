// SPDX-License-Identifier: BSD-3-Clause
// A hostile planner plugin for the tests (search/plugin.hpp): it registers "plugin-long", whose
// path holds one control for a million seconds, then its entry point throws something that is
// not a std::exception.  Neither may pin a worker or end the process.
#include <ompl/base/Planner.h>
#include <ompl/control/PathControl.h>
#include <ompl/control/SpaceInformation.h>

#include "marionette/search/registry.hpp"
#include "marionette/search/search_space.hpp"

namespace {

class LongControl : public ompl::base::Planner {
 public:
  explicit LongControl(const ompl::control::SpaceInformationPtr& si)
      : ompl::base::Planner(si, "plugin-long"), csi_(si) {}
  ompl::base::PlannerStatus solve(const ompl::base::PlannerTerminationCondition&) override {
    checkValidity();
    auto path = std::make_shared<ompl::control::PathControl>(csi_);
    const ompl::base::State* start = pdef_->getStartState(0);
    ompl::control::Control* u = csi_->allocControl();
    csi_->nullControl(u);
    path->append(start);
    path->append(start, u, 1e6);  // a million seconds
    csi_->freeControl(u);
    pdef_->addSolutionPath(path, false, 0.0, getName());
    return ompl::base::PlannerStatus::EXACT_SOLUTION;
  }
  void clear() override { Planner::clear(); }

 private:
  ompl::control::SpaceInformationPtr csi_;
};

}  // namespace

extern "C" void marionette_register_planners() {
  marionette::PlannerInfo info;
  info.name = "plugin-long";
  info.source = "the tests' hostile plugin: one control for a million seconds";
  marionette::registerPlanner(info, [](const marionette::TreeSearchSpace& space,
                                       const marionette::PlannerInfo&) {
    return std::make_shared<LongControl>(space.spaceInformation());
  });
  throw 42;  // not a std::exception
}
