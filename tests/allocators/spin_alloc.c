/* libspin_alloc.so — forwards the malloc family to glibc; malloc of a size in a chosen range
 * first busy-waits a known time.  A ground truth for attribution: the time it adds, and where.
 *
 *   SPIN_ALLOC_RANGE=lo-hi   sizes delayed, inclusive (default 256-511)
 *   SPIN_ALLOC_NS=n          busy-wait per delayed call, in ns of CLOCK_MONOTONIC (default 2000)
 *   SPIN_ALLOC_SLEEP=1       sleep that long instead (nanosleep: the thread leaves the CPU, a
 *                            voluntary context switch, as a thread waiting for a sleeping lock does)
 *   SPIN_ALLOC_REPORT=path   at exit, write the number of delayed calls there (decimal, newline)
 *
 * The wait reads clock_gettime(CLOCK_MONOTONIC) (the vDSO: no system call) until n ns have passed
 * since the call began, so each delayed call takes at least n ns more than glibc's malloc.  Only
 * malloc is delayed; calloc, realloc and the rest are forwarded as they are.  The report is
 * written at exit(3) (library destructor), not after _exit or a crash.
 */
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static uint64_t range_lo = 256, range_hi = 511, spin_ns = 2000;
static int sleep_instead;
static uint64_t delayed;  /* atomic */
static pthread_once_t configured = PTHREAD_ONCE_INIT;

/* A decimal number at *s, advancing *s; `fallback` when there is none. */
static uint64_t parse_u64(const char **s, uint64_t fallback) {
  const char *p = *s;
  uint64_t v = 0;
  int digits = 0;
  while (*p >= '0' && *p <= '9') {
    v = v * 10 + (uint64_t)(*p - '0');
    ++p;
    ++digits;
  }
  *s = p;
  return digits ? v : fallback;
}

static void configure(void) {
  const char *range = getenv("SPIN_ALLOC_RANGE");
  if (range) {
    uint64_t lo = parse_u64(&range, range_lo), hi = range_hi;
    if (*range == '-') {
      ++range;
      hi = parse_u64(&range, hi);
    }
    range_lo = lo;
    range_hi = hi;
  }
  const char *ns = getenv("SPIN_ALLOC_NS");
  if (ns) spin_ns = parse_u64(&ns, spin_ns);
  const char *sleep_mode = getenv("SPIN_ALLOC_SLEEP");
  sleep_instead = sleep_mode && *sleep_mode == '1';
}

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void family_enter(void) {}
static void family_leave(void) {}

static void family_before_malloc(size_t n) {
  pthread_once(&configured, configure);
  if (n < range_lo || n > range_hi || spin_ns == 0) return;
  const uint64_t start = now_ns();
  if (sleep_instead) {
    struct timespec ts = {(time_t)(spin_ns / 1000000000u), (long)(spin_ns % 1000000000u)};
    while (nanosleep(&ts, &ts) != 0) {
    }
  }
  while (now_ns() - start < spin_ns) {
  }
  __atomic_add_fetch(&delayed, 1, __ATOMIC_RELAXED);
}

__attribute__((constructor)) static void spin_alloc_init(void) { pthread_once(&configured, configure); }

__attribute__((destructor)) static void spin_alloc_report(void) {
  const char *path = getenv("SPIN_ALLOC_REPORT");
  if (!path || !*path) return;
  char text[24];
  char *end = text + sizeof text, *p = end;
  *--p = '\n';
  uint64_t v = __atomic_load_n(&delayed, __ATOMIC_RELAXED);
  do {
    *--p = (char)('0' + v % 10);
    v /= 10;
  } while (v);
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return;
  ssize_t ignored = write(fd, p, (size_t)(end - p));
  (void)ignored;
  close(fd);
}

#include "family.h"
