// completion_coincidence_test.cpp — the measure of calls taking turns (completion_coincidence.h) on
// streams of ends with known answers: independent threads, threads that take turns, and ends on a
// coarse clock's grid at different phases.
#include "model/completion_coincidence.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

namespace allocscope {
namespace {

constexpr uint64_t kStep = 26;          // a 10 ns clock step at 2.6 GHz
constexpr uint64_t kWindow = 1u << 15;  // ticks of one timing window

// Rounds a tick down onto the clock's grid at a phase.
uint64_t on_grid(uint64_t tick, uint64_t phase) { return tick - (tick + kStep - phase) % kStep; }

// A tally of `windows` timing windows, each filled by `fill(ends, lo, hi)`.
template <class Fill>
CoincidenceTally tally_windows(unsigned windows, Fill fill) {
  CoincidenceTally t(kStep, 52);
  std::vector<CallEnd> ends;
  for (unsigned w = 0; w < windows; ++w) {
    ends.clear();
    const uint64_t lo = uint64_t{w} << 20, hi = lo + kWindow;
    fill(ends, lo, hi);
    t.add_window(ends, lo, hi);
  }
  return t;
}

// Appends the ends of a thread's calls at random moments from lo to hi, `rate` per tick, on the
// grid at `phase`.
void at_random(std::vector<CallEnd>& ends, std::mt19937_64& rng, double rate, uint64_t lo, uint64_t hi,
               uint32_t thread, uint64_t phase, uint32_t cls) {
  std::exponential_distribution<double> gap(rate);
  for (double at = static_cast<double>(lo) + gap(rng); at < static_cast<double>(hi); at += gap(rng)) {
    ends.push_back(CallEnd{on_grid(static_cast<uint64_t>(at), phase), thread, cls});
  }
}

// `windows` windows in which each of `threads` threads ends calls at random moments, `rate` per
// tick, each thread on its own phase of the grid.
CoincidenceTally independent(unsigned threads, double rate, unsigned windows, uint64_t seed) {
  std::mt19937_64 rng(seed);
  return tally_windows(windows, [&](std::vector<CallEnd>& ends, uint64_t lo, uint64_t hi) {
    for (uint32_t th = 0; th < threads; ++th) at_random(ends, rng, rate, lo, hi, th, th * 13 % kStep, th % 3);
  });
}

// Appends the ends of the calls one lock serves in turn from `from` to `hi`: critical sections of
// 150-400 ticks; call i is made by thread `thread0 + i % threads`, in class `cls0 + i % classes`.
void take_turns(std::vector<CallEnd>& ends, std::mt19937_64& rng, uint64_t from, uint64_t hi, uint32_t thread0,
                uint32_t threads, uint32_t cls0, uint32_t classes) {
  std::uniform_int_distribution<uint64_t> section(150, 400);
  uint64_t at = from;
  for (uint32_t i = 0;; ++i) {
    at += section(rng);
    if (at >= hi) break;
    ends.push_back(CallEnd{on_grid(at, 0), thread0 + i % threads, 2 * (cls0 + i % classes)});  // classes twice apart
  }
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
  std::mt19937_64 rng(7);
  const CoincidenceTally t = tally_windows(400, [&](std::vector<CallEnd>& ends, uint64_t lo, uint64_t hi) {
    for (uint32_t th = 0; th < 2; ++th) at_random(ends, rng, 1.0 / 300, lo, hi, th, 0, 0);
  });
  const CoincidenceMeasure m = t.all();
  ASSERT_TRUE(m.value);
  EXPECT_NEAR(*m.value, 1.0, 0.08);
}

TEST(CompletionCoincidence, ThreadsThatTakeTurnsReadNearZero) {
  // One lock: the threads' calls end one after another, never closer than a critical section.
  std::mt19937_64 rng(3);
  const CoincidenceTally t = tally_windows(200, [&](std::vector<CallEnd>& ends, uint64_t lo, uint64_t hi) {
    take_turns(ends, rng, lo, hi, 0, 3, 0, 5);
  });
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
  std::mt19937_64 rng(11);
  const CoincidenceTally t = tally_windows(300, [&](std::vector<CallEnd>& ends, uint64_t lo, uint64_t hi) {
    for (uint32_t cls = 0; cls < 2; ++cls) take_turns(ends, rng, lo + cls * 97, hi, cls * 2, 2, cls, 1);
  });
  ASSERT_TRUE(t.all().value);
  EXPECT_LT(*t.all().value, 0.7);
  const CoincidenceMeasure x = t.across_classes();
  ASSERT_TRUE(x.value);
  EXPECT_GT(x.low(), 0.9);
}

TEST(CompletionCoincidence, SizesApartAreAtLeastTwiceApart) {
  EXPECT_EQ(size_group(0), 0u);
  EXPECT_EQ(size_group(16), 5u);
  EXPECT_EQ(size_group(31), 5u);
  EXPECT_EQ(size_group(1039), 11u);
  EXPECT_FALSE(sizes_apart(size_group(60), size_group(70)));  // 60 B and 70 B may share a class
  EXPECT_FALSE(sizes_apart(size_group(33), size_group(127)));  // neighbouring groups: not always twice apart
  EXPECT_TRUE(sizes_apart(size_group(63), size_group(128)));
  EXPECT_TRUE(sizes_apart(size_group(4096), size_group(16)));
  EXPECT_FALSE(sizes_apart(kUnknownGroup, size_group(16)));  // a free of unknown size may be any class
}

TEST(CompletionCoincidence, ALockPerClassOfNeighbouringSizesCountsNoPairApart) {
  // Two locks for sizes in neighbouring groups: their pairs are not "apart", so the measure
  // across classes has nothing to say, rather than saying the classes coincide.
  std::mt19937_64 rng(11);
  const CoincidenceTally t = tally_windows(300, [&](std::vector<CallEnd>& ends, uint64_t lo, uint64_t hi) {
    for (uint32_t g = 0; g < 2; ++g) {
      const size_t first = ends.size();
      take_turns(ends, rng, lo + g * 97, hi, g * 2, 2, 0, 1);
      for (size_t i = first; i < ends.size(); ++i) ends[i].group = 6 + g;
    }
  });
  ASSERT_TRUE(t.all().value);
  EXPECT_FALSE(t.across_classes().value);
  EXPECT_EQ(t.across_classes().near_pairs + t.across_classes().far_pairs, 0u);
}

TEST(CompletionCoincidence, ALongWindowIsMeasuredBeyondItsFirstEnds) {
  // Every call timed: windows of 2 M ticks, one thread alone for its first 5000 ends, then two
  // independent threads.  Slices spread over each window find the pairs.
  CoincidenceTally t(kStep, 52);
  std::mt19937_64 rng(5);
  std::exponential_distribution<double> gap(1.0 / 200);
  std::vector<CallEnd> ends;
  for (uint64_t w = 0; w < 12; ++w) {
    ends.clear();
    const uint64_t lo = w << 22, hi = lo + (uint64_t{1} << 21);
    double at = static_cast<double>(lo);
    for (int i = 0; i < 5000; ++i) ends.push_back(CallEnd{static_cast<uint64_t>(at += gap(rng)), 0, 0});
    for (uint32_t th = 0; th < 2; ++th) at_random(ends, rng, 1.0 / 200, static_cast<uint64_t>(at), hi, th, 0, th);
    t.add_window(ends, lo, hi);
  }
  const CoincidenceMeasure m = t.all();
  ASSERT_TRUE(m.value);
  EXPECT_NEAR(*m.value, 1.0, 0.15);
  EXPECT_NEAR(m.windows, 12.0, 1.0);
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

// Appends the ends of two threads running the same loop side by side from lo to hi: each ends a
// call every `period` ticks, thread 1 `offset` ticks after thread 0; the offset wanders by a tick
// or two a call, so the threads stay in step for a stretch of calls, as loops running on two CPUs do.
void lockstep(std::vector<CallEnd>& ends, std::mt19937_64& rng, uint64_t lo, uint64_t hi, uint64_t period,
              uint64_t offset) {
  std::uniform_int_distribution<int> wander(-2, 2);
  double drift = static_cast<double>(offset);
  for (uint64_t at = lo; at + 2 * period < hi; at += period) {
    drift += wander(rng);
    const uint64_t b = at + static_cast<uint64_t>(std::fmod(std::fmod(drift, static_cast<double>(period)) + period, period));
    ends.push_back(CallEnd{at, 0, 5});
    ends.push_back(CallEnd{b, 1, 5});
  }
}

TEST(CompletionCoincidence, OneWindowOfLoopsInStepIsTooFewToTell) {
  // Two threads in step, one 90 ticks behind the other, in one window: few pairs of ends are ever
  // near, yet no lock is there.  Pairs of one window are not independent: the measure must not
  // read them as thousands of chances.
  std::mt19937_64 rng(5);
  const CoincidenceTally t = tally_windows(1, [&](std::vector<CallEnd>& ends, uint64_t lo, uint64_t hi) {
    lockstep(ends, rng, lo, hi, 200, 90);
  });
  EXPECT_GT(t.all().far_pairs, 4000u);
  EXPECT_FALSE(t.all().value);
  EXPECT_LT(t.all().windows, 1.5);
}

TEST(CompletionCoincidence, LoopsInStepAtRandomOffsetsDoNotLookLikeALock) {
  // The same loops over twelve windows, each starting at a new offset: Q's bounds come from how
  // much the windows differ.  With the spread of Poisson counts alone, the bounds of 16 of these
  // 40 runs excluded 1, and 2 read a hole as deep as one lock's (upper bound below 0.5).
  int measured = 0, below = 0;
  for (uint64_t seed = 1; seed <= 40; ++seed) {
    std::mt19937_64 rng(seed);
    std::uniform_int_distribution<uint64_t> offset(0, 199);
    const CoincidenceTally t = tally_windows(12, [&](std::vector<CallEnd>& ends, uint64_t lo, uint64_t hi) {
      lockstep(ends, rng, lo, hi, 200, offset(rng));
    });
    const CoincidenceMeasure m = t.all();
    if (!m.value) continue;
    ++measured;
    EXPECT_GE(m.high(), 0.5) << seed << ": " << *m.value << " ± " << m.se;
    below += m.high() < 1.0;
  }
  EXPECT_GT(measured, 30);
  EXPECT_LE(below, 3);
}

}  // namespace
}  // namespace allocscope
