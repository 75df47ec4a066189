#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Asks a marionette-server for a plan and prints its input sequence (the motor setpoints).

    python3 plan_and_print.py --server 127.0.0.1:50051 [--model puppetcopter --scene table \
        --goal "point:hand_l=0.05,0.24,0.40;radius=0.04" --planner est --seed 1]

With the client installed (pip install clients/python: docs/install.md), from any folder; or from
a build tree with PYTHONPATH=build/python.
"""
import argparse
import sys

import grpc

from marionette_client import OUTCOMES, Client, __version__, input_rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--server", default="127.0.0.1:50051")
    ap.add_argument("--model", default="puppetcopter")
    ap.add_argument("--scene", default="table")
    ap.add_argument("--goal", default="point:hand_l=0.05,0.24,0.40;radius=0.04")
    ap.add_argument("--planner", default="rrt")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--time-limit", type=float, default=30.0)
    ap.add_argument("--token", default=None)
    args = ap.parse_args()
    with Client(args.server, token=args.token) as client:
        try:
            info = client.server_info()
            print(f"# marionette_client {__version__}, marionette-server {info.version}",
                  file=sys.stderr)
            plan = None
            for event in client.plan_stream(args.model, args.goal, scene=args.scene,
                                            planner=args.planner, seed=args.seed,
                                            time_limit=args.time_limit):
                if event.HasField("progress"):
                    p = event.progress
                    print(f"[{p.elapsed_s:6.1f} s] {p.phase}: {p.states} states, "
                          f"best goal distance {p.best_goal_distance:.4g}", file=sys.stderr)
                else:
                    plan = event.plan
        except grpc.RpcError as e:
            print(f"plan_and_print: {e.code().name}: {e.details()}", file=sys.stderr)
            return 2
    print(f"# {plan.model} / {plan.scene} with {plan.statistics.planner} (seed {plan.seed}): "
          f"{OUTCOMES[plan.outcome]}; {len(plan.inputs.values) // len(plan.inputs.variables)} "
          f"samples at {plan.inputs.rate_hz:g} Hz; min clearance {plan.min_clearance_m:.4f} m")
    print("t," + ",".join(plan.inputs.variables))
    for t, values in input_rows(plan):
        print(f"{t:.4f}," + ",".join(f"{values[v]:.6f}" for v in plan.inputs.variables))
    return 0 if plan.outcome == 1 else 4


if __name__ == "__main__":
    sys.exit(main())
