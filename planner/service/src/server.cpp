#include "marionette/service/server.hpp"

#include <grpcpp/ext/proto_server_reflection_plugin.h>
#include <grpcpp/grpcpp.h>
#include <grpcpp/health_check_service_interface.h>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <mutex>
#include <sstream>
#include <thread>

#include "marionette/common/clock.hpp"
#include "marionette/common/json_text.hpp"
#include "marionette/environments/collision.hpp"
#include "marionette/environments/scene.hpp"
#include "marionette/models/model_io.hpp"
#include "marionette/planner/planner.hpp"
#include "marionette/planner/roadmap.hpp"
#include "marionette/service/wire.hpp"
#include "marionette/v1/planner.grpc.pb.h"

namespace marionette::service {
namespace {

namespace v1 = ::marionette::v1;
using Clock = std::chrono::steady_clock;
using grpc::ServerContext;
using grpc::Status;
using grpc::StatusCode;

constexpr long kMaxSimulationSteps = 200000;

const char* codeName(StatusCode code) {
  switch (code) {
    case StatusCode::OK: return "OK";
    case StatusCode::CANCELLED: return "CANCELLED";
    case StatusCode::INVALID_ARGUMENT: return "INVALID_ARGUMENT";
    case StatusCode::DEADLINE_EXCEEDED: return "DEADLINE_EXCEEDED";
    case StatusCode::NOT_FOUND: return "NOT_FOUND";
    case StatusCode::RESOURCE_EXHAUSTED: return "RESOURCE_EXHAUSTED";
    case StatusCode::UNAUTHENTICATED: return "UNAUTHENTICATED";
    case StatusCode::UNAVAILABLE: return "UNAVAILABLE";
    case StatusCode::INTERNAL: return "INTERNAL";
    case StatusCode::ABORTED: return "ABORTED";
    default: return "OTHER";
  }
}

// A bounded worker pool as an admission gate: up to `workers` calls run at once, up to `queue`
// more wait; beyond that a call is refused at once.
class Admission {
 public:
  Admission(int workers, int queue) : workers_(workers), queue_(queue) {}
  enum class Result { Admitted, Full, Stopped };
  // Waits for a worker while `stop` says nothing (checked every 10 ms).
  Result acquire(const std::function<bool()>& stop) {
    std::unique_lock<std::mutex> lock(mutex_);
    if (running_ < workers_) {
      ++running_;
      return Result::Admitted;
    }
    if (waiting_ >= queue_) return Result::Full;
    ++waiting_;
    while (true) {
      cv_.wait_for(lock, std::chrono::milliseconds(10));
      if (running_ < workers_) {
        --waiting_;
        ++running_;
        return Result::Admitted;
      }
      if (stop()) {
        --waiting_;
        return Result::Stopped;
      }
    }
  }
  void release() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      --running_;
    }
    cv_.notify_one();
  }

 private:
  std::mutex mutex_;
  std::condition_variable cv_;
  const int workers_, queue_;
  int running_ = 0, waiting_ = 0;
};

// One request's log record, written as a JSON line when it goes out of scope.
class RequestLog {
 public:
  RequestLog(std::ostream& out, std::mutex& mutex, const char* method, ServerContext* ctx)
      : out_(out), mutex_(mutex), method_(method), peer_(ctx->peer()), t0_(Clock::now()) {}
  ~RequestLog() {
    char stamp[32];
    const std::time_t now = std::time(nullptr);
    std::strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
    std::ostringstream line;
    line << "{\"time\": \"" << stamp << "\", \"method\": \"" << method_
         << "\", \"peer\": " << jsonString(peer_);
    for (const auto& [k, v] : fields_) line << ", \"" << k << "\": " << jsonString(v);
    char ms[32];
    std::snprintf(ms, sizeof ms, "%.3f", 1e3 * secondsSince(t0_));
    line << ", \"status\": \"" << codeName(code_) << "\", \"duration_ms\": " << ms;
    if (!message_.empty()) line << ", \"message\": " << jsonString(message_);
    line << "}\n";
    std::lock_guard<std::mutex> lock(mutex_);
    out_ << line.str() << std::flush;
  }
  void set(const std::string& key, const std::string& value) { fields_.emplace_back(key, value); }
  Status finish(Status s) {
    code_ = s.error_code();
    message_ = s.error_message();
    return s;
  }

 private:
  std::ostream& out_;
  std::mutex& mutex_;
  const char* method_;
  std::string peer_;
  Clock::time_point t0_;
  std::vector<std::pair<std::string, std::string>> fields_;
  StatusCode code_ = StatusCode::OK;
  std::string message_;
};

Status requestError(const wire::RequestError& e) {
  return Status(e.code() == wire::RequestError::Code::NotFound ? StatusCode::NOT_FOUND
                                                               : StatusCode::INVALID_ARGUMENT,
                e.what());
}

std::string modelLabel(const v1::ModelRef& ref) {
  return ref.source_case() == v1::ModelRef::kYaml ? "(inline)" : ref.name();
}
std::string sceneLabel(const v1::SceneRef& ref) {
  return ref.source_case() == v1::SceneRef::kYaml            ? "(inline)"
         : ref.source_case() == v1::SceneRef::SOURCE_NOT_SET ? "empty"
                                                             : ref.name();
}

}  // namespace

bool isLoopback(const std::string& address) {
  std::string host = address;
  if (host.rfind("ipv4:", 0) == 0) host = host.substr(5);
  if (host.rfind("ipv6:", 0) == 0) host = host.substr(5);
  if (!host.empty() && host[0] == '[') {
    const auto close = host.find(']');
    host = host.substr(1, close == std::string::npos ? std::string::npos : close - 1);
  } else if (const auto colon = host.rfind(':');
             colon != std::string::npos && host.find(':') == colon) {
    host = host.substr(0, colon);  // host:port (IPv4 or a name)
  }
  return host == "localhost" || host == "::1" || host.rfind("127.", 0) == 0;
}

// ---- The service
// ---------------------------------------------------------------------------------

class PlannerService final : public v1::Planner::Service {
 public:
  explicit PlannerService(const ServerOptions& options)
      : options_(options),
        log_(options.log ? *options.log : std::cerr),
        admission_(options.workers, options.max_queue) {}

  // Shutdown: running work gets until `deadline`, then stops.
  void beginShutdown(Clock::time_point deadline) {
    std::lock_guard<std::mutex> lock(shutdown_mutex_);
    shutdown_deadline_ = deadline;
    shutting_down_ = true;
  }

  Status ListModels(ServerContext* ctx, const v1::ListModelsRequest*,
                    v1::ListModelsResponse* out) override {
    RequestLog rl(log_, log_mutex_, "ListModels", ctx);
    if (Status s = authorize(ctx); !s.ok()) return rl.finish(s);
    return rl.finish(guarded([&] {
      for (const std::string& name : builtinModelNames())
        *out->add_models() = wire::summarize(*builtinModel(name));
      return Status::OK;
    }));
  }

  Status DescribeModel(ServerContext* ctx, const v1::DescribeModelRequest* req,
                       v1::ModelDescription* out) override {
    RequestLog rl(log_, log_mutex_, "DescribeModel", ctx);
    rl.set("model", modelLabel(req->model()));
    if (Status s = authorize(ctx); !s.ok()) return rl.finish(s);
    return rl.finish(guarded([&] {
      *out = wire::describeModel(*resolveModel(req->model(), "model"));
      return Status::OK;
    }));
  }

  Status ListScenes(ServerContext* ctx, const v1::ListScenesRequest*,
                    v1::ListScenesResponse* out) override {
    RequestLog rl(log_, log_mutex_, "ListScenes", ctx);
    if (Status s = authorize(ctx); !s.ok()) return rl.finish(s);
    return rl.finish(guarded([&] {
      for (const std::string& name : builtinSceneNames())
        *out->add_scenes() = wire::summarize(*builtinScene(name));
      return Status::OK;
    }));
  }

  Status Simulate(ServerContext* ctx, const v1::SimulateRequest* req,
                  v1::SimulateResponse* out) override {
    RequestLog rl(log_, log_mutex_, "Simulate", ctx);
    rl.set("model", modelLabel(req->model()));
    rl.set("scene", sceneLabel(req->scene()));
    if (Status s = authorize(ctx); !s.ok()) return rl.finish(s);
    return rl.finish(withWorker(ctx, [&] { return simulate(ctx, *req, out); }));
  }

  Status Plan(ServerContext* ctx, const v1::PlanRequest* req, v1::PlanResponse* out) override {
    RequestLog rl(log_, log_mutex_, "Plan", ctx);
    describePlanRequest(*req, rl);
    if (Status s = authorize(ctx); !s.ok()) return rl.finish(s);
    return rl.finish(withWorker(ctx, [&] { return plan(ctx, *req, out, {}, rl); }));
  }

  Status PlanStream(ServerContext* ctx, const v1::PlanRequest* req,
                    grpc::ServerWriter<v1::PlanEvent>* writer) override {
    RequestLog rl(log_, log_mutex_, "PlanStream", ctx);
    describePlanRequest(*req, rl);
    if (Status s = authorize(ctx); !s.ok()) return rl.finish(s);
    return rl.finish(withWorker(ctx, [&] {
      auto last = Clock::now() - std::chrono::seconds(1);
      const ProgressFn progress = [&](const PlanProgress& p) {
        // At most 10 events a second (the planner reports more often).
        if (Clock::now() - last < std::chrono::milliseconds(100) && p.phase != "verify") return;
        last = Clock::now();
        v1::PlanEvent e;
        wire::progressToProto(p, e.mutable_progress());
        writer->Write(e);
      };
      v1::PlanEvent result;
      Status s = plan(ctx, *req, result.mutable_plan(), progress, rl);
      if (s.ok()) writer->Write(result);
      return s;
    }));
  }

 private:
  // ---- Plumbing ---------------------------------------------------------------------------------

  Status authorize(ServerContext* ctx) const {
    if (options_.token.empty()) return Status::OK;
    const auto& md = ctx->client_metadata();
    const auto it = md.find("authorization");
    const std::string expected = "Bearer " + options_.token;
    bool ok = it != md.end() && it->second.size() == expected.size();
    if (ok) {  // constant-time comparison
      unsigned char diff = 0;
      for (std::size_t i = 0; i < expected.size(); ++i) diff |= it->second.data()[i] ^ expected[i];
      ok = diff == 0;
    }
    return ok ? Status::OK
              : Status(StatusCode::UNAUTHENTICATED,
                       "authorization: this server needs 'authorization: Bearer <token>' metadata");
  }

  // Runs fn, turning exceptions into statuses: the server never dies of a request.
  Status guarded(const std::function<Status()>& fn) {
    try {
      return fn();
    } catch (const wire::RequestError& e) {
      return requestError(e);
    } catch (const std::invalid_argument& e) {
      return Status(StatusCode::INVALID_ARGUMENT, e.what());
    } catch (const std::exception& e) {
      return Status(StatusCode::INTERNAL, std::string("internal error: ") + e.what());
    } catch (...) {
      return Status(StatusCode::INTERNAL, "internal error");
    }
  }

  bool shuttingDownNow() {
    std::lock_guard<std::mutex> lock(shutdown_mutex_);
    return shutting_down_ && Clock::now() >= shutdown_deadline_;
  }

  // Whether the call should stop: the client cancelled, its deadline passed, or the server is
  // shutting down and the grace period is over.
  bool shouldStop(ServerContext* ctx) {
    return ctx->IsCancelled() || std::chrono::system_clock::now() >= ctx->deadline() ||
           shuttingDownNow();
  }

  Status stoppedStatus(ServerContext* ctx) {
    if (shuttingDownNow())
      return Status(StatusCode::UNAVAILABLE, "the server is shutting down; the call was stopped");
    // gRPC cancels a call when its deadline passes, by its own timer: a few ms either way.
    if (std::chrono::system_clock::now() + std::chrono::milliseconds(100) >= ctx->deadline())
      return Status(StatusCode::DEADLINE_EXCEEDED, "the deadline passed; the call was stopped");
    return Status(StatusCode::CANCELLED, "cancelled by the client");
  }

  Status withWorker(ServerContext* ctx, const std::function<Status()>& fn) {
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
    return guarded(fn);
  }

  // Built-in models and scenes, and the collision models of built-in pairs, are kept.
  ModelPtr builtinModel(const std::string& name) {
    std::lock_guard<std::mutex> lock(cache_mutex_);
    auto& m = models_[name];
    if (!m) m = loadModel(name);
    return m;
  }
  ScenePtr builtinScene(const std::string& name) {
    std::lock_guard<std::mutex> lock(cache_mutex_);
    auto& s = scenes_[name];
    if (!s) s = loadScene(name);
    return s;
  }

  static bool contains(const std::vector<std::string>& all, const std::string& name) {
    return std::find(all.begin(), all.end(), name) != all.end();
  }
  static std::string list(const std::vector<std::string>& all) {
    std::string s;
    for (const auto& n : all) s += (s.empty() ? "" : ", ") + n;
    return s;
  }

  ModelPtr resolveModel(const v1::ModelRef& ref, const std::string& field) {
    switch (ref.source_case()) {
      case v1::ModelRef::kName:
        if (!contains(builtinModelNames(), ref.name()))
          throw wire::RequestError(wire::RequestError::Code::NotFound,
                                   field + ".name: no built-in model '" + ref.name() + "' (" +
                                       list(builtinModelNames()) + ")");
        return builtinModel(ref.name());
      case v1::ModelRef::kYaml: {
        ModelPtr model;
        try {
          model = loadModelString(ref.yaml(), field + ".yaml");
        } catch (const std::exception& e) {
          throw wire::RequestError(wire::RequestError::Code::InvalidArgument, e.what());
        }
        // A request never makes the server read its own files.
        for (const Geometry& g : model->geometry)
          if (g.shape.type == ShapeType::Mesh)
            throw wire::RequestError(wire::RequestError::Code::InvalidArgument,
                                     field + ".yaml: geometry '" + g.name +
                                         "': an inline model cannot use mesh files; use "
                                         "primitive shapes");
        return model;
      }
      case v1::ModelRef::SOURCE_NOT_SET: break;
    }
    throw wire::RequestError(wire::RequestError::Code::InvalidArgument,
                             field + ": not set (give a built-in name or the YAML text)");
  }

  CollisionModelPtr resolveCollision(const ModelPtr& model, const v1::ModelRef& model_ref,
                                     const v1::SceneRef& ref, const std::string& field) {
    ScenePtr scene;
    switch (ref.source_case()) {
      case v1::SceneRef::kName:
        if (!contains(builtinSceneNames(), ref.name()))
          throw wire::RequestError(wire::RequestError::Code::NotFound,
                                   field + ".name: no built-in scene '" + ref.name() + "' (" +
                                       list(builtinSceneNames()) + ")");
        scene = builtinScene(ref.name());
        break;
      case v1::SceneRef::kYaml:
        try {
          scene = loadSceneStringBuiltinMeshes(ref.yaml(), field + ".yaml");
        } catch (const std::exception& e) {
          throw wire::RequestError(wire::RequestError::Code::InvalidArgument, e.what());
        }
        break;
      case v1::SceneRef::SOURCE_NOT_SET: scene = builtinScene("empty"); break;
    }
    const bool builtin_pair =
        model_ref.source_case() == v1::ModelRef::kName && ref.source_case() != v1::SceneRef::kYaml;
    if (!builtin_pair) return std::make_shared<CollisionModel>(model, scene);
    const std::string key = model->name + "|" + scene->name;
    std::lock_guard<std::mutex> lock(cache_mutex_);
    auto& c = collisions_[key];
    if (!c) c = std::make_shared<CollisionModel>(model, scene);
    return c;
  }

  void describePlanRequest(const v1::PlanRequest& req, RequestLog& rl) {
    rl.set("model", modelLabel(req.model()));
    rl.set("scene", sceneLabel(req.scene()));
    rl.set("planner", req.planner().empty() ? "est" : req.planner());
  }

  // ---- Work ----------------------------------------------------------------------------------

  Status plan(ServerContext* ctx, const v1::PlanRequest& req, v1::PlanResponse* out,
              const ProgressFn& progress, RequestLog& rl) {
    const ModelPtr model = resolveModel(req.model(), "model");
    const CollisionModelPtr collision = resolveCollision(model, req.model(), req.scene(), "scene");
    PlanRequest request =
        wire::planRequestFromProto(req, model, collision, options_.max_time_limit_s);
    if (!options_.roadmap_dir.empty() && request.options.planner == "prm") {
      RoadmapOptions ro = request.options.roadmap;
      ro.step_s = request.options.step_s;
      const std::size_t h =
          std::hash<std::string>{}(RestPoseRoadmap::fingerprint(*collision) + "|" + ro.describe());
      char name[64];
      std::snprintf(name, sizeof name, "/%s-%016zx.roadmap", model->name.c_str(), h);
      request.options.roadmap_file = options_.roadmap_dir + name;
    }
    marionette::Plan p;
    try {
      // Planners poll this every iteration; asking gRPC (a completion-queue pluck) that often
      // cost ~1 ms per short plan.  Once a millisecond is enough to stop within 100 ms.
      auto next_check = Clock::now();
      bool stop = false;
      p = planMotion(request, progress, [&] {
        if (stop || Clock::now() < next_check) return stop;
        next_check = Clock::now() + std::chrono::milliseconds(1);
        return stop = shouldStop(ctx);
      });
    } catch (const std::runtime_error&) {
      if (shouldStop(ctx)) return stoppedStatus(ctx);  // a roadmap build stopped part-way
      throw;
    }
    if (shouldStop(ctx)) return stoppedStatus(ctx);
    wire::planToProto(p, out);
    rl.set("outcome", toString(p.outcome));
    return Status::OK;
  }

  Status simulate(ServerContext* ctx, const v1::SimulateRequest& req, v1::SimulateResponse* out) {
    const ModelPtr model = resolveModel(req.model(), "model");
    const Model& m = *model;
    SimulationOptions opt;
    auto positive = [](const std::string& field, double x, double dflt, double hi) {
      if (!std::isfinite(x) || x < 0 || x > hi)
        throw wire::RequestError(
            wire::RequestError::Code::InvalidArgument,
            field + ": must be in [0, " + std::to_string(hi) + "], got " + std::to_string(x));
      return x == 0 ? dflt : x;
    };
    opt.dt_s = positive("dt_s", req.dt_s(), 0.01, 0.1);
    if (opt.dt_s < 1e-5)
      throw wire::RequestError(wire::RequestError::Code::InvalidArgument,
                               "dt_s: must be at least 1e-5 s");
    opt.damping_scale = positive("damping_scale", req.damping_scale(), 1.0, 1e3);
    Eigen::VectorXd rho0;
    opt.start = wire::startSpecFromProto(m, req.start(), &rho0);
    InputSchedule inputs = req.has_inputs() ? wire::inputsFromProto(m, req.inputs(), "inputs")
                                            : InputSchedule::constant(m);
    if (req.start().inputs_size() || !req.start().input_values().empty()) {
      // The inputs at t = 0 are the sequence's first sample; start inputs only make sense for
      // a rig held still.
      if (req.has_inputs())
        throw wire::RequestError(wire::RequestError::Code::InvalidArgument,
                                 "start.inputs: give the start inputs as the first sample of "
                                 "`inputs` (or leave `inputs` unset to hold them)");
      inputs.defaults = rho0;
    }
    const double default_duration = inputs.times_s.empty() ? 1.0 : inputs.times_s.back();
    opt.duration_s = positive("duration_s", req.duration_s(), default_duration, 3600.0);
    const double steps = opt.duration_s / opt.dt_s;
    // Every step is a sample in the answer (~0.4 KB for the biggest model): a cap on memory.
    if (steps > kMaxSimulationSteps)
      throw wire::RequestError(wire::RequestError::Code::InvalidArgument,
                               "duration_s: " + std::to_string(static_cast<long>(steps)) +
                                   " steps of dt_s; a request may ask for at most " +
                                   std::to_string(kMaxSimulationSteps));
    if (req.stop_on_collision() && req.scene().source_case() == v1::SceneRef::SOURCE_NOT_SET)
      throw wire::RequestError(wire::RequestError::Code::InvalidArgument,
                               "stop_on_collision: needs a scene");
    std::unique_ptr<CollisionChecker> checker;
    if (req.scene().source_case() != v1::SceneRef::SOURCE_NOT_SET)
      checker = std::make_unique<CollisionChecker>(
          resolveCollision(model, req.model(), req.scene(), "scene"));

    out->set_model(m.name);
    if (checker) out->set_scene(checker->collisionModel().scene().name);
    for (const auto& v : m.dynamic) out->add_dynamic_names(v.name);
    for (const auto& v : m.kinematic) out->add_kinematic_names(v.name);
    for (const auto& s : m.strings) out->add_string_names(s.name);
    out->set_first_collision_t_s(std::numeric_limits<double>::quiet_NaN());
    out->set_min_clearance_m(std::numeric_limits<double>::infinity());
    out->set_min_stage_clearance_m(std::numeric_limits<double>::infinity());
    struct Stop {};
    Eigen::VectorXd q_full(m.nq());
    auto pairToProto = [](const ContactPair& p, v1::Contact* c) {
      c->set_kind(contactKindName(p.kind));
      c->set_first(p.first);
      c->set_second(p.second);
      c->set_description(p.describe());
    };
    int rows = 0;
    auto on_row = [&](const SimulationRow& row) {
      if ((++rows & 63) == 0 && shouldStop(ctx)) throw Stop{};
      v1::SimulationSample* s = out->add_samples();
      s->set_t_s(row.t_s);
      for (int i = 0; i < row.q->size(); ++i) s->add_q((*row.q)[i]);
      for (int i = 0; i < row.rho->size(); ++i) s->add_inputs((*row.rho)[i]);
      s->set_energy_j(row.energy_J);
      s->set_max_violation_m(row.max_violation_m);
      for (int i = 0; i < row.tension_N->size(); ++i) s->add_tension_n((*row.tension_N)[i]);
      if (!checker) return;
      q_full << *row.q, *row.rho;
      const CollisionResult c = checker->inCollision(q_full);
      const ClearanceResult cl = checker->clearance(q_full);
      const double clearance = c.in_collision ? 0.0 : cl.distance_m;
      s->set_collision(c.in_collision);
      s->set_clearance_m(clearance);
      if (c.in_collision && out->samples_in_collision() == 0) {
        out->set_first_collision_t_s(row.t_s);
        pairToProto(c.pair, out->mutable_first_collision());
      }
      if (c.in_collision) out->set_samples_in_collision(out->samples_in_collision() + 1);
      if (clearance < out->min_clearance_m()) {
        out->set_min_clearance_m(clearance);
        out->set_min_clearance_t_s(row.t_s);
        pairToProto(c.in_collision ? c.pair : cl.pair, out->mutable_min_clearance_pair());
      }
      if (cl.stage_distance_m < out->min_stage_clearance_m()) {
        out->set_min_stage_clearance_m(cl.stage_distance_m);
        pairToProto(cl.stage_pair, out->mutable_min_stage_clearance_pair());
      }
      if (c.in_collision && req.stop_on_collision()) {
        out->set_stopped_at_collision(true);
        throw Stop{};
      }
    };
    SimulationSummary sum;
    try {
      sum = marionette::simulate(model, inputs, opt, on_row);
    } catch (const Stop&) {
      if (!out->stopped_at_collision()) return stoppedStatus(ctx);
      return Status::OK;
    } catch (const SimulationError& e) {
      // ABORTED: the request was well formed; the motion it asks for cannot be simulated.
      return Status(
          StatusCode::ABORTED,
          std::string("the simulation failed (a Newton step did not converge) at ") + e.what());
    }
    out->set_steps(sum.steps);
    out->set_us_per_step(sum.us_per_step);
    out->set_newton_iterations_mean(sum.newton_iterations_mean);
    out->set_max_violation_m(sum.max_violation_m);
    out->set_min_tension_n(sum.min_tension_N);
    out->set_energy_start_j(sum.energy_start_J);
    out->set_energy_end_j(sum.energy_end_J);
    return Status::OK;
  }

  const ServerOptions& options_;
  std::ostream& log_;
  std::mutex log_mutex_;
  Admission admission_;
  std::mutex shutdown_mutex_;
  bool shutting_down_ = false;
  Clock::time_point shutdown_deadline_ = Clock::time_point::max();
  std::mutex cache_mutex_;
  std::map<std::string, ModelPtr> models_;
  std::map<std::string, ScenePtr> scenes_;
  std::map<std::string, CollisionModelPtr> collisions_;
};

// ---- The server
// ----------------------------------------------------------------------------------

struct PlannerServer::Impl {
  ServerOptions options;
  std::unique_ptr<PlannerService> service;
  std::unique_ptr<grpc::Server> server;
  int port = 0;
  std::mutex mutex;
  std::condition_variable done_cv;
  bool done = false;
  std::once_flag shutdown_once;
};

PlannerServer::PlannerServer(ServerOptions options) : impl_(std::make_unique<Impl>()) {
  if (options.workers == 0) options.workers = std::max(1u, std::thread::hardware_concurrency());
  if (options.workers < 1) throw std::invalid_argument("--workers: must be at least 1");
  if (options.max_queue < 0) options.max_queue = options.workers;
  if (options.max_request_bytes < 1024)
    throw std::invalid_argument("--max-request-bytes: must be at least 1024");
  if (!(options.max_time_limit_s > 0))
    throw std::invalid_argument("--max-time-limit: must be > 0 s");
  if (options.tls_cert_file.empty() != options.tls_key_file.empty())
    throw std::invalid_argument("--tls-cert and --tls-key: give both or neither");
  const bool tls = !options.tls_cert_file.empty();
  if (!isLoopback(options.listen) && !tls && options.token.empty())
    throw std::invalid_argument("--listen " + options.listen +
                                ": off loopback the server needs TLS (--tls-cert, --tls-key) or "
                                "a token (--token-file)");
  impl_->options = std::move(options);
}

PlannerServer::~PlannerServer() {
  shutdown();
}

const ServerOptions& PlannerServer::options() const {
  return impl_->options;
}
int PlannerServer::port() const {
  return impl_->port;
}

void PlannerServer::start() {
  const ServerOptions& o = impl_->options;
  std::shared_ptr<grpc::ServerCredentials> creds = grpc::InsecureServerCredentials();
  if (!o.tls_cert_file.empty()) {
    grpc::SslServerCredentialsOptions ssl;
    ssl.pem_key_cert_pairs.push_back({wire::readFileText(o.tls_key_file, "--tls-key"),
                                      wire::readFileText(o.tls_cert_file, "--tls-cert")});
    creds = grpc::SslServerCredentials(ssl);
  }
  impl_->service = std::make_unique<PlannerService>(impl_->options);
  grpc::EnableDefaultHealthCheckService(true);
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  grpc::ServerBuilder builder;
  builder.AddListeningPort(o.listen, creds, &impl_->port);
  builder.RegisterService(impl_->service.get());
  builder.SetMaxReceiveMessageSize(o.max_request_bytes);
  // gRPC binds with SO_REUSEPORT by default: a second server on a port in use would start and
  // quietly take half of the connections.  Refuse instead.
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  builder.SetMaxSendMessageSize(-1);
  impl_->server = builder.BuildAndStart();
  if (!impl_->server || impl_->port == 0)
    throw std::runtime_error("--listen " + o.listen +
                             ": cannot listen there (in use, or not an address of this machine)");
  if (auto* health = impl_->server->GetHealthCheckService())
    health->SetServingStatus("marionette.v1.Planner", true);
}

void PlannerServer::shutdown() {
  if (!impl_->server) return;
  std::call_once(impl_->shutdown_once, [&] {
    if (auto* health = impl_->server->GetHealthCheckService()) health->Shutdown();
    const auto grace = std::chrono::duration_cast<Clock::duration>(
        std::chrono::duration<double>(impl_->options.shutdown_grace_s));
    impl_->service->beginShutdown(Clock::now() + grace);
    // Handlers stop on their own once the grace is over; gRPC cancels what is left after that.
    impl_->server->Shutdown(std::chrono::system_clock::now() + grace + std::chrono::seconds(1));
    std::lock_guard<std::mutex> lock(impl_->mutex);
    impl_->done = true;
    impl_->done_cv.notify_all();
  });
}

void PlannerServer::wait() {
  std::unique_lock<std::mutex> lock(impl_->mutex);
  impl_->done_cv.wait(lock, [&] { return impl_->done; });
}

}  // namespace marionette::service
