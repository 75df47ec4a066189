#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""`marionette render` as a user runs it, without a browser: pages for a plan, a rest pose, a
simulated input sequence and two plans compared; bad input (a plan for another model, a missing mesh, a truncated plan,
options out of range) gives a clear error and leaves no file behind, nor touches one already
there.  (tests/viewer_browser_test.mjs opens the pages in Chromium.)
Usage: render_cli_test.py PATH/TO/marionette SOURCE_DIR"""
import json
import math
import os
import re
import subprocess
import sys
import tempfile
import unittest

BIN = None
SOURCE = None


def run(*args, cwd=None):
    return subprocess.run([BIN, *args], capture_output=True, text=True, timeout=300, cwd=cwd)


def view_document(html_path):
    with open(html_path, encoding="utf-8") as f:
        page = f.read()
    m = re.search(r'<script type="application/json" id="marionette-view">(.*?)</script>', page, re.S)
    assert m, "no view document in the page"
    return page, json.loads(m.group(1))


class RenderCli(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.dir = cls.tmp.name
        r = run("plan", "--model", "planar-arm", "--planner", "est", "--goal", "q:theta1=0.3",
                "--seed", "1", "--time-limit", "20", "--out", "plan.json", "--quiet", cwd=cls.dir)
        assert r.returncode == 0, r.stderr
        cls.plan = os.path.join(cls.dir, "plan.json")
        with open(cls.plan) as f:
            cls.plan_json = json.load(f)
        # Another plan of the same problem, at another rate and of another duration, to compare.
        r = run("plan", "--model", "planar-arm", "--planner", "est", "--goal", "q:theta1=0.3",
                "--seed", "2", "--rate", "25", "--time-limit", "20", "--out", "other.json",
                "--quiet", cwd=cls.dir)
        assert r.returncode == 0, r.stderr
        cls.other = os.path.join(cls.dir, "other.json")
        with open(cls.other) as f:
            cls.other_json = json.load(f)

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def path(self, name):
        return os.path.join(self.dir, name)

    def assert_refused(self, args, *needles, out="out.html"):
        """The command fails with exit 2, stderr names what is wrong, and `out` -- which holds
        a sentinel -- is untouched, with no temporary left beside it."""
        target = self.path(out)
        with open(target, "w") as f:
            f.write("sentinel")
        r = run(*args, "--out", target, cwd=self.dir)
        self.assertEqual(r.returncode, 2, r.stderr)
        for needle in needles:
            self.assertIn(needle, r.stderr)
        with open(target) as f:
            self.assertEqual(f.read(), "sentinel")
        self.assertEqual([n for n in os.listdir(self.dir) if n.startswith(out + ".")], [])
        os.remove(target)

    def test_a_plan_page_holds_the_plan(self):
        r = run("render", self.plan, "--out", self.path("plan.html"))
        self.assertEqual(r.returncode, 0, r.stderr)
        page, doc = view_document(self.path("plan.html"))
        n = len(self.plan_json["inputs"]["samples"])
        self.assertEqual(len(doc["t"]), n)
        self.assertAlmostEqual(doc["t"][-1], self.plan_json["inputs"]["duration_s"], places=9)
        self.assertEqual(doc["inputs"]["names"], self.plan_json["inputs"]["names"])
        self.assertEqual(doc["tensions"]["names"], self.plan_json["predicted"]["string_names"])
        for row_doc, row_plan in zip(doc["inputs"]["samples"], self.plan_json["inputs"]["samples"]):
            for a, b in zip(row_doc, row_plan):
                self.assertAlmostEqual(a, b, delta=1e-6 * (1 + abs(b)))
        # The arm's inputs: a string length (m) and joint angles (rad) are told apart.
        self.assertTrue(set(doc["inputs"]["units"]) <= {"m", "rad"})
        # Planned on the empty stage: the page's clearance (FCL, recomputed) is the plan's.
        self.assertEqual(self.plan_json["scene"], "empty")
        for a, b in zip(doc["clearance"]["samples"], self.plan_json["predicted"]["clearance_m"]):
            self.assertAlmostEqual(a, b, delta=1e-6)
        self.assertNotIn("http://", page.split('id="marionette-view"')[0])
        self.assertIn("three", page.lower())

    def test_rest_pose_of_every_builtin_model_in_a_scene(self):
        models = json.loads(run("models", "--json").stdout)
        for m in models:
            with self.subTest(model=m["name"]):
                out = self.path(m["name"] + ".html")
                r = run("render", "--model", m["name"], "--scene", "empty", "--out", out)
                self.assertEqual(r.returncode, 0, r.stderr)
                _, doc = view_document(out)
                self.assertEqual(len(doc["t"]), 1)
                self.assertEqual([s["name"] for s in doc["strings"]], m["strings"])
                self.assertEqual(len(doc["clearance"]["samples"]), 1)

    def render_window_example(self, example, duration_s):
        """The suspended mass in the window scene driven by examples/EXAMPLE.csv: its view."""
        csv = os.path.join(SOURCE, "examples", example + ".csv")
        out = self.path(example + ".html")
        r = run("render", "--model", "suspended-mass", "--scene", "window", "--inputs", csv,
                "--duration", str(duration_s), "--out", out)
        self.assertEqual(r.returncode, 0, r.stderr)
        return view_document(out)[1]

    def test_simulated_inputs_in_the_window_scene(self):
        doc = self.render_window_example("mass-through-window", 8)
        self.assertEqual(len(doc["t"]), 401)  # 8 s at the default 20 ms step, and t = 0
        clearance = doc["clearance"]["samples"]
        k = doc["clearance"]["min_index"]
        # docs/cli.md's figure for this run: 8 cm over the sill at about 3 s (10 ms steps there).
        self.assertAlmostEqual(clearance[k], 0.0815, delta=0.01)
        self.assertAlmostEqual(doc["t"][k], 3.0, delta=0.3)
        self.assertEqual(doc["collision"]["first_index"], -1)
        names = [o["name"] for o in doc["obstacles"]]
        self.assertIn("wall_below_window", names)

    def test_a_collision_is_marked(self):
        doc = self.render_window_example("mass-into-wall", 2)
        # docs/cli.md's run (10 ms steps) hits the sill at 0.77 s; at 20 ms steps, 0.78 s.
        k = doc["collision"]["first_index"]
        self.assertAlmostEqual(doc["t"][k], 0.78, delta=0.021)
        self.assertIn("obstacle 'wall_below_window'", doc["collision"]["pair"])
        self.assertEqual(doc["clearance"]["samples"][k], 0.0)
        problems = [value for key, value, bad in doc["info"] if bad]
        self.assertTrue(any(p.startswith("collision at 0.78 s: link 'mass'") for p in problems),
                        problems)

    def test_a_plan_for_another_model(self):
        self.assert_refused(["render", self.plan, "--model", "puppetcopter"],
                            "plan.json: model: the plan is for 'planar-arm', not 'puppetcopter'")

    def test_a_truncated_plan(self):
        with open(self.plan) as f:
            text = f.read()
        cut = self.path("cut.json")
        with open(cut, "w") as f:
            f.write(text[: len(text) // 3])
        self.assert_refused(["render", cut], "cut.json:", "truncated")

    def test_a_missing_mesh(self):
        scene = self.path("scene.yaml")
        with open(scene, "w") as f:
            f.write("name: broken\nobstacles:\n  - name: statue\n    mesh: {file: meshes/statue.stl}\n"
                    "    pose: {position: [0, 0, 0.5]}\n")
        self.assert_refused(["render", "--model", "planar-arm", "--scene", scene], "statue.stl")

    def test_bad_options(self):
        self.assert_refused(["render", self.plan, "--at", "99"], "--at: 99 s is outside the motion")
        self.assert_refused(["render", self.plan, "--points", "nose"],
                            "'nose' is not a named point of 'planar-arm'")
        self.assert_refused(["render", "--model", "no-such-model"], "no-such-model")
        r = run("render", self.plan)
        self.assertEqual(r.returncode, 2)
        self.assertIn("nothing to write", r.stderr)

    def test_compare_holds_the_second_plan_as_its_own_motion(self):
        out = self.path("cmp.html")
        r = run("render", self.plan, "--compare", self.other, "--out", out)
        self.assertEqual(r.returncode, 0, r.stderr)
        _, doc = view_document(out)
        a, b, c = self.plan_json, self.other_json, doc["compare"]
        self.assertEqual((doc["name"], c["name"]), ("plan.json", "other.json"))
        # Different rates and durations, each kept: the page's timeline spans the longer.
        self.assertEqual((a["inputs"]["rate_hz"], b["inputs"]["rate_hz"]), (50, 25))
        self.assertNotEqual(a["inputs"]["duration_s"], b["inputs"]["duration_s"])
        self.assertEqual(len(doc["t"]), len(a["inputs"]["samples"]))
        self.assertEqual(len(c["t"]), len(b["inputs"]["samples"]))
        self.assertEqual(c["rate_hz"], 25)
        self.assertAlmostEqual(c["t"][-1], b["inputs"]["duration_s"], places=9)
        # The compared samples are the other plan's: its inputs, its predicted tensions and
        # clearance, and its predicted states -- link 1 turns by theta1 about y, so its pose's
        # quaternion (x, y, z, w) is (0, sin theta1/2, 0, cos theta1/2).
        self.assertEqual(b["predicted"]["state_names"][0], "theta1")
        self.assertEqual(doc["frames"][0], "link1")
        for i, (u, states, tensions, clearance) in enumerate(zip(
                b["inputs"]["samples"], b["predicted"]["states"], b["predicted"]["tensions_N"],
                b["predicted"]["clearance_m"])):
            for x, y in zip(c["inputs"]["samples"][i], u):
                self.assertAlmostEqual(x, y, delta=1e-6)
            for x, y in zip(c["tensions"]["samples"][i], tensions):
                self.assertAlmostEqual(x, y, delta=1e-6 * (1 + y))
            self.assertAlmostEqual(c["clearance"]["samples"][i], clearance, delta=1e-6)
            pose = c["frame_poses"][i]
            self.assertAlmostEqual(2 * math.atan2(pose[4], pose[6]), states[0], delta=1e-6)
        # The shown plan is still the first one.
        for x, y in zip(doc["tensions"]["samples"][-1], a["predicted"]["tensions_N"][-1]):
            self.assertAlmostEqual(x, y, delta=1e-6 * (1 + y))
        # Both plans' quality figures, for the header.
        for d, plan in ((doc, a), (c, b)):
            quality = dict(d["quality"])
            self.assertEqual(quality["string catches"], str(plan["quality"]["string_catches"]))
            self.assertEqual(quality["input jerk rms"],
                             "%.3g /s³" % plan["quality"]["input_jerk_rms_overall"])

    def test_compare_names_plans_of_the_same_file_name_by_their_paths(self):
        os.makedirs(self.path("optimized"), exist_ok=True)
        same_name = self.path("optimized/plan.json")
        with open(self.other) as f, open(same_name, "w") as g:
            g.write(f.read())
        out = self.path("same.html")
        r = run("render", "plan.json", "--compare", "optimized/plan.json", "--out", out,
                cwd=self.dir)
        self.assertEqual(r.returncode, 0, r.stderr)
        _, doc = view_document(out)
        self.assertEqual((doc["name"], doc["compare"]["name"]),
                         ("plan.json", "optimized/plan.json"))

    def test_compare_in_another_scene_says_so(self):
        out = self.path("scene.html")
        r = run("render", self.plan, "--compare", self.other, "--scene", "pillars", "--out", out)
        self.assertEqual(r.returncode, 0, r.stderr)
        _, doc = view_document(out)
        self.assertEqual(dict(doc["setting"])["scene"], "pillars")
        problems = [value for key, value, bad in doc["compare"]["info"] if bad]
        self.assertIn("planned in 'empty', shown in 'pillars'", problems)

    def test_compare_a_plan_for_another_model(self):
        r = run("plan", "--model", "suspended-mass", "--goal", "q:xm=0.05", "--seed", "1",
                "--out", "mass.json", "--quiet", cwd=self.dir)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assert_refused(["render", self.plan, "--compare", self.path("mass.json")],
                            "mass.json: model: the plan is for 'suspended-mass', not 'planar-arm'")

    def test_compare_needs_two_plan_files(self):
        csv = os.path.join(SOURCE, "examples", "mass-through-window.csv")
        self.assert_refused(["render", self.plan, "--compare", self.other, "--inputs", csv],
                            "--compare: compares two plan files; not with --inputs")
        self.assert_refused(["render", "--model", "suspended-mass", "--inputs", csv,
                             "--compare", self.other],
                            "--compare: compares two plan files; not with --inputs")
        self.assert_refused(["render", "--model", "planar-arm", "--compare", self.other],
                            "--compare: give the plan to compare it with first")
        self.assert_refused(["render", self.plan, "--compare", self.path("missing.json")],
                            "missing.json")

    def test_a_bad_camera_or_fit_is_refused_naming_its_flag_and_writes_nothing(self):
        out = self.path("cam.html")
        for flags, message in [
                (["--camera", "diagonal"], "--camera: expected front, side, top or a direction"),
                (["--camera", "0,0,0"], "--camera: the direction X,Y,Z must not be zero"),
                (["--camera", "1,2"], "--camera: expected"),
                (["--camera", "1,2,nan"], "--camera: expected"),
                (["--fit", "everything"], "--fit: expected puppet, motion or stage")]:
            self.assert_refused(["render", self.plan, "--out", out] + flags, message)
            self.assertFalse(os.path.exists(out))
        # A good one writes the page with that view.
        r = run("render", self.plan, "--out", out, "--camera", "side", "--fit", "stage")
        self.assertEqual(r.returncode, 0, r.stderr)
        with open(out) as f:
            page = f.read()
        # From the audience's right, a little above: (1, 0, 0.25) normalized.
        self.assertIn('"camera_direction":[0.9701425,0,0.2425356]', page)
        self.assertIn('"fit":"stage"', page)

    def test_png_without_a_browser_is_a_clear_error_and_writes_nothing(self):
        png = self.path("x.png")
        r = run("render", self.plan, "--png", png, "--chromium", "/nonexistent/chromium")
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn("--chromium: a still needs headless Chromium", r.stderr)
        self.assertFalse(os.path.exists(png))
        r = run("render", self.plan, "--png", png, "--size", "12x4000")
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn("--size", r.stderr)
        self.assertFalse(os.path.exists(png))
        # Checked before anything is written: --out is not written either.
        self.assert_refused(["render", self.plan, "--png", png, "--size", "640by480"], "--size")
        self.assertFalse(os.path.exists(png))


if __name__ == "__main__":
    BIN = sys.argv.pop(1)
    SOURCE = sys.argv.pop(1)
    unittest.main(verbosity=2)
