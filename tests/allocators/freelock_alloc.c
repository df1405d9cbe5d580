/* libfreelock_alloc.so — forwards the malloc family to glibc with ONE global mutex held around
 * every free (and malloc_usable_size) and no lock for malloc, calloc, realloc and the aligned
 * family: frees exclude each other, allocations never wait.  Threads that free between their
 * allocations then move in step, and their calls' ends keep apart as under one lock — yet an
 * allocation never takes it.  Ground truth: never one global lock.  fork() takes the lock first. */
#include <pthread.h>
#include <stddef.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static __thread int releasing, locked;

static void family_enter(void) {
  if (releasing) {
    pthread_mutex_lock(&lock);
    locked = 1;
  }
}
static void family_leave(void) {
  if (locked) {
    locked = 0;
    pthread_mutex_unlock(&lock);
  }
  releasing = 0;
}
static void family_before_malloc(size_t n) { (void)n; }
#define FAMILY_CLASS_OF_BLOCK(p) (releasing = 1)

static void family_before_fork(void) { pthread_mutex_lock(&lock); }
static void family_after_fork(void) { pthread_mutex_unlock(&lock); }

#define FAMILY_FORK_LOCKS
#include "family.h"
