/* lock_kinds: contended locks of the kinds besides pthread mutexes and rwlocks: a C11 mutex
 * (mtx_lock, mtx_timedlock) and a pthread spin lock, behind a C11 condition variable gate.
 *
 * usage: lock_kinds [THREADS [ROUNDS [HOLD_US]]]   (defaults 4, 100, 100)
 *
 * THREADS workers wait at a C11 condition variable until main, once all of them wait there, lets
 * them all go (c11_gate: every worker makes one cnd_wait), then each runs ROUNDS times
 * c11_section() — mtx_lock `c11_lock`, spin HOLD_US microseconds, mtx_unlock — and
 * c11_timed_section() — the same with mtx_timedlock and a timeout far away —, with one malloc,
 * and then, once every worker is past those, ROUNDS times spin_section() — pthread_spin_lock `spin_lock`, spin HOLD_US
 * microseconds, pthread_spin_unlock.
 * The program measures itself around each lock call and prints on stderr:
 *   c11_wait_ns=<time in mtx_lock and mtx_timedlock, all threads> c11_calls=<their calls>
 *   c11_long_ns=<the part of c11_wait_ns in calls of LONG_WAIT_NS or longer>
 *   spin_wait_ns=<time in pthread_spin_lock> spin_calls=<its calls> spin_long_ns=<likewise>
 * (A call that did not wait still takes the clock's and the lock's own time, about 50 ns: over
 * hundreds of calls that is more than a few short waits.  The long calls are the waits.)
 * glibc runs C11's calls on its pthread functions inside the C library, musl on its own: neither
 * reaches an interposed pthread_mutex_lock.  Built with frame pointers and line tables. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <threads.h>
#include <time.h>

#include "spin_clock.h"

static mtx_t c11_lock;
static mtx_t gate_lock;
static cnd_t gate_cond;
static pthread_spinlock_t spin_lock;
static int started = 0;
static int waiting = 0;  /* workers at the gate, under gate_lock */
static int threads = 4;
static int rounds = 100;
static int done_c11 = 0;  /* workers past their C11 sections */
static long hold_us = 100;
static uint64_t c11_wait_ns = 0, c11_calls = 0, c11_long_ns = 0;    /* under c11_lock */
static uint64_t spin_wait_ns = 0, spin_calls = 0, spin_long_ns = 0;  /* under spin_lock */

#define LONG_WAIT_NS 2000u

/* Adds one call's `ns` to its totals. */
static void count_call(uint64_t ns, uint64_t* wait_ns, uint64_t* calls, uint64_t* long_ns) {
  *wait_ns += ns;
  ++*calls;
  if (ns >= LONG_WAIT_NS) *long_ns += ns;
}

__attribute__((noinline)) static void c11_gate(void) {
  mtx_lock(&gate_lock);
  waiting++;
  while (!started) cnd_wait(&gate_cond, &gate_lock);
  mtx_unlock(&gate_lock);
}

__attribute__((noinline)) static void c11_section(void) {
  const uint64_t t0 = now_ns();
  if (mtx_lock(&c11_lock) != thrd_success) abort();
  count_call(now_ns() - t0, &c11_wait_ns, &c11_calls, &c11_long_ns);
  spin_us(hold_us);
  mtx_unlock(&c11_lock);
}

__attribute__((noinline)) static void c11_timed_section(void) {
  struct timespec until;
  timespec_get(&until, TIME_UTC);
  until.tv_sec += 60;
  const uint64_t t0 = now_ns();
  if (mtx_timedlock(&c11_lock, &until) != thrd_success) abort();
  count_call(now_ns() - t0, &c11_wait_ns, &c11_calls, &c11_long_ns);
  spin_us(hold_us);
  mtx_unlock(&c11_lock);
}

__attribute__((noinline)) static void spin_section(void) {
  const uint64_t t0 = now_ns();
  pthread_spin_lock(&spin_lock);
  count_call(now_ns() - t0, &spin_wait_ns, &spin_calls, &spin_long_ns);
  spin_us(hold_us);
  pthread_spin_unlock(&spin_lock);
}

static void* worker(void* arg) {
  (void)arg;
  c11_gate();
  for (int r = 0; r < rounds; r++) {
    c11_section();
    c11_timed_section();
    free(malloc(64));
  }
  /* Then the spin sections, all workers at once: between the C11 sections the workers seldom
   * met at the spin lock, and a worker that kept the C11 mutex finished alone. */
  __atomic_add_fetch(&done_c11, 1, __ATOMIC_SEQ_CST);
  while (__atomic_load_n(&done_c11, __ATOMIC_SEQ_CST) < threads) thrd_yield();
  for (int r = 0; r < rounds; r++) spin_section();
  return NULL;
}

int main(int argc, char** argv) {
  if (argc > 1) threads = atoi(argv[1]);
  if (argc > 2) rounds = atoi(argv[2]);
  if (argc > 3) hold_us = atol(argv[3]);
  if (threads < 1 || threads > 256 || rounds < 1 || hold_us < 0) {
    fprintf(stderr, "usage: lock_kinds [THREADS [ROUNDS [HOLD_US]]]\n");
    return 2;
  }
  if (mtx_init(&c11_lock, mtx_plain | mtx_timed) != thrd_success || mtx_init(&gate_lock, mtx_plain) != thrd_success ||
      cnd_init(&gate_cond) != thrd_success || pthread_spin_init(&spin_lock, PTHREAD_PROCESS_PRIVATE) != 0) {
    fprintf(stderr, "lock_kinds: cannot make the locks\n");
    return 1;
  }
  pthread_t* tids = malloc(sizeof *tids * (size_t)threads);
  for (int i = 0; i < threads; i++) pthread_create(&tids[i], NULL, worker, NULL);
  for (;;) {  /* every worker at the gate, then all go at once */
    mtx_lock(&gate_lock);
    const int all = waiting == threads;
    if (all) {
      started = 1;
      cnd_broadcast(&gate_cond);
    }
    mtx_unlock(&gate_lock);
    if (all) break;
    thrd_yield();
  }
  for (int i = 0; i < threads; i++) pthread_join(tids[i], NULL);
  free(tids);
  fprintf(stderr, "c11_wait_ns=%llu c11_calls=%llu c11_long_ns=%llu "
          "spin_wait_ns=%llu spin_calls=%llu spin_long_ns=%llu\n",
          (unsigned long long)c11_wait_ns, (unsigned long long)c11_calls, (unsigned long long)c11_long_ns,
          (unsigned long long)spin_wait_ns, (unsigned long long)spin_calls, (unsigned long long)spin_long_ns);
  return 0;
}
