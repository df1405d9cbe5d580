/* rt_signals.c — a threaded program that uses every real-time signal itself.
 *
 *   rt_signals WHEN [THREADS] [MS]
 *     WHEN    "first": installs its handlers before any thread starts;
 *             "later": after its threads have allocated for half of MS;
 *             "blocked": installs none, and its threads block every signal while they allocate
 *             (as threads do that leave signals to sigwait or signalfd); each counts, before it
 *             ends, the real-time signals pending on it
 *             "waitall": installs none; its threads allocate for a tenth of MS, then block every
 *             signal and allocate on, then take with sigtimedwait every signal pending on them
 *             (a thread that takes whatever comes), and count them and those still pending
 *             "ask": installs none; once its threads are done, asks sigaction for the disposition
 *             of every real-time signal, then sets each to SIG_DFL with signal(), and counts the
 *             answers, of either, that were not SIG_DFL (a program that looks for a free signal
 *             this way must find them all free)
 *     THREADS allocating threads, 2..64, default 2
 *     MS      how long they allocate, in milliseconds, default 400
 *
 * It installs a handler on every real-time signal (SIGRTMIN..SIGRTMAX) that counts deliveries,
 * then (or meanwhile) runs THREADS threads that malloc and free blocks of 16-1039 bytes until MS
 * milliseconds have passed.  It never sends itself a signal: a delivery it counts came from
 * elsewhere.  Prints "rt_signals: N signals" (N the deliveries counted, and with "blocked" the
 * signals left pending) and exits 0 when N is 0,
 * 3 when it is not; 1 when a thread or handler could not be set up, 2 on a usage error.
 *
 * Expected calls made by the program's own code: malloc and free of 16-1039 bytes, as many as
 * the threads manage in MS milliseconds (each thread keeps at most 64 blocks; all are freed).
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static volatile sig_atomic_t g_received;
static uint64_t g_end_ns;

static void count(int sig) {
  (void)sig;
  g_received = g_received + 1;
}

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int take_every_rt_signal(void) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = count;
  sa.sa_flags = SA_RESTART;
  sigemptyset(&sa.sa_mask);
  for (int s = SIGRTMIN; s <= SIGRTMAX; s++)
    if (sigaction(s, &sa, NULL) != 0) return -1;
  return 0;
}

static int g_block;
static int g_waitall;
static uint64_t g_block_ns;  /* waitall: when the threads block every signal */
static volatile int g_pending;

static void *worker(void *arg) {
  int blocked = 0;
  if (g_block) {
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, NULL);
  }
  uint64_t x = (uintptr_t)arg * 0x9e3779b97f4a7c15u + 1;
  void *blocks[64] = {0};
  unsigned long ops = 0;
  while ((ops & 255) != 0 || now_ns() < g_end_ns) {
    if (g_waitall && !blocked && (ops & 255) == 0 && now_ns() >= g_block_ns) {
      sigset_t all;
      sigfillset(&all);
      pthread_sigmask(SIG_BLOCK, &all, NULL);
      blocked = 1;
    }
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    const unsigned k = (unsigned)(x % 64);
    if (blocks[k]) {
      free(blocks[k]);
      blocks[k] = NULL;
    } else {
      const size_t n = 16 + (size_t)(x >> 32) % 1024;
      blocks[k] = malloc(n);
      if (blocks[k]) memset(blocks[k], 1, n < 64 ? n : 64);
    }
    ++ops;
  }
  for (int k = 0; k < 64; k++) free(blocks[k]);
  if (g_waitall) {
    sigset_t all;
    sigfillset(&all);
    const struct timespec none = {0, 0};
    while (sigtimedwait(&all, NULL, &none) > 0) __atomic_add_fetch(&g_pending, 1, __ATOMIC_RELAXED);
  }
  if (g_block || g_waitall) {
    sigset_t pending;
    sigpending(&pending);
    for (int s = SIGRTMIN; s <= SIGRTMAX; s++)
      if (sigismember(&pending, s)) __atomic_add_fetch(&g_pending, 1, __ATOMIC_RELAXED);
  }
  return NULL;
}

int main(int argc, char **argv) {
  if (argc < 2 || (strcmp(argv[1], "first") != 0 && strcmp(argv[1], "later") != 0 &&
                    strcmp(argv[1], "blocked") != 0 && strcmp(argv[1], "waitall") != 0 &&
                    strcmp(argv[1], "ask") != 0)) {
    fprintf(stderr, "usage: rt_signals first|later|blocked|waitall|ask [THREADS] [MS]\n");
    return 2;
  }
  const int later = strcmp(argv[1], "later") == 0;
  const long threads = argc > 2 ? strtol(argv[2], NULL, 10) : 2;
  const long ms = argc > 3 ? strtol(argv[3], NULL, 10) : 400;
  if (threads < 2 || threads > 64 || ms < 1 || ms > 100000) {
    fprintf(stderr, "usage: rt_signals first|later|blocked|waitall|ask [THREADS] [MS]\n");
    return 2;
  }
  const int ask = strcmp(argv[1], "ask") == 0;
  g_waitall = strcmp(argv[1], "waitall") == 0;
  g_block = strcmp(argv[1], "blocked") == 0;
  if (!later && !g_block && !g_waitall && !ask && take_every_rt_signal() != 0) return 1;
  const uint64_t start = now_ns();
  g_end_ns = start + (uint64_t)ms * 1000000u;
  g_block_ns = start + (uint64_t)ms * 100000u;
  pthread_t t[64];
  for (long i = 0; i < threads; i++)
    if (pthread_create(&t[i], NULL, worker, (void *)(uintptr_t)(i + 1)) != 0) return 1;
  if (later) {
    const struct timespec half = {(time_t)(ms / 2000), (long)(ms / 2 % 1000) * 1000000L};
    nanosleep(&half, NULL);
    if (take_every_rt_signal() != 0) return 1;
  }
  for (long i = 0; i < threads; i++) pthread_join(t[i], NULL);
  int taken = 0;
  for (int sig = ask ? SIGRTMIN : 1; ask && sig <= SIGRTMAX; sig++) {
    struct sigaction old;
    if (sigaction(sig, NULL, &old) != 0 || old.sa_handler != SIG_DFL) taken++;
    if (signal(sig, SIG_DFL) != SIG_DFL) taken++;
  }
  const int n = (int)g_received + g_pending + taken;
  printf("rt_signals: %d signals\n", n);
  return n == 0 ? 0 : 3;
}
