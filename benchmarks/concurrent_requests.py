#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Optimizations in parallel on one server (docs/benchmarks.md, "Service load"): N PuppetCopter
requests (the README's goal over the table, rrt seeds 1..N, default flags, no time limit) sent at
once to one marionette-server with N workers, then the same N one after another in process.
Each answer's rig inputs must be byte for byte the ones the request gives alone; the two wall
times show whether the server optimized them at once (on 2 cores: about half the sequential
time) or in turns (about the same).

  benchmarks/concurrent_requests.py [--build build] [--requests 4]
Exit 0 when every answer is the same as alone, 1 naming each that is not.
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


def plan(build, seed, csv, extra):
    subprocess.run([os.path.join(build, "bin", "marionette"), "plan", "--model", "puppetcopter",
                    "--scene", "table", "--planner", "rrt", "--seed", str(seed), "--goal", GOAL,
                    "--quiet", "--inputs-csv", csv, "--out", csv + ".json", *extra],
                   check=True, capture_output=True, text=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--build", default="build")
    parser.add_argument("--requests", type=int, default=4)
    args = parser.parse_args()
    if args.requests < 1:
        parser.error("--requests: at least 1")
    seeds = range(1, args.requests + 1)
    with tempfile.TemporaryDirectory() as tmp:
        server, address = start_server(args.build, "--workers", str(args.requests))
        try:
            t0 = time.monotonic()
            with concurrent.futures.ThreadPoolExecutor(args.requests) as pool:
                for f in [pool.submit(plan, args.build, s, os.path.join(tmp, f"server_{s}.csv"),
                                      ["--server", address]) for s in seeds]:
                    f.result()
            at_once_s = time.monotonic() - t0
        finally:
            stop_server(server)
        t0 = time.monotonic()
        for s in seeds:
            plan(args.build, s, os.path.join(tmp, f"alone_{s}.csv"), [])
        alone_s = time.monotonic() - t0
        print(f"{args.requests} requests at once to {args.requests} workers: {at_once_s:.1f} s; "
              f"one after another in process: {alone_s:.1f} s")
        different = []
        for s in seeds:
            same = filecmp.cmp(os.path.join(tmp, f"server_{s}.csv"),
                               os.path.join(tmp, f"alone_{s}.csv"), shallow=False)
            print(f"rrt seed {s}: {'the same inputs as alone' if same else 'DIFFERENT inputs'}")
            if not same:
                different.append(s)
    if different:
        print("not the same as alone: rrt seeds " + ", ".join(map(str, different)),
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
