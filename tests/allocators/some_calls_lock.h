/* some_calls_lock.h — ONE global mutex held around the calls whose hooks set `lock_this_call`
 * before family_enter() (the allocator's rule of which calls take it), and no lock for the others.
 * fork() takes the lock first, so the child never inherits it held by a thread that no longer
 * exists.  Include before family.h, after defining the FAMILY_CLASS_OF_* hooks that set the flag. */
#ifndef ALLOCSCOPE_TEST_ALLOCATOR_SOME_CALLS_LOCK_H
#define ALLOCSCOPE_TEST_ALLOCATOR_SOME_CALLS_LOCK_H
#include <pthread.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static __thread int lock_this_call, locked;

static void family_enter(void) {
  if (lock_this_call) {
    pthread_mutex_lock(&lock);
    locked = 1;
  }
}
static void family_leave(void) {
  if (locked) {
    locked = 0;
    pthread_mutex_unlock(&lock);
  }
  lock_this_call = 0;
}

static void family_before_fork(void) { pthread_mutex_lock(&lock); }
static void family_after_fork(void) { pthread_mutex_unlock(&lock); }
#define FAMILY_FORK_LOCKS

#endif
