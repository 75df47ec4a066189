// SPDX-License-Identifier: BSD-3-Clause
#include "marionette/service/request_checks.hpp"

#include "marionette/environments/scene_contacts.hpp"
#include "marionette/problem/motion_problem.hpp"

namespace marionette::service {

ModelPtr checkDescribeModel(Resolver& resolver, const v1::DescribeModelRequest& request) {
  wire::checkRequestSizes(request);
  return resolver.model(request.model(), "model");
}

CheckedSimulation checkSimulate(Resolver& resolver, const v1::SimulateRequest& request) {
  wire::checkRequestSizes(request);
  CheckedSimulation out;
  out.model = resolver.model(request.model(), "model");
  out.call = wire::simulationCallFromProto(request, *out.model);
  if (out.call.with_scene) {
    // A simulation touches the scene's surfaces (docs/scene-format.md): its dynamics carry them
    // as contacts, and touching them is not a collision.
    out.collision = resolver.collision(out.model, request.model(), request.scene(), "scene",
                                       problemCollisionOptions());
    out.call.options.contacts = out.collision->contacts();
  } else if (out.call.options.integrator == IntegratorKind::VI) {
    out.call.options.contacts = sceneContacts(*out.model, Scene{});  // the links touch each other
  }
  return out;
}

namespace {

// A request that plans in a scene: its sizes, then its model and the collision model of both.
template <class Request>
std::pair<ModelPtr, CollisionModelPtr> modelInScene(Resolver& resolver, const Request& request) {
  wire::checkRequestSizes(request);
  ModelPtr model = resolver.model(request.model(), "model");
  // The puppet touches the scene's surfaces and its own links, as the simulation does.
  CollisionModelPtr collision = resolver.collision(model, request.model(), request.scene(), "scene",
                                                   problemCollisionOptions());
  return {std::move(model), std::move(collision)};
}

}  // namespace

CheckedPlan checkPlan(Resolver& resolver, const v1::PlanRequest& request, double max_time_limit_s) {
  const auto [model, collision] = modelInScene(resolver, request);
  CheckedPlan out;
  out.request = wire::planRequestFromProto(request, model, collision, max_time_limit_s);
  checkPlannerOptions(out.request.options);
  if (request.raw() && request.optimization().enabled())
    throw wire::RequestError(wire::RequestError::Code::InvalidArgument,
                             "raw: the plan as found takes no optimization (optimization.enabled)");
  if (!request.raw())
    out.optimization = wire::optimizationFromProto(request.optimization(), max_time_limit_s);
  if (request.gains().enabled()) out.gains = wire::gainsWeightsFromProto(request.gains());
  return out;
}

PerformanceRequest checkPerform(Resolver& resolver, const v1::PerformRequest& request,
                                double max_time_limit_s) {
  const auto [model, collision] = modelInScene(resolver, request);
  return wire::performRequestFromProto(request, model, collision, max_time_limit_s);
}

}  // namespace marionette::service
