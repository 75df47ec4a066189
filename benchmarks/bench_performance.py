#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""The performance figures of docs/benchmarks.md#performances, as a puppeteer gets them: each case
run with `marionette perform`, its plan file read back.  Per case and step (kinematic, dynamics):
the rms error of the hands, feet and head against their (fitted) targets (range over the points
of each group), how far retargeting moved the targets from the clip (rms, range over the
points), string catches and snaps, the peak tension, joint speed one second after the end, the
clearances to the stage and to anything, how far the point without a target that strays most
goes from where it hangs, the outcome (exact: a show) and the time.

Cases: the CMU walk's and hop's first 8 s on puppetcopter and marionette25 in `empty` (the
issue's targets: 2 cm rms against the fitted targets, fitted within 6 cm rms of the clip, 0
catches, <= 0.1 rad/s, <= 90 s); the keyframed wave of examples/wave.yaml in `living-room` with
a 2 cm margin; examples/performances/ (a bow, a two-hand wave, a hop and a walk on the spot for
both puppets) in `empty`.

Usage: bench_performance.py --mocap DIR [--marionette PATH] [--cases NAME,...|mocap|examples]
                            [--out DIR]
Runs one case at a time (the machine has two cores; do not run another benchmark beside it)."""
import argparse
import json
import os
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GROUPS = {"hands": ("hand",), "feet": ("foot", "leg_l_front", "leg_r_front"), "head": ("head", "nose")}


MOCAP_CASES = ["walk-pc", "walk-m25", "hop-pc", "hop-m25", "wave"]
EXAMPLES = ["bow", "wave2", "hop", "walk"]
# Each case's name in the table.
LABELS = {"walk-pc": "CMU walk, puppetcopter", "walk-m25": "CMU walk, marionette25",
          "hop-pc": "CMU hop, puppetcopter", "hop-m25": "CMU hop, marionette25",
          "wave": "wave (living-room), puppetcopter"}
for _key, _name in (("bow", "bow"), ("wave2", "two-hand wave"), ("hop", "hop"),
                    ("walk", "walk on the spot")):
    LABELS[f"{_key}-pc-keys"] = f"{_name}, puppetcopter"
    LABELS[f"{_key}-m25-keys"] = f"{_name}, marionette25"


def cases(mocap):
    walk = os.path.join(mocap, "cmu_131_01_walk.bvh")
    hop = os.path.join(mocap, "cmu_131_03_hop.bvh")
    table = {
        "walk-pc": ["--model", "puppetcopter", "--bvh", walk, "--to", "8"],
        "walk-m25": ["--model", "marionette25", "--bvh", walk, "--to", "8"],
        "hop-pc": ["--model", "puppetcopter", "--bvh", hop, "--to", "8"],
        "hop-m25": ["--model", "marionette25", "--bvh", hop, "--to", "8"],
        "wave": ["--model", "puppetcopter", "--scene", "living-room", "--keyframes",
                 os.path.join(ROOT, "examples", "wave.yaml"), "--margin", "0.02"],
    }
    for puppet, short in (("puppetcopter", "pc"), ("marionette25", "m25")):
        for name in EXAMPLES:
            table[f"{name}-{short}-keys"] = [
                "--model", puppet, "--keyframes",
                os.path.join(ROOT, "examples", "performances", f"{puppet}-{name}.yaml")]
    return table


def group_text(values):
    """The range of values as the docs write it ("0.040–0.079"), one value when they round
    alike, empty for none."""
    if not values:
        return ""
    lo, hi = f"{min(values):.3f}", f"{max(values):.3f}"
    return lo if lo == hi else f"{lo}–{hi}"


def group_range(tracking):
    out = {}
    for group, keys in GROUPS.items():
        values = [t["rms_m"] for name, t in tracking.items() if any(k in name for k in keys)]
        if values:
            out[group] = group_text(values)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--marionette", default=os.path.join(ROOT, "build", "bin", "marionette"))
    ap.add_argument("--mocap", required=True,
                    help="the folder of the CMU clip cmu_131_01_walk.bvh")
    ap.add_argument("--cases", default="mocap,examples",
                    help="case names, or the groups mocap and examples")
    ap.add_argument("--out", default="/tmp/bench_performance")
    a = ap.parse_args()
    table = cases(a.mocap)
    chosen = []
    for c in a.cases.split(","):
        chosen += (MOCAP_CASES if c == "mocap" else
                   [n for n in table if n.endswith("-keys")] if c == "examples" else [c])
    for c in chosen:
        if c not in table:
            sys.exit(f"--cases: unknown case '{c}' ({', '.join(table)})")
    os.makedirs(a.out, exist_ok=True)
    print("| case | step | hands rms (m) | feet rms (m) | head rms (m) | fitted from clip (m) "
          "| catches | snaps | peak tension (x static) | swing after 1 s (rad/s) "
          "| stage clearance (m) | to anything (m) | farthest untargeted (m) | outcome "
          "| time (s) |")
    print("|" + " --- |" * 15)
    for c in chosen:
        out = os.path.join(a.out, c + ".json")
        t0 = time.monotonic()
        p = subprocess.run([a.marionette, "perform", *table[c], "--out", out, "--quiet"],
                           capture_output=True, text=True)
        wall = time.monotonic() - t0
        if p.returncode not in (0, 4):
            sys.exit(f"{c}: exit {p.returncode}\n{p.stderr}")
        plan = json.load(open(out))
        q = plan["quality"]
        fits = [t["rms_m"] for t in (plan["tracking"].get("retarget") or {}).values()]
        fitted = group_text(fits)
        strays = plan["tracking"].get("untargeted") or {}
        stray = max(strays.items(), key=lambda kv: kv[1]["max_m"]) if strays else None
        stray_text = f"{stray[1]['max_m']:.3f} ({stray[0]})" if stray else ""
        for step in ("kinematic", "dynamic"):
            tracking = plan["tracking"].get(step) or {}
            if not tracking:
                continue
            g = group_range(tracking)
            last = step == "dynamic" or not plan["tracking"].get("dynamic")
            print(f"| {LABELS[c]} | {step} | {g.get('hands', '')} | {g.get('feet', '')} | "
                  f"{g.get('head', '')} | {fitted} |", end="")
            print(f" {q['string_catches']} | {q['snaps']} | {q['peak_tension_ratio']:.2f} | "
                  f"{q['residual_joint_speed_rms']:.2f} | {plan['min_stage_clearance_m']:.3f} | "
                  f"{plan['min_clearance_m']:.4f} | {stray_text} | {plan['outcome']} | "
                  f"{wall:.0f} |" if last else " |" * 9)
        sys.stdout.flush()


if __name__ == "__main__":
    main()
