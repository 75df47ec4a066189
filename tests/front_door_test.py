#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""The front door (deploy/nginx.conf) in front of two real marionette-server processes: the
template rendered as the test's own (its port, its servers, its temporary directory) and run by
Debian's nginx.  Through it: the Planner with the token, health checking without it,
reflection; a seeded plan equals the same request made to a server directly, and a PlanStream
arrives event by event; short plans go to the server that is not busy with a long one; a
15 MiB request reaches the server; after one server is killed
(SIGKILL), calls go on to the other; a call that was running on the killed one fails
UNAVAILABLE (nginx does not send a gRPC request twice) and succeeds when asked again.
Usage:
  front_door_test.py BUILD_DIR SOURCE_DIR      (with BUILD_DIR/python on PYTHONPATH)
Exits 77 (skipped) when nginx is not installed (scripts/install-deps.sh installs it)."""
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import unittest

import grpc

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "support"))
from server_process import health_request, start_server, stop_server  # noqa: E402

from marionette.v1 import planner_pb2 as pb  # noqa: E402
from marionette.v1 import planner_pb2_grpc as pb_grpc  # noqa: E402

BUILD = SRC = None
NGINX = "/usr/sbin/nginx"
TOKEN = "front-door-test-token-0123456789"
AUTH = (("authorization", "Bearer " + TOKEN),)
SERVING = b"\x08\x01"  # grpc.health.v1.HealthCheckResponse {status: SERVING}
# planar-arm's shoulder angle in its rest pose at the default inputs (x = 0.30 m, L = 0.45 m),
# rad: the start_state of every plan from rest (checked below).
REST_THETA1 = -0.0918


def start_backend(token_file):
    """A marionette-server with one worker, the token required: (process, "127.0.0.1:PORT")."""
    return start_server(BUILD, "--workers", "1", "--token-file", token_file)


def render(template, listen, upstreams, prefix):
    """deploy/nginx.conf's placeholders filled in (the scheme at the top of that file): a line
    holding @UPSTREAM@ once per server, @LISTEN@ and @PREFIX@ everywhere."""
    lines = []
    for line in template.splitlines(keepends=True):
        if "@UPSTREAM@" in line:
            lines += [line.replace("@UPSTREAM@", upstream) for upstream in upstreams]
        else:
            lines.append(line)
    text = "".join(lines).replace("@LISTEN@", listen).replace("@PREFIX@", prefix)
    left = re.findall(r"@[A-Z_]+@", text)
    if left:
        raise AssertionError(f"placeholders the test does not know: {sorted(set(left))}")
    return text


def free_port():
    """A loopback port nothing listens on now (nginx cannot take port 0 and say which it got)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_nginx(directory, upstreams):
    """nginx with deploy/nginx.conf rendered into `directory`, in the foreground, as in
    production but for the placeholders: (process, "127.0.0.1:PORT") once its port accepts
    connections.  A port taken between free_port() and nginx's bind is tried again."""
    with open(os.path.join(SRC, "deploy", "nginx.conf")) as f:
        template = f.read()
    conf = os.path.join(directory, "nginx.conf")
    for _ in range(3):
        port = free_port()
        with open(conf, "w") as f:
            f.write(render(template, f"127.0.0.1:{port}", upstreams, directory))
        stderr_path = os.path.join(directory, "nginx.stderr")
        with open(stderr_path, "w") as stderr:
            # Its own process group (setsid): a fallback SIGKILL reaches its workers too (stop_nginx).
            proc = subprocess.Popen([NGINX, "-p", directory, "-c", conf, "-g", "daemon off;"],
                                    stdin=subprocess.DEVNULL, stdout=stderr, stderr=stderr,
                                    start_new_session=True)
        deadline = time.monotonic() + 10.0
        while proc.poll() is None and time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                return proc, f"127.0.0.1:{port}"
            except OSError:
                time.sleep(0.05)
        if proc.poll() is None:
            stop_nginx(proc)
        with open(stderr_path) as f:
            out = f.read()
        error_log = os.path.join(directory, "error.log")
        if os.path.exists(error_log):
            with open(error_log) as f:
                out += f.read()
        if "Address already in use" not in out:
            raise AssertionError(f"nginx did not start (exit {proc.poll()}): {out}")
    raise AssertionError("nginx found no free port in 3 tries")


def stop_nginx(proc):
    """SIGTERM: nginx's fast stop (its workers with it); SIGKILL to its process group after
    10 s."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)


def plan_request(model, scene, planner, time_limit, seed=1):
    r = pb.PlanRequest(planner=planner, time_limit_s=time_limit, seed=seed)
    r.model.name = model
    r.scene.name = scene
    return r


def seeded_plan_request():
    """planar-arm's shoulder 0.3 rad from rest (est, seed 7): exact in ~10 ms."""
    r = plan_request("planar-arm", "empty", "est", time_limit=5, seed=7)
    r.goal.joints.values["theta1"] = REST_THETA1 + 0.3
    return r


def long_plan_request(time_limit):
    """arm3d's hand cannot reach this among the pillars: kpiece searches until its deadline
    (s; a budget of propagations it does not reach), then verifies its best motion (raw: not
    optimized)."""
    r = plan_request("arm3d", "pillars", "kpiece", time_limit)
    r.max_propagations = 10 ** 10
    r.raw = True
    target = r.goal.points.targets.add()
    target.point = "hand"
    target.position_m.x, target.position_m.y, target.position_m.z = 0.0, 0.0, 0.05
    r.goal.tolerance = 0.04
    return r


class FrontDoor(unittest.TestCase):
    def setUp(self):
        # Cleanups run in reverse order, after tearDown, and also when setUp fails half-way.
        self.dir = tempfile.mkdtemp(prefix="marionette-front-door-")
        self.addCleanup(shutil.rmtree, self.dir, ignore_errors=True)
        token_file = os.path.join(self.dir, "token")
        with open(token_file, "w") as f:
            f.write(TOKEN + "\n")
        self.servers = []
        for _ in range(2):
            proc, target = start_backend(token_file)
            self.addCleanup(stop_server, proc)
            self.servers.append((proc, target))
        self.nginx, self.target = start_nginx(self.dir, [t for _, t in self.servers])
        self.addCleanup(stop_nginx, self.nginx)
        self.channel = grpc.insecure_channel(self.target, options=[
            ("grpc.max_send_message_length", -1), ("grpc.max_receive_message_length", -1)])
        self.addCleanup(self.channel.close)
        self.stub = pb_grpc.PlannerStub(self.channel)

    def raw_unary(self, method, request, metadata=None):
        return self.channel.unary_unary(method, request_serializer=None,
                                        response_deserializer=None)(
            request, metadata=metadata, timeout=10)

    def access_log(self):
        with open(os.path.join(self.dir, "access.log")) as f:
            return f.read().splitlines()

    def assert_logged(self, text):
        """nginx's access log has a line holding `text` (within 5 s: nginx writes a call's line
        when it closes the HTTP/2 stream, which for a call it refused is when the client has
        stopped sending the rest of its request)."""
        deadline = time.monotonic() + 5.0
        while not any(text in line for line in self.access_log()):
            if time.monotonic() > deadline:
                self.fail(f"no line with {text!r} in nginx's access log: {self.access_log()}")
            time.sleep(0.02)

    def served(self, proc, method):
        """How many calls of `method` this server has logged."""
        return sum(f'"method": "{method}"' in line for line in list(proc.log))

    def wait_for_logs(self, method, total):
        """Until the servers' logs hold `total` calls of `method` together (at most 5 s)."""
        deadline = time.monotonic() + 5.0
        while (sum(self.served(p, method) for p, _ in self.servers) < total
               and time.monotonic() < deadline):
            time.sleep(0.02)
        return [self.served(p, method) for p, _ in self.servers]

    def test_the_planner_health_and_reflection_pass_through(self):
        # The token goes through nginx (and the server's refusal comes back as it is).
        for _ in range(6):
            models = self.stub.ListModels(pb.ListModelsRequest(), metadata=AUTH, timeout=10)
            self.assertIn("planar-arm", [m.name for m in models.models])
        with self.assertRaises(grpc.RpcError) as e:
            self.stub.ListModels(pb.ListModelsRequest(), timeout=10)
        self.assertEqual(e.exception.code(), grpc.StatusCode.UNAUTHENTICATED)
        # Balanced: both servers answered some of the seven.
        counts = self.wait_for_logs("ListModels", 7)
        self.assertEqual(sum(counts), 7)
        self.assertGreaterEqual(min(counts), 1, counts)
        # Health without the token: the Planner and the whole server SERVING, an unknown
        # service NOT_FOUND (the default health service's answer, passed through).
        check = "/grpc.health.v1.Health/Check"
        self.assertEqual(self.raw_unary(check, health_request("marionette.v1.Planner")), SERVING)
        self.assertEqual(self.raw_unary(check, health_request("")), SERVING)
        with self.assertRaises(grpc.RpcError) as e:
            self.raw_unary(check, health_request("no.such.Service"))
        self.assertEqual(e.exception.code(), grpc.StatusCode.NOT_FOUND)
        # Watch, a stream that stays open: its first answer comes through at once.
        watch = self.channel.unary_stream("/grpc.health.v1.Health/Watch",
                                          request_serializer=None, response_deserializer=None)(
            health_request("marionette.v1.Planner"), timeout=10)
        self.assertEqual(next(watch), SERVING)
        watch.cancel()
        # Reflection (list_services, field 7), with the token.
        stream = self.channel.stream_stream(
            "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo",
            request_serializer=None, response_deserializer=None)
        replies = list(stream(iter([b"\x3a\x00"]), metadata=AUTH, timeout=10))
        self.assertEqual(len(replies), 1)
        self.assertIn(b"marionette.v1.Planner", replies[0])
        # A service the front door does not pass: nginx's 404 with UNIMPLEMENTED; no server saw
        # it.
        with self.assertRaises(grpc.RpcError) as e:
            self.raw_unary("/marionette.v1.Admin/Shutdown", b"", metadata=AUTH)
        self.assertEqual(e.exception.code(), grpc.StatusCode.UNIMPLEMENTED)
        self.assertEqual(e.exception.details(), "marionette front door: no such service here")
        self.assert_logged('"/marionette.v1.Admin/Shutdown" http=404 upstream=-')

    def test_a_plan_through_the_front_door_is_the_servers_plan(self):
        request = seeded_plan_request()
        direct_channel = grpc.insecure_channel(self.servers[0][1])
        self.addCleanup(direct_channel.close)
        direct = pb_grpc.PlannerStub(direct_channel).Plan(request, metadata=AUTH, timeout=30)
        self.assertEqual(direct.outcome, pb.OUTCOME_EXACT, direct.message)
        self.assertAlmostEqual(direct.start_state.positions[0], REST_THETA1, places=3)
        for _ in range(2):  # both servers, whichever nginx picks first
            front = self.stub.Plan(request, metadata=AUTH, timeout=30)
            self.assertEqual(front.outcome, direct.outcome)
            self.assertEqual(list(front.inputs.variables), list(direct.inputs.variables))
            self.assertEqual(front.inputs.rate_hz, direct.inputs.rate_hz)
            self.assertEqual(list(front.inputs.values), list(direct.inputs.values))
            self.assertEqual(front.goal_distance, direct.goal_distance)
        # PlanStream: progress events (the search's "verify", then the optimizer's iterations), the
        # same plan last.
        events = list(self.stub.PlanStream(request, metadata=AUTH, timeout=30))
        self.assertGreaterEqual(len(events), 2)
        self.assertTrue(all(e.HasField("progress") for e in events[:-1]))
        phases = [e.progress.phase for e in events[:-1]]
        self.assertIn("verify", phases)
        self.assertEqual(phases[phases.index("verify"):],
                         ["verify"] + ["optimize"] * (len(phases) - 1 - phases.index("verify")))
        self.assertTrue(events[-1].HasField("plan"))
        self.assertEqual(list(events[-1].plan.inputs.values), list(direct.inputs.values))
        # A 2 s search: its events come through as they are sent (about one a second), not
        # held until the plan.
        arrivals = []
        t0 = time.monotonic()
        for e in self.stub.PlanStream(long_plan_request(2.0), metadata=AUTH, timeout=30):
            arrivals.append((time.monotonic() - t0, e.WhichOneof("event")))
        self.assertEqual(arrivals[-1][1], "plan")
        self.assertEqual(arrivals[0][1], "progress")
        self.assertGreaterEqual(arrivals[-1][0] - arrivals[0][0], 0.7, arrivals)

    def test_calls_go_to_the_server_with_fewest_in_flight(self):
        # While one server (one worker) searches for 2 s, short plans all go to the other
        # (least_conn); round robin would send every other one to wait behind the search.
        result = {}

        def long_plan():
            try:
                result["outcome"] = self.stub.Plan(long_plan_request(2.0), metadata=AUTH,
                                                   timeout=60).outcome
            except grpc.RpcError as e:
                result["error"] = (e.code(), e.details())
        thread = threading.Thread(target=long_plan)
        thread.start()
        time.sleep(0.5)
        for _ in range(4):
            plan = self.stub.Plan(seeded_plan_request(), metadata=AUTH, timeout=30)
            self.assertEqual(plan.outcome, pb.OUTCOME_EXACT, plan.message)
        thread.join(timeout=60)
        self.assertIn("outcome", result, result)
        self.wait_for_logs("Plan", 5)
        models = [[re.search(r'"model": "([^"]*)"', line).group(1) for line in list(proc.log)
                   if '"method": "Plan"' in line] for proc, _ in self.servers]
        self.assertEqual(sorted(models), [["arm3d"], ["planar-arm"] * 4], models)

    def test_a_request_of_15_mib_reaches_the_server(self):
        # Past nginx's default client_max_body_size (1m), below the server's 16 MiB: the
        # server's own refusal (INVALID_ARGUMENT naming the field) comes back, not nginx's 413.
        r = pb.DescribeModelRequest()
        r.model.yaml = "name: big\n" + "#" * (15 << 20)
        with self.assertRaises(grpc.RpcError) as e:
            self.stub.DescribeModel(r, metadata=AUTH, timeout=30)
        self.assertEqual(e.exception.code(), grpc.StatusCode.INVALID_ARGUMENT,
                         e.exception.details())
        self.assertIn("model.yaml", e.exception.details())
        self.assertIn("at most 262144", e.exception.details())
        # Past client_max_body_size (17m): nginx's 413, as RESOURCE_EXHAUSTED like the server's
        # own answer to a request over 16 MiB.
        r.model.yaml = "name: big\n" + "#" * (20 << 20)
        with self.assertRaises(grpc.RpcError) as e:
            self.stub.DescribeModel(r, metadata=AUTH, timeout=30)
        self.assertEqual(e.exception.code(), grpc.StatusCode.RESOURCE_EXHAUSTED)
        self.assertEqual(e.exception.details(), "marionette front door: request too large")
        self.assert_logged('"/marionette.v1.Planner/DescribeModel" http=413 ')
        # The servers go on answering.
        self.assertEqual(len(self.stub.ListModels(pb.ListModelsRequest(), metadata=AUTH,
                                                  timeout=10).models), 5)

    def test_calls_go_on_after_a_server_is_killed(self):
        killed_proc, killed = self.servers[1]
        live_proc, live = self.servers[0]
        for _ in range(4):  # both servers have had calls, nginx holds idle connections to both
            self.stub.ListModels(pb.ListModelsRequest(), metadata=AUTH, timeout=10)
        killed_proc.send_signal(signal.SIGKILL)
        killed_proc.wait(timeout=10)
        # The kernel closes the dead server's connections at once; nginx drops its idle ones
        # to it when it sees them close.  A call in that same instant could take one and fail
        # like a call in flight (the next test).
        time.sleep(0.2)
        before = self.served(live_proc, "ListModels")
        for _ in range(8):
            models = self.stub.ListModels(pb.ListModelsRequest(), metadata=AUTH, timeout=10)
            self.assertIn("planar-arm", [m.name for m in models.models])
        plan = self.stub.Plan(seeded_plan_request(), metadata=AUTH, timeout=30)
        self.assertEqual(plan.outcome, pb.OUTCOME_EXACT, plan.message)
        self.assertEqual(self.raw_unary("/grpc.health.v1.Health/Check",
                                        health_request("marionette.v1.Planner")), SERVING)
        deadline = time.monotonic() + 5.0
        while self.served(live_proc, "ListModels") < before + 8 and time.monotonic() < deadline:
            time.sleep(0.02)
        self.assertEqual(self.served(live_proc, "ListModels"), before + 8)
        # The killed server was tried (connection refused) and the call passed on.
        self.assert_logged(f"upstream={killed}, {live} ")

    def test_a_call_on_a_killed_server_fails_unavailable_and_is_planned_when_asked_again(self):
        # Two 3 s searches at once: least_conn gives one to each server.  One second in, the
        # second server is killed.  nginx does not send its call to the other server (a gRPC
        # request body is not buffered, so nginx never sends one twice, non_idempotent or not):
        # the client gets nginx's 502 as UNAVAILABLE, and asks again.
        results = [None, None]

        def plan(i):
            try:
                reply = self.stub.Plan(long_plan_request(3.0), metadata=AUTH, timeout=60)
                results[i] = ("OK", reply.outcome)
            except grpc.RpcError as e:
                results[i] = (e.code(), e.details())
        threads = [threading.Thread(target=plan, args=(i,)) for i in range(2)]
        for t in threads:
            t.start()
        time.sleep(1.0)
        killed_proc, killed = self.servers[1]
        live_proc, live = self.servers[0]
        killed_proc.send_signal(signal.SIGKILL)
        for t in threads:
            t.join(timeout=60)
        self.assertEqual(sorted(str(r[0]) for r in results),
                         ["OK", str(grpc.StatusCode.UNAVAILABLE)], results)
        self.assertIn((grpc.StatusCode.UNAVAILABLE,
                       "marionette front door: no server could take the call"), results)
        self.assert_logged(f"http=502 upstream={killed} ")
        self.assert_logged(f"http=200 upstream={live} ")
        plans = [line for line in self.access_log() if '"/marionette.v1.Planner/Plan"' in line]
        self.assertEqual(sorted(re.search(r"http=(\d+) upstream=(\S+) ", line).groups()
                                for line in plans),
                         [("200", live), ("502", killed)], plans)
        # Asked again: planned by the live server (the killed one is marked failed).
        reply = self.stub.Plan(seeded_plan_request(), metadata=AUTH, timeout=30)
        self.assertEqual(reply.outcome, pb.OUTCOME_EXACT, reply.message)
        self.assertEqual(self.wait_for_logs("Plan", 2)[0], 2)

if __name__ == "__main__":
    BUILD, SRC = sys.argv[1], sys.argv[2]
    if not os.access(NGINX, os.X_OK):
        print(f"front_door_test: SKIPPED: {NGINX} is not installed (scripts/install-deps.sh "
              "installs Debian's nginx)", file=sys.stderr)
        sys.exit(77)
    unittest.main(argv=sys.argv[:1], verbosity=2)
