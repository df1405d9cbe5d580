/* held_locks: contended waits that end with the lock held where no pthread_mutex_unlock follows
 * soon — the shim keeps a wait until the thread lets go of a lock, and these are the other ways a
 * kept wait must still reach the profile.
 *
 * usage: held_locks [ROUNDS [HOLD_US]]   (defaults 50, 300)
 *
 * Two workers take turns on `table` (a pthread_rwlock_t, write-locked: wrlock_section), ROUNDS
 * times each, holding it HOLD_US microseconds and then working HOLD_US / 2 outside it, so that most
 * calls wait: their waits end at pthread_rwlock_unlock.  Then:
 *   - `handoff`: worker 1 locks it and holds it (until worker 2 sleeps on it, then 2 ms more); worker 2 waits for it in
 *     exit_holding(), gets it, and its thread ends holding it (the wait ends at the thread's exit);
 *   - `last`: another thread locks it and holds it the same way, then unlocks; main waits for it in
 *     main_exit_holding() and returns from main holding it (the wait ends at the process's exit).
 * Each of the three locks is let go only once the thread that wants it sleeps in its futex wait
 * (/proc/self/task/TID/syscall), so that each makes at least one real wait however the threads
 * are scheduled.  The program measures its own waits around each call and prints on stderr:
 *   rw_wait_ns=<time in pthread_rwlock_wrlock> rw_calls=<its calls>
 *   handoff_wait_ns=<worker 2's wait for handoff> last_wait_ns=<main's wait for last>
 * Built with frame pointers and line tables, so that call sites resolve. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "spin_clock.h"

static pthread_rwlock_t table = PTHREAD_RWLOCK_INITIALIZER;
static pthread_mutex_t handoff = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t last = PTHREAD_MUTEX_INITIALIZER;
static atomic_int handoff_taken, last_taken, table_taken;
static atomic_int waiter_tid;  /* the thread about to wait for the lock its peer holds */
static int rounds = 50;
static long hold_us = 300;
static uint64_t rw_wait_ns, rw_calls;  /* under table */
static uint64_t handoff_wait_ns, last_wait_ns;

/* Returns once thread `tid` sleeps in a futex wait (at most 5 s). */
static void until_asleep_in_futex(int tid) {
  char path[64], buf[64];
  snprintf(path, sizeof path, "/proc/self/task/%d/syscall", tid);
  const uint64_t give_up = now_ns() + 5000000000ull;
  while (now_ns() < give_up) {
    FILE* f = fopen(path, "r");
    if (f) {
      const int got = fgets(buf, sizeof buf, f) != NULL;
      fclose(f);
      if (got && atol(buf) == SYS_futex) return;
    }
    struct timespec nap = {0, 50000};
    nanosleep(&nap, NULL);
  }
}

__attribute__((noinline)) static void wrlock_section(void) {
  const uint64_t t0 = now_ns();
  pthread_rwlock_wrlock(&table);
  rw_wait_ns += now_ns() - t0;
  rw_calls++;
  spin_us(hold_us);
  pthread_rwlock_unlock(&table);
  spin_us(hold_us / 2);  /* the other worker takes it meanwhile: the next wrlock waits */
}

__attribute__((noinline)) static void exit_holding(void) {
  while (!atomic_load(&handoff_taken)) spin_us(10);
  atomic_store(&waiter_tid, (int)syscall(SYS_gettid));
  const uint64_t t0 = now_ns();
  pthread_mutex_lock(&handoff);
  handoff_wait_ns = now_ns() - t0;
  /* the thread ends here, holding handoff */
}

__attribute__((noinline)) static int main_exit_holding(void) {
  while (!atomic_load(&last_taken)) spin_us(10);
  atomic_store(&waiter_tid, (int)syscall(SYS_gettid));
  const uint64_t t0 = now_ns();
  pthread_mutex_lock(&last);
  last_wait_ns = now_ns() - t0;
  return 0;  /* main returns holding last */
}

static void* worker(void* arg) {
  const int id = (int)(intptr_t)arg;
  void* block = malloc(64);
  /* The first wait for the rwlock is certain: worker 1 holds it until worker 2 sleeps on it. */
  if (id == 1) {
    pthread_rwlock_wrlock(&table);
    atomic_store(&table_taken, 1);
    while (!atomic_load(&waiter_tid)) spin_us(10);
    until_asleep_in_futex(atomic_load(&waiter_tid));
    pthread_rwlock_unlock(&table);
  } else {
    while (!atomic_load(&table_taken)) spin_us(10);
    atomic_store(&waiter_tid, (int)syscall(SYS_gettid));
    wrlock_section();
    atomic_store(&waiter_tid, 0);
  }
  for (int r = 0; r < rounds; r++) {
    wrlock_section();
    free(block);
    block = malloc(64 + r);
  }
  free(block);
  if (id == 1) {
    while (atomic_load(&waiter_tid)) spin_us(10);  /* worker 2's first wait is over */
    pthread_mutex_lock(&handoff);
    atomic_store(&handoff_taken, 1);
    while (!atomic_load(&waiter_tid)) spin_us(10);
    until_asleep_in_futex(atomic_load(&waiter_tid));
    spin_us(2000);
    pthread_mutex_unlock(&handoff);
  } else {
    exit_holding();
  }
  return NULL;
}

static void* last_holder(void* arg) {
  (void)arg;
  pthread_mutex_lock(&last);
  atomic_store(&last_taken, 1);
  while (!atomic_load(&waiter_tid)) spin_us(10);
  until_asleep_in_futex(atomic_load(&waiter_tid));
  spin_us(2000);
  pthread_mutex_unlock(&last);
  return NULL;
}

int main(int argc, char** argv) {
  if (argc > 1) rounds = atoi(argv[1]);
  if (argc > 2) hold_us = atol(argv[2]);
  pthread_t t[2], h;
  for (int i = 0; i < 2; i++) pthread_create(&t[i], NULL, worker, (void*)(intptr_t)(i + 1));
  for (int i = 0; i < 2; i++) pthread_join(t[i], NULL);
  atomic_store(&waiter_tid, 0);
  pthread_create(&h, NULL, last_holder, NULL);
  const int r = main_exit_holding();
  pthread_join(h, NULL);
  fprintf(stderr, "rw_wait_ns=%llu rw_calls=%llu\nhandoff_wait_ns=%llu last_wait_ns=%llu\n",
          (unsigned long long)rw_wait_ns, (unsigned long long)rw_calls,
          (unsigned long long)handoff_wait_ns, (unsigned long long)last_wait_ns);
  return r;
}
