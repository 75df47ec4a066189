#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""The stage-worthy benchmark: motion requests as a user types them, each a whole `marionette plan`
process, its plan judged from the plan file's own figures by the thresholds a puppeteer stages by.

Stage-worthy: exact (and so re-simulated and verified); at least 2 cm from the stage and 5 mm from
anything; no snap (a catch pulling 3 times its string's load within 0.1 s); no string above 3 times
its static load; joint speed rms at most 0.1 rad/s over the second half of a 1 s hold at the last
inputs; and the whole process within the case's budget (15 s; marionette25 45 s).

usage: stage_worthy.py BUILD/bin [--only SUBSTR] [--extra "ARGS"] [--markdown] [--smoke]
  --extra     added to every plan command (e.g. "--raw": the search's plans, not optimized)
  --markdown  one table per problem, for docs/benchmarks.md
  --smoke     the CI check: the documented stage-worthy cases in SMOKE, as `plan` gives them by
              default but with a generous wall-clock cap on the search (its first exact path
              decides; the optimizer's iterations decide it, no deadline), must still be
              stage-worthy (their time is not judged); exit 1 naming any that is not
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

PC_GOAL = "point:hand_l=0.05,0.24,0.40;radius=0.04"
PROBLEMS = [
    # (problem, model, scene, goal, [(planner, seeds)], budget_s)
    ("PuppetCopter over the table", "puppetcopter", "table", PC_GOAL,
     [("est", range(1, 6)), ("rrt", range(1, 6)), ("kpiece", range(1, 6))], 15),
    ("arm3d behind the pillars", "arm3d", "pillars", "point:hand=0.42,0,0.50;radius=0.05",
     [("est", range(1, 4)), ("kpiece", range(1, 4))], 15),
    ("marionette25, right hand over the table", "marionette25", "table",
     "point:hand_r=0.10,0.16,0.45;radius=0.05", [("kpiece", range(1, 3))], 45),
    ("suspended mass through the window to rest", "suspended-mass", "window",
     "rest-of:xr=0.7,r=0.3;at-rest", [("est", range(1, 4))], 15),
]
# Documented stage-worthy (docs/benchmarks.md), checked by --smoke: five of PuppetCopter's and
# arm3d's goal reached swinging (est 1), each a few seconds; their searches end on their first
# exact path, well within the time limit, which the smoke raises so that a busy machine cannot
# cut one short.  (The suspended mass's planner searches to its 10 s wall-clock limit, and
# arm3d est 2 and 3 to theirs, so their raw plans, and what is optimized, depend on the
# machine's load.)
SMOKE = [("puppetcopter", "rrt", 3), ("puppetcopter", "est", 2), ("puppetcopter", "kpiece", 3),
         ("puppetcopter", "rrt", 2), ("puppetcopter", "kpiece", 4), ("arm3d", "est", 1)]


def cases():
    for problem, model, scene, goal, planners, budget in PROBLEMS:
        for planner, seeds in planners:
            for seed in seeds:
                yield problem, model, scene, goal, planner, seed, budget


def shortfalls(plan):
    """What keeps a plan file off the stage, from its own figures."""
    out = []
    if plan.get("outcome") != "exact":
        out.append(str(plan.get("outcome")))
    stage, anything = plan.get("min_stage_clearance_m"), plan.get("min_clearance_m")
    if stage is not None and stage < 0.02:
        out.append(f"stage {stage:.4f} m")
    if anything is not None and anything < 0.005:
        out.append(f"anything {anything:.4f} m")
    q = plan.get("quality")
    if not q or q.get("settle_s") != 1.0:
        return out + ["quality not measured with a 1 s hold"]
    snaps, peak = q.get("snaps"), q.get("peak_tension_ratio")
    swing = q.get("residual_joint_speed_rms")
    if snaps is None or snaps > 0:
        out.append(f"{snaps} snaps")
    if peak is None or peak > 3:
        out.append(f"peak x{peak:.3g}" if peak is not None else "no peak tension")
    if swing is None or swing > 0.1:
        out.append(f"swing {swing:.3g} rad/s" if swing is not None else "no residual swing")
    return out


def run_case(bindir, model, scene, goal, planner, seed, extra, workdir):
    out = os.path.join(workdir, f"{model}-{planner}-{seed}.json")
    cmd = [os.path.join(bindir, "marionette"), "plan", "--model", model, "--scene", scene,
           "--goal", goal, "--planner", planner, "--seed", str(seed), "--quiet", "--out", out]
    t0 = time.monotonic()
    try:
        r = subprocess.run(cmd + extra, capture_output=True, text=True, timeout=480)
    except subprocess.TimeoutExpired:
        return time.monotonic() - t0, None, ["no answer within 480 s"]
    wall = time.monotonic() - t0
    if not os.path.exists(out):
        return wall, None, [f"no plan (exit {r.returncode}): {r.stderr.strip()[-160:]}"]
    plan = json.load(open(out))
    return wall, plan, shortfalls(plan)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("bindir")
    ap.add_argument("--only", default="")
    ap.add_argument("--extra", default="")
    ap.add_argument("--markdown", action="store_true")
    ap.add_argument("--smoke", action="store_true")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as workdir:
        if a.smoke:
            failed = []
            for problem, model, scene, goal, planner, seed, _ in cases():
                if (model, planner, seed) not in SMOKE:
                    continue
                wall, _, why = run_case(a.bindir, model, scene, goal, planner, seed,
                                        ["--time-limit", "60"],
                                        workdir)
                name = f"{model}/{planner}/{seed}"
                print(f"{'PASS' if not why else 'FAIL'} {name:<28} {wall:6.1f} s  "
                      f"{'; '.join(why) or 'stage-worthy'}")
                if why:
                    failed.append(name)
            if failed:
                print("no longer stage-worthy: " + ", ".join(failed))
                return 1
            return 0
        extra = a.extra.split()
        tables = {}
        for problem, model, scene, goal, planner, seed, budget in cases():
            name = f"{model}/{planner}/{seed}"
            if a.only and a.only not in name:
                continue
            wall, _, why = run_case(a.bindir, model, scene, goal, planner, seed, extra, workdir)
            if wall > budget:
                why = why + [f"{wall:.1f} s > {budget} s"]
            tables.setdefault(problem, []).append((name, wall, why))
            if not a.markdown:
                print(f"{'PASS' if not why else 'fail'} {name:<28} {wall:6.1f} s  "
                      f"{'; '.join(why) or 'stage-worthy'}", flush=True)
        total = sum(len(rows) for rows in tables.values())
        passed = sum(not why for rows in tables.values() for _, _, why in rows)
        if a.markdown:
            for problem, rows in tables.items():
                ok = sum(not why for _, _, why in rows)
                print(f"\n{problem}: **{ok} of {len(rows)}** stage-worthy within budget\n")
                print("| case | process (s) | stage-worthy, or why not |")
                print("| --- | ---: | --- |")
                for name, wall, why in rows:
                    print(f"| {name} | {wall:.1f} | {'; '.join(why) or 'yes'} |")
        print(f"\nstage-worthy {passed}/{total}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
