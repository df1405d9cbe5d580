/* first_unlock: every thread's first pthread_mutex_unlock is of one start-up lock.
 *
 * usage: first_unlock [THREADS [UNLOCKS]]   (defaults 8, 3000)
 *
 * main holds `startup_lock` while it starts THREADS workers.  Each worker counts itself, then
 * waits for `startup_lock` (startup_section: a contended wait) and unlocks it at once — its
 * first unlock — and then locks and unlocks a mutex of its own UNLOCKS times (private_section).
 * main lets `startup_lock` go (its own first unlock) once every worker has counted itself and
 * 20 ms more have passed, so that they wait inside pthread_mutex_lock.  The start-up lock is then
 * unlocked once per thread, the private mutexes thousands of times.
 * Built with frame pointers and line tables, so that call sites resolve. */
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static pthread_mutex_t startup_lock = PTHREAD_MUTEX_INITIALIZER;
static int arrived = 0;  /* workers that counted themselves (atomic) */
static long unlocks = 3000;
static volatile long sink;

__attribute__((noinline)) static void startup_section(void) {
  pthread_mutex_lock(&startup_lock);
  sink++;
  pthread_mutex_unlock(&startup_lock);
}

__attribute__((noinline)) static void private_section(pthread_mutex_t* own) {
  pthread_mutex_lock(own);
  sink++;
  pthread_mutex_unlock(own);
}

static void* worker(void* arg) {
  (void)arg;
  pthread_mutex_t own = PTHREAD_MUTEX_INITIALIZER;
  __atomic_fetch_add(&arrived, 1, __ATOMIC_SEQ_CST);
  startup_section();
  for (long i = 0; i < unlocks; i++) private_section(&own);
  return NULL;
}

int main(int argc, char** argv) {
  const int threads = argc > 1 ? atoi(argv[1]) : 8;
  if (argc > 2) unlocks = atol(argv[2]);
  if (threads < 1 || threads > 64 || unlocks < 0) {
    fprintf(stderr, "usage: first_unlock [THREADS (1-64) [UNLOCKS]]\n");
    return 2;
  }
  pthread_t tids[64];
  pthread_mutex_lock(&startup_lock);
  for (int i = 0; i < threads; i++) {
    if (pthread_create(&tids[i], NULL, worker, NULL) != 0) {
      perror("pthread_create");
      return 1;
    }
  }
  while (__atomic_load_n(&arrived, __ATOMIC_SEQ_CST) < threads) sched_yield();
  const struct timespec pause = {0, 20 * 1000 * 1000};
  nanosleep(&pause, NULL);
  pthread_mutex_unlock(&startup_lock);
  for (int i = 0; i < threads; i++) pthread_join(tids[i], NULL);
  return 0;
}
