/* dl_lib.c — a library that allocates when it is loaded, when it is used and when it is unloaded;
 * dlopen.c loads it.  Its malloc and free bind however the dynamic loader binds them: through the
 * global scope (a preload first), or — under RTLD_DEEPBIND — its own dependencies first (libc).
 *
 *   constructor   4 x malloc(1500), then 4 x free
 *   dl_work(n)    n x malloc(6000), all held, then n x free; returns the usable size of a block
 *   destructor    6 x malloc(700), then 6 x free (at dlclose on glibc; at exit on musl, whose
 *                 dlclose never unloads)
 */
#include <malloc.h>
#include <stdlib.h>
#include <string.h>

static void churn(size_t size, int n) {
  void *blocks[8];
  for (int i = 0; i < n; i++) {
    blocks[i] = malloc(size);
    if (blocks[i] == NULL) abort();
    memset(blocks[i], i, size);
  }
  for (int i = 0; i < n; i++) free(blocks[i]);
}

__attribute__((constructor)) static void dl_lib_loaded(void) { churn(1500, 4); }
__attribute__((destructor)) static void dl_lib_unloaded(void) { churn(700, 6); }

size_t dl_work(int n) {
  void *blocks[1000];
  if (n > 1000) n = 1000;
  for (int i = 0; i < n; i++) {
    blocks[i] = malloc(6000);
    if (blocks[i] == NULL) abort();
    memset(blocks[i], i, 6000);
  }
  size_t usable = n > 0 ? malloc_usable_size(blocks[0]) : 0;
  for (int i = 0; i < n; i++) free(blocks[i]);
  return usable;
}
