/* lock_contention: the program's own locks, one contended and one never contended.
 *
 * usage: lock_contention [THREADS [ROUNDS [HOLD_US]]]   (defaults 4, 200, 200)
 *
 * THREADS workers wait on a condition variable until main, once all of them wait there, lets
 * them all go (wait_for_start: every worker makes one pthread_cond_wait),
 * then each runs ROUNDS times: contended_section() — lock `shared_lock`, spin HOLD_US
 * microseconds, unlock — then 20 x private_section(), which locks a mutex of the thread's own
 * that no other thread ever touches, and frees and allocates a small block.  One malloc per
 * thread and round besides.  The program measures itself, around each pthread_mutex_lock of
 * `shared_lock`, and prints on stderr:
 *   shared_wait_ns=<time in pthread_mutex_lock(&shared_lock), all threads>
 *   shared_calls=<its calls> private_calls=<private_section's lock calls>
 * Built with frame pointers and line tables, so that call sites and callers resolve. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "spin_clock.h"

static pthread_mutex_t shared_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t start_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t start_cond = PTHREAD_COND_INITIALIZER;
static int started = 0;
static int waiting = 0;              /* workers at the gate, under start_lock */
static int rounds = 200;
static long hold_us = 200;
static uint64_t shared_wait_ns = 0;  /* under shared_lock */
static uint64_t shared_calls = 0;
static uint64_t private_calls = 0;   /* under start_lock at the end */

__attribute__((noinline)) static void wait_for_start(void) {
  pthread_mutex_lock(&start_lock);
  waiting++;
  while (!started) pthread_cond_wait(&start_cond, &start_lock);
  pthread_mutex_unlock(&start_lock);
}

__attribute__((noinline)) static void contended_section(void) {
  const uint64_t t0 = now_ns();
  pthread_mutex_lock(&shared_lock);
  const uint64_t waited = now_ns() - t0;
  shared_wait_ns += waited;
  shared_calls++;
  spin_us(hold_us);
  pthread_mutex_unlock(&shared_lock);
}

__attribute__((noinline)) static void private_section(pthread_mutex_t* mine, void** block) {
  pthread_mutex_lock(mine);
  free(*block);
  *block = malloc(48);
  pthread_mutex_unlock(mine);
}

static void* worker(void* arg) {
  (void)arg;
  pthread_mutex_t mine;
  pthread_mutex_init(&mine, NULL);
  void* block = malloc(48);
  uint64_t mine_calls = 0;
  wait_for_start();
  for (int r = 0; r < rounds; r++) {
    contended_section();
    for (int k = 0; k < 20; k++, mine_calls++) private_section(&mine, &block);
    free(malloc(100));
  }
  free(block);
  pthread_mutex_destroy(&mine);
  pthread_mutex_lock(&start_lock);
  private_calls += mine_calls;
  pthread_mutex_unlock(&start_lock);
  return NULL;
}

int main(int argc, char** argv) {
  int threads = argc > 1 ? atoi(argv[1]) : 4;
  if (argc > 2) rounds = atoi(argv[2]);
  if (argc > 3) hold_us = atol(argv[3]);
  if (threads < 1 || threads > 256 || rounds < 1 || hold_us < 0) {
    fprintf(stderr, "usage: lock_contention [THREADS [ROUNDS [HOLD_US]]]\n");
    return 2;
  }
  pthread_t* t = calloc((size_t)threads, sizeof *t);
  for (int i = 0; i < threads; i++) pthread_create(&t[i], NULL, worker, NULL);
  /* Once every worker counted itself at the gate it is inside pthread_cond_wait (it released
   * start_lock there), so that each makes one condition wait. */
  pthread_mutex_lock(&start_lock);
  while (waiting < threads) {
    pthread_mutex_unlock(&start_lock);
    spin_us(1000);
    pthread_mutex_lock(&start_lock);
  }
  started = 1;
  pthread_cond_broadcast(&start_cond);
  pthread_mutex_unlock(&start_lock);
  for (int i = 0; i < threads; i++) pthread_join(t[i], NULL);
  free(t);
  fprintf(stderr, "shared_wait_ns=%llu shared_calls=%llu private_calls=%llu\n",
          (unsigned long long)shared_wait_ns, (unsigned long long)shared_calls,
          (unsigned long long)private_calls);
  return 0;
}
