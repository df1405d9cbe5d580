/* fixed_duration.c — a benchmark that runs for a fixed time and counts what it did, as
 * xmalloc-test and glibc's bench-malloc-thread do.
 *
 *   fixed_duration THREADS MS [WORK]   THREADS 1..64 threads, each for MS milliseconds (1..600000):
 *                                      malloc a block of 16..1039 bytes, write its first and
 *                                      last byte, free it, and WORK (0..1000000, default 0)
 *                                      rounds of arithmetic outside the allocator, again and
 *                                      again, reading the clock every 64 blocks
 *
 * Prints "fixed_duration: N operations" on stdout (N = blocks allocated and freed over all
 * threads) and exits 0; 2 on a usage error.  Two runs under allocators of different speed take the
 * same wall time but make different numbers of calls: what they did differs, not how long.
 *
 * Expected calls made by the program's own code: N mallocs and N frees, of sizes 16..1039 bytes.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static long duration_ms;
static long work_rounds;

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void* worker(void* arg) {
  uint64_t* ops = arg;
  uint32_t seed = (uint32_t)(uintptr_t)arg * 2654435761u + 1;
  const uint64_t end = now_ns() + (uint64_t)duration_ms * 1000000u;
  volatile uint64_t sink = 0;
  uint64_t n = 0;
  for (;;) {
    for (int i = 0; i < 64; ++i) {
      seed = seed * 1103515245u + 12345u;
      const size_t size = 16 + (seed >> 8) % 1024;
      char* p = malloc(size);
      if (!p) return NULL;
      p[0] = 1;
      p[size - 1] = 2;
      free(p);
      for (long k = 0; k < work_rounds; ++k) sink += (uint64_t)k * seed;
      ++n;
    }
    if (now_ns() >= end) break;
  }
  *ops = n;
  return NULL;
}

int main(int argc, char** argv) {
  if (argc < 3 || argc > 4) {
    fprintf(stderr, "usage: fixed_duration THREADS MS [WORK]\n");
    return 2;
  }
  const long threads = strtol(argv[1], NULL, 10);
  duration_ms = strtol(argv[2], NULL, 10);
  work_rounds = argc == 4 ? strtol(argv[3], NULL, 10) : 0;
  if (threads < 1 || threads > 64 || duration_ms < 1 || duration_ms > 600000 || work_rounds < 0 ||
      work_rounds > 1000000) {
    fprintf(stderr, "fixed_duration: THREADS 1..64, MS 1..600000, WORK 0..1000000\n");
    return 2;
  }
  pthread_t tid[64];
  uint64_t ops[64] = {0};
  for (long i = 0; i < threads; ++i) {
    if (pthread_create(&tid[i], NULL, worker, &ops[i]) != 0) return 1;
  }
  uint64_t total = 0;
  for (long i = 0; i < threads; ++i) {
    pthread_join(tid[i], NULL);
    total += ops[i];
  }
  printf("fixed_duration: %llu operations\n", (unsigned long long)total);
  return 0;
}
