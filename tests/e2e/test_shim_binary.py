"""The preload library is libc-agnostic: it needs no libc by name and uses only symbols that both
glibc and musl export, so one file loads into glibc and musl processes alike."""
import glob
import os
import subprocess
import unittest

from allocscope_e2e import BUILD

SHIM = os.path.join(BUILD, "shim", "liballocscope.so")


def dynamic_symbols(path, undefined):
    flag = "--undefined-only" if undefined else "--defined-only"
    out = subprocess.run(["nm", "-D", flag, path], capture_output=True, text=True, check=True)
    names = set()
    for line in out.stdout.splitlines():
        parts = line.split()
        if not parts or (undefined and parts[0] == "w"):
            continue  # weak references may stay unresolved
        names.add(parts[-1].split("@")[0])
    return names


def libc_paths(test):
    """Both C libraries, or the test skips — except in CI (CI set), which installs both."""
    glibc = "/lib/x86_64-linux-gnu/libc.so.6"
    musl = (glob.glob("/lib/ld-musl-*.so.1") or [None])[0]
    if not os.path.exists(glibc) or musl is None:
        if os.environ.get("CI"):
            raise AssertionError("both glibc and musl are needed; CI must install musl (scripts/install-deps)")
        test.skipTest("both glibc and musl are needed")
    return glibc, musl


class ShimBinary(unittest.TestCase):
    def test_no_library_dependencies(self):
        out = subprocess.run(["readelf", "-d", SHIM], capture_output=True, text=True, check=True)
        self.assertNotIn("(NEEDED)", out.stdout)

    def test_undefined_symbols_exist_in_both_libcs(self):
        glibc, musl = libc_paths(self)
        needed = dynamic_symbols(SHIM, undefined=True)
        self.assertTrue(needed)
        for libc in (glibc, musl):
            missing = needed - dynamic_symbols(libc, undefined=False)
            self.assertEqual(missing, set(), f"not exported by {libc}")

    def test_exports_the_whole_family(self):
        exported = dynamic_symbols(SHIM, undefined=False)
        for name in ("malloc", "free", "calloc", "realloc", "reallocarray", "posix_memalign",
                     "aligned_alloc", "memalign", "valloc", "pvalloc", "malloc_usable_size",
                     "dlopen"):
            self.assertIn(name, exported)
        # operator new, new[], delete, delete[] with their nothrow, sized and align_val_t variants
        for name in ("_Znwm", "_ZnwmRKSt9nothrow_t", "_ZnwmSt11align_val_t",
                     "_ZnwmSt11align_val_tRKSt9nothrow_t", "_Znam", "_ZnamRKSt9nothrow_t",
                     "_ZnamSt11align_val_t", "_ZnamSt11align_val_tRKSt9nothrow_t",
                     "_ZdlPv", "_ZdlPvRKSt9nothrow_t", "_ZdlPvm", "_ZdlPvSt11align_val_t",
                     "_ZdlPvSt11align_val_tRKSt9nothrow_t", "_ZdlPvmSt11align_val_t",
                     "_ZdaPv", "_ZdaPvRKSt9nothrow_t", "_ZdaPvm", "_ZdaPvSt11align_val_t",
                     "_ZdaPvSt11align_val_tRKSt9nothrow_t", "_ZdaPvmSt11align_val_t"):
            self.assertIn(name, exported)

    def test_exports_the_signal_functions_that_both_libcs_define(self):
        """The shim's signal (holds, CPU samples) never reaches the program: the functions that set
        handlers, masks and waits are forwarded (dlsym RTLD_NEXT) to the C library's own."""
        exported = dynamic_symbols(SHIM, undefined=False)
        signals = {"sigaction", "signal", "pthread_sigmask", "sigprocmask", "sigwait", "sigwaitinfo", "sigtimedwait",
                   "signalfd"}
        self.assertEqual(signals - exported, set())
        glibc, musl = libc_paths(self)
        for libc in (glibc, musl):
            self.assertEqual(signals - dynamic_symbols(libc, undefined=False), set(), libc)

    def test_exports_the_lock_family_that_both_libcs_define(self):
        """record --locks: the shim's pthread lock functions forward (dlsym RTLD_NEXT) to the C
        library's own, and try first with the trylocks: every one must exist in both libcs."""
        exported = dynamic_symbols(SHIM, undefined=False)
        locks = {"pthread_mutex_lock", "pthread_mutex_timedlock", "pthread_mutex_unlock", "pthread_rwlock_rdlock",
                 "pthread_rwlock_wrlock", "pthread_rwlock_timedrdlock", "pthread_rwlock_timedwrlock",
                 "pthread_rwlock_unlock", "pthread_cond_wait", "pthread_cond_timedwait", "pthread_spin_lock",
                 "pthread_spin_unlock"}
        c11 = {"mtx_lock", "mtx_timedlock", "mtx_unlock", "cnd_wait", "cnd_timedwait"}
        # syscall(): an allocator's futex waits of its own (tcmalloc's, scudo's); forwarded likewise.
        self.assertIn("syscall", exported)
        # glibc's only (2.30 and later): C++'s timed waits call them; the shim forwards them where they exist.
        clock = {"pthread_mutex_clocklock", "pthread_rwlock_clockrdlock", "pthread_rwlock_clockwrlock",
                 "pthread_cond_clockwait"}
        self.assertEqual(locks | clock | {"pthread_sigmask"}, {name for name in exported if name.startswith("pthread_")})
        self.assertEqual(c11 - exported, set())
        forwarded = locks | c11 | {"syscall", "pthread_mutex_trylock", "pthread_rwlock_tryrdlock", "pthread_rwlock_trywrlock",
                                   "pthread_spin_trylock", "mtx_trylock"}
        glibc, musl = libc_paths(self)
        for libc in (glibc, musl):
            self.assertEqual(forwarded - dynamic_symbols(libc, undefined=False), set(), libc)
        self.assertEqual(clock - dynamic_symbols(glibc, undefined=False), set(), glibc)


if __name__ == "__main__":
    unittest.main()
