# SPDX-License-Identifier: BSD-3-Clause
"""Commands for the Python tests that use what the project installs: run one and check it, and
the project's version as CMakeLists.txt sets it."""
import re
import shlex
import subprocess


def run(*command, cwd=None, env=None, check=True):
    """The finished command (its stdout and stderr as text); with check, an AssertionError that
    shows both when it exits non-zero."""
    result = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True)
    if check and result.returncode != 0:
        raise AssertionError(f"{shlex.join(command)} exited {result.returncode}:\n"
                             f"{result.stdout}\n{result.stderr}")
    return result


def project_version(source):
    """project(marionette VERSION x.y.z) of the CMakeLists.txt in `source`."""
    with open(f"{source}/CMakeLists.txt") as f:
        return re.search(r"project\(marionette VERSION ([0-9.]+)", f.read()).group(1)
