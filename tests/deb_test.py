#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""The Debian package (docs/install.md), made by CPack from the build:
  - its name and control fields (the project's version, Depends with no -dev package);
  - its Depends against what its programs and libraries link: every library outside the package
    belongs to a package it depends on (so a clean Debian 12 gets everything it loads, even on a
    machine that already has it all);
  - installed with dpkg on this machine: the service's user and state folder, the CLI planning
    from any folder, the server started as its systemd unit starts it (the unit's ExecStart, as
    the unit's user) answering the CLI and keeping its roadmap where the unit says;
  - removed (its files gone, the roadmaps kept), then purged (the roadmaps gone);
  - on a clean Debian 12 (a minimal debootstrap in a folder, no container): apt-get installs it
    with exactly the packages its Depends pull in; there the CLI plans exactly what the build
    tree's CLI plans, and the server answers; apt-get purge removes it.

It installs into this machine's /usr, so it needs root and dpkg (without them it exits 77:
skipped), and refuses to run where a marionette package is installed already.  The clean Debian
needs debootstrap and Debian's mirror (MARIONETTE_DEBIAN_MIRROR, default deb.debian.org).

    deb_test.py BUILD_DIR SOURCE_DIR
"""
import glob
import os
import pwd
import re
import shlex
import shutil
import signal
import stat
import sys
import tempfile
import unittest

BUILD, SOURCE = (os.path.abspath(p) for p in sys.argv[1:3])
del sys.argv[1:3]
sys.path.insert(0, os.path.join(SOURCE, "tests"))
from support.commands import project_version, run  # noqa: E402
from support.server_process import start_server_command, stop_server  # noqa: E402

PACKAGE = "marionette"
UNIT = "/usr/lib/systemd/system/marionette-server.service"
QUICK_START = ["plan", "--model", "puppetcopter", "--scene", "table", "--planner", "rrt", "--seed",
               "3", "--goal", "point:hand_l=0.05,0.24,0.40;radius=0.04"]



def installed(package):
    result = run("dpkg-query", "-W", "-f=${Status}", package, check=False)
    return result.returncode == 0 and "ok installed" in result.stdout



def is_elf(path):
    with open(path, "rb") as f:
        return f.read(4) == b"\x7fELF"


def dynamic_entries(path, tag):
    """readelf -d's entries of one tag (NEEDED, SONAME) of an ELF file."""
    out = run("readelf", "-d", path).stdout
    return re.findall(rf"\({tag}\)\s+.*\[(.+)\]", out)


def owning_package(soname):
    """The installed Debian package that holds the library this machine loads for `soname`."""
    paths = re.findall(rf"^\s*{re.escape(soname)} \(libc6,x86-64[^)]*\) => (\S+)",
                       run("ldconfig", "-p").stdout, re.M)
    for path in paths:
        for candidate in {path, os.path.realpath(path)}:
            for variant in {candidate, re.sub(r"^/usr/lib/", "/lib/", candidate),
                            re.sub(r"^/lib/", "/usr/lib/", candidate)}:
                result = run("dpkg-query", "-S", variant, check=False)
                if result.returncode == 0:
                    return result.stdout.split(":")[0].split(",")[0].strip()
    raise AssertionError(f"no installed package holds {soname} ({paths})")


def depends_names(field):
    """Package names of a Depends field ("a (>= 1), b | c" -> {a, b, c})."""
    names = set()
    for alternative in re.split(r"[,|]", field):
        name = alternative.strip().split(" ")[0].split(":")[0]
        if name:
            names.add(name)
    return names


class DebianPackage(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="marionette-deb-")
        cls.version = project_version(SOURCE)
        run("cpack", "--config", os.path.join(BUILD, "CPackConfig.cmake"), "-B", cls.tmp)
        debs = glob.glob(os.path.join(cls.tmp, "*.deb"))
        assert len(debs) == 1, debs
        cls.deb = debs[0]
        cls.fields = {}
        for line in run("dpkg-deb", "-f", cls.deb).stdout.splitlines():
            if ":" in line and not line.startswith(" "):
                key, _, value = line.partition(":")
                cls.fields[key] = value.strip()
        cls.root = os.path.join(cls.tmp, "root")
        run("dpkg-deb", "-x", cls.deb, cls.root)

    @classmethod
    def tearDownClass(cls):
        if installed(PACKAGE):
            run("dpkg", "--purge", PACKAGE, check=False)
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def test_1_name_and_control_fields(self):
        self.assertEqual(os.path.basename(self.deb), f"{PACKAGE}_{self.version}_amd64.deb")
        self.assertEqual(self.fields["Package"], PACKAGE)
        self.assertEqual(self.fields["Version"], self.version)
        self.assertEqual(self.fields["Architecture"], "amd64")
        names = depends_names(self.fields["Depends"])
        self.assertIn("adduser", names)  # the postinst makes the service's user
        self.assertFalse([n for n in names if n.endswith("-dev")], self.fields["Depends"])
        for path in ["usr/bin/marionette", "usr/bin/marionette-server",
                     "usr/include/marionette/planner/planner.hpp",
                     "usr/lib/cmake/marionette/marionetteConfig.cmake",
                     "usr/share/marionette/models/puppetcopter.yaml",
                     "usr/lib/systemd/system/marionette-server.service",
                     "usr/share/doc/marionette/copyright"]:
            self.assertTrue(os.path.exists(os.path.join(self.root, path)), path)
        # Debian's machine-readable copyright format: the project's licence, and three.js's
        # (embedded in the viewer page the CLI writes).
        with open(os.path.join(self.root, "usr/share/doc/marionette/copyright")) as f:
            copyright_text = f.read()
        self.assertTrue(copyright_text.startswith("Format: https://www.debian.org/doc/"))
        self.assertIn("License: BSD-3-Clause\n", copyright_text)
        self.assertIn("three.js authors", copyright_text)

    def test_2_depends_cover_every_library_it_links(self):
        elves = [os.path.join(d, f) for d, _, files in os.walk(self.root) for f in files
                 if not os.path.islink(os.path.join(d, f)) and is_elf(os.path.join(d, f))]
        self.assertGreaterEqual(len(elves), 8)  # 2 programs, 6 libraries
        own = {soname for path in elves for soname in dynamic_entries(path, "SONAME")}
        needed = {n for path in elves for n in dynamic_entries(path, "NEEDED")} - own
        self.assertTrue([n for n in needed if n.startswith("libompl.so")], needed)
        depends = depends_names(self.fields["Depends"])
        for soname in sorted(needed):
            package = owning_package(soname)
            self.assertIn(package, depends, f"{soname} comes from {package}")

    def test_3_install_run_remove_purge(self):
        run("dpkg", "-i", self.deb)
        self.assertTrue(installed(PACKAGE))
        files = [p for p in run("dpkg", "-L", PACKAGE).stdout.splitlines() if os.path.isfile(p)]

        # The service's user and its state folder.
        user = pwd.getpwnam("marionette")
        self.assertEqual(user.pw_dir, "/var/lib/marionette")
        self.assertIn("nologin", user.pw_shell)
        state = os.stat("/var/lib/marionette/roadmaps")
        self.assertEqual((state.st_uid, stat.S_IMODE(state.st_mode)), (user.pw_uid, 0o750))

        # The CLI from anywhere.
        cwd = os.path.join(self.tmp, "work")
        os.makedirs(cwd)
        out = run("marionette", "--version", cwd=cwd).stdout
        self.assertEqual(out, f"marionette {self.version}\n")
        self.assertEqual(shutil.which("marionette"), "/usr/bin/marionette")
        run("marionette", "plan", "--model", "planar-arm", "--goal", "q:theta1=0.3", "--seed", "1",
            "--out", "plan.json", cwd=cwd)
        self.assertTrue(os.path.getsize(os.path.join(cwd, "plan.json")) > 1000)

        # The unit: the server on loopback as the dedicated user, roadmaps under /var/lib.
        with open(UNIT) as f:
            unit = f.read()
        self.assertRegex(unit, r"(?m)^User=marionette$")
        if shutil.which("systemd-analyze"):
            verify = run("systemd-analyze", "verify", UNIT, check=False)
            self.assertNotIn("marionette-server.service", verify.stderr)  # no complaint about it
        exec_start = shlex.split(re.search(r"(?m)^ExecStart=(.*)$", unit).group(1))
        self.assertEqual(exec_start[0], "/usr/bin/marionette-server")
        listen = exec_start.index("--listen") + 1
        self.assertTrue(exec_start[listen].startswith("127.0.0.1:"), exec_start)
        exec_start[listen] = "127.0.0.1:0"  # any free port: other tests may run beside this one
        roadmaps = exec_start[exec_start.index("--roadmap-dir") + 1]
        self.assertEqual(roadmaps, "/var/lib/marionette/roadmaps")
        server, address = start_server_command(
            ["setpriv", f"--reuid={user.pw_uid}", f"--regid={user.pw_gid}", "--init-groups",
             "--inh-caps=-all", *exec_start])
        try:
            self.assertIn(f"marionette-server {self.version}: listening on", server.log[0])
            out = run("marionette", "version", "--server", address, cwd=cwd).stdout
            self.assertIn(f"server: marionette-server {self.version} (marionette.v1.Planner)", out)
            run("marionette", "plan", "--server", address, "--model", "planar-arm", "--goal",
                "q:theta1=0.3", "--planner", "prm", "--seed", "1",
                "--out", "prm.json", cwd=cwd)
        finally:
            self.assertEqual(stop_server(server, signal.SIGTERM), 0, "".join(server.log))
        written = glob.glob(os.path.join(roadmaps, "*.roadmap"))
        self.assertTrue(written, "".join(server.log))
        self.assertEqual(os.stat(written[0]).st_uid, user.pw_uid)

        # Removed: its files go, the roadmaps stay; purged: they go too.
        run("dpkg", "--remove", PACKAGE)
        self.assertFalse([p for p in files if os.path.exists(p)])
        self.assertTrue(os.path.exists(written[0]))
        run("dpkg", "--purge", PACKAGE)
        self.assertFalse(installed(PACKAGE))
        self.assertFalse(os.path.exists("/var/lib/marionette"))

    def test_4_clean_debian_12(self):
        if not shutil.which("debootstrap"):
            self.skipTest("no debootstrap")
        root = os.path.join(self.tmp, "debian12")
        mirror = os.environ.get("MARIONETTE_DEBIAN_MIRROR", "http://deb.debian.org/debian")
        run("debootstrap", "--variant=minbase", "bookworm", root, mirror)
        shutil.copy("/etc/resolv.conf", os.path.join(root, "etc", "resolv.conf"))
        shutil.copy(self.deb, os.path.join(root, "tmp"))
        deb = "/tmp/" + os.path.basename(self.deb)

        def inside(*command):
            return run("chroot", root, "/usr/bin/env", "DEBIAN_FRONTEND=noninteractive",
                       "HOME=/tmp", *command)

        inside("apt-get", "update", "-qq")
        inside("apt-get", "install", "-y", "-qq", "--no-install-recommends", deb)
        self.assertEqual(inside("marionette", "--version").stdout, f"marionette {self.version}\n")
        here = run(os.path.join(BUILD, "bin", "marionette"), *QUICK_START, "--out",
                   os.path.join(self.tmp, "here.json")).stdout
        there = inside("/bin/sh", "-c", "cd /tmp && marionette " + shlex.join(QUICK_START) +
                       " --out there.json").stdout
        # The same plan; only the planner's, the verification's and the optimizer's times may
        # differ.
        timing = re.compile(
            r"(?m)^\s*planner [0-9.]+ s, verification [0-9.]+ s;|iterations, [0-9.]+ s")
        self.assertEqual(timing.sub("", there), timing.sub("", here))
        self.assertIn("exact", there.splitlines()[0])

        server, address = start_server_command(
            ["chroot", root, "marionette-server", "--listen", "127.0.0.1:0"])
        try:
            out = inside("marionette", "version", "--server", address).stdout
            self.assertIn(f"server: marionette-server {self.version}", out)
        finally:
            self.assertEqual(stop_server(server, signal.SIGTERM), 0, "".join(server.log))

        inside("apt-get", "purge", "-y", "-qq", "marionette")
        self.assertFalse(os.path.exists(os.path.join(root, "usr", "bin", "marionette")))
        self.assertFalse(os.path.exists(os.path.join(root, "var", "lib", "marionette")))


if __name__ == "__main__":
    if os.geteuid() != 0 or not (shutil.which("dpkg") and shutil.which("cpack")):
        print("deb_test: skipped: needs root, dpkg and cpack")
        sys.exit(77)
    if installed(PACKAGE):
        print("deb_test: skipped: a marionette package is installed already: not touching it")
        sys.exit(77)
    unittest.main(verbosity=2)
