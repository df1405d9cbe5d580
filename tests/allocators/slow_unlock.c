/* libslow_unlock.so: pthread_mutex_unlock spends a known time on the CPU, then forwards.
 *
 * Preloaded after the shim (allocscope record --allocator), it stands for a lock whose calls burn
 * CPU time (musl's unlock with waiters wakes one: a system call): every pthread_mutex_unlock first
 * spins until the calling thread's CPU clock has advanced SLOW_UNLOCK_US microseconds (default
 * 100), then calls the C library's.  The CPU time inside lock calls is then known: the unlocks
 * times SLOW_UNLOCK_US.  Nothing else is changed. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

static int (*real_unlock)(pthread_mutex_t*);
static long spin_ns;

/* Both are set when the library loads, before any thread of the program can call in (set on a
 * thread's first call instead, a second thread could read the function before the spin). */
__attribute__((constructor)) static void slow_unlock_init(void) {
  real_unlock = (int (*)(pthread_mutex_t*))dlsym(RTLD_NEXT, "pthread_mutex_unlock");
  const char* v = getenv("SLOW_UNLOCK_US");
  spin_ns = (v ? atol(v) : 100) * 1000;
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
