"""Shared helpers for the end-to-end tests: run `allocscope` the way a user does and read its JSON.

The build directory comes from the ALLOCSCOPE_BUILD environment variable (ctest sets it).
"""
import glob
import json
import os
import shutil
import subprocess
import tempfile
import unittest

BUILD = os.path.abspath(os.environ.get("ALLOCSCOPE_BUILD", "build"))
CLI = os.path.join(BUILD, "analyzer", "allocscope")
TARGETS = os.path.join(BUILD, "tests", "targets")
ALLOCATORS = ["glibc", "jemalloc", "tcmalloc", "mimalloc", "scudo"]


def target(name):
    path = os.path.join(TARGETS, name)
    if not os.path.exists(path):
        raise unittest.SkipTest(f"{name} was not built")
    return path


class Run:
    def __init__(self, proc, profiles):
        self.rc = proc.returncode
        self.stdout = proc.stdout
        self.stderr = proc.stderr
        self.profiles = profiles  # the root profile first, then the others sorted


class E2ETestCase(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="allocscope-e2e-")

    def tearDown(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def record(self, argv, allocator=None, sample=None, env=None, out="run.asp", timeout=600, options=()):
        path = os.path.join(self.dir, out)
        cmd = [CLI, "record", "-o", path, *options]
        if allocator and allocator != "glibc":
            cmd += ["--allocator", allocator]
        if sample is not None:
            cmd += ["--sample", str(sample)]
        cmd += ["--"] + list(argv)
        full_env = dict(os.environ)
        full_env.update(env or {})
        proc = subprocess.run(cmd, capture_output=True, text=True, env=full_env, timeout=timeout,
                              cwd=self.dir)
        others = sorted(p for p in glob.glob(path + ".*"))
        profiles = ([path] if os.path.exists(path) else []) + others
        return Run(proc, profiles)

    def dump(self, path):
        proc = subprocess.run([CLI, "dump", "--json", path], capture_output=True, text=True)
        self.assertEqual(proc.returncode, 0, f"dump {path} failed: {proc.stderr}")
        return json.loads(proc.stdout)

    def assert_consistent(self, j):
        """Buckets, per-thread and per-op totals describe the same calls."""
        total_calls = sum(t["calls"] for t in j["totals"].values())
        total_bytes = sum(t["bytes"] for t in j["totals"].values())
        self.assertEqual(sum(b["calls"] for b in j["buckets"]), total_calls)
        self.assertEqual(sum(b["bytes"] for b in j["buckets"]), total_bytes)
        for op, tot in j["totals"].items():
            per_thread = sum(th["totals"].get(op, {}).get("calls", 0) for th in j["threads"])
            self.assertEqual(per_thread, tot["calls"], op)


def calls(j, op, threads=None):
    if threads is None:
        return j["totals"].get(op, {}).get("calls", 0)
    return sum(t["totals"].get(op, {}).get("calls", 0) for t in threads)


def op_bytes(j, op, threads=None):
    if threads is None:
        return j["totals"].get(op, {}).get("bytes", 0)
    return sum(t["totals"].get(op, {}).get("bytes", 0) for t in threads)


def worker_threads(j):
    pid = j["process"]["pid"]
    return [t for t in j["threads"] if t["tid"] != pid]


def bucket_calls(j, op, lo, hi):
    """Calls of `op` in the buckets that overlap [lo, hi]."""
    n = 0
    for b in j["buckets"]:
        if b.get("lo") is None or b["hi"] < lo or b["lo"] > hi:
            continue
        n += b["ops"].get(op, {}).get("calls", 0)
    return n
