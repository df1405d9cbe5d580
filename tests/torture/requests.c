/* requests.c — requests at the edges: huge and failing ones, zero sizes, NULL pointers, errno,
 * and the usable size of blocks.
 *
 *   requests
 *
 * Prints one line per observation (what was returned, errno, usable sizes) and exits 0; a preload
 * that forwards faithfully leaves every line as the allocator alone prints it, so the tests
 * compare the output with and without the shim.  Usable sizes depend only on the request for the
 * allocators tested, so equal lines mean the shim reports exactly what the allocator reports.
 *
 * Expected failures (each a call that returns NULL or an error):
 *   malloc     3  (SIZE_MAX, PTRDIFF_MAX + 1, 2^47)
 *   calloc     1  (SIZE_MAX / 2 x 4 overflows)
 *   realloc    1  (a live block to SIZE_MAX; the block stays intact)
 *   reallocarray 1 (SIZE_MAX x 2 overflows)
 *   posix_memalign 2 (alignment 3, SIZE_MAX bytes)
 *   aligned_alloc  1 (SIZE_MAX bytes)
 * Output is written with write(2); exit 1 only if a block was damaged.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <malloc.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void say(const char *fmt, ...) {
  char line[256];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(line, sizeof line, fmt, ap);
  va_end(ap);
  if (n > 0 && write(1, line, (size_t)n) < 0) _exit(3);
}

static const char *errname(int e) {
  switch (e) {
    case 0: return "0";
    case ENOMEM: return "ENOMEM";
    case EINVAL: return "EINVAL";
    case 4242: return "sentinel";
    default: return "other";
  }
}

#define NULLNESS(p) ((p) == NULL ? "NULL" : "block")

/* Hides a size from the compiler, which would otherwise warn about (or fold) these requests. */
static size_t opaque(size_t v) {
  volatile size_t x = v;
  return x;
}

/* A failed realloc leaves the block live: using it afterwards is correct. */
#pragma GCC diagnostic ignored "-Wuse-after-free"

int main(void) {
  int damaged = 0;
  void *volatile p;

  errno = 4242;
  p = malloc(opaque(SIZE_MAX));
  say("malloc(SIZE_MAX): %s errno %s\n", NULLNESS(p), errname(errno));
  errno = 4242;
  p = malloc(opaque((size_t)PTRDIFF_MAX + 1));
  say("malloc(PTRDIFF_MAX+1): %s errno %s\n", NULLNESS(p), errname(errno));
  errno = 4242;
  p = malloc(opaque((size_t)1 << 47));
  say("malloc(2^47): %s errno %s\n", NULLNESS(p), errname(errno));
  free(p);
  errno = 4242;
  p = calloc(opaque(SIZE_MAX / 2), 4);
  say("calloc(SIZE_MAX/2, 4): %s errno %s\n", NULLNESS(p), errname(errno));

  /* A failing realloc leaves the block as it was. */
  unsigned char *live = malloc(1000);
  if (live == NULL) return 1;
  memset(live, 0x5a, 1000);
  errno = 4242;
  p = realloc(live, opaque(SIZE_MAX));
  say("realloc(block, SIZE_MAX): %s errno %s\n", NULLNESS(p), errname(errno));
  for (int i = 0; i < 1000; i++) damaged |= live[i] != 0x5a;
  errno = 4242;
  p = reallocarray(live, opaque(SIZE_MAX), 2);
  say("reallocarray(block, SIZE_MAX, 2): %s errno %s\n", NULLNESS(p), errname(errno));
  for (int i = 0; i < 1000; i++) damaged |= live[i] != 0x5a;
  free(live);

  void *q = NULL;
  errno = 4242;
  int rc = posix_memalign(&q, 3, 16);
  say("posix_memalign(3, 16): returns %s, errno %s\n", errname(rc), errname(errno));
  errno = 4242;
  rc = posix_memalign(&q, 64, opaque(SIZE_MAX));
  say("posix_memalign(64, SIZE_MAX): returns %s, errno %s\n", errname(rc), errname(errno));
  errno = 4242;
  p = aligned_alloc(64, opaque(SIZE_MAX));
  say("aligned_alloc(64, SIZE_MAX): %s errno %s\n", NULLNESS(p), errname(errno));

  /* Successful calls leave errno alone. */
  errno = 4242;
  p = malloc(10);
  free(p);
  p = calloc(3, 7);
  p = realloc(p, 5000);
  free(p);
  free(NULL);
  say("errno after successful calls: %s\n", errname(errno));

  /* realloc(NULL, n) is malloc(n); realloc(p, 0) frees (glibc) or shrinks (musl); free(NULL). */
  p = realloc(NULL, 200);
  say("realloc(NULL, 200): %s usable %zu\n", NULLNESS(p), malloc_usable_size(p));
  memset(p, 1, 200);
  p = realloc(p, 0);
  say("realloc(block, 0): %s\n", NULLNESS(p));
  free(p);
  free(NULL);
  p = malloc(0);
  say("malloc(0): %s\n", NULLNESS(p));
  free(p);
  say("malloc_usable_size(NULL): %zu\n", malloc_usable_size(NULL));

  static const size_t sizes[] = {1, 8, 16, 24, 25, 100, 1000, 4000, 4097, 100000, 1 << 20, 40 << 20};
  for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
    unsigned char *b = malloc(sizes[i]);
    if (b == NULL) return 1;
    size_t usable = malloc_usable_size(b);
    memset(b, 0xa5, usable);  /* every usable byte belongs to the block */
    say("malloc(%zu): usable %zu\n", sizes[i], usable);
    free(b);
  }
  unsigned char *a = aligned_alloc(4096, 12288);  /* a multiple of the alignment, as C11 asks */
  if (a == NULL) return 1;
  say("aligned_alloc(4096, 12288): aligned %d usable >= 12288 %d\n", (uintptr_t)a % 4096 == 0,
      malloc_usable_size(a) >= 12288);
  free(a);
  a = memalign(256, 300);
  say("memalign(256, 300): aligned %d\n", a != NULL && (uintptr_t)a % 256 == 0);
  free(a);
  a = valloc(123);
  say("valloc(123): aligned %d\n", a != NULL && (uintptr_t)a % 4096 == 0);
  free(a);

  say(damaged ? "requests: a failed realloc damaged the block\n" : "requests: done\n");
  return damaged;
}
