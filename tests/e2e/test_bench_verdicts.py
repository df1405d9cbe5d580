"""bench/verdicts in a tiny matrix: every run's profile kept with --keep, then read again with
--rejudge (no recording): the same runs, the same verdicts from the same analyzer, and a clear
error when a kept profile is gone.  The verdicts themselves are judged by test_contention_verdict;
here only the bookkeeping is."""
import json
import os
import shutil
import subprocess
import tempfile
import unittest

from allocscope_e2e import BUILD

SOURCE = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
VERDICTS = os.path.join(SOURCE, "bench", "verdicts")


class VerdictsKeepAndRejudge(unittest.TestCase):
    def setUp(self):
        if not os.path.exists(os.path.join(BUILD, "tests", "allocators", "libmutex_alloc.so")):
            self.skipTest("libmutex_alloc.so was not built")
        if not os.path.exists(os.path.join(BUILD, "bench", "harness-glibc")):
            self.skipTest("bench/harness-glibc was not built")
        self.dir = tempfile.mkdtemp(prefix="allocscope-verdicts-test-")

    def tearDown(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def verdicts(self, *args):
        return subprocess.run(["python3", VERDICTS, BUILD, *args], capture_output=True, text=True, timeout=600)

    def test_kept_profiles_are_judged_again(self):
        keep = os.path.join(self.dir, "profiles")
        first, again = os.path.join(self.dir, "m.json"), os.path.join(self.dir, "r.json")
        proc = self.verdicts("--allocators", "mutex,glibc", "--workloads", "stress", "--threads", "1,2",
                             "--runs", "1", "--hog-runs", "0", "--seconds", "0.1", "--keep", keep, "--json", first)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        with open(first) as f:
            runs = json.load(f)["runs"]
        self.assertEqual(sorted((r["allocator"], r["threads"]) for r in runs),
                         [("glibc", 1), ("glibc", 2), ("mutex", 1), ("mutex", 2)])
        for r in runs:
            self.assertEqual(r["profile"], os.path.join(keep, f"{r['allocator']}-stress-{r['threads']}-1.asp"))
            self.assertTrue(os.path.getsize(r["profile"]) > 0, r)

        proc = self.verdicts("--rejudge", first, "--json", again)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertNotIn("->", proc.stderr)  # no verdict changed: the same analyzer read the same runs
        self.assertIn("mutex (lock)", proc.stdout)
        with open(again) as f:
            rejudged = json.load(f)["runs"]
        key = lambda r: (r["allocator"], r["threads"])
        self.assertEqual([(key(r), r["verdict"], r["reason"], r["evidence"]) for r in sorted(rejudged, key=key)],
                         [(key(r), r["verdict"], r["reason"], r["evidence"]) for r in sorted(runs, key=key)])

        os.unlink(runs[0]["profile"])
        proc = self.verdicts("--rejudge", first)
        self.assertEqual(proc.returncode, 2, proc.stderr)
        self.assertIn(f"profile {runs[0]['profile']} is gone", proc.stderr)

    def test_rejudge_of_a_file_that_is_no_matrix_says_so(self):
        bad = os.path.join(self.dir, "bad.json")
        with open(bad, "w") as f:
            f.write("{\"rows\": []}")
        proc = self.verdicts("--rejudge", bad)
        self.assertEqual(proc.returncode, 2)
        self.assertIn(f"{bad}: cannot read the runs", proc.stderr)


if __name__ == "__main__":
    unittest.main()
