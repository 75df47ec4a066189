#include "request_checks.hpp"

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
  if (out.call.with_scene)
    out.collision = resolver.collision(out.model, request.model(), request.scene(), "scene");
  return out;
}

CheckedPlan checkPlan(Resolver& resolver, const v1::PlanRequest& request,
                      double max_time_limit_s) {
  wire::checkRequestSizes(request);
  const ModelPtr model = resolver.model(request.model(), "model");
  const CollisionModelPtr collision =
      resolver.collision(model, request.model(), request.scene(), "scene");
  CheckedPlan out;
  out.request = wire::planRequestFromProto(request, model, collision, max_time_limit_s);
  checkPlannerOptions(out.request.options);
  if (request.optimization().enabled())
    out.optimization = wire::optimizationFromProto(request.optimization(), max_time_limit_s);
  if (request.gains().enabled()) out.gains = wire::gainsWeightsFromProto(request.gains());
  return out;
}

PerformanceRequest checkPerform(Resolver& resolver, const v1::PerformRequest& request,
                                double max_time_limit_s) {
  wire::checkRequestSizes(request);
  const ModelPtr model = resolver.model(request.model(), "model");
  const CollisionModelPtr collision =
      resolver.collision(model, request.model(), request.scene(), "scene");
  return wire::performRequestFromProto(request, model, collision, max_time_limit_s);
}

}  // namespace marionette::service
