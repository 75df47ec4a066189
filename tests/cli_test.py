#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""End-to-end tests of the `marionette` CLI, run as a user would: the exact CSV header and rows,
the --summary JSON, inputs files, start states, the baselines, and every error path (non-zero
exit, a message naming what was wrong).  Usage: cli_test.py PATH/TO/marionette SOURCE_DIR"""
import csv
import io
import json
import math
import os
import subprocess
import sys
import threading
import stat
import tempfile
import unittest

BIN = None
SRC = None


def run(*args, check=True):
    p = subprocess.run([BIN, *args], capture_output=True, text=True, timeout=300)
    if check and p.returncode != 0:
        raise AssertionError(f"marionette {' '.join(args)} failed ({p.returncode}): {p.stderr}")
    return p


def rows(text):
    return list(csv.reader(io.StringIO(text)))


class Models(unittest.TestCase):
    def test_json_lists_every_builtin_with_names_in_state_order(self):
        models = json.loads(run("models", "--json").stdout)
        by_name = {m["name"]: m for m in models}
        self.assertEqual(sorted(by_name),
                         ["arm3d", "marionette25", "planar-arm", "puppetcopter", "suspended-mass"])
        for m in models:
            for key in ("dynamic", "kinematic", "strings", "points"):
                self.assertIsInstance(m[key], list, key)
                self.assertTrue(all(isinstance(x, str) for x in m[key]))
        self.assertEqual(by_name["suspended-mass"]["dynamic"], ["xm", "zm"])
        self.assertEqual(by_name["suspended-mass"]["kinematic"], ["xr", "r"])
        self.assertEqual(by_name["planar-arm"]["dynamic"], ["theta1", "theta2"])
        self.assertEqual(by_name["planar-arm"]["kinematic"], ["x", "L"])
        self.assertIn("hand", by_name["arm3d"]["points"])
        self.assertEqual(len(by_name["marionette25"]["dynamic"]), 25)
        self.assertEqual(len(by_name["marionette25"]["kinematic"]), 21)
        self.assertEqual(len(by_name["marionette25"]["strings"]), 7)

    def test_plain_listing(self):
        out = run("models").stdout
        for name in ("planar-arm", "arm3d", "suspended-mass", "puppetcopter", "marionette25"):
            self.assertIn(name, out)


class Simulate(unittest.TestCase):
    def test_csv_header_rows_and_physics(self):
        r = rows(run("simulate", "--model", "planar-arm", "--duration", "0.5").stdout)
        self.assertEqual(",".join(r[0]),
                         "t,theta1,theta2,x,L,energy,max_violation,tip_tension")
        data = [[float(v) for v in row] for row in r[1:]]
        self.assertEqual(len(data), 51)  # t = 0 and one row per step
        for k, row in enumerate(data):
            self.assertAlmostEqual(row[0], 0.01 * k, places=9)
            self.assertLessEqual(row[6], 1e-9)   # max_violation
            self.assertGreater(row[7], 0.0)      # taut string holding the arm
        # At rest under held inputs nothing moves and the energy is constant.
        self.assertAlmostEqual(data[0][1], data[-1][1], places=9)
        self.assertAlmostEqual(data[0][5], data[-1][5], places=9)

    def test_summary_json(self):
        s = json.loads(run("simulate", "--model", "suspended-mass", "--duration", "2",
                           "--dt", "0.02", "--summary").stdout)
        for key in ("steps", "wall_s", "us_per_step", "newton_iterations_mean", "max_violation",
                    "min_tension", "energy_start", "energy_end"):
            self.assertIn(key, s)
        self.assertEqual(s["steps"], 100)
        self.assertLessEqual(s["max_violation"], 1e-9)
        # A 0.1244 kg mass hanging still: tension = weight.
        self.assertAlmostEqual(s["min_tension"], 0.1244 * 9.81, places=6)
        self.assertAlmostEqual(s["energy_start"], s["energy_end"], places=9)

    def test_inputs_file_subset_interpolated_and_others_held(self):
        with tempfile.NamedTemporaryFile("w", suffix=".csv", delete=False) as f:
            f.write("t,x\n0,0.30\n1,0.40\n")
            path = f.name
        try:
            r = rows(run("simulate", "--model", "planar-arm", "--duration", "1.5",
                         "--inputs", path).stdout)
        finally:
            os.unlink(path)
        hdr = r[0]
        ix, iL = hdr.index("x"), hdr.index("L")
        for row in r[1:]:
            t = float(row[0])
            expect = 0.30 + 0.10 * min(t, 1.0)  # linear, then held at the last value
            self.assertAlmostEqual(float(row[ix]), expect, places=9)
            self.assertAlmostEqual(float(row[iL]), 0.45, places=12)  # default held
            self.assertLessEqual(float(row[hdr.index("max_violation")]), 1e-9)

    def test_inputs_faster_than_the_motor_get_a_warning(self):
        with tempfile.NamedTemporaryFile("w", suffix=".csv", delete=False) as f:
            f.write("t,x\n0,0.30\n0.1,0.40\n")  # 1 m/s; the carriage's max_speed is 0.5
            path = f.name
        try:
            p = run("simulate", "--model", "planar-arm", "--inputs", path, "--duration", "0.2",
                    "--summary")
        finally:
            os.unlink(path)
        self.assertIn("warning", p.stderr)
        self.assertIn("column 'x' moves at 1/s", p.stderr)
        self.assertIn("max_speed 0.5", p.stderr)
        json.loads(p.stdout)  # still runs

    def test_start_sets_a_joint_and_keeps_strings_within_length(self):
        r = rows(run("simulate", "--model", "planar-arm", "--duration", "0.2",
                     "--start", "q:theta1=-0.2").stdout)
        first = dict(zip(r[0], r[1]))
        self.assertAlmostEqual(float(first["theta1"]), -0.2, places=12)
        for row in r[1:]:
            self.assertLessEqual(float(row[r[0].index("max_violation")]), 1e-9)

    def test_baselines_and_damping_scale(self):
        for integ in ("euler", "rk4"):
            r = rows(run("simulate", "--model", "suspended-mass", "--duration", "0.2",
                         "--integrator", integ).stdout)
            self.assertEqual(",".join(r[0]), "t,xm,zm,xr,r,energy,max_violation,string_tension")
            self.assertEqual(len(r), 22)
        # Undamped VI swinging for 20 s: the (midpoint) energy oscillates by O(dt^2) of the
        # swing's 0.3 mJ and does not drift: the first and last seconds average the same.
        r = rows(run("simulate", "--model", "suspended-mass", "--duration", "20",
                     "--start", "q:xm=0.05", "--damping-scale", "0").stdout)
        energies = [float(row[5]) for row in r[2:]]
        swing = 0.1244 * 9.81 * 0.5 * (1 - math.cos(0.1))
        self.assertLess(max(energies) - min(energies), 0.02 * swing)
        first, last = energies[:100], energies[-100:]
        self.assertLess(abs(sum(last) / 100 - sum(first) / 100), 1e-3 * swing)

    def test_file_model_equals_builtin(self):
        a = run("simulate", "--model", "arm3d", "--duration", "0.3").stdout
        b = run("simulate", "--model", os.path.join(SRC, "models/builtin/arm3d.yaml"),
                "--duration", "0.3").stdout
        self.assertEqual(a, b)


class Errors(unittest.TestCase):
    def expect_failure(self, args, *fragments):
        p = run(*args, check=False)
        self.assertNotEqual(p.returncode, 0, args)
        for frag in fragments:
            self.assertIn(frag, p.stderr, args)
        return p

    def test_unknown_model(self):
        self.expect_failure(["simulate", "--model", "nope"], "nope", "not a built-in")

    def test_bad_model_file_names_file_line_field(self):
        with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as f:
            f.write("name: x\ndynamic:\n  - {name: a}\nframes:\n  - {name: f, ry: a}\n"
                    "masses:\n  - {frame: f, mass: -1, inertia: [1, 1, 1]}\n")
            path = f.name
        try:
            self.expect_failure(["simulate", "--model", path], path + ":7:", "masses[0]",
                                "mass must be > 0")
        finally:
            os.unlink(path)

    def test_bad_inputs_file(self):
        with tempfile.NamedTemporaryFile("w", suffix=".csv", delete=False) as f:
            f.write("t,x\n0,0.3\n0.5,abc\n")
            path = f.name
        try:
            self.expect_failure(["simulate", "--model", "planar-arm", "--inputs", path],
                                path + ":3:", "column 'x'", "abc")
        finally:
            os.unlink(path)
        with tempfile.NamedTemporaryFile("w", suffix=".csv", delete=False) as f:
            f.write("t,theta1\n0,0.3\n")
            path = f.name
        try:
            self.expect_failure(["simulate", "--model", "planar-arm", "--inputs", path],
                                "column 'theta1' is not a kinematic variable")
        finally:
            os.unlink(path)

    def test_bad_flags(self):
        self.expect_failure(["simulate", "--model", "planar-arm", "--dt", "-1"], "--dt")
        self.expect_failure(["simulate", "--model", "planar-arm", "--integrator", "verlet"],
                            "verlet")
        self.expect_failure(["simulate", "--model", "planar-arm", "--frobnicate"],
                            "unknown argument '--frobnicate'")
        self.expect_failure(["simulate", "--model", "planar-arm", "--start", "q:elbow=1"],
                            "'elbow' is not a dynamic variable")
        self.expect_failure(["simulate"], "--model")

    def test_unreachable_input_names_the_string(self):
        # The winch reels the string shorter than the arm can reach from the moving rig point.
        with tempfile.NamedTemporaryFile("w", suffix=".csv", delete=False) as f:
            f.write("t,x,L\n0,0.30,0.45\n1,0.60,0.05\n")  # closest reach is 0.121 m
            path = f.name
        try:
            p = self.expect_failure(["simulate", "--model", "planar-arm", "--inputs", path,
                                     "--duration", "2"],
                                    "out of the puppet's reach", "string 'tip'", "(t=")
            self.assertEqual(p.returncode, 1)
        finally:
            os.unlink(path)

    def test_failed_step_names_step_and_time(self):
        # Explicit Euler at a large step on the 3-D arm diverges: reported, with step and time.
        p = self.expect_failure(["simulate", "--model", "arm3d", "--integrator", "euler",
                                 "--dt", "0.05", "--duration", "60", "--damping-scale", "0",
                                 "--start", "q:shoulder_flex=0.4"], "step ", "(t=")
        self.assertEqual(p.returncode, 1)


class Scenes(unittest.TestCase):
    def test_json_lists_the_builtin_scenes(self):
        scenes = {s["name"]: s for s in json.loads(run("scenes", "--json").stdout)}
        self.assertEqual(sorted(scenes), ["empty", "living-room", "pillars", "table", "window"])
        self.assertEqual(scenes["empty"]["obstacles"], ["floor"])
        self.assertGreaterEqual(scenes["living-room"]["triangles"], 3000)
        for s in scenes.values():
            self.assertIn("floor", s["obstacles"])
            self.assertEqual(len(s["bounds"]["min"]), 3)
            self.assertTrue(all(lo < hi for lo, hi in zip(s["bounds"]["min"], s["bounds"]["max"])))
        self.assertIn("table_top", scenes["table"]["obstacles"])

    def test_plain_listing(self):
        out = run("scenes").stdout
        for name in ("empty", "table", "pillars", "window", "living-room"):
            self.assertIn(name, out)


class SimulateInAScene(unittest.TestCase):
    def example(self, name):
        return os.path.join(SRC, "examples", name)

    def test_collision_and_clearance_columns(self):
        # The mass wound up above the sill and carried through the window: never in contact,
        # and its clearance to the wall shrinks as it passes.  It never touches the floor: no
        # column for that pair.
        out = run("simulate", "--model", "suspended-mass", "--scene", "window", "--inputs",
                  self.example("mass-through-window.csv"), "--duration", "6").stdout
        r = rows(out)
        self.assertEqual(r[0][-2:], ["collision", "clearance"])
        self.assertEqual(",".join(r[0][:-2]), "t,xm,zm,xr,r,energy,max_violation,string_tension")
        data = [[float(v) for v in row] for row in r[1:]]
        self.assertEqual(len(data), 601)
        self.assertTrue(all(row[-2] == 0 for row in data))
        clearance = [row[-1] for row in data]
        # At rest at x = 0, the mass (radius 0.02) is 0.31 m from the wall's face at x = 0.33...
        self.assertAlmostEqual(clearance[0], 0.31, places=6)
        # ...and in the window the mass passes 0.7 - 0.6 - 0.02 ~ 0.08 m above the sill.
        self.assertLess(min(clearance), 0.1)
        self.assertGreater(min(clearance), 0.05)
        self.assertGreater(data[-1][1], 0.6)  # it ended beyond the wall (x = 0.35)

    def test_feet_on_a_raised_floor_bear_load_and_are_no_collision(self):
        # PuppetCopter's feet hang 4.3 cm above the stage's floor: on one raised 4.35 cm they
        # land and stand; each contact pair's normal and friction force is a column, and
        # touching a surface the puppet may touch is not a collision.
        with tempfile.TemporaryDirectory() as d:
            scene = os.path.join(d, "raised.yaml")
            with open(scene, "w") as f:
                f.write("obstacles:\n  - {name: floor, plane: {normal: [0, 0, 1], "
                        "offset: 0.0435}, friction: 0.4}\n")
            r = rows(run("simulate", "--model", "puppetcopter", "--scene", scene,
                         "--duration", "2").stdout)
        header, data = r[0], [[float(v) for v in row] for row in r[1:]]
        normal = [i for i, n in enumerate(header) if n.endswith("_normal")]
        # A column pair per contact pair that touched: the feet on the floor (of the floor's 15
        # pairs and the puppet's 114 of its links on one another).
        self.assertGreater(len(normal), 0)
        self.assertLess(len(normal), 15)
        self.assertTrue(all(header[i].startswith("floor/") for i in normal))
        self.assertTrue(all(any(row[i] > 0 for row in data) for i in normal))
        self.assertEqual(header[normal[0] + 1], header[normal[0]][:-len("normal")] + "friction")
        self.assertEqual(header[-2:], ["collision", "clearance"])
        self.assertTrue(all(row[-2] == 0 for row in data))
        self.assertGreater(sum(data[-1][i] for i in normal), 0.05)
        self.assertTrue(all(row[i] >= 0 for row in data for i in normal))

    def test_stop_on_collision_exits_3_after_the_contact_row(self):
        p = run("simulate", "--model", "suspended-mass", "--scene", "window", "--inputs",
                self.example("mass-into-wall.csv"), "--duration", "4", "--stop-on-collision",
                check=False)
        self.assertEqual(p.returncode, 3, p.stderr)
        data = [[float(v) for v in row] for row in rows(p.stdout)[1:]]
        self.assertEqual(data[-1][-2], 1)
        self.assertEqual(data[-1][-1], 0)
        self.assertTrue(all(row[-2] == 0 for row in data[:-1]))
        # The mass (radius 0.02) reaches the wall's face at x = 0.33 - 0.02.
        self.assertGreater(data[-1][1], 0.30)
        self.assertLess(data[-1][1], 0.32)
        self.assertIn("wall_below_window", p.stderr)
        self.assertIn("'mass'", p.stderr)
        # Without the switch the run goes on through the wall, reporting the contact rows.
        s = json.loads(run("simulate", "--model", "suspended-mass", "--scene", "window",
                           "--inputs", self.example("mass-into-wall.csv"), "--duration", "4",
                           "--summary").stdout)
        self.assertGreater(s["rows_in_collision"], 10)
        self.assertAlmostEqual(s["first_collision"]["t"], data[-1][0], places=9)
        self.assertEqual(s["first_collision"]["pair"]["second"], "wall_below_window")
        self.assertEqual(s["min_clearance"], 0)

    def test_a_scene_file_and_its_errors(self):
        with tempfile.TemporaryDirectory() as d:
            good = os.path.join(d, "stage.yaml")
            with open(good, "w") as f:
                f.write("obstacles:\n  - {name: shelf, box: {size: [1.0, 0.4, 0.02]}, "
                        "pose: {position: [0, 0, 0.9]}}\n")
            # planar-arm hangs from its shoulder 0.70 m above the floor: the shelf at 0.9 is
            # above the shoulder (0.2 m) but the string to the 1.0 m rig passes through it.
            p = run("simulate", "--model", "planar-arm", "--scene", good, "--duration", "0.1",
                    "--stop-on-collision", check=False)
            self.assertEqual(p.returncode, 3)
            self.assertIn("string 'tip' and obstacle 'shelf'", p.stderr)
            bad = os.path.join(d, "bad.yaml")
            with open(bad, "w") as f:
                f.write("obstacles:\n  - {name: sofa, mesh: {file: meshes/sofa.stl}}\n")
            p = run("simulate", "--model", "planar-arm", "--scene", bad, check=False)
            self.assertEqual(p.returncode, 2)
            self.assertIn(f"{bad}:2: obstacles[0].mesh.file: cannot load mesh "
                          f"'{d}/meshes/sofa.stl'", p.stderr)
        # A floor 6 cm above PuppetCopter's feet at rest: the run starts standing on it (its rest
        # pose on the floor, not through it), touches it all along and stays still.
        with tempfile.TemporaryDirectory() as d:
            raised = os.path.join(d, "raised.yaml")
            with open(raised, "w") as f:
                f.write("obstacles:\n  - {name: floor, plane: {normal: [0, 0, 1], offset: 0.06}}\n")
            s = json.loads(run("simulate", "--model", "puppetcopter", "--scene", raised,
                               "--duration", "1", "--summary").stdout)
            self.assertEqual(s["rows_in_collision"], 0)
            self.assertEqual(s["min_clearance"], 0)
            self.assertEqual(s["min_clearance_pair"]["second"], "floor")
            self.assertAlmostEqual(s["energy_end"], s["energy_start"], places=9)
        p = run("simulate", "--model", "planar-arm", "--scene", "no-such-scene", check=False)
        self.assertEqual(p.returncode, 2)
        self.assertIn("no such scene", p.stderr)
        p = run("simulate", "--model", "planar-arm", "--stop-on-collision", check=False)
        self.assertEqual(p.returncode, 2)
        self.assertIn("--stop-on-collision needs --scene", p.stderr)


class Plan(unittest.TestCase):
    def test_exact_plan_json_and_csv_resimulate_to_the_goal(self):
        with tempfile.TemporaryDirectory() as d:
            out, csv_path = os.path.join(d, "plan.json"), os.path.join(d, "plan.csv")
            p = run("plan", "--model", "planar-arm", "--scene", "empty", "--planner", "kpiece",
                    "--goal", "q:theta1=0.3;tol=0.05", "--seed", "7", "--rate", "40",
                    "--out", out, "--inputs-csv", csv_path)
            self.assertIn("exact", p.stdout)
            plan = json.load(open(out))
            self.assertEqual(plan["format"], "marionette-plan")
            self.assertEqual(plan["outcome"], "exact")
            self.assertEqual(plan["inputs"]["names"], ["x", "L"])
            self.assertEqual(plan["inputs"]["rate_hz"], 40)
            n = len(plan["inputs"]["samples"])
            self.assertEqual(len(plan["predicted"]["states"]), n)
            self.assertEqual(len(plan["predicted"]["clearance_m"]), n)
            self.assertTrue(plan["collision_free"])
            self.assertEqual(plan["limit_violations"], [])
            # The CSV is what `simulate --inputs` reads; re-simulated at the plan's rate it
            # passes through the goal at the reported time, with the plan's states.
            sim = rows(run("simulate", "--model", "planar-arm", "--inputs", csv_path, "--dt",
                           "0.025", "--duration", str((n - 1) / 40)).stdout)
            self.assertEqual(len(sim) - 1, n)
            k = round(plan["goal_reached_at_s"] * 40)
            theta1 = float(sim[1 + k][1])
            self.assertLessEqual(abs(theta1 - 0.3), 0.05)
            self.assertAlmostEqual(theta1, plan["predicted"]["states"][k][0], places=6)

    def test_approximate_not_found_and_bad_arguments_exit_codes(self):
        # The search cut short: approximate (exit 4).  Optimized, as by default, its path is a
        # warm start like any other, and the optimizer reaches the goal from it: exact.
        short = ["plan", "--model", "planar-arm", "--goal", "q:theta1=0.3", "--max-propagations",
                 "50", "--quiet"]
        p = run(*short, "--raw", check=False)
        self.assertEqual(p.returncode, 4, p.stdout + p.stderr)
        self.assertIn("approximate", p.stdout)
        p = run(*short, check=False)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertIn("exact", p.stdout.splitlines()[0])
        self.assertIn("optimized (interior-point contact-implicit transcription", p.stdout)
        p = run("plan", "--model", "planar-arm", "--goal", "q:theta1=2.5;tol=0.01",
                "--time-limit", "0.000001", "--quiet", check=False)
        self.assertEqual(p.returncode, 5, p.stdout + p.stderr)
        for args, needle in [
            (["--planner", "astar"], "astar"),
            (["--param", "no_such=1"], "no_such"),
            (["--param", "goal_bias=nan"], "goal_bias must be a number in [0, 1]"),
            (["--param", "goal_bias=2"], "goal_bias must be a number in [0, 1]"),
            (["--planner", "kpiece", "--param", "bad_score_factor=0"],
             "bad_score_factor must be a number in (0, 1]"),
            (["--start", "rest-of:x=0"], "--start: no rest pose at the start inputs"),
            (["--time-limit", "-1"], "--time-limit: must be >= 0"),
            (["--start", "q:nope=1"], "nope"),
            (["--goal", "q:theta1"], "NAME=VALUE"),
            (["--goal", "point:nope=0,0,1"], "nope"),
            (["--optimize", "--weight", "nope=1"], "--weight: unknown weight 'nope' (effort,"),
            (["--optimize", "--weight", "swing=-1"], "--weight: swing"),
            (["--optimize", "--weight", "swing"], "--weight: expected NAME=VALUE"),
            (["--optimize", "--margin", "-0.1"], "--margin: must be in [0, 1] m"),
            (["--optimize", "--settle", "nan"], "--settle"),
            (["--optimize", "--optimize-time", "-1"], "--optimize-time: must be"),
            (["--optimize-iterations", "0"], "--optimize-iterations"),
            (["--optimize", "--optimizer", "collocation"],
             "--optimizer: expected transcription, interior-point or ipopt, got 'collocation'"),
            (["--optimize", "--optimizer", "shooting"],
             "--optimizer: expected transcription, interior-point or ipopt, got 'shooting'"),
            (["--raw", "--optimizer", "transcription"], "--optimizer: not with --raw"),
            (["--raw", "--optimize"], "--optimize: not with --raw"),
            (["--raw", "--margin", "0.1"], "--margin: not with --raw"),
            (["--rate", "5000"], "--rate: must be within [1, 1000] Hz"),
        ]:
            goal = [] if "--goal" in args else ["--goal", "q:theta1=0.3"]
            p = run("plan", "--model", "planar-arm", *goal, *args, check=False)
            self.assertEqual(p.returncode, 2, args)
            self.assertIn(needle, p.stderr, args)
        p = run("plan", "--model", "planar-arm", check=False)
        self.assertEqual(p.returncode, 2)
        self.assertIn("--goal", p.stderr)

    def test_the_transcription_optimizer_returns_a_plan_at_rest_that_re_simulates(self):
        # The contact-implicit transcription: a smooth motion near the plan and a settle hold,
        # solved on the integrator's own equations at 25 Hz knots; its inputs, interpolated and
        # re-simulated at the plan's 50 Hz, leave the arm still (a tenth of the stage-worthy
        # 0.1 rad/s: the two steps' motions differ by that little).
        with tempfile.TemporaryDirectory() as d:
            raw, better = os.path.join(d, "raw.json"), os.path.join(d, "better.json")
            run("plan", "--model", "planar-arm", "--goal", "q:theta1=-0.2", "--seed", "1",
                "--raw", "--out", raw, "--quiet")
            p = run("optimize", raw, "--out", better)
            self.assertIn("optimized (interior-point contact-implicit transcription", p.stdout)
            self.assertNotIn("unchanged", p.stdout)
            after = json.load(open(better))
            self.assertEqual(after["outcome"], "exact")
            self.assertLess(after["quality"]["residual_joint_speed_rms"], 0.01)
            self.assertLess(after["quality"]["residual_joint_speed_rms"],
                            json.load(open(raw))["quality"]["residual_joint_speed_rms"])
            # What `plan` returns by default: that search's plan so optimized, with its report.
            default = os.path.join(d, "default.json")
            p = run("plan", "--model", "planar-arm", "--goal", "q:theta1=-0.2", "--seed", "1",
                    "--out", default)
            self.assertIn("optimized (interior-point contact-implicit transcription", p.stdout)
            self.assertIn("stage-worthy", p.stdout)
            self.assertEqual(json.load(open(default))["inputs"], after["inputs"])
            self.assertNotEqual(json.load(open(raw))["inputs"], after["inputs"])
            p = run("plan", "--model", "planar-arm", "--goal", "q:theta1=-0.2", "--seed", "1",
                    "--optimize", "--quiet")  # the default, still accepted
            self.assertIn("optimized (interior-point contact-implicit transcription", p.stdout)

    def test_optimize_a_plan_file_and_a_csv(self):
        with tempfile.TemporaryDirectory() as d:
            raw, csv_path = os.path.join(d, "raw.json"), os.path.join(d, "raw.csv")
            better, better_csv = os.path.join(d, "better.json"), os.path.join(d, "better.csv")
            run("plan", "--model", "planar-arm", "--goal", "q:theta1=-0.2", "--seed", "1",
                "--raw", "--out", raw, "--inputs-csv", csv_path, "--quiet")
            # (Ipopt, the cross-check behind --optimizer: the default's path is tested above.)
            p = run("optimize", raw, "--optimizer", "ipopt", "--out", better,
                    "--inputs-csv", better_csv, "--quiet")
            self.assertIn("optimized (ipopt contact-implicit transcription", p.stdout)
            before, after = json.load(open(raw)), json.load(open(better))
            self.assertEqual(after["outcome"], "exact")
            self.assertEqual(after["planner"], before["planner"])
            self.assertEqual(after["goal"], before["goal"])
            q0, q1 = before["quality"], after["quality"]
            self.assertLess(q1["input_jerk_rms_overall"], q0["input_jerk_rms_overall"] / 3)
            self.assertLessEqual(q1["string_catches"], q0["string_catches"])
            self.assertLess(q1["residual_joint_speed_rms"], q0["residual_joint_speed_rms"])
            # Its CSV re-simulates (at the plan's rate) to its predicted states, and it plays.
            n = len(after["inputs"]["samples"])
            sim = rows(run("simulate", "--model", "planar-arm", "--inputs", better_csv, "--dt",
                           "0.02", "--duration", str((n - 1) / 50)).stdout)
            for k in (n // 2, n - 1):
                self.assertAlmostEqual(float(sim[1 + k][1]), after["predicted"]["states"][k][0],
                                       places=6)
            run("execute", "--plan", better, "--rig", "sim:", "--dry-run")
            # The same motion from the CSV.
            p = run("optimize", "--inputs", csv_path, "--model", "planar-arm", "--goal",
                    "q:theta1=-0.2", "--out", os.path.join(d, "b2.json"), "--quiet")
            self.assertEqual(json.load(open(os.path.join(d, "b2.json")))["outcome"], "exact")
            # From a straight-line guess: no plan, no CSV; the start's inputs held 2 s miss the
            # goal, and the optimized motion reaches it within the limits.
            guess = os.path.join(d, "guess.json")
            p = run("optimize", "--model", "planar-arm", "--goal", "q:theta1=-0.2", "--out", guess)
            self.assertIn("with straight line", p.stdout)
            self.assertIn("goal not reached", p.stdout.split("optimized:")[0])
            g = json.load(open(guess))
            self.assertEqual(g["outcome"], "exact")
            k = round(g["goal_reached_at_s"] * g["inputs"]["rate_hz"])
            self.assertLess(abs(g["predicted"]["states"][k][0] + 0.2), 0.05)
            run("execute", "--plan", guess, "--rig", "sim:", "--dry-run")
            for args, needle in [([raw], "--out"), ([raw, "--inputs", csv_path, "--out", better],
                                                   "not both"),
                                 (["--inputs", csv_path, "--out", better], "--inputs needs --model"),
                                 (["--out", better], "optimize needs PLAN.json, or --model"),
                                 ([raw, "--out", better, "--weight", "x=1"], "unknown weight"),
                                 (["--inputs", csv_path, "--model", "planar-arm", "--goal",
                                   "q:theta1=-0.2", "--rate", "5000", "--out", better],
                                  "--rate: must be within [1, 1000] Hz")]:
                p = run("optimize", *args, check=False)
                self.assertEqual(p.returncode, 2, args)
                self.assertIn(needle, p.stderr, args)

    def test_roadmap_file_is_written_and_reused(self):
        with tempfile.TemporaryDirectory() as d:
            rm = os.path.join(d, "arm.roadmap")
            args = ["plan", "--model", "planar-arm", "--planner", "prm", "--goal",
                    "q:theta1=0.3", "--roadmap", rm, "--roadmap-vertices", "40", "--quiet"]
            first = run(*args).stdout
            self.assertTrue(os.path.exists(rm))
            second = run(*args).stdout
            self.assertIn("built in 0.00 s", second)
            self.assertIn("roadmap 40 vertices", first)


class BenchPlanners(unittest.TestCase):
    def test_logs_in_omplbenchmark_format_and_a_summary(self):
        with tempfile.TemporaryDirectory() as d:
            out = os.path.join(d, "bench")
            p = run("bench", "planners", "--problems", "planar-arm-empty", "--planners",
                    "kpiece,prm", "--runs", "2", "--time-limit", "2", "--raw", "--out", out)
            log = open(os.path.join(out, "planar-arm-empty.log")).read().splitlines()
            # The OMPL benchmark log grammar (OMPL doc/markdown/benchmark.md), line by line.
            self.assertTrue(log[0].startswith("OMPL version 1."))
            self.assertEqual(log[1], "Experiment planar-arm-empty")
            i = log.index("2 runs per planner")
            self.assertTrue(log[i - 3].endswith(" is the random seed"))
            self.assertEqual(log[i - 2], "2 seconds per run")
            self.assertTrue(log[i + 1].endswith(" seconds spent to collect the data"))
            self.assertEqual(log[i + 2], "1 enum type")
            self.assertTrue(log[i + 3].startswith("status|"))
            self.assertEqual(log[i + 4], "2 planners")
            j = i + 5
            for name in ("control_KPIECE1", "marionette_RestPosePRM"):
                self.assertEqual(log[j], name)
                ncommon = int(log[j + 1].split()[0])
                j += 2 + ncommon
                nprops = int(log[j].split()[0])
                props = [line.rsplit(" ", 1) for line in log[j + 1:j + 1 + nprops]]
                for prop, kind in props:
                    self.assertIn(kind, ("BOOLEAN", "INTEGER", "REAL", "ENUM"))
                names = [prop for prop, _ in props]
                for required in ("time", "solved", "status", "plan duration",
                                 "solution clearance"):
                    self.assertIn(required, names)
                j += 1 + nprops
                self.assertEqual(log[j], "2 runs")
                for run_line in log[j + 1:j + 3]:
                    values = run_line.split("; ")
                    self.assertEqual(len(values), nprops + 1)  # each value ends with "; "
                    v = dict(zip(names, values))
                    self.assertEqual(v["solved"], "1")  # an easy problem: every run exact
                    self.assertEqual(v["status"], "6")  # OMPL's EXACT_SOLUTION
                    self.assertGreater(float(v["plan duration"]), 0.5)
                    self.assertGreater(float(v["time"]), 0.0)
                self.assertEqual(log[j + 3], ".")
                j += 4
            self.assertEqual(j, len(log))
            # The summary table, printed and saved.
            self.assertIn("| planar-arm-empty | kpiece | 2 | 2 | 0 | 100 % |", p.stdout)
            self.assertIn("| planar-arm-empty | prm | 2 | 2 | 0 | 100 % |", p.stdout)
            self.assertIn("| planar-arm-empty | prm |", open(os.path.join(out, "summary.md")).read())
            # OMPL's own script turns the log into a Planner Arena database, when installed.
            script = "/usr/bin/ompl_benchmark_statistics"
            if os.path.exists(script):
                db = os.path.join(d, "bench.db")
                subprocess.run([sys.executable, script, os.path.join(out, "planar-arm-empty.log"),
                                "-d", db], check=True, capture_output=True, timeout=120)
                import sqlite3
                rows_ = sqlite3.connect(db).execute(
                    "SELECT p.name, count(*), sum(r.solved) FROM runs r JOIN plannerConfigs p "
                    "ON r.plannerid = p.id GROUP BY p.name ORDER BY p.name").fetchall()
                self.assertEqual(rows_, [("control_KPIECE1", 2, 2),
                                         ("marionette_RestPosePRM", 2, 2)])

    def test_optimize_logs_each_runs_optimization_as_the_plan_command_gives_it(self):
        with tempfile.TemporaryDirectory() as d:
            out = os.path.join(d, "bench")
            p = run("bench", "planners", "--problems", "planar-arm-empty", "--planners", "kpiece",
                    "--runs", "2", "--time-limit", "2", "--optimize-time", "20",
                    "--save-plans", "--out", out)  # optimized: the default
            log = open(os.path.join(out, "planar-arm-empty.log")).read().splitlines()
            goal = next(l for l in log if ", goal " in l).split(", goal ")[1]
            i = next(k for k, l in enumerate(log) if l.endswith("properties for each run"))
            n = int(log[i].split()[0])
            names = [l.rsplit(" ", 1)[0] for l in log[i + 1:i + 1 + n]]
            for required in ("string catches", "snaps", "stage worthy", "optimization success",
                             "optimization time", "optimized input jerk",
                             "optimized string catches", "optimized snaps",
                             "optimized residual joint speed", "optimized solution clearance",
                             "optimized stage worthy"):
                self.assertIn(required, names)
            runs = [dict(zip(names, l.split("; "))) for l in log[i + 2 + n:i + 4 + n]]
            for r in runs:
                self.assertEqual(r["optimization tried"], "1")
                # The same plan and optimization through `marionette plan` (--raw, and not): the
                # log's figures are that plan's file's, before and after.
                plain, better = os.path.join(d, "plain.json"), os.path.join(d, "better.json")
                common = ["plan", "--model", "planar-arm", "--scene", "empty", "--goal", goal,
                          "--planner", "kpiece", "--seed", r["seed"], "--time-limit", "2",
                          "--quiet"]
                run(*common, "--raw", "--out", plain)
                run(*common, "--optimize-time", "20", "--out", better)
                q0 = json.load(open(plain))["quality"]
                q1 = json.load(open(better))["quality"]
                self.assertAlmostEqual(float(r["input jerk"]), q0["input_jerk_rms_overall"],
                                       places=5)
                self.assertEqual(int(r["string catches"]), q0["string_catches"])
                self.assertEqual(int(r["snaps"]), q0["snaps"])
                self.assertEqual(int(r["optimized snaps"]), q1["snaps"])
                # Stage-worthy by the thresholds, from each plan file's own figures.
                for key, made in (("stage worthy", plain), ("optimized stage worthy", better)):
                    f = json.load(open(made))
                    q = f["quality"]
                    worthy = (f["outcome"] == "exact" and q["settle_s"] == 1
                              and f["min_stage_clearance_m"] >= 0.02
                              and f["min_clearance_m"] >= 0.005 and q["snaps"] == 0
                              and q["peak_tension_ratio"] <= 3
                              and q["residual_joint_speed_rms"] <= 0.1)
                    self.assertEqual(r[key], "1" if worthy else "0", key)
                self.assertAlmostEqual(float(r["optimized input jerk"]),
                                       q1["input_jerk_rms_overall"], places=5)
                # The plans it saved are those plans.
                stem = os.path.join(out, "plans", "planar-arm-empty-kpiece-" + r["seed"])
                for saved, made in ((stem + ".json", plain), (stem + "-optimized.json", better)):
                    self.assertEqual(json.load(open(saved))["inputs"],
                                     json.load(open(made))["inputs"])
                self.assertAlmostEqual(float(r["optimized residual joint speed"]),
                                       q1["residual_joint_speed_rms"], places=6)
                self.assertEqual(r["optimization success"], "1")  # the arm: exact and better
                self.assertLess(float(r["optimized residual joint speed"]),
                                float(r["residual joint speed"]))
            self.assertIn("| planar-arm-empty | kpiece | 2 | 2 |", p.stdout)  # optimized, exact
            # Each saved plan re-simulates from its CSV and passes execute --dry-run; a plan
            # whose predicted states were altered is caught.
            check = [sys.executable, os.path.join(SRC, "benchmarks", "check_plans.py"), out,
                     "--marionette", BIN]
            c = subprocess.run(check, capture_output=True, text=True, timeout=300)
            self.assertEqual(c.returncode, 0, c.stdout + c.stderr)
            self.assertIn("4/4 plans re-simulate within 1e-06", c.stdout)
            altered = os.path.join(out, "plans", "planar-arm-empty-kpiece-1-optimized.json")
            plan = json.load(open(altered))
            plan["predicted"]["states"][-1][0] += 1e-5
            json.dump(plan, open(altered, "w"))
            c = subprocess.run(check, capture_output=True, text=True, timeout=300)
            self.assertEqual(c.returncode, 1, c.stdout + c.stderr)
            self.assertIn("FAIL planar-arm-empty-kpiece-1-optimized.json", c.stdout)

    def test_bad_arguments(self):
        for args, needle in ((["bench", "planners", "--problems", "nope", "--out", "x"], "nope"),
                             (["bench", "planners", "--margin", "-1", "--out", "x"], "--margin"),
                             (["bench", "planners", "--weight", "wobble=1", "--out", "x"],
                              "wobble"),
                             (["bench", "planners", "--raw", "--margin", "0.1", "--out", "x"],
                              "--margin: not with --raw"),
                             (["bench", "planners", "--planners", "fast", "--out", "x"], "fast"),
                             (["bench", "planners", "--runs", "0", "--out", "x"], "--runs"),
                             (["bench", "planners"], "--out"),
                             (["bench", "robots", "--out", "x"], "bench planners")):
            p = run(*args, check=False)
            self.assertEqual(p.returncode, 2, args)
            self.assertIn(needle, p.stderr)


class Perform(unittest.TestCase):
    """`perform` as a puppeteer runs it: a marker CSV played by the suspended mass, the plan file
    re-read; bad files and flags exit 2 naming the file, line and field or the flag."""

    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.addCleanup(self.dir.cleanup)

    def write(self, name, text):
        path = os.path.join(self.dir.name, name)
        with open(path, "w") as f:
            f.write(text)
        return path

    def test_markers_are_played_and_the_plan_file_has_targets_and_tracking(self):
        csv_path = self.write("sway.csv", "t,mass_x,mass_y,mass_z\n0,0,0,0.5\n2,0.04,0,0.5\n"
                                          "4,0.04,0,0.46\n")
        out = os.path.join(self.dir.name, "sway.json")
        p = run("perform", "--model", "suspended-mass", "--markers", csv_path, "--loop", "2",
                "--speed", "2", "--out", out)
        self.assertIn("tracking", p.stdout)
        self.assertIn("untargeted points, farthest from where they hang: robot 0.0", p.stdout)
        plan = json.load(open(out))
        self.assertEqual(plan["targets"]["names"], ["mass"])
        self.assertEqual(len(plan["targets"]["samples"]), len(plan["inputs"]["samples"]))
        # 4 s twice as fast, twice, with a 1 s return: 5 s.
        self.assertAlmostEqual(plan["inputs"]["duration_s"], 5.0, places=6)
        self.assertLess(plan["tracking"]["dynamic"]["mass"]["rms_m"], 0.02)
        # The robot's point (at xr) strays as far as xr moves from its start.
        xr = [row[0] for row in plan["inputs"]["samples"]]
        self.assertAlmostEqual(plan["tracking"]["untargeted"]["robot"]["max_m"],
                               max(abs(x - xr[0]) for x in xr), places=9)
        self.assertIn("points", plan["predicted"])
        self.assertEqual(plan["limit_violations"], [])
        # The clip's file name, not where it was read from.
        self.assertEqual(plan["targets"]["source"], "sway.csv x2")
        self.assertNotIn(self.dir.name, open(out).read())

    def test_a_performance_exits_0_only_as_a_show_and_prints_its_quality(self):
        # The mass moved 8 cm in 0.6 s, followed within 10 cm by the kinematic step: with no hold
        # after it (--settle 0), nothing settles its end, and it swings on: approximate, exit 4,
        # the headline naming the swing first, the quality and stage lines as `plan` prints them.
        # With the hold (the default), the end settles: a show, exit 0.
        fast = self.write("fast.csv", "t,mass_x,mass_y,mass_z\n0,0,0,0.5\n0.6,0.08,0,0.5\n")
        out = os.path.join(self.dir.name, "fast.json")
        args = ["perform", "--model", "suspended-mass", "--markers", fast, "--kinematic-only",
                "--tolerance", "0.1", "--quiet", "--out", out]
        p = run(*args, "--settle", "0", check=False)
        self.assertEqual(p.returncode, 4, p.stdout + p.stderr)
        self.assertIn("(kinematic step): approximate -- not stage-worthy: swing ", p.stdout)
        self.assertIn("\n  quality: input jerk rms ", p.stdout)
        self.assertIn("after a 1 s hold", p.stdout)
        self.assertIn("\n  not stage-worthy: swing ", p.stdout)
        plan = json.load(open(out))
        self.assertEqual(plan["outcome"], "approximate")
        self.assertGreater(plan["quality"]["residual_joint_speed_rms"], 0.1)
        p = run(*args)
        self.assertIn(": exact -- the end settled over ", p.stdout)
        self.assertIn("\n  stage-worthy\n", p.stdout)
        plan = json.load(open(out))
        self.assertEqual(plan["outcome"], "exact")
        self.assertLessEqual(plan["quality"]["residual_joint_speed_rms"], 0.1)

    def test_a_clip_out_of_reach_is_retargeted_and_says_how_far(self):
        # The mass asked 1 m down, where its string lets it go 0.45 m: fitted into reach, the
        # plan's targets are the fitted track, and how far it is from the clip is printed and
        # kept; over the reach tolerance, the plan is approximate.  --no-retarget: the clip.
        dive = self.write("dive.csv", "t,mass_x,mass_y,mass_z\n0,0,0,0.5\n1,0,0,-0.5\n"
                                      "2,0,0,-0.5\n3,0,0,0.5\n")
        out = os.path.join(self.dir.name, "dive.json")
        p = run("perform", "--model", "suspended-mass", "--markers", dive, "--kinematic-only",
                "--out", out, check=False)
        self.assertEqual(p.returncode, 4, p.stderr)
        self.assertIn("retargeted into reach", p.stdout)
        self.assertIn("fitted into reach farther than 0.06 m rms", p.stdout)
        plan = json.load(open(out))
        fit = plan["tracking"]["retarget"]["mass"]
        self.assertGreater(fit["rms_m"], 0.2)
        self.assertGreater(min(row[2] for row in plan["targets"]["samples"]), -0.2)
        self.assertIn("out of reach, fitted: z x0.", plan["tracking"]["retarget_spans"][0]["reason"])
        p = run("perform", "--model", "suspended-mass", "--markers", dive, "--kinematic-only",
                "--no-retarget", "--out", out, check=False)
        self.assertEqual(p.returncode, 4, p.stderr)
        self.assertNotIn("retargeted into reach", p.stdout)
        plan = json.load(open(out))
        self.assertEqual(plan["tracking"]["retarget"], {})
        self.assertAlmostEqual(min(row[2] for row in plan["targets"]["samples"]), -0.5, places=9)

    def test_reach_prints_extents_and_writes_the_clouds(self):
        # The suspended mass is held r below the robot: x in [-1, 1], z in [0.05, 0.95].
        out = os.path.join(self.dir.name, "reach.json")
        page = os.path.join(self.dir.name, "reach.html")
        p = run("reach", "--model", "suspended-mass", "--point", "mass", "--poses", "30",
                "--swings", "4", "--json", out, "--out", page)
        self.assertIn("30 of 30 rig poses held", p.stdout)
        self.assertIn("4 swings (0 failed)", p.stdout)
        r = json.load(open(out))
        mass = r["points"]["mass"]
        self.assertEqual(len(mass["held"]["points_m"]), 30)
        for x, y, z in mass["held"]["points_m"]:
            self.assertTrue(-1 - 1e-9 <= x <= 1 + 1e-9 and 0.05 - 1e-9 <= z <= 0.95 + 1e-9)
        self.assertGreater(len(mass["swung"]["points_m"]), 4 * 50)
        self.assertIn('"clouds":[{"point":"mass","name":"mass held"', open(page).read())
        for args, needle in ((["--point", "nose"], "--point: model suspended-mass has no point"),
                             (["--point", "mass", "--poses", "0"], "--poses"),
                             (["--point", "mass", "--swings", "-1"], "--swings"),
                             ([], "reach needs --point")):
            p = run("reach", "--model", "suspended-mass", *args, "--json", out + "2",
                    check=False)
            self.assertEqual(p.returncode, 2, (args, p.stderr))
            self.assertIn(needle, p.stderr)
            self.assertFalse(os.path.exists(out + "2"))

    def test_bad_sources_and_flags_exit_2_naming_them(self):
        bad = self.write("bad.csv", "t,mass_x,mass_y,mass_z\n0,0,0,0.5\n1,0,zero,0.5\n")
        ok = self.write("ok.csv", "t,mass_x,mass_y,mass_z\n0,0,0,0.5\n1,0,0,0.5\n")
        out = os.path.join(self.dir.name, "x.json")
        for args, needles in (
                (["--markers", bad], [bad + ":3:", "column 'mass_y'", "zero"]),
                (["--keyframes", self.write("k.yaml", "keyframes:\n  - {t: 0}\n"
                                                      "  - {t: 1, joints: {elbow: 1}}\n")],
                 [":3:", "keyframes[1].joints.elbow"]),
                (["--bvh", self.write("b.bvh", "HIERARCHY\nROOT Hips\n{\n  OFFSET 0 0\n")],
                 ["b.bvh:", "Hips.OFFSET"]),
                (["--bvh", self.write("a.bvh", "HIERARCHY\nROOT Hips\n{\n  OFFSET 0 0 0\n"
                                               "  CHANNELS 3 Xposition Yposition Zposition\n}\n"
                                               "MOTION\nFrames: 2\nFrame Time: 0.5\n0 0 0\n"
                                               "0 0 1\n")], ["no built-in map", "--map"]),
                (["--pcr", self.write("p.pcr", "0\t1\n")], ["PuppetCopter"]),
                (["--markers", ok, "--speed", "0"], ["--speed"]),
                (["--markers", ok, "--rate", "5"], ["--rate: must be in [10, 1000] Hz"]),
                (["--markers", ok, "--reach-tolerance", "-1"],
                 ["--reach-tolerance: must be in [0, 1] m"]),
                (["--markers", ok, "--weight", "settle=5"],
                 ["--weight", "settle", "no such term", "complementarity and tracking"]),
                (["--markers", ok, "--calm", "-1"], ["--calm: must be in [0, 100]"]),
                (["--markers", ok, "--free", "robot,tail"],
                 ["--free: model suspended-mass has no point 'tail'"]),
                ([], ["needs a source"])):
            p = run("perform", "--model", "suspended-mass", *args, "--out", out, check=False)
            self.assertEqual(p.returncode, 2, (args, p.stderr))
            for needle in needles:
                self.assertIn(needle, p.stderr, args)
            self.assertFalse(os.path.exists(out))


class Hardening(unittest.TestCase):
    """Work a file or a flag can ask for is bounded, one number grammar, outputs never replace a
    special file."""

    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()

    def tearDown(self):
        self.dir.cleanup()

    def path(self, name):
        return os.path.join(self.dir.name, name)

    def test_stacked_contact_planes_are_bounded(self):
        def planes(n, at):
            path = self.path(f"planes{n}.yaml")
            with open(path, "w") as f:
                f.write("obstacles:\n" + "".join(
                    f"  - {{name: p{i}, plane: {{normal: [0, 0, 1], offset: {at + 1e-5 * i}}}}}\n"
                    for i in range(n)))
            return path
        # 1,000 stacked planes: refused at the 65th the puppet may touch, naming it.
        p = run("simulate", "--model", "puppetcopter", "--scene", planes(1000, 0.2),
                "--duration", "0.1", "--summary", check=False)
        self.assertEqual(p.returncode, 2, p.stderr)
        self.assertIn("planes1000.yaml:66: obstacles[64].contact: 65 obstacles the puppet may "
                      "touch", p.stderr)
        # 64 of them, through the puppet's legs and below its feet: each simulation ends, done or
        # refused, its work bounded (the rest pose's active rows, the mode problem's size).
        for at in (0.19, 0.2, 0.25):
            p = run("simulate", "--model", "puppetcopter", "--scene", planes(64, at),
                    "--duration", "0.1", "--summary", check=False)
            self.assertIn(p.returncode, (0, 1, 2), p.stderr)
            if p.returncode == 2:
                self.assertIn("rest pose", p.stderr)

    def test_inputs_too_slow_for_their_range_are_refused(self):
        with open(os.path.join(SRC, "models", "builtin", "planar-arm.yaml")) as f:
            text = f.read()
        self.assertIn("max_speed: 0.5", text)
        for speed in ("1e-6", "1e-3"):
            model = self.path(f"slow{speed}.yaml")
            with open(model, "w") as f:
                f.write(text.replace("max_speed: 0.5", f"max_speed: {speed}", 1))
            for args in (["plan", "--model", model, "--goal", "q:theta1=0.3;tol=0.05",
                          "--planner", "prm"],
                         ["reach", "--model", model, "--point", "tip", "--swings", "1"]):
                p = run(*args, check=False)
                self.assertEqual(p.returncode, 2, (args, p.stderr))
                self.assertIn(".max_speed", p.stderr)
                self.assertIn("a move may take at most 600 s", p.stderr)

    def test_one_number_grammar_for_flags_and_files(self):
        for value in ("0x1", " 1", "1 ", "inf", "nan", "1e", "+-1"):
            p = run("simulate", "--model", "planar-arm", "--duration", value, check=False)
            self.assertEqual(p.returncode, 2, (value, p.stderr))
            self.assertIn("--duration", p.stderr)
        with open(os.path.join(SRC, "models", "builtin", "planar-arm.yaml")) as f:
            text = f.read()
        with open(self.path("hex.yaml"), "w") as f:
            f.write(text.replace("max_speed: 0.5", "max_speed: 0x1", 1))
        p = run("simulate", "--model", self.path("hex.yaml"), "--duration", "0.1", check=False)
        self.assertEqual(p.returncode, 2, p.stderr)
        self.assertIn("expected a finite number (got '0x1')", p.stderr)

    def test_a_retarget_scale_that_reduces_a_clip_to_nothing_is_refused(self):
        bvh = self.path("a.bvh")
        with open(bvh, "w") as f:
            f.write("HIERARCHY\nROOT Hips\n{\n  OFFSET 0 0 0\n  CHANNELS 3 Xposition Yposition "
                    "Zposition\n}\nMOTION\nFrames: 2\nFrame Time: 0.5\n0 0 0\n0 0 1\n")
        for scale in ("1e-300", "0", "1e9"):
            with open(self.path("map.yaml"), "w") as f:
                f.write(f"scale: {scale}\nfacing: [Hips, Hips]\npoints:\n  mass: Hips\n")
            p = run("perform", "--model", "suspended-mass", "--bvh", bvh, "--map",
                    self.path("map.yaml"), "--out", self.path("x.json"), check=False)
            self.assertEqual(p.returncode, 2, (scale, p.stderr))
            self.assertIn("scale: must be in [0.001, 1000]", p.stderr)

    def test_outputs_write_through_special_files_and_follow_links(self):
        args = ["plan", "--model", "suspended-mass", "--goal", "q:xm=0.06;tol=0.05", "--seed",
                "1", "--raw", "--quiet"]
        # A link: the file it names is written, the link stays.
        with open(self.path("target.json"), "w") as f:
            f.write("old")
        os.symlink(self.path("target.json"), self.path("link.json"))
        run(*args, "--out", self.path("link.json"))
        self.assertTrue(os.path.islink(self.path("link.json")))
        with open(self.path("target.json")) as f:
            self.assertEqual(json.load(f)["model"], "suspended-mass")
        # A FIFO: its reader gets the plan, and it stays a FIFO.
        fifo = self.path("plan.fifo")
        os.mkfifo(fifo)
        got = {}
        def read():
            with open(fifo) as f:
                got["text"] = f.read()
        reader = threading.Thread(target=read)
        reader.start()
        run(*args, "--out", fifo)
        reader.join(timeout=60)
        self.assertEqual(json.loads(got["text"])["model"], "suspended-mass")
        self.assertTrue(stat.S_ISFIFO(os.lstat(fifo).st_mode))
        # A device: /dev/null takes it, /dev/full refuses it (exit 2, said), both stay devices.
        run(*args, "--out", "/dev/null")
        p = run(*args, "--out", "/dev/full", check=False)
        self.assertNotEqual(p.returncode, 0)
        self.assertIn("/dev/full", p.stderr)
        for device in ("/dev/null", "/dev/full"):
            self.assertTrue(stat.S_ISCHR(os.lstat(device).st_mode), device)
        # A directory, a name too long: refused.
        for bad in (self.dir.name, self.path("n" * 300)):
            p = run(*args, "--out", bad, check=False)
            self.assertEqual(p.returncode, 2, p.stderr)


if __name__ == "__main__":
    BIN, SRC = sys.argv[1], sys.argv[2]
    unittest.main(argv=[sys.argv[0], "-v", *sys.argv[3:]])  # then any test names
