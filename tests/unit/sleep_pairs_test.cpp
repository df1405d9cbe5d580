// sleep_pairs_test.cpp — whom a call that slept waited behind (model/sleep_pairs.h), on windows
// with known answers.
#include "model/sleep_pairs.h"

#include <gtest/gtest.h>

#include <vector>

#include "allocscope/buckets.h"
#include "allocscope/ops.h"

namespace allocscope {
namespace {

SweepItem call(uint32_t thread, uint64_t start, uint32_t duration, uint32_t size, Op op = Op::Malloc, int32_t inside = 0,
               int32_t near = 0) {
  SweepItem it;
  it.thread = thread;
  it.event = format::Event{};
  it.event.start_tick = start;
  it.event.duration_ticks = duration;
  it.event.size = size;
  it.event.op = static_cast<uint8_t>(op);
  it.event.bucket = 0;
  it.inside = inside;
  it.inside_near_size = near;
  return it;
}

// Threads 1 and 2 busy over the whole run; thread 0 a main thread that made few calls.
std::vector<ThreadSpan> two_threads() { return {{0, 1000000, false}, {0, 1000000, true}, {0, 1000000, true}}; }

// The same, and a third busy thread (serial 3) over the whole run.
std::vector<ThreadSpan> three_threads() {
  std::vector<ThreadSpan> spans = two_threads();
  spans.push_back({0, 1000000, true});
  return spans;
}

// One window: thread 1 inside calls of `partner_size` back to back from tick 100, thread 2 first
// seen at 150, then one call `sleeper_op` of `sleeper_size` at 1000 that slept (items in start
// order); `size_taken` false: a release whose size was not taken (kBucketUnknown).
void add_window(SleepPairTally& tally, uint64_t base, uint32_t sleeper_size, uint32_t partner_size,
                uint64_t trusted_from = 0, Op sleeper_op = Op::Malloc, bool size_taken = true) {
  std::vector<SweepItem> items = {call(1, base + 100, 50, partner_size), call(2, base + 150, 20, sleeper_size),
                                  call(1, base + 900, 400, partner_size, Op::Malloc, 0),
                                  call(2, base + 1000, 5000, size_taken ? sleeper_size : 0, sleeper_op, 1, 0)};
  if (!size_taken) items[3].event.bucket = kBucketUnknown;
  const std::vector<uint8_t> slept = {0, 0, 0, 1};
  tally.add_window(items, slept, trusted_from ? trusted_from : base);
}

TEST(SleepPairs, ASleepBehindACallOfAFarSizeJoinsBothSizes) {
  SleepPairTally tally(two_threads());
  add_window(tally, 0, 24, 800);  // 24 B (power 5) slept behind 800 B (power 10)
  const SleepPairsMeasure m = tally.measure();
  EXPECT_EQ(m.slept, 1u);
  EXPECT_EQ(m.pairs, 1u);
  EXPECT_EQ(m.apart, 1u);
  EXPECT_TRUE(m.threads_joined);
  EXPECT_EQ(m.min_thread_slept_allocating, 0u);  // thread 1 never slept
  // Every call of the window is of one of the two joined sizes.
  EXPECT_DOUBLE_EQ(m.joined_share, 1.0);
  // Of the calls that met exactly one other thread (the sleeper), all were apart.
  EXPECT_DOUBLE_EQ(m.met_apart_share, 1.0);
}

TEST(SleepPairs, ASleepBehindACallOfANearSizeJoinsNothing) {
  SleepPairTally tally(two_threads());
  add_window(tally, 0, 500, 800);  // one power of two apart: may share a class
  const SleepPairsMeasure m = tally.measure();
  EXPECT_EQ(m.pairs, 1u);
  EXPECT_EQ(m.apart, 0u);
  EXPECT_DOUBLE_EQ(m.joined_share, 0.5);  // two sizes, two calls each, not joined
}

TEST(SleepPairs, ABusyThreadNotYetSeenInTheWindowIsTakenAsOutside) {
  // Thread 3 is busy over the run but made no call in this window: it may be inside a call that
  // began before the window (asleep, or holding the lock unseen); it is taken as outside, and the
  // sleep pairs with the one thread seen inside.  Thread 3 joins no pair.
  SleepPairTally tally(three_threads());
  add_window(tally, 0, 24, 800);
  const SleepPairsMeasure m = tally.measure();
  EXPECT_EQ(m.slept, 1u);
  EXPECT_EQ(m.pairs, 1u);
  EXPECT_EQ(m.apart, 1u);
  EXPECT_FALSE(m.threads_joined);
}

TEST(SleepPairs, AThreadSeenOnlyAfterTheSleepStartedIsTakenAsOutside) {
  // Thread 3's first call in the window starts after the sleeper's: at that moment it is unseen.
  SleepPairTally tally(three_threads());
  std::vector<SweepItem> items = {call(1, 100, 50, 800), call(2, 150, 20, 24), call(1, 900, 400, 800),
                                  call(2, 1000, 5000, 24), call(3, 1100, 3000, 64)};
  const std::vector<uint8_t> slept = {0, 0, 0, 1, 0};
  tally.add_window(items, slept, 0);
  const SleepPairsMeasure m = tally.measure();
  EXPECT_EQ(m.pairs, 1u);
  EXPECT_EQ(m.apart, 1u);
}

TEST(SleepPairs, AThreadOutsideItsSpanIsNotRequired) {
  // Thread 3's calls ended before the window: it cannot be inside.
  std::vector<ThreadSpan> spans = two_threads();
  spans.push_back({0, 10, true});
  SleepPairTally tally(spans);
  add_window(tally, 1000, 24, 800);
  EXPECT_EQ(tally.measure().pairs, 1u);
}

TEST(SleepPairs, TwoOthersInsideAreNoPair) {
  SleepPairTally tally(three_threads());
  std::vector<SweepItem> items = {call(1, 100, 50, 800), call(3, 120, 2000, 64), call(2, 150, 20, 24),
                                  call(1, 900, 400, 800), call(2, 1000, 5000, 24)};
  const std::vector<uint8_t> slept = {0, 0, 0, 0, 1};
  tally.add_window(items, slept, 0);
  EXPECT_EQ(tally.measure().pairs, 0u);
}

TEST(SleepPairs, ASleepBeforeTheTrustedPartIsNotCounted) {
  SleepPairTally tally(two_threads());
  add_window(tally, 0, 24, 800, /*trusted_from=*/2000);
  const SleepPairsMeasure m = tally.measure();
  EXPECT_EQ(m.slept, 0u);
  EXPECT_EQ(m.pairs, 0u);
}

TEST(SleepPairs, EveryThreadsAllocationsMustSleep) {
  SleepPairTally tally(two_threads());
  // Thread 2 sleeps behind thread 1 twice, thread 1 behind thread 2 once.
  add_window(tally, 0, 24, 800);
  add_window(tally, 100000, 24, 800);
  std::vector<SweepItem> items = {call(2, 200100, 50, 24), call(1, 200150, 20, 800), call(2, 200900, 400, 24),
                                  call(1, 201000, 5000, 800, Op::Malloc, 1, 0)};
  const std::vector<uint8_t> slept = {0, 0, 0, 1};
  tally.add_window(items, slept, 200000);
  const SleepPairsMeasure m = tally.measure();
  EXPECT_EQ(m.pairs, 3u);
  EXPECT_EQ(m.apart, 3u);
  EXPECT_EQ(m.min_thread_slept_allocating, 1u);
}

TEST(SleepPairs, AThreadWhoseFreesSleepAndAllocationsNeverDoIsClearlyAwake) {
  // Thread 2 frees 20 times, 10 of them asleep, and allocates 10 times, never asleep: 10 * 0.5 = 5
  // sleeps expected under one lock for both.  Thread 1 allocates only.
  SleepPairTally tally(two_threads());
  std::vector<SweepItem> items;
  std::vector<uint8_t> slept;
  for (uint64_t k = 0; k < 30; ++k) {
    const bool frees = k < 20;
    items.push_back(call(2, 1000 + k * 100, 50, 24, frees ? Op::Free : Op::Malloc));
    slept.push_back(frees && k % 2 == 0);
    items.push_back(call(1, 1050 + k * 100, 20, 800));
    slept.push_back(0);
  }
  tally.add_window(items, slept, 0);
  SleepPairsMeasure m = tally.measure();
  EXPECT_EQ(m.slept_allocating, 0u);
  EXPECT_EQ(m.awake_threads, 1u);
  // Half as many allocations: 2.5 sleeps expected, no evidence either way.
  SleepPairTally fewer(two_threads());
  std::vector<SweepItem> some;
  std::vector<uint8_t> some_slept;
  for (size_t k = 0; k < items.size(); ++k) {
    if (items[k].thread == 2 && items[k].event.op == static_cast<uint8_t>(Op::Malloc) && k % 4 == 0) continue;
    some.push_back(items[k]);
    some_slept.push_back(slept[k]);
  }
  fewer.add_window(some, some_slept, 0);
  EXPECT_EQ(fewer.measure().awake_threads, 0u);
}

TEST(SleepPairs, ASleepingFreeCountsAsAPairButNotAsAnAllocationAsleep) {
  SleepPairTally tally(two_threads());
  add_window(tally, 0, 24, 800, 0, Op::Free);
  const SleepPairsMeasure m = tally.measure();
  EXPECT_EQ(m.pairs, 1u);
  EXPECT_EQ(m.apart, 1u);
  EXPECT_EQ(m.min_thread_slept_allocating, 0u);
}

TEST(SleepPairs, ASizeNotTakenIsNeverApart) {
  SleepPairTally tally(two_threads());
  add_window(tally, 0, 24, 800, 0, Op::Free, /*size_taken=*/false);
  const SleepPairsMeasure m = tally.measure();
  EXPECT_EQ(m.pairs, 1u);
  EXPECT_EQ(m.apart, 0u);
}

}  // namespace
}  // namespace allocscope
