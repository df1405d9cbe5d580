/* libcache_alloc.so — a thread cache in front of glibc's allocator, refilled and drained under ONE
 * global mutex, as allocators with per-thread caches refill them from a shared heap: requests up to
 * 1 KiB are served from the calling thread's cache of their power-of-two class (up to 64 blocks
 * each); an empty cache takes the mutex and allocates 32 blocks at once, a full one takes it and
 * frees 32.  So one lock serves every size, but at most about one call in 32 takes it.  Ground truth
 * by workload: where each thread frees its own blocks (the stress harness) the lock is seldom taken
 * and never the bottleneck — not `global_lock`; where one thread frees what another allocated
 * (producer/consumer) every 32nd call of each takes it, for 32 of glibc's calls, and threads
 * sleep on it behind every size: `global_lock`, `partial` or `unsure`, never `none`.
 *
 *   CACHE_ALLOC_BATCH=n   blocks per refill and per drain, 1..64 (default 32)
 *   CACHE_ALLOC_STATS=1   at exit, print on stderr how often the mutex was taken and how often,
 *                         and how long, a thread found it held and waited:
 *                         "cache_alloc: taken=N waited=M wait_ns=W"
 *                         (with CACHE_ALLOC_LOCK=futex, then " futex_sleeps=S": the futex waits
 *                         that slept until woken, or were interrupted)
 *   CACHE_ALLOC_LOCK=futex   the lock is a futex word of the allocator's own (0 free, 1 taken, 2 taken
 *                         with waiters), its waits made through the C library's syscall(), as
 *                         allocators with locks of their own do, instead of a pthread mutex
 *
 * Larger requests and the aligned family go straight to glibc.  A thread's cached blocks stay
 * cached when it exits (a test allocator: they are not handed to other threads).  fork() takes the
 * mutex first, so the child never inherits it held. */
#include <errno.h>
#include <linux/futex.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/syscall.h>
#include <unistd.h>

#define EXPORT __attribute__((visibility("default")))
#define CLASSES 7   /* 16, 32, 64, 128, 256, 512, 1024 B */
#define CAPACITY 64

extern void *__libc_malloc(size_t);
extern void __libc_free(void *);
extern void *__libc_memalign(size_t, size_t);
extern void *__libc_valloc(size_t);
extern void *__libc_pvalloc(size_t);
extern size_t malloc_usable_size(void *);

static pthread_mutex_t heap = PTHREAD_MUTEX_INITIALIZER;
static int heap_word;    /* CACHE_ALLOC_LOCK=futex: the lock instead of `heap` */
static int futex_mode = -1;
static int batch = -1;
static uint64_t taken, waited, wait_ns, futex_sleeps; /* under the lock */

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int use_futex(void) {
  int m = __atomic_load_n(&futex_mode, __ATOMIC_RELAXED);
  if (m < 0) {
    const char *s = getenv("CACHE_ALLOC_LOCK");
    m = s && strcmp(s, "futex") == 0;
    __atomic_store_n(&futex_mode, m, __ATOMIC_RELAXED);
  }
  return m;
}

/* The futex lock (Drepper's third mutex): returns the futex waits that slept. */
static uint64_t futex_lock(void) {
  int c = __atomic_exchange_n(&heap_word, 2, __ATOMIC_ACQUIRE);
  uint64_t sleeps = 0;
  const int saved = errno;
  while (c != 0) {
    if (syscall(SYS_futex, &heap_word, FUTEX_WAIT_PRIVATE, 2, NULL, NULL, 0) == 0 || errno == EINTR) sleeps++;
    c = __atomic_exchange_n(&heap_word, 2, __ATOMIC_ACQUIRE);
  }
  errno = saved;
  return sleeps;
}

static void heap_unlock(void) {
  if (!use_futex()) {
    pthread_mutex_unlock(&heap);
    return;
  }
  if (__atomic_fetch_sub(&heap_word, 1, __ATOMIC_RELEASE) != 1) {
    __atomic_store_n(&heap_word, 0, __ATOMIC_RELEASE);
    const int saved = errno;
    syscall(SYS_futex, &heap_word, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
    errno = saved;
  }
}

/* Takes the lock, counting the times it was held by another thread and how long they waited. */
static void take_heap(void) {
  if (use_futex()) {
    int expected = 0;
    if (__atomic_compare_exchange_n(&heap_word, &expected, 1, 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED)) {
      taken++;
      return;
    }
    const uint64_t t0 = now_ns();
    const uint64_t sleeps = futex_lock();
    taken++;
    waited++;
    wait_ns += now_ns() - t0;
    futex_sleeps += sleeps;
    return;
  }
  if (pthread_mutex_trylock(&heap) == 0) {
    taken++;
    return;
  }
  const uint64_t t0 = now_ns();
  pthread_mutex_lock(&heap);
  taken++;
  waited++;
  wait_ns += now_ns() - t0;
}

struct cache {
  unsigned count;
  void *blocks[CAPACITY];
};
/* initial-exec: a preloaded library's TLS is static, and the general model could call malloc. */
static __thread struct cache caches[CLASSES] __attribute__((tls_model("initial-exec")));

static int batch_size(void) {
  int b = __atomic_load_n(&batch, __ATOMIC_RELAXED);
  if (b < 0) {
    const char *s = getenv("CACHE_ALLOC_BATCH");
    b = s ? atoi(s) : 32;
    if (b < 1) b = 1;
    if (b > CAPACITY) b = CAPACITY;
    __atomic_store_n(&batch, b, __ATOMIC_RELAXED);
  }
  return b;
}

/* The class a request of n bytes is served from (its power of two, 16 B at least), or -1. */
static int class_of_request(size_t n) {
  int c = 0;
  size_t size = 16;
  while (size < n) {
    size <<= 1;
    if (++c >= CLASSES) return -1;
  }
  return c;
}

/* The largest class a block of `usable` bytes can serve, or -1. */
static int class_of_block(size_t usable) {
  if (usable < 16) return -1;
  int c = 0;
  while (c + 1 < CLASSES && ((size_t)16 << (c + 1)) <= usable) ++c;
  return usable > ((size_t)16 << (CLASSES - 1)) * 2 ? -1 : c;
}

EXPORT void *malloc(size_t n) {
  const int c = class_of_request(n);
  if (c < 0) return __libc_malloc(n);
  struct cache *k = &caches[c];
  if (k->count == 0) {
    const int b = batch_size();
    take_heap();
    while (k->count < (unsigned)b) {
      void *p = __libc_malloc((size_t)16 << c);
      if (!p) break;
      k->blocks[k->count++] = p;
    }
    heap_unlock();
    if (k->count == 0) return NULL;
  }
  return k->blocks[--k->count];
}

EXPORT void free(void *p) {
  if (!p) return;
  const int c = class_of_block(malloc_usable_size(p));
  if (c < 0) {
    __libc_free(p);
    return;
  }
  struct cache *k = &caches[c];
  if (k->count == CAPACITY) {
    const int b = batch_size();
    take_heap();
    for (int i = 0; i < b; ++i) __libc_free(k->blocks[--k->count]);
    heap_unlock();
  }
  k->blocks[k->count++] = p;
}

/* Through a pointer: the compiler would turn malloc-then-memset into a call of calloc, this one. */
static void *(*volatile zero)(void *, int, size_t) = memset;

EXPORT void *calloc(size_t n, size_t size) {
  if (size && n > SIZE_MAX / size) return NULL;
  void *p = malloc(n * size);
  if (p) zero(p, 0, n * size);
  return p;
}

EXPORT void *realloc(void *p, size_t n) {
  if (!p) return malloc(n);
  if (n == 0) {
    free(p);
    return NULL;
  }
  const size_t have = malloc_usable_size(p);
  if (n <= have) return p;
  void *q = malloc(n);
  if (q) {
    memcpy(q, p, have);
    free(p);
  }
  return q;
}

EXPORT void *memalign(size_t a, size_t n) { return __libc_memalign(a, n); }
EXPORT void *aligned_alloc(size_t a, size_t n) { return __libc_memalign(a, n); }
EXPORT int posix_memalign(void **out, size_t a, size_t n) {
  if (a % sizeof(void *) != 0 || (a & (a - 1)) != 0) return EINVAL;
  void *p = __libc_memalign(a, n);
  if (!p) return ENOMEM;
  *out = p;
  return 0;
}
EXPORT void *valloc(size_t n) { return __libc_valloc(n); }
EXPORT void *pvalloc(size_t n) { return __libc_pvalloc(n); }

static void before_fork(void) {
  if (use_futex()) futex_lock();
  else pthread_mutex_lock(&heap);
}
static void after_fork(void) { heap_unlock(); }
__attribute__((constructor)) static void register_fork_handlers(void) {
  pthread_atfork(before_fork, after_fork, after_fork);
}

__attribute__((destructor)) static void print_stats(void) {
  const char *s = getenv("CACHE_ALLOC_STATS");
  if (!s || strcmp(s, "1") != 0) return;
  before_fork();
  char line[200];
  char sleeps[48] = "";
  if (use_futex()) snprintf(sleeps, sizeof sleeps, " futex_sleeps=%llu", (unsigned long long)futex_sleeps);
  const int n = snprintf(line, sizeof line, "cache_alloc: taken=%llu waited=%llu wait_ns=%llu%s\n",
                         (unsigned long long)taken, (unsigned long long)waited, (unsigned long long)wait_ns, sleeps);
  heap_unlock();
  if (n > 0 && write(2, line, (size_t)n) < 0) return;
}
