/* libspinlock_alloc.so — forwards the malloc family to glibc through ONE global spin lock, held
 * around every call of the real function: an allocator whose threads serialize completely, like
 * libmutex_alloc.so, but whose waiters never enter the kernel.  The lock is a test-and-test-and-set
 * on an atomic int: a waiter reads the lock until it looks free (a `pause` in each turn of the
 * loop), then tries to take it with one atomic exchange.  No system call, no sched_yield, no futex:
 * a waiting thread burns its CPU, so contention shows as time inside the allocator and never as
 * blocked time.  fork() takes the lock first, so the child never inherits it held by a thread that
 * no longer exists. */
#include <pthread.h>
#include <stddef.h>

static int lock; /* 0 free, 1 held; atomic */

static inline void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  __asm__ __volatile__("yield" ::: "memory");
#else
  __asm__ __volatile__("" ::: "memory");
#endif
}

static void spin_lock(void) {
  for (;;) {
    if (!__atomic_exchange_n(&lock, 1, __ATOMIC_ACQUIRE)) return;
    while (__atomic_load_n(&lock, __ATOMIC_RELAXED)) cpu_relax();
  }
}

static void spin_unlock(void) { __atomic_store_n(&lock, 0, __ATOMIC_RELEASE); }

static void family_enter(void) { spin_lock(); }
static void family_leave(void) { spin_unlock(); }
static void family_before_malloc(size_t n) { (void)n; }

static void family_before_fork(void) { spin_lock(); }
static void family_after_fork(void) { spin_unlock(); }

#define FAMILY_FORK_LOCKS
#include "family.h"
