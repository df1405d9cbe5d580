/* libforward_only.so — the cheapest possible interposer, as a reference for bench/overhead.
 *
 * It forwards malloc, free, calloc and realloc to the next definition (dlsym(RTLD_NEXT)) and does
 * nothing else: whatever a preloaded profiler costs beyond this, its bookkeeping costs.  Like the
 * shim it is linked without a libc (dlsym binds to the process's own), so it loads into glibc and
 * musl programs alike.  Not a tool: it serves the stress harness, which uses only these four.
 */
#include <stddef.h>

#define RTLD_NEXT ((void *)-1l)
void *dlsym(void *handle, const char *name);

static void *(*next_malloc)(size_t);
static void (*next_free)(void *);
static void *(*next_calloc)(size_t, size_t);
static void *(*next_realloc)(void *, size_t);

/* dlsym may allocate while it resolves: those requests come from here and are never freed. */
static _Alignas(16) unsigned char pool[64 * 1024];
static size_t pool_used;
static int resolving;

static void *from_pool(size_t n) {
  size_t at = pool_used;
  n = (n + 15) & ~(size_t)15;
  if (n > sizeof pool - at) return NULL;
  pool_used = at + n;
  for (size_t i = 0; i < n; i++) pool[at + i] = 0;
  return pool + at;
}

static int in_pool(const void *p) {
  return (const unsigned char *)p >= pool && (const unsigned char *)p < pool + sizeof pool;
}

static int resolve(void) {
  if (next_free) return 1;
  if (resolving) return 0;
  resolving = 1;
  next_malloc = (void *(*)(size_t))dlsym(RTLD_NEXT, "malloc");
  next_calloc = (void *(*)(size_t, size_t))dlsym(RTLD_NEXT, "calloc");
  next_realloc = (void *(*)(void *, size_t))dlsym(RTLD_NEXT, "realloc");
  next_free = (void (*)(void *))dlsym(RTLD_NEXT, "free");
  resolving = 0;
  return next_free != NULL;
}

__attribute__((visibility("default"))) void *malloc(size_t n) {
  return resolve() ? next_malloc(n) : from_pool(n);
}

__attribute__((visibility("default"))) void free(void *p) {
  if (in_pool(p) || !resolve()) return;
  next_free(p);
}

__attribute__((visibility("default"))) void *calloc(size_t n, size_t size) {
  size_t total;
  if (!resolve()) return __builtin_mul_overflow(n, size, &total) ? NULL : from_pool(total);
  return next_calloc(n, size);
}

__attribute__((visibility("default"))) void *realloc(void *p, size_t n) {
  if (in_pool(p) || !resolve()) {
    void *q = resolve() ? next_malloc(n) : from_pool(n);
    if (q && p) {
      const unsigned char *from = p;
      unsigned char *to = q;
      size_t left = (size_t)(pool + sizeof pool - from);
      for (size_t i = 0; i < n && i < left; i++) to[i] = from[i];
    }
    return q;
  }
  return next_realloc(p, n);
}
