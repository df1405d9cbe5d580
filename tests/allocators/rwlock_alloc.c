/* librwlock_alloc.so — forwards the malloc family to glibc through ONE global pthread rwlock, taken
 * for writing around every call of the real function: a global lock of another kind than
 * libmutex_alloc.so's mutex (glibc's rwlock has a futex word of its own and wakes its waiters its
 * own way).  Ground truth: one global lock.  fork() takes the lock first, so the child never
 * inherits it held by a thread that no longer exists. */
#include <pthread.h>
#include <stddef.h>

static pthread_rwlock_t lock = PTHREAD_RWLOCK_INITIALIZER;

static void family_enter(void) { pthread_rwlock_wrlock(&lock); }
static void family_leave(void) { pthread_rwlock_unlock(&lock); }
static void family_before_malloc(size_t n) { (void)n; }

static void family_before_fork(void) { pthread_rwlock_wrlock(&lock); }
static void family_after_fork(void) { pthread_rwlock_unlock(&lock); }

#define FAMILY_FORK_LOCKS
#include "family.h"
