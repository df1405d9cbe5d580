"""End-to-end tests of trace mode: shapes, call sites and exports of programs whose allocations
are known in advance (tests/targets/shapes.c), on glibc and on musl.

Skipped until `allocscope record --help` offers --trace (and --stacks for the call-site tests).
"""
import gzip
import json
import os
import platform
import re
import shutil
import subprocess
import unittest

from allocscope_e2e import CLI, E2ETestCase, target

SOURCE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "targets", "shapes.c")
PROTO_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
LIBCS = ["glibc", "musl"]


def record_help():
    proc = subprocess.run([CLI, "record", "--help"], capture_output=True, text=True)
    return proc.stdout


def source_line(text):
    with open(SOURCE) as f:
        for n, line in enumerate(f, 1):
            if text in line:
                return n
    raise AssertionError(f"{text!r} not in {SOURCE}")


def covering(rows, size):
    """The rows whose size range holds `size`."""
    return [r for r in rows if r["lo"] <= size and (r["hi"] is None or size <= r["hi"])]


class TraceTestCase(E2ETestCase):
    def setUp(self):
        help_text = record_help()
        if "--trace" not in help_text:
            self.skipTest("allocscope record has no --trace yet")
        self.has_stacks = "--stacks" in help_text
        super().setUp()

    def record_trace(self, libc, mode, stacks=False):
        path = os.path.join(self.dir, f"{mode}-{libc}.asp")
        cmd = [CLI, "record", "--trace", "--sample", "1"] + (["--stacks=1"] if stacks else []) + ["-o", path, "--",
                                                                                 target(f"shapes-{libc}"), mode]
        proc = subprocess.run(cmd, capture_output=True, text=True, cwd=self.dir, timeout=300)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertIn(f"shapes {mode} ok", proc.stdout)
        return path

    def run_json(self, *args):
        proc = subprocess.run([CLI, *args, "--json"], capture_output=True, text=True)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        return json.loads(proc.stdout)

    def shapes(self, path):
        j = self.run_json("shapes", path)
        self.assertTrue(j["has_trace"])
        self.assertTrue(j["trace"]["complete"])
        self.assertEqual(j["trace"]["missing_records"], 0)
        return j

    def lifetime_row(self, j, size):
        rows = covering(j["trace"]["lifetimes"], size)
        self.assertEqual(len(rows), 1, f"one class holds {size}")
        return rows[0]


class Shapes(TraceTestCase):
    def test_producer_consumer_frees_cross_thread(self):
        for libc in LIBCS:
            with self.subTest(libc=libc):
                j = self.shapes(self.record_trace(libc, "pc"))
                row = self.lifetime_row(j, 3000)
                self.assertEqual(row["blocks"], 1000)
                self.assertEqual(row["freed"], 1000)
                self.assertEqual(row["cross_thread"], 1000)
                self.assertEqual(row["same_thread"], 0)
                self.assertEqual(row["leaked"], 0)
                shapes = covering(j["shapes"], 3000)
                self.assertEqual(sum(s["blocks"] for s in shapes if s["cross_thread"]), 1000)
                self.assertEqual(sum(s["blocks"] for s in shapes if not s["cross_thread"]), 0)
                self.assertEqual(sum(s["calls"] for s in shapes), 2000)
                self.assertGreaterEqual(j["cross_thread_frees"], 1000)
                # The ring holds 16 blocks: at most 17 are live (one being produced).
                self.assertGreaterEqual(j["peak_live_bytes"], 3000)
                self.assertEqual(j["trace"]["unmatched_frees"], 0)

    def test_realloc_growth_chains(self):
        for libc in LIBCS:
            with self.subTest(libc=libc):
                j = self.shapes(self.record_trace(libc, "realloc"))
                chains = j["trace"]["realloc_chains"]
                self.assertEqual(chains["chains"], 10)
                self.assertEqual(chains["reallocs"], 120)
                self.assertEqual(chains["in_place"] + chains["moved"], 120)
                self.assertEqual(chains["grew"], 120)
                self.assertEqual(chains["max_length"], 12)
                self.assertEqual(chains["by_length"], [{"length": 12, "chains": 10}])
                self.assertAlmostEqual(chains["mean_growth"], 4096.0, places=6)
                self.assertAlmostEqual(chains["mean_step_growth"], 2.0, places=9)

    def test_lifetimes_and_leaks(self):
        for libc in LIBCS:
            with self.subTest(libc=libc):
                j = self.shapes(self.record_trace(libc, "life"))
                quick = self.lifetime_row(j, 5000)
                self.assertEqual((quick["blocks"], quick["freed"], quick["same_thread"]), (100, 100, 100))
                # Freed right after its malloc: microseconds, unless the process lost its CPU in
                # between (a loaded machine once held one of them 1 ms or more: its lifetime was).
                self.assertGreaterEqual(quick["bands"]["<1us"] + quick["bands"]["<10us"], 90)
                self.assertLessEqual(quick["bands"]["<1s"] + quick["bands"][">=1s"], 10)
                held = self.lifetime_row(j, 7000)
                self.assertEqual(held["blocks"], 20)
                self.assertEqual(held["bands"]["<1s"], 20)  # 2 ms each
                self.assertGreaterEqual(held["p50_ns"], 1_900_000)
                leaked = self.lifetime_row(j, 9000)
                self.assertEqual((leaked["blocks"], leaked["leaked"], leaked["leaked_bytes"]), (7, 7, 63000))
                self.assertEqual(leaked["bands"]["leaked"], 7)
                self.assertGreaterEqual(j["leaked_bytes"], 63000)
                leak_shapes = [s for s in covering(j["shapes"], 9000) if s["lifetime"] == "leaked"]
                self.assertEqual(sum(s["blocks"] for s in leak_shapes), 7)
                # Peak: 63000 leaked bytes at the end, plus whatever the C library keeps.
                self.assertGreaterEqual(j["peak_live_bytes"], 63000)
                self.assertLess(j["peak_live_bytes"], 63000 + 16384)

    def test_text_and_diff(self):
        a = self.record_trace("glibc", "life")
        b = self.record_trace("musl", "life")
        proc = subprocess.run([CLI, "shapes", a, b], capture_output=True, text=True)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertIn("Lifetimes by size class", proc.stdout)
        self.assertIn("by shape:", proc.stdout)
        j = self.run_json("shapes", a, b)
        shares = sum(s["share"] for s in j["gap"]["shapes"])
        self.assertAlmostEqual(shares, 1.0, places=6)


class CallSites(TraceTestCase):
    def setUp(self):
        super().setUp()
        if not self.has_stacks:
            self.skipTest("allocscope record has no --stacks yet")

    def sites(self, path):
        j = self.run_json("callsites", path, "--top", "0")
        by_site = {}
        for row in j["callsites"]:
            entry = by_site.setdefault(row["site"], {"ops": {}, "locations": set(), "rows": []})
            for op, n in row["ops"].items():
                entry["ops"][op] = entry["ops"].get(op, 0) + n
            entry["locations"].add(row["location"])
            entry["rows"].append(row)
        return j, by_site

    def test_named_functions_are_the_call_sites(self):
        for libc in LIBCS:
            with self.subTest(libc=libc):
                j, sites = self.sites(self.record_trace(libc, "sites", stacks=True))
                self.assertEqual(sites["alpha_alloc"]["ops"], {"malloc": 30})
                self.assertEqual(sites["beta_alloc"]["ops"], {"malloc": 20})
                self.assertEqual(sites["gamma_alloc"]["ops"], {"calloc": 10})
                self.assertEqual(sites["release_all"]["ops"], {"free": 60})
                self.assertEqual(sites["alpha_alloc"]["locations"],
                                 {f"shapes.c:{source_line('void *alpha_alloc(void)')}"})
                self.assertEqual(sites["release_all"]["locations"],
                                 {f"shapes.c:{source_line('free(blocks[i])')}"})
                # Each site's calls fall in the class of its size, frees in the class of the block.
                for name, size in (("alpha_alloc", 1111), ("beta_alloc", 2222), ("gamma_alloc", 3333)):
                    rows = sites[name]["rows"]
                    self.assertEqual(len(rows), 1, name)
                    self.assertTrue(rows[0]["lo"] <= size <= rows[0]["hi"], name)
                    self.assertEqual(rows[0]["chain"][:2], [name, "main"])
                frees = {(r["lo"], r["hi"]): r["ops"]["free"] for r in sites["release_all"]["rows"]}
                self.assertEqual(sorted(frees.values()), [10, 20, 30])
                self.assertEqual(j["stackless_calls"], 0)

    def test_every_stack_is_kept_past_the_table_size(self):
        # 16384 distinct stacks in one thread, four times the shim's per-thread stack table: the
        # table is emptied when it fills, so that every call still gets its stack.
        for libc in LIBCS:
            with self.subTest(libc=libc):
                j, sites = self.sites(self.record_trace(libc, "stacks", stacks=True))
                self.assertEqual(j["stackless_calls"], 0)
                self.assertEqual(sites["leaf_alloc"]["ops"], {"malloc": 8192, "free": 8192})
                self.assertEqual(j["stacks"], 16384)

    def test_hostile_frame_pointers_end_the_walk(self):
        # Allocator calls made with %rbp at -8, -16, 8, 0 and above the stack (x86-64): the
        # frame-pointer walk (musl; glibc without libunwind) stops at the caller, never faults.
        if platform.machine() != "x86_64":
            self.skipTest("the badfp mode sets %rbp: x86-64 only")
        for libc in LIBCS:
            with self.subTest(libc=libc):
                j, sites = self.sites(self.record_trace(libc, "badfp", stacks=True))
                self.assertEqual(j["stackless_calls"], 0)
                self.assertEqual(sites["call_malloc"]["ops"], {"malloc": 100})
                self.assertEqual(sites["call_free"]["ops"], {"free": 100})

    def test_exports(self):
        path = self.record_trace("glibc", "sites", stacks=True)
        folded = os.path.join(self.dir, "out.folded")
        self.assertEqual(subprocess.run([CLI, "export", path, "--format", "folded", "--weight", "calls",
                                         "-o", folded]).returncode, 0)
        counts = {}
        with open(folded) as f:
            for line in f:
                stack, n = line.rstrip("\n").rsplit(" ", 1)
                frames = stack.split(";")
                self.assertTrue(all(frames), line)
                leaf = ";".join(frames[-2:])
                counts[leaf] = counts.get(leaf, 0) + int(n)
                if leaf.endswith(("_alloc;malloc", "_alloc;calloc", "release_all;free")):
                    self.assertIn("main", frames, line)  # outermost first: main above the site
                    self.assertLess(frames.index("main"), len(frames) - 2, line)
        self.assertEqual(counts.get("alpha_alloc;malloc"), 30)
        self.assertEqual(counts.get("beta_alloc;malloc"), 20)
        self.assertEqual(counts.get("gamma_alloc;calloc"), 10)
        self.assertEqual(counts.get("release_all;free"), 60)

        pprof = os.path.join(self.dir, "out.pb.gz")
        self.assertEqual(subprocess.run([CLI, "export", path, "--format", "pprof", "-o", pprof]).returncode, 0)
        with gzip.open(pprof, "rb") as f:
            raw = f.read()
        self.assertIn(b"alpha_alloc", raw)
        if shutil.which("protoc"):
            proc = subprocess.run(["protoc", f"--proto_path={PROTO_DIR}", "--decode=perftools.profiles.Profile",
                                   "profile.proto"], input=raw, capture_output=True)
            self.assertEqual(proc.returncode, 0, proc.stderr)
            text = proc.stdout.decode()
            self.assertIn('string_table: "alpha_alloc"', text)
            self.assertIn('string_table: "nanoseconds"', text)

        chrome = os.path.join(self.dir, "out.json")
        self.assertEqual(subprocess.run([CLI, "export", path, "--format", "chrome", "-o", chrome]).returncode, 0)
        with open(chrome) as f:
            trace = json.load(f)
        events = trace["traceEvents"]
        calls = [e for e in events if e["ph"] == "X"]
        total = self.run_json("shapes", path)["trace"]["calls"]
        self.assertEqual(len(calls), total)
        self.assertEqual(sum(1 for e in calls if e["args"].get("site", "").startswith("alpha_alloc")), 30)
        counter = [e["args"]["threads"] for e in events if e["ph"] == "C"]
        self.assertTrue(counter and max(counter) >= 1 and counter[-1] == 0)
        self.assertTrue(any(e["ph"] == "M" and e["name"] == "thread_name" for e in events))


if __name__ == "__main__":
    unittest.main()
