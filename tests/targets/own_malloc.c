/* own_malloc.c — a program that brings its own malloc, free, calloc and realloc (a bump allocator
 * over one static arena; free does nothing), exported so that the C library's calls bind to them
 * too: the way a program linked statically with an allocator looks.  Every call to them passes the
 * shim by; the shim says so.  Makes 1000 malloc(64) / free pairs and prints "ok" (write(2)). */
#include <stddef.h>
#include <string.h>
#include <unistd.h>

static _Alignas(64) unsigned char arena[8 << 20];
static size_t used;

void* malloc(size_t n) {
  n = (n + 15) & ~(size_t)15;
  size_t at = __atomic_fetch_add(&used, n + 16, __ATOMIC_RELAXED);
  if (at + n + 16 > sizeof arena) return NULL;
  memcpy(arena + at, &n, sizeof n);
  return arena + at + 16;
}

void free(void* p) { (void)p; }

void* calloc(size_t n, size_t s) {
  size_t total;
  if (__builtin_mul_overflow(n, s, &total)) return NULL;
  void* p = malloc(total);
  if (p) memset(p, 0, total);  /* the arena is reused by nobody, but be plain */
  return p;
}

void* realloc(void* p, size_t n) {
  void* q = malloc(n);
  if (q && p) {
    size_t old;
    memcpy(&old, (unsigned char*)p - 16, sizeof old);
    memcpy(q, p, old < n ? old : n);
  }
  return q;
}

int main(void) {
  for (int i = 0; i < 1000; i++) {
    char* volatile p = malloc(64);
    memset(p, 1, 64);
    free(p);
  }
  return write(1, "ok\n", 3) == 3 ? 0 : 1;
}
