/* periodic.c — a program whose allocations repeat in step with allocscope's sampling period.
 *
 *   periodic CLOCK SHIFT PERIODS   CLOCK: tsc or monotonic, the shim's tick (`dump --json`,
 *                                  calibration.clock); SHIFT: its window_shift; PERIODS: how many
 *                                  periods of 2^SHIFT ticks to run, 1..100000
 *   periodic probe                 one malloc and free: a profile to read CLOCK and SHIFT from
 *
 * Time is cut as the shim cuts it: period p holds the ticks t with t >> SHIFT == p.  Each period
 * is cut into 8 equal phases, and during phase k the program mallocs a block of SIZES[k] bytes,
 * writes its first and last byte and frees it, again and again, reading the clock before each
 * block.  Every phase of the period thus has a size of its own: timing windows that fell at the
 * same place in every period would time one or two of the sizes and never the others.  It runs
 * from the start of the next period for PERIODS whole periods.  Prints "periodic: N blocks" on
 * stderr and exits 0; 2 on a usage error.
 *
 * Expected calls made by the program's own code: N mallocs and N frees, of the 8 sizes below
 * (32, 96, 192, 384, 768, 1536, 3072, 6144 bytes: one size bucket each), about N/8 of each.
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#if defined(__x86_64__)
#include <x86intrin.h>
#endif

enum { PHASES = 8 };
static const size_t sizes[PHASES] = {32, 96, 192, 384, 768, 1536, 3072, 6144};

static int use_tsc;

static uint64_t ticks(void) {
#if defined(__x86_64__)
  if (use_tsc) return __rdtsc();
#endif
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int usage(void) {
  fprintf(stderr, "usage: periodic tsc|monotonic SHIFT PERIODS | periodic probe\n");
  return 2;
}

int main(int argc, char **argv) {
  if (argc == 2 && strcmp(argv[1], "probe") == 0) {
    char *volatile p = malloc(64);
    free(p);
    return 0;
  }
  if (argc != 4) return usage();
  if (strcmp(argv[1], "tsc") == 0) {
#if defined(__x86_64__)
    use_tsc = 1;
#else
    return usage();
#endif
  } else if (strcmp(argv[1], "monotonic") != 0) {
    return usage();
  }
  const long shift = strtol(argv[2], NULL, 10), periods = strtol(argv[3], NULL, 10);
  if (shift < 4 || shift > 40 || periods < 1 || periods > 100000) return usage();
  const unsigned phase_shift = (unsigned)shift - 3;  /* 8 phases a period */

  const uint64_t first = (ticks() >> shift) + 1;
  const uint64_t start = first << shift, end = (first + (uint64_t)periods) << shift;
  uint64_t now;
  while ((now = ticks()) < start) {
  }
  uint64_t blocks = 0;
  size_t sink = 0;
  for (; now < end; now = ticks()) {
    const size_t size = sizes[(now >> phase_shift) & (PHASES - 1)];
    char *p = malloc(size);
    if (!p) return 1;
    p[0] = (char)blocks;
    p[size - 1] = (char)(blocks >> 8);
    sink += (size_t)p[0] + (size_t)p[size - 1];
    free(p);
    blocks++;
  }
  fprintf(stderr, "periodic: %llu blocks (%zu)\n", (unsigned long long)blocks, sink & 1);
  return 0;
}
