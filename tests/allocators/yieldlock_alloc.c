/* libyieldlock_alloc.so — forwards the malloc family to glibc through ONE global lock whose waiters
 * give their CPU away: a thread that finds the lock taken calls sched_yield() and tries again, as
 * simple spin locks do once a few turns have failed (older tcmalloc's SpinLock, many hand-written
 * locks).  Every call holds it, so the threads serialize completely, yet no waiter ever sleeps in a
 * futex wait: it stays runnable, and the kernel counts its switches as involuntary ones, as if it
 * had been preempted.  fork() takes the lock first, so the child never inherits it held by a thread
 * that no longer exists. */
#include <pthread.h>
#include <sched.h>
#include <stddef.h>

static int lock; /* 0 free, 1 held; atomic */

static void yield_lock(void) {
  while (__atomic_exchange_n(&lock, 1, __ATOMIC_ACQUIRE)) sched_yield();
}
static void yield_unlock(void) { __atomic_store_n(&lock, 0, __ATOMIC_RELEASE); }

static void family_enter(void) { yield_lock(); }
static void family_leave(void) { yield_unlock(); }
static void family_before_malloc(size_t n) { (void)n; }

static void family_before_fork(void) { yield_lock(); }
static void family_after_fork(void) { yield_unlock(); }

#define FAMILY_FORK_LOCKS
#include "family.h"
