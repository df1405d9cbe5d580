/* threads.c — threads that come and go in the ways that strain per-thread bookkeeping.
 *
 *   threads many N         N short threads (at most 64 alive at once, each joined): each mallocs
 *                          and frees one block of 52, 520 and 5200 bytes.  Prints
 *                          "threads: N threads ok".
 *   threads tls N          N threads, each storing a value under two pthread keys: key A was
 *                          created by a constructor before anything else ran, key B by main after
 *                          its first malloc.  Key A's destructor mallocs and frees 2 x 7777 B,
 *                          key B's 3 x 9999 B: allocations made after the thread's own exit
 *                          bookkeeping may have run.  Prints "threads: N threads, destructors ran".
 *   threads detached N     N detached threads each malloc and free 1 x 1300 B, then count
 *                          themselves done; main exits as soon as all have counted (while some
 *                          are still being torn down).  Prints "threads: N detached".
 *   threads exit_in_thread 4 threads malloc and free in a loop; after 200 ms a fifth thread
 *                          prints "threads: exit from a thread" and calls exit(5) while they run.
 *
 * Expected calls (made by the program's own code; the C library adds some around thread creation
 * and exit, in other sizes):
 *   many N:      N x malloc(52), N x malloc(520), N x malloc(5200), and as many frees
 *   tls N:       2N x malloc(7777), 3N x malloc(9999)
 *   detached N:  N x malloc(1300)
 * Exit status 0 (exit_in_thread: 5); 1 if a thread could not be created or a check failed; 2 on a
 * usage error.  Output is written with write(2).
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static void out(const char *s) {
  size_t n = strlen(s);
  while (n > 0) {
    ssize_t w = write(1, s, n);
    if (w <= 0) return;
    s += w;
    n -= (size_t)w;
  }
}

static void churn(size_t size, int n) {
  for (int i = 0; i < n; i++) {
    unsigned char *volatile p = malloc(size);
    if (p == NULL) abort();
    p[0] = (unsigned char)i;
    p[size - 1] = (unsigned char)i;
    free(p);
  }
}

static void sleep_ms(long ms) {
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) != 0) {
  }
}

/* --- many ----------------------------------------------------------------------------------- */

static void *short_worker(void *arg) {
  churn(52, 1);
  churn(520, 1);
  churn(5200, 1);
  return arg;
}

static int run_many(long n) {
  enum { ALIVE = 64 };
  pthread_t ring[ALIVE];
  long created = 0, joined = 0;
  while (joined < n) {
    while (created < n && created - joined < ALIVE) {
      int rc = pthread_create(&ring[created % ALIVE], NULL, short_worker, (void *)(intptr_t)created);
      if (rc != 0) {
        out("threads: pthread_create failed\n");
        return 1;
      }
      created++;
    }
    void *ret = NULL;
    pthread_join(ring[joined % ALIVE], &ret);
    if ((intptr_t)ret != joined) return 1;
    joined++;
  }
  char line[64];
  snprintf(line, sizeof line, "threads: %ld threads ok\n", n);
  out(line);
  return 0;
}

/* --- tls ------------------------------------------------------------------------------------ */

static pthread_key_t key_a, key_b;
static atomic_long destructors_ran;

static void destroy_a(void *value) {
  (void)value;
  churn(7777, 2);
  atomic_fetch_add(&destructors_ran, 1);
}

static void destroy_b(void *value) {
  (void)value;
  churn(9999, 3);
  atomic_fetch_add(&destructors_ran, 1);
}

__attribute__((constructor(101))) static void create_key_a(void) {
  if (pthread_key_create(&key_a, destroy_a) != 0) abort();
}

static void *tls_worker(void *arg) {
  pthread_setspecific(key_a, arg);
  pthread_setspecific(key_b, arg);
  churn(100, 1);
  return NULL;
}

static int run_tls(long n) {
  churn(100, 1);
  if (pthread_key_create(&key_b, destroy_b) != 0) return 1;
  for (long i = 0; i < n; i++) {
    pthread_t t;
    if (pthread_create(&t, NULL, tls_worker, (void *)(intptr_t)(i + 1)) != 0) return 1;
    pthread_join(t, NULL);
  }
  if (atomic_load(&destructors_ran) != 2 * n) return 1;
  char line[96];
  snprintf(line, sizeof line, "threads: %ld threads, destructors ran\n", n);
  out(line);
  return 0;
}

/* --- detached ------------------------------------------------------------------------------- */

static atomic_long detached_done;

static void *detached_worker(void *arg) {
  churn(1300, 1);
  atomic_fetch_add(&detached_done, 1);
  return arg;
}

static int run_detached(long n) {
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
  for (long i = 0; i < n; i++) {
    pthread_t t;
    while (pthread_create(&t, &attr, detached_worker, NULL) != 0) sleep_ms(1);  /* EAGAIN */
  }
  while (atomic_load(&detached_done) < n) sleep_ms(1);
  char line[64];
  snprintf(line, sizeof line, "threads: %ld detached\n", n);
  out(line);
  return 0;
}

/* --- exit_in_thread ------------------------------------------------------------------------- */

static void *looping_worker(void *arg) {
  for (unsigned i = 0;; i++) churn(16 + (i & 511), 1);
  return arg;
}

static void *exiting_thread(void *arg) {
  sleep_ms(200);
  out("threads: exit from a thread\n");
  exit(5);
  return arg;
}

static int run_exit_in_thread(void) {
  pthread_t t;
  for (int i = 0; i < 4; i++)
    if (pthread_create(&t, NULL, looping_worker, NULL) != 0) return 1;
  if (pthread_create(&t, NULL, exiting_thread, NULL) != 0) return 1;
  for (;;) sleep_ms(1000);
}

int main(int argc, char **argv) {
  if (argc == 2 && strcmp(argv[1], "exit_in_thread") == 0) return run_exit_in_thread();
  if (argc != 3) goto usage;
  char *end = NULL;
  long n = strtol(argv[2], &end, 10);
  if (*end != '\0' || n < 1 || n > 1000000) goto usage;
  if (strcmp(argv[1], "many") == 0) return run_many(n);
  if (strcmp(argv[1], "tls") == 0) return run_tls(n);
  if (strcmp(argv[1], "detached") == 0) return run_detached(n);

usage:
  out("usage: threads many|tls|detached N | threads exit_in_thread\n");
  return 2;
}
