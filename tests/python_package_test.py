#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""The Python client as a package (docs/install.md): `pip install clients/python` into a fresh
venv that sees Debian's python3-grpcio and python3-protobuf (--system-site-packages), offline
(--no-index: Debian's setuptools builds it, the stubs come from the project's proto at build
time).  Then, from a folder outside the repository and the build tree: the package's version is
the project's, its stubs are the installed ones, its example plans against a real server and
reports the server's version; uninstalled, nothing of it is left.

    python_package_test.py BUILD_DIR SOURCE_DIR
"""
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
from support.server_process import start_server, stop_server  # noqa: E402

SYSTEM_PYTHON = "/usr/bin/python3"




class PipPackage(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="marionette-pip-")
        cls.venv = os.path.join(cls.tmp, "venv")
        cls.python = os.path.join(cls.venv, "bin", "python")
        # A user's shell: nothing of the build tree on the path.
        cls.env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
        cls.env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
        run(SYSTEM_PYTHON, "-m", "venv", "--system-site-packages", cls.venv, env=cls.env)
        cls.install = run(cls.python, "-m", "pip", "install", "--no-index",
                          "--no-build-isolation", os.path.join(SOURCE, "clients", "python"),
                          cwd=cls.tmp, env=cls.env)
        cls.work = os.path.join(cls.tmp, "work")  # outside the repository and the build tree
        os.makedirs(cls.work)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def python_says(self, code):
        return run(self.python, "-c", code, cwd=self.work, env=self.env).stdout.strip()

    def test_1_version_and_where_it_comes_from(self):
        self.assertEqual(self.python_says("import marionette_client; "
                                          "print(marionette_client.__version__)"),
                         project_version(SOURCE))
        self.assertEqual(self.python_says("import importlib.metadata as m; "
                                          "print(m.version('marionette-client'))"),
                         project_version(SOURCE))
        # Its licence, the project's.
        self.assertEqual(self.python_says("import importlib.metadata as m; "
                                          "print(m.metadata('marionette-client')['License'])"),
                         "BSD-3-Clause")
        site = self.python_says("import sysconfig; print(sysconfig.get_paths()['purelib'])")
        self.assertTrue(site.startswith(self.venv), site)
        for module in ["marionette_client", "marionette.v1.planner_pb2",
                       "marionette.v1.planner_pb2_grpc"]:
            where = self.python_says(f"import {module} as m; print(m.__file__)")
            self.assertTrue(where.startswith(site), f"{module}: {where}")
        # The channel's service config went with it, the one the C++ clients embed.
        config = self.python_says("import marionette_client as c; print(c._service_config())")
        with open(os.path.join(SOURCE, "proto", "marionette", "v1", "service_config.json")) as f:
            self.assertEqual(config, f.read().strip())
        # grpc and protobuf are Debian's (the venv sees the system's site packages).
        for module in ["grpc", "google.protobuf"]:
            where = self.python_says(f"import {module} as m; print(m.__file__)")
            self.assertTrue(where.startswith("/usr/lib/python3/dist-packages/"), where)

    def test_2_example_plans_from_outside_the_repository(self):
        example = shutil.copy(os.path.join(SOURCE, "clients", "python", "examples",
                                           "plan_and_print.py"), self.work)
        server, address = start_server(BUILD, "--workers", "1")
        try:
            result = run(self.python, example, "--server", address, "--model", "planar-arm",
                         "--scene", "empty", "--goal", "q:theta1=0.3", "--planner", "est",
                         "--seed", "1", cwd=self.work, env=self.env)
        finally:
            self.assertEqual(stop_server(server), 0)
        version = project_version(SOURCE)
        self.assertIn(f"# marionette_client {version}, marionette-server {version}",
                      result.stderr)
        lines = result.stdout.splitlines()
        self.assertTrue(lines[0].startswith("# planar-arm / empty with est (seed 1): exact"),
                        lines[0])
        self.assertEqual(lines[1], "t,x,L")
        samples = int(re.search(r"exact; (\d+) samples", lines[0]).group(1))
        self.assertEqual(len(lines) - 2, samples)

    def test_3_uninstall_leaves_nothing(self):
        site = self.python_says("import sysconfig; print(sysconfig.get_paths()['purelib'])")
        run(self.python, "-m", "pip", "uninstall", "-y", "marionette-client", env=self.env)
        left = [n for n in os.listdir(site) if n.startswith(("marionette", "marionette_client"))]
        self.assertEqual(left, [])


if __name__ == "__main__":
    unittest.main(verbosity=2)
