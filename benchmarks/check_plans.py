#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Checks the plans a benchmark saved (`marionette bench planners ... --save-plans --out DIR`) the
way their users would: each plan's inputs CSV re-simulated with `marionette simulate --inputs`
at the plan's rate must reproduce its predicted states, and `marionette execute --plan ...
--dry-run` must accept it (or refuse it with exit 2 when the plan says it collides: execute
never plays those).

Usage: check_plans.py DIR [--marionette PATH] [--tolerance RAD]
Prints one line per plan and a summary; exits 1 when any plan fails, 2 on bad arguments."""
import argparse
import csv
import glob
import io
import json
import os
import subprocess
import sys


def run(binary, *args):
    return subprocess.run([binary, *args], capture_output=True, text=True, timeout=600)


def resimulation_error(binary, plan_path, csv_path):
    """The largest |q_sim - q_predicted| over every sample and coordinate (m or rad)."""
    plan = json.load(open(plan_path))
    rate = plan["inputs"]["rate_hz"]
    n = len(plan["inputs"]["samples"])
    args = ["simulate", "--model", plan["model"], "--inputs", csv_path, "--dt", repr(1.0 / rate),
            "--duration", repr((n - 1) / rate)]
    if plan.get("start") and plan["start"] != "rest":
        args += ["--start", plan["start"]]
    p = run(binary, *args)
    if p.returncode != 0:
        return None, "simulate failed: " + p.stderr.strip()
    table = list(csv.reader(io.StringIO(p.stdout)))
    header, rows = table[0], table[1:]
    names = plan["predicted"]["state_names"]
    columns = [header.index(name) for name in names]
    predicted = plan["predicted"]["states"]
    if len(rows) < len(predicted):
        return None, f"simulate gave {len(rows)} rows for {len(predicted)} samples"
    worst = 0.0
    for k, state in enumerate(predicted):
        for c, value in zip(columns, state):
            worst = max(worst, abs(float(rows[k][c]) - value))
    return worst, ""


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("dir", help="the benchmark's --out directory")
    parser.add_argument("--marionette", default=os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..", "build", "bin", "marionette"))
    parser.add_argument("--tolerance", type=float, default=1e-6,
                        help="largest re-simulation error allowed (m or rad; default 1e-6)")
    a = parser.parse_args()
    plans = sorted(glob.glob(os.path.join(a.dir, "plans", "*.json")))
    if not plans:
        print(f"check_plans.py: {a.dir}/plans holds no plan (run the benchmark with --save-plans)",
              file=sys.stderr)
        return 2
    failed = 0
    for path in plans:
        csv_path = path[:-len(".json")] + ".csv"
        plan = json.load(open(path))
        error, why = resimulation_error(a.marionette, path, csv_path)
        dry = run(a.marionette, "execute", "--plan", path, "--dry-run")
        expected = 0 if plan["collision_free"] else 2
        ok = error is not None and error <= a.tolerance and dry.returncode == expected
        if dry.returncode != 0:
            why += f" execute --dry-run exit {dry.returncode}: " + dry.stderr.strip()
        if dry.returncode == 2 and expected == 2:
            why = "(refused as it should be: the plan collides)"
        failed += not ok
        outcome = plan["outcome"]
        shown = "-" if error is None else f"{error:.1e}"
        print(f"{'ok  ' if ok else 'FAIL'} {os.path.basename(path)}: {outcome}, "
              f"re-simulation error {shown}, dry run exit {dry.returncode} {why}".rstrip())
    print(f"{len(plans) - failed}/{len(plans)} plans re-simulate within {a.tolerance:g} and pass "
          f"execute --dry-run (or are refused by it as colliding)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
