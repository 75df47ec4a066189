// SPDX-License-Identifier: BSD-3-Clause
// The MPC's scheduling in the executor (clients/executor/src/predictive_feedback.hpp), with a
// solver the test controls: a solution becomes the setpoints at the sample it was solved for and
// warm-starts the next solve, from the estimate predicted through the setpoints that go out
// until then (a solution back but waiting for its sample among them); a failed solve and one
// that throws are counted and the setpoints fall back to the plan's; a solve not back by its
// sample is late, counted and dropped; a start due while the worker is busy is skipped, counted.
#include <gtest/gtest.h>

#include <pthread.h>
#include <sched.h>

#include <atomic>
#include <chrono>
#include <future>
#include <stdexcept>
#include <thread>

#include "marionette/models/cancel.hpp"
#include "marionette/models/integrator.hpp"
#include "marionette/models/model_io.hpp"
#include "marionette/models/rest_pose.hpp"
#include "predictive_feedback.hpp"
#include "send_priority.hpp"

namespace marionette::executor {
namespace {

constexpr double kRate_hz = 50.0;

// The suspended mass's robot carried 10 cm along x over 20 samples, re-simulated.
std::vector<State> reference(const ModelPtr& mass) {
  IntegratorOptions io;
  io.dt_s = 1.0 / kRate_hz;
  VariationalIntegrator vi(mass, io);
  const RestPose rest = computeRestPose(mass, mass->defaultInputs());
  EXPECT_TRUE(rest.ok);
  std::vector<State> out = {
      vi.stateFromVelocity(rest.q, Eigen::VectorXd::Zero(mass->nd()), mass->defaultInputs())};
  State next = vi.makeState();
  for (int k = 1; k < 20; ++k) {
    const double s = k / 19.0;
    Eigen::VectorXd u = mass->defaultInputs();
    u[0] += 0.1 * s * s * s * (10 - 15 * s + 6 * s * s);
    EXPECT_EQ(vi.step(out.back(), u, next), StepStatus::Ok);
    out.push_back(next);
  }
  return out;
}

void waitForTheWorker(PredictiveFeedback& f) {
  for (int n = 0; n < 2000 && f.solving(); ++n)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  ASSERT_FALSE(f.solving());
}

// A solver the test controls: its solution is the plan's rows moved by `offset` (row 0 the
// state's), or it fails, throws, or waits for `release`; it records its calls.
struct TestSolver {
  enum class Next { Solve, Fail, Throw, Block } next = Next::Solve;
  struct Call {
    int i;
    State x;
    Eigen::MatrixXd before, warm;
  };
  std::vector<Call> calls;  // (written by the worker; read after waitForTheWorker)
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  Eigen::Vector2d offset{0.01, -0.002};

  PredictiveFeedback::Solver solver(const std::vector<State>& ref) {
    return [this, &ref](int i, const State& x, const Eigen::MatrixXd& before,
                        const Eigen::MatrixXd& warm) {
      calls.push_back({i, x, before, warm});
      PredictiveSolve out;
      out.inputs.resize(6, x.rho.size());
      for (int k = 0; k < 6; ++k)
        out.inputs.row(k) = (ref[std::min(i + k, 19)].rho + offset).transpose();
      out.inputs.row(0) = x.rho.transpose();
      out.iterations = 3;
      if (next == Next::Fail) out.failed = true;
      if (next == Next::Throw) throw std::runtime_error("the solver threw");
      if (next == Next::Block) released.wait();
      return out;
    };
  }
};

// The loop at sample i, the estimate on the plan: the setpoints asked for i + 1 go out as asked.
struct TestLoop {
  PredictiveFeedback& feedback;
  const std::vector<State>& ref;
  Eigen::VectorXd before_last = ref[0].rho, last = ref[0].rho;
  Eigen::VectorXd tick(int i) {
    const Eigen::VectorXd sent = feedback.setpoints(i);
    feedback.sent(i, ref[static_cast<std::size_t>(i)], before_last, last, sent);
    before_last = last;
    last = sent;
    return sent;
  }
};

TEST(PredictiveFeedback, SolutionsFailuresAndLateSolvesAtTheirSamples) {
  const ModelPtr mass = loadModel("suspended-mass");
  const std::vector<State> ref = reference(mass);
  TestSolver solver;
  using Next = TestSolver::Next;
  Next& next = solver.next;
  const auto& calls = solver.calls;
  const Eigen::Vector2d offset = solver.offset;
  // A solve every 2 samples for the sample 2 ahead.
  PredictiveFeedback feedback(mass, ref, kRate_hz, 2, 2, solver.solver(ref));
  auto plan = [&](int k) { return ref[static_cast<std::size_t>(k)].rho; };
  TestLoop loop{feedback, ref};
  auto tick = [&](int i) { return loop.tick(i); };

  // Sample 0 starts a solve for sample 2; until then, the plan's setpoints.
  EXPECT_TRUE(tick(0).isApprox(plan(1)));
  waitForTheWorker(feedback);
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_EQ(calls[0].i, 2);
  // From the estimate predicted through what goes out until sample 2 (the plan's rows here),
  // with those rows as the rig's history.
  EXPECT_TRUE(calls[0].x.rho.isApprox(plan(2)));
  EXPECT_TRUE(calls[0].before.row(0).transpose().isApprox(plan(1)));
  EXPECT_TRUE(calls[0].before.row(1).transpose().isApprox(plan(0)));
  EXPECT_LT((calls[0].x.q - ref[2].q).norm(), 1e-9);  // (the estimate on the plan)
  EXPECT_EQ(calls[0].warm.rows(), 0);
  EXPECT_TRUE(tick(1).isApprox(plan(2)));  // (its result waits for sample 2)
  // Sample 2: the solution's; the next solve, for sample 4, starts from it and fails.
  next = Next::Fail;
  EXPECT_TRUE(tick(2).isApprox(plan(3) + offset));
  EXPECT_EQ(feedback.stats().used, 1);
  waitForTheWorker(feedback);
  ASSERT_EQ(calls.size(), 2u);
  EXPECT_EQ(calls[1].i, 4);
  EXPECT_TRUE(calls[1].x.rho.isApprox(plan(4) + offset));  // the solution's row for sample 4
  ASSERT_GT(calls[1].warm.rows(), 0);
  EXPECT_TRUE(calls[1].warm.row(0).transpose().isApprox(plan(4) + offset));
  EXPECT_TRUE(calls[1].before.row(0).transpose().isApprox(plan(3) + offset));
  EXPECT_TRUE(tick(3).isApprox(plan(4) + offset));
  // Sample 4: the failure is counted and the setpoints are the plan's again.
  next = Next::Throw;
  EXPECT_TRUE(tick(4).isApprox(plan(5)));
  EXPECT_EQ(feedback.stats().failed, 1);
  waitForTheWorker(feedback);
  EXPECT_TRUE(tick(5).isApprox(plan(6)));
  next = Next::Block;
  EXPECT_TRUE(tick(6).isApprox(plan(7)));  // the throw: failed, the plan's
  EXPECT_EQ(feedback.stats().failed, 2);
  // The solve for sample 8 is held until after it: late, dropped; the start due at sample 8 finds
  // the worker busy and is skipped.
  EXPECT_TRUE(tick(7).isApprox(plan(8)));
  EXPECT_TRUE(tick(8).isApprox(plan(9)));
  EXPECT_TRUE(feedback.solving());
  EXPECT_EQ(feedback.stats().skipped, 1);
  solver.release.set_value();
  waitForTheWorker(feedback);
  next = Next::Solve;
  EXPECT_TRUE(tick(9).isApprox(plan(10)));
  EXPECT_EQ(feedback.stats().late, 1);
  EXPECT_EQ(feedback.stats().used, 1);
  EXPECT_EQ(feedback.stats().started, 4);    // for samples 2, 4, 6 and 8
  EXPECT_TRUE(tick(10).isApprox(plan(11)));  // (a solve for sample 12 starts)
  waitForTheWorker(feedback);
  EXPECT_TRUE(tick(11).isApprox(plan(12)));
  EXPECT_TRUE(tick(12).isApprox(plan(13) + offset));
  EXPECT_EQ(feedback.stats().used, 2);
  // No solve is started for a sample past the plan's second last.
  for (int i = 13; i < 18; ++i) {
    tick(i);
    waitForTheWorker(feedback);
  }
  EXPECT_LE(calls.back().i, 18);
}

// Solves overlap when they start more often than their lead: one started while another's solution
// waits for its sample predicts through that solution's setpoints and starts warm from its rows.
TEST(PredictiveFeedback, ASolveStartsFromTheSolutionsWaitingForTheirSamples) {
  const ModelPtr mass = loadModel("suspended-mass");
  const std::vector<State> ref = reference(mass);
  TestSolver solver;
  const auto& calls = solver.calls;
  const Eigen::Vector2d offset = solver.offset;
  // A solve every 2 samples for the sample 4 ahead.
  PredictiveFeedback feedback(mass, ref, kRate_hz, 4, 2, solver.solver(ref));
  auto plan = [&](int k) { return ref[static_cast<std::size_t>(k)].rho; };
  TestLoop loop{feedback, ref};
  EXPECT_TRUE(loop.tick(0).isApprox(plan(1)));  // (a solve for sample 4)
  waitForTheWorker(feedback);
  EXPECT_TRUE(loop.tick(1).isApprox(plan(2)));
  EXPECT_TRUE(loop.tick(2).isApprox(plan(3)));  // (a solve for sample 6)
  waitForTheWorker(feedback);
  ASSERT_EQ(calls.size(), 2u);
  EXPECT_EQ(calls[1].i, 6);
  // Through the setpoints the first solution will send from sample 4 on (its row 0 the plan's).
  EXPECT_TRUE(calls[1].before.row(1).transpose().isApprox(plan(4)));
  EXPECT_TRUE(calls[1].before.row(0).transpose().isApprox(plan(5) + offset));
  EXPECT_TRUE(calls[1].x.rho.isApprox(plan(6) + offset));
  ASSERT_EQ(calls[1].warm.rows(), 4);  // the first solution's rows for samples 6 to 9
  EXPECT_TRUE(calls[1].warm.row(0).transpose().isApprox(plan(6) + offset));
  EXPECT_TRUE(calls[1].warm.row(3).transpose().isApprox(plan(9) + offset));
  EXPECT_TRUE(loop.tick(3).isApprox(plan(4)));
  EXPECT_TRUE(loop.tick(4).isApprox(plan(5) + offset));  // the first solution in force
  EXPECT_EQ(feedback.stats().used, 1);
  waitForTheWorker(feedback);
  EXPECT_TRUE(loop.tick(5).isApprox(plan(6) + offset));
  EXPECT_TRUE(loop.tick(6).isApprox(plan(7) + offset));  // the second
  EXPECT_EQ(feedback.stats().used, 2);
  EXPECT_EQ(feedback.stats().late, 0);
  EXPECT_EQ(feedback.stats().skipped, 0);
}

// A stop abandons the solve under way: the solver's work polls the cancel (as the transcription's
// evaluations do, every Ipopt iteration), so a solve that would take 60 s ends at once, and no
// solve starts after the stop.
TEST(PredictiveFeedback, AStopAbandonsTheSolveUnderWay) {
  const ModelPtr mass = loadModel("suspended-mass");
  const std::vector<State> ref = reference(mass);
  std::atomic<bool> started{false}, abandoned{false};
  std::atomic<int> calls{0};
  PredictiveFeedback::Solver slow = [&](int, const State&, const Eigen::MatrixXd&,
                                        const Eigen::MatrixXd&) -> PredictiveSolve {
    ++calls;
    started = true;
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (std::chrono::steady_clock::now() < until) {  // "iterations" of 1 ms
      try {
        throwIfCancelled("test solve");
      } catch (const PlanCancelled&) {
        abandoned = true;
        throw;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    return PredictiveSolve{};
  };
  const auto t0 = std::chrono::steady_clock::now();
  {
    PredictiveFeedback feedback(mass, ref, kRate_hz, 2, 1, slow);
    TestLoop loop{feedback, ref};
    loop.tick(0);
    for (int n = 0; n < 2000 && !started; ++n)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    ASSERT_TRUE(started);
    feedback.stop();
    for (int n = 0; n < 2000 && feedback.solving(); ++n)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    EXPECT_FALSE(feedback.solving());
    EXPECT_TRUE(abandoned);
    loop.tick(1);  // after the stop: no solve starts
    loop.tick(2);
  }  // (the destructor joins the worker at once)
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 10.0);
  EXPECT_EQ(calls, 1);
}

// The send loop runs above every normal thread while it streams, where the system permits it,
// and says why not where it does not; its thread's policy comes back afterwards.
TEST(SendPriority, RaisesTheLoopsThreadWherePermittedAndGivesItBack) {
  int before_policy = -1;
  sched_param before{};
  ASSERT_EQ(pthread_getschedparam(pthread_self(), &before_policy, &before), 0);
  {
    const SendPriority priority;
    int policy = -1;
    sched_param now{};
    ASSERT_EQ(pthread_getschedparam(pthread_self(), &policy, &now), 0);
    if (priority.realTime()) {
      EXPECT_EQ(policy, SCHED_RR);
      EXPECT_EQ(now.sched_priority, SendPriority::kRealTimePriority);
      EXPECT_EQ(priority.description(), "real-time (SCHED_RR 40)");
    } else {
      EXPECT_EQ(policy, before_policy);
      EXPECT_NE(priority.description().find("not permitted"), std::string::npos)
          << priority.description();
    }
  }
  int after_policy = -1;
  sched_param after{};
  ASSERT_EQ(pthread_getschedparam(pthread_self(), &after_policy, &after), 0);
  EXPECT_EQ(after_policy, before_policy);
  EXPECT_EQ(after.sched_priority, before.sched_priority);
}

}  // namespace
}  // namespace marionette::executor
