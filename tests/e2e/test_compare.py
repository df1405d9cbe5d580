"""End-to-end tests of `allocscope compare` on short runs of the stress harness.

Three rows: glibc's malloc (the baseline), jemalloc preloaded, and the musl build of the harness
as a variant. Times are never asserted, only that the numbers are there, consistent and sane.
"""
import json
import os
import re
import signal
import subprocess
import time
import unittest

from allocscope_e2e import CLI, E2ETestCase, target

WORKLOAD_ARGS = ["2", "20000"]
SAMPLE = "1"  # every call timed: runs this short have too few timed calls with a sampled N


class CompareTestCase(E2ETestCase):
    def compare(self, *options, command=None, env=None, timeout=600):
        if command is None:
            command = [target("harness-glibc")] + WORKLOAD_ARGS
        full_env = dict(os.environ)
        full_env.update(env or {})
        return subprocess.run([CLI, "compare", *options, "--", *command], capture_output=True, text=True,
                              env=full_env, timeout=timeout, cwd=self.dir)

    def three_rows(self, *options, out=None):
        """glibc, jemalloc and the musl variant; skips when jemalloc is not installed."""
        args = ["--allocators", "glibc,jemalloc", "--variant", "musl=" + target("harness-musl"),
                "--sample", SAMPLE, *options]
        if out:
            args += ["-o", out]
        proc = self.compare(*args)
        if "skipping jemalloc" in proc.stderr:
            self.skipTest("jemalloc is not installed")
        return proc


class Tables(CompareTestCase):
    def test_json_has_every_row_with_sane_values(self):
        out = os.path.join(self.dir, "profiles")
        proc = self.three_rows("--runs", "2", "--json", out=out)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        doc = json.loads(proc.stdout)
        self.assertEqual(doc["schema"], "allocscope-compare/2")
        self.assertEqual(doc["runs_per_row"], 2)
        self.assertEqual(doc["sample_every"], int(SAMPLE))
        self.assertEqual(doc["baseline"], "glibc")
        self.assertEqual(doc["exit_status"], 0)
        self.assertEqual(doc["skipped"], [])
        self.assertIn("shim", doc["footnote"])
        rows = doc["rows"]
        self.assertEqual([r["name"] for r in rows], ["glibc", "jemalloc", "musl"])
        self.assertEqual([r["kind"] for r in rows], ["allocator", "allocator", "variant"])
        self.assertIsNone(rows[0]["allocator_library"])
        self.assertIn("jemalloc", rows[1]["allocator_library"])
        self.assertIn("jemalloc", rows[1]["allocator_seen"])
        self.assertIn("musl", rows[2]["allocator_seen"])
        for r in rows:
            for key in ("name", "wall_ns", "maxrss_kb", "delta_pct", "allocator_share", "wait_share", "coverage",
                        "coverage_reason", "top_classes", "runs", "exit_statuses"):
                self.assertIn(key, r)
            self.assertGreater(r["wall_ns"], 0)
            self.assertGreater(r["maxrss_kb"], 0)
            self.assertEqual(r["exit_statuses"], [0, 0])
            self.assertEqual(r["ok_runs"], 2)
            self.assertGreaterEqual(r["timed_calls"], 2 * 2 * 20000, r)  # every malloc and free of 2 threads
            self.assertGreater(r["allocator_share"], 0, r)
            self.assertLessEqual(r["allocator_share"], 1, r)
            self.assertGreaterEqual(r["wait_share"], 0, r)
            self.assertLessEqual(r["wait_share"], 1, r)
            self.assertTrue(1 <= len(r["top_classes"]) <= 3, r["top_classes"])
            shares = [c["share"] for c in r["top_classes"]]
            self.assertEqual(shares, sorted(shares, reverse=True))
            self.assertLessEqual(sum(shares), 1.0001)
            self.assertEqual([run["round"] for run in r["runs"]], [1, 2])
            self.assertIn(r["median_run"], (1, 2))
            walls = sorted(run["wall_ns"] for run in r["runs"])
            self.assertAlmostEqual(r["wall_ns"], (walls[0] + walls[1]) / 2, delta=2)
            for run in r["runs"]:
                self.assertTrue(os.path.exists(run["profile"]), run["profile"])
                self.assertTrue(run["profile"].startswith(out))
            # Δ wall is the medians' ratio.
            # Both walls are printed to the nanosecond: the ratio of the printed values may be off
            # by that rounding.
            ratio = r["wall_ns"] / rows[0]["wall_ns"]
            expected = 100 * (ratio - 1)
            rounding = 100 * ratio * (0.5 / r["wall_ns"] + 0.5 / rows[0]["wall_ns"])
            self.assertAlmostEqual(r["delta_pct"], expected, delta=0.005 + rounding)
        self.assertEqual(rows[0]["delta_pct"], 0)
        self.assertIsNone(rows[0]["coverage"])
        self.assertEqual(rows[0]["coverage_reason"], "the baseline")
        for r in rows[1:]:
            if r["coverage"] is None:
                self.assertTrue(r["coverage_reason"], r)
            else:
                self.assertIsInstance(r["coverage"], (int, float))
                self.assertIsNone(r["coverage_reason"])
        self.assertEqual(doc["output_dir"], os.path.abspath(out))

    def test_a_gap_within_the_runs_spread_gets_no_coverage(self):
        # The same program twice: whenever the medians differ by no more than either row's runs
        # do among themselves, no share of that gap is printed, and the row says why.
        proc = self.compare("--allocators", "glibc", "--variant", "same=" + target("harness-glibc"),
                            "--sample", SAMPLE, "--runs", "3", "--json")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        base, same = json.loads(proc.stdout)["rows"]
        spread = lambda r: max(x["wall_ns"] for x in r["runs"]) - min(x["wall_ns"] for x in r["runs"])
        if abs(same["wall_ns"] - base["wall_ns"]) <= max(spread(base), spread(same)):
            self.assertIsNone(same["coverage"], same)
            self.assertIsNone(same.get("explained"), same)  # (with --locks)
            self.assertRegex(same["coverage_reason"], "same thread time|differ by no more than the runs")
        elif same["coverage"] is None:
            self.assertTrue(same["coverage_reason"], same)

    def test_runs_are_interleaved_in_rotated_order(self):
        out = os.path.join(self.dir, "profiles")
        proc = self.three_rows("--runs", "3", "--json", out=out)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        # stderr is not a terminal: one line per finished run, in the order they ran.
        progress = re.findall(r"^allocscope: (\d+)/9: (\S+) run (\d+)/3: ", proc.stderr, re.M)
        self.assertEqual([int(step) for step, _, _ in progress], list(range(1, 10)), proc.stderr)
        self.assertEqual([f"{name}.{run}" for _, name, run in progress],
                         ["glibc.1", "jemalloc.1", "musl.1",
                          "jemalloc.2", "musl.2", "glibc.2",
                          "musl.3", "glibc.3", "jemalloc.3"])
        logs = sorted(f for f in os.listdir(out) if f.endswith(".log"))
        self.assertEqual(len(logs), 9, logs)
        with open(os.path.join(out, "musl.1.log")) as log:
            self.assertIn("sink=", log.read())  # the workload's output went there, not to compare's
        self.assertNotIn("sink=", proc.stdout + proc.stderr)

    def test_text_table(self):
        proc = self.three_rows("--runs", "1")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        lines = proc.stdout.splitlines()
        header = next(i for i, line in enumerate(lines) if line.split()[:3] == ["row", "wall", "Δ"])
        for column in ("max RSS", "allocator", "waiting", "coverage", "ok"):
            self.assertIn(column, lines[header])
        rows = lines[header + 1:header + 4]
        self.assertTrue(rows[0].split()[0] == "glibc", rows)
        self.assertIn("baseline", rows[0])
        self.assertTrue(rows[1].split()[0] == "jemalloc", rows)
        self.assertTrue(rows[2].startswith("  musl (variant)"), rows)
        for row in rows:
            self.assertRegex(row, r"\d+\.\d{3} s")
            self.assertRegex(row, r"\d+(\.\d+)? [KMG]iB")
        for row in rows[1:]:
            self.assertRegex(row, r"[+-]\d+\.\d %")
        classes = lines.index("Costliest size classes (share of the allocator's time)")
        for line, name in zip(lines[classes + 1:classes + 4], ("glibc", "jemalloc", "musl (variant)")):
            self.assertTrue(line.startswith("  " + name), line)
            self.assertRegex(line, r"\d+ %")
        self.assertIn("shim preloaded", proc.stdout)
        self.assertIn("interleaved", proc.stdout)
        self.assertIn("1 run per row", proc.stdout)

    def test_markdown_table_is_well_formed(self):
        proc = self.three_rows("--runs", "1", "--markdown")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        table = [line for line in proc.stdout.splitlines() if line.startswith("|")]
        self.assertEqual(len(table), 2 + 3, proc.stdout)

        def cells(line):
            self.assertTrue(line.startswith("| ") and line.endswith(" |"), line)
            return [c.strip() for c in re.split(r"(?<!\\)\|", line)[1:-1]]

        width = len(cells(table[0]))
        self.assertGreaterEqual(width, 7)
        for line in table:
            self.assertEqual(len(cells(line)), width, line)
        self.assertTrue(all(re.fullmatch(r":?-{3,}:?", c) for c in cells(table[1])), table[1])
        self.assertEqual([cells(line)[0] for line in table[2:]], ["glibc", "jemalloc", "musl (variant)"])
        self.assertNotIn("\x1b", proc.stdout)


class Failures(CompareTestCase):
    def test_a_missing_allocator_is_skipped_with_a_note(self):
        proc = self.compare("--allocators", "glibc,/nonexistent/libnomalloc.so.1", "--runs", "1", "--json")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        notes = [line for line in proc.stderr.splitlines() if "libnomalloc" in line]
        self.assertEqual(len(notes), 1, proc.stderr)
        self.assertIn("skipping", notes[0])
        doc = json.loads(proc.stdout)
        self.assertEqual([r["name"] for r in doc["rows"]], ["glibc"])
        self.assertEqual([s["name"] for s in doc["skipped"]], ["libnomalloc.so.1"])

    def test_a_failing_workload_is_reported_and_fails_compare(self):
        proc = self.compare("--allocators", "glibc", "--runs", "2", "--json",
                            command=[target("exit_status-glibc"), "exit", "3"])
        self.assertEqual(proc.returncode, 3, proc.stderr)
        doc = json.loads(proc.stdout)
        self.assertEqual(doc["exit_status"], 3)
        row = doc["rows"][0]
        self.assertEqual(row["exit_statuses"], [3, 3])
        self.assertEqual(row["ok_runs"], 0)
        self.assertTrue(any("status 3" in note and "exit_status: exit 3" in note for note in doc["notes"]),
                        doc["notes"])

    def test_a_failing_workload_in_text(self):
        proc = self.compare("--allocators", "glibc", "--runs", "1", command=[target("exit_status-glibc"), "exit", "3"])
        self.assertEqual(proc.returncode, 3, proc.stderr)
        self.assertIn("exited with status 3", proc.stdout)
        self.assertRegex(proc.stdout, r"glibc .* 0/1")

    def test_a_workload_that_cannot_start_is_an_error(self):
        proc = self.compare("--allocators", "glibc", command=[os.path.join(self.dir, "no-such-program")])
        self.assertEqual(proc.returncode, 2)
        self.assertIn("command not found", proc.stderr)
        proc = self.compare("--allocators", "glibc", "--variant", "x=" + os.path.join(self.dir, "missing"))
        self.assertEqual(proc.returncode, 2)
        self.assertIn("missing: command not found", proc.stderr)
        static = target("static_hello-glibc")
        proc = self.compare("--allocators", "glibc", command=[static])
        self.assertEqual(proc.returncode, 2)
        self.assertIn("statically linked", proc.stderr)

    def test_bad_command_lines_exit_2(self):
        for args in (["--runs", "0"], ["--allocators", "nosuchmalloc"], ["--json", "--markdown"],
                     ["--allocators", "glibc,glibc"]):
            proc = self.compare(*args)
            self.assertEqual(proc.returncode, 2, (args, proc.stderr))
            self.assertTrue(proc.stderr.startswith("allocscope: compare:"), (args, proc.stderr))
            self.assertEqual(proc.stdout, "")
        os.mkdir(os.path.join(self.dir, "full"))
        open(os.path.join(self.dir, "full", "x"), "w").close()
        proc = self.compare("--allocators", "glibc", "-o", os.path.join(self.dir, "full"))
        self.assertEqual(proc.returncode, 2)
        self.assertIn("not empty", proc.stderr)


class OutputDirectory(CompareTestCase):
    def leftovers(self, tmp):
        return [f for f in os.listdir(tmp) if f.startswith("allocscope-compare-")]

    def test_the_default_directory_is_removed_unless_kept(self):
        tmp = os.path.join(self.dir, "tmp")
        os.mkdir(tmp)
        proc = self.compare("--allocators", "glibc", "--runs", "1", "--json", env={"TMPDIR": tmp})
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertEqual(self.leftovers(tmp), [])
        doc = json.loads(proc.stdout)
        self.assertIsNone(doc["output_dir"])
        self.assertIsNone(doc["rows"][0]["runs"][0]["profile"])

        proc = self.compare("--allocators", "glibc", "--runs", "1", "--json", "--keep", env={"TMPDIR": tmp})
        self.assertEqual(proc.returncode, 0, proc.stderr)
        kept = self.leftovers(tmp)
        self.assertEqual(len(kept), 1)
        doc = json.loads(proc.stdout)
        self.assertEqual(doc["output_dir"], os.path.join(tmp, kept[0]))
        self.assertTrue(os.path.exists(doc["rows"][0]["runs"][0]["profile"]))
        self.assertIn(kept[0], proc.stderr)


class Stopping(CompareTestCase):
    def test_a_run_killed_by_sigterm_stops_the_comparison_and_cleans_up(self):
        tmp = os.path.join(self.dir, "tmp")
        os.mkdir(tmp)
        proc = self.compare("--allocators", "glibc,jemalloc", "--runs", "3", env={"TMPDIR": tmp},
                            command=["/bin/sh", "-c", "kill -TERM $$"])
        self.assertEqual(proc.returncode, 128 + signal.SIGTERM, proc.stderr)
        self.assertIn("stopped by signal 15", proc.stderr)
        self.assertIn("after 1 of 6 runs", proc.stderr)
        self.assertEqual(proc.stdout, "")
        self.assertEqual(os.listdir(tmp), [])

    def test_sigterm_to_compare_reaches_the_workload_and_stops(self):
        tmp = os.path.join(self.dir, "tmp")
        os.mkdir(tmp)
        env = dict(os.environ, TMPDIR=tmp)
        proc = subprocess.Popen([CLI, "compare", "--allocators", "glibc", "--runs", "5", "--", "sleep", "30"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
        deadline = time.monotonic() + 60
        while not any(os.scandir(tmp)) and time.monotonic() < deadline:  # the output directory exists
            time.sleep(0.05)
        time.sleep(0.3)
        started = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        stdout, stderr = proc.communicate(timeout=60)
        self.assertLess(time.monotonic() - started, 20, "compare waited for the workload to end by itself")
        self.assertEqual(proc.returncode, 128 + signal.SIGTERM, stderr)
        self.assertIn("stopped by signal 15", stderr)
        self.assertEqual(stdout, "")
        self.assertEqual(os.listdir(tmp), [])


if __name__ == "__main__":
    unittest.main()
