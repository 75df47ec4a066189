// SPDX-License-Identifier: BSD-3-Clause
#include "planner_service.hpp"

#include <iostream>

#include "marionette/models/dynamics.hpp"
#include "marionette/models/model_io.hpp"
#include "marionette/models/rest_pose.hpp"
#include "marionette/models/version.hpp"
#include "marionette/performance/plan_performance.hpp"
#include "marionette/plan/goal.hpp"
#include "marionette/planner/pipeline.hpp"
#include "marionette/service/request_checks.hpp"
#include "marionette/service/wire.hpp"

namespace marionette::service {

namespace {
constexpr int kMaxDescribedRestPoseDynamic = 32;  // DescribeModel's rest positions: n_d at most
}  // namespace
namespace {

using grpc::ServerContext;
using grpc::Status;
using grpc::StatusCode;

std::string modelLabel(const v1::ModelRef& ref) {
  return ref.source_case() == v1::ModelRef::kYaml ? "(inline)" : ref.name();
}
std::string sceneLabel(const v1::SceneRef& ref) {
  return ref.source_case() == v1::SceneRef::kYaml            ? "(inline)"
         : ref.source_case() == v1::SceneRef::SOURCE_NOT_SET ? "empty"
                                                             : ref.name();
}

RoadmapCacheOptions roadmapCacheOptions(const ServerOptions& options, LogSink& log) {
  RoadmapCacheOptions o;
  o.directory = options.roadmap_dir;
  // A bad file in the folder is worked around (set aside, rebuilt); the operator reads why here.
  o.on_file_problem = [&log](const std::string& message) { log.event("roadmap", message); };
  return o;
}

}  // namespace

PlannerService::PlannerService(const ServerOptions& options)
    : options_(options),
      log_(options.log ? *options.log : std::cerr),
      admission_(options.workers, options.max_queue),
      roadmaps_(roadmapCacheOptions(options, log_)) {}

void PlannerService::warmUp() {
  for (const std::string& name : builtinModelNames()) resolver_.builtinModel(name);
  for (const std::string& name : builtinSceneNames()) resolver_.builtinScene(name);
}

void PlannerService::beginShutdown(SteadyClock::time_point deadline) {
  std::lock_guard<std::mutex> lock(shutdown_mutex_);
  shutdown_deadline_ = deadline;
  shutting_down_ = true;
}

// ---- Handlers ----------------------------------------------------------------------------------

Status PlannerService::ListModels(ServerContext* ctx, const v1::ListModelsRequest*,
                                  v1::ListModelsResponse* out) {
  RequestLog rl(log_, "ListModels", ctx);
  if (Status s = authorize(ctx->client_metadata(), options_.token); !s.ok()) return rl.finish(s);
  return rl.finish(guarded(ctx, rl, [&] {
    for (const std::string& name : builtinModelNames())
      *out->add_models() = wire::summarize(*resolver_.builtinModel(name));
    return Status::OK;
  }));
}

Status PlannerService::DescribeModel(ServerContext* ctx, const v1::DescribeModelRequest* req,
                                     v1::ModelDescription* out) {
  RequestLog rl(log_, "DescribeModel", ctx);
  rl.set("model", modelLabel(req->model()));
  if (Status s = authorize(ctx->client_metadata(), options_.token); !s.ok()) return rl.finish(s);
  // An inline model costs what its YAML holds: DescribeModel takes a worker like the others.
  return rl.finish(withWorker(ctx, rl, [&] {
    const ModelPtr model = checkDescribeModel(resolver_, *req);
    // Named points where they hang at rest: a rest pose's cost grows as n_d^3, so models larger
    // than any built-in (25) go without (an inline model of 256 would hold a worker for long).
    RestPose rest;
    if (model->nd() <= kMaxDescribedRestPoseDynamic)
      rest = computeRestPose(model, model->defaultInputs());
    *out = wire::describeModel(*model, rest.ok ? &rest.q : nullptr);
    return Status::OK;
  }));
}

Status PlannerService::ListScenes(ServerContext* ctx, const v1::ListScenesRequest*,
                                  v1::ListScenesResponse* out) {
  RequestLog rl(log_, "ListScenes", ctx);
  if (Status s = authorize(ctx->client_metadata(), options_.token); !s.ok()) return rl.finish(s);
  return rl.finish(guarded(ctx, rl, [&] {
    for (const std::string& name : builtinSceneNames())
      *out->add_scenes() = wire::summarize(*resolver_.builtinScene(name));
    return Status::OK;
  }));
}

Status PlannerService::GetServerInfo(ServerContext* ctx, const v1::GetServerInfoRequest*,
                                     v1::ServerInfo* out) {
  RequestLog rl(log_, "GetServerInfo", ctx);
  if (Status s = authorize(ctx->client_metadata(), options_.token); !s.ok()) return rl.finish(s);
  out->set_version(MARIONETTE_VERSION);
  out->set_api(v1::Planner::service_full_name());
  out->set_workers(options_.workers);
  out->set_max_queue(options_.max_queue);
  for (const std::string& name : plannerNames()) out->add_planners(name);
  return rl.finish(Status::OK);
}

Status PlannerService::Simulate(ServerContext* ctx, const v1::SimulateRequest* req,
                                v1::SimulateResponse* out) {
  RequestLog rl(log_, "Simulate", ctx);
  rl.set("model", modelLabel(req->model()));
  rl.set("scene", sceneLabel(req->scene()));
  if (Status s = authorize(ctx->client_metadata(), options_.token); !s.ok()) return rl.finish(s);
  return rl.finish(withWorker(ctx, rl, [&] { return simulate(*req, out); }));
}

Status PlannerService::Plan(ServerContext* ctx, const v1::PlanRequest* req, v1::PlanResponse* out) {
  RequestLog rl(log_, "Plan", ctx);
  describePlanRequest(*req, rl);
  if (Status s = authorize(ctx->client_metadata(), options_.token); !s.ok()) return rl.finish(s);
  return rl.finish(withWorker(ctx, rl, [&] { return plan(ctx, *req, out, {}, rl); }));
}

Status PlannerService::PlanStream(ServerContext* ctx, const v1::PlanRequest* req,
                                  grpc::ServerWriter<v1::PlanEvent>* writer) {
  RequestLog rl(log_, "PlanStream", ctx);
  describePlanRequest(*req, rl);
  if (Status s = authorize(ctx->client_metadata(), options_.token); !s.ok()) return rl.finish(s);
  Status s;
  {
    StreamOut out(ctx, writer);
    s = withWorker(ctx, rl, [&] {
      v1::PlanEvent result;
      Status planned = plan(ctx, *req, result.mutable_plan(), streamedProgress(out), rl);
      if (planned.ok()) out.result(std::move(result));
      return planned;
    });
    // The worker is free; the plan goes out as fast as the client reads it, within a bound.
    if (s.ok()) s = finishStream(ctx, out);
  }  // (its writes done or cut before the call is logged)
  return rl.finish(s);
}

Status PlannerService::Perform(ServerContext* ctx, const v1::PerformRequest* req,
                               grpc::ServerWriter<v1::PlanEvent>* writer) {
  RequestLog rl(log_, "Perform", ctx);
  rl.set("model", modelLabel(req->model()));
  rl.set("scene", sceneLabel(req->scene()));
  if (Status s = authorize(ctx->client_metadata(), options_.token); !s.ok()) return rl.finish(s);
  Status s;
  {
    StreamOut out(ctx, writer);
    s = withWorker(ctx, rl, [&] {
      const PerformanceRequest request = checkPerform(resolver_, *req, options_.max_time_limit_s);
      const marionette::Plan p = planPerformance(request, streamedProgress(out), cancelFor(ctx));
      if (shouldStop(ctx)) return stoppedStatus(ctx);
      v1::PlanEvent result;
      wire::planToProto(p, result.mutable_plan());
      rl.set("outcome", toString(p.outcome));
      out.result(std::move(result));
      return Status::OK;
    });
    if (s.ok()) s = finishStream(ctx, out);
  }
  return rl.finish(s);
}

Status PlannerService::finishStream(ServerContext* ctx, StreamOut& out) {
  if (out.finish()) return Status::OK;
  if (!out.unread() || shuttingDownNow() ||
      std::chrono::system_clock::now() + std::chrono::milliseconds(100) >= ctx->deadline())
    return stoppedStatus(ctx);
  return Status(StatusCode::DEADLINE_EXCEEDED, "the client did not read the result within " +
                                                   std::to_string(kMaxUnreadStream.count()) +
                                                   " s; the call was ended");
}

ProgressFn PlannerService::streamedProgress(StreamOut& out) {
  struct Throttle {
    SteadyClock::time_point last = SteadyClock::now() - std::chrono::seconds(1);
    std::string last_phase;
  };
  auto throttle = std::make_shared<Throttle>();
  return [&out, throttle](const PlanProgress& p) {
    // The planner and the optimizer report more often than a client wants to read.
    if (SteadyClock::now() - throttle->last < std::chrono::milliseconds(100) &&
        p.phase == throttle->last_phase)
      return;
    throttle->last = SteadyClock::now();
    throttle->last_phase = p.phase;
    v1::PlanEvent e;
    wire::progressToProto(p, e.mutable_progress());
    out.progress(std::move(e));  // never waits for the client
  };
}

CancelFn PlannerService::cancelFor(ServerContext* ctx) {
  // Planners poll this every iteration; asking gRPC (a completion-queue pluck) that often cost
  // ~1 ms per short plan.  Once a millisecond is enough to stop within 100 ms.
  struct State {
    SteadyClock::time_point next_check = SteadyClock::now();
    bool stop = false;
  };
  auto state = std::make_shared<State>();
  return [this, ctx, state] {
    if (state->stop || SteadyClock::now() < state->next_check) return state->stop;
    state->next_check = SteadyClock::now() + std::chrono::milliseconds(1);
    return state->stop = shouldStop(ctx);
  };
}

// ---- Work --------------------------------------------------------------------------------------

Status PlannerService::plan(ServerContext* ctx, const v1::PlanRequest& req, v1::PlanResponse* out,
                            const ProgressFn& progress, RequestLog& rl) {
  CheckedPlan checked = checkPlan(resolver_, req, options_.max_time_limit_s);
  PlanRequest& request = checked.request;
  request.roadmaps = &roadmaps_;
  const CancelFn cancelled = cancelFor(ctx);
  PipelineOptions pipeline;
  pipeline.optimization = checked.optimization;
  pipeline.gains = checked.gains;
  PipelineResult result = runPipeline(request, pipeline, progress, cancelled);
  marionette::Plan& p = result.optimized ? result.optimized->plan : result.plan;
  if (!result.no_gains.empty() && p.samples() > 0)
    p.message +=
        std::string(p.message.empty() ? "" : "; ") + "no feedback gains: " + result.no_gains;
  if (shouldStop(ctx)) return stoppedStatus(ctx);
  wire::planToProto(p, out);
  wire::startAndGoalToProto(request, p, out);
  if (result.optimized)
    wire::optimizationToProto(result.optimized->report, out->mutable_optimization());
  rl.set("outcome", toString(p.outcome));
  return Status::OK;
}

namespace {

// Only the contact pairs that touched (a normal or friction force other than 0 in some sample)
// keep their names and their forces in every sample (SimulateResponse.contact_names).
void keepTouchedPairs(const Contacts& contacts, v1::SimulateResponse* out) {
  std::vector<int> touched;
  for (int r = 0; r < contacts.rows(); ++r)
    for (const v1::SimulationSample& s : out->samples())
      if (r < s.contact_normal_n_size() &&
          (s.contact_normal_n(r) != 0.0 || s.contact_friction_n(r) != 0.0)) {
        touched.push_back(r);
        out->add_contact_names(contacts.rowName(r));
        break;
      }
  for (v1::SimulationSample& s : *out->mutable_samples()) {
    if (s.contact_normal_n_size() == 0) continue;
    for (std::size_t i = 0; i < touched.size(); ++i) {
      s.set_contact_normal_n(static_cast<int>(i), s.contact_normal_n(touched[i]));
      s.set_contact_friction_n(static_cast<int>(i), s.contact_friction_n(touched[i]));
    }
    s.mutable_contact_normal_n()->Truncate(static_cast<int>(touched.size()));
    s.mutable_contact_friction_n()->Truncate(static_cast<int>(touched.size()));
  }
}

}  // namespace

Status PlannerService::simulate(const v1::SimulateRequest& req, v1::SimulateResponse* out) {
  const CheckedSimulation checked = checkSimulate(resolver_, req);
  const ModelPtr& model = checked.model;
  const wire::SimulationCall& call = checked.call;
  std::unique_ptr<CollisionChecker> checker;
  if (checked.collision) checker = std::make_unique<CollisionChecker>(checked.collision);
  DynamicsData data(*model);
  std::vector<Eigen::Vector3d> points;
  // Stopped at any step by the call's CancelScope (withWorker).
  const CheckedSimulationReport report = simulateChecked(
      model, call.inputs, call.options, checker.get(), call.check,
      [&](const CheckedSample& sample) {
        v1::SimulationSample* s = out->add_samples();
        wire::sampleToProto(sample, s);
        if (call.with_points) {
          pointsInStage(*model, data, model->configuration(*sample.row.q, *sample.row.rho), points);
          for (const Eigen::Vector3d& p : points) {
            v1::Vector3* point = s->add_points_m();
            point->set_x(p.x());
            point->set_y(p.y());
            point->set_z(p.z());
          }
        }
        return true;
      });
  wire::simulationToProto(*model, checker ? checker->collisionModel().scene().name : "", report,
                          out);
  if (const auto& contacts = call.options.contacts) keepTouchedPairs(*contacts, out);
  for (const std::string& warning : call.inputs.speedWarnings(*model)) out->add_warnings(warning);
  return Status::OK;
}

// ---- Plumbing ----------------------------------------------------------------------------------

void PlannerService::describePlanRequest(const v1::PlanRequest& req, RequestLog& rl) {
  rl.set("model", modelLabel(req.model()));
  rl.set("scene", sceneLabel(req.scene()));
  rl.set("planner", req.planner().empty() ? PlannerOptions{}.planner : req.planner());
}

Status PlannerService::guarded(ServerContext* ctx, RequestLog& rl,
                               const std::function<Status()>& fn) {
  try {
    return fn();
  } catch (const PlanCancelled&) {
    return stoppedStatus(ctx);
  } catch (const wire::RequestError& e) {
    return Status(e.code() == wire::RequestError::Code::NotFound ? StatusCode::NOT_FOUND
                                                                 : StatusCode::INVALID_ARGUMENT,
                  e.what());
  } catch (const FieldError& e) {
    return Status(StatusCode::INVALID_ARGUMENT, wire::describeForClient(e));
  } catch (const SimulationError& e) {
    // ABORTED: the request was well formed; the motion it asks for cannot be simulated.
    return Status(StatusCode::ABORTED, std::string("the simulation failed at ") + e.what());
  } catch (const std::invalid_argument& e) {
    return Status(StatusCode::INVALID_ARGUMENT, e.what());
  } catch (const std::exception& e) {
    // What went wrong is the server's business (it may name its files): logged, not sent.
    rl.set("detail", e.what());
    return Status(StatusCode::INTERNAL, "internal error (the server's log has the details)");
  } catch (...) {
    return Status(StatusCode::INTERNAL, "internal error (the server's log has the details)");
  }
}

bool PlannerService::shuttingDownNow() {
  std::lock_guard<std::mutex> lock(shutdown_mutex_);
  return shutting_down_ && SteadyClock::now() >= shutdown_deadline_;
}

bool PlannerService::shouldStop(ServerContext* ctx) {
  return ctx->IsCancelled() || std::chrono::system_clock::now() >= ctx->deadline() ||
         shuttingDownNow();
}

Status PlannerService::stoppedStatus(ServerContext* ctx) {
  if (shuttingDownNow())
    return Status(StatusCode::UNAVAILABLE, "the server is shutting down; the call was stopped");
  // gRPC cancels a call when its deadline passes, by its own timer: a few ms either way.
  if (std::chrono::system_clock::now() + std::chrono::milliseconds(100) >= ctx->deadline())
    return Status(StatusCode::DEADLINE_EXCEEDED, "the deadline passed; the call was stopped");
  return Status(StatusCode::CANCELLED, "cancelled by the client");
}

Status PlannerService::withWorker(ServerContext* ctx, RequestLog& rl,
                                  const std::function<Status()>& fn) {
  {
    std::lock_guard<std::mutex> lock(shutdown_mutex_);
    if (shutting_down_) return Status(StatusCode::UNAVAILABLE, "the server is shutting down");
  }
  switch (admission_.acquire([&] { return shouldStop(ctx); })) {
    case Admission::Result::Full:
      return Status(StatusCode::RESOURCE_EXHAUSTED,
                    "every worker is busy and the queue is full (" +
                        std::to_string(options_.workers) + " workers, " +
                        std::to_string(options_.max_queue) + " waiting); retry later");
    case Admission::Result::Stopped: return stoppedStatus(ctx);
    case Admission::Result::Admitted: break;
  }
  struct Release {
    Admission& a;
    ~Release() { a.release(); }
  } release{admission_};
  // Every loop the call runs -- rest poses, simulations, linearizations, optimizers, editing --
  // answers its deadline, its client's cancel and a shutdown (models/cancel.hpp).
  const CancelScope scope(cancelFor(ctx));
  return guarded(ctx, rl, fn);
}

}  // namespace marionette::service
