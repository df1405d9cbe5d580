/* sigsafe_alloc.c — an allocator that may be called from any signal handler at any moment:
 * blocks are cut from one reserved mapping by an atomic bump pointer and never reused (free does
 * nothing), so no call ever waits for another.  No libc: raw system calls only, like the shim, so
 * that it loads into glibc and musl programs alike.  For tests only (memory is never returned):
 * preloaded behind the shim, it lets a signal handler allocate while the interrupted thread is
 * inside the shim, and any hang that follows can only be the shim's.
 *
 * Every block has a 16-byte header holding its usable size; alignment up to 1 MiB is honoured.
 * Requests that do not fit in the 8 GiB reservation fail with ENOMEM.
 */
#include <stddef.h>
#include <stdint.h>

#define EXPORT __attribute__((visibility("default")))

extern int *__errno_location(void);

static long raw_mmap(size_t len) {
  long ret;
#if defined(__x86_64__)
  register long r10 __asm__("r10") = 0x22 | 0x4000;  /* MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE */
  register long r8 __asm__("r8") = -1;
  register long r9 __asm__("r9") = 0;
  __asm__ volatile("syscall" : "=a"(ret) : "a"(9), "D"(0), "S"(len), "d"(3), "r"(r10), "r"(r8), "r"(r9)
                   : "rcx", "r11", "memory");
#elif defined(__aarch64__)
  register long x8 __asm__("x8") = 222;
  register long x0 __asm__("x0") = 0;
  register long x1 __asm__("x1") = (long)len;
  register long x2 __asm__("x2") = 3;
  register long x3 __asm__("x3") = 0x22 | 0x4000;
  register long x4 __asm__("x4") = -1;
  register long x5 __asm__("x5") = 0;
  __asm__ volatile("svc 0" : "+r"(x0) : "r"(x8), "r"(x1), "r"(x2), "r"(x3), "r"(x4), "r"(x5) : "memory");
  ret = x0;
#else
#error "x86_64 and aarch64 only"
#endif
  return ret;
}

static const size_t kArena = (size_t)8 << 30;
static unsigned char *arena;
static size_t used;

static void set_errno(int e) { *__errno_location() = e; }

static unsigned char *get_arena(void) {
  unsigned char *a = __atomic_load_n(&arena, __ATOMIC_ACQUIRE);
  if (a) return a;
  long m = raw_mmap(kArena);  /* racing threads may both map: the loser's mapping stays unused */
  if (m < 0 && m > -4096) return NULL;
  unsigned char *expected = NULL;
  if (__atomic_compare_exchange_n(&arena, &expected, (unsigned char *)m, 0, __ATOMIC_ACQ_REL,
                                  __ATOMIC_ACQUIRE))
    return (unsigned char *)m;
  return expected;
}

static void *take(size_t size, size_t align) {
  if (align < 16) align = 16;
  if (size > kArena || align > ((size_t)1 << 20)) {
    set_errno(12);
    return NULL;
  }
  unsigned char *a = get_arena();
  size_t need = ((size + 15) & ~(size_t)15) + align + 16;
  size_t at = __atomic_fetch_add(&used, need, __ATOMIC_RELAXED);
  if (a == NULL || at + need > kArena) {
    set_errno(12);
    return NULL;
  }
  uintptr_t start = ((uintptr_t)(a + at + 16) + align - 1) & ~(uintptr_t)(align - 1);
  ((size_t *)start)[-1] = size;
  return (void *)start;
}

static size_t size_of(const void *p) { return p ? ((const size_t *)p)[-1] : 0; }

static void copy(unsigned char *dst, const unsigned char *src, size_t n) {
  for (size_t i = 0; i < n; i++) dst[i] = src[i];
}

EXPORT void *malloc(size_t n) { return take(n, 16); }
EXPORT void free(void *p) { (void)p; }
EXPORT void *calloc(size_t n, size_t size) {
  size_t total;
  if (__builtin_mul_overflow(n, size, &total)) {
    set_errno(12);
    return NULL;
  }
  return take(total, 16);  /* fresh anonymous memory, never reused: already zero */
}
EXPORT void *realloc(void *p, size_t n) {
  if (p != NULL && n == 0) return take(0, 16);
  void *q = take(n, 16);
  if (q != NULL && p != NULL) copy(q, p, size_of(p) < n ? size_of(p) : n);
  return q;
}
EXPORT void *reallocarray(void *p, size_t n, size_t size) {
  size_t total;
  if (__builtin_mul_overflow(n, size, &total)) {
    set_errno(12);
    return NULL;
  }
  return realloc(p, total);
}
EXPORT int posix_memalign(void **out, size_t align, size_t n) {
  if (align < sizeof(void *) || (align & (align - 1)) != 0) return 22;
  int saved = *__errno_location();
  void *p = take(n, align);
  set_errno(saved);
  if (p == NULL) return 12;
  *out = p;
  return 0;
}
EXPORT void *aligned_alloc(size_t align, size_t n) {
  if (align == 0 || (align & (align - 1)) != 0) {
    set_errno(22);
    return NULL;
  }
  return take(n, align);
}
EXPORT void *memalign(size_t align, size_t n) { return aligned_alloc(align, n); }
EXPORT void *valloc(size_t n) { return take(n, 4096); }
EXPORT void *pvalloc(size_t n) { return take((n + 4095) & ~(size_t)4095, 4096); }
EXPORT size_t malloc_usable_size(void *p) { return size_of(p); }
