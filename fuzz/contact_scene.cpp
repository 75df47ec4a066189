// SPDX-License-Identifier: BSD-3-Clause
// Contact-rich scenes: a scene (built-in meshes only) under a suspended mass or PuppetCopter (the
// input's first byte picks), its contacts built as a request's are, and the puppet's start
// resolved on them (the rest pose, the contact modes' LCP).  A line `repeat: N` (N <= 2000) writes
// the line after it N times, `{i}` replaced by 0 .. N-1, so that 4 KB reach the 1,000 stacked
// planes that once took the server to 7 GB.  Beyond no crash and no leak, the work is bounded: at
// most SceneLimits::kContactObstacles surfaces touch the puppet, no allocation above 256 MB
// (scripts/fuzz.sh's -malloc_limit_mb), and the start stops within a second of being told to (a
// cancel 2 s after it starts).
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <sstream>

#include "fuzz_target.hpp"
#include "marionette/environments/collision.hpp"
#include "marionette/environments/scene.hpp"
#include "marionette/models/cancel.hpp"
#include "marionette/models/model_io.hpp"
#include "marionette/models/simulation.hpp"
#include "marionette/problem/motion_problem.hpp"

namespace {

// Each `repeat: N` line (N <= 2000) replaced by the line after it written N times, `{i}` in it
// replaced by 0 .. N-1; the other lines as they are.
std::string expanded(const std::string& text) {
  std::istringstream in(text);
  std::string line, out;
  while (std::getline(in, line)) {
    if (line.rfind("repeat:", 0) != 0) {
      out += line + "\n";
      continue;
    }
    const long n = std::strtol(line.c_str() + 7, nullptr, 10);
    std::string repeated;
    std::getline(in, repeated);
    for (long i = 0; i < std::min(n, 2000L); ++i) {
      std::string copy = repeated;
      for (std::size_t at; (at = copy.find("{i}")) != std::string::npos;)
        copy.replace(at, 3, std::to_string(i));
      out += copy + "\n";
    }
  }
  return out;
}

}  // namespace

void fuzzOne(const std::string& input) {
  using namespace marionette;
  using Clock = std::chrono::steady_clock;
  if (input.empty()) return;
  static const ModelPtr models[2] = {loadModel("suspended-mass"), loadModel("puppetcopter")};
  const ModelPtr& model = models[static_cast<unsigned char>(input[0]) % 2];
  const ScenePtr scene =
      loadSceneStringBuiltinMeshes(expanded(input.substr(1)), "fuzz.yaml");
  const auto collision = std::make_shared<CollisionModel>(model, scene, problemCollisionOptions());
  const std::shared_ptr<const Contacts>& contacts = collision->contacts();
  if (contacts && contacts->surfaces.size() > static_cast<std::size_t>(SceneLimits::kContactObstacles))
    __builtin_trap();
  const Clock::time_point stop_at = Clock::now() + std::chrono::seconds(2);
  {
    const CancelScope scope([stop_at] { return Clock::now() >= stop_at; });
    try {
      resolveStart(model, model->defaultInputs(), StartSpec{}, contacts);
    } catch (const PlanCancelled&) {
    } catch (const FieldError&) {
    }
  }
  if (Clock::now() > stop_at + std::chrono::seconds(1)) __builtin_trap();
}

MARIONETTE_FUZZ_ENTRY
