// SPDX-License-Identifier: BSD-3-Clause
#include "call_guard.hpp"

#include <grpcpp/alarm.h>

#include <chrono>
#include <cstring>
#include <memory>
#include <mutex>

#include "admission.hpp"

namespace marionette::service {
namespace {

using grpc::experimental::InterceptionHookPoints;

constexpr const char* kReflectionPrefix = "/grpc.reflection.";

class CallGuard : public grpc::experimental::Interceptor {
 public:
  CallGuard(grpc::experimental::ServerRpcInfo* info, LogSink& log, const std::string& token)
      : info_(info), log_(log), token_(token) {}

  void Intercept(grpc::experimental::InterceptorBatchMethods* methods) override {
    if (methods->QueryInterceptionHookPoint(InterceptionHookPoints::POST_RECV_INITIAL_METADATA)) {
      refused_ =
          std::strncmp(info_->method(), kReflectionPrefix, std::strlen(kReflectionPrefix)) == 0 &&
          !authorize(info_->server_context()->client_metadata(), token_).ok();
      if (refused_) cancelLater();
    }
    if (refused_ && methods->QueryInterceptionHookPoint(InterceptionHookPoints::PRE_SEND_MESSAGE))
      if (grpc::ByteBuffer* reply = methods->GetSerializedSendMessage()) reply->Clear();
    if (methods->QueryInterceptionHookPoint(InterceptionHookPoints::PRE_SEND_STATUS)) {
      grpc::Status status = methods->GetSendStatus();
      if (refused_) {
        status = authorize(info_->server_context()->client_metadata(), token_);
      } else if (status.error_code() == grpc::StatusCode::INTERNAL &&
                 status.error_message().empty()) {
        // The one INTERNAL without a message: gRPC's, for a request it could not decode (every
        // handler's own INTERNAL says what happened).
        status = grpc::Status(
            grpc::StatusCode::INVALID_ARGUMENT,
            std::string("the request is not a valid protobuf message for ") + info_->method());
        log_.write({{"method", info_->method()},
                    {"peer", info_->server_context()->peer()},
                    {"status", codeName(status.error_code())},
                    {"message", status.error_message()}});
      }
      methods->ModifySendStatus(boundedStatus(status));
    }
    methods->Proceed();
  }

  ~CallGuard() override {
    if (!pending_) return;
    std::lock_guard<std::mutex> lock(pending_->mutex);
    pending_->context = nullptr;  // the call is over; the alarm, if it still fires, does nothing
  }

 private:
  // A reflection stream stays open for as long as its client likes, and holds one of the
  // server's threads meanwhile.  Refused, a client that closes its side at once gets
  // UNAUTHENTICATED; one that keeps it open is cancelled after kRefusedStreamLimit.
  static constexpr std::chrono::seconds kRefusedStreamLimit{2};
  struct Pending {
    std::mutex mutex;
    grpc::ServerContextBase* context;
  };
  void cancelLater() {
    pending_ = std::make_shared<Pending>();
    pending_->context = info_->server_context();
    alarm_.Set(std::chrono::system_clock::now() + kRefusedStreamLimit,
               [pending = pending_](bool fired) {
                 std::lock_guard<std::mutex> lock(pending->mutex);
                 if (fired && pending->context) pending->context->TryCancel();
               });
  }

  grpc::experimental::ServerRpcInfo* info_;
  LogSink& log_;
  const std::string& token_;
  bool refused_ = false;
  std::shared_ptr<Pending> pending_;
  grpc::Alarm alarm_;  // declared last: destroyed (cancelled) first
};

}  // namespace

grpc::experimental::Interceptor* CallGuardFactory::CreateServerInterceptor(
    grpc::experimental::ServerRpcInfo* info) {
  return new CallGuard(info, log_, token_);
}

}  // namespace marionette::service
