/* faulter.c — page faults inside and outside allocator calls, counted by the program itself.
 *
 *   faulter ROUNDS BLOCKS KIB   ROUNDS 1..100000 rounds, each: BLOCKS (1..4096) mallocs of KIB
 *                               (1..1024) KiB, every page of each block written once outside the
 *                               allocator, 64 mallocs and frees of 16..1039 bytes after each
 *                               block, then the blocks freed in the order they were made
 *
 * The heap grows and shrinks every round, so that the allocator maps memory and writes its own
 * headers on pages the program has not touched yet (faults inside calls), and the program then
 * touches the rest (faults outside).  The thread reads its minor faults (getrusage, RUSAGE_THREAD)
 * right before and after each of its own allocator calls and prints
 *
 *   faulter: I faults inside calls, T in all
 *
 * on stdout, then exits 0; 2 on a usage error.  I counts what the calls took, whatever allocator
 * made them; T is the thread's own minor faults from the start of main to the end (a profiler
 * that starts before main, as the shim does, counts these at least; not the loader's before).
 *
 * Expected calls made by the program's own code: ROUNDS × BLOCKS × 65 mallocs and as many frees.
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>

static long faults_now(void) {
  struct rusage ru;
  getrusage(RUSAGE_THREAD, &ru);
  return ru.ru_minflt;
}

static long inside;

static void* counted_malloc(size_t n) {
  const long f0 = faults_now();
  void* p = malloc(n);
  inside += faults_now() - f0;
  return p;
}

static void counted_free(void* p) {
  const long f0 = faults_now();
  free(p);
  inside += faults_now() - f0;
}

static long arg(const char* s, long lo, long hi) {
  char* end;
  const long v = strtol(s, &end, 10);
  if (*s == '\0' || *end != '\0' || v < lo || v > hi) {
    fprintf(stderr, "faulter: bad argument '%s' (%ld..%ld)\n", s, lo, hi);
    exit(2);
  }
  return v;
}

int main(int argc, char** argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: faulter ROUNDS BLOCKS KIB\n");
    return 2;
  }
  const long at_start = faults_now();
  const long rounds = arg(argv[1], 1, 100000), count = arg(argv[2], 1, 4096), kib = arg(argv[3], 1, 1024);
  const size_t size = (size_t)kib * 1024;
  char** blocks = malloc((size_t)count * sizeof *blocks);
  if (!blocks) return 1;
  uint32_t seed = 12345;
  for (long r = 0; r < rounds; r++) {
    for (long b = 0; b < count; b++) {
      char* p = counted_malloc(size);
      if (!p) return 1;
      for (size_t o = 0; o < size; o += 4096) p[o] = (char)o;  // every page, outside the allocator
      blocks[b] = p;
      for (int i = 0; i < 64; i++) {
        seed = seed * 1103515245u + 12345u;
        char* q = counted_malloc(16 + (seed >> 8) % 1024);
        if (!q) return 1;
        q[0] = 1;
        counted_free(q);
      }
    }
    for (long b = 0; b < count; b++) counted_free(blocks[b]);
  }
  free(blocks);
  printf("faulter: %ld faults inside calls, %ld in all\n", inside, faults_now() - at_start);
  return 0;
}
