"""End-to-end tests of `record --locks`: the program's own contended lock waits, on glibc and musl.

tests/targets/lock_contention.c has one mutex that its workers fight over (contended_section), one
mutex per thread that no other thread touches (private_section), and a start gate on a condition
variable (wait_for_start); it measures its own time in pthread_mutex_lock of the contended mutex.
"""
import json
import os
import re
import subprocess
import unittest

from allocscope_e2e import BUILD, CLI, E2ETestCase, target

LIBCS = ["glibc", "musl"]
THREADS, ROUNDS, HOLD_US = 4, 150, 200


class LockWaits(E2ETestCase):
    def record(self, libc, name, locks=True, hold_us=HOLD_US):
        path = os.path.join(self.dir, name)
        cmd = [CLI, "record", "-o", path] + (["--locks"] if locks else []) + \
            ["--", target(f"lock_contention-{libc}"), str(THREADS), str(ROUNDS), str(hold_us)]
        proc = subprocess.run(cmd, capture_output=True, text=True, cwd=self.dir, timeout=300)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        m = re.search(r"shared_wait_ns=(\d+) shared_calls=(\d+) private_calls=(\d+)", proc.stderr)
        self.assertIsNotNone(m, proc.stderr)
        return path, {"wait_ns": int(m.group(1)), "calls": int(m.group(2)), "private_calls": int(m.group(3))}

    def cli(self, *args):
        proc = subprocess.run([CLI, *args], capture_output=True, text=True, timeout=300)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        return proc.stdout

    def test_lock_tracing_adds_no_call_of_its_own(self):
        """--locks loads libunwind for the waits' stacks when the process starts; the loader's and
        libunwind's allocations are the shim's, not the program's (they were counted once: 8 mallocs,
        4 callocs and a free more than the program made)."""
        for libc in LIBCS:
            with self.subTest(libc=libc):
                totals = {}
                for locks in (False, True):
                    path = os.path.join(self.dir, f"own-{libc}-{locks}.asp")
                    cmd = [CLI, "record", "-o", path] + (["--locks"] if locks else []) + \
                        ["--", target(f"malloc_address-{libc}")]
                    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=self.dir, timeout=300)
                    self.assertEqual(proc.returncode, 0, proc.stderr)
                    j = json.loads(self.cli("dump", "--json", path))
                    totals[locks] = {op: v["calls"] for op, v in j["totals"].items() if v["calls"]}
                self.assertEqual(totals[True], totals[False])
                self.assertEqual(totals[False].get("malloc"), 2000)

    def test_the_contended_mutex_is_named_by_its_call_site_with_its_wait(self):
        for libc in LIBCS:
            with self.subTest(libc=libc):
                path, own = self.record(libc, f"locks-{libc}.asp")
                self.assertEqual(own["calls"], THREADS * ROUNDS)
                j = json.loads(self.cli("report", "--json", path))
                locks = j["locks"]
                self.assertTrue(locks["recorded"])
                self.assertGreater(len(locks["locks"]), 0, locks)
                top = locks["locks"][0]
                self.assertEqual(top["kind"], "mutex")
                self.assertEqual(top["sites"][0]["site"], "contended_section", top)
                self.assertRegex(top["sites"][0]["location"], r"lock_contention\.c:\d+")
                self.assertIn("worker", top["sites"][0]["chain"][1:], top)  # the caller, from the stack
                self.assertTrue(top["name"].startswith("contended_section (lock_contention.c:"), top["name"])
                self.assertGreaterEqual(top["threads"], 2)
                self.assertLessEqual(top["threads"], THREADS)
                self.assertLessEqual(top["waits"], own["calls"])
                # The shim times each contended call from its failed trylock to its return, inside
                # the program's own interval around the same call: never more than the program's
                # total, and short of it only by the uncontended calls and the trylocks.
                self.assertLessEqual(top["wait_ns"], own["wait_ns"] * 1.02, (top, own))
                self.assertGreaterEqual(top["wait_ns"], own["wait_ns"] * 0.8, (top, own))
                self.assertGreater(top["max_ns"], 0)
                self.assertLessEqual(top["max_ns"], top["wait_ns"])
                self.assertAlmostEqual(top["share"], top["wait_ns"] / locks["thread_time_ns"], delta=5e-5)  # 4 decimals
                self.assertGreater(locks["share"], 0)
                self.assertLess(locks["share"], 1)
                # Unlocks are timed on a sample (about 1 in 256) and scaled: every worker unlocked
                # its own mutex 20 times a round, so some were timed.
                # (a thread's count reaches its last timed unlock: up to 383 calls short)
                self.assertGreater(locks["unlocks"], THREADS * (ROUNDS * 21 - 384))
                self.assertGreater(locks["unlocks_timed"], 0)
                self.assertLess(locks["unlocks_timed"], locks["unlocks"] / 64)
                self.assertGreater(locks["unlock_ns"], 0)
                self.assertAlmostEqual(locks["time_ns"], locks["wait_ns"] + locks["unlock_ns"], delta=1)
                # The threads' own mutexes were never contended: no wait at all, so no row.
                sites = [s["site"] for lock in locks["locks"] for s in lock["sites"]]
                self.assertNotIn("private_section", sites)
                self.assertGreaterEqual(own["private_calls"], THREADS * ROUNDS * 20)
                # The start gate is a condition wait: listed apart, not counted as lock wait.
                conds = locks["conditions"]
                self.assertTrue(any(c["sites"][0]["site"] == "wait_for_start" for c in conds), conds)
                self.assertTrue(all(c["kind"] == "condition" for c in conds))
                self.assertGreater(locks["cond_wait_ns"], 0)
                in_rows = sum(lock["wait_ns"] for lock in locks["locks"])
                self.assertLessEqual(in_rows, locks["wait_ns"] * 1.000001 + 1)

                text = self.cli("report", path)
                self.assertIn("Locks outside the allocator", text)
                self.assertIn("contended_section", text)
                self.assertNotIn("private_section", text)
                html_path = os.path.join(self.dir, f"locks-{libc}.html")
                self.cli("report", path, "--html", html_path)
                with open(html_path, encoding="utf-8") as f:
                    html = f.read()
                self.assertIn("Locks outside the allocator", html)
                self.assertIn("contended_section", html)

    def test_without_the_option_nothing_about_locks(self):
        path, _ = self.record("glibc", "plain.asp", locks=False)
        j = json.loads(self.cli("report", "--json", path))
        self.assertEqual(j["locks"], {"recorded": False})
        self.assertNotIn("Locks outside the allocator", self.cli("report", path))
        dump = json.loads(self.cli("dump", "--json", path))
        self.assertFalse(dump["calibration"]["locks"])

    def test_a_threads_first_unlock_is_not_always_timed(self):
        """Unlocks are timed about 1 in 256 and scaled up; were each thread's first unlock always
        timed, a start-up lock unlocked once per thread would be timed on every thread and weigh
        256 unlocks each.  first_unlock: 8 workers and main unlock the start-up lock once each
        (their first unlock), then their own mutexes 3,000 times.  With the first timed unlock
        at a random position 1..256, each of the 9 threads times the start-up unlock with
        probability 1/256: three or more of them, about 5 in a million runs."""
        for libc in LIBCS:
            with self.subTest(libc=libc):
                path = os.path.join(self.dir, f"first-{libc}.asp")
                proc = subprocess.run([CLI, "record", "--locks", "-o", path, "--", target(f"first_unlock-{libc}"), "8",
                                       "3000"], capture_output=True, text=True, timeout=300)
                self.assertEqual(proc.returncode, 0, proc.stderr)
                locks = json.loads(self.cli("report", "--json", path))["locks"]
                startup = [lock for lock in locks["locks"] if lock["sites"][0]["site"] == "startup_section"]
                self.assertEqual(len(startup), 1, locks["locks"])
                self.assertGreater(startup[0]["waits"], 0)
                self.assertLessEqual(startup[0]["unlocks_timed"], 2, startup[0])
                # The private unlocks are timed all the same: 3,001 a thread, one in 128..383 timed.
                self.assertGreater(locks["unlocks_timed"], 8 * 3000 // 383 - 8, locks)

    def test_waits_kept_until_an_unlock_reach_the_profile_however_the_lock_is_let_go(self):
        """The shim adds a contended wait to its table only after the thread lets go of a lock
        (so that recording never lengthens the critical section). held_locks: two workers take
        turns on a write-locked rwlock (their waits end at pthread_rwlock_unlock); a worker whose
        thread ends holding the mutex it waited for; main returning from main holding one."""
        for libc in LIBCS:
            with self.subTest(libc=libc):
                path = os.path.join(self.dir, f"held-{libc}.asp")
                # Started by a relative path, as a user types it: musl names the program so in
                # its list of loaded objects, and its call sites must still resolve.
                program = target(f"held_locks-{libc}")
                proc = subprocess.run([CLI, "record", "--locks", "-o", path, "--", "./" + os.path.basename(program)],
                                      capture_output=True, text=True, timeout=300, cwd=os.path.dirname(program))
                self.assertEqual(proc.returncode, 0, proc.stderr)
                own = {k: int(v) for k, v in re.findall(r"(\w+_ns|rw_calls)=(\d+)", proc.stderr)}
                self.assertEqual(len(own), 4, proc.stderr)
                locks = json.loads(self.cli("report", "--json", path))["locks"]
                by_site = {lock["sites"][0]["site"]: lock for lock in locks["locks"]}
                # Each lock was let go only once its waiter slept on it: each has a wait.
                self.assertEqual(set(by_site), {"wrlock_section", "exit_holding", "main_exit_holding"}, (by_site, own))
                rw = by_site["wrlock_section"]
                self.assertEqual(rw["kind"], "rwlock")
                self.assertGreaterEqual(rw["waits"], 1)
                self.assertLessEqual(rw["waits"], own["rw_calls"])
                self.assertEqual(by_site["exit_holding"]["waits"], 1)
                self.assertEqual(by_site["main_exit_holding"]["waits"], 1)
                # Each wait lies inside the program's own interval around the same call (which also
                # holds its uncontended calls, and any time off the CPU before the shim's trylock).
                for site, own_ns in (("wrlock_section", own["rw_wait_ns"]), ("exit_holding", own["handoff_wait_ns"]),
                                     ("main_exit_holding", own["last_wait_ns"])):
                    self.assertGreater(by_site[site]["wait_ns"], 0, site)
                    self.assertLessEqual(by_site[site]["wait_ns"], own_ns * 1.02 + 20000, (site, by_site[site], own))
                # The single waits last at least the 2 ms their holder kept the lock after their
                # waiter fell asleep.
                for site in ("exit_holding", "main_exit_holding"):
                    self.assertGreaterEqual(by_site[site]["wait_ns"], 2_000_000, (site, by_site[site]))

    def run_kinds(self, program, name):
        """Records `program` (4 workers, 100 rounds, 100 µs sections) with --locks: its report's
        locks, and the program's own measures around its lock calls (`name_wait_ns`, `name_calls`,
        and `name_long_ns`, the part of `name_wait_ns` in calls of 2 µs or longer)."""
        path = os.path.join(self.dir, name)
        proc = subprocess.run([CLI, "record", "--locks", "-o", path, "--", target(program), "4", "100", "100"],
                              capture_output=True, text=True, timeout=300)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        own = {k: int(v) for k, v in re.findall(r"(\w+_(?:ns|calls))=(\d+)", proc.stderr)}
        self.assertEqual(len(own), 6, proc.stderr)
        j = json.loads(self.cli("report", "--json", path))
        self.assertIn("Locks outside the allocator", self.cli("report", path))
        return j["locks"], own

    def assert_lock_waits(self, lock, own, name):
        """A lock whose waits the program timed around the same calls: the shim's lie inside them,
        and take up most of the calls that waited (those of 2 µs or longer: every call, waiting or
        not, also holds the clock's and the lock's own time, which over a few hundred uncontended
        calls outweighs a few short waits)."""
        own_ns, own_calls, long_ns = own[f"{name}_wait_ns"], own[f"{name}_calls"], own[f"{name}_long_ns"]
        self.assertGreater(lock["waits"], 0, lock)
        self.assertLessEqual(lock["waits"], own_calls, lock)
        self.assertLessEqual(lock["wait_ns"], own_ns * 1.02, (lock, own))
        self.assertGreaterEqual(lock["wait_ns"], long_ns * 0.8, (lock, own))
        self.assertGreaterEqual(lock["threads"], 2, lock)

    def test_c11_mutexes_spin_locks_and_conditions_are_traced(self):
        """C11's mtx_lock, mtx_timedlock and cnd_wait run on the C library's pthread functions
        inside it (glibc) or on its own code (musl): no interposed pthread_mutex_lock sees them.
        A pthread spin lock's waiters spin.  lock_kinds: one C11 mutex taken with mtx_lock and
        mtx_timedlock, one spin lock, both contended, behind a cnd_wait gate."""
        for libc in LIBCS:
            with self.subTest(libc=libc):
                locks, own = self.run_kinds(f"lock_kinds-{libc}", f"kinds-{libc}.asp")
                # (The gate's mutex may be contended too, by the workers arriving and main.)
                c11 = [lock for lock in locks["locks"] if lock["sites"][0]["site"].startswith("c11_")
                       and lock["sites"][0]["site"] != "c11_gate"]
                spin = [lock for lock in locks["locks"] if lock["kind"] == "spinlock"]
                self.assertEqual((len(c11), len(spin)), (1, 1), locks["locks"])
                c11, spin = c11[0], spin[0]
                self.assertEqual(c11["kind"], "mutex")
                self.assertEqual({s["site"] for s in c11["sites"]}, {"c11_section", "c11_timed_section"}, c11)
                self.assertRegex(c11["sites"][0]["location"], r"lock_kinds\.c:\d+")
                self.assert_lock_waits(c11, own, "c11")
                self.assertEqual([s["site"] for s in spin["sites"]], ["spin_section"], spin)
                self.assert_lock_waits(spin, own, "spin")
                self.assertIn("worker", spin["sites"][0]["chain"][1:], spin)
                conds = locks["conditions"]
                self.assertEqual([c["sites"][0]["site"] for c in conds], ["c11_gate"], conds)
                self.assertGreater(locks["cond_wait_ns"], 0)
                # (each total rounded to whole nanoseconds on its own)
                self.assertGreaterEqual(locks["wait_ns"] + 2, c11["wait_ns"] + spin["wait_ns"])

    def test_cxx_timed_locks_and_wait_for_are_traced(self):
        """libstdc++ makes std::timed_mutex::try_lock_for, std::shared_timed_mutex::try_lock_for
        and std::condition_variable::wait_for of glibc's clock variants (pthread_mutex_clocklock,
        pthread_rwlock_clockwrlock, pthread_cond_clockwait).  cxx_locks: both locks contended,
        behind a wait_for gate.  Their call sites are inside libstdc++'s inline templates; the
        program's own functions are their callers."""
        locks, own = self.run_kinds("cxx_locks-glibc", "cxx-locks.asp")
        def by_caller(caller):
            found = [lock for lock in locks["locks"] if caller in lock["sites"][0]["chain"]]
            self.assertEqual(len(found), 1, (caller, locks["locks"]))
            return found[0]
        timed, shared = by_caller("timed_section"), by_caller("shared_section")
        self.assertEqual(timed["kind"], "mutex")
        self.assertEqual(shared["kind"], "rwlock")
        self.assert_lock_waits(timed, own, "timed")
        self.assert_lock_waits(shared, own, "shared")
        conds = locks["conditions"]
        self.assertEqual(len(conds), 1, conds)
        self.assertIn("gate", conds[0]["sites"][0]["chain"], conds)
        self.assertGreater(conds[0]["waits"], 0)

    def test_diff_attributes_the_gap_to_the_lock(self):
        for libc in LIBCS:
            with self.subTest(libc=libc):
                # The same program, its critical section empty (BASE) or 200 µs long (OTHER): the
                # gap is time spent holding the lock and, mostly, waiting for it.
                base, _ = self.record(libc, f"base-{libc}.asp", hold_us=0)
                other, own = self.record(libc, f"other-{libc}.asp")
                d = json.loads(self.cli("diff", "--json", base, other))
                self.assertIsNotNone(d["locks"])
                self.assertTrue(d["base"]["locks_recorded"] and d["other"]["locks_recorded"])
                self.assertGreater(d["measured_delta_ns"], 0)
                lk = d["locks"]
                self.assertAlmostEqual(lk["delta_ns"], d["other"]["lock_time_ns"] - d["base"]["lock_time_ns"], delta=2)
                self.assertAlmostEqual(lk["rest_delta_ns"], d["measured_delta_ns"] - d["attributed_delta_ns"]
                                       - lk["delta_ns"] - lk["cond_delta_ns"], delta=3)
                # Four threads fight over 200 µs sections: OTHER waits for the lock, BASE hardly.
                # How much of the gap that is depends on how often the threads run at all (on
                # a busy machine much of it is time runnable but not running: the rest), but
                # the waits are a part of it, never more than all of it.
                self.assertGreater(lk["delta_ns"], 0, d)
                self.assertGreater(lk["share"], 0, d)
                self.assertLessEqual(lk["share"], 1.0, d)
                self.assertAlmostEqual(lk["explained"], (d["attributed_delta_ns"] + lk["delta_ns"]) / d["measured_delta_ns"],
                                       delta=5e-5)
                self.assertTrue(d["other"]["top_lock"].startswith("contended_section"), d["other"])
                text = self.cli("diff", base, other)
                self.assertIn("other locks (waits + unlocks)", text)
                self.assertIn("contended_section", text)


class AllocatorsOwnLocks(E2ETestCase):
    """The allocator's own locks, taken inside its calls (docs/recording.md): recorded always, apart
    from the program's locks.  tests/allocators/cache_alloc.c refills and drains its thread caches
    under one lock and counts its own waits (CACHE_ALLOC_STATS=1)."""

    def cli(self, *args):
        proc = subprocess.run([CLI, *args], capture_output=True, text=True, timeout=300)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        return proc.stdout

    def record_cache(self, name, options=(), env=None):
        """Producer/consumer under the refill lock: the profile's path, what the allocator counted
        (its line's fields by name), the report's JSON and its allocator_lock_waits (or None)."""
        path = os.path.join(self.dir, name)
        cmd = [CLI, "record", "-o", path, "--no-lock-test", "--allocator",
               os.path.join(BUILD, "tests", "allocators", "libcache_alloc.so"), *options, "--",
               os.path.join(BUILD, "bench", "xthread-glibc"), "2", "300000"]
        proc = subprocess.run(cmd, capture_output=True, text=True, cwd=self.dir, timeout=300,
                              env={**os.environ, "CACHE_ALLOC_STATS": "1", **(env or {})})
        self.assertEqual(proc.returncode, 0, proc.stderr)
        line = re.search(r"^cache_alloc: (.*)$", proc.stderr, re.M)
        self.assertIsNotNone(line, proc.stderr)
        own = {k: int(v) for k, v in re.findall(r"(\w+)=(\d+)", line.group(1))}
        j = json.loads(self.cli("report", "--json", path))
        counted = next((e for e in j["contention"]["evidence"] if e["kind"] == "allocator_lock_waits"), None)
        return path, own, j, counted

    def test_futex_waits_of_its_own_are_counted(self):
        """CACHE_ALLOC_LOCK=futex: the lock is a futex word of the allocator's own, its waits made
        through syscall(): the shim counts those that slept, and only those."""
        path, own, _, counted = self.record_cache("futex.asp", env={"CACHE_ALLOC_LOCK": "futex"})
        sleeps = own["futex_sleeps"]
        if sleeps == 0:
            self.assertIsNone(counted, counted)
            return
        self.assertIsNotNone(counted, own)
        self.assertEqual(counted["value"], sleeps)
        self.assertIn(f"through the C library's syscall() that slept ({sleeps} of them)", counted["meaning"])
        self.assertTrue(json.loads(self.cli("dump", "--json", path))["calibration"]["allocator_futex_waits"])

    def test_counted_apart_from_the_programs_locks(self):
        for locks in (False, True):
            with self.subTest(locks=locks):
                path, own, j, counted = self.record_cache(f"cache-{locks}.asp", ["--locks"] if locks else [])
                self.assertNotIn("futex_sleeps", own)
                waited = own["waited"]
                dump = json.loads(self.cli("dump", "--json", path))
                self.assertTrue(dump["calibration"]["allocator_locks"])
                self.assertEqual(dump["calibration"]["locks"], locks)
                if waited == 0:
                    self.assertIsNone(counted, counted)
                    continue
                # Every wait the allocator's own try found, the shim's try found too but for the
                # few whose holder let go in between.
                self.assertIsNotNone(counted, own)
                self.assertLessEqual(counted["value"], waited)
                self.assertGreaterEqual(counted["value"], 0.8 * waited - 2)
                self.assertIn("threads on 1 lock;", counted["meaning"])
                # The program's own locks: none of the allocator's waits among them.
                if locks:
                    self.assertTrue(j["locks"]["recorded"])
                    self.assertEqual(j["locks"]["waits"], 0, j["locks"])
                else:
                    self.assertEqual(j["locks"], {"recorded": False})
                text = self.cli("dump", path)
                self.assertRegex(text, r"allocator lock waits\s+[\d,]+ in \d+ \(lock, call site\) rows of [12] threads")

if __name__ == "__main__":
    unittest.main()
