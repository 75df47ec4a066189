# SPDX-License-Identifier: BSD-3-Clause
"""Builds the marionette-client package (docs/install.md): the client, and, generated at build
time, the gRPC stubs of the project's proto (package marionette.v1), the channel's service config
and marionette_client/_version.py with the project's version.

The proto and the version are the project's own: proto/marionette/v1/ and CMakeLists.txt's
project() two folders up (an sdist carries copies of both).  protoc is Debian's (packages
protobuf-compiler and protobuf-compiler-grpc, whose stubs match Debian's python3-protobuf), or
grpcio-tools' when those are missing.
"""
import importlib.util
import os
import re
import shutil
import subprocess
import sys

from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.command.sdist import sdist

HERE = os.path.dirname(os.path.abspath(__file__))
REPOSITORY = os.path.normpath(os.path.join(HERE, "..", ".."))
PROTO_FOLDER = os.path.join("marionette", "v1")
PROTO_FILES = ["planner.proto", "service_config.json"]
STUBS_INIT = "# Generated: the gRPC stubs of proto/marionette/v1/planner.proto.\n"


def _fail(message):
    raise SystemExit(f"marionette-client: {message}")


def _proto_root():
    """The folder holding marionette/v1/planner.proto: the sdist's copy, else the repository's."""
    for root in (os.path.join(HERE, "proto"), os.path.join(REPOSITORY, "proto")):
        if all(os.path.isfile(os.path.join(root, PROTO_FOLDER, f)) for f in PROTO_FILES):
            return root
    _fail("proto/marionette/v1/planner.proto not found: build the package from the project's "
          "repository (pip install clients/python)")


def _version():
    """The project's version: CMakeLists.txt's project(marionette VERSION x.y.z), or an sdist's
    VERSION file."""
    sdist_version = os.path.join(HERE, "VERSION")
    if os.path.isfile(sdist_version):
        with open(sdist_version) as f:
            return f.read().strip()
    cmake_lists = os.path.join(REPOSITORY, "CMakeLists.txt")
    try:
        with open(cmake_lists) as f:
            text = f.read()
    except OSError as e:
        _fail(f"{cmake_lists}: {e.strerror}: build the package from the project's repository")
    match = re.search(r"project\(\s*marionette\s+VERSION\s+([0-9]+\.[0-9]+\.[0-9]+)", text)
    if not match:
        _fail(f"{cmake_lists}: no 'project(marionette VERSION x.y.z ...)'")
    return match.group(1)


def _protoc_command(proto_root, out_dir):
    proto = os.path.join(proto_root, PROTO_FOLDER, "planner.proto")
    protoc, plugin = shutil.which("protoc"), shutil.which("grpc_python_plugin")
    if protoc and plugin:
        return [protoc, f"--proto_path={proto_root}", f"--python_out={out_dir}",
                f"--grpc_python_out={out_dir}", f"--plugin=protoc-gen-grpc_python={plugin}", proto]
    if importlib.util.find_spec("grpc_tools") is None:  # grpcio-tools: its own protoc
        _fail("generating the stubs needs protoc and grpc_python_plugin (Debian: apt-get install "
              "protobuf-compiler protobuf-compiler-grpc) or grpcio-tools")
    return [sys.executable, "-m", "grpc_tools.protoc", f"--proto_path={proto_root}",
            f"--python_out={out_dir}", f"--grpc_python_out={out_dir}", proto]


class BuildWithStubs(build_py):
    """build_py, then the generated files into the build folder (so, into the wheel)."""

    def run(self):
        super().run()
        proto_root = _proto_root()
        subprocess.run(_protoc_command(proto_root, self.build_lib), check=True)
        for package in ["marionette", PROTO_FOLDER]:  # regular packages: pip removes them whole
            with open(os.path.join(self.build_lib, package, "__init__.py"), "w") as f:
                f.write(STUBS_INIT)
        client = os.path.join(self.build_lib, "marionette_client")
        shutil.copyfile(os.path.join(proto_root, PROTO_FOLDER, "service_config.json"),
                        os.path.join(client, "service_config.json"))
        with open(os.path.join(client, "_version.py"), "w") as f:
            f.write(f'__version__ = "{self.distribution.get_version()}"\n')


class SdistWithProto(sdist):
    """An sdist that builds away from the repository: the proto and the version go with it."""

    def make_release_tree(self, base_dir, files):
        super().make_release_tree(base_dir, files)
        target = os.path.join(base_dir, "proto", PROTO_FOLDER)
        os.makedirs(target, exist_ok=True)
        for name in PROTO_FILES:
            shutil.copyfile(os.path.join(_proto_root(), PROTO_FOLDER, name),
                            os.path.join(target, name))
        with open(os.path.join(base_dir, "VERSION"), "w") as f:
            f.write(self.distribution.get_version() + "\n")


# The client's package; BuildWithStubs adds marionette.v1, the service config and _version.py.
setup(version=_version(), packages=["marionette_client"],
      cmdclass={"build_py": BuildWithStubs, "sdist": SdistWithProto})
