// shim/tick_clock.h — the clock the shim times calls with.
//
// On x86_64 with an invariant TSC (CPUID 0x80000007 EDX bit 8) a tick is one TSC count, read with
// a plain rdtsc (≈12 ns here; lfence would double it, and call boundaries are already ordered well
// enough at this granularity).  Anywhere else a tick is one nanosecond of CLOCK_MONOTONIC through
// the vDSO.  tick_clock_init() decides once; ticks() is then branch-predictable and inlined.
#pragma once
#include <cstdint>
#include <ctime>
#if defined(__x86_64__)
#include <cpuid.h>
#include <x86intrin.h>
#endif

namespace allocscope {

extern bool g_use_tsc;

inline uint64_t mono_ns() {
  timespec ts;
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

inline uint64_t realtime_ns() {
  timespec ts;
  ::clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

inline uint64_t ticks() {
#if defined(__x86_64__)
  if (__builtin_expect(g_use_tsc, 1)) return __rdtsc();
#endif
  return mono_ns();
}

inline bool cpu_has_invariant_tsc() {
#if defined(__x86_64__)
  unsigned a, b, c, d;
  if (!__get_cpuid(0x80000000u, &a, &b, &c, &d) || a < 0x80000007u) return false;
  __get_cpuid(0x80000007u, &a, &b, &c, &d);
  return (d >> 8) & 1u;
#else
  return false;
#endif
}

}  // namespace allocscope
