#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Re-runs the commands whose output the docs show and compares what they print with the docs.

A checked example is a fenced code block in README.md or docs/*.md preceded by the line
`<!-- check_docs: quick -->` (run in CI: seconds) or `<!-- check_docs: slow -->` (on demand:
minutes), optionally `<!-- check_docs: quick, quiet -->` for a figure that only a quiet machine
gives (run, and a mismatch is reported but does not fail).  In the block:

- a line that starts a command (`build/bin/...`, `marionette`, `python3`, ...; continued with a
  trailing backslash; `VAR=value` words before it set in its environment) is run from a scratch
  folder that links the repository's top-level entries; a trailing `# comment` is not part of
  it; a command ending in `&` is started in the background (a server: its `--listen` port, else
  127.0.0.1:50051, waited for) and stopped after the block;
- the `#` comment lines right after a command are what it prints: each must match one line of its
  output, in order, where `...` stands for anything and the rest is compared exactly (numbers as
  printed; runs of spaces as one).

  benchmarks/check_docs.py [--all] [--build DIR] [--list] [FILE...]
    --all     the slow examples too (default: the quick ones)
    --build   the build folder (default: build)
    --list    print the examples and their commands, run nothing
Exit 0 when every checked figure matches; 1 naming each file:line that does not, with what the
command printed; 2 for bad usage.
"""
import argparse
import os
import re
import shlex
import socket
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MARK = re.compile(r"<!--\s*check_docs:\s*(quick|slow)\s*(,\s*quiet\s*)?-->")
COMMAND_START = re.compile(r"^([A-Z_]+=\S+ )*(build/bin/|marionette|python3 |/usr/bin/python3 |"
                           r"ompl_benchmark_statistics )")
DEFAULT_LISTEN = "127.0.0.1:50051"  # marionette-server's, without --listen


class Example:
    def __init__(self, path, line, speed, quiet):
        self.path, self.line, self.speed, self.quiet = path, line, speed, quiet
        self.steps = []  # (line number, command, background, [(line number, expected)])


def strip_comment(line):
    """The command part of a line: a `#` outside quotes starts a comment."""
    quote = None
    for i, c in enumerate(line):
        if quote:
            if c == quote:
                quote = None
        elif c in "'\"":
            quote = c
        elif c == "#" and (i == 0 or line[i - 1].isspace()):
            return line[:i].rstrip()
    return line.rstrip()


def parse(path):
    rel = os.path.relpath(path, ROOT)
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    examples, pending, i = [], None, 0
    while i < len(lines):
        m = MARK.search(lines[i])
        if m:
            pending = (m.group(1), bool(m.group(2)))
            i += 1
            continue
        if lines[i].startswith("```") and pending:
            example = Example(rel, i + 1, *pending)
            pending = None
            i += 1
            step = None
            while i < len(lines) and not lines[i].startswith("```"):
                text = lines[i]
                if COMMAND_START.match(text):
                    command, first = strip_comment(text), i + 1
                    while command.endswith("\\") and i + 1 < len(lines):
                        i += 1
                        command = command[:-1] + " " + strip_comment(lines[i].strip())
                    background = command.endswith("&")
                    step = (first, command.rstrip("& ").strip(), background, [])
                    example.steps.append(step)
                elif text.startswith("#") and step is not None:
                    step[3].append((i + 1, text[1:].strip()))
                elif text.strip():
                    step = None
                i += 1
            examples.append(example)
        i += 1
    return examples


def matches(expected, line):
    """`line` is what the docs show as `# expected` (a printed `#` line shows as it is)."""
    pattern = ".*".join(re.escape(" ".join(p.split())) for p in expected.split("..."))
    return any(re.fullmatch(pattern, " ".join(text.split())) is not None
               for text in (line, line[1:] if line.startswith("#") else line))


def wait_for_port(command, seconds=60):
    m = re.search(r"--listen\s+([\w.]+):(\d+)", command + " --listen " + DEFAULT_LISTEN)
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        with socket.socket() as s:
            if s.connect_ex((m.group(1), int(m.group(2)))) == 0:
                return
        time.sleep(0.2)
    raise RuntimeError(f"nothing listens on {m.group(1)}:{m.group(2)} after {seconds} s")


def run(example, build, timeout_s):
    """Runs the example's commands in a scratch folder; returns its mismatches."""
    failures = []
    with tempfile.TemporaryDirectory(prefix="check-docs-") as scratch:
        for entry in os.listdir(ROOT):
            if not entry.startswith(".") and entry != "build":
                os.symlink(os.path.join(ROOT, entry), os.path.join(scratch, entry))
        os.symlink(build, os.path.join(scratch, "build"))
        background = []
        try:
            for line, command, in_background, expected in example.steps:
                argv = shlex.split(command)
                env = dict(os.environ)
                while argv and re.fullmatch(r"[A-Z_]+=\S*", argv[0]):  # VAR=value before it
                    name, _, value = argv.pop(0).partition("=")
                    env[name] = value
                if in_background:
                    background.append(subprocess.Popen(argv, cwd=scratch, env=env,
                                                       stdout=subprocess.DEVNULL,
                                                       stderr=subprocess.DEVNULL))
                    wait_for_port(command)
                    continue
                p = subprocess.run(argv, cwd=scratch, env=env, capture_output=True, text=True,
                                   timeout=timeout_s)
                output = (p.stdout + p.stderr).split("\n")
                if p.returncode != 0:
                    failures.append(f"{example.path}:{line}: exit {p.returncode}: {command}\n"
                                    + "\n".join(output[-10:]))
                    continue
                at = 0
                for expected_line, text in expected:
                    found = next((k for k in range(at, len(output)) if matches(text, output[k])),
                                 None)
                    if found is None:
                        failures.append(f"{example.path}:{expected_line}: the docs say\n"
                                        f"    # {text}\n  `{command}` printed:\n"
                                        + "\n".join("    " + o for o in output if o.strip()))
                        break
                    at = found + 1
        finally:
            for proc in background:
                proc.terminate()
                proc.wait(timeout=30)
    return failures


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--all", action="store_true")
    parser.add_argument("--build", default=os.path.join(ROOT, "build"))
    parser.add_argument("--list", action="store_true")
    parser.add_argument("--timeout", type=float, default=1800)
    parser.add_argument("files", nargs="*")
    args = parser.parse_args()
    files = args.files or ([os.path.join(ROOT, "README.md")] + sorted(
        os.path.join(ROOT, "docs", f) for f in os.listdir(os.path.join(ROOT, "docs"))
        if f.endswith(".md")))
    build = os.path.abspath(args.build)
    if not args.list and not os.path.isfile(os.path.join(build, "bin", "marionette")):
        print(f"check_docs: no {build}/bin/marionette (scripts/build.sh)", file=sys.stderr)
        return 2
    examples = [e for f in files for e in parse(f)]
    chosen = [e for e in examples if args.all or e.speed == "quick"]
    if args.list:
        for e in examples:
            print(f"{e.path}:{e.line} [{e.speed}{', quiet' if e.quiet else ''}]")
            for line, command, bg, expected in e.steps:
                print(f"  {command}{' &' if bg else ''}  ({len(expected)} lines)")
        return 0
    failed, figures = 0, 0
    for e in chosen:
        t0 = time.monotonic()
        problems = run(e, build, args.timeout)
        figures += sum(len(s[3]) for s in e.steps)
        status = "ok" if not problems else ("differs (quiet machine only)" if e.quiet
                                            else "FAILED")
        print(f"{e.path}:{e.line}: {status} ({time.monotonic() - t0:.0f} s)", flush=True)
        for p in problems:
            print(p)
        if problems and not e.quiet:
            failed += 1
    print(f"check_docs: {len(chosen)} examples, {figures} printed lines compared, "
          f"{failed} failed ({len(examples) - len(chosen)} slow ones not run"
          f"{'' if args.all else '; --all runs them'})")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
