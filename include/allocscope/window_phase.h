// allocscope/window_phase.h — where a sampling period's timing window falls, shared by the shim
// (which times calls inside it) and the analyzer (which must find the same windows again).
//
// Time is cut into periods of 2^window_shift ticks; period p holds one window of window_len ticks.
// A window at the same place in every period would alias with a program whose behaviour repeats
// in step with the period (say a loop that allocates one size for half a millisecond, then
// another): whole phases of it would never be timed.  So each period's window starts at its own
// pseudo-random offset, a hash of the period number and a per-profile seed (written to the
// profile's Calibration, format.h kModeWindowPhase), uniform over [0, period - window_len]: the
// window always ends inside its period, so `tick >> window_shift` still names the window a tick
// belongs to.  With window_len >= period (every call timed) the offset is 0.
//
// Header-only, allocation-free, usable inside the shim.  Profiles written before the seed was
// recorded have their windows at offset 0: the reader passes phased = false.
#pragma once
#include <cstdint>

namespace allocscope {

// The finalizer of splitmix64 (Steele, Lea, Flood): a bijection on 64 bits whose every output
// bit depends on every input bit.
constexpr uint64_t mix64(uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebull;
  x ^= x >> 31;
  return x;
}

// The offset of period `period_index`'s window from the period's first tick: uniform in
// [0, period - window_len] over the periods, the same for the same arguments everywhere.
// `period` is 2^window_shift; 0 when window_len >= period.
constexpr uint64_t window_offset(uint64_t period_index, uint64_t window_len, uint64_t period,
                                 uint64_t seed) {
  if (window_len >= period) return 0;
  const uint64_t positions = period - window_len + 1;
  // The period numbers as a splitmix64 sequence seeded with `seed`, scaled to the positions by
  // a multiply-high (no division: this runs on the shim's clock checks).
  const uint64_t h = mix64(seed + period_index * 0x9e3779b97f4a7c15ull);
  return static_cast<uint64_t>((static_cast<unsigned __int128>(h) * positions) >> 64);
}

// The first tick of the window of the period that holds `tick`; without a phase (a profile
// written before the seed was recorded), the period's own first tick.
constexpr uint64_t window_start_of(uint64_t tick, unsigned window_shift, uint64_t window_len,
                                   bool phased, uint64_t seed) {
  const uint64_t period_index = tick >> window_shift;
  const uint64_t start = period_index << window_shift;
  if (!phased) return start;
  return start + window_offset(period_index, window_len, uint64_t{1} << window_shift, seed);
}

// How soon every thread notices a window, and what the analyzer leaves out for it.  Outside
// windows a thread reads the clock only every few calls, as many as take about the check gap
// (shim recorder.cpp, next_check_interval): window/8, at least 1 µs and at most kCheckGapMaxNs,
// so that while its calls keep their pace it notices a window opening within that.  The analyzer
// trusts a window from min(window/4, kWindowTrimNs) after its start: twice the longest check gap.
constexpr uint64_t kCheckGapMaxNs = 2500;
constexpr uint64_t kWindowTrimNs = 2 * kCheckGapMaxNs;

}  // namespace allocscope
