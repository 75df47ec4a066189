// SPDX-License-Identifier: BSD-3-Clause
// The server's requests checked before the work: everything a handler checks of a request, in
// one function per RPC -- sizes (wire::checkRequestSizes), the model and scene (resolved, inline
// YAML parsed and built), every field converted and checked.  The handlers call these, and so do
// the fuzz targets (fuzz/), which thereby drive the very code a request meets.
#pragma once

#include <memory>
#include <optional>

#include "marionette/environments/collision.hpp"
#include "marionette/planner/planner.hpp"
#include "marionette/service/resolver.hpp"
#include "marionette/service/wire.hpp"
#include "marionette/v1/planner.pb.h"

namespace marionette::service {

// Each throws what the handlers turn into statuses: wire::RequestError, FieldError,
// ModelError / SceneError (inline YAML), never anything else for a bad request.
ModelPtr checkDescribeModel(Resolver& resolver, const v1::DescribeModelRequest& request);

struct CheckedSimulation {
  ModelPtr model;
  wire::SimulationCall call;
  CollisionModelPtr collision;  // null without a scene
};
CheckedSimulation checkSimulate(Resolver& resolver, const v1::SimulateRequest& request);

// The plan request with its model and collision model; options checked (checkPlannerOptions),
// the optimization's unless `raw`, the gains' when they are enabled.
struct CheckedPlan {
  PlanRequest request;
  std::optional<OptimizationOptions> optimization;  // unless PlanRequest.raw
  std::optional<control::LqrWeights> gains;         // PlanRequest.gains enabled
};
CheckedPlan checkPlan(Resolver& resolver, const v1::PlanRequest& request, double max_time_limit_s);

// Perform: the clips read and edited, every option checked.
PerformanceRequest checkPerform(Resolver& resolver, const v1::PerformRequest& request,
                                double max_time_limit_s);

}  // namespace marionette::service
