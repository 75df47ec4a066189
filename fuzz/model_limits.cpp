// SPDX-License-Identifier: BSD-3-Clause
// Model limits: the planar arm with its two inputs' range, max_speed and max_accel taken from the
// input (numbers separated by anything that is not part of one; missing ones keep the built-in
// values), through the loader, a move across each range, the rest pose at the range's corners,
// the rest-pose roadmap's learning phase and `reach`'s swings.  Beyond no crash and no leak, the
// work is bounded: a model that loads has no move longer than kMaxMove_s (its steps counted
// before a sample is built), and the roadmap and reach stop within a second of being told to.
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <regex>

#include "fuzz_target.hpp"
#include "marionette/environments/collision.hpp"
#include "marionette/environments/scene.hpp"
#include "marionette/models/cancel.hpp"
#include "marionette/models/model_io.hpp"
#include "marionette/models/rest_pose.hpp"
#include "marionette/models/rig_trajectory.hpp"
#include "marionette/performance/reach.hpp"
#include "marionette/problem/motion_problem.hpp"
#include "marionette/search/roadmap.hpp"

namespace {

using Clock = std::chrono::steady_clock;

// Stops work 1 s after it starts; traps when the work outlives that by another second (the
// bound under test: every loop that a model's limits lengthen polls the cancel).
template <class Work>
void withinASecond(Work&& work) {
  const Clock::time_point stop_at = Clock::now() + std::chrono::seconds(1);
  {
    const marionette::CancelScope scope([stop_at] { return Clock::now() >= stop_at; });
    try {
      work();
    } catch (const marionette::PlanCancelled&) {
    } catch (const marionette::FieldError&) {
    }
  }
  if (Clock::now() > stop_at + std::chrono::seconds(1)) __builtin_trap();
}

}  // namespace

void fuzzOne(const std::string& input) {
  using namespace marionette;
  // (lo, hi, max_speed, max_accel) for x, then for L.
  double v[8] = {-0.40, 0.60, 0.5, 4.0, 0.05, 1.00, 0.5, 4.0};
  const char* p = input.c_str();
  for (int k = 0; k < 8 && *p;) {
    char* end = nullptr;
    const double x = std::strtod(p, &end);
    if (end == p) {
      ++p;
      continue;
    }
    v[k++] = x;
    p = end;
  }
  auto number = [](double x) {
    char buf[40];
    std::snprintf(buf, sizeof buf, "%.17g", x);
    return std::string(buf);
  };
  std::string text = builtinModelText("planar-arm");
  const std::string names[2] = {"x", "L"};
  for (int j = 0; j < 2; ++j) {
    const double* w = v + 4 * j;
    const std::regex line("\\{name: " + names[j] + ", default: [^}]*\\}");
    text = std::regex_replace(
        text, line,
        "{name: " + names[j] + ", default: " + number(0.5 * (w[0] + w[1])) + ", range: [" +
            number(w[0]) + ", " + number(w[1]) +
            "], max_speed: " + number(w[2]) + ", max_accel: " + number(w[3]) + "}",
        std::regex_constants::format_first_only);
  }
  const ModelPtr model = loadModelString(text, "fuzz.yaml");
  const Model& m = *model;

  // The loader's promise: no input's move across its range, or stop from its top speed, is
  // longer than kMaxMove_s; a move across every range at once is counted before it is built.
  Eigen::VectorXd lower(m.nk()), upper(m.nk());
  for (int j = 0; j < m.nk(); ++j) {
    lower[j] = m.kinematic[j].lower;
    upper[j] = m.kinematic[j].upper;
    if (!std::isfinite(lower[j]) || !std::isfinite(upper[j])) return;  // (unbounded: no move)
    Eigen::VectorXd delta = Eigen::VectorXd::Zero(m.nk());
    delta[j] = upper[j] - lower[j];
    if (!(quinticMoveDuration_s(m, delta) <= kMaxMove_s * (1 + 1e-9))) __builtin_trap();
  }
  RigTrajectory move(0.02, lower);
  try {
    appendMove(m, move, upper, 1.5);
  } catch (const FieldError&) {
    return;  // (refused before it was built: more knots than one move may take)
  }
  if (!(move.knots() <= 1 + std::ceil(kMaxMove_s * 1.5 / 0.02) + 2)) __builtin_trap();

  RestPoseOptions newton_only;
  newton_only.max_settle_steps = 0;
  for (const Eigen::VectorXd* rho : {&lower, &upper}) {
    try {
      computeRestPose(model, *rho, nullptr, newton_only);
    } catch (const FieldError&) {
    }
  }

  static const ScenePtr empty = loadScene("empty");
  const auto collision = std::make_shared<CollisionModel>(model, empty, problemCollisionOptions());
  withinASecond([&] {
    RoadmapOptions o;
    o.vertices = 3;
    o.neighbours = 2;
    o.build_time_limit_s = 1;
    RestPoseRoadmap::build(collision, o);
  });
  withinASecond([&] {
    ReachOptions o;
    o.poses = 2;
    o.swings = 1;
    o.dt_s = 0.01;
    computeReach(collision, {"tip"}, o);
  });
}

MARIONETTE_FUZZ_ENTRY
