"""Torture: the situations in which a preloaded recorder is most likely to break a program.

Each program of tests/torture runs on glibc and on musl, alone and under the shim: its output and
exit status must not change, every profile must read back whole (`dump --json` exits 0), and the
calls the program documents must be counted where the shim can see them.
"""
import os
import unittest

from allocscope_e2e import BUILD
from robustness import (EXTRA_ALLOCATORS, LIBCS, RobustnessCase, TORTURE, allocator_path, calls,
                        failed, reentrant, sized_calls, torture)


class ProcessTrees(RobustnessCase):
    """fork, fork + exec, posix_spawn, vfork + exec, vfork + _exit, a failed exec."""

    def tree(self, libc, mode):
        prog = torture(f"proc-{libc}")
        plain = self.run_plain([prog, mode])
        run = self.run_recorded([prog, mode], f"{libc}-{mode}.asp")
        self.assert_unchanged(plain, run, f"{libc} {mode}")
        docs = self.dumps(run)
        for j in docs:
            self.assertTrue(j["process"]["complete"], j["file"])
        parent = docs[0]  # the file named by -o: the program record started
        self.assertEqual(parent["process"]["args"][1:], [mode])
        self.assertEqual(sized_calls(parent, "malloc", 3333), 20)
        return parent, docs[1:]

    def test_fork(self):
        for libc in LIBCS:
            with self.subTest(libc=libc):
                parent, children = self.tree(libc, "fork")
                self.assertEqual(len(children), 1)
                child = children[0]
                self.assertEqual(child["process"]["ppid"], parent["process"]["pid"])
                self.assertEqual(sized_calls(child, "malloc", 2222), 20)
                self.assertEqual(sized_calls(child, "malloc", 3333), 0)  # its own calls only
                self.assertEqual(sized_calls(parent, "malloc", 2222), 0)

    def test_an_image_that_execs_itself_many_times(self):
        """A process keeps its pid across exec: each of its 16 images writes a profile of its own,
        silently (the tenth and later images once found every name taken and did not record)."""
        script = os.path.join(self.dir, "again.sh")
        with open(script, "w") as f:
            f.write('#!/bin/sh\nif [ "$1" -gt 0 ]; then exec "$0" "$(($1 - 1))"; fi\necho done\n')
        os.chmod(script, 0o755)
        plain = self.run_plain([script, "15"])
        run = self.run_recorded([script, "15"], "again.asp")
        self.assert_unchanged(plain, run, "exec chain")
        self.assertNotIn("not recording", run.stderr)
        pids = {self.dump(p)["process"]["pid"] for p in run.profiles}
        self.assertEqual(len(run.profiles), 16, run.profiles)
        self.assertEqual(len(pids), 1)

    def check_leaf(self, libc, mode, size, n):
        parent, children = self.tree(libc, mode)
        self.assertEqual(len(children), 1, [c["process"]["args"] for c in children])
        leaf = children[0]
        self.assertEqual(leaf["process"]["args"][1:], ["leaf", str(size), str(n)])
        self.assertEqual(leaf["process"]["libc"], libc)
        self.assertEqual(sized_calls(leaf, "malloc", size), n)
        self.assertEqual(sized_calls(parent, "malloc", size), 0)

    def test_fork_then_exec(self):
        for libc in LIBCS:
            with self.subTest(libc=libc):
                self.check_leaf(libc, "fork_exec", 7777, 30)

    def test_posix_spawn(self):
        for libc in LIBCS:
            with self.subTest(libc=libc):
                self.check_leaf(libc, "spawn", 5555, 40)

    def test_vfork_then_exec(self):
        for libc in LIBCS:
            with self.subTest(libc=libc):
                self.check_leaf(libc, "vfork_exec", 6666, 50)

    def test_vfork_then_exit(self):
        for libc in LIBCS:
            with self.subTest(libc=libc):
                parent, children = self.tree(libc, "vfork_exit")
                self.assertEqual(children, [])
                self.assertEqual(parent["process"]["exit_kind"], "exit")

    def test_failed_exec_resumes_recording(self):
        for libc in LIBCS:
            with self.subTest(libc=libc):
                parent, children = self.tree(libc, "exec_fail")
                self.assertEqual(children, [])
                self.assertEqual(sized_calls(parent, "malloc", 9999), 60)
                self.assertEqual(parent["process"]["exit_kind"], "exit")


class Threads(RobustnessCase):
    def test_ten_thousand_short_threads(self):
        n = 10000
        for libc in LIBCS:
            with self.subTest(libc=libc):
                prog = torture(f"threads-{libc}")
                plain = self.run_plain([prog, "many", str(n)])
                run = self.run_recorded([prog, "many", str(n)], f"many-{libc}.asp")
                self.assert_unchanged(plain, run)
                [j] = self.dumps(run, count=1)
                self.assert_consistent(j)
                for size in (52, 520, 5200):
                    self.assertEqual(sized_calls(j, "malloc", size), n, size)
                self.assertGreaterEqual(j["process"]["threads_seen"], n)
                self.assertLessEqual(j["process"]["max_live_threads"], 64 + 2)
                self.assertEqual(j["snapshots"]["incomplete"], 0)

    def test_allocations_in_thread_specific_destructors(self):
        n = 300
        for libc in LIBCS:
            with self.subTest(libc=libc):
                prog = torture(f"threads-{libc}")
                plain = self.run_plain([prog, "tls", str(n)])
                run = self.run_recorded([prog, "tls", str(n)], f"tls-{libc}.asp")
                self.assert_unchanged(plain, run)
                [j] = self.dumps(run, count=1)
                self.assertEqual(sized_calls(j, "malloc", 7777), 2 * n)
                self.assertEqual(sized_calls(j, "malloc", 9999), 3 * n)

    def test_exit_while_detached_threads_end(self):
        n = 500
        for libc in LIBCS:
            with self.subTest(libc=libc):
                prog = torture(f"threads-{libc}")
                plain = self.run_plain([prog, "detached", str(n)])
                run = self.run_recorded([prog, "detached", str(n)], f"detached-{libc}.asp")
                self.assert_unchanged(plain, run)
                [j] = self.dumps(run, count=1)
                self.assertTrue(j["process"]["complete"])
                self.assertEqual(sized_calls(j, "malloc", 1300), n)

    def test_exit_from_a_thread_while_others_allocate(self):
        for libc in LIBCS:
            with self.subTest(libc=libc):
                prog = torture(f"threads-{libc}")
                plain = self.run_plain([prog, "exit_in_thread"])
                run = self.run_recorded([prog, "exit_in_thread"], f"exit-{libc}.asp")
                self.assert_unchanged(plain, run)
                self.assertEqual(run.rc, 5)
                [j] = self.dumps(run, count=1)
                self.assertTrue(j["process"]["complete"])
                self.assertEqual(j["process"]["exit_kind"], "exit")
                self.assertGreater(calls(j, "malloc"), 1000)


class Signals(RobustnessCase):
    """Handlers that allocate at a high rate, landing inside the shim's own bookkeeping."""

    THREADS, MS = 4, 400

    def storm(self, libc, sample, alloc):
        prog = torture(f"signals-{libc}")
        argv = [prog, str(self.THREADS), str(self.MS)] + (["alloc"] if alloc else [])
        after = [os.path.join(TORTURE, "libtorture_sigsafe_alloc.so")] if alloc else []
        plain = self.run_plain(argv, env={"LD_PRELOAD": ":".join(after)} if after else None,
                               timeout=120)
        out = os.path.join(self.dir, f"sig-{libc}-{sample}-{alloc}.asp")
        run = self.run_preloaded(argv, out, env={"ALLOCSCOPE_SAMPLE": str(sample)},
                                 preload_after=after, timeout=120)  # a hang fails here
        self.assert_unchanged(plain, run, f"{libc} sample={sample} alloc={alloc}")
        [j] = self.dumps(run, count=1)
        self.assert_consistent(j)
        said = dict(line.split()[1:3] for line in run.stderr.splitlines()
                    if line.startswith("signals: "))
        handled, iterations = int(said["handled"]), int(said["iterations"])
        self.assertGreater(handled, 1000, "too few signals to mean anything")
        # Every handler call either was recorded or passed through as reentrant (it interrupted
        # the shim itself); except one that interrupts a thread's very first call, while the
        # thread is getting its slot: it has no slot to be counted in; and one that lands after
        # its thread's last snapshot was written at exit (at most one of each per thread).
        seen = calls(j, "malloc_usable_size")
        self.assertLessEqual(seen, handled)
        self.assertGreaterEqual(seen + reentrant(j), handled - 2 * (self.THREADS + 2))
        if alloc:
            self.assertLessEqual(sized_calls(j, "malloc", 777), handled)
        workers = [t for t in j["threads"] if t["tid"] != j["process"]["pid"]]
        self.assertGreaterEqual(sum(t["totals"].get("malloc", {}).get("calls", 0) for t in workers),
                                iterations)
        return j

    def test_handlers_calling_the_allocator(self):
        for libc in LIBCS:
            for sample in (1, 16):
                with self.subTest(libc=libc, sample=sample):
                    j = self.storm(libc, sample, alloc=False)
                    if sample == 1:  # every call timed: signals do land inside the shim
                        self.assertGreater(reentrant(j), 0)

    def test_handlers_on_a_small_alternate_stack(self):
        """Threads whose first allocator calls come in a handler on a 6 KiB alternate stack: the
        shim once flushed a dead thread's slot, or its own records, there, and overflowed it."""
        for libc in LIBCS:
            for sample in (1, 64):
                with self.subTest(libc=libc, sample=sample):
                    argv = [torture(f"altstack-{libc}"), "6144"]
                    plain = self.run_plain(argv, timeout=120)
                    out = os.path.join(self.dir, f"alt-{libc}-{sample}.asp")
                    run = self.run_preloaded(argv, out, env={"ALLOCSCOPE_SAMPLE": str(sample)}, timeout=120)
                    self.assert_unchanged(plain, run, f"{libc} sample={sample}")
                    self.assertIn("altstack: 10000 signals handled", run.stdout)
                    [j] = self.dumps(run, count=1)
                    self.assertGreaterEqual(sized_calls(j, "malloc", 100), 9990)

    def test_handlers_allocating_behind_a_signal_safe_allocator(self):
        for libc in LIBCS:
            with self.subTest(libc=libc):
                j = self.storm(libc, 1, alloc=True)
                self.assertIn("torture_sigsafe_alloc", allocator_path(j))
                self.assertGreater(reentrant(j), 0)


class Dlopen(RobustnessCase):
    """A library that allocates when loaded, used and unloaded; RTLD_DEEPBIND on glibc."""

    def load(self, libc, args, allocator=None):
        prog = torture(f"dlopen-{libc}")
        env = {"ALLOCSCOPE_FREE_SIZES": "1"}
        run = self.run_recorded([prog] + args, f"dl-{libc}-{'-'.join(args)}-{allocator}.asp",
                                allocator=allocator, env=env)
        [j] = self.dumps(run, count=1)
        base_env = {"LD_PRELOAD": allocator_path(j)} if allocator else None
        plain = self.run_plain([prog] + args, env=base_env)
        self.assert_unchanged(plain, run, f"{libc} {args} {allocator}")
        return j, run

    def usable(self, run):
        line = [l for l in run.stdout.splitlines() if "usable size" in l][0]
        return int(line.rsplit(" ", 1)[1])

    def test_load_use_unload(self):
        for libc in LIBCS:
            with self.subTest(libc=libc):
                j, run = self.load(libc, ["plain"])
                self.assertEqual(sized_calls(j, "malloc", 1500), 4)
                self.assertEqual(sized_calls(j, "malloc", 6000), 100)
                self.assertEqual(sized_calls(j, "free", self.usable(run)), 100)

    def test_deepbind_frees_reach_the_shim(self):
        j, run = self.load("glibc", ["deepbind"])
        self.assertEqual(sized_calls(j, "malloc", 1500), 4)
        self.assertEqual(sized_calls(j, "malloc", 6000), 100)
        self.assertEqual(sized_calls(j, "free", self.usable(run)), 100)
        j, run = self.load("musl", ["deepbind"])  # no RTLD_DEEPBIND: runs on unchanged
        self.assertIn("unsupported", run.stdout)

    def test_deepbind_behind_another_allocator(self):
        # Alone, RTLD_DEEPBIND binds the library's malloc and free to libc, past jemalloc (its
        # blocks then come from glibc's heap: a usable size of 6008 rather than jemalloc's 6144).
        # The shim clears the flag on purpose, so that every call reaches it and the allocator
        # behind it: the one documented difference it makes to a program.
        prog = torture("dlopen-glibc")
        env = {"ALLOCSCOPE_FREE_SIZES": "1"}
        run = self.run_recorded([prog, "deepbind"], "deep-je.asp", allocator="jemalloc", env=env)
        [j] = self.dumps(run, count=1)
        self.assertIn("jemalloc", allocator_path(j))
        plain = self.run_plain([prog, "plain"], env={"LD_PRELOAD": allocator_path(j)})
        self.assertEqual(run.rc, 0, run.stderr)
        self.assertEqual(self.usable(run), self.usable(plain))  # jemalloc's blocks, as without DEEPBIND
        self.assertEqual(sized_calls(j, "malloc", 6000), 100)
        self.assertEqual(sized_calls(j, "free", self.usable(run)), 100)

    def test_load_unload_cycles(self):
        for libc in LIBCS:
            with self.subTest(libc=libc):
                j, run = self.load(libc, ["cycle", "50"])
                loads = 50 if libc == "glibc" else 1  # musl never unloads: one constructor run
                self.assertEqual(sized_calls(j, "malloc", 1500), 4 * loads)
                self.assertEqual(sized_calls(j, "malloc", 6000), 500)
                self.assertEqual(sized_calls(j, "malloc", 700), 6 * loads)


class StartAndEnd(RobustnessCase):
    """Allocations before any constructor, and in atexit handlers and destructors."""

    def order(self, libc, mode):
        prog = torture(f"order-{libc}")
        plain = self.run_plain([prog, mode])
        run = self.run_recorded([prog, mode], f"order-{libc}-{mode}.asp")
        self.assert_unchanged(plain, run, f"{libc} {mode}")
        [j] = self.dumps(run, count=1)
        self.assertTrue(j["process"]["complete"])
        if "preinit ran: yes" in run.stdout:
            self.assertEqual(sized_calls(j, "malloc", 950), 1)  # before any constructor
        self.assertEqual(sized_calls(j, "malloc", 1700), 3)  # a DT_NEEDED library's constructor
        return j, run

    def test_teardown_order_and_counts(self):
        for libc in LIBCS:
            with self.subTest(libc=libc):
                j, run = self.order(libc, "return")
                lines = [l for l in run.stdout.splitlines() if l.startswith("order: ")]
                self.assertEqual(lines[1:3], ["order: atexit B", "order: atexit A"])
                # atexit handlers run before any library's destructor, the shim's included.
                self.assertEqual(sized_calls(j, "malloc", 1100), 4)
                self.assertEqual(sized_calls(j, "malloc", 3900), 3)
                self.assertEqual(j["process"]["exit_kind"], "exit")
                # Destructors that run after the shim's own final flush are forwarded (and not
                # recorded); those before it are.
                self.assertLessEqual(sized_calls(j, "malloc", 600), 5)
                self.assertLessEqual(sized_calls(j, "malloc", 2700), 2)

    def test_underscore_exit(self):
        for libc in LIBCS:
            with self.subTest(libc=libc):
                j, _ = self.order(libc, "_exit")
                self.assertEqual(j["process"]["exit_kind"], "_exit")
                self.assertEqual(sized_calls(j, "malloc", 1100), 0)


class Requests(RobustnessCase):
    """Huge and failing requests, errno, realloc(NULL, n), realloc(p, 0), free(NULL), usable sizes."""

    def requests(self, libc, allocator=None):
        prog = torture(f"requests-{libc}")
        run = self.run_recorded([prog], f"req-{libc}-{allocator}.asp", allocator=allocator)
        [j] = self.dumps(run, count=1)
        plain = self.run_plain([prog], env={"LD_PRELOAD": allocator_path(j)} if allocator else None)
        self.assert_unchanged(plain, run, f"{libc} {allocator}")
        self.assertIn("requests: done", run.stdout)
        self.assertIn("errno after successful calls: sentinel", run.stdout)
        self.assertEqual(failed(j, "malloc"), 3)
        self.assertEqual(failed(j, "calloc"), 1)
        self.assertEqual(failed(j, "realloc"), 1)
        self.assertEqual(failed(j, "reallocarray"), 1)
        self.assertEqual(failed(j, "posix_memalign"), 2)
        self.assertEqual(failed(j, "aligned_alloc"), 1)
        return j, run

    def test_each_libc(self):
        for libc in LIBCS:
            with self.subTest(libc=libc):
                self.requests(libc)

    def test_each_allocator(self):
        for allocator in EXTRA_ALLOCATORS:
            with self.subTest(allocator=allocator):
                self.requests("glibc", allocator)

    def test_an_allocator_that_leaves_malloc_usable_size_to_the_libc(self):
        """libcache_alloc.so defines malloc, free, calloc and realloc on top of glibc's and leaves
        malloc_usable_size to glibc, which its own realloc calls to copy a block: the program, and
        that realloc, get glibc's answer, as without the shim (they once got 0, and realloc copied
        nothing: perl, python and git crashed or failed under it)."""
        lib = os.path.join(BUILD, "tests", "allocators", "libcache_alloc.so")
        self.assertTrue(os.path.exists(lib), f"{lib}: the test allocators are part of the build")
        prog = torture("requests-glibc")
        run = self.run_recorded([prog], "req-cache.asp", allocator=lib)
        plain = self.run_plain([prog], env={"LD_PRELOAD": lib})
        self.assert_unchanged(plain, run, "libcache_alloc.so")
        self.assertIn("requests: done", run.stdout)
        self.assertRegex(run.stdout, r"realloc\(NULL, 200\): \S+ usable [1-9]")


class Crashes(RobustnessCase):
    """abort, SIGSEGV, SIGKILL, _exit while threads allocate: the profile reads up to its last
    flushed chunk."""

    def test_abrupt_ends(self):
        for libc in LIBCS:
            for mode, rc in (("abort", 134), ("segv", 139), ("kill", 137), ("_exit", 9)):
                with self.subTest(libc=libc, mode=mode):
                    prog = torture(f"crash-{libc}")
                    plain = self.run_plain([prog, mode])
                    run = self.run_recorded([prog, mode], f"crash-{libc}-{mode}.asp")
                    self.assert_unchanged(plain, run)
                    self.assertEqual(run.rc, rc)
                    [j] = self.dumps(run, count=1)
                    self.assertEqual(j["process"]["complete"], mode == "_exit")
                    # The workers ran for 600 ms: their periodic flushes are in the file.
                    workers = [t for t in j["threads"] if t["tid"] != j["process"]["pid"]]
                    self.assertEqual(len(workers), 2)
                    for t in workers:
                        self.assertGreater(t["totals"]["malloc"]["calls"], 1000)


class Cxx(RobustnessCase):
    """new/delete, exceptions, thread_local and static destructors, with every allocator."""

    def test_alone_and_behind_each_allocator(self):
        prog = torture("cxx-glibc")
        for allocator in (None,) + EXTRA_ALLOCATORS:
            for args in ([], ["no-failing-new"]):
                with self.subTest(allocator=allocator, args=args):
                    run = self.run_recorded([prog] + args, f"cxx-{allocator}-{len(args)}.asp",
                                            allocator=allocator)
                    [j] = self.dumps(run, count=1)
                    env = {"LD_PRELOAD": allocator_path(j)} if allocator else None
                    plain = self.run_plain([prog] + args, env=env)
                    self.assert_unchanged(plain, run, str(allocator))
                    if allocator in ("mimalloc", "scudo") and not args:
                        continue  # they end the process on a failed new, shim or not
                    self.assertIn("cxx: done", run.stdout)
                    self.assertNotIn("FAILED", run.stdout)
                    self.assertTrue(j["process"]["complete"])
                    if allocator is None:
                        self.assertGreater(calls(j, "malloc"), 16000)  # one per exception


if __name__ == "__main__":
    unittest.main()
