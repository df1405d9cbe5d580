/* libreadlock_alloc.so — forwards the malloc family to glibc under ONE global pthread rwlock taken
 * for READING around every call: no call ever excludes another (nothing takes it for writing), yet
 * every call changes the lock's reader count atomically, twice.  Like libcounter_alloc.so, the
 * calls take turns at one cache line without waiting for each other: ground truth, never one
 * global lock.  A lock that only readers take is a common shape (a table of arenas or size classes
 * read under a rwlock that only reconfiguration writes). */
#include <pthread.h>
#include <stddef.h>

static pthread_rwlock_t lock = PTHREAD_RWLOCK_INITIALIZER;

static void family_enter(void) { pthread_rwlock_rdlock(&lock); }
static void family_leave(void) { pthread_rwlock_unlock(&lock); }
static void family_before_malloc(size_t n) { (void)n; }

static void family_before_fork(void) { pthread_rwlock_wrlock(&lock); }
static void family_after_fork(void) { pthread_rwlock_unlock(&lock); }

#define FAMILY_FORK_LOCKS
#include "family.h"
