/* mapped_blocks.c — threads that allocate and free large blocks, each its own mapping.
 *
 *   mapped_blocks THREADS ITERS [MIN MAX]   THREADS 1..256 threads, each ITERS (1..10^8) times:
 *                                           malloc of MIN..MAX bytes (default 200,000..1,000,000,
 *                                           drawn per call), its first and last byte written,
 *                                           free
 *
 * Run under glibc with GLIBC_TUNABLES=glibc.malloc.mmap_threshold=131072 every block is mapped
 * and unmapped (glibc's threshold otherwise rises to the sizes freed and serves them from the
 * heap), so that every allocator call is an mmap or munmap: calls wait for each other on the
 * kernel's lock of the memory map, never on a lock of the allocator's.
 *
 * Expected calls: THREADS × ITERS mallocs and as many frees; prints nothing, exits 0 (2 on a usage
 * error, 1 when a block could not be had).
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

static long iters;
static size_t lo = 200000, hi = 1000000;

static void *run(void *arg) {
  uint64_t x = (uint64_t)(uintptr_t)arg * 2654435761u + 1;
  for (long i = 0; i < iters; i++) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    const size_t n = lo + (size_t)(x >> 33) % (hi - lo + 1);
    volatile char *p = malloc(n);
    if (!p) return (void *)1;
    p[0] = 1;
    p[n - 1] = 2;
    free((void *)p);
  }
  return NULL;
}

int main(int argc, char **argv) {
  if (argc != 3 && argc != 5) {
    fprintf(stderr, "usage: mapped_blocks THREADS ITERS [MIN MAX]\n");
    return 2;
  }
  const int threads = atoi(argv[1]);
  iters = atol(argv[2]);
  if (argc == 5) {
    lo = (size_t)atol(argv[3]);
    hi = (size_t)atol(argv[4]);
  }
  if (threads < 1 || threads > 256 || iters < 1 || iters > 100000000 || lo < 2 || hi < lo) {
    fprintf(stderr, "mapped_blocks: bad arguments\n");
    return 2;
  }
  pthread_t th[256];
  for (int i = 0; i < threads; i++)
    if (pthread_create(&th[i], NULL, run, (void *)(uintptr_t)i) != 0) return 1;
  int failed = 0;
  for (int i = 0; i < threads; i++) {
    void *r;
    pthread_join(th[i], &r);
    failed |= r != NULL;
  }
  return failed;
}
