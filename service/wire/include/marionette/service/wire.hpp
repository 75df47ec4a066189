// SPDX-License-Identifier: BSD-3-Clause
// Between the wire contract (proto/marionette/v1/planner.proto) and the library's own types.
// The server turns requests into library calls with these; the CLI, talking to a server,
// turns its flags into requests and the answers back into the very types it prints in-process.
//
// Contents
//   RequestError                 a bad request: the gRPC code and a message naming the field.
//   checkRequestSizes            every name and inline description of a request within bounds.
//   describeModel / summarize    ModelDescription, ModelSummary, SceneSummary.
//   goalToProto / goalFromProto  the three goal kinds (GoalSpec <-> v1::Goal).
//   applyStart / startSpecFromProto   v1::Start -> PlanRequest fields / a StartSpec.
//   inputsToProto / inputsFromProto   InputSchedule <-> v1::InputSequence.
//   SimulationCall / simulationCallFromProto   v1::SimulateRequest -> the checked simulation's
//                                arguments, every field checked; simulationToProto for the answer.
//   planToProto / planFromProto  Plan <-> v1::PlanResponse (lossless for everything printed).
//   startAndGoalToProto          PlanResponse.start_state and goal_spec: what was planned from
//                                and for, in full.
//   planRequestFromProto         v1::PlanRequest -> PlanRequest: its fields translated, the
//                                goal checked (checkGoal), named as the proto names them.
//   optimizationFromProto / optimizationToProto   PlanRequest.optimization, its report.
//   gainsWeightsFromProto        PlanRequest.gains' weights (the gains travel in the plan).
//   progressToProto / progressFromProto   PlanStream's and Perform's progress events.
//   performRequestFromProto      v1::PerformRequest -> PerformanceRequest, every field checked
//                                (the clips read and edited); planToProto carries a
//                                performance's targets and tracking, and every plan's points.
//   protoField                   a library's field path (FieldError) as the proto's field.
#pragma once

#include <stdexcept>
#include <string>

#include "marionette/models/error.hpp"
#include "marionette/environments/checked_simulation.hpp"
#include "marionette/models/field_error.hpp"
#include "marionette/models/model.hpp"
#include "marionette/models/simulation.hpp"
#include "marionette/plan/plan.hpp"
#include "marionette/plan/goal.hpp"
#include "marionette/performance/plan_performance.hpp"
#include "marionette/planner/planner.hpp"
#include "marionette/trajopt/trajectory_optimization.hpp"
#include "marionette/v1/planner.pb.h"

namespace marionette::wire {

namespace v1 = ::marionette::v1;

// Thrown by the converters of requests; what() names the field ("start.inputs: ...").
class RequestError : public ErrorOf<std::invalid_argument> {
 public:
  enum class Code { InvalidArgument, NotFound };
  RequestError(Code code, const std::string& message)
      : ErrorOf<std::invalid_argument>(message), code_(code) {}
  Code code() const { return code_; }

 private:
  Code code_;
};

// Bounds on what one request may hold, checked before anything is built from it: every string
// field at most kMaxNameBytes, except `yaml` (an inline model or scene) and `map_yaml` (a
// retarget map) at most the library's description limit (256 KiB) and a clip's `text` at most
// kMaxInlineClipBytes; every repeated string or message field at most kMaxListEntries.
// Throws RequestError naming the field and the size, never echoing its contents.
constexpr std::size_t kMaxNameBytes = 256;
constexpr std::size_t kMaxInlineClipBytes = 8 << 20;
constexpr int kMaxListEntries = 4096;
void checkRequestSizes(const google::protobuf::Message& request);

// With rest_q (n_d, the rest pose of the default inputs), each point's stage position there.
v1::ModelDescription describeModel(const Model& model, const Eigen::VectorXd* rest_q = nullptr);
v1::ModelSummary summarize(const Model& model);
v1::SceneSummary summarize(const Scene& scene);

// Goals.  goalFromProto throws RequestError naming `field` (e.g. "goal.points.targets[1]").
void goalToProto(const GoalSpec& goal, v1::Goal* out);
GoalSpec goalFromProto(const v1::Goal& goal, const std::string& field = "goal");

// A v1::Start applied to a request for `model` (start_inputs, start, start_text).  Throws
// RequestError naming "start.<field>".
void applyStart(const Model& model, const v1::Start& start, PlanRequest& request);
StartSpec startSpecFromProto(const Model& model, const v1::Start& start,
                             Eigen::VectorXd* inputs);  // inputs: n_k out (defaults if unset)

// Input sequences (every kinematic variable of the model, at the schedule's times).
void inputsToProto(const Model& model, const InputSchedule& schedule, v1::InputSequence* out);
InputSchedule inputsFromProto(const Model& model, const v1::InputSequence& inputs,
                              const std::string& field = "inputs");

// Plans.  planFromProto throws std::invalid_argument if the message is inconsistent (a matrix
// of the wrong size, say) -- a server bug or a corrupted answer.
void planToProto(const Plan& plan, v1::PlanResponse* out);
Plan planFromProto(const v1::PlanResponse& plan);
// The start (every input, every joint from the plan's first state, the velocities requested)
// and the goal (defaults filled in) of `request`, which `plan` answered.
void startAndGoalToProto(const PlanRequest& request, const Plan& plan, v1::PlanResponse* out);

// A plan request for an already resolved model and scene (the caller resolves the ModelRef and
// SceneRef: built-ins may be cached).  Checks the goal (checkGoal) and what the proto alone
// bounds (time limits in (0, max_time_limit_s], max_propagations), naming the proto's field on
// error; the planner options are checkPlannerOptions' (the server calls it on arrival).
PlanRequest planRequestFromProto(const v1::PlanRequest& request, ModelPtr model,
                                 CollisionModelPtr collision, double max_time_limit_s);

// PlanRequest.optimization: defaults for zeros, every field checked (RequestError naming
// "optimization.weights[\"x\"]", ...); its time limit at most max_time_limit_s.
OptimizationOptions optimizationFromProto(const v1::Optimization& optimization,
                                          double max_time_limit_s);
void optimizationToProto(const OptimizationReport& report, v1::OptimizationReport* out);
OptimizationReport optimizationReportFromProto(const v1::OptimizationReport& report);
// The request's form of options (every weight by name).
void optimizationOptionsToProto(const OptimizationOptions& options, v1::Optimization* out);

// PlanRequest.gains' weights: the defaults for those not given, each checked (RequestError naming
// "gains.weights[\"x\"]").
control::LqrWeights gainsWeightsFromProto(const v1::GainsRequest& gains);

// Perform: the clips read (errors name "clips[i].text", the line and the field) and edited, the
// options checked; time_limit_s at most max_time_limit_s.
PerformanceRequest performRequestFromProto(const v1::PerformRequest& request, ModelPtr model,
                                           CollisionModelPtr collision, double max_time_limit_s);

void progressToProto(const PlanProgress& progress, v1::PlanProgress* out);
PlanProgress progressFromProto(const v1::PlanProgress& progress);

// What Simulate asks for: every field checked (RequestError naming it), defaults applied.
struct SimulationCall {
  SimulationOptions options;
  InputSchedule inputs;
  CheckedSimulationOptions check;
  bool with_scene = false;
  bool with_points = false;  // each sample gives the named points' stage positions
};
// At most this many steps (duration_s / dt_s) per request: every step is a sample in the
// answer (~0.4 KB for the biggest model), so this bounds a request's memory.
constexpr long kMaxSimulationSteps = 200000;
// Simulate's dt_s: from 1e-5 s to 1 s, the steps a plan is verified at (1 / output_rate_hz)
// included.
constexpr double kMinSimulationStep_s = 1e-5;
constexpr double kMaxSimulationStep_s = 1.0;
// With with_points, at most this many point positions (steps x named points, ~60 MB).
constexpr long kMaxSimulationPointSamples = 2000000;
SimulationCall simulationCallFromProto(const v1::SimulateRequest& request, const Model& model);
// The names and the report's summary into the answer (samples are added as they come).
void simulationToProto(const Model& model, const std::string& scene,
                       const CheckedSimulationReport& report, v1::SimulateResponse* out);
void sampleToProto(const CheckedSample& sample, v1::SimulationSample* out);

// A library's field path ("options.time_limit_s", "start.positions[\"theta9\"]") in the
// proto's words ("time_limit_s", "start.position_values[\"theta9\"]"); other paths unchanged.
std::string protoField(const std::string& library_field);
// The same error as the client sees it: "<proto field>: <problem>".
std::string describeForClient(const FieldError& error);

}  // namespace marionette::wire
