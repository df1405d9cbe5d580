"""The C++ operators: new, new[], delete and delete[] (every nothrow, sized and align_val_t
variant) are counted as operations of their own under every allocator, once per call, and what the
shim cannot see is said in the report."""
import json
import os
import subprocess
import unittest

from allocscope_e2e import ALLOCATORS, BUILD, CLI, E2ETestCase, target, worker_threads

THREADS = 3
ITERS = 640  # a multiple of 64: every size 8..512 gets ITERS/64 iterations

# Per thread, per iteration (tests/targets/cxx_ops.cpp).
PER_ITER = {"new": 4, "new[]": 2, "delete": 4, "delete[]": 2}
CXX_OPS = tuple(PER_ITER)


def bucket_of(v):
    if v < 4:
        return v
    e = v.bit_length() - 1
    return 4 + (e - 2) * 4 + ((v >> (e - 2)) & 3)


class CxxOperators(E2ETestCase):
    def report_json(self, path):
        proc = subprocess.run([CLI, "report", "--json", path], capture_output=True, text=True)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        return json.loads(proc.stdout)

    def check_counts(self, allocator, extra_args=()):
        run = self.record([target("cxx_ops-glibc"), str(THREADS), str(ITERS), *extra_args],
                          allocator=allocator, sample=1, out=f"cxx-{allocator}.asp")
        self.assertEqual(run.rc, 0, run.stderr)
        self.assertIn("ok", run.stdout)
        j = self.dump(run.profiles[0])
        self.assertTrue(j["calibration"]["cxx_operators"])
        workers = worker_threads(j)
        self.assertEqual(len(workers), THREADS)
        for t in workers:
            got = {op: v["calls"] for op, v in t["totals"].items() if v["calls"] and op in CXX_OPS}
            self.assertEqual(got, {op: n * ITERS for op, n in PER_ITER.items()}, allocator)
            # One user call is one count: libstdc++'s new calls malloc, its delete free, and those
            # are not counted again (the C library frees a couple of blocks as a thread ends).
            self.assertNotIn("malloc", t["totals"])
            self.assertLessEqual(t["totals"].get("free", {}).get("calls", 0), 4)
        # Per size: each size s = 8..512 (step 8) gets ITERS/64 iterations per thread.  Sizes of
        # 24 B and more: the runtime or allocator may make a few small calls of its own.
        expected = {}
        for s in range(24, 513, 8):
            for op, n in PER_ITER.items():
                if op in ("new", "new[]"):
                    key = (op, bucket_of(s))
                    expected[key] = expected.get(key, 0) + n * THREADS * ITERS // 64
        if "throw" in extra_args:
            expected[("new", bucket_of(24))] += 1  # the main thread's new(24) after the throw
        got = {}
        for b in j["buckets"]:
            if b.get("lo") is None or not 24 <= b["lo"] <= 512:
                continue
            for op in ("new", "new[]"):
                n = b["ops"].get(op, {}).get("calls", 0)
                if n:
                    got[(op, bucket_of(b["lo"]))] = n
        self.assertEqual(got, expected, allocator)
        # The report counts the same calls: its classes add up to the profile's totals.
        r = self.report_json(run.profiles[0])
        for op in CXX_OPS + ("malloc", "free"):
            in_classes = sum(c["ops"].get(op, {}).get("calls", 0) for c in r["classes"])
            self.assertEqual(in_classes, j["totals"].get(op, {}).get("calls", 0), (allocator, op))
        return j

    def test_exact_counts_under_every_allocator(self):
        for allocator in ALLOCATORS:
            with self.subTest(allocator=allocator):
                self.check_counts(allocator)

    def test_a_throwing_new_that_throws_is_one_failed_call(self):
        # glibc's and jemalloc's operator new throw std::bad_alloc for SIZE_MAX/2 bytes (mimalloc
        # and scudo abort instead): it unwinds through the shim, which observes the thread again.
        for allocator in ("glibc", "jemalloc"):
            with self.subTest(allocator=allocator):
                j = self.check_counts(allocator, ["throw"])
                main = [t for t in j["threads"] if t["tid"] == j["process"]["pid"]][0]
                self.assertEqual(main["totals"]["new"]["calls"], 3)  # 2 failed, then new(24)
                self.assertEqual(main["totals"]["new"]["failed"], 2)
                self.assertEqual(main["totals"]["delete"]["calls"], 1)

    def test_libstdcxx_operators_pass_through_the_shim_once(self):
        """Where the next operators are libstdc++'s, the plain, nothrow and sized ones call the real
        malloc and free themselves: no second pass through the shim (a reentrant call) for the
        malloc or free inside libstdc++'s operator, nor for the ::operator new or delete that its
        nothrow, sized and array forms call.  Per iteration cxx_ops makes 8 such calls (23 reentrant
        calls before) and 4 aligned ones, which still go to libstdc++'s (at most 4 nested calls
        each).  Under glibc's malloc and under a preloaded allocator without operators of its own."""
        mutex = os.path.join(BUILD, "tests", "allocators", "libmutex_alloc.so")
        for allocator in ("glibc", mutex):
            with self.subTest(allocator=os.path.basename(allocator)):
                run = self.record([target("cxx_ops-glibc"), str(THREADS), str(ITERS)], allocator=allocator,
                                  out=f"once-{os.path.basename(allocator)}.asp")
                self.assertEqual(run.rc, 0, run.stderr)
                workers = worker_threads(self.dump(run.profiles[0]))
                self.assertEqual(len(workers), THREADS)
                for t in workers:
                    self.assertEqual(t["totals"]["new"]["calls"], 4 * ITERS)
                    self.assertLessEqual(t["reentrant_calls"], 4 * 4 * ITERS, t)

    def test_a_programs_own_operator_new_still_serves_libstdcxx(self):
        """cxx_own_new replaces the plain operator new and delete only; libstdc++'s new[], nothrow
        new[] and delete[] call them.  The shim's operators must then go to libstdc++'s, not to the
        real malloc and free: the program's own ran 30 times each, as without the shim."""
        run = self.record([target("cxx_own_new-glibc")], out="own-new.asp")
        self.assertEqual(run.rc, 0, run.stderr)
        self.assertIn("own_new=30 own_delete=30", run.stdout)
        self.assertIn("operator new is defined by", run.stderr)

    def test_c_program_without_a_cxx_runtime(self):
        for libc in ("glibc", "musl"):
            with self.subTest(libc=libc):
                run = self.record([target(f"c_new-{libc}")], out=f"c-new-{libc}.asp")
                self.assertEqual(run.rc, 0, run.stdout + run.stderr)
                j = self.dump(run.profiles[0])
                totals = {op: v["calls"] for op, v in j["totals"].items()}
                self.assertEqual(totals.get("new"), 100)
                self.assertEqual(totals.get("delete"), 100)
                # The fallback's malloc and free are the same calls: not counted again.
                self.assertEqual(totals.get("malloc", 0), 0)
                self.assertEqual(totals.get("free", 0), 0)

    def test_failing_new_without_a_runtime_never_returns_null(self):
        for libc in ("glibc", "musl"):
            with self.subTest(libc=libc):
                run = self.record([target(f"c_new-{libc}"), "fail"], out=f"c-fail-{libc}.asp")
                self.assertEqual(run.rc, 134, run.stdout + run.stderr)  # SIGABRT, not exit 4
                self.assertIn("no C++ runtime is loaded to throw std::bad_alloc", run.stderr)

    def test_calls_past_the_shim_are_a_caveat(self):
        for libc in ("glibc", "musl"):
            with self.subTest(libc=libc):
                run = self.record([target(f"own_malloc-{libc}")], out=f"own-{libc}.asp")
                self.assertEqual(run.rc, 0, run.stderr)
                self.assertIn("malloc is defined by", run.stderr)
                r = self.report_json(run.profiles[0])
                caveats = " ".join(r["model"]["caveats"])
                self.assertIn("malloc is defined by", caveats)
                self.assertIn("own_malloc", caveats)
                self.assertIn("not recorded", caveats)
                proc = subprocess.run([CLI, "report", run.profiles[0]], capture_output=True,
                                      text=True)
                self.assertIn("malloc is defined by", proc.stdout)

    def test_an_imported_malloc_whose_address_is_taken_is_not_a_caveat(self):
        """malloc_address is not position-independent and takes the addresses of malloc and free:
        dlsym finds their PLT stubs in the executable, which only imports them.  Its calls reach
        the shim: they are counted, and nothing is said of calls past it."""
        for libc in ("glibc", "musl"):
            with self.subTest(libc=libc):
                run = self.record([target(f"malloc_address-{libc}")], out=f"address-{libc}.asp")
                self.assertEqual(run.rc, 0, run.stdout + run.stderr)
                self.assertIn("ok", run.stdout)
                self.assertNotIn("ahead of the shim", run.stderr)
                j = self.dump(run.profiles[0])
                totals = {op: v["calls"] for op, v in j["totals"].items()}
                self.assertEqual(totals.get("malloc"), 2000)
                self.assertEqual(totals.get("free"), 2000)
                r = self.report_json(run.profiles[0])
                self.assertFalse([c for c in r["model"]["caveats"] if "not recorded" in c])

    def test_no_caveat_when_the_shim_comes_first(self):
        run = self.record([target("cxx_ops-glibc"), "1", "64"], out="first.asp")
        self.assertEqual(run.rc, 0, run.stderr)
        r = self.report_json(run.profiles[0])
        self.assertFalse([c for c in r["model"]["caveats"] if "not recorded" in c])


if __name__ == "__main__":
    unittest.main()
