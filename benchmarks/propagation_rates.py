#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Integration steps per second of each planner, from `marionette bench planners` logs.

Reads the OMPL benchmark logs (DIR/*.log) and prints, per problem and planner, the median over
runs of propagations / planning time (the rate at which the planner runs the integrator, its
collision checks included).  With two directories, the rates of both and their ratio (a change
measured by running the same sweep before and after it):

    benchmarks/propagation_rates.py bench-before [bench-after]
"""
import pathlib
import statistics
import sys


def read_log(path):
    """{planner: [run property dicts]} of one OMPL benchmark log."""
    lines = path.read_text().splitlines()
    planners = {}
    i = next(k for k, line in enumerate(lines) if line.endswith(" planners")) + 1
    while i < len(lines) and lines[i].strip():
        name = lines[i].strip()
        i += 1
        i += int(lines[i].split()[0]) + 1  # common properties
        count = int(lines[i].split()[0])
        names = [" ".join(line.split()[:-1]) for line in lines[i + 1:i + 1 + count]]
        i += count + 1
        runs = int(lines[i].split()[0])
        rows = []
        for line in lines[i + 1:i + 1 + runs]:
            values = [v.strip() for v in line.split(";")]
            rows.append(dict(zip(names, values)))
        planners[name] = rows
        i += runs + 1
        if i < len(lines) and lines[i].strip() == ".":
            i += 1
    return planners


def rates(directory):
    """{(problem, planner): median propagations per second}."""
    out = {}
    logs = sorted(pathlib.Path(directory).glob("*.log"))
    if not logs:
        sys.exit(f"propagation_rates.py: {directory}: no .log files")
    for log in logs:
        for planner, runs in read_log(log).items():
            per_run = [float(r["propagations"]) / float(r["time"]) for r in runs
                       if r.get("propagations") and r.get("time") and float(r["time"]) > 0]
            if per_run:
                out[(log.stem, planner)] = statistics.median(per_run)
    return out


def main(argv):
    if len(argv) not in (2, 3):
        sys.exit(__doc__)
    before = rates(argv[1])
    if len(argv) == 2:
        print("| problem | planner | propagations/s |\n| --- | --- | ---: |")
        for (problem, planner), r in before.items():
            print(f"| {problem} | {planner} | {r:.0f} |")
        return
    after = rates(argv[2])
    print("| problem | planner | before (/s) | after (/s) | after / before |")
    print("| --- | --- | ---: | ---: | ---: |")
    ratios = []
    for key in before:
        if key in after:
            ratios.append(after[key] / before[key])
            print(f"| {key[0]} | {key[1]} | {before[key]:.0f} | {after[key]:.0f} | "
                  f"{ratios[-1]:.2f} |")
    if ratios:
        print(f"\nmedian after / before: {statistics.median(ratios):.2f} over {len(ratios)} cells")


if __name__ == "__main__":
    main(sys.argv)
