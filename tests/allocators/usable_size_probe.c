/* usable_size_probe MAX — malloc(n) for every n in 0..MAX, in order, and print the runs of n with
 * the same malloc_usable_size, one per line: "first last usable".  Run under LD_PRELOAD, it shows
 * the size classes of the allocator preloaded (for those whose usable size is the slot). */
#define _GNU_SOURCE
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s MAX\n", argv[0]);
    return 2;
  }
  const size_t max = strtoull(argv[1], NULL, 0);
  size_t first = 0, usable = 0;
  for (size_t n = 0; n <= max; ++n) {
    void *p = malloc(n);
    if (!p && n) return 1;
    const size_t u = malloc_usable_size(p);
    free(p);
    if (n == 0) {
      usable = u;
    } else if (u != usable) {
      printf("%zu %zu %zu\n", first, n - 1, usable);
      first = n;
      usable = u;
    }
  }
  printf("%zu %zu %zu\n", first, max, usable);
  return 0;
}
