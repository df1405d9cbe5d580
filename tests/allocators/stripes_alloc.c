/* libstripes_alloc.so — forwards the malloc family to glibc through one of FOUR mutexes, each
 * thread bound to one in the order the threads first call (thread k takes lock k % 4): threads
 * exclude each other only when more than four share the locks, as threads share an allocator's
 * arenas.  Ground truth: contention in places, never one global lock (up to four threads, none).
 * fork() takes every lock first. */
#include <pthread.h>
#include <stddef.h>

#define STRIPES 4

/* Each lock on a cache line of its own (see classlock_alloc.c). */
struct stripe {
  pthread_mutex_t mutex;
} __attribute__((aligned(64)));
static struct stripe stripes[STRIPES] = {
    {PTHREAD_MUTEX_INITIALIZER}, {PTHREAD_MUTEX_INITIALIZER}, {PTHREAD_MUTEX_INITIALIZER}, {PTHREAD_MUTEX_INITIALIZER}};
static unsigned threads_seen;
static __thread int mine = -1;

static void family_enter(void) {
  if (mine < 0) mine = (int)(__atomic_fetch_add(&threads_seen, 1, __ATOMIC_RELAXED) % STRIPES);
  pthread_mutex_lock(&stripes[mine].mutex);
}
static void family_leave(void) { pthread_mutex_unlock(&stripes[mine].mutex); }
static void family_before_malloc(size_t n) { (void)n; }

static void family_before_fork(void) {
  for (int i = 0; i < STRIPES; ++i) pthread_mutex_lock(&stripes[i].mutex);
}
static void family_after_fork(void) {
  for (int i = STRIPES - 1; i >= 0; --i) pthread_mutex_unlock(&stripes[i].mutex);
}

#define FAMILY_FORK_LOCKS
#include "family.h"
