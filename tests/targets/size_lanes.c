/* size_lanes.c — threads that keep to sizes of their own.
 *
 *   size_lanes MODE THREADS MS    THREADS 2..64 threads allocate for MS (1..100000) milliseconds
 *     MODE "large": every thread asks for 300 KiB, 600 KiB, 1.2 MiB or 2.4 MiB (plus 0..999 B,
 *                   drawn per call): sizes that many allocators serve through one path for their
 *                   large blocks (tcmalloc's page heap, a lock for the mapped ones)
 *     MODE "split": the even threads ask for 16..255 B, the odd ones for 100 KiB..2 MiB: the
 *                   odd threads make a thousandth of the calls, and spend their lives in them
 * Each call is a malloc, its first and last byte written, and a free.
 *
 * Expected calls: as many mallocs and frees as the threads manage in MS milliseconds; prints
 * "size_lanes: N calls" (the mallocs) and exits 0 (2 on a usage error, 1 when a block or a
 * thread could not be had).
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int g_split;
static uint64_t g_end_ns;
static long g_calls[64];

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void *run(void *arg) {
  const long id = (long)(intptr_t)arg;
  uint64_t x = (uint64_t)(id + 1) * 2654435761u + 1;
  long calls = 0;
  while ((calls & 63) != 0 || now_ns() < g_end_ns) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    const uint32_t r = (uint32_t)(x >> 33);
    size_t n;
    if (!g_split) n = ((size_t)300 << 10 << (r % 4)) + (r >> 8) % 1000;
    else if (id % 2 == 0) n = 16 + r % 240;
    else n = ((size_t)100 << 10) + r % ((size_t)1948 << 10);
    volatile char *p = malloc(n);
    if (!p) return (void *)1;
    p[0] = 1;
    p[n - 1] = 2;
    free((void *)p);
    ++calls;
  }
  g_calls[id] = calls;
  return NULL;
}

int main(int argc, char **argv) {
  if (argc != 4 || (strcmp(argv[1], "large") != 0 && strcmp(argv[1], "split") != 0)) {
    fprintf(stderr, "usage: size_lanes large|split THREADS MS\n");
    return 2;
  }
  g_split = strcmp(argv[1], "split") == 0;
  const long threads = strtol(argv[2], NULL, 10), ms = strtol(argv[3], NULL, 10);
  if (threads < 2 || threads > 64 || ms < 1 || ms > 100000) {
    fprintf(stderr, "usage: size_lanes large|split THREADS MS\n");
    return 2;
  }
  g_end_ns = now_ns() + (uint64_t)ms * 1000000u;
  pthread_t t[64];
  for (long i = 0; i < threads; i++)
    if (pthread_create(&t[i], NULL, run, (void *)(intptr_t)i) != 0) return 1;
  int failed = 0;
  long calls = 0;
  for (long i = 0; i < threads; i++) {
    void *r;
    pthread_join(t[i], &r);
    failed |= r != NULL;
    calls += g_calls[i];
  }
  printf("size_lanes: %ld calls\n", calls);
  return failed;
}
