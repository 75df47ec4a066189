#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""A hostile client against a real marionette-server: the crashers, oversized and malformed
requests that were found by trying, each answered with its documented status while
the server stays healthy; its memory returns within a stated bound of its idle size.
Usage:  hostile_client_test.py BUILD_DIR SOURCE_DIR   (BUILD_DIR/python on PYTHONPATH)"""
import glob
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
import unittest

import grpc

from marionette.v1 import planner_pb2 as pb
from marionette.v1 import planner_pb2_grpc as pb_grpc

BUILD = SRC = None
TOKEN = "hostile-test-token-0123456789"
AUTH = (("authorization", "Bearer " + TOKEN),)
# The server's resident memory after the whole suite may exceed its idle size (measured after a
# warm-up that loads the built-in models) by at most this (docs/service.md, limits).  Measured:
# +2 to +6 MB alone, +26 MB once in a full ctest run, +42 MB once on the CI machine (live
# allocations scattered over pages that malloc_trim cannot give back); one of the 400 MB requests
# kept, or glibc's default thresholds (+90 MB), exceed it.
RSS_BOUND_MB = 64
INVALID = grpc.StatusCode.INVALID_ARGUMENT


def rss_mb(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024.0
    raise AssertionError("no VmRSS")


def start_server(directory, roadmaps):
    """A marionette-server on a free loopback port, its token in `directory`, its roadmaps in
    `roadmaps`: (process, "127.0.0.1:PORT", its log lines as they come)."""
    token_file = os.path.join(directory, "token")
    with open(token_file, "w") as f:
        f.write(TOKEN + "\n")
    proc = subprocess.Popen(
        [os.path.join(BUILD, "bin", "marionette-server"), "--listen", "127.0.0.1:0",
         "--workers", "2", "--token-file", token_file, "--roadmap-dir", roadmaps],
        stderr=subprocess.PIPE, text=True)
    line = proc.stderr.readline()
    port = re.search(r"\(port (\d+)\)", line)
    assert port, line
    log = []
    threading.Thread(target=lambda: log.extend(proc.stderr), daemon=True).start()
    return proc, "127.0.0.1:" + port.group(1), log


def largest_mappings(pid, count=8):
    """The process's `count` largest resident mappings, for a failure's message."""
    mappings, current = [], None
    with open(f"/proc/{pid}/smaps") as f:
        for line in f:
            fields = line.split()
            if re.match(r"^[0-9a-f]+-[0-9a-f]+$", fields[0]):
                current = [" ".join(fields[:1] + fields[5:]) or fields[0], 0]
                mappings.append(current)
            elif fields[0] == "Rss:" and current:
                current[1] = int(fields[1]) // 1024
    mappings.sort(key=lambda m: -m[1])
    return "; ".join(f"{name or 'anonymous'}: {mb} MB" for name, mb in mappings[:count])


def channel_to(target):
    return grpc.insecure_channel(target, options=[("grpc.max_send_message_length", -1),
                                                  ("grpc.max_receive_message_length", -1)])


class HostileClient(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="marionette-hostile-")
        cls.roadmaps = os.path.join(cls.dir, "roadmaps")
        os.mkdir(cls.roadmaps)
        cls.proc, cls.target, cls.log = start_server(cls.dir, cls.roadmaps)
        cls.channel = channel_to(cls.target)
        cls.stub = pb_grpc.PlannerStub(cls.channel)
        # Warm up: every built-in model and scene loaded once, a simulation and a plan run.
        cls.stub.ListModels(pb.ListModelsRequest(), metadata=AUTH, timeout=30)
        cls.stub.ListScenes(pb.ListScenesRequest(), metadata=AUTH, timeout=30)
        cls.simulate_ok()
        time.sleep(2.5)  # the server hands freed memory back once a second
        cls.idle_rss_mb = rss_mb(cls.proc.pid)

    @classmethod
    def tearDownClass(cls):
        cls.channel.close()
        cls.proc.send_signal(signal.SIGTERM)
        cls.proc.wait(timeout=30)

    @classmethod
    def simulate_ok(cls):
        r = pb.SimulateRequest(duration_s=0.2)
        r.model.name = "puppetcopter"
        r.scene.name = "table"
        reply = cls.stub.Simulate(r, metadata=AUTH, timeout=60)
        assert len(reply.samples) == 21, len(reply.samples)

    def refused(self, method, request, code=INVALID, contains=(), metadata=AUTH, timeout=60):
        """Calls `method`, expects `code` with a message containing each of `contains`."""
        with self.assertRaises(grpc.RpcError) as e:
            method(request, metadata=metadata, timeout=timeout)
        self.assertEqual(e.exception.code(), code, e.exception.details())
        for part in contains:
            self.assertIn(part, e.exception.details())
        self.assertLessEqual(len(e.exception.details()), 1024)
        self.assertNotIn(self.dir, e.exception.details())  # never a path of the server's
        return e.exception.details()

    def assert_healthy(self):
        self.assertIsNone(self.proc.poll(), "the server died")
        if os.environ.get("HOSTILE_RSS"):
            time.sleep(2.5)
            print(f"[rss {rss_mb(self.proc.pid):.0f} MB]", file=sys.stderr)
        health = self.channel.unary_unary("/grpc.health.v1.Health/Check",
                                          request_serializer=None, response_deserializer=None)
        self.assertEqual(health(b"", timeout=10), b"\x08\x01")  # SERVING, without the token
        self.simulate_ok()

    def inline_simulate(self, model_yaml=None, scene_yaml=None, **fields):
        r = pb.SimulateRequest(duration_s=0.1, **fields)
        if model_yaml is None:
            r.model.name = "planar-arm"
        else:
            r.model.yaml = model_yaml
        if scene_yaml is not None:
            r.scene.yaml = scene_yaml
        return r

    # ---- 1, 2: crashers ----------------------------------------------------------------------

    def test_01_models_and_scenes_that_crashed_the_server(self):
        self.refused(self.stub.Simulate, self.inline_simulate("name: x\n"),
                     contains=["dynamic: a model needs at least one dynamic variable"])
        with open(os.path.join(SRC, "models/builtin/planar-arm.yaml")) as f:
            text = f.read()
        lines = text.splitlines(keepends=True)
        for end in range(0, len(lines), 3):  # truncated models: refused or simulated
            try:
                self.stub.Simulate(self.inline_simulate("".join(lines[:end])), metadata=AUTH,
                                   timeout=60)
            except grpc.RpcError as e:
                self.assertIn(e.code(), (INVALID, grpc.StatusCode.ABORTED), e.details())
        for scene, message in [
                ("obstacles: [{name: a, box: {size: [0.1, 0.1, 0.1]}, "
                 "pose: {position: [1e200, 0, 0]}}]", "beyond the stage's range"),
                ("obstacles: [{name: a, mesh: {file: meshes/sofa.stl, scale: 1e200}}]",
                 "mesh scale must be between"),
                ("obstacles: [{name: a, box: {size: [1e300, 1e300, 1e300]}, "
                 "pose: {position: [1e300, 0, 0]}}]", "size must be between")]:
            self.refused(self.stub.Simulate, self.inline_simulate(scene_yaml=scene),
                         contains=["scene.yaml", message])
        self.assert_healthy()

    # ---- 3: files --------------------------------------------------------------------------

    def test_02_an_inline_models_name_never_becomes_a_path(self):
        with open(os.path.join(SRC, "models/builtin/planar-arm.yaml")) as f:
            text = f.read()
        evil = os.path.join(self.dir, "evil")
        named = text.replace("name: planar-arm", "name: ../../../../../.." + evil)
        r = pb.PlanRequest(planner="prm", time_limit_s=60)
        r.model.yaml = named
        r.goal.joints.values["theta1"] = 0.3
        r.goal.tolerance = 0.2
        self.stub.Plan(r, metadata=AUTH, timeout=120)
        self.assertEqual(glob.glob(evil + "*"), [])
        for name in os.listdir(self.roadmaps):
            self.assertRegex(name, r"^[0-9a-f]{32}\.roadmap(\.lock)?$")
        # A corrupted roadmap file, met by a restarted server: set aside, rebuilt and logged;
        # the request succeeds.
        (path,) = glob.glob(os.path.join(self.roadmaps, "*.roadmap"))
        with open(path, "r+b") as f:
            f.truncate(100)
        proc, target, log = start_server(self.dir, self.roadmaps)
        try:
            with channel_to(target) as channel:
                pb_grpc.PlannerStub(channel).Plan(r, metadata=AUTH, timeout=120)
        finally:
            proc.send_signal(signal.SIGTERM)
            self.assertEqual(proc.wait(timeout=30), 0)
        self.assertEqual(len(glob.glob(path + ".bad-*")), 1)
        events = [json.loads(line) for line in log if '"event": "roadmap"' in line]
        self.assertTrue(events and "set aside" in events[-1]["message"], log)

    # ---- 4-6: memory -----------------------------------------------------------------------

    def test_03_oversized_models_scenes_and_messages_are_refused_before_they_are_built(self):
        bodies = "".join(f"  - {{name: b{i}, parent: world, ry: q{i}}}\n" for i in range(10000))
        huge = "name: huge\ndynamic:\n" + "".join(f"  - {{name: q{i}}}\n" for i in range(10000))
        huge += "frames:\n" + bodies
        self.assertGreater(len(huge), 256 << 10)
        for call, request in [(self.stub.Simulate, self.inline_simulate(huge)),
                              (self.stub.DescribeModel, pb.DescribeModelRequest(
                                  model=pb.ModelRef(yaml=huge)))]:
            self.refused(call, request, contains=["model.yaml: ", "bytes; at most 262144"])
        many = "name: many\ndynamic:\n" + "".join(f"  - {{name: q{i}}}\n" for i in range(300))
        self.refused(self.stub.DescribeModel, pb.DescribeModelRequest(model=pb.ModelRef(yaml=many)),
                     contains=["dynamic: 300 entries; a model holds at most 256"])
        sofas = "obstacles:\n" + "".join(
            f"  - {{name: s{i}, mesh: {{file: meshes/sofa.stl}}, pose: {{position: [{i % 30}, "
            f"{i // 30}, 0]}}}}\n" for i in range(1000))
        self.refused(self.stub.Simulate, self.inline_simulate(scene_yaml=sofas),
                     contains=["the scene's mesh obstacles reach"])
        spheres = "obstacles:\n" + "".join(
            f"  - {{name: s{i}, sphere: {{radius: 0.1}}}}\n" for i in range(2000))
        self.refused(self.stub.Simulate, self.inline_simulate(scene_yaml=spheres),
                     contains=["2000 obstacles; a scene holds at most 1000"])
        # Scenes as large as allowed, five times: shared meshes, memory given back after.
        fit = "obstacles:\n" + "".join(
            f"  - {{name: s{i}, mesh: {{file: meshes/bookshelf.obj}}, pose: {{position: "
            f"[{i % 20 - 10}, {i // 20 + 3}, 0]}}}}\n" for i in range(300))
        for _ in range(5):
            self.stub.Simulate(self.inline_simulate(scene_yaml=fit), metadata=AUTH, timeout=120)
        # Four 400 MB requests at once, with the token and without: reset by gRPC's receive
        # quota (RESOURCE_EXHAUSTED) long before they are whole. A client still sending when
        # the server resets its stream may see the reset itself (UNAVAILABLE) before the
        # status; either way nothing is answered and the same server process stays healthy.
        codes = []

        def big(metadata):
            r = pb.DescribeModelRequest()
            r.model.yaml = "x" * 400_000_000
            try:
                self.stub.DescribeModel(r, metadata=metadata, timeout=120)
                codes.append(grpc.StatusCode.OK)
            except grpc.RpcError as e:
                codes.append(e.code())
        threads = [threading.Thread(target=big, args=(m,)) for m in (AUTH, AUTH, (), ())]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        self.assertEqual(len(codes), 4)
        for code in codes:
            self.assertIn(code, (grpc.StatusCode.RESOURCE_EXHAUSTED,
                                 grpc.StatusCode.UNAUTHENTICATED,
                                 grpc.StatusCode.UNAVAILABLE))
        self.assert_healthy()

    # ---- 8-15: errors ----------------------------------------------------------------------

    def test_04_every_bad_request_gets_its_status_naming_the_field(self):
        def plan(**fields):
            r = pb.PlanRequest(time_limit_s=5, **fields)
            r.model.name = "planar-arm"
            r.goal.joints.values["theta1"] = 0.3
            return r
        for planner, key, value in [("est", "goal_bias", "nan"), ("est", "goal_bias", "inf"),
                                    ("est", "goal_bias", "abc"), ("est", "goal_bias", "1e400"),
                                    ("est", "goal_bias", "2"), ("est", "goal_bias", "-1"),
                                    ("est", "range", "-1"), ("kpiece", "border_fraction", "5"),
                                    ("kpiece", "bad_score_factor", "0")]:
            r = plan(planner=planner)
            r.parameters[key] = value
            self.refused(self.stub.Plan, r, contains=[f'parameters["{key}"]'])
        # No rest pose at the start inputs: the same status from Plan and Simulate.
        r = plan()
        r.start.input_values["x"] = 0.0
        self.refused(self.stub.Plan, r, contains=["start: no rest pose"])
        s = self.inline_simulate()
        s.start.input_values["x"] = 0.0
        self.refused(self.stub.Simulate, s, contains=["start: no rest pose"])
        # Duplicate YAML keys name their line.
        with open(os.path.join(SRC, "models/builtin/planar-arm.yaml")) as f:
            text = f.read()
        self.refused(self.stub.Simulate, self.inline_simulate(text + "gravity: 1.0\n"),
                     contains=["duplicate key 'gravity'"])
        # Names beyond any gRPC metadata limit: INVALID_ARGUMENT, a short message.
        long_name = "n" * 9000
        self.refused(self.stub.DescribeModel,
                     pb.DescribeModelRequest(model=pb.ModelRef(name=long_name)),
                     contains=["model.name: 9000 bytes; at most 256"])
        r = plan(planner=long_name)
        self.refused(self.stub.Plan, r, contains=["planner: 9000 bytes"])
        r = plan()
        r.parameters[long_name] = "1"
        self.refused(self.stub.Plan, r, contains=["9000 bytes"])
        # Bytes that are no request: INVALID_ARGUMENT, and the log stays JSON.
        raw = self.channel.unary_unary("/marionette.v1.Planner/Plan", request_serializer=None,
                                       response_deserializer=None)
        self.refused(raw, b"\xff\xff\xff\xff\x0f", contains=["not a valid protobuf message"])
        self.refused(raw, b"\x0a\x03\x0a\x01\xff", contains=["not a valid protobuf message"])
        self.assert_healthy()
        time.sleep(0.2)
        for line in list(self.log):
            if line.startswith("{"):
                json.loads(line)
            else:
                self.assertRegex(line, r"^marionette-server: ")  # its own start/stop lines

    def test_05_authorization(self):
        reflection = self.channel.stream_stream(
            "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo",
            request_serializer=None, response_deserializer=None)
        with self.assertRaises(grpc.RpcError) as e:
            list(reflection(iter([b"\x3a\x00"]), timeout=10))
        self.assertEqual(e.exception.code(), grpc.StatusCode.UNAUTHENTICATED)
        # A refused stream kept open does not hold a server thread: cancelled within seconds.
        release = threading.Event()
        def held_open():
            yield b"\x3a\x00"
            release.wait(30)
        t0 = time.monotonic()
        with self.assertRaises(grpc.RpcError) as e:
            list(reflection(held_open(), timeout=20))
        release.set()
        self.assertEqual(e.exception.code(), grpc.StatusCode.CANCELLED)
        self.assertLess(time.monotonic() - t0, 10)
        replies = list(reflection(iter([b"\x3a\x00"]), metadata=AUTH, timeout=10))
        self.assertIn(b"marionette.v1.Planner", replies[0])
        self.refused(self.stub.ListModels, pb.ListModelsRequest(),
                     code=grpc.StatusCode.UNAUTHENTICATED, metadata=AUTH + AUTH,
                     contains=["give the 'authorization' header once"])
        self.refused(self.stub.ListModels, pb.ListModelsRequest(),
                     code=grpc.StatusCode.UNAUTHENTICATED, metadata=())

    def test_06_a_csv_gives_the_same_answer_in_process_and_remotely(self):
        csv = os.path.join(self.dir, "late.csv")
        with open(csv, "w") as f:
            f.write("\ufefft,x\n0.5,0.3\n1.0,0.35\n")
        token_file = os.path.join(self.dir, "token")
        cli = [os.path.join(BUILD, "bin", "marionette"), "simulate", "--model", "planar-arm",
               "--inputs", csv, "--duration", "1.2"]
        local = subprocess.run(cli, capture_output=True, text=True, timeout=120)
        remote = subprocess.run(cli + ["--server", self.target, "--token-file", token_file],
                                capture_output=True, text=True, timeout=120)
        self.assertEqual(local.returncode, 0, local.stderr)
        self.assertEqual(remote.returncode, 0, remote.stderr)
        self.assertEqual(local.stdout, remote.stdout)

    # ---- Work a request asks for, and clients that hold on -------------------------

    def handler_ms(self, method, after):
        """The duration of the first `method` call logged after log line `after`."""
        for _ in range(500):
            for line in self.log[after:]:
                if line.startswith("{") and f'"method": "{method}"' in line:
                    return json.loads(line)["duration_ms"]
            time.sleep(0.01)
        raise AssertionError(f"no {method} in the log")

    def perform(self, clips, **fields):
        r = pb.PerformRequest(**fields)
        r.model.name = "puppetcopter"
        for fmt, text in clips:
            c = r.clips.add()
            c.format = fmt
            c.text = text
        return r

    def test_07_a_performance_asks_for_bounded_work_and_lets_go_at_its_deadline(self):
        keyframes = pb.PerformanceClip.FORMAT_KEYFRAMES
        hour = ("keyframes:\n  - {t: 0, points: {hand_r: {offset: [0, 0, 0]}}}\n"
                "  - {t: 3600, points: {hand_r: {offset: [0.01, 0, 0]}}}\n")
        tiny = ("keyframes:\n  - {t: 0, points: {hand_r: {offset: [0, 0, 0]}}}\n"
                "  - {t: 0.1, points: {hand_r: {offset: [0.01, 0, 0]}}}\n")
        # Refused up front, in well under a second each (they held a worker for minutes).
        for request, contains in [
                (self.perform([(keyframes, hour)] * 2), "clips[0..1] together last 7201 s"),
                (self.perform([(keyframes, tiny)] * 4096), "together last"),
                (self.perform([(keyframes, tiny)], blend_s=-1), "blend_s"),
                (self.perform([(keyframes, tiny)], blend_s=1e308), "blend_s")]:
            t0 = time.monotonic()
            self.refused(lambda r, **kw: list(self.stub.Perform(r, **kw)), request,
                         contains=[contains])
            self.assertLess(time.monotonic() - t0, 5)
        # Within the bounds but long (a BVH of no channels and 64,000 frames: 533 s; a 2,000-
        # frame CSV looped 1,000 times): stopped at the deadline, the worker let go within 400 ms
        # (measured +2 to +21 ms run alone; +176 and +262 ms a few times in the whole suite).
        joints = "".join(
            f"JOINT {name}\n{{\n OFFSET {offset}\n CHANNELS 0\n JOINT {child}\n {{\n"
            f"  OFFSET 0 -0.5 0\n  CHANNELS 0\n  End Site\n  {{\n   OFFSET 0 -0.1 0\n  }}\n"
            f" }}\n}}\n"
            for name, child, offset in [("LeftHip", "LeftAnkle", "0.1 0 0"),
                                        ("RightHip", "RightAnkle", "-0.1 0 0"),
                                        ("LeftShoulder", "LeftWrist", "0.2 0.5 0"),
                                        ("RightShoulder", "RightWrist", "-0.2 0.5 0")])
        head = ("JOINT Head\n{\n OFFSET 0 0.6 0\n CHANNELS 0\n End Site\n {\n  OFFSET 0 0.1 0\n"
                " }\n}\n")
        bvh = ("HIERARCHY\nROOT Hips\n{\n OFFSET 0 1 0\n CHANNELS 0\n" + joints + head +
               "}\nMOTION\nFrames: 64000\nFrame Time: 0.0083333\n")
        rows = "".join(f"{i / 20000:.5f},0.1,0.2,0.5\n" for i in range(2000))
        for request in [self.perform([(pb.PerformanceClip.FORMAT_BVH, bvh)]),
                        self.perform([(pb.PerformanceClip.FORMAT_MARKERS,
                                       "t,hand_r_x,hand_r_y,hand_r_z\n" + rows)],
                                     loop=1000, blend_s=0.05)]:
            after = len(self.log)
            self.refused(lambda r, **kw: list(self.stub.Perform(r, **kw)), request,
                         code=grpc.StatusCode.DEADLINE_EXCEEDED, timeout=3)
            self.assertLessEqual(self.handler_ms("Perform", after), 3400)
        self.assert_healthy()

    def test_08_clients_that_never_read_hold_no_worker(self):
        sys.path.insert(0, os.path.join(SRC, "tests", "support"))
        import raw_http2
        request = pb.PlanRequest(planner="est", seed=3, time_limit_s=10)
        request.model.name = "planar-arm"
        request.goal.joints.values["theta1"] = 0.3
        request.goal.tolerance = 0.1
        after = len(self.log)
        # Two streams whose clients set their window to 0 and never read: as many as workers.
        stalled = [raw_http2.open_call(self.target, "/marionette.v1.Planner/PlanStream",
                                       request.SerializeToString(),
                                       metadata=(("authorization", "Bearer " + TOKEN),))
                   for _ in range(2)]
        try:
            time.sleep(2)
            # Both workers are free: their plans are done, their results wait on the clients.
            for _ in range(2):
                reply = self.stub.Plan(request, metadata=AUTH, timeout=10)
                self.assertEqual(reply.outcome, pb.OUTCOME_EXACT)
            self.assert_healthy()
            # Each stalled call ends kMaxUnreadStream (10 s) after its result was ready.
            ended = []
            for _ in range(200):
                ended = [json.loads(line) for line in self.log[after:]
                         if '"method": "PlanStream"' in line]
                if len(ended) == 2:
                    break
                time.sleep(0.1)
            self.assertEqual(len(ended), 2, self.log[after:])
            for call in ended:
                self.assertEqual(call["status"], "DEADLINE_EXCEEDED")
                self.assertIn("did not read the result within 10 s", call["message"])
                self.assertLess(call["duration_ms"], 15000)
        finally:
            for sock in stalled:
                sock.close()

    def test_09_a_roadmap_folder_turned_against_the_servers(self):
        prm = pb.PlanRequest(planner="prm", seed=1, time_limit_s=60)
        prm.model.name = "planar-arm"
        prm.goal.joints.values["theta1"] = 0.3
        prm.goal.tolerance = 0.1
        self.stub.Plan(prm, metadata=AUTH, timeout=60)
        # Its file: the one the query just wrote its verdicts to.
        roadmap = max(glob.glob(os.path.join(self.roadmaps, "*.roadmap")), key=os.path.getmtime)
        outside = os.path.join(self.dir, "outside")
        os.mkdir(outside)
        target = os.path.join(outside, "created-by-the-server")
        def sparse_gigabyte():
            with open(roadmap, "w"):
                pass
            os.truncate(roadmap, 1 << 30)

        plants = [
            ("a FIFO", lambda: os.mkfifo(roadmap)),
            ("a link to /dev/zero", lambda: os.symlink("/dev/zero", roadmap)),
            ("a link to /etc/passwd", lambda: os.symlink("/etc/passwd", roadmap)),
            ("a sparse gigabyte", sparse_gigabyte),
            ("a lock linked outside", lambda: (os.remove(roadmap + ".lock"),
                                               os.symlink(target, roadmap + ".lock"))),
        ]
        for what, plant in plants:
            with self.subTest(what):
                if os.path.lexists(roadmap):
                    os.remove(roadmap)
                plant()
                # Another server on the same folder: its first prm request meets the file.
                other_dir = tempfile.mkdtemp(prefix="marionette-hostile-other-")
                proc, target_addr, log = start_server(other_dir, self.roadmaps)
                try:
                    with channel_to(target_addr) as channel:
                        t0 = time.monotonic()
                        reply = pb_grpc.PlannerStub(channel).Plan(prm, metadata=AUTH, timeout=30)
                        self.assertLess(time.monotonic() - t0, 15)
                        self.assertEqual(reply.outcome, pb.OUTCOME_EXACT)
                    self.assertFalse(os.path.lexists(target), "a file made outside the folder")
                    self.assertTrue(any('"event": "roadmap"' in line and "set aside" in line
                                        for line in log), log)
                finally:
                    t0 = time.monotonic()
                    proc.send_signal(signal.SIGTERM)
                    self.assertEqual(proc.wait(timeout=30), 0)
                    self.assertLess(time.monotonic() - t0, 10)
        # The folder holds regular files again, and this server still plans from it.
        self.assertTrue(os.path.isfile(roadmap) and not os.path.islink(roadmap))
        self.assertTrue(os.path.isfile(roadmap + ".lock") and not os.path.islink(roadmap + ".lock"))
        self.stub.Plan(prm, metadata=AUTH, timeout=60)
        self.assert_healthy()

    # ---- 10, 11: contact-rich scenes and slow inputs --------------------------------------------

    def test_10_a_contact_rich_scene_asks_for_bounded_work(self):
        def planes(count, offset):
            return "name: stacked\nobstacles:\n" + "".join(
                f"  - {{name: p{i}, plane: {{normal: [0, 0, 1], offset: {offset(i)}}}, "
                f"contact: true}}\n" for i in range(count))
        # 1,000 stacked planes (an 80 KB scene: 17 s and 3.3 GB a call, then SIGSEGV in the
        # LCP): refused at once, naming the 65th obstacle the puppet may touch.
        t0 = time.monotonic()
        request = self.inline_simulate(scene_yaml=planes(1000, lambda i: 0.001 * i))
        request.model.name = "puppetcopter"
        self.refused(self.stub.Simulate, request,
                     contains=["scene.yaml:", "obstacles[64].contact", "at most 64"])
        self.assertLess(time.monotonic() - t0, 5)
        # The most a scene may hold, all where the puppet hangs: an answer or the deadline, the
        # worker let go with it.
        request = self.inline_simulate(scene_yaml=planes(64, lambda i: 0.2))
        request.model.name = "puppetcopter"
        after = len(self.log)
        try:
            self.stub.Simulate(request, metadata=AUTH, timeout=5)
        except grpc.RpcError as e:
            self.assertIn(e.code(), (INVALID, grpc.StatusCode.DEADLINE_EXCEEDED), e.details())
        self.assertLessEqual(self.handler_ms("Simulate", after), 5400)
        self.assert_healthy()

    def test_11_slow_inputs_ask_for_bounded_work(self):
        with open(os.path.join(SRC, "models", "builtin", "planar-arm.yaml")) as f:
            arm = f.read()
        def slow(speed):
            return arm.replace("max_speed: 0.5", f"max_speed: {speed}")
        prm = pb.PlanRequest(planner="prm", seed=1, time_limit_s=60)
        prm.goal.joints.values["theta1"] = 0.3
        prm.goal.tolerance = 0.1
        # A 1 mm/s winch and slower: hour-long moves (both workers pinned for 40 s, 1 GB in the
        # optimizer, `optimize` out of memory): refused at load, naming the limit.
        for speed in ("1e-6", "1e-5", "1e-3"):
            with self.subTest(speed=speed):
                prm.model.yaml = slow(speed)
                t0 = time.monotonic()
                self.refused(self.stub.Plan, prm,
                             contains=["model.yaml:", "kinematic[0].max_speed", "at most 600 s"])
                self.assertLess(time.monotonic() - t0, 5)
        # The slowest legal limits (x crosses its range in 586 s): the roadmap and the optimizer
        # stop at the deadline and let the worker go.
        prm.model.yaml = slow("0.0032")
        after = len(self.log)
        try:
            self.stub.Plan(prm, metadata=AUTH, timeout=10)
        except grpc.RpcError as e:
            self.assertEqual(e.code(), grpc.StatusCode.DEADLINE_EXCEEDED, e.details())
        self.assertLessEqual(self.handler_ms("Plan", after), 10400)
        self.assert_healthy()

    def test_99_memory_returns_within_its_bound(self):
        self.assert_healthy()
        # Memory is handed back once a second, after the calls still finishing (a loaded machine
        # finishes them later): it must be back within the bound in 15 s.
        t0 = time.monotonic()
        while True:
            time.sleep(1)
            after = rss_mb(self.proc.pid)
            if after <= self.idle_rss_mb + RSS_BOUND_MB or time.monotonic() - t0 > 15:
                break
        print(f"\nserver RSS: idle {self.idle_rss_mb:.0f} MB, after the hostile suite "
              f"{after:.0f} MB after {time.monotonic() - t0:.0f} s (bound: idle + "
              f"{RSS_BOUND_MB} MB)", file=sys.stderr)
        self.assertLessEqual(after, self.idle_rss_mb + RSS_BOUND_MB,
                             largest_mappings(self.proc.pid))


if __name__ == "__main__":
    BUILD, SRC = sys.argv[1], sys.argv[2]
    unittest.main(argv=sys.argv[:1], verbosity=2)
