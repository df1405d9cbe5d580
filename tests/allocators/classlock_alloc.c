/* libclasslock_alloc.so — forwards the malloc family to glibc through one lock PER SIZE CLASS,
 * held around every call of the real function: calls of the same class exclude each other, calls
 * of different classes never do.  Contention in places, not one global lock: the shape the
 * contention verdict must call `partial` (or say it cannot tell), never `global_lock`.
 *
 *   CLASSLOCK_SPIN=1   spin locks (no system call while waiting) instead of pthread mutexes
 *
 * A class is the request's power of two (16-31 B, 32-63 B, …, everything from 2 KiB on in one);
 * free takes the lock of the block's usable size.  fork() takes every lock first, so the child
 * never inherits one held by a thread that no longer exists. */
#include <pthread.h>
#include <stddef.h>
#include <stdlib.h>

#define CLASSES 8

/* Each lock on a cache line of its own: locks that shared a line would slow each other's
 * holders (false sharing) without excluding them. */
struct lock {
  pthread_mutex_t mutex;
  int spin;
} __attribute__((aligned(64)));
static struct lock locks[CLASSES] = {
    {PTHREAD_MUTEX_INITIALIZER, 0}, {PTHREAD_MUTEX_INITIALIZER, 0}, {PTHREAD_MUTEX_INITIALIZER, 0},
    {PTHREAD_MUTEX_INITIALIZER, 0}, {PTHREAD_MUTEX_INITIALIZER, 0}, {PTHREAD_MUTEX_INITIALIZER, 0},
    {PTHREAD_MUTEX_INITIALIZER, 0}, {PTHREAD_MUTEX_INITIALIZER, 0}};
static int use_spin = -1;

/* The class each thread's current call holds: the family calls never nest (family.h). */
static __thread int held = -1;
static __thread int next_class;

static int class_of(size_t n) {
  int c = 0;
  for (size_t v = n >> 5; v && c < CLASSES - 1; v >>= 1) ++c;
  return c;
}

static int spin_mode(void) {
  int m = __atomic_load_n(&use_spin, __ATOMIC_RELAXED);
  if (m < 0) {
    const char *s = getenv("CLASSLOCK_SPIN");
    m = s && *s == '1';
    __atomic_store_n(&use_spin, m, __ATOMIC_RELAXED);
  }
  return m;
}

static void lock_class(int c) {
  if (spin_mode()) {
    while (__atomic_exchange_n(&locks[c].spin, 1, __ATOMIC_ACQUIRE)) {
      while (__atomic_load_n(&locks[c].spin, __ATOMIC_RELAXED)) __builtin_ia32_pause();
    }
  } else {
    pthread_mutex_lock(&locks[c].mutex);
  }
  held = c;
}

static void unlock_class(void) {
  const int c = held;
  held = -1;
  if (c < 0) return;
  if (spin_mode()) {
    __atomic_store_n(&locks[c].spin, 0, __ATOMIC_RELEASE);
  } else {
    pthread_mutex_unlock(&locks[c].mutex);
  }
}

/* Every call but free sets next_class from its request first (family_before_malloc for malloc,
 * family_class below for the rest); free from its block. */
static void family_enter(void) { lock_class(next_class); }
static void family_leave(void) { unlock_class(); }
static void family_before_malloc(size_t n) { next_class = class_of(n); }
#define FAMILY_CLASS_OF_REQUEST(n) (next_class = class_of(n))
#define FAMILY_CLASS_OF_BLOCK(p) (next_class = class_of((p) ? malloc_usable_size_of(p) : 0))

static void family_before_fork(void) {
  for (int c = 0; c < CLASSES; ++c) pthread_mutex_lock(&locks[c].mutex);
}
static void family_after_fork(void) {
  for (int c = CLASSES - 1; c >= 0; --c) pthread_mutex_unlock(&locks[c].mutex);
}

#define FAMILY_FORK_LOCKS
#include "family.h"
