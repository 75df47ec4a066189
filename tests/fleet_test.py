#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""A fleet of real marionette-server processes on loopback and the balancing clients
(docs/fleet.md): readiness (NOT_SERVING while overloaded and draining), deadlines kept across
retries, a load of seeded plans over three servers while one is killed (SIGKILL) and another
drained (SIGTERM) -- every plan arrives, the same as a lone server's, and the channel stops
sending to the dead one --, the CLI with a server list, and a fleet sweep whose logs equal a
local sweep's.  Usage:
  fleet_test.py BUILD_DIR SOURCE_DIR      (with BUILD_DIR/python on PYTHONPATH)"""
import concurrent.futures
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
import unittest

import grpc

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "support"))
from ompl_log import comparable  # noqa: E402
from server_process import (NOT_SERVING, SERVING, check_health, start_server,  # noqa: E402
                            stop_server, watch_health)

from marionette_client import OUTCOMES, Client  # noqa: E402

BUILD = SRC = None
PLANNER = "marionette.v1.Planner"
GOAL = "point:hand_l=0.05,0.24,0.40;radius=0.04"  # PuppetCopter's hand over the table


# A search that cannot succeed (the arm's hand into the floor): it runs its whole time limit
# (raw: its approximate path is not optimized after it).
LONG_PLAN = dict(model="arm3d", goal="point:hand=0,0,0.05", scene="pillars", planner="kpiece",
                 raw=True)


def log_records(proc):
    return [json.loads(line) for line in proc.log if line.startswith("{")]


def wait_for(predicate, timeout_s, what):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.02)
    raise AssertionError(f"not within {timeout_s} s: {what}")


class Readiness(unittest.TestCase):
    def test_not_serving_while_overloaded_then_serving_again(self):
        proc, target = start_server(BUILD, "--workers", "1", "--max-queue", "0")
        try:
            with grpc.insecure_channel(target) as channel, Client(target) as client:
                self.assertEqual(check_health(channel, PLANNER), SERVING)
                busy = threading.Thread(target=lambda: client.plan(
                    time_limit=2.0, **LONG_PLAN))
                busy.start()
                wait_for(lambda: check_health(channel, PLANNER) == NOT_SERVING, 5,
                         "NOT_SERVING with the only worker busy")
                self.assertEqual(check_health(channel, ""), SERVING)  # alive all the same
                # Deadlines hold across retries: no server is ready, the retry policy backs off
                # (0.1 + 0.2 + 0.4 + 0.8 s, +-20 %), and the call ends at its deadline, not after.
                t0 = time.monotonic()
                with self.assertRaises(grpc.RpcError) as refused:
                    client.plan("planar-arm", "q:theta1=0.3", scene="empty", timeout=0.6)
                self.assertEqual(refused.exception.code(), grpc.StatusCode.DEADLINE_EXCEEDED)
                self.assertLess(time.monotonic() - t0, 0.9)
                busy.join(timeout=30)
                wait_for(lambda: check_health(channel, PLANNER) == SERVING, 5,
                         "SERVING once the worker is free")
                # And a call made while the server is busy waits through the retries for it.
                busy = threading.Thread(target=lambda: client.plan(
                    time_limit=0.5, **LONG_PLAN))
                busy.start()
                wait_for(lambda: check_health(channel, PLANNER) == NOT_SERVING, 5, "busy again")
                answer = client.plan("planar-arm", "q:theta1=0.3", scene="empty", timeout=10)
                self.assertEqual(OUTCOMES[answer.outcome], "exact")
                busy.join(timeout=30)
        finally:
            self.assertEqual(stop_server(proc), 0)
        events = [r for r in log_records(proc) if r.get("event") == "health"]
        self.assertIn("NOT_SERVING: every worker busy and the queue full",
                      [e["message"] for e in events])
        self.assertEqual(events[-1]["message"], "SERVING")

    def test_a_drained_server_says_not_serving_and_finishes_its_plans(self):
        proc, target = start_server(BUILD, "--workers", "1", "--shutdown-grace", "30")
        with grpc.insecure_channel(target) as channel, Client(target) as client:
            watch = watch_health(channel, PLANNER)
            self.assertEqual(next(watch)[1], SERVING)
            result = {}
            running = threading.Thread(target=lambda: result.update(
                plan=client.plan(time_limit=3.0, **LONG_PLAN)))
            running.start()
            time.sleep(0.5)
            proc.send_signal(signal.SIGTERM)
            self.assertEqual(next(watch)[1], NOT_SERVING)  # told at once, while still planning
            watch.cancel()
            running.join(timeout=60)
            self.assertIn("plan", result)  # finished there, within the grace
            self.assertGreater(len(result["plan"].message), 0)  # not found, as it should
        self.assertEqual(stop_server(proc), 0)


class FleetUnderLoad(unittest.TestCase):
    SEEDS = range(1, 19)

    def test_a_kill_and_a_drain_under_load_lose_no_request(self):
        # Each server alone can hold the load (1 running, 3 waiting for 3 clients at once): the
        # survivor of the kill and the drain takes all of it.
        servers = [start_server(BUILD, "--workers", "1", "--max-queue", "3",
                                "--shutdown-grace", "30") for _ in range(3)]
        try:
            # What a lone server plans for each seed (seeded plans are deterministic).
            with Client(servers[0][1]) as lone:
                reference = {seed: lone.plan("puppetcopter", GOAL, scene="table", planner="est",
                                             seed=seed, time_limit=30, raw=True)
                             for seed in self.SEEDS}
            for proc, _ in servers:
                proc.log.clear()
            fleet = ",".join(target for _, target in servers)
            answers, errors = {}, []
            with Client(fleet) as client:
                def one(seed):
                    try:
                        answers[seed] = client.plan("puppetcopter", GOAL, scene="table",
                                                    planner="est", seed=seed, time_limit=30,
                                                    raw=True, timeout=120)
                    except grpc.RpcError as e:
                        errors.append((seed, e.code(), e.details()))

                with concurrent.futures.ThreadPoolExecutor(3) as pool:
                    futures = [pool.submit(one, seed) for seed in self.SEEDS]
                    time.sleep(1.5)
                    servers[0][0].send_signal(signal.SIGKILL)  # mid-plan, most likely
                    time.sleep(1.0)
                    servers[1][0].send_signal(signal.SIGTERM)
                    concurrent.futures.wait(futures)
            self.assertEqual(errors, [])
            self.assertEqual(sorted(answers), list(self.SEEDS))
            for seed in self.SEEDS:
                self.assertEqual(answers[seed].outcome, reference[seed].outcome, seed)
                self.assertEqual(list(answers[seed].inputs.values),
                                 list(reference[seed].inputs.values), f"seed {seed}")
            self.assertEqual(servers[1][0].wait(timeout=60), 0)  # drained cleanly
            # Retried calls (their log's "attempt") are only those the dead and the draining
            # server held or were being sent (3 clients at once): a channel that kept sending to
            # the dead one would retry a third of every later call.
            stop_server(servers[0][0], signal.SIGKILL)
            stop_server(servers[1][0])
            served = [r for proc, _ in servers[1:] for r in log_records(proc)
                      if r.get("method") == "Plan"]
            retried = [r for r in served if int(r.get("attempt", "1")) > 1]
            self.assertLessEqual(len(retried), 4, retried)
            self.assertTrue(all(r["status"] == "OK" for r in served), served)
            # The drained server took no new call after its SIGTERM: only what it held (3 clients
            # at once) finished there.
            drained = servers[1][0].log
            after = drained[next(i for i, line in enumerate(drained) if "SIGTERM" in line):]
            self.assertLessEqual(sum('"method": "Plan"' in line for line in after), 3, after)
        finally:
            for proc, _ in servers:
                stop_server(proc, signal.SIGKILL)


class ClientsAndSweeps(unittest.TestCase):
    def cli(self, *args, expect=0):
        p = subprocess.run([os.path.join(BUILD, "bin", "marionette"), *args], capture_output=True,
                           text=True, timeout=600)
        self.assertEqual(p.returncode, expect, p.stderr)
        return p

    def test_the_cli_balances_over_a_list_and_a_dns_name(self):
        proc, target = start_server(BUILD)
        port = target.rsplit(":", 1)[1]
        try:
            with tempfile.TemporaryDirectory() as d:
                # 127.0.0.1:1 refuses connections: the channel plans on the live server.
                for n, servers in enumerate([f"127.0.0.1:1,{target}",
                                             f"dns:///localhost:{port}"]):
                    self.cli("plan", "--model", "planar-arm", "--scene", "empty", "--goal",
                             "q:theta1=0.3", "--server", servers, "--out", f"{d}/{n}.json",
                             "--quiet")
                with open(f"{d}/0.json") as a, open(f"{d}/1.json") as b:
                    self.assertEqual(json.load(a)["inputs"], json.load(b)["inputs"])
                bad = self.cli("models", "--server", "127.0.0.1:1,nowhere", expect=2)
                self.assertIn("--server: 'nowhere': expected HOST:PORT", bad.stderr)
        finally:
            self.assertEqual(stop_server(proc), 0)

    def test_a_fleet_sweep_logs_what_a_local_sweep_logs(self):
        servers = [start_server(BUILD, "--workers", "1") for _ in range(2)]
        fleet = ",".join(target for _, target in servers)
        # The arm's plans optimized (the default: the transcription ends within its iterations);
        # PuppetCopter's raw (its optimizations take a worker tens of seconds each).
        sweeps = [("planar-arm-empty", "est,rrt,prm", []), ("puppetcopter-table", "est", ["--raw"])]
        try:
            with tempfile.TemporaryDirectory() as d:
                for where in ("local", "fleet"):
                    for problem, planners, raw in sweeps:
                        more = ["--server", fleet, "--parallel", "3"] if where == "fleet" else []
                        self.cli("bench", "planners", "--problems", problem, "--planners",
                                 planners, "--runs", "3", "--time-limit", "30", "--out",
                                 f"{d}/{where}", *raw, *more)
                for problem, _, _ in sweeps:
                    local = comparable(f"{d}/local/{problem}.log")
                    fleet_log = comparable(f"{d}/fleet/{problem}.log")
                    self.assertEqual(fleet_log, local, problem)
                    self.assertGreater(len([v for v in local if v.startswith("run ")]), 0)
        finally:
            for proc, _ in servers:
                self.assertEqual(stop_server(proc), 0)
        # Both servers answered part of the sweep.
        for proc, _ in servers:
            self.assertTrue(any(r.get("method") == "Plan" for r in log_records(proc)))


if __name__ == "__main__":
    BUILD, SRC = sys.argv[1], sys.argv[2]
    unittest.main(argv=sys.argv[:1], verbosity=2)
