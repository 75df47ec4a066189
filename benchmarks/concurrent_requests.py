#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Optimizations in parallel on one server (docs/benchmarks.md, "Service load"): N PuppetCopter
requests (the README's goal over the table, rrt seeds 1..N, default flags, no time limit set:
over gRPC the server's cap of 300 s) sent at once to one marionette-server with N workers, and
the same N one after another in process, in alternating rounds (the server first in odd
rounds).  Each answer's rig inputs must be byte for byte the ones the request gives alone (the
CSV holds 17 significant digits); the wall times show whether the server optimized them at once
(on 2 cores: about half the sequential time) or in turns (about the same).  An approximate answer
(exit 4) or none found (exit 5) is compared as any other.

  benchmarks/concurrent_requests.py [--build build] [--requests 4] [--rounds 2]
Exit 0 when every answer is the same as alone, 1 naming each that is not, 2 when a request fails.
"""
import argparse
import concurrent.futures
import filecmp
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "support"))
from server_process import start_server, stop_server  # noqa: E402

GOAL = "point:hand_l=0.05,0.24,0.40;radius=0.04"


class RequestFailed(Exception):
    pass


def plan(build, seed, inputs_csv, extra):
    """`marionette plan` for rrt seed `seed`, its inputs written to inputs_csv."""
    done = subprocess.run([os.path.join(build, "bin", "marionette"), "plan", "--model",
                           "puppetcopter", "--scene", "table", "--planner", "rrt", "--seed",
                           str(seed), "--goal", GOAL, "--quiet", "--inputs-csv", inputs_csv,
                           *extra], capture_output=True, text=True)
    if done.returncode not in (0, 4, 5):
        raise RequestFailed(f"rrt seed {seed} {' '.join(extra)}: exit {done.returncode}\n"
                            f"{done.stderr}")


def at_once(build, seeds, folder):
    server, address = start_server(build, "--workers", str(len(seeds)))
    try:
        t0 = time.monotonic()
        with concurrent.futures.ThreadPoolExecutor(len(seeds)) as pool:
            for f in [pool.submit(plan, build, s, os.path.join(folder, f"server_{s}.csv"),
                                  ["--server", address]) for s in seeds]:
                f.result()
        return time.monotonic() - t0
    finally:
        stop_server(server)


def one_after_another(build, seeds, folder):
    t0 = time.monotonic()
    for s in seeds:
        plan(build, s, os.path.join(folder, f"alone_{s}.csv"), [])
    return time.monotonic() - t0


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--build", default="build")
    parser.add_argument("--requests", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    if args.requests < 1 or args.rounds < 1:
        parser.error("--requests and --rounds: at least 1")
    build = os.path.abspath(args.build)
    seeds = list(range(1, args.requests + 1))
    different = set()
    with tempfile.TemporaryDirectory() as folder:
        try:
            for r in range(args.rounds):
                if r % 2 == 0:
                    server_s = at_once(build, seeds, folder)
                    alone_s = one_after_another(build, seeds, folder)
                else:
                    alone_s = one_after_another(build, seeds, folder)
                    server_s = at_once(build, seeds, folder)
                print(f"round {r + 1}: {args.requests} requests at once to {args.requests} "
                      f"workers {server_s:.1f} s, one after another in process {alone_s:.1f} s "
                      f"(x{alone_s / server_s:.2f})")
                for s in seeds:
                    if not filecmp.cmp(os.path.join(folder, f"server_{s}.csv"),
                                       os.path.join(folder, f"alone_{s}.csv"), shallow=False):
                        different.add(s)
        except RequestFailed as e:
            print(f"concurrent_requests: a request failed: {e}", file=sys.stderr)
            return 2
    for s in seeds:
        print(f"rrt seed {s}: "
              f"{'DIFFERENT inputs' if s in different else 'the same inputs as alone'}")
    if different:
        print("not the same as alone: rrt seeds " + ", ".join(map(str, sorted(different))),
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
