#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""A hostile rig against `marionette execute`: a UDP rig written from PROTOCOL.md alone that
answers with extreme, non-finite and malformed values -- positions, acknowledgements,
measurements -- while the executor runs open and closed loop with its most extreme valid
options.  Over *every* frame the executor sends: each SET finite, within each variable's range,
speed and acceleration (from the position the rig reported), none after HOLD; a position beyond
its range is refused at GET before anything moves (exit 4); options out of range are refused
before anything is sent (exit 2); the command log stays printable ASCII.
Usage: hostile_rig_test.py PATH/TO/marionette SOURCE_DIR"""
import csv
import json
import math
import os
import re
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import threading
import time
import unittest

BIN = SRC = None
MODEL = "suspended-mass"
RIG_YAML = """rig: hostile
channels:
  xr: {channel: 0, scale: 1000, offset: 0, unit: mm}
  r: {channel: 1, scale: 1000, offset: 0, unit: mm}
sensing:
  markers: [mass]
  marker_unit: mm
  rate_hz: 30
  latency_s: 0.01
  marker_noise_m: 0.002
"""
HONEST_POS = "0:0:mm,1:500:mm"
HONEST_MEA = "mass.x:0:mm,mass.y:0:mm,mass.z:500:mm"


def crc16(data):
    crc = 0xFFFF
    for ch in data:
        crc ^= ch << 8
        for _ in range(8):
            crc = ((crc << 1) ^ 0x1021) & 0xFFFF if crc & 0x8000 else (crc << 1) & 0xFFFF
    return crc


def frame(body):
    """A line with a valid checksum; `body` is bytes (a hostile rig's bytes need not be text)."""
    if isinstance(body, str):
        body = body.encode()
    return b"$" + body + b"*%04X\n" % crc16(body)


def limits():
    """Each kinematic variable's (range, max_speed, max_accel), from the model file."""
    with open(os.path.join(SRC, "models", "builtin", MODEL + ".yaml")) as f:
        text = f.read()
    out = {}
    for name, lo, hi, speed, accel in re.findall(
            r"\{name: (\w+), default: [-\d.]+, range: \[([-\d.]+), ([-\d.]+)\], "
            r"max_speed: ([\d.]+), max_accel: ([\d.]+)\}", text):
        out[name] = (float(lo), float(hi), float(speed), float(accel))
    assert list(out) == ["xr", "r"], out
    return out


class HostileRig:
    """Answers GET with `pos`, ACKs every SET and HOLD (or NAKs the SET with SEQ `nak` with
    `nak_reason`, and says nothing to those in `withheld`), and once SETs flow sends MEA frames from `measurements` (a function of the
    frame count giving a list of raw lines) about every 30 ms.  Keeps every frame it receives."""

    def __init__(self, pos=HONEST_POS, measurements=None, nak=None, nak_reason=b"range",
                 extra_replies=None, withheld=()):
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.settimeout(0.005)
        self.port = self.sock.getsockname()[1]
        self.pos, self.measurements, self.nak, self.nak_reason = pos, measurements, nak, nak_reason
        self.extra_replies = extra_replies
        self.withheld = set(withheld)  # SEQs never acknowledged
        self.received = []  # (type, seq, fields) in arrival order
        self.done = False
        self.thread = threading.Thread(target=self.serve, daemon=True)
        self.thread.start()

    def serve(self):
        peer, started, count, last = None, None, 0, 0.0
        while not self.done:
            try:
                data, peer = self.sock.recvfrom(4096)
                body, _, crc = data.decode().strip()[1:].partition("*")
                assert int(crc, 16) == crc16(body.encode()), data
                kind, seq, *fields = body.split(",")
                self.received.append((kind, int(seq), fields))
                if kind == "GET":
                    self.sock.sendto(frame(f"POS,{seq},{self.pos}"), peer)
                elif kind == "SET" and int(seq) == self.nak:
                    self.sock.sendto(frame(b"NAK,%s,%s" % (seq.encode(), self.nak_reason)), peer)
                elif int(seq) in self.withheld:
                    pass
                else:
                    if kind == "SET" and started is None:
                        started = time.monotonic()
                    self.sock.sendto(frame(f"ACK,{seq}"), peer)
                    for extra in (self.extra_replies(int(seq)) if self.extra_replies else []):
                        self.sock.sendto(extra, peer)
            except socket.timeout:
                pass
            if self.measurements and started is not None and time.monotonic() - last > 0.03:
                last = time.monotonic()
                count += 1
                for line in self.measurements(count, last - started):
                    self.sock.sendto(line, peer)

    def close(self):
        self.done = True
        self.thread.join()
        self.sock.close()


class HostileRigTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.TemporaryDirectory()
        cls.plan = os.path.join(cls.dir.name, "plan.json")
        cls.rig = os.path.join(cls.dir.name, "rig.yaml")
        with open(cls.rig, "w") as f:
            f.write(RIG_YAML)
        p = subprocess.run([BIN, "plan", "--model", MODEL, "--goal", "q:xm=0.2;tol=0.05",
                            "--seed", "1", "--out", cls.plan, "--quiet"],
                           capture_output=True, text=True, timeout=120)
        assert p.returncode == 0, p.stderr
        cls.limits = limits()

    @classmethod
    def tearDownClass(cls):
        cls.dir.cleanup()

    def execute(self, rig, *options, log=None):
        args = [BIN, "execute", "--plan", self.plan, "--rig", f"udp:127.0.0.1:{rig.port}",
                "--rig-config", self.rig, *options]
        if log:
            args += ["--log", log]
        p = subprocess.run(args, capture_output=True, timeout=120)
        time.sleep(0.1)  # a HOLD on its way
        rig.close()
        return p.returncode, p.stdout.decode("ascii"), p.stderr.decode("ascii")

    def assert_every_frame_safe(self, rig):
        """Every SET finite and within range, speed and acceleration from the reported position
        (held before the first), none after HOLD; returns how many SETs there were."""
        names = list(self.limits)
        start = [float(v.split(":")[1]) / 1000 for v in HONEST_POS.split(",")]
        last, before, h = start, start, 1 / 50
        held = False
        sets = 0
        for kind, seq, fields in rig.received:
            if kind == "HOLD":
                held = True
                continue
            if kind != "SET":
                continue
            self.assertFalse(held, f"SET {seq} after HOLD")
            sets += 1
            values = [float(f.split(":")[1]) / 1000 for f in fields]
            for j, (x, name) in enumerate(zip(values, names)):
                lo, hi, speed, accel = self.limits[name]
                where = f"SET {seq} {name} = {x}"
                self.assertTrue(math.isfinite(x), where)
                self.assertTrue(lo - 1e-6 <= x <= hi + 1e-6, where)
                self.assertLessEqual(abs(x - last[j]) / h, speed * (1 + 1e-4) + 1e-4, where)
                self.assertLessEqual(abs(x - 2 * last[j] + before[j]) / h ** 2,
                                     accel * (1 + 1e-4) + 1e-2, where)
            before, last = last, values
        return sets

    def test_positions_beyond_range_not_finite_or_malformed_are_refused_at_get(self):
        for pos in ["0:1e12:mm,1:500:mm", "0:1e308:mm,1:500:mm", "0:-1e20:mm,1:500:mm",
                    "0:1000.5:mm,1:500:mm", "0:0:mm,1:960:mm", "0:nan:mm,1:500:mm",
                    "0:inf:mm,1:500:mm", "0:-inf:mm,1:500:mm", "0:1e999:mm,1:500:mm",
                    "0:0:mm", "0:0:mm,0:0:mm,1:500:mm", "0:0:rad,1:500:mm",
                    "0:0:mm,1:500:mm,7:0:mm", "0::mm,1:500:mm", "\xff\xfe:0:mm,1:500:mm"]:
            with self.subTest(pos=pos):
                rig = HostileRig(pos=pos)
                code, out, err = self.execute(rig)
                self.assertEqual(code, 4, out + err)
                self.assertIn("the rig's POS answer", err)
                self.assertIn("nothing was sent", err)
                self.assertEqual([k for k, _, _ in rig.received if k != "GET"], [])

    def test_options_out_of_range_are_refused_before_anything_is_sent(self):
        for options, flag in [(["--process-noise", "1e300,1e300"], "--process-noise"),
                              (["--process-noise", "0.001,1e3"], "--process-noise"),
                              (["--q", "1e308,1e308,1e308"], "--q"),
                              (["--q", "1e10"], "--q"),
                              (["--r", "1e-12"], "--r"),
                              (["--max-correction", "1e308"], "--max-correction"),
                              (["--max-deviation", "nan"], "--max-deviation")]:
            with self.subTest(options=options):
                rig = HostileRig()
                code, out, err = self.execute(rig, "--feedback", "lqr", *options)
                self.assertEqual(code, 2, out + err)
                self.assertIn(flag + ":", err)
                self.assertEqual(rig.received, [])

    def test_hostile_measurements_never_move_the_rig_outside_its_limits(self):
        bad_fields = [b"mass.x:1e300:mm,mass.y:0:mm,mass.z:500:mm",
                      b"mass.x:nan:mm,mass.y:0:mm,mass.z:500:mm",
                      b"mass.x:inf:mm,mass.y:-inf:mm,mass.z:500:mm",
                      b"mass.x:1e6:mm,mass.y:0:mm,mass.z:500:mm",  # a kilometre: beyond the stage
                      b"mass.x:\xff\xfe:mm,mass.y:0:mm,mass.z:500:mm",
                      b"mass.x:0:mm,mass.y:0:mm", b"", b"mass.x:0:m,mass.y:0:mm,mass.z:500:mm"]

        def measurements(n, t):
            seq = 3 * n  # each frame its own SEQ: the honest one, the hostile one, the odd stamp
            honest = frame(f"MEA,{seq},{t:.4f},{HONEST_MEA}")
            hostile = frame(b"MEA,%d,%.4f,%s" % (seq + 1, t, bad_fields[n % len(bad_fields)]))
            stamps = [frame(f"MEA,{seq + 2},{s},{HONEST_MEA}")
                      for s in ("1e300", "-1", "nan", "inf", "1e-300")]
            # The honest one twice (a repeat), the hostile one, odd stamps, noise.
            return [honest, honest, hostile, stamps[n % len(stamps)], b"$MEA,\xff*0000\n",
                    b"\x00" * 64]

        # Open loop, then closed loop with the most extreme options the executor takes.
        for options in [[], ["--feedback", "lqr", "--process-noise", "1,100", "--q",
                             "1e9,1e9,1e9", "--r", "1e-9,0,0", "--max-correction", "10",
                             "--max-deviation", "10"],
                        ["--feedback", "lqr"]]:
            with self.subTest(options=options):
                rig = HostileRig(measurements=measurements)
                log = os.path.join(self.dir.name, "log.csv")
                code, out, err = self.execute(rig, *options, log=log)
                self.assertIn(code, (0, 7), out + err)
                self.assertGreater(self.assert_every_frame_safe(rig), 0)
                self.assertNotIn("nan", (out + err).lower().replace("nanoradian", ""))
                with open(log, "rb") as f:
                    f.read().decode("ascii")  # printable ASCII, whatever the rig sent

    def test_an_output_lost_after_the_run_is_never_reported_as_nothing_sent(self):
        # A name the file system refuses: refused before anything is sent (exit 2).
        rig = HostileRig()
        code, out, err = self.execute(rig, "--feedback", "lqr", "--report",
                                      os.path.join(self.dir.name, "r" * 300))
        self.assertEqual(code, 2, out + err)
        self.assertIn("--report:", err)
        self.assertEqual([k for k, _, _ in rig.received if k == "SET"], [])
        # A device that refuses the write after the run: the run happened, the report is on
        # stderr as JSON, its own exit status; the device is a device still.
        rig = HostileRig()
        code, out, err = self.execute(rig, "--report", "/dev/full")
        self.assertEqual(code, 8, out + err)
        self.assertGreater(len([k for k, _, _ in rig.received if k == "SET"]), 10)
        self.assertIn("after the rig moved: --report", err)
        report = json.loads(err[err.index("\n{") + 1:])
        self.assertEqual(report["stop"], "completed")
        self.assertTrue(stat.S_ISCHR(os.stat("/dev/full").st_mode))

    def test_a_stop_abandons_the_mpcs_solve_under_way(self):
        # 1000 iterations a solve over the whole plan: a solve lasts seconds; SIGINT sends HOLD at
        # once and the process ends without waiting for the solve.
        rig = HostileRig()
        args = [BIN, "execute", "--plan", self.plan, "--rig", f"udp:127.0.0.1:{rig.port}",
                "--rig-config", self.rig, "--feedback", "mpc", "--mpc-iterations", "1000",
                "--horizon", "1", "--solve-every", "0.02", "--settle", "1"]
        p = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        time.sleep(2.5)
        p.send_signal(signal.SIGINT)
        sent = time.monotonic()
        out, err = p.communicate(timeout=60)
        ended = time.monotonic() - sent
        rig.close()
        self.assertEqual(p.returncode, 3, out + err)
        self.assertLess(ended, 2.0, "the process waited for the solve")
        self.assertIn("HOLD", [k for k, _, _ in rig.received])

    def test_a_run_whose_mpc_never_acted_says_so(self):
        # A plan of 0.44 s and solves for the sample 0.5 s ahead: none can start, every setpoint
        # is the plan's, and the run does not claim closed-loop success.
        short = os.path.join(self.dir.name, "short.json")
        p = subprocess.run([BIN, "plan", "--model", MODEL, "--goal", "q:xm=0.06;tol=0.05",
                            "--seed", "1", "--raw", "--out", short, "--quiet"],
                           capture_output=True, text=True, timeout=120)
        self.assertEqual(p.returncode, 0, p.stderr)
        rig = HostileRig()
        args = [BIN, "execute", "--plan", short, "--rig", f"udp:127.0.0.1:{rig.port}",
                "--rig-config", self.rig, "--feedback", "mpc", "--horizon", "0.3",
                "--solve-lead", "0.5"]
        p = subprocess.run(args, capture_output=True, text=True, timeout=120)
        rig.close()
        self.assertEqual(p.returncode, 9, p.stdout + p.stderr)
        self.assertIn("the MPC never acted: 0 solve(s) started", p.stderr)
        self.assertGreater(len([k for k, _, _ in rig.received if k == "SET"]), 10)

    def test_a_refusal_in_raw_bytes_stops_the_run_and_the_log_stays_printable(self):
        rig = HostileRig(nak=10, nak_reason=b"r\xe4nge\x01\x1b[31m",
                         extra_replies=lambda seq: [frame(b"ACK,%d" % (seq + 1000)),
                                                    b"$ACK,\xc3\x28*0000\n", b"\xff" * 100])
        log = os.path.join(self.dir.name, "nak.csv")
        code, out, err = self.execute(rig, log=log)
        self.assertEqual(code, 4, out + err)
        self.assertIn("refused frame 10", err)
        self.assertEqual([k for k, s, _ in rig.received if s > 10], ["HOLD"])
        self.assert_every_frame_safe(rig)
        with open(log, "rb") as f:
            text = f.read().decode("ascii")
        self.assertIn("\\xE4", text)
        self.assertNotIn("\x1b", text)
        rows = list(csv.reader(text.splitlines()))
        self.assertTrue(all(len(r) == len(rows[0]) for r in rows), rows)


# PuppetCopter's rig, each input on its own channel in the model's units, its hands and elbows
# measured: for the calibration's moves (the measurements are the rig's, not a puppet's: the moves
# happen before the fit, which then refuses them).
COPTER_INPUTS = [("act_arm_l_yaw", 1.4), ("act_arm_l_pitch", 1.42), ("act_arm_l_len", 0.68),
                 ("act_arm_r_yaw", 1.4), ("act_arm_r_pitch", 1.42), ("act_arm_r_len", 0.68),
                 ("act_head_yaw", 0.0), ("act_head_pitch", 1.318), ("act_head_len", 0.315),
                 ("act_leg_l_len", 0.945), ("act_leg_r_len", 0.945), ("act_leg_back_len", 0.97)]
COPTER_MARKERS = ["hand_l", "hand_r", "elbow_l", "elbow_r"]
COPTER_RIG_YAML = ("rig: hostile-copter\nchannels:\n" + "".join(
    f"  {name}: {{channel: {i}, scale: 1, offset: 0, unit: u}}\n"
    for i, (name, _) in enumerate(COPTER_INPUTS)) +
    f"sensing:\n  markers: [{', '.join(COPTER_MARKERS)}]\n  marker_unit: mm\n"
    "  rate_hz: 30\n  latency_s: 0.01\n  marker_noise_m: 0.002\n")
COPTER_POS = ",".join(f"{i}:{v}:u" for i, (_, v) in enumerate(COPTER_INPUTS))


def copter_measurements(n, t):
    fields = ",".join(f"{m}.{a}:{v}:mm" for m in COPTER_MARKERS
                      for a, v in zip("xyz", (10.0, 60.0, -700.0)))
    return [frame(f"MEA,{n},{t:.4f},{fields}")]


class CalibrationOnARig(unittest.TestCase):
    """Every frame a calibration sends goes out under the operator's options: held inputs never
    move, the link's limits stop it as they stop a run, and no output is lost after a move."""

    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.TemporaryDirectory()
        cls.rig = os.path.join(cls.dir.name, "copter-rig.yaml")
        with open(cls.rig, "w") as f:
            f.write(COPTER_RIG_YAML)

    @classmethod
    def tearDownClass(cls):
        cls.dir.cleanup()

    def calibrate(self, rig, *options):
        args = [BIN, "calibrate", "--model", "puppetcopter", "--rig",
                f"udp:127.0.0.1:{rig.port}", "--rig-config", self.rig, "--settle", "0",
                "--measure", "0.5", "--out", os.path.join(self.dir.name, "fit.yaml"), *options]
        p = subprocess.run(args, capture_output=True, timeout=300)
        time.sleep(0.1)
        rig.close()
        return p.returncode, p.stdout.decode("ascii"), p.stderr.decode("ascii")

    def sets(self, rig):
        return [[float(f.split(":")[1]) for f in fields]
                for kind, _, fields in rig.received if kind == "SET"]

    def test_held_inputs_never_move_through_the_calibration(self):
        held = ["act_arm_l_yaw", "act_arm_l_pitch", "act_arm_l_len"]
        rig = HostileRig(pos=COPTER_POS, measurements=copter_measurements)
        code, out, err = self.calibrate(rig, "--poses", "4", "--hold", ",".join(held))
        sets = self.sets(rig)
        self.assertGreater(len(sets), 300, out + err)  # every pose was visited
        start = dict(COPTER_INPUTS)
        names = [n for n, _ in COPTER_INPUTS]
        for values in sets:
            for name in held:
                self.assertEqual(values[names.index(name)], start[name], name)
        moved = max(abs(v - start[n]) for values in sets for n, v in zip(names, values))
        self.assertGreater(moved, 0.05, "the calibration moved nothing")
        # These markers are no puppet's: the fit is refused after the moves (exit 1), nothing
        # written.
        self.assertEqual(code, 1, out + err)
        self.assertIn("chi2/dof", err)
        self.assertFalse(os.path.exists(os.path.join(self.dir.name, "fit.yaml")))

    def test_the_operators_link_limits_stop_the_calibrations_moves(self):
        rig = HostileRig(withheld=range(20, 28), pos=COPTER_POS, measurements=copter_measurements)
        code, out, err = self.calibrate(rig, "--poses", "2", "--max-lost-acks", "0")
        self.assertEqual(code, 4, out + err)
        self.assertIn("no acknowledgement for 1 frames in a row", err)
        sets = [s for k, s, _ in rig.received if k == "SET"]
        self.assertLess(max(sets), 40, "frames went on after the lost acknowledgement")
        self.assertEqual(rig.received[-1][0], "HOLD")

    def test_an_output_the_file_system_refuses_is_refused_before_anything_moves(self):
        long_name = os.path.join(self.dir.name, "r" * 300)
        for flag in ["--out", "--report"]:
            with self.subTest(flag=flag):
                rig = HostileRig(pos=COPTER_POS, measurements=copter_measurements)
                args = [BIN, "calibrate", "--model", "puppetcopter", "--rig",
                        f"udp:127.0.0.1:{rig.port}", "--rig-config", self.rig,
                        "--out", os.path.join(self.dir.name, "fit.yaml"), flag, long_name]
                p = subprocess.run(args, capture_output=True, text=True, timeout=120)
                rig.close()
                self.assertEqual(p.returncode, 2, p.stdout + p.stderr)
                self.assertIn(flag + ":", p.stderr)
                self.assertEqual([k for k, _, _ in rig.received if k == "SET"], [])


if __name__ == "__main__":
    BIN, SRC = sys.argv[1], sys.argv[2]
    unittest.main(argv=sys.argv[:1])
