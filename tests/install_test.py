#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""`cmake --install` into a fresh prefix, then used from there as a C++ user would
(docs/install.md): the layout, only the public headers, the CMake package (its version check
included), the programs running from the prefix on the prefix's libraries, and examples/cpp built
out of tree against the prefix, whose plan equals the installed CLI's.

    install_test.py BUILD_DIR SOURCE_DIR
"""
import glob
import json
import os
import re
import shutil
import sys
import tempfile
import unittest

BUILD, SOURCE = (os.path.abspath(p) for p in sys.argv[1:3])
del sys.argv[1:3]
sys.path.insert(0, os.path.join(SOURCE, "tests"))
from support.commands import project_version, run  # noqa: E402
from support.server_process import start_server_command, stop_server  # noqa: E402

API_LIBRARIES = ["models", "control", "plan", "environments", "problem", "search", "trajopt",
                 "performance", "planner", "roadmap_store", "benchmark", "service"]
# What a public header may include besides the installed headers: the standard library and Eigen;
# the search library's OMPL layer (and only it) OMPL's headers too.
ALLOWED_INCLUDE = re.compile(r"#include\s+(<[a-z_]+>|<Eigen/[A-Za-z]+>|\"marionette/[a-z_/]+\.hpp\")")
OMPL_LAYER = {"marionette/search/search_space.hpp", "marionette/search/decomposition.hpp"}
OMPL_INCLUDE = re.compile(r"#include\s+<ompl/[A-Za-z_/]+\.h>")




def clean_env():
    """The environment of a user who never saw the build tree."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("LD_LIBRARY_PATH", "CMAKE_PREFIX_PATH", "PYTHONPATH", "CPATH")}
    return env


class InstalledPrefix(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="marionette-install-")
        cls.prefix = os.path.join(cls.tmp, "prefix")
        run("cmake", "--install", BUILD, "--prefix", cls.prefix)
        cls.version = project_version(SOURCE)
        cls.libdir = os.path.join(cls.prefix, "lib")

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def test_layout(self):
        p = self.prefix
        for path in ["bin/marionette", "bin/marionette-server",
                     "lib/cmake/marionette/marionetteConfig.cmake",
                     "lib/cmake/marionette/marionetteConfigVersion.cmake",
                     "lib/cmake/marionette/marionetteTargets.cmake",
                     "include/marionette/models/version.hpp",
                     "include/marionette/planner/planner.hpp",
                     "share/marionette/models/puppetcopter.yaml",
                     "share/marionette/scenes/living-room.yaml",
                     "share/marionette/maps/puppetcopter.yaml",
                     "share/marionette/examples/cpp/CMakeLists.txt",
                     "share/doc/marionette/install.md",
                     "share/doc/marionette/LICENSE",
                     "share/doc/marionette/THIRD-PARTY.md",
                     "share/doc/marionette/copyright",
                     "lib/systemd/system/marionette-server.service"]:
            self.assertTrue(os.path.exists(os.path.join(p, path)), path)
        self.assertTrue(glob.glob(os.path.join(p, "share/marionette/scenes/meshes/*")))
        for name in API_LIBRARIES + ["common"]:
            lib = os.path.join(self.libdir, f"libmarionette_{name}.so")
            self.assertTrue(os.path.islink(lib), lib)  # the development link ...
            major, minor = self.version.split(".")[:2]
            self.assertTrue(os.path.exists(f"{lib}.{major}.{minor}"))  # ... and the soname
        # Only the API's headers: no internal library's, no front end's, no generated stubs.
        self.assertEqual(sorted(os.listdir(os.path.join(p, "include/marionette"))),
                         sorted(API_LIBRARIES))
        self.assertFalse(glob.glob(os.path.join(p, "lib/*.a")))

    def test_headers_include_only_std_eigen_and_each_other(self):
        headers = glob.glob(os.path.join(self.prefix, "include/marionette/*/*.hpp"))
        self.assertGreater(len(headers), 30)
        installed = {os.path.relpath(h, os.path.join(self.prefix, "include")) for h in headers}
        for header in headers:
            with open(header) as f:
                for number, line in enumerate(f, 1):
                    if not line.startswith("#include"):
                        continue
                    where = f"{header}:{number}: {line.strip()}"
                    relative = os.path.relpath(header, os.path.join(self.prefix, "include"))
                    if relative in OMPL_LAYER and OMPL_INCLUDE.match(line):
                        continue
                    self.assertRegex(line, ALLOWED_INCLUDE, where)
                    quoted = re.search(r'"(.*)"', line)
                    if quoted:
                        self.assertIn(quoted.group(1), installed, where)

    def test_programs_run_from_the_prefix_on_its_libraries(self):
        env = clean_env()
        out = run(os.path.join(self.prefix, "bin/marionette"), "--version", env=env).stdout
        self.assertEqual(out, f"marionette {self.version}\n")
        out = run(os.path.join(self.prefix, "bin/marionette-server"), "--version", env=env).stdout
        self.assertEqual(out, f"marionette-server {self.version}\n")
        # Every project library resolves into the prefix, none into the build tree.
        for program in ["bin/marionette", "bin/marionette-server"]:
            ldd = run("ldd", os.path.join(self.prefix, program), env=env).stdout
            resolved = re.findall(r"(libmarionette_\w+\.so[.0-9]*) => (\S+)", ldd)
            self.assertTrue(resolved, ldd)
            for name, path in resolved:
                self.assertTrue(os.path.realpath(path).startswith(os.path.realpath(self.prefix)),
                                f"{program}: {name} => {path}")
            self.assertNotIn("not found", ldd)

    def test_example_builds_out_of_tree_and_plans_as_the_cli_does(self):
        env = clean_env()
        example = os.path.join(self.tmp, "example-src")
        shutil.copytree(os.path.join(self.prefix, "share/marionette/examples/cpp"), example)
        build = os.path.join(self.tmp, "example-build")
        run("cmake", "-S", example, "-B", build, f"-DCMAKE_PREFIX_PATH={self.prefix}",
            "-DCMAKE_BUILD_TYPE=Release", "-DCMAKE_EXPORT_COMPILE_COMMANDS=ON", env=env)
        run("cmake", "--build", build, env=env)

        # Its compile line reaches the prefix's headers and Eigen's, nothing of the sources' tree
        # and none of the libraries' private dependencies.
        with open(os.path.join(build, "compile_commands.json")) as f:
            command = json.load(f)[0]["command"]
        includes = re.findall(r"-(?:I|isystem)\s*(\S+)", command)
        self.assertIn(os.path.join(self.prefix, "include"), includes)
        for path in includes:
            self.assertTrue(path.startswith(self.prefix) or path.endswith("eigen3"), command)
        self.assertNotIn(SOURCE, command)
        with open(os.path.join(build, "CMakeFiles/marionette_example.dir/link.txt")) as f:
            link = f.read()
        for private in ["fcl", "ompl", "assimp", "ipopt", "yaml-cpp", "grpc", BUILD]:
            self.assertNotIn(private, link)

        out = run(os.path.join(build, "marionette_example"), cwd=self.tmp, env=env).stdout
        self.assertIn(f"marionette headers {self.version}, libraries {self.version}", out)
        self.assertIn("model planar-arm: 2 joints, 2 rig inputs, 1 strings", out)
        moved = float(re.search(r"simulated 1 s at rest: joints moved (\S+)", out).group(1))
        self.assertLess(moved, 1e-9)  # started at rest, it stays (the integrator's p_0)
        self.assertRegex(out, r"at rest in 'empty': clear, [0-9.]+ m from the stage")
        plan = re.search(r"plan est seed 1: exact, (\d+) samples at 50 Hz, goal reached at "
                         r"sample (\d+)", out)
        self.assertIsNotNone(plan, out)

        # The installed CLI plans the same motion (the search's, as planMotion returns it).
        csv = os.path.join(self.tmp, "cli.csv")
        run(os.path.join(self.prefix, "bin/marionette"), "plan", "--model", "planar-arm",
            "--goal", "q:theta1=0.3", "--planner", "est", "--seed", "1", "--time-limit", "10",
            "--raw", "--inputs-csv", csv, "--quiet", cwd=self.tmp, env=env)
        with open(csv) as f:
            rows = [line for line in f if line.strip() and not line.startswith("t")]
        self.assertEqual(len(rows), int(plan.group(1)))

    def test_custom_planner_example_logs_syclop_beside_the_built_in_planners(self):
        """examples/cpp/custom_planner, built against the prefix: it registers OMPL's SyclopRRT
        and benchmarks it beside est; OMPL's own script turns its log into one Planner Arena
        database with both planners in it."""
        env = clean_env()
        example = os.path.join(self.tmp, "custom-src")
        shutil.copytree(os.path.join(self.prefix, "share/marionette/examples/cpp/custom_planner"),
                        example)
        build = os.path.join(self.tmp, "custom-build")
        run("cmake", "-S", example, "-B", build, f"-DCMAKE_PREFIX_PATH={self.prefix}",
            "-DCMAKE_BUILD_TYPE=Release", env=env)
        run("cmake", "--build", build, env=env)
        lines = 0
        for source in ["custom_planner.cpp", "syclop_planners.cpp"]:
            with open(os.path.join(example, source)) as f:
                lines += len(f.read().splitlines())
        self.assertLess(lines, 100)  # an example to read: a registration and a benchmark loop
        out = os.path.join(self.tmp, "custom-bench")
        p = run(os.path.join(build, "custom_planner"), "--problems", "planar-arm-empty", "--runs",
                "2", "--planners", "est,syclop-rrt", "--time-limit", "20", "--out", out, env=env)
        self.assertIn("planar-arm-empty syclop-rrt: 2/2 exact", p.stdout)
        self.assertIn("planar-arm-empty est: 2/2 exact", p.stdout)
        # Point goals: on the table Syclop gets rest states that meet the hand's goal and plans;
        # behind the pillars no rest pose meets arm3d's, and its run is logged as what it is
        # (OMPL's INVALID_GOAL, 2), not a timeout.
        point = os.path.join(self.tmp, "custom-point")
        p = run(os.path.join(build, "custom_planner"), "--problems",
                "puppetcopter-table,arm3d-pillars", "--runs", "1", "--planners", "syclop-rrt",
                "--time-limit", "120", "--raw", "--out", point, env=env)  # (ends at the goal)
        self.assertIn("puppetcopter-table syclop-rrt: 1/1 exact", p.stdout)
        self.assertIn("arm3d-pillars syclop-rrt: 0/1 exact", p.stdout)
        with open(os.path.join(point, "arm3d-pillars.log")) as f:
            log = f.read().split("\n")
        status = log.index("status ENUM") - log.index("29 properties for each run") - 1
        line = log[log.index("1 runs") + 1]
        self.assertEqual([v.strip() for v in line.split(";")][status], "2", line)
        # An unknown problem is named, and the program fails.
        bad = run(os.path.join(build, "custom_planner"), "--problems", "nope", "--out", out,
                  env=env, check=False)
        self.assertEqual(bad.returncode, 2)
        self.assertIn("unknown 'nope'", bad.stderr)
        # The same planners from the plugin: in the installed server (it lists them, and plans
        # with one) and in the installed CLI's benchmark.
        plugin = os.path.join(build, "libsyclop_planners.so")
        marionette = os.path.join(self.prefix, "bin/marionette")
        server, address = start_server_command(
            [os.path.join(self.prefix, "bin/marionette-server"), "--listen", "127.0.0.1:0",
             "--plugin", plugin])
        try:
            self.assertIn("planners from plugins: syclop-rrt, syclop-est", server.log[0])
            p = run(marionette, "plan", "--server", address, "--model", "planar-arm", "--goal",
                    "q:theta1=0.3", "--planner", "syclop-est", "--seed", "1", "--quiet", env=env)
            self.assertIn("with syclop-est (seed 1): exact", p.stdout)
        finally:
            self.assertEqual(stop_server(server), 0)
        # The service inside a program of one's own, with the planners registered first.
        server, address = start_server_command(
            [os.path.join(build, "custom_server"), "--listen", "127.0.0.1:0"])
        try:
            p = run(marionette, "plan", "--server", address, "--model", "planar-arm", "--goal",
                    "q:theta1=0.3", "--planner", "syclop-rrt", "--seed", "1", "--quiet", env=env)
            self.assertIn("with syclop-rrt (seed 1): exact", p.stdout)
        finally:
            self.assertEqual(stop_server(server), 0)
        bench = os.path.join(self.tmp, "plugin-bench")
        p = run(marionette, "bench", "planners", "--plugin", plugin, "--problems",
                "planar-arm-empty", "--planners", "syclop-est", "--runs", "1", "--out", bench,
                env=env)
        self.assertIn("| planar-arm-empty | syclop-est | 1 | 1 |", p.stdout)
        bad = run(marionette, "bench", "planners", "--plugin", "/nonexistent.so", "--out", bench,
                  env=env, check=False)
        self.assertEqual(bad.returncode, 2)
        self.assertIn("--plugin: /nonexistent.so: cannot be loaded", bad.stderr)

        script = "/usr/bin/ompl_benchmark_statistics"
        if not os.path.exists(script):
            self.skipTest("OMPL's ompl_benchmark_statistics is not installed (ompl-demos)")
        import sqlite3
        db = os.path.join(self.tmp, "custom.db")
        run(sys.executable, script, os.path.join(out, "planar-arm-empty.log"), "-d", db)
        rows = sqlite3.connect(db).execute(
            "SELECT p.name, count(*), sum(r.solved) FROM runs r JOIN plannerConfigs p "
            "ON r.plannerid = p.id GROUP BY p.name ORDER BY p.name").fetchall()
        self.assertEqual(rows, [("control_EST", 2, 2), ("control_SyclopRRT", 2, 2)])

    def test_package_version_is_checked(self):
        env = clean_env()
        for wanted, ok in [(self.version, True), ("0.0", False), ("99.0", False)]:
            src = os.path.join(self.tmp, f"want-{wanted}")
            os.makedirs(src, exist_ok=True)
            with open(os.path.join(src, "CMakeLists.txt"), "w") as f:
                f.write("cmake_minimum_required(VERSION 3.16)\nproject(want LANGUAGES CXX)\n"
                        f"find_package(marionette {wanted} REQUIRED)\n"
                        "message(STATUS \"found ${marionette_VERSION} at ${marionette_DATA_DIR}\")\n")
            result = run("cmake", "-S", src, "-B", os.path.join(src, "build"),
                         f"-DCMAKE_PREFIX_PATH={self.prefix}", env=env, check=False)
            self.assertEqual(result.returncode == 0, ok, result.stdout + result.stderr)
            if ok:
                self.assertIn(f"found {self.version} at {self.prefix}/share/marionette",
                              result.stdout)


if __name__ == "__main__":
    unittest.main(verbosity=2)
