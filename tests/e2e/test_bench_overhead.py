"""bench/overhead on its real programs, in quick runs: the rows of a real program carry no thread
count, a run counts only when the program's output says it did its work and, for the fork/exec
driver under the shim, when every process wrote a profile; a program that is not set up is
skipped with a note. Timings are printed, never judged here."""
import json
import os
import shutil
import stat
import subprocess
import tempfile
import unittest

from allocscope_e2e import BUILD

SOURCE = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
OVERHEAD = os.path.join(SOURCE, "bench", "overhead")
SHIM = os.path.join(BUILD, "shim", "liballocscope.so")


class OverheadRealPrograms(unittest.TestCase):
    def setUp(self):
        for name in ("cxxpool", "forker", "libforward_only.so"):
            if not os.path.exists(os.path.join(BUILD, "bench", name)):
                self.skipTest(f"bench/{name} was not built")
        self.dir = tempfile.mkdtemp(prefix="allocscope-overhead-")
        self.env = dict(os.environ, XDG_CACHE_HOME=os.path.join(self.dir, "cache"))

    def tearDown(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def overhead(self, *args, build=BUILD):
        return subprocess.run(["python3", OVERHEAD, build, "--quick", "--rounds", "1", "--warmup", "0",
                               *args], capture_output=True, text=True, env=self.env, timeout=600)

    def test_threadpool_and_fork_exec_in_every_mode(self):
        out = os.path.join(self.dir, "o.json")
        proc = self.overhead("--setups", "cxx-threadpool,fork-exec",
                             "--modes", "forward,count,default,trace", "--json", out, "-v")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        with open(out) as f:
            rows = json.load(f)["rows"]
        self.assertEqual([(r["setup"], r["mode"]) for r in rows],
                         [(s, m) for s in ("cxx-threadpool", "fork-exec")
                          for m in ("none", "forward", "count", "default", "trace")])
        for r in rows:
            self.assertIsNone(r["threads"])
            self.assertEqual(r["runs"], 1)
            self.assertGreater(r["ratio"], 0)
            self.assertEqual(r["target"], 1.10 if r["mode"] == "count" else None)
        # the driver's 40 children and itself each wrote a profile, in every shim mode
        self.assertEqual(proc.stderr.count("fork-exec t=- "), 5)
        for mode in ("count", "default", "trace"):
            self.assertRegex(proc.stderr, rf"fork-exec t=- {mode} +wall=\S+ cpu=\S+ rc=0 profiles=(4[1-9]|[5-9]\d)")
        table = proc.stdout.splitlines()
        self.assertTrue(any(line.startswith("C++ thread pool, 4 threads") and " - " in line
                            and "count-only" in line for line in table), proc.stdout)
        self.assertTrue(any(line.startswith("fork+exec children, 40 children") for line in table),
                        proc.stdout)

    def test_php_not_set_up_is_skipped(self):
        proc = self.overhead("--setups", "php-zendmm-off,php-zendmm-on,php-threaded,cxx-threadpool",
                             "--modes", "count", "--markdown")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertIn("skipping php-zendmm-off: no ", proc.stderr)
        self.assertIn("run bench/workloads/php-composer/setup", proc.stderr)
        self.assertIn("skipping php-zendmm-on", proc.stderr)
        self.assertIn("skipping php-threaded: no ", proc.stderr)
        self.assertIn("run bench/workloads/php-threaded/setup", proc.stderr)
        self.assertIn("| C++ thread pool, 4 threads | - | count-only |", proc.stdout)
        self.assertNotIn("PHP", proc.stdout)

    def test_threaded_php_host_with_lock_waits(self):
        cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        host = os.path.join(cache, "allocscope", "workloads", "php-threaded", "host-gcc")
        if not os.access(host, os.X_OK):
            self.skipTest("the threaded PHP host is not built (bench/workloads/php-threaded/setup)")
        out = os.path.join(self.dir, "o.json")
        env = dict(self.env, XDG_CACHE_HOME=cache)
        proc = subprocess.run(["python3", OVERHEAD, BUILD, "--quick", "--rounds", "1", "--warmup", "0",
                               "--setups", "php-threaded", "--modes", "default,locks", "--json", out, "-v"],
                              capture_output=True, text=True, env=env, timeout=600)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        with open(out) as f:
            rows = json.load(f)["rows"]
        self.assertEqual([r["mode"] for r in rows], ["none", "default", "locks"])
        self.assertEqual([r["target"] for r in rows], [None, None, 1.10])
        self.assertRegex(proc.stderr, r"php-threaded t=- locks +wall=\S+ cpu=\S+ rc=0 profiles=1")
        self.assertIn("threaded PHP host, 8 workers", proc.stdout)

    def fake_build(self, name, script):
        build = os.path.join(self.dir, "build")
        os.makedirs(os.path.join(build, "bench"), exist_ok=True)
        path = os.path.join(build, "bench", name)
        with open(path, "w") as f:
            f.write("#!/bin/sh\n" + script)
        os.chmod(path, os.stat(path).st_mode | stat.S_IXUSR)
        return build

    def test_a_run_that_did_not_do_its_work_fails(self):
        build = self.fake_build("cxxpool", "echo tasks=500 tokens=1 checksum=nothex\n")
        proc = self.overhead("--setups", "cxx-threadpool", "--modes", "none", build=build)
        self.assertEqual(proc.returncode, 1, proc.stderr)
        self.assertIn("mode=none: wrong output: no line matching", proc.stderr)

    def test_a_run_with_another_result_fails(self):
        # the checksum depends on the work only: a run that prints another one did other work
        build = self.fake_build("cxxpool", 'if [ "$LD_PRELOAD" ]; then c=0b; else c=0a; fi\n'
                                           'echo tasks=500 tokens=1 checksum=$c\n')
        proc = self.overhead("--setups", "cxx-threadpool", "--modes", "count", "--shim", SHIM,
                             build=build)
        self.assertEqual(proc.returncode, 1, proc.stderr)
        self.assertIn("mode=count: wrong output: printed 'tasks=500 tokens=1 checksum=0b', "
                      "the first run 'tasks=500 tokens=1 checksum=0a'", proc.stderr)
        self.assertNotIn("mode=none", proc.stderr)

    def test_children_the_shim_did_not_follow_fail_the_run(self):
        # a "driver" that says its 40 children ran but started none: one profile, not 41
        build = self.fake_build("forker", "echo children=40 failed=0\n")
        proc = self.overhead("--setups", "fork-exec", "--modes", "count", "--shim", SHIM, build=build)
        self.assertEqual(proc.returncode, 1, proc.stderr)
        self.assertIn("mode=count: wrong output: 1 profile(s) written for 41 processes that ran: "
                      "the shim did not follow", proc.stderr)
        self.assertNotIn("mode=none", proc.stderr)


if __name__ == "__main__":
    unittest.main()
