/* quiet_spin.c — a thread that runs on the CPU while it makes no allocator call: what a thread's
 * lifetime and CPU time in `report` count from and to.
 *
 *   quiet_spin early MS               malloc and free 16 bytes once, then spin
 *   quiet_spin late MS                spin, then malloc and free 16 bytes once: the thread's
 *                                     first allocator call comes at its end
 *   quiet_spin flushed MS             malloc 16 bytes, then realloc the block to 16 or 32 bytes
 *                                     again and again until the profile (ALLOCSCOPE_OUTPUT) grows:
 *                                     the shim wrote the thread's counts inside the last call, that
 *                                     call included (record with --sample 0, so that nothing else is
 *                                     written meanwhile); then spin, the block still live
 *   quiet_spin exec MS PROGRAM [ARG…] spin, then execv PROGRAM: a wrapper that runs on the CPU
 *                                     before it execs the program, with no allocator call
 *
 * "Spin" runs on the CPU until the thread's CPU time (CLOCK_THREAD_CPUTIME_ID) has grown by MS
 * milliseconds (1..60000): MS of CPU time, and at least as much wall time, whatever else runs.
 * Exits 0; 1 when exec fails or the profile did not grow within 10 s; 2 on a usage error.
 *
 * Expected calls made by the program's own code: early, late: 1 malloc of 16 bytes and 1 free;
 * flushed: 1 malloc of 16 bytes and N reallocs (N >= 1), 16 bytes live at exit; exec: none.
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static uint64_t clock_ns(clockid_t id) {
  struct timespec ts;
  clock_gettime(id, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static volatile uint64_t sink;

static void spin_cpu_ms(long ms) {
  const uint64_t end = clock_ns(CLOCK_THREAD_CPUTIME_ID) + (uint64_t)ms * 1000000u;
  uint64_t x = 0;
  while (clock_ns(CLOCK_THREAD_CPUTIME_ID) < end) x++;
  sink += x;
}

static void one_block(void) {
  char* volatile p = malloc(16);
  if (!p) exit(1);
  p[0] = 1;
  free(p);
}

static long size_of(const char* path) {
  struct stat st;
  return path && stat(path, &st) == 0 ? (long)st.st_size : -1;
}

int main(int argc, char** argv) {
  const long ms = argc >= 3 ? strtol(argv[2], NULL, 10) : 0;
  if (argc < 3 || ms < 1 || ms > 60000) return 2;
  if (strcmp(argv[1], "early") == 0 && argc == 3) {
    one_block();
    spin_cpu_ms(ms);
  } else if (strcmp(argv[1], "late") == 0 && argc == 3) {
    spin_cpu_ms(ms);
    one_block();
  } else if (strcmp(argv[1], "flushed") == 0 && argc == 3) {
    // A realloc is counted before the shim decides whether to write (a free after it): the
    // call that wrote is in the counts written, and no call comes after it.
    const char* path = getenv("ALLOCSCOPE_OUTPUT");
    const long before = size_of(path);
    const uint64_t give_up = clock_ns(CLOCK_MONOTONIC) + 10000000000u;
    char* volatile p = malloc(16);
    for (size_t size = 32; p && size_of(path) == before; size = 48 - size) {
      if (clock_ns(CLOCK_MONOTONIC) > give_up) return 1;
      p = realloc(p, size);
    }
    if (!p) return 1;
    p[0] = 1;
    spin_cpu_ms(ms);
  } else if (strcmp(argv[1], "exec") == 0 && argc >= 4) {
    spin_cpu_ms(ms);
    execv(argv[3], argv + 3);
    return 1;
  } else {
    return 2;
  }
  return 0;
}
