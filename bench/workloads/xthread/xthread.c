/* xthread.c — producer/consumer workload: blocks are freed by another thread than the one that
 * allocated them.
 *
 * usage: xthread [THREADS [ITERS]]   (defaults 8 and 1,000,000)
 *
 * The THREADS threads work in pairs: thread 2k is the producer and thread 2k+1 the consumer of
 * pair k.  Each iteration the producer mallocs a block of 16..1039 bytes (a per-thread
 * deterministic PRNG), writes its first and last byte and passes it to its consumer through a
 * bounded single-producer/single-consumer ring; the consumer takes it, reads both bytes and frees
 * it, then mallocs, touches and frees a small block (16..79 bytes) of its own, so that both sides
 * of a pair call the allocator all the time.  With an odd thread count the last thread has no
 * partner: each iteration it mallocs, touches and frees a block of the producer's sizes and one of
 * the consumer's, itself; so does the only thread of THREADS=1.  Every thread runs ITERS
 * iterations.
 *
 * The rings are lock-free (atomic loads and stores only): no mutex, no condition variable, no
 * system call.  When its ring is full (producer) or empty (consumer) a thread spins with a pause
 * instruction; it never sleeps.  So the only lock the process ever takes is the allocator's, if
 * it has one.  Prints nothing on stdout and exits 0.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define DEFAULT_THREADS 8
#define DEFAULT_ITERS 1000000
#define RING_SLOTS 1024 /* a power of two */

struct slot {
  unsigned char *p;
  size_t n;
};

/* One ring per pair.  `tail` is written by the producer only, `head` by the consumer only; each
 * on its own cache line. */
struct ring {
  _Alignas(64) size_t tail;
  _Alignas(64) size_t head;
  _Alignas(64) struct slot slots[RING_SLOTS];
};

struct worker {
  pthread_t thread;
  int index;
  struct ring *ring; /* NULL: alone */
  int producer;
  size_t sink;
};

static long iters = DEFAULT_ITERS;
static volatile size_t sink;

static inline void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  __asm__ __volatile__("yield" ::: "memory");
#else
  __asm__ __volatile__("" ::: "memory");
#endif
}

/* xorshift64*: deterministic per thread. */
static inline uint64_t next_random(uint64_t *state) {
  uint64_t x = *state;
  x ^= x >> 12;
  x ^= x << 25;
  x ^= x >> 27;
  *state = x;
  return x * 0x2545F4914F6CDD1DULL;
}

static inline unsigned char *alloc_touched(size_t n, unsigned char mark) {
  unsigned char *p = malloc(n);
  if (!p) {
    fprintf(stderr, "xthread: malloc(%zu) failed\n", n);
    exit(1);
  }
  p[0] = mark;
  p[n - 1] = (unsigned char)(mark ^ 0x5A);
  return p;
}

static inline size_t read_and_free(unsigned char *p, size_t n) {
  size_t v = (size_t)p[0] + p[n - 1];
  free(p);
  return v;
}

static void produce(struct worker *w, uint64_t *rng) {
  struct ring *r = w->ring;
  size_t tail = 0, head_seen = 0;
  for (long i = 0; i < iters; i++) {
    size_t n = 16 + (size_t)(next_random(rng) % 1024);
    unsigned char *p = alloc_touched(n, (unsigned char)i);
    while (tail - head_seen == RING_SLOTS) {
      head_seen = __atomic_load_n(&r->head, __ATOMIC_ACQUIRE);
      if (tail - head_seen == RING_SLOTS) cpu_relax();
    }
    r->slots[tail % RING_SLOTS] = (struct slot){p, n};
    __atomic_store_n(&r->tail, ++tail, __ATOMIC_RELEASE);
  }
}

static void consume(struct worker *w, uint64_t *rng) {
  struct ring *r = w->ring;
  size_t head = 0, tail_seen = 0;
  size_t local = 0;
  for (long i = 0; i < iters; i++) {
    while (head == tail_seen) {
      tail_seen = __atomic_load_n(&r->tail, __ATOMIC_ACQUIRE);
      if (head == tail_seen) cpu_relax();
    }
    struct slot s = r->slots[head % RING_SLOTS];
    __atomic_store_n(&r->head, ++head, __ATOMIC_RELEASE);
    local += read_and_free(s.p, s.n);
    size_t n = 16 + (size_t)(next_random(rng) % 64);
    local += read_and_free(alloc_touched(n, (unsigned char)i), n);
  }
  w->sink = local;
}

static void alone(struct worker *w, uint64_t *rng) {
  size_t local = 0;
  for (long i = 0; i < iters; i++) {
    size_t n = 16 + (size_t)(next_random(rng) % 1024);
    local += read_and_free(alloc_touched(n, (unsigned char)i), n);
    n = 16 + (size_t)(next_random(rng) % 64);
    local += read_and_free(alloc_touched(n, (unsigned char)i), n);
  }
  w->sink = local;
}

static void *run(void *arg) {
  struct worker *w = arg;
  uint64_t rng = 0x9E3779B97F4A7C15ULL * (uint64_t)(w->index + 1);
  if (!w->ring)
    alone(w, &rng);
  else if (w->producer)
    produce(w, &rng);
  else
    consume(w, &rng);
  return NULL;
}

int main(int argc, char **argv) {
  int threads = argc > 1 ? atoi(argv[1]) : DEFAULT_THREADS;
  if (argc > 2) iters = atol(argv[2]);
  if (threads < 1 || iters < 0) {
    fprintf(stderr, "usage: xthread [THREADS [ITERS]]\n");
    return 2;
  }
  int pairs = threads / 2;
  struct ring *rings = NULL;
  if (pairs > 0 && posix_memalign((void **)&rings, 64, (size_t)pairs * sizeof *rings) != 0) {
    fprintf(stderr, "xthread: out of memory\n");
    return 1;
  }
  for (int k = 0; k < pairs; k++) rings[k].head = rings[k].tail = 0;
  struct worker *workers = calloc((size_t)threads, sizeof *workers);
  if (!workers) {
    fprintf(stderr, "xthread: out of memory\n");
    return 1;
  }
  for (int i = 0; i < threads; i++) {
    workers[i].index = i;
    workers[i].ring = i / 2 < pairs ? &rings[i / 2] : NULL;
    workers[i].producer = i % 2 == 0;
  }
  for (int i = 0; i < threads; i++) {
    if (pthread_create(&workers[i].thread, NULL, run, &workers[i]) != 0) {
      fprintf(stderr, "xthread: pthread_create failed\n");
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
  free(rings);
  return 0;
}
