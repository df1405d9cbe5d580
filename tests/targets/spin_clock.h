/* spin_clock.h — the monotonic clock in nanoseconds, and a busy wait on it, for the test targets
 * that hold a lock for a set time (lock_contention.c, held_locks.c, lock_kinds.c).  Each target is
 * one translation unit: the functions are static. */
#ifndef ALLOCSCOPE_TESTS_SPIN_CLOCK_H
#define ALLOCSCOPE_TESTS_SPIN_CLOCK_H

#include <stdint.h>
#include <time.h>

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static volatile uint64_t spin_sink;

/* Runs on the CPU for `us` microseconds (a holder that keeps its lock busy, not asleep). */
__attribute__((noinline)) static void spin_us(long us) {
  const uint64_t end = now_ns() + (uint64_t)us * 1000u;
  uint64_t x = 0;
  while (now_ns() < end) x++;
  spin_sink += x;
}

#endif
