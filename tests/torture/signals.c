/* signals.c — signal handlers that call the allocator while the interrupted thread is inside it
 * (and so inside a recorder's bookkeeping around it), at a high rate.
 *
 *   signals THREADS MS [alloc]
 *
 * THREADS workers (1..64) run iterations of malloc(16 + (i & 127)), write, free, for MS ms.
 * Meanwhile SIGALRM arrives every 100 µs (setitimer ITIMER_REAL, delivered to any thread), and a
 * signaller thread sends SIGPROF to each worker in turn (tgkill) about every 20 µs.  Both handlers
 * make exactly one allocator call each, malloc_usable_size(block), which is async-signal-safe in
 * glibc and musl (no lock); with "alloc" they also malloc(777), write and free it, which is safe
 * only when the allocator itself is (tests preload libtorture_sigsafe_alloc.so behind the shim).
 *
 * Prints "signals: THREADS threads ok" on stdout and exits 0 (1 if a check failed, 2 on a usage
 * error).  What varies from run to run goes to stderr: "signals: iterations I" (all workers),
 * "signals: handled N" and "signals: alloc-calls M" (the handlers' malloc(777) calls).
 *
 * Expected calls: I mallocs in the workers (sizes 16..143), as many frees; N calls of
 * malloc_usable_size, each either recorded or — when it interrupted the recorder itself — passed
 * through and counted as reentrant; with "alloc", M = N mallocs of 777 bytes likewise.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

enum { MAX_THREADS = 64 };

static void out(int fd, const char *s) {
  size_t n = strlen(s);
  while (n > 0) {
    ssize_t w = write(fd, s, n);
    if (w <= 0) return;
    s += w;
    n -= (size_t)w;
  }
}

static void *block;                  /* malloc_usable_size target, allocated before any signal */
static int alloc_in_handler;
static atomic_long handled, alloc_calls, bad, iterations;
static atomic_int stop;
static atomic_int worker_tids[MAX_THREADS];
static atomic_int workers_done;

static void handler(int sig) {
  (void)sig;
  int saved = errno;
  if (malloc_usable_size(block) < 64) atomic_fetch_add(&bad, 1);
  if (alloc_in_handler) {
    unsigned char *volatile p = malloc(777);
    if (p == NULL) {
      atomic_fetch_add(&bad, 1);
    } else {
      p[0] = 1;
      p[776] = 2;
      free(p);
    }
    atomic_fetch_add(&alloc_calls, 1);
  }
  atomic_fetch_add(&handled, 1);
  errno = saved;
}

static void *worker(void *arg) {
  int index = (int)(long)arg;
  atomic_store(&worker_tids[index], (int)syscall(SYS_gettid));
  long i = 0;
  for (; !atomic_load_explicit(&stop, memory_order_relaxed); i++) {
    size_t size = 16 + (size_t)(i & 127);
    unsigned char *volatile p = malloc(size);
    if (p == NULL) {
      atomic_fetch_add(&bad, 1);
      continue;
    }
    p[0] = (unsigned char)i;
    p[size - 1] = (unsigned char)i;
    free(p);
  }
  atomic_fetch_add(&iterations, i);
  atomic_store(&worker_tids[index], 0);
  atomic_fetch_add(&workers_done, 1);
  return NULL;
}

static int nthreads;

static void *signaller(void *arg) {
  (void)arg;
  prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);  /* sleep 20 µs, not the default slack of 50 */
  pid_t pid = getpid();
  struct timespec pause = {0, 20000};
  for (unsigned k = 0; atomic_load(&workers_done) < nthreads; k++) {
    int tid = atomic_load(&worker_tids[k % (unsigned)nthreads]);
    if (tid != 0) syscall(SYS_tgkill, pid, tid, SIGPROF);
    nanosleep(&pause, NULL);
  }
  return NULL;
}

int main(int argc, char **argv) {
  if (argc < 3 || argc > 4) goto usage;
  nthreads = atoi(argv[1]);
  long ms = atol(argv[2]);
  if (nthreads < 1 || nthreads > MAX_THREADS || ms < 1) goto usage;
  if (argc == 4) {
    if (strcmp(argv[3], "alloc") != 0) goto usage;
    alloc_in_handler = 1;
  }
  block = malloc(100);
  if (block == NULL) return 1;

  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = handler;
  sa.sa_flags = SA_RESTART;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGALRM, &sa, NULL);
  sigaction(SIGPROF, &sa, NULL);
  struct itimerval every = {{0, 100}, {0, 100}};
  setitimer(ITIMER_REAL, &every, NULL);

  pthread_t threads[MAX_THREADS], sig_thread;
  for (int i = 0; i < nthreads; i++)
    if (pthread_create(&threads[i], NULL, worker, (void *)(long)i) != 0) return 1;
  if (pthread_create(&sig_thread, NULL, signaller, NULL) != 0) return 1;
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) != 0) {
  }
  atomic_store(&stop, 1);
  for (int i = 0; i < nthreads; i++) pthread_join(threads[i], NULL);
  pthread_join(sig_thread, NULL);

  struct itimerval off = {{0, 0}, {0, 0}};
  setitimer(ITIMER_REAL, &off, NULL);
  signal(SIGALRM, SIG_IGN);
  signal(SIGPROF, SIG_IGN);

  char line[128];
  snprintf(line, sizeof line, "signals: iterations %ld\nsignals: handled %ld\nsignals: alloc-calls %ld\n",
           atomic_load(&iterations), atomic_load(&handled), atomic_load(&alloc_calls));
  out(2, line);
  if (atomic_load(&bad) != 0) {
    out(1, "signals: FAILED\n");
    return 1;
  }
  free(block);
  snprintf(line, sizeof line, "signals: %d threads ok\n", nthreads);
  out(1, line);
  return 0;

usage:
  out(2, "usage: signals THREADS MS [alloc]\n");
  return 2;
}
