/* lock_cpu: threads that spend a known CPU time outside their calls, and lock and unlock a mutex.
 *
 * usage: lock_cpu [THREADS [ROUNDS [OUTSIDE_US]]]   (defaults 4, 1500, 100)
 *
 * Each of THREADS workers runs ROUNDS times: spin until its own CPU clock has advanced OUTSIDE_US
 * microseconds (CPU time outside any allocator or lock call), malloc and free a small block, then
 * lock and unlock a mutex of its own (never contended).  Under libslow_unlock.so (tests/allocators)
 * each unlock spends a known CPU time as well, so the share of the threads' CPU time inside lock
 * calls is SLOW_UNLOCK_US / (SLOW_UNLOCK_US + OUTSIDE_US), less what the rest takes.
 * Prints on stderr: rounds=<all threads' rounds> */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static long rounds = 1500;
static long outside_ns = 100000;

static uint64_t thread_cpu_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void* worker(void* arg) {
  (void)arg;
  pthread_mutex_t own = PTHREAD_MUTEX_INITIALIZER;
  for (long i = 0; i < rounds; i++) {
    const uint64_t start = thread_cpu_ns();
    while (thread_cpu_ns() - start < (uint64_t)outside_ns) {
    }
    void* volatile p = malloc(48);
    free(p);
    pthread_mutex_lock(&own);
    pthread_mutex_unlock(&own);
  }
  return NULL;
}

int main(int argc, char** argv) {
  int threads = argc > 1 ? atoi(argv[1]) : 4;
  if (argc > 2) rounds = atol(argv[2]);
  if (argc > 3) outside_ns = atol(argv[3]) * 1000;
  if (threads < 1 || threads > 256 || rounds < 1 || outside_ns < 0) {
    fprintf(stderr, "usage: lock_cpu [THREADS [ROUNDS [OUTSIDE_US]]]\n");
    return 2;
  }
  pthread_t t[256];
  for (int i = 0; i < threads; i++) pthread_create(&t[i], NULL, worker, NULL);
  for (int i = 0; i < threads; i++) pthread_join(t[i], NULL);
  fprintf(stderr, "rounds=%ld\n", rounds * threads);
  return 0;
}
