# SPDX-License-Identifier: BSD-3-Clause
"""OMPL benchmark logs (marionette bench planners) compared across runs and machines."""
import re

# What depends on the clock (and on which machine ran it), not on the plans.
CLOCK_PROPERTIES = {"time REAL", "total time REAL", "verification time REAL", "memory REAL",
                    "roadmap build time REAL", "optimization time REAL"}
CLOCK_LINES = re.compile(r"^(Starting at |Running on |.* seconds spent to collect the data$)")


def comparable(path):
    """An OMPL benchmark log's lines, each run's clock-dependent values blanked."""
    with open(path) as f:
        lines = f.read().splitlines()
    out, properties, i = [], [], 0
    while i < len(lines):
        line = lines[i]
        if CLOCK_LINES.match(line):
            i += 1
            continue
        m = re.match(r"^(\d+) properties for each run$", line)
        if m:
            properties = lines[i + 1:i + 1 + int(m.group(1))]
            out += lines[i:i + 1 + len(properties)]
            i += 1 + len(properties)
            continue
        if properties and line.endswith("; "):
            values = line.split("; ")[:-1]
            out.append("run " + "; ".join(
                "-" if name in CLOCK_PROPERTIES else value
                for name, value in zip(properties, values)))
        else:
            out.append(line)
        i += 1
    return out
