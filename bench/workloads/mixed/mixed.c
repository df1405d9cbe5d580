/* mixed.c — a mixed allocation workload: malloc, calloc, realloc and free of many sizes, in
 * orders other than last-in-first-out.
 *
 * usage: mixed [THREADS [ITERS]]   (defaults 8 and 1,000,000)
 *
 * Each of the THREADS threads keeps a working set of 64 slots and runs ITERS operations.  An
 * operation picks a slot at random (a per-thread deterministic PRNG: every run does the same
 * calls, in the same order within each thread).  An empty slot gets a new block: calloc one time
 * in 16, malloc otherwise, of a size from 1 B to 64 KiB drawn log-uniformly (the bit length
 * first, uniformly, then a size of that length).  A full slot is realloc'ed one time in four (to
 * a larger or a smaller size, alternately, within 1 B..64 KiB) and freed otherwise.  Every block
 * allocated or resized has its first and last byte written.  The remaining blocks are freed at
 * the end.  Threads share nothing.  Prints nothing on stdout and exits 0.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define DEFAULT_THREADS 8
#define DEFAULT_ITERS 1000000
#define SLOTS 64
#define MAX_SIZE 65536

struct worker {
  pthread_t thread;
  int index;
  size_t sink;
};

static long iters = DEFAULT_ITERS;
static volatile size_t sink;

/* xorshift64*: deterministic per thread. */
static inline uint64_t next_random(uint64_t *state) {
  uint64_t x = *state;
  x ^= x >> 12;
  x ^= x << 25;
  x ^= x >> 27;
  *state = x;
  return x * 0x2545F4914F6CDD1DULL;
}

/* 1..MAX_SIZE, log-uniform: a bit length of 1..17, uniformly, then a size of that length. */
static inline size_t random_size(uint64_t *rng) {
  uint64_t r = next_random(rng);
  unsigned bits = 1 + (unsigned)(r % 17);
  size_t low = (size_t)1 << (bits - 1);
  size_t n = low + (size_t)((r >> 8) % low);
  return n > MAX_SIZE ? MAX_SIZE : n;
}

static inline void touch(unsigned char *p, size_t n, unsigned char mark) {
  p[0] = mark;
  p[n - 1] = (unsigned char)(mark ^ 0x5A);
}

static void fail(const char *what, size_t n) {
  fprintf(stderr, "mixed: %s(%zu) failed\n", what, n);
  exit(1);
}

static void *run(void *arg) {
  struct worker *w = arg;
  uint64_t rng = 0x9E3779B97F4A7C15ULL * (uint64_t)(w->index + 1);
  unsigned char *block[SLOTS] = {0};
  size_t size[SLOTS] = {0};
  size_t local = 0;
  unsigned grow = 1;
  for (long i = 0; i < iters; i++) {
    uint64_t r = next_random(&rng);
    unsigned j = (unsigned)(r % SLOTS);
    unsigned choice = (unsigned)((r >> 16) % 16);
    if (!block[j]) {
      size_t n = random_size(&rng);
      unsigned char *p = choice == 0 ? calloc(1, n) : malloc(n);
      if (!p) fail(choice == 0 ? "calloc" : "malloc", n);
      touch(p, n, (unsigned char)i);
      block[j] = p;
      size[j] = n;
    } else if (choice < 4) {
      size_t n = size[j];
      if (grow)
        n = n + 1 + n / 2 + (size_t)((r >> 24) % (n + 1));
      else
        n = n / 2 + 1;
      if (n > MAX_SIZE) n = MAX_SIZE;
      grow ^= 1;
      unsigned char *p = realloc(block[j], n);
      if (!p) fail("realloc", n);
      local += p[0];
      touch(p, n, (unsigned char)i);
      block[j] = p;
      size[j] = n;
    } else {
      local += (size_t)block[j][0] + block[j][size[j] - 1];
      free(block[j]);
      block[j] = NULL;
    }
  }
  for (unsigned j = 0; j < SLOTS; j++) free(block[j]);
  w->sink = local;
  return NULL;
}

int main(int argc, char **argv) {
  int threads = argc > 1 ? atoi(argv[1]) : DEFAULT_THREADS;
  if (argc > 2) iters = atol(argv[2]);
  if (threads < 1 || iters < 0) {
    fprintf(stderr, "usage: mixed [THREADS [ITERS]]\n");
    return 2;
  }
  struct worker *workers = calloc((size_t)threads, sizeof *workers);
  if (!workers) {
    fprintf(stderr, "mixed: out of memory\n");
    return 1;
  }
  for (int i = 0; i < threads; i++) {
    workers[i].index = i;
    if (pthread_create(&workers[i].thread, NULL, run, &workers[i]) != 0) {
      fprintf(stderr, "mixed: pthread_create failed\n");
      return 1;
    }
  }
  size_t total = 0;
  for (int i = 0; i < threads; i++) {
    pthread_join(workers[i].thread, NULL);
    total += workers[i].sink;
  }
  sink = total;
  free(workers);
  return 0;
}
