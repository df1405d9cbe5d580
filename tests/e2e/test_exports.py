"""End-to-end tests of `allocscope export` on traces of the stress harness, as a user opens them.

* folded: a trace recorded with `record --trace --stacks` (stacks on 1 timed call in 64, timed
  calls during 1/64 of the time) carries a stack on a few hundred of its calls; the flame graph
  of its folded export must still show where the time goes: >= 90 % of the weight under real
  frames, the same total weight as the unscaled export, and the export says so.
* chrome: real thread ids named by metadata events, untimed calls as instant events, --from/--to
  (seconds or ticks) and --threads, a progress bar on long exports, the documented size per call.
"""
import json
import os
import re
import subprocess
import unittest

from allocscope_e2e import CLI, E2ETestCase, target

# docs/shapes.md: "about 150 bytes per call" (timed calls, with the counter events of a trace).
MAX_BYTES_PER_CALL = 170


def run(*args, **kw):
    return subprocess.run([CLI, *args], capture_output=True, text=True, timeout=900, **kw)


def folded_weights(path):
    lines = {}
    with open(path) as f:
        for line in f:
            stack, weight = line.rstrip("\n").rsplit(" ", 1)
            lines[stack] = lines.get(stack, 0) + int(weight)
    return lines


class Folded(E2ETestCase):
    def test_sampled_stacks_carry_the_weight(self):
        trace = os.path.join(self.dir, "t.asp")
        proc = run("record", "--trace", "--stacks", "-o", trace, "--", target("harness-glibc"), "2", "300000")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        shapes = json.loads(run("shapes", "--json", trace).stdout)
        calls = shapes["trace"]["calls"]
        self.assertGreaterEqual(calls, 1_200_000)  # and the few of the program's start

        out = os.path.join(self.dir, "t.folded")
        proc = run("export", trace, "--format", "folded", "-o", out)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        m = re.search(r"allocscope: export: (\d+) of (\d+) calls carry a stack; each stands for the calls it "
                      r"represents .*: (\d+) % of the weight is under stacks", proc.stderr)
        self.assertIsNotNone(m, proc.stderr)
        sampled, total_calls = int(m.group(1)), int(m.group(2))
        self.assertEqual(total_calls, calls)
        self.assertLess(sampled, calls // 100)  # a sample indeed
        weights = folded_weights(out)
        total = sum(weights.values())
        under_frames = sum(w for stack, w in weights.items() if not stack.startswith("[no stack]"))
        self.assertGreaterEqual(under_frames, 0.9 * total, weights)
        self.assertEqual(int(m.group(3)), round(100 * under_frames / total))
        # Real frames: the harness's worker function under the C library's thread start.
        self.assertTrue(any("worker" in stack.split(";") for stack in weights), list(weights)[:5])

        # The scaling moves weight between stacks, never changes its total.
        raw = os.path.join(self.dir, "raw.folded")
        proc = run("export", trace, "--format", "folded", "--unscaled", "-o", raw)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        raw_weights = folded_weights(raw)
        self.assertEqual(sum(raw_weights.values()), total)
        # Unscaled, a stack weighs only its own calls: less than scaled, where each stands for the
        # calls it represents.  (How much less depends on the run: every call of 50 µs or more
        # carries a stack, and on a busy machine preempted calls are many; one such run put 13 %
        # of the weight under stacks unscaled, a quiet one under 10 %.)
        raw_under = sum(w for stack, w in raw_weights.items() if not stack.startswith("[no stack]"))
        self.assertLess(raw_under, under_frames)

        calls_out = os.path.join(self.dir, "calls.folded")
        proc = run("export", trace, "--format", "folded", "--weight", "calls", "-o", calls_out)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        by_calls = folded_weights(calls_out)
        self.assertEqual(sum(by_calls.values()), calls)
        self.assertGreaterEqual(sum(w for s, w in by_calls.items() if not s.startswith("[no stack]")), 0.9 * calls)


class Chrome(E2ETestCase):
    @classmethod
    def setUpClass(cls):
        import tempfile
        cls.tmp = tempfile.mkdtemp(prefix="allocscope-chrome-")
        cls.trace = os.path.join(cls.tmp, "t.asp")
        proc = run("record", "--trace", "--stacks", "-o", cls.trace, "--", target("harness-glibc"), "3", "20000")
        if proc.returncode != 0:
            raise AssertionError(proc.stderr)
        cls.dump = json.loads(run("dump", "--json", cls.trace).stdout)
        cls.shapes = json.loads(run("shapes", "--json", cls.trace).stdout)
        cls.full = os.path.join(cls.tmp, "full.json")
        proc = run("export", cls.trace, "--format", "chrome", "-o", cls.full)
        if proc.returncode != 0:
            raise AssertionError(proc.stderr)
        with open(cls.full) as f:
            cls.doc = json.load(f)

    @classmethod
    def tearDownClass(cls):
        import shutil
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def export(self, *options):
        out = os.path.join(self.dir, "part.json")
        proc = run("export", self.trace, "--format", "chrome", "-o", out, "--force", *options)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        with open(out) as f:
            return json.load(f)

    @staticmethod
    def calls(doc):
        return [e for e in doc["traceEvents"] if e["ph"] in ("X", "i")]

    def test_every_call_timed_or_instant(self):
        events = self.calls(self.doc)
        trace = self.shapes["trace"]
        self.assertEqual(len(events), trace["calls"])
        timed = [e for e in events if e["ph"] == "X"]
        instant = [e for e in events if e["ph"] == "i"]
        self.assertEqual(len(timed), trace["timed_calls"])
        self.assertEqual(len(instant), trace["calls"] - trace["timed_calls"])
        self.assertGreater(len(instant), 0)  # --sample 64: most calls were not timed
        for e in instant:
            self.assertEqual(e["s"], "t")  # thread-scoped instant event
            self.assertNotIn("dur", e)
        self.assertEqual(self.doc["otherData"]["calls"], trace["calls"])

    def test_real_thread_ids_with_names(self):
        pid = self.dump["process"]["pid"]
        tids = {t["tid"] for t in self.dump["threads"]}
        self.assertEqual(len(tids), 4)  # main and 3 workers
        events = self.calls(self.doc)
        self.assertTrue({e["tid"] for e in events} <= tids)
        self.assertTrue(all(e["pid"] == pid for e in self.doc["traceEvents"]))
        names = {e["tid"]: e["args"]["name"] for e in self.doc["traceEvents"]
                 if e["ph"] == "M" and e["name"] == "thread_name"}
        self.assertEqual(set(names), {e["tid"] for e in events})
        if pid in names:
            self.assertEqual(names[pid], "harness-glibc")
        for tid, name in names.items():
            self.assertNotIn("tid", name)
        process = [e for e in self.doc["traceEvents"] if e["ph"] == "M" and e["name"] == "process_name"]
        self.assertEqual(len(process), 1)

    def test_threads(self):
        workers = [t for t in self.dump["threads"] if t["tid"] != self.dump["process"]["pid"]]
        tid = workers[0]["tid"]
        doc = self.export("--threads", str(tid))
        events = self.calls(doc)
        self.assertEqual({e["tid"] for e in events}, {tid})
        self.assertEqual(len(events), sum(1 for e in self.calls(self.doc) if e["tid"] == tid))
        proc = run("export", self.trace, "--format", "chrome", "-o", os.path.join(self.dir, "x.json"),
                   "--threads", "1")
        self.assertEqual(proc.returncode, 2)
        self.assertIn("no thread of --threads", proc.stderr)

    def test_time_range_in_seconds_and_ticks(self):
        starts = sorted(e["ts"] for e in self.calls(self.doc))
        lo, hi = starts[len(starts) // 4], starts[len(starts) // 2]
        doc = self.export("--from", f"{lo}us", "--to", f"{hi}us")
        part = self.calls(doc)
        # The bounds convert to ticks; a call at a boundary may fall either side of it.
        expected = sum(1 for t in starts if lo <= t < hi)
        self.assertLessEqual(abs(len(part) - expected), 2, (len(part), expected))
        self.assertTrue(all(lo - 0.002 <= e["ts"] < hi + 0.002 for e in part))
        self.assertEqual(doc["otherData"]["calls"], len(part))
        counter = [e for e in doc["traceEvents"] if e["ph"] == "C"]
        self.assertTrue(counter and all(lo - 0.002 <= e["ts"] < hi + 0.002 for e in counter))
        # Ticks of the profile's clock: from the first thread's first tick on, every call.
        first = min(t["first_tick"] for t in self.dump["threads"])
        self.assertEqual(len(self.calls(self.export("--from", f"{first}t"))), len(starts))
        before = len(self.calls(self.export("--to", f"{hi / 1e6}")))  # seconds
        self.assertLessEqual(abs(before - sum(1 for t in starts if t < hi)), 2)
        proc = run("export", self.trace, "--format", "chrome", "-o", os.path.join(self.dir, "y.json"),
                   "--from", "1000s")
        self.assertEqual(proc.returncode, 2)
        self.assertIn("nothing to export", proc.stderr)
        self.assertFalse(os.path.exists(os.path.join(self.dir, "y.json")))
        proc = run("export", self.trace, "--format", "chrome", "-o", os.path.join(self.dir, "z.json"),
                   "--from", "soon")
        self.assertEqual(proc.returncode, 2)
        self.assertIn("--from", proc.stderr)

    def test_size_per_call_is_as_documented(self):
        size = os.path.getsize(self.full)
        self.assertLessEqual(size / self.shapes["trace"]["calls"], MAX_BYTES_PER_CALL)

    def test_progress_on_long_exports(self):
        trace = os.path.join(self.dir, "long.asp")
        proc = run("record", "--trace", "-o", trace, "--", target("harness-glibc"), "1", "600000")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        out = os.path.join(self.dir, "long.json")
        # The main thread's few calls only: a small file, but every call of the trace is read.
        pid = json.loads(run("dump", "--json", trace).stdout)["process"]["pid"]
        proc = run("export", trace, "--format", "chrome", "-o", out, "--threads", str(pid))
        self.assertEqual(proc.returncode, 0, proc.stderr)
        steps = re.findall(r"^allocscope: (\d+)/20: (\d+) of (\d+) calls read$", proc.stderr, re.M)
        self.assertEqual([int(s) for s, _, _ in steps], list(range(1, 21)), proc.stderr)
        self.assertGreaterEqual(int(steps[-1][2]), 1_200_000)
        self.assertEqual(steps[-1][1], steps[-1][2])
        # A short export says nothing.
        proc = run("export", self.trace, "--format", "chrome", "-o", os.path.join(self.dir, "short.json"))
        self.assertEqual(proc.stderr, "")


if __name__ == "__main__":
    unittest.main()
