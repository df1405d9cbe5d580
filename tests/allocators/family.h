/* family.h — the whole malloc family, forwarded to glibc's allocator, for the test allocators.
 *
 * A test allocator is one C file that defines three hooks and then includes this header:
 *
 *   static void family_enter(void);              before every forwarded call
 *   static void family_leave(void);              after it
 *   static void family_before_malloc(size_t n);  before family_enter() in malloc only
 *
 * Every function calls glibc's own implementation: __libc_malloc & co where glibc exports one
 * (no symbol lookup, so they work from the first call on), the real posix_memalign,
 * aligned_alloc and malloc_usable_size through dlsym(RTLD_NEXT) otherwise.  Those are looked up
 * before family_enter(): dlsym may allocate, and must not do so inside the hooks.  None of the
 * real functions called calls back into this family (a mutex in the hooks never nests).
 * Build with -fvisibility=hidden: only the family below is exported.
 */
#ifndef ALLOCSCOPE_TEST_ALLOCATOR_FAMILY_H
#define ALLOCSCOPE_TEST_ALLOCATOR_FAMILY_H

#include <dlfcn.h>
#include <errno.h>
#include <stddef.h>
#include <stdint.h>

#define FAMILY_EXPORT __attribute__((visibility("default")))

/* glibc's implementations (exported by libc.so.6 since 2.2.5). */
extern void *__libc_malloc(size_t);
extern void __libc_free(void *);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void *__libc_memalign(size_t, size_t);
extern void *__libc_valloc(size_t);
extern void *__libc_pvalloc(size_t);

static void family_enter(void);
static void family_leave(void);
static void family_before_malloc(size_t n);

/* The next definition of `name` after this library: glibc's.  Racing first calls store the
 * same value. */
static void *family_next(void *volatile *slot, const char *name) {
  void *fn = __atomic_load_n(slot, __ATOMIC_ACQUIRE);
  if (!fn) {
    fn = dlsym(RTLD_NEXT, name);
    __atomic_store_n(slot, fn, __ATOMIC_RELEASE);
  }
  return fn;
}

typedef int posix_memalign_fn(void **, size_t, size_t);
typedef void *aligned_alloc_fn(size_t, size_t);
typedef size_t malloc_usable_size_fn(void *);

/* Declares real_<name>, glibc's <name> (of type <name>_fn). */
#define FAMILY_NEXT(name)                    \
  static void *volatile family_next_##name; \
  name##_fn *real_##name = (name##_fn *)family_next(&family_next_##name, #name)

/* Optional hooks a test allocator may define before including this header: what a call is
 * about, set before family_enter() — the request's size, or the block a free releases. */
#ifndef FAMILY_CLASS_OF_REQUEST
#define FAMILY_CLASS_OF_REQUEST(n) ((void)0)
#endif
#ifndef FAMILY_CLASS_OF_BLOCK
#define FAMILY_CLASS_OF_BLOCK(p) ((void)0)
#endif

/* Optional: an allocator whose hooks take locks defines FAMILY_FORK_LOCKS and two functions,
 *
 *   static void family_before_fork(void);  takes every lock
 *   static void family_after_fork(void);   releases them (in the parent and in the child)
 *
 * registered here with pthread_atfork, so that a child never inherits a lock held by a thread that
 * no longer exists. */
#ifdef FAMILY_FORK_LOCKS
#include <pthread.h>
static void family_before_fork(void);
static void family_after_fork(void);
__attribute__((constructor)) static void family_register_fork_handlers(void) {
  pthread_atfork(family_before_fork, family_after_fork, family_after_fork);
}
#endif

/* The usable size of a block, from glibc, outside the hooks. */
__attribute__((unused)) static size_t malloc_usable_size_of(void *p) {
  FAMILY_NEXT(malloc_usable_size);
  return real_malloc_usable_size(p);
}

FAMILY_EXPORT void *malloc(size_t n) {
  family_before_malloc(n);
  family_enter();
  void *p = __libc_malloc(n);
  family_leave();
  return p;
}

FAMILY_EXPORT void free(void *p) {
  FAMILY_CLASS_OF_BLOCK(p);
  family_enter();
  __libc_free(p);
  family_leave();
}

FAMILY_EXPORT void *calloc(size_t n, size_t size) {
  FAMILY_CLASS_OF_REQUEST(n * size);
  family_enter();
  void *p = __libc_calloc(n, size);
  family_leave();
  return p;
}

FAMILY_EXPORT void *realloc(void *old, size_t n) {
  FAMILY_CLASS_OF_REQUEST(n);
  family_enter();
  void *p = __libc_realloc(old, n);
  family_leave();
  return p;
}

/* glibc's reallocarray calls realloc through the PLT, i.e. the realloc above: it is restated
 * here (overflow: ENOMEM) so that the hooks never nest. */
FAMILY_EXPORT void *reallocarray(void *old, size_t n, size_t size) {
  size_t bytes;
  if (__builtin_mul_overflow(n, size, &bytes)) {
    errno = ENOMEM;
    return NULL;
  }
  FAMILY_CLASS_OF_REQUEST(bytes);
  family_enter();
  void *p = __libc_realloc(old, bytes);
  family_leave();
  return p;
}

FAMILY_EXPORT int posix_memalign(void **out, size_t alignment, size_t n) {
  FAMILY_NEXT(posix_memalign);
  FAMILY_CLASS_OF_REQUEST(n);
  family_enter();
  int rc = real_posix_memalign(out, alignment, n);
  family_leave();
  return rc;
}

FAMILY_EXPORT void *aligned_alloc(size_t alignment, size_t n) {
  FAMILY_NEXT(aligned_alloc);
  FAMILY_CLASS_OF_REQUEST(n);
  family_enter();
  void *p = real_aligned_alloc(alignment, n);
  family_leave();
  return p;
}

FAMILY_EXPORT void *memalign(size_t alignment, size_t n) {
  FAMILY_CLASS_OF_REQUEST(n);
  family_enter();
  void *p = __libc_memalign(alignment, n);
  family_leave();
  return p;
}

FAMILY_EXPORT void *valloc(size_t n) {
  FAMILY_CLASS_OF_REQUEST(n);
  family_enter();
  void *p = __libc_valloc(n);
  family_leave();
  return p;
}

FAMILY_EXPORT void *pvalloc(size_t n) {
  FAMILY_CLASS_OF_REQUEST(n);
  family_enter();
  void *p = __libc_pvalloc(n);
  family_leave();
  return p;
}

FAMILY_EXPORT size_t malloc_usable_size(void *p) {
  FAMILY_NEXT(malloc_usable_size);
  FAMILY_CLASS_OF_BLOCK(p);
  family_enter();
  size_t n = real_malloc_usable_size(p);
  family_leave();
  return n;
}

#endif
