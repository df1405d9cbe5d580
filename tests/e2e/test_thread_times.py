"""End-to-end tests of the per-thread figures of `allocscope report`: a thread's lifetime and CPU time.

A thread's lifetime runs from the moment the shim began to observe it (its first allocator call;
for the thread that started the profile, the shim's start-up) to its exit, or to the end of the
image for the threads still alive then, however few calls it made; its CPU time, switches and
faults count over the same span (docs/analysis.md, "Per thread").  The targets run on the CPU
for a set CPU time (tests/targets/quiet_spin.c): the bounds below hold on a loaded machine too.
"""
import json
import os
import subprocess
import unittest

from allocscope_e2e import CLI, E2ETestCase, target

LIBCS = ("glibc", "musl")
# getrusage counts in microseconds; the kernel's accounting may round a thread's CPU time to
# its tick: a little slack above the lifetime.
CPU_SLACK_NS = 2e6


class ThreadTimesCase(E2ETestCase):
    def report(self, path):
        proc = subprocess.run([CLI, "report", "--json", path], capture_output=True, text=True, timeout=300)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        return json.loads(proc.stdout)

    def program(self, name, libc):
        try:
            return target(f"{name}-{libc}")
        except unittest.SkipTest:
            if libc == "glibc":
                raise
            return None  # musl-gcc is not installed

    @staticmethod
    def cpu_ns(thread):
        ru = thread["rusage"]
        if ru["utime_us"] is None or ru["stime_us"] is None:
            return None
        return (ru["utime_us"] + ru["stime_us"]) * 1e3

    def main_thread(self, report):
        main = [t for t in report["per_thread"] if t["tid"] == report["pid"]]
        self.assertEqual(len(main), 1, report["per_thread"])
        return main[0]

    def assert_cpu_within_lifetime(self, report):
        for t in report["per_thread"]:
            cpu = self.cpu_ns(t)
            self.assertIsNotNone(cpu, t)
            self.assertLessEqual(cpu, t["lifetime_ns"] + CPU_SLACK_NS, t)


class Lifetime(ThreadTimesCase):
    def check_main_thread(self, libc, mode, spin_ms, at_least_s, sample=None):
        prog = self.program("quiet_spin", libc)
        if prog is None:
            return
        run = self.record([prog, mode, str(spin_ms)], sample=sample, out=f"{mode}-{libc}.asp")
        self.assertEqual(run.rc, 0, run.stderr)
        report = self.report(run.profiles[0])
        main = self.main_thread(report)
        self.assertEqual(main["state"], "process-exit", main)
        self.assertGreaterEqual(main["lifetime_ns"], at_least_s * 1e9, main)
        # The spin's CPU time lies inside the thread's lifetime, and counts.
        self.assertGreaterEqual(self.cpu_ns(main), 0.8 * spin_ms * 1e6, main)
        self.assert_cpu_within_lifetime(report)

    def test_first_call_at_the_end(self):
        # 0.3 s on the CPU, then the thread's one malloc: it lived from the start all the same.
        for libc in LIBCS:
            with self.subTest(libc=libc):
                self.check_main_thread(libc, "late", 300, 0.25)

    def test_one_call_at_the_start(self):
        for libc in LIBCS:
            with self.subTest(libc=libc):
                self.check_main_thread(libc, "early", 300, 0.25)

    def test_nothing_new_after_a_snapshot(self):
        # Calls until the shim writes the thread's counts (after 0.25 s of calls, docs/recording.md),
        # none after it, then 0.3 s on the CPU: the lifetime runs on to the end, 0.55 s at least.
        for libc in LIBCS:
            with self.subTest(libc=libc):
                self.check_main_thread(libc, "flushed", 300, 0.5, sample=0)


class CpuTime(ThreadTimesCase):
    def test_cpu_before_an_exec_is_the_wrappers(self):
        # A wrapper runs 0.2 s on the CPU, then execs a program that runs 20 ms: the program's
        # thread carries the wrapper's CPU time in its counts, which the report leaves out.
        for libc in LIBCS:
            with self.subTest(libc=libc):
                prog = self.program("quiet_spin", libc)
                if prog is None:
                    continue
                out = f"exec-{libc}.asp"
                run = self.record([prog, "exec", "200", prog, "early", "20"], out=out)
                self.assertEqual(run.rc, 0, run.stderr)
                # The exec'd image writes its own profile beside the wrapper's (record's last line).
                execd = [p for p in run.profiles if p != os.path.join(self.dir, out)]
                self.assertEqual(len(execd), 1, run.profiles)
                report = self.report(execd[0])
                self.assertEqual(report["args"], [prog, "early", "20"])
                main = self.main_thread(report)
                self.assertGreaterEqual(self.cpu_ns(main), 15e6, main)
                self.assertLess(self.cpu_ns(main), 150e6, main)
                self.assert_cpu_within_lifetime(report)

    def test_cpu_within_lifetime_for_threads_and_fork_children(self):
        # Threads started after the shim, and a fork child's thread (whose counts start anew).
        cases = [("fixed_duration", ["2", "200", "2000"]), ("forker", [])]
        for name, args in cases:
            for libc in LIBCS:
                with self.subTest(program=name, libc=libc):
                    prog = self.program(name, libc)
                    if prog is None:
                        continue
                    run = self.record([prog, *args], out=f"{name}-{libc}.asp")
                    self.assertEqual(run.rc, 0, run.stderr)
                    for path in run.profiles:
                        self.assert_cpu_within_lifetime(self.report(path))


if __name__ == "__main__":
    unittest.main()
