#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Requests nobody tuned for: draw_requests' seeded goals (a named point where a random rest pose,
clear with margin, holds it), each planned as a user types it (`marionette plan`, default flags)
and judged as stage_worthy.py judges (exact, clear of the stage by 2 cm and of anything by 5 mm, no
snap, peak tension <= x3, still 0.5-1 s after the end, the process within its budget: 15 s,
marionette25 45 s).

usage: random_requests.py BUILD/bin [--seed 1] [--per-stage 6] [--only MODEL] [--markdown]
  --markdown  the share stage-worthy, the time distribution and each failure's reason, for
              docs/benchmarks.md
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from stage_worthy import run_case  # noqa: E402  (the same plan process and judge)


def draw(bindir, seed, per_stage, only):
    cmd = [os.path.join(bindir, "draw_requests"), "--seed", str(seed), "--per-stage",
           str(per_stage)] + (["--only", only] if only else [])
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"random_requests: draw_requests failed: {r.stderr.strip()}")
    return [json.loads(line) for line in r.stdout.splitlines()]


def percentile(values, p):
    values = sorted(values)
    return values[min(len(values) - 1, int(p / 100 * len(values)))]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("bindir")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--per-stage", type=int, default=6)
    ap.add_argument("--only", default="")
    ap.add_argument("--markdown", action="store_true")
    a = ap.parse_args()
    requests = draw(a.bindir, a.seed, a.per_stage, a.only)
    rows = []
    for i, req in enumerate(requests):
        with tempfile.TemporaryDirectory() as workdir:
            wall, _, why = run_case(a.bindir, req["model"], req["scene"], req["goal"],
                                    req["planner"], req["seed"], [], workdir)
        if wall > req["budget_s"]:
            why = why + [f"{wall:.1f} s > {req['budget_s']:g} s"]
        rows.append((req, wall, why))
        if not a.markdown:
            print(f"{'PASS' if not why else 'fail'} {i + 1:3d} {req['model']}/{req['scene']} "
                  f"{req['planner']} {req['seed']} {req['goal']}  {wall:5.1f} s  "
                  f"{'; '.join(why) or 'stage-worthy'}", flush=True)
    passed = sum(not why for _, _, why in rows)
    walls = [wall for _, wall, _ in rows]
    if a.markdown:
        print("| puppet / stage | requests | stage-worthy | process s: median, 90 %, max |")
        print("| --- | ---: | ---: | --- |")
        groups = {}
        for req, wall, why in rows:
            groups.setdefault(f"{req['model']} / {req['scene']}", []).append((wall, why))
        for name, group in groups.items():
            g_walls = [w for w, _ in group]
            print(f"| {name} | {len(group)} | {sum(not why for _, why in group)} | "
                  f"{statistics.median(g_walls):.1f}, {percentile(g_walls, 90):.1f}, "
                  f"{max(g_walls):.1f} |")
        print("\n| request | planner, seed | process (s) | why not stage-worthy |")
        print("| --- | --- | ---: | --- |")
        for req, wall, why in rows:
            if why:
                print(f"| {req['model']} / {req['scene']} `{req['goal']}` | {req['planner']} "
                      f"{req['seed']} | {wall:.1f} | {'; '.join(why)} |")
    print(f"\nstage-worthy {passed}/{len(rows)} ({100 * passed / max(1, len(rows)):.0f} %); "
          f"process s: median {statistics.median(walls):.1f}, 90 % {percentile(walls, 90):.1f}, "
          f"max {max(walls):.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
