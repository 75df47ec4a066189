#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""The planning service from the outside: a real marionette-server process on a loopback port,
asked by the Python client (clients/python) and by the CLI with --server.  The Python client
reaches every RPC; the CLI prints the same through the server as in-process; health checking and
server reflection answer; SIGTERM during a plan ends the server cleanly (exit 0) and tells the
client; the server's flags.  The service's contract itself is tested in C++ (test_service.cpp).  Usage:
  service_test.py BUILD_DIR SOURCE_DIR      (with BUILD_DIR/python on PYTHONPATH)"""
import json
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
import unittest

import grpc

import marionette_client
from marionette_client import OUTCOMES, Client
from marionette.v1 import planner_pb2_grpc as pb_grpc

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "support"))
import server_process  # noqa: E402

BUILD = None
SRC = None
GOAL = "point:hand_l=0.05,0.24,0.40;radius=0.04"


def start_server(*args):
    """Starts marionette-server on a free loopback port; returns (process, "127.0.0.1:PORT")."""
    return server_process.start_server(BUILD, *args)


def stop_server(proc):
    """SIGTERM, then its exit status (once its log is read to the end)."""
    return server_process.stop_server(proc)


def cli(*args, check=True):
    p = subprocess.run([os.path.join(BUILD, "bin", "marionette"), *args], capture_output=True,
                       text=True, timeout=300)
    if check and p.returncode not in (0, 4):
        raise AssertionError(f"marionette {' '.join(args)} failed ({p.returncode}): {p.stderr}")
    return p


def raw_unary(channel, method, request_bytes):
    return channel.unary_unary(method, request_serializer=None,
                               response_deserializer=None)(request_bytes, timeout=10)


class Service(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.proc, cls.target = start_server("--workers", "2")
        cls.client = Client(cls.target)

    @classmethod
    def tearDownClass(cls):
        cls.client.close()
        stop_server(cls.proc)

    def test_server_info_reports_the_projects_version(self):
        with open(os.path.join(SRC, "CMakeLists.txt")) as f:
            version = re.search(r"project\(marionette VERSION ([0-9.]+)", f.read()).group(1)
        info = self.client.server_info()
        self.assertEqual((info.version, info.api, info.workers, info.max_queue),
                         (version, "marionette.v1.Planner", 2, 2))
        # The planners it accepts: the built-in ones (it loaded no plugin).
        self.assertEqual(list(info.planners), ["est", "kpiece", "rrt", "sst", "pdst", "prm"])
        self.assertEqual(marionette_client.__version__, version)
        self.assertIn(f"marionette-server {version}: listening on", self.proc.log[0])
        self.assertEqual(json.loads(cli("version", "--json", "--server", self.target).stdout),
                         {"version": version, "server": {"version": version,
                                                         "api": "marionette.v1.Planner",
                                                         "workers": 2, "max_queue": 2}})
        self.assertEqual(cli("--version").stdout, f"marionette {version}\n")

    # The service's contract (answers equal to the library's, fields named in errors, plans,
    # streams, performances) is tested in C++ (test_service.cpp); here, what only a separate
    # server process and the Python client show.
    def test_the_python_client_reaches_every_rpc(self):
        models = {m.name: m for m in self.client.models()}
        self.assertEqual(models["puppetcopter"].kinematic_count, 12)
        self.assertEqual(len(self.client.describe("puppetcopter").kinematic), 12)
        self.assertIn("table", [s.name for s in self.client.scenes()])
        out = self.client.simulate("suspended-mass", ["xr"], [[0.0], [0.01]], rate_hz=50.0)
        self.assertEqual(len(out.samples), 2)
        plan = self.client.plan("planar-arm", "q:theta1=0.2", planner="rrt", time_limit=30)
        self.assertEqual(OUTCOMES[plan.outcome], "exact", plan.message)
        events = list(self.client.plan_stream("planar-arm", "q:theta1=0.2", planner="rrt",
                                              time_limit=30))
        self.assertEqual(list(events[-1].plan.inputs.values), list(plan.inputs.values))
        keys = ("keyframes:\n  - {t: 0, points: {mass: {offset: [0, 0, 0]}}}\n"
                "  - {t: 1, points: {mass: {offset: [0.02, 0, 0]}}}\n")
        events = list(self.client.perform("suspended-mass", [("keyframes", keys)],
                                          kinematic_only=True, timeout=120))
        self.assertTrue(events[-1].HasField("plan"))
        with self.assertRaises(grpc.RpcError) as e:  # a status reaches Python as RpcError
            self.client.plan("dragon", "q:a=1", time_limit=5)
        self.assertEqual(e.exception.code(), grpc.StatusCode.NOT_FOUND)

    def test_the_first_collision_is_the_same_pair_everywhere(self):
        # One checked simulation behind every front end: the CLI in-process, the CLI with
        # --server and a gRPC client name the same first contact at the same time.
        wall = os.path.join(SRC, "examples", "mass-into-wall.csv")
        args = ["simulate", "--model", "suspended-mass", "--scene", "window", "--inputs", wall,
                "--dt", "0.01", "--duration", "4", "--summary"]
        local = json.loads(cli(*args).stdout)
        remote = json.loads(cli(*args, "--server", self.target).stdout)
        expected = {"kind": "link-obstacle", "first": "mass", "second": "wall_below_window"}
        self.assertEqual(local["first_collision"]["pair"], expected)
        self.assertEqual(remote["first_collision"], local["first_collision"])
        out = self.client.simulate("suspended-mass", ["xr"], [[0.4 * i / 100] for i in range(201)],
                                   rate_hz=100.0, scene="window", dt_s=0.01, duration_s=4.0)
        c = out.first_collision
        self.assertEqual({"kind": c.kind, "first": c.first, "second": c.second}, expected)
        self.assertAlmostEqual(out.first_collision_t_s, local["first_collision"]["t"], places=9)
        self.assertEqual(out.samples_in_collision, local["rows_in_collision"])

    def test_the_cli_through_the_server_prints_what_it_prints_in_process(self):
        for args in (["models", "--json"], ["scenes"],
                     ["simulate", "--model", "arm3d", "--scene", "pillars", "--duration", "0.3"]):
            self.assertEqual(cli(*args, "--server", self.target).stdout, cli(*args).stdout, args)

    def test_health_and_reflection(self):
        channel = self.client.channel
        # grpc.health.v1.Health/Check {service: "marionette.v1.Planner"} -> {status: SERVING}
        name = b"marionette.v1.Planner"
        reply = raw_unary(channel, "/grpc.health.v1.Health/Check",
                          b"\x0a" + bytes([len(name)]) + name)
        self.assertEqual(reply, b"\x08\x01")
        reply = raw_unary(channel, "/grpc.health.v1.Health/Check", b"")  # the whole server
        self.assertEqual(reply, b"\x08\x01")
        # grpc.reflection.v1alpha.ServerReflection: list_services (field 7, empty string).
        stream = channel.stream_stream(
            "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo",
            request_serializer=None, response_deserializer=None)
        replies = list(stream(iter([b"\x3a\x00"]), timeout=10))
        self.assertEqual(len(replies), 1)
        self.assertIn(b"marionette.v1.Planner", replies[0])
        self.assertIn(b"grpc.health.v1.Health", replies[0])

    def test_the_example_plans_and_prints_the_inputs(self):
        env = dict(os.environ)
        p = subprocess.run([sys.executable, os.path.join(SRC, "clients/python/examples",
                                                         "plan_and_print.py"),
                            "--server", self.target, "--seed", "2"],
                           capture_output=True, text=True, timeout=120, env=env)
        self.assertEqual(p.returncode, 0, p.stderr)
        lines = p.stdout.splitlines()
        self.assertIn("exact", lines[0])
        self.assertTrue(lines[1].startswith("t,act_arm_l_yaw,"))
        first = [float(x) for x in lines[2].split(",")]
        self.assertEqual(first[0], 0.0)
        self.assertGreater(len(lines), 20)


class Shutdown(unittest.TestCase):
    def test_sigterm_during_a_plan_exits_cleanly_and_tells_the_client(self):
        proc, target = start_server("--shutdown-grace", "0.5")
        result = {}

        def long_plan():
            # A plain channel (no retry policy): the server's own answer, not a retry's.
            with Client(target) as c, grpc.insecure_channel(target) as plain:
                try:
                    # The arm's hand cannot reach this: the search runs until its deadline.
                    pb_grpc.PlannerStub(plain).Plan(
                        c.plan_request("arm3d", "point:hand=0,0,0.05", scene="pillars",
                                       planner="kpiece", time_limit=60,
                                       max_propagations=10 ** 10))
                    result["status"] = grpc.StatusCode.OK
                except grpc.RpcError as e:
                    result["status"] = e.code()
                    result["details"] = e.details()

        t = threading.Thread(target=long_plan)
        t.start()
        time.sleep(1.0)
        t0 = time.monotonic()
        self.assertEqual(stop_server(proc), 0)
        stopped_in = time.monotonic() - t0
        t.join(timeout=30)
        self.assertEqual(result.get("status"), grpc.StatusCode.UNAVAILABLE, result)
        self.assertIn("shutting down", result.get("details", ""))
        self.assertLess(stopped_in, 5.0)
        log = "".join(proc.log)
        self.assertIn("SIGTERM", log)
        self.assertIn('"status": "UNAVAILABLE"', log)
        self.assertIn("stopped", log)

    def test_a_port_in_use_is_refused(self):
        proc, target = start_server()
        try:
            p = subprocess.run([os.path.join(BUILD, "bin", "marionette-server"), "--listen",
                                target], capture_output=True, text=True, timeout=30)
            self.assertEqual(p.returncode, 2)
            self.assertIn("cannot listen there", p.stderr)
        finally:
            self.assertEqual(stop_server(proc), 0)

    def test_a_restarted_server_loads_its_roadmaps(self):
        with tempfile.TemporaryDirectory() as d:
            plans = []
            for _ in range(2):
                proc, target = start_server("--roadmap-dir", d)
                try:
                    with Client(target) as c:
                        plans.append(c.plan("puppetcopter", GOAL, scene="table", planner="prm",
                                            seed=1, time_limit=30))
                finally:
                    self.assertEqual(stop_server(proc), 0)
            files = sorted(os.listdir(d))
            self.assertEqual(len(files), 2, files)
            self.assertRegex(files[0], r"^[0-9a-f]{32}\.roadmap$")  # the fingerprint alone
            self.assertEqual(files[1], files[0] + ".lock")  # who builds it, among servers
        built, loaded = plans
        self.assertGreater(built.statistics.roadmap_build_time_s, 0.0)  # built, not read
        self.assertEqual(loaded.statistics.roadmap_build_time_s, 0.0)  # read, not built
        self.assertEqual(loaded.statistics.roadmap_vertices, built.statistics.roadmap_vertices)
        # (Exact or not is the optimizer's: the roadmap's part is that a plan comes back from it.)
        self.assertIn(OUTCOMES[loaded.outcome], ("exact", "approximate"), loaded.message)

    def test_off_loopback_needs_tls_or_a_token(self):
        p = subprocess.run([os.path.join(BUILD, "bin", "marionette-server"), "--listen",
                            "0.0.0.0:0"], capture_output=True, text=True, timeout=30)
        self.assertEqual(p.returncode, 2)
        self.assertIn("--listen: 0.0.0.0:0 is off loopback", p.stderr)  # the field as its flag
        self.assertIn("TLS", p.stderr)
        with tempfile.TemporaryDirectory() as d:
            token = os.path.join(d, "token")
            with open(token, "w") as f:
                f.write("let-me-in\n")
            proc, target = start_server("--token-file", token)
            try:
                with self.assertRaises(grpc.RpcError) as e:
                    Client(target).models()
                self.assertEqual(e.exception.code(), grpc.StatusCode.UNAUTHENTICATED)
                with self.assertRaises(grpc.RpcError) as e:
                    Client(target).server_info()
                self.assertEqual(e.exception.code(), grpc.StatusCode.UNAUTHENTICATED)
                self.assertTrue(Client(target, token="let-me-in").models())
                p = cli("models", "--server", target, "--token-file", token)
                self.assertIn("puppetcopter", p.stdout)
            finally:
                stop_server(proc)


if __name__ == "__main__":
    BUILD, SRC = sys.argv[1], sys.argv[2]
    unittest.main(argv=sys.argv[:1], verbosity=2)
