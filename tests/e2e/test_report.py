"""End-to-end tests of `allocscope report` on real runs of the stress harness.

The thresholds come from measurements (docs/analysis.md): musl's malloc takes one lock for the
whole process, glibc's threads work in their own arenas and caches. The harness runs with
--sample 16 so that enough windows see the threads together. Threads that are never scheduled
at the same time (a machine busy with other work) never meet inside the allocator: a run whose
serialization index rests on too few calls is repeated, and the test is skipped only when no
run could measure it at all.
"""
import json
import os
import subprocess
import unittest

from allocscope_e2e import CLI, E2ETestCase, target

SAMPLE = 16
MIN_SI_CALLS = 200   # calls that met another thread inside, for a serialization index to trust
ATTEMPTS = 3


class ReportTestCase(E2ETestCase):
    def report(self, path, *options):
        proc = subprocess.run([CLI, "report", "--json", *options, path], capture_output=True, text=True,
                              timeout=300)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        return json.loads(proc.stdout)

    def record_harness(self, program, threads, iters, name):
        run = self.record([target(program), str(threads), str(iters)], sample=SAMPLE, out=name)
        self.assertEqual(run.rc, 0, run.stderr)
        self.assertTrue(run.profiles, run.stderr)
        return run.profiles[0]

    def measured_si(self, program, threads, iters, enough):
        """Serialization indexes of up to ATTEMPTS runs that measure one on enough calls, stopping
        at the first that `enough` accepts, and all reports.

        Noise only pushes one way: a thread preempted or slowed by its CPU's other work (a VM's
        sibling, the hypervisor) makes progress more slowly while inside, so an allocator that lets
        threads run side by side can read as less parallel in one run, never as more."""
        reports, measured = [], []
        for attempt in range(ATTEMPTS):
            j = self.report(self.record_harness(program, threads, iters, f"{program}-{threads}-{attempt}.asp"))
            reports.append(j)
            if j["serialization_index"] is not None and j["contention"]["si_calls"] >= MIN_SI_CALLS:
                measured.append(j["serialization_index"])
                if enough(measured[-1]):
                    break
        return measured, reports


class Serialization(ReportTestCase):
    # Measured on a 2-core VM (--sample 16, 2 x 2,000,000): glibc 1.35-1.77 idle, musl 0.69-0.89,
    # with the machine busy with other builds.  The test takes musl's lowest and glibc's highest
    # of up to three runs (see measured_si): a run that shows glibc's threads side by side proves
    # they can be, while no run of a global lock shows parallel progress.
    def test_musl_takes_turns_glibc_does_not(self):
        musl, musl_reports = self.measured_si("harness-musl", 2, 2_000_000, lambda si: si < 1.25)
        glibc, glibc_reports = self.measured_si("harness-glibc", 2, 2_000_000, lambda si: si > 1.3)
        if not musl and not glibc:
            self.skipTest("the harness threads never ran inside the allocator together (a busy machine)")
        if musl:
            self.assertLess(min(musl), 1.25, [r["verdict"]["text"] for r in musl_reports])
        if glibc:
            self.assertGreater(max(glibc), 1.3, [r["verdict"]["text"] for r in glibc_reports])
        if musl and glibc:
            self.assertGreater(max(glibc), min(musl) + 0.3)

    def test_musl_at_eight_threads_is_mostly_waiting(self):
        texts = []
        for attempt in range(ATTEMPTS):
            j = self.report(self.record_harness("harness-musl", 8, 300_000, f"musl-8-{attempt}.asp"))
            texts.append(j["verdict"]["text"])
            if j["verdict"]["dominant"] == "waiting" and j["wait_share"] > 0.5:
                self.assertIn("waiting", j["verdict"]["text"])
                self.assertGreater(j["allocator_share"], 0.2)
                return
        self.fail(f"waiting never dominated: {texts}")

    def test_glibc_fast_path_dominates(self):
        # A thread preempted in a timed call makes that call "slow": on a busy machine one run can
        # be dominated by it (and its error bound says so).  One run of three must show the truth.
        texts = []
        for attempt in range(ATTEMPTS):
            # 2,000,000 iterations: in a shorter run (a few ms) the few long calls at a thread's
            # start (its arena mapped, first touches) weigh too much, and the report says so.
            j = self.report(self.record_harness("harness-glibc", 2, 2_000_000, f"glibc-fast-{attempt}.asp"))
            self.assertLess(j["wait_share"], 0.05)
            texts.append(j["verdict"]["text"])
            if j["verdict"]["dominant"] == "fast":
                return
        self.fail(f"the fast path never dominated: {texts}")


class ReportShape(ReportTestCase):
    @classmethod
    def setUpClass(cls):
        cls.shared = ReportTestCase("run")
        cls.shared.setUp()
        cls.path = cls.shared.record_harness("harness-glibc", 2, 50_000, "shape.asp")

    @classmethod
    def tearDownClass(cls):
        cls.shared.tearDown()

    def test_numbers_add_up(self):
        j = self.report(self.path)
        dump = self.dump(self.path)
        self.assertEqual(j["calls"], sum(t["calls"] for t in dump["totals"].values()))
        self.assertEqual(sum(c["calls"] for c in j["classes"]), j["calls"])
        self.assertEqual(sum(t["calls"] for t in j["per_thread"]), j["calls"])
        for key in ("allocator_time_ns", "fast_ns", "slow_ns", "wait_ns"):
            self.assertAlmostEqual(sum(c[key if key != "allocator_time_ns" else "time_ns"] for c in j["classes"]),
                                   j[key], delta=len(j["classes"]) + 1)
        self.assertAlmostEqual(j["fast_ns"] + j["slow_ns"] + j["wait_ns"], j["allocator_time_ns"], delta=3)
        self.assertAlmostEqual(sum(c["call_share"] for c in j["classes"]), 1.0, delta=0.01)
        self.assertEqual(j["class_table"], "glibc")
        malloc_bytes = sum(c["bytes"] for c in j["classes"])
        self.assertEqual(malloc_bytes, dump["totals"]["malloc"]["bytes"] + dump["totals"].get("calloc", {}).get("bytes", 0))
        for c in j["classes"]:
            if c["p50_ns"] is not None:
                self.assertLessEqual(c["p50_ns"], c["p90_ns"])
                self.assertLessEqual(c["p90_ns"], c["p99_ns"])
                self.assertLessEqual(c["p99_ns"], c["p999_ns"])
                self.assertLessEqual(c["p999_ns"], c["max_ns"])

    def test_groupings(self):
        by_bucket = self.report(self.path, "--by", "bucket")
        self.assertEqual(by_bucket["class_table"], "buckets")
        self.assertEqual(by_bucket["by"], "bucket")
        by_thread = self.report(self.path, "--by=thread")
        self.assertEqual(by_thread["by"], "thread")
        by_class = self.report(self.path)
        self.assertEqual(by_class["calls"], by_bucket["calls"])

    def test_text_fits_in_100_columns(self):
        for by in ("class", "bucket", "thread"):
            proc = subprocess.run([CLI, "report", "--by", by, self.path], capture_output=True, text=True)
            self.assertEqual(proc.returncode, 0, proc.stderr)
            for section in ("Verdict", "Contention", "Model"):
                self.assertIn(f"\n{section}", proc.stdout)
            for line in proc.stdout.splitlines():
                self.assertLessEqual(len(line), 100, line)

    def test_several_files_give_an_array(self):
        proc = subprocess.run([CLI, "report", "--json", self.path, self.path], capture_output=True, text=True)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        docs = json.loads(proc.stdout)
        self.assertEqual(len(docs), 2)
        self.assertEqual(docs[0], docs[1])

    def test_usage_errors(self):
        for args in ([], ["--by", "color", self.path], ["--frobnicate", self.path], ["--by"]):
            proc = subprocess.run([CLI, "report", *args], capture_output=True, text=True)
            self.assertEqual(proc.returncode, 2, args)
            self.assertIn("report", proc.stderr)
        proc = subprocess.run([CLI, "report", "--help"], capture_output=True, text=True)
        self.assertEqual(proc.returncode, 0)
        self.assertIn("--by", proc.stdout)
        proc = subprocess.run([CLI, "report", os.path.join(self.shared.dir, "missing.asp")], capture_output=True,
                              text=True)
        self.assertEqual(proc.returncode, 2)


if __name__ == "__main__":
    unittest.main()
