/* libbiglock_alloc.so — forwards the malloc family to glibc, with ONE global mutex held around the
 * calls for requests of 4 KiB or more (and the frees and reallocs of blocks that large) and no lock
 * for the smaller ones: one lock on the large sizes' path, as allocators take one for their large
 * or mmapped blocks.  Ground truth: contention in places, never one global lock.  fork() takes the
 * lock first. */
#include <pthread.h>
#include <stddef.h>

#define BIG 4096

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static __thread int next_big, locked;

static void family_enter(void) {
  if (next_big) {
    pthread_mutex_lock(&lock);
    locked = 1;
  }
}
static void family_leave(void) {
  if (locked) {
    locked = 0;
    pthread_mutex_unlock(&lock);
  }
}
static void family_before_malloc(size_t n) { next_big = n >= BIG; }
#define FAMILY_CLASS_OF_REQUEST(n) (next_big = (n) >= BIG)
#define FAMILY_CLASS_OF_BLOCK(p) (next_big = (p) ? malloc_usable_size_of(p) >= BIG : 0)

static void family_before_fork(void) { pthread_mutex_lock(&lock); }
static void family_after_fork(void) { pthread_mutex_unlock(&lock); }

#define FAMILY_FORK_LOCKS
#include "family.h"
