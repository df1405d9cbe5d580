"""The workload set-up scripts in their quick smoke mode: each builds into a cache directory of its
own (never the user's), prints the paths of what it built, and is idempotent."""
import os
import shutil
import subprocess
import tempfile
import unittest

SOURCE = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
STRESS_SETUP = os.path.join(SOURCE, "bench", "workloads", "stress", "setup")


class StressSetup(unittest.TestCase):
    def setUp(self):
        self.cache = tempfile.mkdtemp(prefix="allocscope-setup-")
        for compiler in ("gcc", "musl-gcc"):
            if not shutil.which(compiler):
                self.skipTest(f"{compiler} is not installed")

    def tearDown(self):
        shutil.rmtree(self.cache, ignore_errors=True)

    def setup_script(self, *args, env=None):
        full_env = dict(os.environ, XDG_CACHE_HOME=self.cache)
        full_env.update(env or {})
        return subprocess.run([STRESS_SETUP, *args], capture_output=True, text=True, env=full_env, timeout=300)

    def test_smoke_builds_both_into_the_cache_and_runs_them(self):
        proc = self.setup_script("--smoke")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        expected_dir = os.path.join(self.cache, "allocscope", "workloads", "stress")
        paths = proc.stdout.split()
        self.assertEqual(paths, [os.path.join(expected_dir, "harness-glibc"), os.path.join(expected_dir, "harness-musl")])
        for path in paths:
            self.assertTrue(os.access(path, os.X_OK), path)
        self.assertIn("smoke: harness-glibc 2 1000: sink=", proc.stderr)
        self.assertIn("smoke: harness-musl 2 1000: sink=", proc.stderr)
        with open(paths[1], "rb") as f:
            self.assertIn(b"ld-musl", f.read())

        mtimes = [os.stat(p).st_mtime_ns for p in paths]
        again = self.setup_script()
        self.assertEqual(again.returncode, 0, again.stderr)
        self.assertEqual(again.stdout.split(), paths)
        self.assertEqual(again.stderr.count("is up to date"), 2, again.stderr)
        self.assertEqual([os.stat(p).st_mtime_ns for p in paths], mtimes)

    def test_a_missing_compiler_is_a_clear_error(self):
        proc = self.setup_script(env={"MUSL_GCC": "no-such-musl-gcc"})
        self.assertEqual(proc.returncode, 1)
        self.assertIn("no-such-musl-gcc not found", proc.stderr)
        self.assertIn("musl-tools", proc.stderr)

    def test_bad_arguments(self):
        proc = self.setup_script("--bogus")
        self.assertEqual(proc.returncode, 2)
        self.assertIn("usage", proc.stderr)


if __name__ == "__main__":
    unittest.main()
