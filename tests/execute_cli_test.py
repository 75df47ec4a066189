#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""`marionette execute` as an operator runs it: plan then execute on the simulated rig, a plan
refused before anything reaches a (UDP) rig, SIGINT mid-performance, bad options; calibration at
rest (`marionette calibrate`, `execute --calibrate`).
Usage: execute_cli_test.py PATH/TO/marionette"""
import csv
import json
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import unittest

BIN = None


def run(*args, timeout=120):
    return subprocess.run([BIN, *args], capture_output=True, text=True, timeout=timeout)


def check_performed(test, p):
    """A `perform` whose plan a test executes: written, a show (exit 0) or not (exit 4, its
    headline saying why); what makes a show is perform's own test's subject, not these."""
    test.assertIn(p.returncode, (0, 4), p.stdout + p.stderr)
    if p.returncode == 4:
        test.assertIn(": approximate -- ", p.stdout)


def crc16(text):
    crc = 0xFFFF
    for ch in text.encode():
        crc ^= ch << 8
        for _ in range(8):
            crc = ((crc << 1) ^ 0x1021) & 0xFFFF if crc & 0x8000 else (crc << 1) & 0xFFFF
    return crc


def frame(body):
    return f"${body}*{crc16(body):04X}\n"


class UdpRig:
    """A rig written from PROTOCOL.md alone: answers GET with `pos` (by default the planar arm's
    default setpoints, in mm and spool rad), ACKs SETs and HOLDs, and keeps every frame's type
    and SEQ in arrival order. The ACK of SEQ `corrupt_ack` goes out with a wrong checksum; the
    SET with SEQ `nak` is refused (`NAK,SEQ,range`)."""

    def __init__(self, pos="0:300:mm,1:22.5:rad", corrupt_ack=None, silent=False, nak=None):
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.settimeout(0.05)
        self.port = self.sock.getsockname()[1]
        self.pos = pos
        self.corrupt_ack = corrupt_ack
        self.silent = silent  # answers nothing
        self.nak = nak
        self.sets = []
        self.frames = []
        self.done = False
        self.thread = threading.Thread(target=self.serve, daemon=True)
        self.thread.start()

    def serve(self):
        # After close(), still reads what is already on its way (the HOLD a stopping host sends
        # last), until the socket stays quiet for a timeout.
        while True:
            try:
                data, peer = self.sock.recvfrom(2048)
            except socket.timeout:
                if self.done:
                    break
                continue
            body, _, crc = data.decode().strip()[1:].partition("*")
            assert int(crc, 16) == crc16(body), data
            kind, seq = body.split(",")[:2]
            self.frames.append((kind, int(seq)))
            if self.silent:
                continue
            if kind == "GET":
                self.sock.sendto(frame(f"POS,{seq},{self.pos}").encode(), peer)
            elif kind in ("SET", "HOLD"):
                if kind == "SET":
                    self.sets.append(body)
                if kind == "SET" and int(seq) == self.nak:
                    self.sock.sendto(frame(f"NAK,{seq},range").encode(), peer)
                elif int(seq) == self.corrupt_ack:
                    self.sock.sendto(f"$ACK,{seq}*0000\n".encode(), peer)
                else:
                    self.sock.sendto(frame(f"ACK,{seq}").encode(), peer)

    def close(self):
        self.done = True
        self.thread.join()
        self.sock.close()


class Execute(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.tmp = self.dir.name

    def tearDown(self):
        self.dir.cleanup()

    def path(self, name):
        return os.path.join(self.tmp, name)

    def execute_as_predicted(self, plan, *more):
        """Executes `plan` on the simulated rig on its simulated clock (no tick missed on any load)
        and checks the puppet followed the plan's predicted states."""
        p = run("execute", "--plan", plan, "--rig", "sim:?clock=simulated", *more)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertIn("on the simulated clock; missed ticks 0", p.stdout)
        dev = re.search(r"predicted states within (\S+)", p.stdout)
        self.assertIsNotNone(dev, p.stdout)
        self.assertLess(float(dev.group(1)), 1e-8, plan)
        return p

    def test_plan_then_execute_on_the_simulated_rig(self):
        p = run("plan", "--model", "planar-arm", "--goal", "q:theta1=0.3;tol=0.05", "--seed", "1",
                "--out", self.path("plan.json"), "--quiet")
        self.assertEqual(p.returncode, 0, p.stderr)
        p = self.execute_as_predicted(self.path("plan.json"), "--log", self.path("log.csv"))
        m = re.search(r"sent (\d+) frames", p.stdout)
        self.assertIsNotNone(m, p.stdout)
        frames = int(m.group(1))
        with open(self.path("log.csv")) as f:
            rows = list(csv.reader(f))
        self.assertEqual(rows[0][:8], ["event", "seq", "phase", "sample", "deadline_s", "time_s",
                                       "late_ms", "rtt_ms"])
        sent = [r for r in rows if r[0] == "sent"]
        self.assertEqual(len(sent), frames)
        self.assertEqual([int(r[1]) for r in sent], list(range(1, frames + 1)))
        # Deadlines 20 ms apart, never drifting.
        for i, r in enumerate(sent):
            self.assertAlmostEqual(float(r[4]), i * 0.02, places=5)

    def test_a_performance_plays_on_the_simulated_rig_as_predicted(self):
        # PuppetCopter's right hand raised and lowered (the kinematic step), the suspended mass
        # swayed (the dynamics step): the simulated puppet follows each plan's predicted states.
        with open(self.path("raise.yaml"), "w") as f:
            f.write("keyframes:\n  - {t: 0, points: {hand_r: {offset: [0, 0, 0]}}}\n"
                    "  - {t: 1.5, points: {hand_r: {offset: [0.03, -0.05, 0.12]}}}\n"
                    "  - {t: 3, points: {hand_r: {offset: [0, 0, 0]}}}\n")
        with open(self.path("sway.csv"), "w") as f:
            f.write("t,mass_x,mass_y,mass_z\n0,0,0,0.5\n1,0.05,0,0.5\n2,0,0,0.5\n")
        for name, args in (("raise", ["--model", "puppetcopter", "--keyframes",
                                      self.path("raise.yaml"), "--kinematic-only",
                                      "--tolerance", "0.03"]),
                           ("sway", ["--model", "suspended-mass", "--markers",
                                     self.path("sway.csv")])):
            plan = self.path(name + ".json")
            p = run("perform", *args, "--out", plan, "--quiet")
            check_performed(self, p)
            p = self.execute_as_predicted(plan)
            samples = len(json.load(open(plan))["inputs"]["samples"])
            self.assertIn(f"over {samples} samples", p.stdout)

    def sway_plan(self):
        """The suspended mass swayed 5 cm and back in 2 s (a dynamic performance): its plan."""
        with open(self.path("sway.csv"), "w") as f:
            f.write("t,mass_x,mass_y,mass_z\n0,0,0,0.5\n1,0.05,0,0.5\n2,0,0,0.5\n")
        plan = self.path("sway.json")
        p = run("perform", "--model", "suspended-mass", "--markers", self.path("sway.csv"),
                "--out", plan, "--quiet")
        check_performed(self, p)
        return plan

    def test_every_pass_of_a_loop_is_compared_and_reported(self):
        # The suspended mass swayed, played twice: each pass is compared with the plan's
        # predicted states (the first exactly; the second starts from whatever the way back
        # left), and the report has both and the run over both.
        plan = self.sway_plan()
        with open(plan) as f:
            samples = len(json.load(f)["inputs"]["samples"])
        out = self.path("report.json")
        p = run("execute", "--plan", plan, "--rig", "sim:?clock=simulated", "--loops", "2",
                "--report", out)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        passes = re.search(r"within \S+ \(m or rad, max over (\d+) samples\) in each of 2 "
                           r"passes: (\S+) (\S+)", p.stdout)
        self.assertIsNotNone(passes, p.stdout)
        self.assertEqual(int(passes.group(1)), samples)
        self.assertLess(float(passes.group(2)), 1e-8)
        self.assertIn("completed 2 loop(s)", p.stdout)
        with open(out) as f:
            report = json.load(f)
        self.assertEqual(report["samples"], 2 * samples)
        self.assertEqual([r["samples"] for r in report["passes"]], [samples, samples])
        first, second = (r["joints_rms_rad"] for r in report["passes"])
        self.assertLess(first, 1e-8)
        self.assertAlmostEqual(report["joints_rms_rad"], ((first ** 2 + second ** 2) / 2) ** 0.5,
                               places=6)
        self.assertEqual(set(report["passes"][1]["points"]), set(report["points"]))

    def test_a_plan_whose_dynamics_differ_at_another_speed_is_refused_there(self):
        # The sway at half speed swings the mass otherwise (2.4 cm from the plan's motion, over
        # twice the 1 cm tolerance): refused naming the flag, the point and the way to plan it; at
        # 0.9 it stays within 1 cm and plays.
        plan = self.sway_plan()
        p = run("execute", "--plan", plan, "--rig", "sim:", "--rate-scale", "0.5")
        self.assertEqual(p.returncode, 2, p.stdout + p.stderr)
        for needle in ("--rate-scale 0.5", "mass would be", "perform --speed 0.5",
                       "nothing was sent"):
            self.assertIn(needle, p.stderr)
        self.assertNotIn("frames", p.stdout)
        deviation = float(re.search(r"would be (\S+) m", p.stderr).group(1))
        self.assertGreater(deviation, 0.02)
        p = run("execute", "--plan", plan, "--rig", "sim:", "--rate-scale", "0.9")
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        within = float(re.search(r"every named point within (\S+) m", p.stdout).group(1))
        self.assertLess(within, 0.01)
        self.assertIn("completed 1 loop(s)", p.stdout)

    def execute_on_udp(self, rig, xs, *more):
        """Plays planar-arm inputs (x from `xs`, L = 0.45, 50 Hz) on `rig` over UDP, with a rig
        file in mm and spool radians; closes the rig."""
        with open(self.path("inputs.csv"), "w") as f:
            f.write("t,x,L\n")
            for i, x in enumerate(xs):
                f.write(f"{i * 0.02},{x},0.45\n")
        with open(self.path("rig.yaml"), "w") as f:
            f.write("rig: test\nchannels:\n  x: {channel: 0, scale: 1000, unit: mm}\n"
                    "  L: {channel: 1, scale: 50, unit: rad}\n")
        try:
            return run("execute", "--inputs", self.path("inputs.csv"), "--model", "planar-arm",
                       "--rig", f"udp:127.0.0.1:{rig.port}", "--rig-config",
                       self.path("rig.yaml"), *more)
        finally:
            rig.close()

    def test_a_plan_beyond_a_speed_limit_is_refused_before_anything_is_sent(self):
        rig = UdpRig()
        p = self.execute_on_udp(rig, [0.30 if i <= 10 else 0.32 for i in range(51)])
        self.assertEqual(p.returncode, 2, p.stdout + p.stderr)
        self.assertIn("refused, nothing was sent", p.stderr)
        self.assertIn("x: speed 1 > max_speed 0.5 at play sample 11", p.stderr)
        self.assertEqual(rig.sets, [])

    def test_a_plan_within_the_limits_at_its_rate_stays_within_them_at_any_send_rate(self):
        # x at 50 Hz, its acceleration switching between +4 and -4 m/s^2 (its limit) every
        # sample: linear interpolation to 100 Hz made corners of 8 m/s^2.
        xs, x, v = [], 0.30, 0.0
        for a in [0.0] * 2 + [4.0] * 6 + [-4.0, 4.0] * 5 + [-4.0] * 12 + [4.0] * 6 + [0.0] * 2:
            xs.append(x)
            v += a * 0.02
            x += v * 0.02
        with open(self.path("corners.csv"), "w") as f:
            f.write("t,x,L\n")
            for i, x in enumerate(xs):
                f.write(f"{i * 0.02:.2f},{x!r},0.45\n")
        for rate in ("50", "100", "200", "33"):
            p = run("execute", "--inputs", self.path("corners.csv"), "--model", "planar-arm",
                    "--send-rate", rate, "--dry-run")
            self.assertEqual(p.returncode, 0, rate + " Hz: " + p.stdout + p.stderr)
        p = run("execute", "--inputs", self.path("corners.csv"), "--model", "planar-arm",
                "--send-rate", "100", "--rate-scale", "1.5", "--dry-run")
        self.assertEqual(p.returncode, 2, p.stdout + p.stderr)  # faster: the limits do not hold
        self.assertIn("max_accel 4", p.stderr)

    def test_frames_are_numbered_in_send_order_and_a_rig_already_there_gets_no_ramp(self):
        # The rig reports the first row through its units (mm, spool rad) off by ~1e-8 m: within
        # the stated tolerance (1e-6 m or rad), so the performance starts at once, no ramp.
        rig = UdpRig(pos="0:300.00001:mm,1:22.4999995:rad", corrupt_ack=5)
        p = self.execute_on_udp(rig, [0.30] * 26, "--log", self.path("log.csv"))
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        # GET is frame 1; then every SET, numbered on: 1, 2, 3, ... in the order sent.
        self.assertEqual(rig.frames[0], ("GET", 1))
        self.assertEqual([seq for _, seq in rig.frames], list(range(1, len(rig.frames) + 1)))
        with open(self.path("log.csv")) as f:
            rows = list(csv.reader(f))
        sent = [r for r in rows if r[0] == "sent"]
        self.assertEqual({r[2] for r in sent}, {"play"})  # no ramp, no settle
        self.assertEqual(len(sent), len(rig.sets))
        # The corrupt ACK is logged with the SEQ it still shows (and acknowledges nothing).
        self.assertIn("5", [r[1] for r in rows if r[0] == "ack-corrupt"])
        self.assertIn("5", [r[1] for r in rows if r[0] == "ack-lost"])

    def test_a_nak_stops_the_stream_before_the_next_frame_and_rtt_is_the_round_trip(self):
        # Replies are read as they arrive: the NAK of SET 21 (answered at once) is seen before
        # the next tick, so the next frame is HOLD 22, and the rig holds SET 20's setpoints.
        rig = UdpRig(nak=21)
        p = self.execute_on_udp(rig, [0.30 + 0.0001 * i for i in range(50)],
                                "--log", self.path("log.csv"))
        self.assertEqual(p.returncode, 4, p.stdout + p.stderr)
        self.assertIn("refused frame 21 (range)", p.stderr)
        with open(self.path("log.csv")) as f:
            rows = list(csv.reader(f))
        sent_21 = next(r for r in rows if r[0] == "sent" and r[1] == "21")
        nak = next(r for r in rows if r[0] == "nak")
        self.assertEqual(nak[1], "21")
        # A NAK read before the next tick's deadline stops the stream before the next frame.
        # (The rig answers at once; only a machine too loaded to run its thread for a whole
        # period could make the NAK late, and then a SET 22 before the HOLD is right.)
        if float(nak[5]) < float(sent_21[4]) + 0.02:
            self.assertEqual(rig.frames[-2:], [("SET", 21), ("HOLD", 22)])
            self.assertIn("the rig holds the setpoints of the frame before it (seq 20)", p.stderr)
            self.assertRegex(p.stderr, r"holding x=0\.3018 L=0\.45\b")  # row 18 (SET 20)
        # The round trip on loopback takes well under a millisecond; read only at the next tick
        # it showed as the period (20 ms) every time.
        rtts = sorted(float(r[7]) for r in rows if r[0] in ("ack", "nak") and r[7])
        self.assertGreaterEqual(len(rtts), 19)
        self.assertLess(rtts[len(rtts) // 2], 10.0, rtts)

    def test_a_rig_that_does_not_answer_get_gets_three_and_nothing_else(self):
        # PROTOCOL.md: up to 3 GETs, each a new frame, 0.3 s each; then exit 4, nothing sent and
        # no command log written.
        rig = UdpRig(silent=True)
        t0 = time.monotonic()
        p = self.execute_on_udp(rig, [0.30] * 5, "--log", self.path("log.csv"))
        self.assertEqual(p.returncode, 4, p.stdout + p.stderr)
        self.assertGreaterEqual(time.monotonic() - t0, 0.9)
        self.assertIn("did not answer GET (3 tries, 0.3 s each); nothing was sent", p.stderr)
        self.assertEqual(rig.frames, [("GET", 1), ("GET", 2), ("GET", 3)])
        self.assertFalse(os.path.exists(self.path("log.csv")))

    def test_sigint_stops_a_looping_performance_holding_the_last_setpoints(self):
        p = run("plan", "--model", "planar-arm", "--goal", "q:theta1=0.3;tol=0.05", "--seed", "1",
                "--out", self.path("plan.json"), "--quiet")
        self.assertEqual(p.returncode, 0, p.stderr)
        proc = subprocess.Popen([BIN, "execute", "--plan", self.path("plan.json"), "--rig", "sim:",
                                 "--loop", "--log", self.path("log.csv")],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        time.sleep(1.5)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=30)
        self.assertEqual(proc.returncode, 3, out + err)
        self.assertIn("stopped on request", err)
        self.assertRegex(err, r"holding x=\S+ L=\S+")
        with open(self.path("log.csv")) as f:
            rows = list(csv.reader(f))
        self.assertEqual(rows[-1][0], "stop")
        self.assertGreater(len([r for r in rows if r[0] == "sent"]), 40)

    def test_bad_options_name_what_is_wrong(self):
        p = run("plan", "--model", "planar-arm", "--goal", "q:theta1=0.3;tol=0.05", "--seed", "1",
                "--out", self.path("plan.json"), "--quiet")
        plan = self.path("plan.json")
        cases = [
            (["--plan", plan, "--rig", "serial:/dev/null"], "--rig-config"),
            (["--plan", plan, "--rig", "sim:", "--hold", "theta1"], "--hold: 'theta1'"),
            (["--plan", plan, "--rig", "sim:", "--rate-scale", "0"], "--rate-scale"),
            (["--plan", plan, "--rig", "tcp:1.2.3.4"], "unknown rig"),
            (["--plan", plan], "--rig"),
            (["--plan", plan, "--model", "arm3d", "--rig", "sim:"], "the plan is for 'planar-arm'"),
            (["--plan", self.path("missing.json"), "--rig", "sim:"], "missing.json"),
        ]
        for args, fragment in cases:
            p = run("execute", *args)
            self.assertEqual(p.returncode, 2, f"{args}: {p.stdout} {p.stderr}")
            self.assertIn(fragment, p.stderr, args)
        p = run("execute", "--plan", plan, "--dry-run")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("dry run: nothing was sent", p.stdout)

    def test_a_dry_run_re_simulates_the_plan_on_its_stage_touching_the_floor(self):
        # suspended-mass over a floor raised to 10 cm, which its longest string would hang the
        # mass 7 cm through: the plan sets the mass down on the floor.  The dry run re-simulates
        # the stream there, the floor bearing the mass: no collision.  On a stage of that name
        # with a block where the mass lands, it is refused, naming the pair.
        floor = "name: raised-floor\nobstacles:\n" \
                "  - {name: floor, plane: {normal: [0, 0, 1], offset: 0.1}}\n"
        with open(self.path("raised.yaml"), "w") as f:
            f.write(floor)
        with open(self.path("blocked.yaml"), "w") as f:
            f.write(floor + "  - {name: block, box: {size: [0.1, 0.1, 0.04]}, "
                            "pose: {position: [0.3, 0, 0.12]}}\n")
        plan = self.path("down.json")
        p = run("plan", "--model", "suspended-mass", "--scene", self.path("raised.yaml"),
                "--goal", "point:mass=0.3,0,0.12;radius=0.01;at-rest", "--planner", "kpiece",
                "--seed", "2", "--max-propagations", "400000", "--time-limit", "600", "--raw",
                "--quiet", "--out", plan, timeout=600)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(json.load(open(plan))["outcome"], "exact")
        p = run("execute", "--plan", plan, "--dry-run")
        self.assertEqual(p.returncode, 2, p.stdout + p.stderr)
        self.assertIn("--scene: the plan's scene 'raised-floor' is not a built-in one", p.stderr)
        p = run("execute", "--plan", plan, "--scene", "table", "--dry-run")
        self.assertEqual(p.returncode, 2, p.stdout + p.stderr)
        self.assertIn("the plan's is 'raised-floor'", p.stderr)
        p = run("execute", "--plan", plan, "--scene", self.path("raised.yaml"), "--dry-run")
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertIn("re-simulated on raised-floor", p.stdout)
        self.assertIn("no collision", p.stdout)
        self.assertIn("touching 1 pair(s): floor/mass", p.stdout)
        self.assertIn("dry run: nothing was sent", p.stdout)
        p = run("execute", "--plan", plan, "--scene", self.path("blocked.yaml"), "--dry-run")
        self.assertEqual(p.returncode, 2, p.stdout + p.stderr)
        self.assertIn("refused, nothing was sent", p.stderr)
        self.assertRegex(p.stderr, r"collides at t=[0-9.]+ s \(.*'block'")

    def test_feedback_needs_a_measuring_rig_and_its_options_name_the_flag(self):
        p = run("plan", "--model", "planar-arm", "--goal", "q:theta1=0.3;tol=0.05", "--seed", "1",
                "--out", self.path("plan.json"), "--quiet")
        plan = self.path("plan.json")
        measuring = "sim:?noise=0.002&rate=50"
        cases = [
            # A rig that declares no measurements: refused before anything is sent.
            (["--plan", plan, "--rig", "sim:", "--feedback", "lqr"], "declares no measurements"),
            (["--plan", plan, "--rig", measuring, "--feedback", "pid"], "--feedback: 'pid'"),
            (["--plan", plan, "--rig", measuring, "--estimator", "ekf"],
             "--estimator: only with --feedback lqr or mpc"),
            # The MPC's options: only with it, each in its range; the horizon within the plan.
            (["--plan", plan, "--rig", measuring, "--feedback", "lqr", "--horizon", "0.5"],
             "--horizon: only with --feedback mpc"),
            (["--plan", plan, "--rig", measuring, "--feedback", "mpc", "--horizon", "60"],
             "--horizon: "),
            (["--plan", plan, "--rig", measuring, "--feedback", "mpc", "--horizon", "9.5"],
             "is longer than the plan"),
            (["--plan", plan, "--rig", measuring, "--feedback", "mpc", "--mpc-iterations", "0"],
             "--mpc-iterations: "),
            (["--plan", plan, "--rig", measuring, "--feedback", "mpc", "--mpc-iterations", "2.5"],
             "--mpc-iterations: a whole number"),
            (["--plan", plan, "--rig", measuring, "--feedback", "mpc", "--solve-lead", "nan"],
             "--solve-lead"),
            (["--plan", plan, "--rig", measuring, "--feedback", "mpc", "--solve-every", "0"],
             "--solve-every: solve_period_s must be in (0, 1]"),
            (["--plan", plan, "--rig", measuring, "--feedback", "lqr", "--solve-every", "0.1"],
             "--solve-every: only with --feedback mpc"),
            (["--plan", plan, "--rig", measuring, "--feedback", "mpc", "--point-weight", "-1"],
             "--point-weight: point_weight must be in [0"),
            (["--plan", plan, "--rig", measuring, "--max-point-deviation", "0.1"],
             "--max-point-deviation: only with --feedback lqr or mpc"),
            (["--plan", plan, "--rig", measuring, "--feedback", "mpc", "--max-point-deviation",
              "11"], "--max-point-deviation: "),
            (["--plan", plan, "--rig", measuring, "--feedback", "lqr", "--estimator", "ukf"],
             "--estimator: 'ukf'"),
            (["--plan", plan, "--rig", measuring, "--feedback", "lqr", "--q", "1,2,3,4"], "--q"),
            (["--plan", plan, "--rig", measuring, "--feedback", "lqr", "--r", "0"], "--r"),
            (["--plan", plan, "--rig", measuring, "--feedback", "lqr", "--rate-scale", "0.5"],
             "--rate-scale"),
            (["--plan", plan, "--rig", measuring, "--feedback", "lqr", "--max-correction", "-1"],
             "--max-correction"),
            (["--plan", plan, "--rig", "sim:?truth=nosuch.yaml", "--feedback", "lqr"],
             "truth: "),
            (["--plan", plan, "--rig", "sim:?rate=5000", "--feedback", "lqr"], "rate"),
            (["--plan", plan, "--rig", measuring, "--feedback", "lqr", "--r", "100,10,-1"],
             "--r: weights are >= 0"),
            # Outputs are checked before the run: no run is lost for want of its report.
            (["--plan", plan, "--rig", measuring, "--feedback", "lqr", "--report",
              os.path.join(self.tmp, "nosuch", "report.json")], "--report: '" + self.path("nosuch")),
            (["--plan", plan, "--rig", measuring, "--report", self.tmp], "--report: "),
        ]
        for args, fragment in cases:
            p = run("execute", *args, "--log", self.path("log.csv"))
            self.assertEqual(p.returncode, 2, f"{args}: {p.stdout} {p.stderr}")
            self.assertIn(fragment, p.stderr, args)
            self.assertFalse(os.path.exists(self.path("log.csv")), f"{args}: something was sent")

    def test_open_and_closed_loop_write_the_same_report(self):
        p = run("plan", "--model", "planar-arm", "--goal", "q:theta1=0.3;tol=0.05", "--seed", "1",
                "--out", self.path("plan.json"), "--quiet")
        rig = "sim:?noise=0.001&rate=50&latency=0.01&seed=3&clock=simulated"
        reports = {}
        for mode in ("none", "lqr"):
            out = self.path(f"{mode}.json")
            p = run("execute", "--plan", self.path("plan.json"), "--rig", rig, "--feedback", mode,
                    "--report", out)
            self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
            with open(out) as f:
                reports[mode] = json.load(f)
        self.assertEqual(set(reports["none"]), set(reports["lqr"]))
        self.assertEqual(reports["none"]["feedback"], "none")
        self.assertIsNone(reports["none"]["estimator"])
        self.assertEqual(reports["lqr"]["estimator"], "ekf")
        for r in reports.values():
            self.assertEqual(r["motion_from"], "truth")
            self.assertEqual(set(r["points"]), {"tip", "elbow"})
            # The truth is the model: both follow the plan closely.
            self.assertLess(r["points"]["tip"]["at_goal_m"], 0.01)
        lqr = reports["lqr"]
        self.assertGreater(lqr["measurements"]["fused"], 50)
        self.assertLess(lqr["estimation_rms"]["points_m"], 0.002)
        self.assertGreater(lqr["cycle_ms"]["p99"], 0)  # (measured, not judged: benchmarks)


PUPPETCOPTER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "models", "builtin",
                            "puppetcopter.yaml")


class Calibrate(unittest.TestCase):
    """`marionette calibrate` and `execute --calibrate` on the simulated rig."""

    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.tmp = self.dir.name
        # The truth: PuppetCopter with both shoulder strings 5 mm longer (the bar's error).
        with open(PUPPETCOPTER) as f:
            text = f.read()
        self.assertEqual(text.count("length: 0.7}"), 2)
        with open(self.path("truth.yaml"), "w") as f:
            f.write(text.replace("length: 0.7}", "length: 0.705}"))

    def tearDown(self):
        self.dir.cleanup()

    def path(self, name):
        return os.path.join(self.tmp, name)

    def test_calibrate_finds_the_shoulder_strings_and_writes_a_model_that_loads(self):
        rig = f"sim:?truth={self.path('truth.yaml')}&noise=0.002&rate=30"
        # One pose, the start (both shoulder strings are taut there), briefly: the puppet starts
        # at rest.
        p = run("calibrate", "--model", "puppetcopter", "--rig", rig, "--poses", "1",
                "--settle", "0.2", "--measure", "1", "--out", self.path("calibrated.yaml"),
                "--report", self.path("calibration.json"))
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertIn("string shoulder_l", p.stdout)
        with open(self.path("calibration.json")) as f:
            report = json.load(f)
        self.assertEqual(report["format"], "marionette-calibration")
        c = report["calibration"]
        self.assertEqual(c["poses"], 1)
        self.assertGreater(c["samples"][0], 20)
        fitted = {p["name"]: p for p in c["parameters"]}
        self.assertEqual(set(fitted), {"shoulder_l", "shoulder_r"})
        for name, p in fitted.items():
            self.assertEqual(p["kind"], "string_length")
            self.assertAlmostEqual(p["fitted"] - p["nominal"], 0.005, delta=0.001, msg=name)
            self.assertLess(p["std"], 0.001, name)
        self.assertLess(c["rms_residual_m"], c["nominal_rms_residual_m"] / 5)
        # The calibrated model file is a model: it simulates, and says what was fitted.
        with open(self.path("calibrated.yaml")) as f:
            self.assertIn("calibrated at rest", f.readline())
        p = run("simulate", "--model", self.path("calibrated.yaml"), "--duration", "0.1",
                "--summary")
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)

    def test_execute_calibrates_before_its_run_and_reports_it(self):
        p = run("plan", "--model", "puppetcopter", "--scene", "table", "--planner", "rrt",
                "--seed", "3", "--goal", "point:hand_l=0.05,0.24,0.40;radius=0.04",
                "--out", self.path("plan.json"), "--quiet")
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        # The model as its own truth: the fit finds the model's lengths, and the loop runs on it.
        # (The drift bound is opened: the LQR on the calibrated puppet's re-simulation drives
        # PuppetCopter's arm twists 0.3 rad from the plan on some machines, a safe stop there.)
        p = run("execute", "--plan", self.path("plan.json"), "--rig",
                "sim:?noise=0.002&rate=30&clock=simulated", "--feedback", "lqr", "--calibrate",
                "--calibration-poses", "1", "--calibration-settle", "0.2",
                "--calibration-measure", "1",
                "--max-deviation", "1", "--report", self.path("report.json"))
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertIn("re-simulated on the calibrated puppet", p.stdout)
        with open(self.path("report.json")) as f:
            report = json.load(f)
        for fitted in report["calibration"]["parameters"]:
            self.assertAlmostEqual(fitted["fitted"], 0.7, delta=0.001)
        # The estimator starts where the calibration left the puppet: it follows the truth.
        self.assertLess(report["estimation_rms"]["points_m"], 0.005)
        self.assertIn("elbow_l", report["points"])

    def test_a_fit_the_markers_noise_cannot_explain_is_refused_naming_the_worst(self):
        # The truth's left and right elbow and knee markers swapped (a rig file mixed up).
        with open(self.path("truth.yaml")) as f:
            text = f.read()
        for left, right in [("{name: elbow_l, frame: arm_l_1, at: [0, 0.085, -0.01]}",
                             "{name: elbow_r, frame: arm_r_1, at: [0, -0.085, -0.01]}"),
                            ("{name: knee_l, frame: leg_l_1, at: [0.012, 0, -0.11]}",
                             "{name: knee_r, frame: leg_r_1, at: [0.012, 0, -0.11]}")]:
            self.assertIn(left, text)
            self.assertIn(right, text)
            name_l, rest_l = left.split(",", 1)
            name_r, rest_r = right.split(",", 1)
            text = text.replace(left, "@L@").replace(right, "@R@")
            text = text.replace("@L@", name_l + "," + rest_r).replace("@R@", name_r + "," + rest_l)
        with open(self.path("swapped.yaml"), "w") as f:
            f.write(text)
        rig = f"sim:?truth={self.path('swapped.yaml')}&noise=0.002&rate=30"
        p = run("calibrate", "--model", "puppetcopter", "--rig", rig, "--poses", "1",
                "--settle", "0.2", "--measure", "1", "--out", self.path("calibrated.yaml"))
        self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
        self.assertIn("chi2/dof", p.stderr)
        worst = p.stderr[p.stderr.index("deviations rms:"):]
        self.assertGreaterEqual(sum(m in worst for m in ("elbow_l", "elbow_r", "knee_l", "knee_r")),
                                2, p.stderr)
        self.assertFalse(os.path.exists(self.path("calibrated.yaml")))

    def test_a_model_that_cannot_be_written_after_the_moves_is_on_stderr(self):
        rig = f"sim:?truth={self.path('truth.yaml')}&noise=0.002&rate=30"
        p = run("calibrate", "--model", "puppetcopter", "--rig", rig, "--poses", "1",
                "--settle", "0.2", "--measure", "1", "--out", "/dev/full",
                "--report", self.path("calibration.json"))
        self.assertEqual(p.returncode, 8, p.stdout + p.stderr)
        self.assertIn("after the rig moved: --out", p.stderr)
        self.assertIn("calibrated at rest", p.stderr)  # the model file's text, on stderr
        self.assertIn("length: 0.70", p.stderr)
        with open(self.path("calibration.json")) as f:  # the other output was written
            self.assertEqual(json.load(f)["format"], "marionette-calibration")

    def test_held_inputs_stay_put_through_execute_calibrate(self):
        # The right hand waves, the left arm disabled (its inputs held at their start).  (This
        # test's subject is the held inputs, not the tracking: 3 cm is the plan's precondition,
        # its hand 2.8 cm off at the fastest of the wave.)
        p = run("perform", "--model", "puppetcopter", "--keyframes",
                os.path.join(os.path.dirname(PUPPETCOPTER), "..", "..", "examples", "wave.yaml"),
                "--disable", "arm_l", "--tolerance", "0.03", "--out", self.path("plan.json"))
        check_performed(self, p)
        held = ["act_arm_l_yaw", "act_arm_l_pitch", "act_arm_l_len"]
        log = self.path("sent.csv")
        p = run("execute", "--plan", self.path("plan.json"), "--rig",
                f"sim:?truth={self.path('truth.yaml')}&noise=0.002&rate=30", "--feedback", "lqr",
                "--hold", ",".join(held), "--calibrate", "--calibration-poses", "3",
                "--calibration-settle", "0", "--calibration-measure", "0.5", "--log", log)
        # (Measured while it still swings, the fit may be refused after the moves: exit 1.)
        self.assertIn(p.returncode, (0, 1, 7), p.stdout + p.stderr)
        with open(log) as f:
            rows = [r for r in csv.DictReader(f) if r["event"] == "sent"]
        self.assertGreater(len(rows), 300)
        for name in held:
            self.assertEqual({r[name] for r in rows}, {rows[0][name]}, name)
        others = [n for n in rows[0] if n.startswith("act_") and n not in held]
        self.assertTrue(any(len({r[n] for r in rows}) > 10 for n in others), "nothing moved")

    def test_what_cannot_be_calibrated_is_refused_before_anything_moves(self):
        measuring = f"sim:?truth={self.path('truth.yaml')}&noise=0.002&rate=30"
        every_mass = "body,leg_l_1,leg_l_2,leg_r_1,leg_r_2,arm_l_1,arm_l_2,arm_r_1,arm_r_2,head"
        cases = [
            (["--model", "puppetcopter", "--rig", "sim:"], "declares no measurements"),
            (["--model", "puppetcopter", "--rig", measuring, "--poses", "0"], "--poses"),
            (["--model", "puppetcopter", "--rig", measuring, "--settle", "-1"], "--settle"),
            (["--model", "puppetcopter", "--rig", measuring, "--measure", "0"], "--measure"),
            (["--model", "puppetcopter", "--rig", measuring, "--share", "0.9"], "--share"),
            (["--model", "puppetcopter", "--rig", measuring, "--masses", "tail"],
             "--masses: 'tail' is not a mass of 'puppetcopter'"),
            # Every mass scaled alike changes no rest pose: only their ratios can be found.
            (["--model", "puppetcopter", "--rig", measuring, "--poses", "2", "--masses",
              every_mass], "cannot be identified from these poses"),
            (["--model", "planar-arm", "--rig", "sim:?noise=0.002&rate=30"], "nothing to fit"),
            (["--rig", measuring], "--model"),
        ]
        for args, fragment in cases:
            p = run("calibrate", *args, "--out", self.path("out.yaml"), "--log",
                    self.path("log.csv"))
            self.assertEqual(p.returncode, 2, f"{args}: {p.stdout} {p.stderr}")
            self.assertIn(fragment, p.stderr, args)
            self.assertFalse(os.path.exists(self.path("out.yaml")), args)
            if os.path.exists(self.path("log.csv")):
                with open(self.path("log.csv")) as f:
                    self.assertNotIn("\nsent,", f.read(), f"{args}: something was sent")
        p = run("plan", "--model", "planar-arm", "--goal", "q:theta1=0.3;tol=0.05", "--seed", "1",
                "--out", self.path("plan.json"), "--quiet")
        for args, fragment in [
            (["--calibration-poses", "2"], "--calibration-poses: only with --calibrate"),
            (["--calibrate"], "--calibrate: the calibrated puppet is the feedback's model"),
        ]:
            p = run("execute", "--plan", self.path("plan.json"), "--rig",
                    "sim:?noise=0.002&rate=30", *args)
            self.assertEqual(p.returncode, 2, f"{args}: {p.stdout} {p.stderr}")
            self.assertIn(fragment, p.stderr, args)


if __name__ == "__main__":
    BIN = sys.argv.pop(1)
    unittest.main()
