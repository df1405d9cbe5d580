// allocscope/window_phase.h: where each period's timing window falls, as the shim and the analyzer
// both compute it.
#include "allocscope/window_phase.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <vector>

namespace allocscope {
namespace {

constexpr uint64_t kSeed = 0x1234'5678'9abc'def0ull;

TEST(WindowPhase, OffsetsStayInsideTheirPeriod) {
  for (unsigned shift : {10u, 20u, 21u, 40u}) {
    const uint64_t period = uint64_t{1} << shift;
    for (uint64_t sample : {2ull, 3ull, 8ull, 64ull, 1000ull}) {
      const uint64_t len = period / sample;
      uint64_t lowest = ~uint64_t{0}, highest = 0;
      for (uint64_t p = 0; p < 20'000; ++p) {
        const uint64_t off = window_offset(p, len, period, kSeed);
        ASSERT_LE(off + len, period) << "shift " << shift << " sample " << sample << " period " << p;
        lowest = std::min(lowest, off);
        highest = std::max(highest, off);
      }
      // The whole range is used: near both ends within a few thousandths of it.
      const uint64_t room = period - len;
      EXPECT_LE(lowest, room / 500 + 1) << shift << " " << sample;
      EXPECT_GE(highest, room - room / 500 - 1) << shift << " " << sample;
    }
  }
}

TEST(WindowPhase, OffsetsAreRoughlyUniform) {
  constexpr uint64_t kPeriod = uint64_t{1} << 21;
  constexpr uint64_t kLen = kPeriod / 64;
  constexpr unsigned kBins = 16;
  constexpr uint64_t kPeriods = 160'000;
  for (uint64_t seed : {uint64_t{0}, kSeed, ~uint64_t{0}}) {
    std::vector<uint64_t> bins(kBins);
    uint64_t rises = 0, prev = 0;
    for (uint64_t p = 0; p < kPeriods; ++p) {
      const uint64_t off = window_offset(p, kLen, kPeriod, seed);
      ++bins[off * kBins / (kPeriod - kLen + 1)];
      if (p > 0 && off > prev) ++rises;
      prev = off;
    }
    // 10,000 expected per bin, a standard deviation of about 100.
    for (unsigned b = 0; b < kBins; ++b) {
      EXPECT_NEAR(static_cast<double>(bins[b]), kPeriods / kBins, 600.0) << "seed " << seed << " bin " << b;
    }
    // Consecutive periods are unrelated: the next offset is higher about half the time.
    EXPECT_NEAR(static_cast<double>(rises) / (kPeriods - 1), 0.5, 0.01) << "seed " << seed;
  }
}

TEST(WindowPhase, DeterministicAndSeedDependent) {
  constexpr uint64_t kPeriod = uint64_t{1} << 20;
  constexpr uint64_t kLen = kPeriod / 64;
  static_assert(window_offset(7, kLen, kPeriod, kSeed) == window_offset(7, kLen, kPeriod, kSeed));
  unsigned same = 0;
  for (uint64_t p = 1'000'000; p < 1'001'000; ++p) {
    EXPECT_EQ(window_offset(p, kLen, kPeriod, kSeed), window_offset(p, kLen, kPeriod, kSeed));
    same += window_offset(p, kLen, kPeriod, kSeed) == window_offset(p, kLen, kPeriod, kSeed + 1);
  }
  EXPECT_LE(same, 5u);  // another seed, other windows
  // Fixed values, so that profiles read the same build after build: with seed 0 the periods 1, 2
  // hash to splitmix64's first outputs from state 0.
  EXPECT_EQ(mix64(0x9e3779b97f4a7c15ull), 0xe220a8397b1dcdafull);
  EXPECT_EQ(mix64(2 * 0x9e3779b97f4a7c15ull), 0x6e789e6aa1b965f4ull);
  // … scaled by a multiply-high to the window's possible starts.
  EXPECT_EQ(window_offset(1, 1024, 1u << 20, 0),
            static_cast<uint64_t>((static_cast<unsigned __int128>(0xe220a8397b1dcdafull) * ((1u << 20) - 1024 + 1)) >> 64));
}

TEST(WindowPhase, NoOffsetWhenEveryCallIsTimed) {
  for (uint64_t p : {0ull, 1ull, 12345ull, ~0ull >> 20}) {
    EXPECT_EQ(window_offset(p, 1u << 20, 1u << 20, kSeed), 0u);  // sample 1: the window is the period
    EXPECT_EQ(window_offset(p, 1u << 21, 1u << 20, kSeed), 0u);
  }
  // A window one tick shorter than its period starts at 0 or 1, both.
  bool zero = false, one = false;
  for (uint64_t p = 0; p < 64; ++p) {
    const uint64_t off = window_offset(p, (1u << 20) - 1, 1u << 20, kSeed);
    ASSERT_LE(off, 1u);
    (off ? one : zero) = true;
  }
  EXPECT_TRUE(zero && one);
}

TEST(WindowPhase, WindowStartOfATick) {
  constexpr unsigned kShift = 20;
  constexpr uint64_t kLen = (uint64_t{1} << kShift) / 16;
  const uint64_t tick = (uint64_t{777} << kShift) + 4321;
  // Without the phase (profiles written before it), the period's first tick.
  EXPECT_EQ(window_start_of(tick, kShift, kLen, false, kSeed), uint64_t{777} << kShift);
  EXPECT_EQ(window_start_of(tick, kShift, kLen, true, kSeed),
            (uint64_t{777} << kShift) + window_offset(777, kLen, uint64_t{1} << kShift, kSeed));
  // Every tick of a period names the same window.
  EXPECT_EQ(window_start_of(uint64_t{777} << kShift, kShift, kLen, true, kSeed),
            window_start_of((uint64_t{778} << kShift) - 1, kShift, kLen, true, kSeed));
}

}  // namespace
}  // namespace allocscope
