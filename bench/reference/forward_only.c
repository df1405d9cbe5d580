/* libforward_only.so — the cheapest possible interposer, as a reference for bench/overhead.
 *
 * It forwards malloc, free, calloc and realloc, and the C++ operators new, new[], delete and
 * delete[] with every variant the shim interposes (nothrow, sized, aligned), to the next
 * definition (dlsym(RTLD_NEXT)) and does nothing else: whatever a preloaded profiler costs beyond
 * this, its bookkeeping costs.  Under libstdc++, whose operator new calls malloc, a C++
 * allocation crosses it twice, as it crosses the shim.  The other entry points (posix_memalign,
 * aligned_alloc, malloc_usable_size, ...) reach the C library directly.  Like the shim it is
 * linked without a libc (dlsym binds to the process's own), so it loads into glibc and musl
 * programs alike.  Not a tool: it serves bench/overhead.
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

/* The C++ operators, by their mangled names (x86-64 and every LP64 ABI: size_t is `m`). */
enum {
  NW, NW_NT, NW_AL, NW_AL_NT, NA, NA_NT, NA_AL, NA_AL_NT,
  DL, DL_NT, DL_SZ, DL_AL, DL_AL_NT, DL_SZ_AL,
  DA, DA_NT, DA_SZ, DA_AL, DA_AL_NT, DA_SZ_AL, N_CXX
};
static const char *const cxx_names[N_CXX] = {
    "_Znwm", "_ZnwmRKSt9nothrow_t", "_ZnwmSt11align_val_t", "_ZnwmSt11align_val_tRKSt9nothrow_t",
    "_Znam", "_ZnamRKSt9nothrow_t", "_ZnamSt11align_val_t", "_ZnamSt11align_val_tRKSt9nothrow_t",
    "_ZdlPv", "_ZdlPvRKSt9nothrow_t", "_ZdlPvm", "_ZdlPvSt11align_val_t",
    "_ZdlPvSt11align_val_tRKSt9nothrow_t", "_ZdlPvmSt11align_val_t",
    "_ZdaPv", "_ZdaPvRKSt9nothrow_t", "_ZdaPvm", "_ZdaPvSt11align_val_t",
    "_ZdaPvSt11align_val_tRKSt9nothrow_t", "_ZdaPvmSt11align_val_t"};
static void *cxx_next[N_CXX];
static int (*next_posix_memalign)(void **, size_t, size_t);
static int cxx_resolved;

/* Only a program that has a C++ runtime calls the operators; without one (a C++ library loaded
 * privately) they fall back to the C functions. */
static void resolve_cxx(void) {
  if (__atomic_load_n(&cxx_resolved, __ATOMIC_ACQUIRE)) return;
  resolve();
  for (int i = 0; i < N_CXX; i++) cxx_next[i] = dlsym(RTLD_NEXT, cxx_names[i]);
  next_posix_memalign = (int (*)(void **, size_t, size_t))dlsym(RTLD_NEXT, "posix_memalign");
  __atomic_store_n(&cxx_resolved, 1, __ATOMIC_RELEASE);
}

static void *fallback_aligned(size_t n, size_t align) {
  void *p = NULL;
  if (align < sizeof(void *)) align = sizeof(void *);
  return next_posix_memalign && next_posix_memalign(&p, align, n ? n : 1) == 0 ? p : NULL;
}

#define NEW_1(name, id)                                                          \
  __attribute__((visibility("default"))) void *name(size_t n) {                  \
    resolve_cxx();                                                               \
    if (cxx_next[id]) return ((void *(*)(size_t))cxx_next[id])(n);               \
    return malloc(n ? n : 1);                                                    \
  }
#define NEW_2(name, id, T)                                                       \
  __attribute__((visibility("default"))) void *name(size_t n, T a) {             \
    resolve_cxx();                                                               \
    if (cxx_next[id]) return ((void *(*)(size_t, T))cxx_next[id])(n, a);         \
    return malloc(n ? n : 1);                                                    \
  }
#define NEW_AL(name, id)                                                         \
  __attribute__((visibility("default"))) void *name(size_t n, size_t al) {       \
    resolve_cxx();                                                               \
    if (cxx_next[id]) return ((void *(*)(size_t, size_t))cxx_next[id])(n, al);   \
    return fallback_aligned(n, al);                                              \
  }
#define NEW_AL_NT(name, id)                                                               \
  __attribute__((visibility("default"))) void *name(size_t n, size_t al, const void *nt) { \
    resolve_cxx();                                                                        \
    if (cxx_next[id]) return ((void *(*)(size_t, size_t, const void *))cxx_next[id])(n, al, nt); \
    return fallback_aligned(n, al);                                                       \
  }
#define DEL_1(name, id)                                                          \
  __attribute__((visibility("default"))) void name(void *p) {                    \
    resolve_cxx();                                                               \
    if (cxx_next[id]) ((void (*)(void *))cxx_next[id])(p);                       \
    else free(p);                                                                \
  }
#define DEL_2(name, id, T)                                                       \
  __attribute__((visibility("default"))) void name(void *p, T a) {               \
    resolve_cxx();                                                               \
    if (cxx_next[id]) ((void (*)(void *, T))cxx_next[id])(p, a);                 \
    else free(p);                                                                \
  }
#define DEL_3(name, id, T)                                                       \
  __attribute__((visibility("default"))) void name(void *p, size_t a, T b) {     \
    resolve_cxx();                                                               \
    if (cxx_next[id]) ((void (*)(void *, size_t, T))cxx_next[id])(p, a, b);      \
    else free(p);                                                                \
  }

NEW_1(_Znwm, NW)
NEW_2(_ZnwmRKSt9nothrow_t, NW_NT, const void *)
NEW_AL(_ZnwmSt11align_val_t, NW_AL)
NEW_AL_NT(_ZnwmSt11align_val_tRKSt9nothrow_t, NW_AL_NT)
NEW_1(_Znam, NA)
NEW_2(_ZnamRKSt9nothrow_t, NA_NT, const void *)
NEW_AL(_ZnamSt11align_val_t, NA_AL)
NEW_AL_NT(_ZnamSt11align_val_tRKSt9nothrow_t, NA_AL_NT)
DEL_1(_ZdlPv, DL)
DEL_2(_ZdlPvRKSt9nothrow_t, DL_NT, const void *)
DEL_2(_ZdlPvm, DL_SZ, size_t)
DEL_2(_ZdlPvSt11align_val_t, DL_AL, size_t)
DEL_3(_ZdlPvSt11align_val_tRKSt9nothrow_t, DL_AL_NT, const void *)
DEL_3(_ZdlPvmSt11align_val_t, DL_SZ_AL, size_t)
DEL_1(_ZdaPv, DA)
DEL_2(_ZdaPvRKSt9nothrow_t, DA_NT, const void *)
DEL_2(_ZdaPvm, DA_SZ, size_t)
DEL_2(_ZdaPvSt11align_val_t, DA_AL, size_t)
DEL_3(_ZdaPvSt11align_val_tRKSt9nothrow_t, DA_AL_NT, const void *)
DEL_3(_ZdaPvmSt11align_val_t, DA_SZ_AL, size_t)
