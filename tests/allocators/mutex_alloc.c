/* libmutex_alloc.so — forwards the malloc family to glibc through ONE global pthread mutex, held
 * around every call of the real function: an allocator whose threads serialize completely.  The
 * control is libnolock_alloc.so.  fork() takes the lock first, so the child never inherits it
 * held by a thread that no longer exists. */
#include <pthread.h>
#include <stddef.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

static void family_enter(void) { pthread_mutex_lock(&lock); }
static void family_leave(void) { pthread_mutex_unlock(&lock); }
static void family_before_malloc(size_t n) { (void)n; }

static void family_before_fork(void) { pthread_mutex_lock(&lock); }
static void family_after_fork(void) { pthread_mutex_unlock(&lock); }

#define FAMILY_FORK_LOCKS
#include "family.h"
