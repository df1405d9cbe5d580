"""End-to-end tests of the CPU samples (`record --locks`): where the threads' CPU time went.

tests/targets/lock_cpu.c spins a known CPU time outside any call, then locks and unlocks a mutex of
its own; tests/allocators/libslow_unlock.so makes each pthread_mutex_unlock spin a known CPU time
too.  The share of the CPU time inside lock calls is then known: UNLOCK / (UNLOCK + OUTSIDE), less
the little the rest of each round takes.  Each check is one run's claim against its own bound
(2 standard errors): the truth must lie within 1.5 times that bound (3 standard errors), plus 2
points for what a round does besides the two spins.
"""
import json
import os
import platform
import re
import subprocess
import unittest

from allocscope_e2e import BUILD, CLI, E2ETestCase, target

SLOW_UNLOCK = os.path.join(BUILD, "tests", "allocators", "libslow_unlock.so")
THREADS, ROUNDS, OUTSIDE_US = 4, 1500, 100


class CpuSamples(E2ETestCase):
    def record(self, name, argv, locks=True, unlock_us=None, env=None):
        path = os.path.join(self.dir, name)
        cmd = [CLI, "record", "-o", path] + (["--locks"] if locks else [])
        full_env = dict(os.environ)
        if unlock_us is not None:
            if not os.path.exists(SLOW_UNLOCK):
                raise unittest.SkipTest("libslow_unlock.so was not built")
            cmd += ["--allocator", SLOW_UNLOCK]
            full_env["SLOW_UNLOCK_US"] = str(unlock_us)
        full_env.update(env or {})
        proc = subprocess.run(cmd + ["--"] + argv, capture_output=True, text=True, env=full_env, timeout=120,
                              cwd=self.dir, start_new_session=True)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.stderr = proc.stderr
        return path

    def cli_json(self, *args):
        proc = subprocess.run([CLI, *args, "--json"], capture_output=True, text=True, timeout=300)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        return json.loads(proc.stdout)

    def assert_share(self, cpu, part, expected):
        p = cpu[part]
        bound = 1.5 * p["error_ns"] / cpu["cpu_ns"] + 0.02
        self.assertLess(abs(p["share"] - expected), bound, json.dumps(cpu))

    def test_the_cpu_time_inside_lock_calls_is_the_time_spent_there(self):
        argv = [target("lock_cpu-glibc"), str(THREADS), str(ROUNDS), str(OUTSIDE_US)]
        for unlock_us in (100, 300):
            with self.subTest(unlock_us=unlock_us):
                path = self.record(f"u{unlock_us}.asp", argv, unlock_us=unlock_us)
                cpu = self.cli_json("report", path)["cpu"]
                self.assertTrue(cpu["recorded"])
                self.assertGreaterEqual(cpu["threads"], THREADS)
                # The kernel looks at the timer only at the ticks that find the thread running: on
                # a busy machine, threads that run in short turns get few samples (13 in a run of
                # the suite beside other tests, some 300 alone).  The bound says so; the shares
                # below are checked against it.
                self.assertGreater(cpu["samples"], 0, cpu)
                self.assert_share(cpu, "locks", unlock_us / (unlock_us + OUTSIDE_US))
                self.assert_share(cpu, "allocator", 0)
                self.assert_share(cpu, "cond", 0)
                parts = sum(cpu[k]["ns"] for k in ("allocator", "locks", "cond", "shim", "elsewhere"))
                self.assertAlmostEqual(parts + cpu["unsampled_ns"], cpu["cpu_ns"], delta=cpu["cpu_ns"] * 1e-3 + 10)
                text = subprocess.run([CLI, "report", path], capture_output=True, text=True).stdout
                self.assertIn("Where the CPU time went (sampled)", text)
                share = re.search(r"inside lock calls +(\d+\.\d %) ", text)
                self.assertIsNotNone(share, text)
                # The page shows the same figure.
                page = os.path.join(self.dir, f"u{unlock_us}.html")
                proc = subprocess.run([CLI, "report", path, "--html", page], capture_output=True, text=True)
                self.assertEqual(proc.returncode, 0, proc.stderr)
                with open(page, encoding="utf-8") as f:
                    html = f.read()
                self.assertIn("Where the CPU time went (sampled)", html)
                self.assertIn(f"inside lock calls</td><td>{share.group(1)}", html)

    @unittest.skipUnless(platform.machine() == "x86_64", "libslow_unlock.so spins its trylock on the TSC")
    def test_a_lock_taken_at_its_first_try_is_found_by_its_code(self):
        # The traced pthread_mutex_lock calls the real trylock first, unmarked (a mark would lie
        # inside the critical section): a sample counts it by the address it interrupted.  Here each
        # trylock spins about 100 µs of its own code, of lengths drawn anew each call; the library
        # prints the CPU time the spins took.
        argv = [target("lock_cpu-glibc"), str(THREADS), str(ROUNDS), str(OUTSIDE_US)]
        path = self.record("trylock.asp", argv, unlock_us=0, env={"SLOW_TRYLOCK_US": "100"})
        spun = re.search(r"slow_unlock: trylock_cpu_ns=(\d+)", self.stderr)
        self.assertIsNotNone(spun, self.stderr)
        cpu = self.cli_json("report", path)["cpu"]
        self.assertTrue(cpu["recorded"])
        self.assertGreater(cpu["samples"], 0, cpu)
        self.assert_share(cpu, "locks", int(spun.group(1)) / cpu["cpu_ns"])
        self.assert_share(cpu, "allocator", 0)

    def test_diff_gives_the_cpu_time_gap_to_the_locks(self):
        # The second run spends 200 µs more inside each unlock, nothing more elsewhere: the CPU-time
        # gap is the locks', all of it.
        argv = [target("lock_cpu-glibc"), str(THREADS), str(ROUNDS), str(OUTSIDE_US)]
        base = self.record("base.asp", argv, unlock_us=100)
        other = self.record("other.asp", argv, unlock_us=300)
        d = self.cli_json("diff", base, other)
        cpu = d["cpu"]
        self.assertIsNotNone(cpu, d)
        expected_gap = THREADS * ROUNDS * 200e3
        self.assertLess(abs(cpu["delta_ns"] - expected_gap), 0.25 * expected_gap, cpu)
        self.assertLess(abs(cpu["locks_delta_ns"] - expected_gap), 1.5 * cpu["locks_error_ns"] + 0.05 * expected_gap, cpu)
        # A share is given where the gap stands out of its bound; with few samples (a busy machine)
        # the diff says it cannot tell instead.
        error = (cpu["allocator_error_ns"] ** 2 + cpu["locks_error_ns"] ** 2) ** 0.5
        if cpu["explained"] is None:
            self.assertGreaterEqual(error, abs(cpu["delta_ns"]), cpu)
        else:
            self.assertLess(abs(cpu["explained"] - 1), 1.5 * cpu["explained_error"] + 0.1, cpu)
        text = " ".join(subprocess.run([CLI, "diff", base, other], capture_output=True, text=True).stdout.split())
        self.assertIn("allocator + other locks (CPU time)", text)
        self.assertIn("of the CPU-time gap", text)

    def test_diff_says_when_the_samples_are_too_few_to_split_the_gap(self):
        # 20 rounds: a few ticks of CPU time per thread, and a CPU-time gap of about 16 ms.
        argv = [target("lock_cpu-glibc"), str(THREADS), "20", str(OUTSIDE_US)]
        base = self.record("short-base.asp", argv, unlock_us=100)
        other = self.record("short-other.asp", argv, unlock_us=300)
        cpu = self.cli_json("diff", base, other)["cpu"]
        text = " ".join(subprocess.run([CLI, "diff", base, other], capture_output=True, text=True).stdout.split())
        if cpu["too_few_samples"]:
            self.assertIsNone(cpu["explained"], cpu)
            self.assertIn("the samples are too few to split it", text)
            self.assertNotIn("of the CPU-time gap", text)
        else:  # the samples were enough after all: then the share must hold
            self.assertIsNotNone(cpu["explained"], cpu)
            self.assertLess(abs(cpu["explained"] - 1), 1.5 * cpu["explained_error"] + 0.1, cpu)

    def test_compare_gives_the_cpu_time_gap_to_the_locks(self):
        # compare's column "of CPU" is diff's share of the CPU-time gap: the row with the slow
        # unlock spends all of its extra CPU time inside unlocks.
        if not os.path.exists(SLOW_UNLOCK):
            raise unittest.SkipTest("libslow_unlock.so was not built")
        out = os.path.join(self.dir, "compare")
        proc = subprocess.run([CLI, "compare", "--locks", "--runs", "2", "--json", "-o", out, "--allocators",
                               f"glibc,{SLOW_UNLOCK}", "--", target("lock_cpu-glibc"), str(THREADS), "600",
                               str(OUTSIDE_US)], capture_output=True, text=True, timeout=300,
                              env=dict(os.environ, SLOW_UNLOCK_US="300"))
        self.assertEqual(proc.returncode, 0, proc.stderr)
        rows = {r["name"]: r for r in json.loads(proc.stdout)["rows"]}
        slow = rows["libslow_unlock.so"]
        if slow["cpu_too_few_samples"]:
            self.assertIsNone(slow["cpu_explained"], slow)
        elif slow["cpu_explained"] is not None:
            self.assertLess(abs(slow["cpu_explained"] - 1), 1.5 * slow["cpu_explained_error"] + 0.1, slow)
        else:  # neither: the gap lies within the runs' spread, and compare says so
            self.assertIn("spread", slow["coverage_reason"] or "", slow)
        self.assertIsNone(rows["glibc"]["cpu_explained"])

    def test_a_musl_program_is_sampled_too(self):
        path = self.record("musl.asp", [target("lock_cpu-musl"), "2", "1500", str(OUTSIDE_US)])
        cpu = self.cli_json("report", path)["cpu"]
        self.assertTrue(cpu["recorded"])
        # About 75 samples of 4 ms ticks on a quiet machine; beside busy loops, fewer of the ticks
        # find the thread on a CPU (16-20 measured), and the bound says so.
        self.assertGreater(cpu["samples"], 0, cpu)
        # Without the slow unlock nearly all of it is the spin outside any call.
        self.assert_share(cpu, "elsewhere", 0.98)
        self.assert_share(cpu, "locks", 0)

    def test_no_samples_without_lock_tracing_or_when_turned_off(self):
        argv = [target("lock_cpu-glibc"), "2", "300", str(OUTSIDE_US)]
        for name, locks, env in (("plain.asp", False, None), ("off.asp", True, {"ALLOCSCOPE_CPU_SAMPLES": "0"})):
            with self.subTest(name=name):
                path = self.record(name, argv, locks=locks, env=env)
                j = self.cli_json("report", path)
                self.assertEqual(j["cpu"], {"recorded": False})
                self.assertNotIn("Where the CPU time went", subprocess.run([CLI, "report", path], capture_output=True,
                                                                           text=True).stdout)

    def test_programs_that_own_or_wait_on_signals_get_none_of_the_samples(self):
        # "later": the program installs a handler on every real-time signal while its threads run
        # (the samples stop); "waitall": its threads block every signal after they have allocated,
        # then take whatever is pending with sigtimedwait (the samples stop while a thread blocks).
        for libc in ("glibc", "musl"):
            for when in ("later", "waitall"):
                with self.subTest(libc=libc, when=when):
                    path = os.path.join(self.dir, f"rt-{libc}-{when}.asp")
                    proc = subprocess.run([CLI, "record", "--locks", "-o", path, "--", target(f"rt_signals-{libc}"),
                                           when, "3", "400"], capture_output=True, text=True, timeout=120)
                    self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
                    self.assertIn("rt_signals: 0 signals", proc.stdout)
                    cpu = self.cli_json("report", path)["cpu"]
                    self.assertTrue(cpu["recorded"])
                    self.assertGreater(cpu["samples"], 0, cpu)


if __name__ == "__main__":
    unittest.main()
