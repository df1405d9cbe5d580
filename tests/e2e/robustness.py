"""Helpers of the robustness tests (test_torture.py, test_hostile.py): run a program with and without
the shim, compare what it did, read every profile back, count calls by request size.

The torture programs are in <build>/tests/torture (tests/torture/*.c document them).
"""
import glob
import json
import os
import re
import subprocess
import unittest

from allocscope_e2e import BUILD, CLI, E2ETestCase

TORTURE = os.path.join(BUILD, "tests", "torture")
SHIM = os.path.join(BUILD, "shim", "liballocscope.so")
LIBCS = ("glibc", "musl")
EXTRA_ALLOCATORS = ("jemalloc", "tcmalloc", "mimalloc", "scudo")


def torture(name):
    path = os.path.join(TORTURE, name)
    if not os.path.exists(path):
        raise unittest.SkipTest(f"{name} was not built")
    return path


def clean_env(extra=None):
    """The caller's environment without LD_PRELOAD and ALLOCSCOPE_*, plus `extra`."""
    env = {k: v for k, v in os.environ.items()
           if k != "LD_PRELOAD" and not k.startswith("ALLOCSCOPE_") or k == "ALLOCSCOPE_BUILD"}
    env.update(extra or {})
    return env


def status(returncode):
    """A shell's view of an exit status: 128 + N for a process killed by signal N."""
    return 128 - returncode if returncode < 0 else returncode


class Outcome:
    def __init__(self, proc, profiles=()):
        self.rc = status(proc.returncode)
        self.stdout = proc.stdout
        self.stderr = proc.stderr
        self.profiles = list(profiles)

    def shim_lines(self):
        """What the shim said on stderr (its lines start with "allocscope: ")."""
        return [line for line in self.stderr.splitlines() if line.startswith("allocscope: ")]


def sized_calls(j, op, size):
    """Calls of `op` whose size fell in the size bucket of `size`."""
    lo_hi = bucket_range(size)
    for b in j["buckets"]:
        if b.get("lo") is not None and (b["lo"], b["hi"]) == lo_hi:
            return b["ops"].get(op, {}).get("calls", 0)
    return 0


def bucket_range(size):
    """[lo, hi] of the size bucket of `size` (4 buckets per power of two)."""
    if size < 4:
        return (size, size)
    e = size.bit_length() - 1
    step = 1 << (e - 2)
    lo = (size // step) * step
    return (lo, lo + step - 1)


def calls(j, op):
    return j["totals"].get(op, {}).get("calls", 0)


def failed(j, op):
    return j["totals"].get(op, {}).get("failed", 0)


def reentrant(j):
    return sum(t.get("reentrant_calls", 0) for t in j["threads"])


class RobustnessCase(E2ETestCase):
    """E2ETestCase with runs side by side: the program alone, then under the shim."""

    maxDiff = None

    def tearDown(self):
        self.doCleanups()  # unmount what a test mounted in its directory before removing it
        super().tearDown()

    def run_plain(self, argv, env=None, timeout=300, **kw):
        proc = subprocess.run(list(argv), capture_output=True, text=True, env=clean_env(env),
                              cwd=self.dir, timeout=timeout, **kw)
        return Outcome(proc)

    def run_preloaded(self, argv, out, env=None, preload_after=(), timeout=300, **kw):
        """The program with the shim in LD_PRELOAD (then `preload_after`) and ALLOCSCOPE_OUTPUT=out.
        Returns the Outcome with the profiles written at out and out.*."""
        preload = ":".join([SHIM, *preload_after])
        full = {"LD_PRELOAD": preload, "ALLOCSCOPE_OUTPUT": out}
        full.update(env or {})
        proc = subprocess.run(list(argv), capture_output=True, text=True, env=clean_env(full),
                              cwd=self.dir, timeout=timeout, **kw)
        return Outcome(proc, self.profiles_at(out))

    def run_recorded(self, argv, name, allocator=None, env=None, timeout=300):
        """`allocscope record -o <dir>/<name> [--allocator A] -- argv`."""
        path = os.path.join(self.dir, name)
        cmd = [CLI, "record", "-o", path]
        if allocator and allocator != "glibc":
            cmd += ["--allocator", allocator]
        proc = subprocess.run(cmd + ["--"] + list(argv), capture_output=True, text=True,
                              env=clean_env(env), cwd=self.dir, timeout=timeout)
        return Outcome(proc, self.profiles_at(path))

    @staticmethod
    def profiles_at(path):
        others = sorted(glob.glob(glob.escape(path) + ".*"))
        return ([path] if os.path.exists(path) else []) + others

    def assert_unchanged(self, plain, shimmed, what=""):
        """The program printed the same and ended the same way with the shim as without."""
        self.assertEqual(shimmed.rc, plain.rc, f"{what}: exit status changed\n{shimmed.stderr}")
        self.assertEqual(shimmed.stdout, plain.stdout, f"{what}: output changed\n{shimmed.stderr}")

    def dumps(self, run, count=None):
        """Every profile of a run, read back whole (dump --json exits 0)."""
        if count is not None:
            self.assertEqual(len(run.profiles), count, f"profiles: {run.profiles}\n{run.stderr}")
        return [self.dump(p) for p in run.profiles]

    def dump_quietly(self, path):
        """dump --json: (exit status, stdout, stderr)."""
        proc = subprocess.run([CLI, "dump", "--json", path], capture_output=True, text=True,
                              timeout=120)
        return proc.returncode, proc.stdout, proc.stderr

    def by_args(self, docs, *words):
        """The one profile whose argv contains every word."""
        found = [j for j in docs if all(w in (j["process"]["args"] or []) for w in words)]
        self.assertEqual(len(found), 1, f"profiles with args {words}: {len(found)}")
        return found[0]


def allocator_path(j):
    """The shared object that provided malloc in a recorded process."""
    return j["process"]["allocator"]


def one_error_line(stderr):
    """The analyzer's single error line, or None if stderr is not exactly one line."""
    lines = [line for line in stderr.splitlines() if line.strip()]
    return lines[0] if len(lines) == 1 else None


OFFSET_ERROR = re.compile(r"^allocscope: (?P<file>.+?): offset (?P<offset>\d+): (?P<reason>.+)$")
FILE_ERROR = re.compile(r"^allocscope: (?P<file>.+?): (?P<reason>.+)$")
