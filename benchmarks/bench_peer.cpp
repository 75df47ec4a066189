// SPDX-License-Identifier: BSD-3-Clause
// The step against a peer, side by side: a MuJoCo marionette (--peer: its MJCF; 25 joints,
// 7 strings as length-limited tendons, rig hooks moved as mocap bodies) and this project's
// variational integrator on a built-in model, alternately in one process over several rounds
// (this machine's timings drift by +-30 % between minutes: only a ratio taken side by side
// means anything).  Both are timed on their steps only, over 20 s of motion at the same dt:
// MuJoCo's hooks rise and fall as the peer's own timing program moves them; the rig of ours
// moves every input (bench_motion.hpp).  Prints per round the microseconds per step of each and
// their ratio, then the median ratio with its range over the rounds.
//
//   build/bin/bench_peer --peer PEER/puppet.xml
//                        [--models marionette25,puppetcopter] [--dt 0.01] [--rounds 7]
//                        [--duration 20]
// Built only where MuJoCo is installed (scripts/install-deps.sh --bench: Debian's libmujoco-dev);
// nothing else needs it.
#include <mujoco/mujoco.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "bench_motion.hpp"
#include "marionette/common/text.hpp"
#include "marionette/models/model_io.hpp"
#include "marionette/models/simulation.hpp"

using namespace marionette;

namespace {

struct PeerRun {
  double us_per_step = 0.0;
  double max_overstretch_m = 0.0;  // over every tendon after the first 2 s
};

// The peer's own workload: the left arm's and left leg's hooks (mocap bodies 3 and 5) rise and
// fall by 10 cm at 2 and 3 rad/s.
PeerRun runPeer(const mjModel* m, double dt, double duration_s) {
  mjData* d = mj_makeData(m);
  const int n = static_cast<int>(duration_s / dt);
  PeerRun r;
  double wall_s = 0.0;
  for (int i = 0; i < n; ++i) {
    const double t = d->time;
    d->mocap_pos[3 * 3 + 2] = 1.5 + 0.1 * std::sin(2.0 * t);
    d->mocap_pos[5 * 3 + 2] = 1.5 + 0.1 * std::sin(3.0 * t);
    const auto t0 = std::chrono::steady_clock::now();
    mj_step(m, d);
    wall_s += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (t > 2.0)
      for (int k = 0; k < m->ntendon; ++k)
        r.max_overstretch_m =
            std::max(r.max_overstretch_m, d->ten_length[k] - m->tendon_range[2 * k + 1]);
  }
  for (int k = 0; k < m->nq; ++k)
    if (!std::isfinite(d->qpos[k])) {
      std::fprintf(stderr, "bench_peer: the MuJoCo peer diverged\n");
      std::exit(1);
    }
  mj_deleteData(d);
  r.us_per_step = 1e6 * wall_s / n;
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  std::string peer_path;  // --peer: required
  std::vector<std::string> models{"marionette25", "puppetcopter"};
  double dt = 0.01, duration_s = 20.0;
  int rounds = 7;
  for (int i = 1; i < argc; ++i) {
    auto value = [&](const char* flag) {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "bench_peer: %s needs a value\n", flag);
        std::exit(2);
      }
      return argv[++i];
    };
    if (!std::strcmp(argv[i], "--peer")) {
      peer_path = value("--peer");
    } else if (!std::strcmp(argv[i], "--models")) {
      models = splitCommas(value("--models"));
    } else if (!std::strcmp(argv[i], "--dt")) {
      dt = std::atof(value("--dt"));
    } else if (!std::strcmp(argv[i], "--rounds")) {
      rounds = std::atoi(value("--rounds"));
    } else if (!std::strcmp(argv[i], "--duration")) {
      duration_s = std::atof(value("--duration"));
    } else {
      std::fprintf(stderr,
                   "usage: bench_peer --peer FILE.xml [--models a,b] [--dt S] [--rounds N] "
                   "[--duration S]\n");
      return 2;
    }
  }
  if (peer_path.empty()) {
    std::fprintf(stderr, "bench_peer: --peer FILE.xml is required (the MuJoCo peer's model)\n");
    return 2;
  }
  if (!(dt > 0 && dt <= 0.1) || rounds < 1 || !(duration_s >= 1 && duration_s <= 600)) {
    std::fprintf(stderr, "bench_peer: --dt in (0, 0.1] s, --rounds >= 1, --duration in [1, 600] s\n");
    return 2;
  }
  char error[1000] = "";
  mjModel* peer = mj_loadXML(peer_path.c_str(), nullptr, error, sizeof error);
  if (!peer) {
    std::fprintf(stderr, "bench_peer: --peer %s: %s\n", peer_path.c_str(), error);
    return 2;
  }
  peer->opt.timestep = dt;
  std::printf("peer: %s (MuJoCo %s): nv = %d, %d tendons; dt = %g s, %g s of motion, %d rounds\n",
              peer_path.c_str(), mj_versionString(), peer->nv, peer->ntendon, dt, duration_s,
              rounds);

  struct Ours {
    ModelPtr model;
    InputSchedule inputs;
    std::vector<double> us, ratio;
    double max_violation_m = 0.0, newton = 0.0;
  };
  std::vector<Ours> ours;
  for (const std::string& name : models) {
    Ours o;
    o.model = loadModel(name);
    o.inputs = oscillatingInputs(*o.model, duration_s, duration_s, dt);
    ours.push_back(std::move(o));
  }
  SimulationOptions opt;
  opt.dt_s = dt;
  opt.duration_s = duration_s;
  std::vector<double> peer_us;
  double peer_overstretch_m = 0.0;
  std::printf("\n| round | MuJoCo peer (us/step) |");
  for (const Ours& o : ours) std::printf(" %s (us/step) | ratio |", o.model->name.c_str());
  std::printf("\n| --- | --- |");
  for (std::size_t i = 0; i < ours.size(); ++i) std::printf(" --- | --- |");
  std::printf("\n");
  for (int r = 1; r <= rounds; ++r) {
    // Alternate the order so that neither side always runs first.
    double p = 0.0;
    auto runOurs = [&] {
      for (Ours& o : ours) {
        const SimulationSummary s = simulate(o.model, o.inputs, opt);
        o.us.push_back(s.us_per_step);
        o.max_violation_m = std::max(o.max_violation_m, s.max_violation_m);
        o.newton = s.newton_iterations_mean;
      }
    };
    if (r % 2) {
      const PeerRun pr = runPeer(peer, dt, duration_s);
      p = pr.us_per_step;
      peer_overstretch_m = std::max(peer_overstretch_m, pr.max_overstretch_m);
      runOurs();
    } else {
      runOurs();
      const PeerRun pr = runPeer(peer, dt, duration_s);
      p = pr.us_per_step;
      peer_overstretch_m = std::max(peer_overstretch_m, pr.max_overstretch_m);
    }
    peer_us.push_back(p);
    std::printf("| %d | %.2f |", r, p);
    for (Ours& o : ours) {
      o.ratio.push_back(o.us.back() / p);
      std::printf(" %.2f | %.2f |", o.us.back(), o.ratio.back());
    }
    std::printf("\n");
    std::fflush(stdout);
  }
  std::printf("\nMuJoCo peer: median %.2f us/step; its strings over-stretch by up to %.4f m\n",
              median(peer_us), peer_overstretch_m);
  for (const Ours& o : ours) {
    const auto [lo, hi] = std::minmax_element(o.ratio.begin(), o.ratio.end());
    std::printf(
        "%s: median %.2f us/step (%.2f Newton iterations a step; strings exact to %.1e m); "
        "ratio to the peer: median %.2f, range %.2f-%.2f\n",
        o.model->name.c_str(), median(o.us), o.newton, o.max_violation_m, median(o.ratio), *lo,
        *hi);
  }
  mj_deleteModel(peer);
  return 0;
}
