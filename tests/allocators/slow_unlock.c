/* libslow_unlock.so: pthread_mutex_unlock (and pthread_mutex_trylock) spend a known time on the
 * CPU, then forward.
 *
 * Preloaded after the shim (allocscope record --allocator), it stands for a lock whose calls burn
 * CPU time (musl's unlock with waiters wakes one: a system call): every pthread_mutex_unlock first
 * spins until the calling thread's CPU clock has advanced SLOW_UNLOCK_US microseconds (default
 * 100), then calls the C library's.  pthread_mutex_trylock, which the shim's traced
 * pthread_mutex_lock calls first, spins about SLOW_TRYLOCK_US (default 0) too, but on the TSC (x86-64
 * only): its time is then spent in this function's own code, where the CPU samples find a trylock
 * by the address they interrupt; the CPU time the spins took in all is printed on stderr at exit
 * (slow_unlock: trylock_cpu_ns=N).  The CPU time
 * inside lock calls is then known.  Nothing else is changed. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#if defined(__x86_64__)
#include <x86intrin.h>
#endif

static int (*real_unlock)(pthread_mutex_t*);
static int (*real_trylock)(pthread_mutex_t*);
static long spin_ns, trylock_spin_ns;

/* Both are set when the library loads, before any thread of the program can call in (set on a
 * thread's first call instead, a second thread could read the function before the spin). */
__attribute__((constructor)) static void slow_unlock_init(void) {
  real_unlock = (int (*)(pthread_mutex_t*))dlsym(RTLD_NEXT, "pthread_mutex_unlock");
  real_trylock = (int (*)(pthread_mutex_t*))dlsym(RTLD_NEXT, "pthread_mutex_trylock");
  const char* v = getenv("SLOW_UNLOCK_US");
  spin_ns = (v ? atol(v) : 100) * 1000;
  const char* t = getenv("SLOW_TRYLOCK_US");
  trylock_spin_ns = (t ? atol(t) : 0) * 1000;
}

static uint64_t thread_cpu_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

__attribute__((visibility("default"))) int pthread_mutex_unlock(pthread_mutex_t* m) {
  if (__builtin_expect(real_unlock == NULL, 0)) slow_unlock_init();  /* called before the constructor ran */
  const uint64_t start = thread_cpu_ns();
  while (thread_cpu_ns() - start < (uint64_t)spin_ns) {
  }
  return real_unlock(m);
}

static uint64_t trylock_cpu_ns;  /* all threads' CPU time inside the spins of pthread_mutex_trylock */
static double tsc_per_ns;        /* measured when the library loads */
static uint64_t clock_read_ns;   /* what one read of the thread's CPU clock costs (a system call) */

/* The truth for the test: printed when the program exits. */
__attribute__((destructor)) static void slow_unlock_report(void) {
  if (trylock_spin_ns > 0)
    fprintf(stderr, "slow_unlock: trylock_cpu_ns=%llu\n",
            (unsigned long long)__atomic_load_n(&trylock_cpu_ns, __ATOMIC_RELAXED));
}

#if defined(__x86_64__)
__attribute__((constructor)) static void slow_trylock_calibrate(void) {
  struct timespec a, b;
  clock_gettime(CLOCK_MONOTONIC, &a);
  const uint64_t t0 = __rdtsc();
  do clock_gettime(CLOCK_MONOTONIC, &b);
  while ((b.tv_sec - a.tv_sec) * 1000000000L + (b.tv_nsec - a.tv_nsec) < 5000000L);
  tsc_per_ns = (double)(__rdtsc() - t0) / ((b.tv_sec - a.tv_sec) * 1e9 + (b.tv_nsec - a.tv_nsec));
  const uint64_t c0 = thread_cpu_ns();
  for (int i = 0; i < 100; i++) thread_cpu_ns();
  clock_read_ns = (thread_cpu_ns() - c0) / 101;
}
#endif

/* A spin of SLOW_TRYLOCK_US × (0.5 to 1.5, drawn each call) on the TSC, in this function's own
 * code.  The lengths vary so that the rounds of a program that calls it in a loop have no period:
 * the samples come at clock ticks, and a program in step with them would be seen at a few phases
 * only.  The truth is the thread's CPU clock across the spin, less one read of that clock (half of
 * each of the two reads lies outside the spin, in the C library). */
__attribute__((visibility("default"))) int pthread_mutex_trylock(pthread_mutex_t* m) {
  if (__builtin_expect(real_trylock == NULL, 0)) slow_unlock_init();
#if defined(__x86_64__)
  if (trylock_spin_ns > 0 && tsc_per_ns > 0) {
    static __thread uint64_t x;
    if (x == 0) x = (uint64_t)(uintptr_t)&x | 1;
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    const double share = 0.5 + (double)(x >> 11) / (double)(1ull << 53);
    const uint64_t cycles = (uint64_t)(share * (double)trylock_spin_ns * tsc_per_ns);
    const uint64_t start = thread_cpu_ns();
    const uint64_t t0 = __rdtsc();
    while (__rdtsc() - t0 < cycles) __asm__ volatile("");  /* no pause: in a VM a pause loop may yield */
    const uint64_t spent = thread_cpu_ns() - start;
    __atomic_fetch_add(&trylock_cpu_ns, spent > clock_read_ns ? spent - clock_read_ns : 0, __ATOMIC_RELAXED);
  }
#endif
  return real_trylock(m);
}
