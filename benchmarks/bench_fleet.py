#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Fleet throughput on loopback (docs/fleet.md): the same sweep of seeded plans run in-process
(`marionette bench planners`, 1 and 2 threads: the machine's ceiling) and as a fleet sweep
(`--server`) over 1, 2 and 3 marionette-server processes of one worker each, in alternating
rounds; plans per second, each against the in-process 2-thread ceiling.  Every fleet sweep's log
is checked against the round's in-process one (every field but the clock's).  The plans are the
searches alone (`--raw`): the fleet's cost, not the optimizer's; `--optimize` optimizes each.

  benchmarks/bench_fleet.py [--build build] [--rounds 3] [--runs 40]
      [--problem arm3d-pillars-past] [--planner kpiece] [--optimize]
"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "support"))
from ompl_log import comparable  # noqa: E402
from server_process import start_server, stop_server  # noqa: E402


def sweep(build, out, problem, planner, runs, extra):
    t0 = time.monotonic()
    subprocess.run([os.path.join(build, "bin", "marionette"), "bench", "planners", "--problems",
                    problem, "--planners", planner, "--runs", str(runs), "--time-limit", "10",
                    "--out", out, *extra], check=True, capture_output=True, text=True)
    return runs / (time.monotonic() - t0)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--build", default="build")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--runs", type=int, default=40)
    parser.add_argument("--problem", default="arm3d-pillars-past")
    parser.add_argument("--planner", default="kpiece")
    parser.add_argument("--optimize", action="store_true")
    a = parser.parse_args()
    build = os.path.abspath(a.build)
    servers = [start_server(build, "--workers", "1", "--max-queue", "4") for _ in range(3)]
    settings = [("in-process, 1 thread", ["--parallel", "1"], None),
                ("in-process, 2 threads", ["--parallel", "2"], None)]
    for n in (1, 2, 3):
        settings.append((f"{n} server{'s' * (n > 1)} x 1 worker", None, n))
    rates = {name: [] for name, _, _ in settings}
    try:
        with tempfile.TemporaryDirectory() as d:
            for r in range(a.rounds):
                for name, local_flags, n in settings:
                    out = os.path.join(d, f"{r}-{len(rates[name])}-{n}")
                    if n is None:
                        extra = local_flags
                    else:
                        fleet = ",".join(target for _, target in servers[:n])
                        extra = ["--server", fleet, "--parallel", str(2 * n)]
                    if not a.optimize:
                        extra = extra + ["--raw"]
                    rates[name].append(sweep(build, out, a.problem, a.planner, a.runs, extra))
                    log = comparable(os.path.join(out, a.problem + ".log"))
                    if n is None and local_flags[1] == "1":
                        reference = log
                    elif log != reference:
                        differ = [i for i, (x, y) in enumerate(zip(log, reference)) if x != y]
                        raise SystemExit(f"round {r + 1}, {name}: the sweep's log differs from "
                                         f"the in-process one on lines {differ}:\n" +
                                         "\n".join(f"{reference[i]}\n{log[i]}" for i in differ))
                    print(f"round {r + 1}: {name}: {rates[name][-1]:.1f} plans/s", flush=True)
    finally:
        for proc, _ in servers:
            stop_server(proc)
    ceiling = statistics.median(rates["in-process, 2 threads"])
    what = "each optimized" if a.optimize else "the searches alone"
    print(f"\n{a.runs} plans per sweep ({a.problem}, {a.planner}, seeds 1..{a.runs}, {what}), "
          f"{a.rounds} alternating rounds; every log equal to the in-process one\n")
    print("| setting | plans/s (median) | rounds | of the in-process ceiling |")
    print("| --- | ---: | --- | ---: |")
    for name, _, _ in settings:
        rounds = ", ".join(f"{x:.1f}" for x in rates[name])
        median = statistics.median(rates[name])
        print(f"| {name} | {median:.1f} | {rounds} | {100 * median / ceiling:.0f} % |")


if __name__ == "__main__":
    main()
