// contention_verdict_test.cpp — the exclusion ratio and the verdict rules of docs/analysis.md
// ("Contention verdict"), on tallies with known answers.
#include "contention_verdict.h"

#include <gtest/gtest.h>

namespace allocscope {
namespace {

// Timed calls of one class: `alone` calls made alone (a share `p` fast), `met` calls that met
// another thread (a share `q` fast).
ExclusionCell cell(uint64_t alone, double p, uint64_t met, double q) {
  ExclusionCell c;
  c.alone = alone;
  c.alone_fast = static_cast<uint64_t>(p * static_cast<double>(alone));
  c.met = met;
  c.met_fast = static_cast<uint64_t>(q * static_cast<double>(met));
  return c;
}

ContentionInputs inputs(std::vector<ExclusionCell> allocating, std::vector<ExclusionCell> freeing = {}) {
  ContentionInputs in;
  in.allocating = measure_exclusion(allocating);
  in.freeing = measure_exclusion(freeing);
  in.busy_threads = 4;
  in.timed = 100000;
  in.cpus = 2;
  in.max_live_threads = 5;
  return in;
}

TEST(ExclusionRatio, ComparesMetCallsWithTheirClassesAloneCalls) {
  // Class 0 is fast half the time, class 1 always: met calls of class 0 fast a quarter of the time.
  const ExclusionMeasure m = measure_exclusion({cell(1000, 0.5, 400, 0.25), cell(1000, 1.0, 0, 0)});
  ASSERT_TRUE(m.ratio);
  EXPECT_NEAR(*m.ratio, 0.5, 1e-9);  // 100 fast of 200 expected
  EXPECT_LT(m.low, 0.5);
  EXPECT_GT(m.high, 0.5);
  EXPECT_EQ(m.met, 400u);
  EXPECT_EQ(m.observed_fast, 100u);
  EXPECT_EQ(m.alone_fast, 1500u);
}

TEST(ExclusionRatio, NeedsEnoughMetCalls) {
  EXPECT_FALSE(measure_exclusion({cell(1000, 0.9, 30, 0.9)}).ratio);  // 30 met calls
  EXPECT_FALSE(measure_exclusion({cell(5, 1.0, 500, 0.9)}).ratio);    // too few alone calls: no reference
}

TEST(ContentionVerdict, OneThreadIsSingleThread) {
  ContentionInputs in = inputs({cell(1000, 0.9, 1000, 0.1)});
  in.busy_threads = 1;
  EXPECT_EQ(judge_contention(in).kind, ContentionKind::SingleThread);
}

TEST(ContentionVerdict, MetCallsRarelyFastInEveryClassIsOneGlobalLock) {
  const ContentionVerdict v = judge_contention(inputs({cell(1000, 0.9, 1000, 0.1), cell(800, 0.8, 900, 0.05)}));
  EXPECT_EQ(v.kind, ContentionKind::GlobalLock);
  EXPECT_GT(v.confidence, 0.99);
  EXPECT_TRUE(v.oversubscribed);
}

TEST(ContentionVerdict, SomeClassesExcludedOthersNotIsPartial) {
  const ContentionVerdict v = judge_contention(inputs({cell(1000, 0.9, 1000, 0.05), cell(1000, 0.9, 1000, 0.9)}));
  EXPECT_EQ(v.kind, ContentionKind::Partial);
}

TEST(ContentionVerdict, FastMetCallsAreNone) {
  const ContentionVerdict v = judge_contention(inputs({cell(1000, 0.9, 1000, 0.88)}, {cell(1000, 0.9, 1000, 0.9)}));
  EXPECT_EQ(v.kind, ContentionKind::None);
  EXPECT_EQ(v.reason, ContentionReason::Parallel);
}

TEST(ContentionVerdict, ParallelAllocationsWithExcludedFreesArePartial) {
  const ContentionVerdict v = judge_contention(inputs({cell(1000, 0.9, 1000, 0.88)}, {cell(1000, 0.9, 1000, 0.1)}));
  EXPECT_EQ(v.kind, ContentionKind::Partial);
  EXPECT_EQ(v.reason, ContentionReason::FreesExcluded);
}

TEST(ContentionVerdict, MostlySlowMetCallsCannotShowThatNobodyWaits) {
  // Ratio 1, but met calls are fast only a third of the time: a lock whose queue sleeps out of
  // the windows' sight reads the same (measured: the global mutex at two threads).
  const ContentionVerdict v = judge_contention(inputs({cell(1000, 0.35, 1000, 0.35)}));
  EXPECT_EQ(v.kind, ContentionKind::Unsure);
  EXPECT_EQ(v.reason, ContentionReason::Masked);
  EXPECT_EQ(v.confidence, 0);
}

TEST(ContentionVerdict, MetCallsFasterThanAloneOnesAreDisturbed) {
  const ContentionVerdict v = judge_contention(inputs({cell(1000, 0.4, 1000, 0.8)}));
  EXPECT_EQ(v.kind, ContentionKind::Unsure);
  EXPECT_EQ(v.reason, ContentionReason::Disturbed);
}

TEST(ContentionVerdict, SleepingCallsDoubtNone) {
  ContentionInputs in = inputs({cell(1000, 0.9, 1000, 0.9)});
  in.rusage_samples = 100;
  in.rusage_blocked = 10;
  const ContentionVerdict v = judge_contention(in);
  EXPECT_EQ(v.kind, ContentionKind::Unsure);
  EXPECT_EQ(v.reason, ContentionReason::Sleeping);
  EXPECT_TRUE(v.blocking);
}

TEST(ContentionVerdict, RatioBetweenTheThresholdsIsUnsure) {
  const ContentionVerdict v = judge_contention(inputs({cell(1000, 0.9, 1000, 0.675)}));  // ratio 0.75
  EXPECT_EQ(v.kind, ContentionKind::Unsure);
  EXPECT_EQ(v.reason, ContentionReason::Ambiguous);
}

TEST(ContentionVerdict, TooFewMetCallsIsUnsure) {
  const ContentionVerdict v = judge_contention(inputs({cell(1000, 0.9, 10, 0.1)}));
  EXPECT_EQ(v.kind, ContentionKind::Unsure);
  EXPECT_EQ(v.reason, ContentionReason::TooFewMet);
}

}  // namespace
}  // namespace allocscope
