"""End-to-end tests of the lock test `record` runs after a program of two threads or more
(docs/analysis.md, "The lock test"; analyzer/run/lock_test.cpp, lockprobe/lockprobe.c).

Each test records ONE run and checks what its report says: the lock test must find what the
allocator is — one lock for every allocation, a lock per size class, no shared lock — or say it is
inconclusive; it never finds one lock in an allocator without one, nor none in one with one. Some
runs have a CPU hog beside them, which leaves the test fewer holds that tell something.
"""
import os
import subprocess
import json

from allocscope_e2e import BUILD, CLI, E2ETestCase, target
from test_contention_verdict import CpuHog, bench_program as bench, test_allocator


ONE_LOCK = ("one_lock_for_all", "inconclusive")
NO_LOCK = ("no_shared_lock", "no_lock_across_sizes", "inconclusive")


# glibc's malloc behind a library of its own: the program's allocator is then that library.
FORWARDING = """#include <stddef.h>
#include <stdlib.h>
extern void *__libc_malloc(size_t), *__libc_calloc(size_t, size_t), *__libc_realloc(void *, size_t);
extern void __libc_free(void *);
void *malloc(size_t n) { return __libc_malloc(n); }
void free(void *p) { __libc_free(p); }
void *calloc(size_t n, size_t s) { return __libc_calloc(n, s); }
void *realloc(void *p, size_t n) { return __libc_realloc(p, n); }
"""


class LockTest(E2ETestCase):
    def report(self, argv, allocator=None, options=(), name="run.asp"):
        run = self.record(argv, allocator=allocator, out=name, options=options)
        self.assertEqual(run.rc, 0, run.stderr)
        self.assertNotIn("allocscope-lockprobe", run.stdout)
        self.assertNotIn("lockprobe", run.stderr)
        proc = subprocess.run([CLI, "report", "--json", run.profiles[0]], capture_output=True, text=True, timeout=300)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        c = json.loads(proc.stdout)["contention"]
        return c, c["lock_test"]

    def assert_counts(self, t):
        for key in ("apart", "same_size", "between_calls"):
            h = t[key]
            self.assertLessEqual(h["stopped"] + h["stopped_later"], h["told"], t)

    def assert_one_lock(self, c, t):
        self.assertIn(t["result"], ONE_LOCK, t)
        self.assert_counts(t)
        self.assertIn(c["verdict"], ("global_lock", "unsure"), c["reason"])
        if t["result"] == "one_lock_for_all":
            self.assertGreaterEqual(t["apart"]["told"], 20, t)
            self.assertGreater(t["apart"]["stopped"], 0.2 * t["apart"]["told"], t)
            # The run's threads allocated side by side (runs of 0.2 s or more): the verdict follows the test.
            self.assertEqual(c["verdict"], "global_lock", c["reason"])
            self.assertTrue(c["reason"].startswith("the lock test"), c["reason"])

    def assert_no_lock(self, c, t, kinds=NO_LOCK):
        self.assertIn(t["result"], kinds, t)
        self.assert_counts(t)
        self.assertNotEqual(c["verdict"], "global_lock", c["reason"])
        if t["result"] != "inconclusive":
            self.assertLess(t["apart"]["stopped"], 0.2 * t["apart"]["told"], t)
            self.assertIn(c["verdict"], ("none", "partial"), c["reason"])

    def test_a_global_mutex(self):
        c, t = self.report([bench("harness-glibc"), "2", "300000"], allocator=test_allocator("mutex"))
        self.assert_one_lock(c, t)
        self.assertIn("libmutex_alloc.so", t["detail"])
        self.assertIn("allocscope-lockprobe-glibc", t["detail"])

    def test_musl_is_tested_with_musl(self):
        c, t = self.report([bench("harness-musl"), "2", "300000"])
        self.assert_one_lock(c, t)
        self.assertIn("allocscope-lockprobe-musl", t["detail"])
        self.assertIn("the C library's malloc", t["detail"])

    def test_a_global_spin_lock_beside_a_cpu_hog(self):
        with CpuHog():
            c, t = self.report([bench("harness-glibc"), "2", "2000000"],
                               allocator=test_allocator("spinlock"))
        self.assert_one_lock(c, t)

    def test_glibc(self):
        c, t = self.report([bench("harness-glibc"), "2", "30000000"])
        self.assert_no_lock(c, t)
        self.assertIn("the C library's malloc", t["detail"])

    def test_glibc_beside_a_cpu_hog(self):
        with CpuHog():
            c, t = self.report([bench("harness-glibc"), "4", "10000000"])
        self.assert_no_lock(c, t)

    def test_a_lock_per_size_class(self):
        c, t = self.report([bench("harness-glibc"), "2", "4000000"], allocator=test_allocator("classlock"))
        self.assert_no_lock(c, t, ("lock_per_class", "no_lock_across_sizes", "inconclusive"))

    def test_turns_at_a_shared_word_are_no_lock(self):
        # Every call adds to one counter atomically: calls take turns at its cache line, and a
        # thread held anywhere holds nothing.
        c, t = self.report([bench("harness-glibc"), "2", "4000000"], allocator=test_allocator("counter"))
        self.assert_no_lock(c, t)

    def test_one_thread_is_not_tested(self):
        # Only one thread ever calls the allocator: no test, and no time spent on one.
        c, t = self.report([target("alloc_family-glibc")])
        self.assertEqual(c["verdict"], "single_thread")
        self.assertEqual(t["result"], "not_run", t)
        self.assertIn("fewer than two threads called the allocator", t["detail"])

    def test_skipped_on_request(self):
        c, t = self.report([bench("harness-glibc"), "2", "300000"], allocator=test_allocator("mutex"),
                           options=["--no-lock-test"])
        self.assertEqual(t["result"], "not_run", t)
        self.assertNotEqual(c["reason"][:13], "the lock test")

    def build_allocator(self, name, source):
        """A preloadable library compiled here from C source."""
        c_file, library = os.path.join(self.dir, name + ".c"), os.path.join(self.dir, name + ".so")
        with open(c_file, "w") as f:
            f.write(source)
        subprocess.run(["cc", "-shared", "-fPIC", "-O2", "-o", library, c_file, "-ldl"], check=True)
        return library

    def test_a_probe_that_never_starts_is_stopped(self):
        # An allocator whose constructor waits forever unless the program's own variable is set:
        # the probe never sees that variable and never reaches its main (nor its alarm).  record
        # stops it, keeps the program's exit status, and says why; nothing is left in TMPDIR.
        library = self.build_allocator("waits", FORWARDING + (
            "#include <unistd.h>\n"
            "__attribute__((constructor)) static void init(void) { if (!getenv(\"WAITS_HOME\")) pause(); }\n"))
        tmp = os.path.join(self.dir, "tmp")
        os.mkdir(tmp)
        run = self.record([bench("harness-glibc"), "2", "200000"], allocator=library,
                          env={"WAITS_HOME": "/x", "TMPDIR": tmp}, timeout=120)
        self.assertEqual(run.rc, 0, run.stderr)
        proc = subprocess.run([CLI, "report", "--json", run.profiles[0]], capture_output=True, text=True, timeout=300)
        t = json.loads(proc.stdout)["contention"]["lock_test"]
        self.assertEqual(t["result"], "failed", t)
        self.assertIn("was stopped after", t["detail"])
        self.assertEqual(os.listdir(tmp), [])

    def test_an_allocator_that_writes_a_report_writes_it_for_the_program_alone(self):
        # The probe sees only the variables that tune allocators: the report's path is not one.
        library = self.build_allocator("reports", FORWARDING + (
            "#include <stdio.h>\n"
            "__attribute__((destructor)) static void done(void) { const char *p = getenv(\"REPORTS_TO\");"
            " if (p) { FILE *f = fopen(p, \"a\"); if (f) { fputs(\"report\\n\", f); fclose(f); } } }\n"))
        report = os.path.join(self.dir, "report.txt")
        c, t = self.report([bench("harness-glibc"), "2", "2000000"], allocator=library)
        run = self.record([bench("harness-glibc"), "2", "2000000"], allocator=library, out="r2.asp",
                          env={"REPORTS_TO": report})
        self.assertEqual(run.rc, 0, run.stderr)
        with open(report) as f:
            self.assertEqual(f.read(), "report\n")
        self.assertNotIn(t["result"], ("failed", "not_run"), t)

    def test_a_probe_that_is_missing_is_said(self):
        # A shim found through ALLOCSCOPE_SHIM outside the build tree has no probe beside it.
        shim = os.path.join(BUILD, "shim", "liballocscope.so")
        copy = os.path.join(self.dir, "liballocscope.so")
        with open(shim, "rb") as src, open(copy, "wb") as dst:
            dst.write(src.read())
        run = self.record([bench("harness-glibc"), "2", "200000"], env={"ALLOCSCOPE_SHIM": copy},
                          allocator=test_allocator("mutex"))
        self.assertEqual(run.rc, 0, run.stderr)
        proc = subprocess.run([CLI, "report", "--json", run.profiles[0]], capture_output=True, text=True, timeout=300)
        t = json.loads(proc.stdout)["contention"]["lock_test"]
        self.assertEqual(t["result"], "not_run", t)
        self.assertIn("allocscope-lockprobe-glibc is not installed", t["detail"])
