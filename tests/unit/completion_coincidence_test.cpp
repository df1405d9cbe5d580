// completion_coincidence_test.cpp — the measure of calls taking turns (completion_coincidence.h) on
// streams of ends with known answers: independent threads, threads that take turns, and ends on a
// coarse clock's grid at different phases.
#include "completion_coincidence.h"

#include <gtest/gtest.h>

#include <random>

namespace allocscope {
namespace {

constexpr uint64_t kStep = 26;          // a 10 ns clock step at 2.6 GHz
constexpr uint64_t kWindow = 1u << 15;  // ticks of one timing window

// Rounds a tick down onto the clock's grid at a phase.
uint64_t on_grid(uint64_t tick, uint64_t phase) { return tick - (tick + kStep - phase) % kStep; }

// `windows` windows in which each of `threads` threads ends calls at random moments, `rate` per
// tick, each thread on its own phase of the grid.
CoincidenceTally independent(unsigned threads, double rate, unsigned windows, uint64_t seed) {
  CoincidenceTally t(kStep, 52);
  std::mt19937_64 rng(seed);
  std::exponential_distribution<double> gap(rate);
  std::vector<CallEnd> ends;
  for (unsigned w = 0; w < windows; ++w) {
    ends.clear();
    const uint64_t lo = uint64_t{w} << 20, hi = lo + kWindow;
    for (unsigned th = 0; th < threads; ++th) {
      double at = static_cast<double>(lo);
      for (;;) {
        at += gap(rng);
        if (at >= static_cast<double>(hi)) break;
        ends.push_back(CallEnd{on_grid(static_cast<uint64_t>(at), th * 13 % kStep), th, th % 3});
      }
    }
    t.add_window(ends, lo, hi);
  }
  return t;
}

TEST(CompletionCoincidence, IndependentThreadsReadOne) {
  for (unsigned threads : {2u, 4u, 8u}) {
    const CoincidenceMeasure m = independent(threads, 1.0 / 400, 400, threads).all();
    ASSERT_TRUE(m.value) << threads;
    EXPECT_GT(m.high(), 1.0) << threads;
    EXPECT_LT(m.low(), 1.0) << threads;
    EXPECT_NEAR(*m.value, 1.0, 0.08) << threads;
  }
}

TEST(CompletionCoincidence, ThreadsOnTheSameGridPhaseReadOne) {
  // Every end on the same grid: pairs are 0, 26, 52 … apart; the ties count for both orders.
  CoincidenceTally t(kStep, 52);
  std::mt19937_64 rng(7);
  std::exponential_distribution<double> gap(1.0 / 300);
  std::vector<CallEnd> ends;
  for (unsigned w = 0; w < 400; ++w) {
    ends.clear();
    const uint64_t lo = uint64_t{w} << 20, hi = lo + kWindow;
    for (unsigned th = 0; th < 2; ++th) {
      double at = static_cast<double>(lo);
      for (;;) {
        at += gap(rng);
        if (at >= static_cast<double>(hi)) break;
        ends.push_back(CallEnd{on_grid(static_cast<uint64_t>(at), 0), th, 0});
      }
    }
    t.add_window(ends, lo, hi);
  }
  const CoincidenceMeasure m = t.all();
  ASSERT_TRUE(m.value);
  EXPECT_NEAR(*m.value, 1.0, 0.08);
}

TEST(CompletionCoincidence, ThreadsThatTakeTurnsReadNearZero) {
  // One lock, critical sections of 150 ticks: the threads' calls end one after another, never
  // closer than a critical section.
  CoincidenceTally t(kStep, 52);
  std::mt19937_64 rng(3);
  std::uniform_int_distribution<uint64_t> section(150, 400);
  std::vector<CallEnd> ends;
  for (unsigned w = 0; w < 200; ++w) {
    ends.clear();
    const uint64_t lo = uint64_t{w} << 20, hi = lo + kWindow;
    uint64_t at = lo;
    for (uint32_t i = 0;; ++i) {
      at += section(rng);
      if (at >= hi) break;
      ends.push_back(CallEnd{on_grid(at, 0), i % 3, i % 5});
    }
    t.add_window(ends, lo, hi);
  }
  const CoincidenceMeasure m = t.all();
  ASSERT_TRUE(m.value);
  EXPECT_LT(m.high(), 0.1);
  const CoincidenceMeasure x = t.across_classes();
  ASSERT_TRUE(x.value);
  EXPECT_LT(x.high(), 0.1);
}

TEST(CompletionCoincidence, ALockPerClassLeavesOtherClassesCoinciding) {
  // Two classes, each served by its own lock: ends of one class keep apart, the two classes'
  // ends fall together as chance says.
  CoincidenceTally t(kStep, 52);
  std::mt19937_64 rng(11);
  std::uniform_int_distribution<uint64_t> section(150, 400);
  std::vector<CallEnd> ends;
  for (unsigned w = 0; w < 300; ++w) {
    ends.clear();
    const uint64_t lo = uint64_t{w} << 20, hi = lo + kWindow;
    for (uint32_t cls = 0; cls < 2; ++cls) {
      uint64_t at = lo + cls * 97;
      for (uint32_t i = 0;; ++i) {
        at += section(rng);
        if (at >= hi) break;
        ends.push_back(CallEnd{on_grid(at, 0), cls * 2 + i % 2, cls});
      }
    }
    t.add_window(ends, lo, hi);
  }
  ASSERT_TRUE(t.all().value);
  EXPECT_LT(*t.all().value, 0.7);
  const CoincidenceMeasure x = t.across_classes();
  ASSERT_TRUE(x.value);
  EXPECT_GT(x.low(), 0.9);
}

TEST(CompletionCoincidence, FewPairsMeasureNothing) {
  EXPECT_FALSE(independent(2, 1.0 / 20000, 5, 1).all().value);
}

TEST(CompletionCoincidence, NearZoneIsAWholeNumberOfClockSteps) {
  EXPECT_EQ(CoincidenceTally(26, 52).near_ticks(), 52u);
  EXPECT_EQ(CoincidenceTally(26, 60).near_ticks(), 78u);  // 20 ns at 3 GHz: three steps of 26
  EXPECT_EQ(CoincidenceTally(1, 52).near_ticks(), 52u);   // a fine clock
}

TEST(CompletionCoincidence, ClockStepIsTheSmallestCommonDuration) {
  std::vector<uint64_t> counts(200, 0);
  counts[1] = 5;     // jitter of a step's phase
  counts[26] = 600;  // one step
  counts[52] = 380;
  counts[78] = 15;
  EXPECT_EQ(clock_step_of(counts, 1000), 26u);
  std::vector<uint64_t> none(3, 0);
  EXPECT_EQ(clock_step_of(none, 0), 1u);
}

}  // namespace
}  // namespace allocscope
