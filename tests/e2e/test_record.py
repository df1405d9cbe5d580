"""End-to-end tests of `allocscope record` and `allocscope dump` on glibc and musl programs."""
import os
import re
import stat
import subprocess
import unittest

from allocscope_e2e import (ALLOCATORS, CLI, E2ETestCase, bucket_calls, calls, op_bytes, target,
                            worker_threads)

ITERS = 2_000_000


def bucket_of(v):
    if v < 4:
        return v
    e = v.bit_length() - 1
    return 4 + (e - 2) * 4 + ((v >> (e - 2)) & 3)


def harness_sizes(iters):
    """The request sizes of one harness thread: 16 + (i & 0x3FF)."""
    full, rest = divmod(iters, 1024)
    counts = {}
    for k in range(1024):
        counts[16 + k] = full + (1 if k < rest else 0)
    return counts


class HarnessCounts(E2ETestCase):
    """`record -- harness 2`: every worker call counted, bucket by bucket."""

    def check_harness(self, program, allocator=None, threads=2):
        run = self.record([target(program), str(threads)], allocator=allocator,
                          out=f"{program}-{allocator}.asp")
        self.assertEqual(run.rc, 0, run.stderr)
        self.assertTrue(run.profiles, run.stderr)
        j = self.dump(run.profiles[0])
        self.assert_consistent(j)
        workers = worker_threads(j)
        self.assertEqual(len(workers), threads)
        self.assertEqual(calls(j, "malloc", workers), threads * ITERS)
        # The C library frees a few blocks of its own while a thread ends.
        self.assertGreaterEqual(calls(j, "free", workers), threads * ITERS)
        self.assertLessEqual(calls(j, "free", workers), threads * ITERS + 8 * threads)
        sizes = harness_sizes(ITERS)
        self.assertEqual(op_bytes(j, "malloc", workers),
                         threads * sum(s * n for s, n in sizes.items()))
        expected = {}
        for s, n in sizes.items():
            expected[bucket_of(s)] = expected.get(bucket_of(s), 0) + threads * n
        got = {}
        for b in j["buckets"]:
            if b.get("lo") is None:
                continue
            n = b["ops"].get("malloc", {}).get("calls", 0)
            if n and 16 <= b["lo"] and b["hi"] <= 1039 + 256:
                got[bucket_of(b["lo"])] = n
        self.assertEqual(got, expected)
        return j

    def test_glibc_malloc(self):
        j = self.check_harness("harness-glibc")
        self.assertEqual(j["process"]["libc"], "glibc")
        self.assertIn("libc.so", j["process"]["allocator"])

    def test_musl_malloc(self):
        j = self.check_harness("harness-musl")
        self.assertEqual(j["process"]["libc"], "musl")
        self.assertIn("musl", j["process"]["allocator"])

    def test_each_allocator(self):
        for allocator in ALLOCATORS[1:]:
            with self.subTest(allocator=allocator):
                j = self.check_harness("harness-glibc", allocator=allocator)
                self.assertIn(allocator if allocator != "tcmalloc" else "tcmalloc",
                              j["process"]["allocator"])

    def test_timing_every_call(self):
        run = self.record([target("harness-glibc"), "2", "100000"], sample=1)
        self.assertEqual(run.rc, 0, run.stderr)
        j = self.dump(run.profiles[0])
        workers = worker_threads(j)
        timed = sum(t["totals"]["malloc"]["timed"] for t in workers)
        self.assertEqual(timed, 200000)
        self.assertEqual(j["process"]["events_dropped"], 0)
        self.assertGreaterEqual(j["events"]["count"], 400000)

    def test_count_only(self):
        run = self.record([target("harness-musl"), "2", "100000"], sample=0)
        self.assertEqual(run.rc, 0, run.stderr)
        j = self.dump(run.profiles[0])
        self.assertEqual(calls(j, "malloc", worker_threads(j)), 200000)
        self.assertEqual(j["events"]["count"], 0)
        self.assertEqual(sum(t["timed"] for t in j["totals"].values()), 0)


# Expected calls of tests/targets/alloc_family.c (see the table at the top of that file).
FAMILY = {
    "glibc": {"malloc": 10, "calloc": 5, "realloc": 4, "reallocarray": 3, "posix_memalign": 5,
              "aligned_alloc": 3, "memalign": 3, "valloc": 2, "pvalloc": 2,
              "malloc_usable_size": 33, "free": 32},
    "musl": {"malloc": 10, "calloc": 5, "realloc": 4, "reallocarray": 3, "posix_memalign": 5,
             "aligned_alloc": 3, "memalign": 3, "valloc": 2, "malloc_usable_size": 31,
             "free": 30},
}


def pulls_in_libstdcxx(library):
    """True if loading `library` loads libstdc++ (whose start-up makes one malloc)."""
    if "libc.so" in library or "musl" in library:
        return False
    out = subprocess.run(["ldd", library], capture_output=True, text=True).stdout
    return "libstdc++" in out


class AllocFamily(E2ETestCase):
    """Every interposed entry point forwards correctly and is counted exactly once."""

    def check_family(self, program, libc, allocator=None):
        run = self.record([target(program)], allocator=allocator, out=f"{program}-{allocator}.asp")
        self.assertEqual(run.rc, 0, run.stdout + run.stderr)
        self.assertIn("ok", run.stdout)
        j = self.dump(run.profiles[0])
        self.assert_consistent(j)
        expected = dict(FAMILY[libc])
        if "returned a block" in run.stderr:
            expected["free"] += 1
        if pulls_in_libstdcxx(j["process"]["allocator"]):
            expected["malloc"] += 1  # libstdc++'s emergency exception pool, allocated at load
        # The program is C: C++ operators come from the allocator's own start-up (tcmalloc
        # makes two `new` calls), not from the family under test.
        got = {op: t["calls"] for op, t in j["totals"].items()
               if t["calls"] and op not in ("new", "new[]", "delete", "delete[]")}
        self.assertEqual(got, expected)
        failed = sum(t["failed"] for t in j["totals"].values())
        self.assertEqual(failed, 3)  # malloc(SIZE_MAX/2), reallocarray overflow, bad alignment

    def test_glibc(self):
        self.check_family("alloc_family-glibc", "glibc")

    def test_musl_aligned_allocation_works(self):
        self.check_family("alloc_family-musl", "musl")

    def test_each_allocator(self):
        for allocator in ALLOCATORS[1:]:
            with self.subTest(allocator=allocator):
                self.check_family("alloc_family-glibc", "glibc", allocator=allocator)

    def test_cxx_new_delete_and_exceptions(self):
        run = self.record([target("cxx_newdelete-glibc")])
        self.assertEqual(run.rc, 0, run.stderr)
        self.assertIn("ok", run.stdout)
        j = self.dump(run.profiles[0])
        # The operators count as themselves (libstdc++'s new calls malloc, its aligned new
        # aligned_alloc: those inner calls are not counted again).  new: 5 scalar, 2 aligned, 11
        # vector, 2 string, 1 exception message, 1 thread state, 4 in the thread.
        self.assertGreaterEqual(calls(j, "new"), 26)
        self.assertEqual(calls(j, "new[]"), 3)
        self.assertEqual(calls(j, "delete[]"), 3)
        self.assertEqual(calls(j, "aligned_alloc"), 0)


class ExitStatus(E2ETestCase):
    def test_statuses_preserved(self):
        for libc in ("glibc", "musl"):
            prog = target(f"exit_status-{libc}")
            for args, rc in ((["exit", "7"], 7), (["_exit", "5"], 5), (["abort"], 134),
                             (["segv"], 139), (["exit", "0"], 0)):
                with self.subTest(libc=libc, args=args):
                    run = self.record([prog] + args, out=f"{libc}-{'-'.join(args)}.asp")
                    self.assertEqual(run.rc, rc, run.stderr)
                    j = self.dump(run.profiles[0])
                    self.assertEqual(j["process"]["libc"], libc)
                    if args[0] in ("exit", "_exit"):
                        # exit and _exit flush everything: the profile is whole.
                        self.assertTrue(j["process"]["complete"])
                        self.assertEqual(calls(j, "malloc"), 4)
                        self.assertEqual(calls(j, "free"), 2)

    def test_static_binary_is_a_clear_error(self):
        run = self.record([target("static_hello-glibc")])
        self.assertEqual(run.rc, 2)
        self.assertIn("static", run.stderr)
        self.assertEqual(run.profiles, [])

    def test_missing_allocator_is_a_clear_error(self):
        run = self.record([target("alloc_family-glibc")], allocator="/nonexistent/libnone.so")
        self.assertEqual(run.rc, 2)
        self.assertIn("libnone", run.stderr)

    def test_never_overwrites(self):
        path = os.path.join(self.dir, "run.asp")
        with open(path, "w") as f:
            f.write("precious")
        run = self.record([target("alloc_family-glibc")])
        self.assertEqual(run.rc, 2)
        with open(path) as f:
            self.assertEqual(f.read(), "precious")


class ProcessTrees(E2ETestCase):
    def test_fork_gives_two_files(self):
        for libc in ("glibc", "musl"):
            with self.subTest(libc=libc):
                run = self.record([target(f"forker-{libc}"), "3"], out=f"fork-{libc}.asp")
                self.assertEqual(run.rc, 3, run.stderr)
                self.assertEqual(len(run.profiles), 2, run.profiles)
                parent, child = (self.dump(p) for p in run.profiles)
                self.assertEqual(child["process"]["ppid"], parent["process"]["pid"])
                self.assertEqual((calls(parent, "malloc"), calls(parent, "free")), (40, 40))
                # A fork child's profile holds its own calls only.
                self.assertEqual((calls(child, "malloc"), calls(child, "free")), (20, 20))
                self.assertEqual(bucket_calls(child, "malloc", 2000, 2047), 20)

    def test_glibc_shell_starts_musl_program(self):
        run = self.record(["/bin/sh", "-c", target("alloc_family-musl")])
        self.assertEqual(run.rc, 0, run.stderr)
        libcs = sorted(self.dump(p)["process"]["libc"] for p in run.profiles)
        self.assertIn("musl", libcs)
        self.assertIn("glibc", libcs)

    def test_musl_program_starts_glibc_program(self):
        run = self.record([target("run_child-musl"), target("alloc_family-glibc")])
        self.assertEqual(run.rc, 0, run.stderr)
        by_libc = {}
        for p in run.profiles:
            j = self.dump(p)
            by_libc.setdefault(j["process"]["libc"], []).append(j)
        self.assertIn("glibc", by_libc)
        self.assertIn("musl", by_libc)
        glibc = [j for j in by_libc["glibc"] if calls(j, "pvalloc") == 2]
        self.assertEqual(len(glibc), 1)
        self.assertEqual(calls(glibc[0], "malloc"), 10)

    def test_many_short_threads(self):
        for libc in ("glibc", "musl"):
            with self.subTest(libc=libc):
                run = self.record([target(f"threads_short-{libc}"), "1000"], out=f"t-{libc}.asp")
                self.assertEqual(run.rc, 0, run.stderr)
                j = self.dump(run.profiles[0])
                self.assert_consistent(j)
                for size in (16, 64, 256, 1024):
                    self.assertEqual(bucket_calls(j, "malloc", size, size), 1000, size)
                self.assertGreaterEqual(j["process"]["threads_seen"], 1000)
                self.assertLessEqual(j["process"]["max_live_threads"], 18)

    def test_a_wrapper_that_execs_the_program_names_the_programs_profile(self):
        # A wrapper (a shell script, env, a version manager's shim) runs a command, then execs the
        # program: the root profile is the wrapper's, and the program's is written beside it.
        # record names the profile with the most allocator calls and how to read it, and the exec
        # chain's own images do not complain that the root file exists.
        for libc in ("glibc", "musl"):
            with self.subTest(libc=libc):
                prog = target(f"threads_short-{libc}")
                out = f"wrapped-{libc}.asp"
                run = self.record(["/bin/sh", "-c", f"/bin/true; exec {prog} 200"], out=out)
                self.assertEqual(run.rc, 0, run.stderr)
                self.assertNotIn("exists; writing the profile", run.stderr)
                by_program = {os.path.basename(self.dump(p)["process"]["exe"]): p for p in run.profiles}
                self.assertIn(os.path.basename(prog), by_program, run.profiles)
                busiest = by_program[os.path.basename(prog)]
                root = os.path.join(self.dir, out)
                self.assertNotEqual(busiest, root)
                line = run.stderr.strip().splitlines()[-1]
                self.assertIn(f"the most allocator calls are in {busiest} ({os.path.basename(prog)}, ", line)
                self.assertTrue(line.endswith(f"allocscope report {busiest}"), line)
                shell = os.path.basename(self.dump(root)["process"]["exe"])
                self.assertIn(f"{root} is {shell}'s", line)
        # A single process names no other profile.
        run = self.record([target("threads_short-glibc"), "10"], out="alone.asp")
        self.assertEqual(run.rc, 0, run.stderr)
        self.assertNotIn("the most allocator calls", run.stderr)
        self.assertEqual(run.stderr.strip().splitlines()[-1],
                         f"allocscope: profile written to {os.path.join(self.dir, 'alone.asp')}")

    def test_previous_ld_preload_is_kept(self):
        run = self.record(["/bin/sh", "-c", 'echo "LD_PRELOAD=$LD_PRELOAD"'],
                          env={"LD_PRELOAD": "libxxhash.so.0"})
        self.assertEqual(run.rc, 0, run.stderr)
        m = re.search(r"LD_PRELOAD=(\S+)", run.stdout)
        self.assertIsNotNone(m)
        parts = m.group(1).split(":")
        self.assertTrue(parts[0].endswith("liballocscope.so"))
        self.assertIn("libxxhash.so.0", parts)


class DamagedProfiles(E2ETestCase):
    def test_bit_flip_names_file_and_offset(self):
        run = self.record([target("alloc_family-glibc")])
        path = run.profiles[0]
        data = bytearray(open(path, "rb").read())
        data[len(data) // 2] ^= 0x40
        bad = os.path.join(self.dir, "bad.asp")
        open(bad, "wb").write(bytes(data))
        proc = subprocess.run([CLI, "dump", "--json", bad], capture_output=True, text=True)
        self.assertEqual(proc.returncode, 2)
        self.assertIn("bad.asp", proc.stderr)
        self.assertRegex(proc.stderr, r"offset \d+")

    def test_cut_short_reads_up_to_last_whole_chunk(self):
        run = self.record([target("alloc_family-glibc")])
        path = run.profiles[0]
        data = open(path, "rb").read()
        cut = os.path.join(self.dir, "cut.asp")
        open(cut, "wb").write(data[:-10])
        j = self.dump(cut)
        self.assertTrue(j["truncated"])

    def test_foreign_file(self):
        proc = subprocess.run([CLI, "dump", CLI], capture_output=True, text=True)
        self.assertEqual(proc.returncode, 2)
        self.assertIn("allocscope", proc.stderr)


if __name__ == "__main__":
    unittest.main()
