// contention_verdict_test.cpp — the measure of exclusion and the verdict rules of docs/analysis.md
// ("Contention verdict"), on tallies with known answers.
#include "model/contention_verdict.h"

#include "render/contention_wording.h"

#include <gtest/gtest.h>

namespace allocscope {
namespace {

// Timed calls of one class: `alone` calls made alone lasting `a` ticks each, `met` calls that met
// another thread lasting `m` ticks each (`met_allocating` of them met an allocating call).  A
// share `spread` of each group lasts one tick longer, so that the groups overlap as a clock's
// steps make them do.
ExclusionCell cell(uint64_t alone, uint64_t a, uint64_t met, uint64_t m, double spread = 0.5,
                   uint64_t met_allocating = ~uint64_t{0}) {
  ExclusionCell c;
  const auto split = [&](uint64_t n) { return static_cast<uint64_t>(spread * static_cast<double>(n)); };
  c.alone.add(a, alone - split(alone));
  c.alone.add(a + 1, split(alone));
  c.met.add(m, met - split(met));
  c.met.add(m + 1, split(met));
  const uint64_t ma = met_allocating == ~uint64_t{0} ? met : met_allocating;
  if (ma) {
    c.met_allocating.add(m, ma - split(ma));
    c.met_allocating.add(m + 1, split(ma));
  }
  c.met_running = c.met;  // every other thread ran through its call
  return c;
}

CoincidenceMeasure ends(double q, double se) {
  CoincidenceMeasure m;
  m.value = q;
  m.se = se;
  m.near_pairs = m.far_pairs = 1000;
  return m;
}

// Calls of one run: ends of different threads coinciding `q` times as often as chance (1 by
// default: no turns), across classes as well unless said otherwise.
ContentionInputs inputs(std::vector<ExclusionCell> allocating, std::vector<ExclusionCell> freeing = {},
                        CoincidenceMeasure all = ends(1.0, 0.01), std::optional<CoincidenceMeasure> across = {}) {
  ContentionInputs in;
  in.allocating = measure_exclusion(allocating);
  in.freeing = measure_exclusion(freeing);
  in.ends = all;
  in.ends_across = across ? *across : all;
  in.ends_near_ns = 20;
  in.busy_threads = 4;
  in.timed = 100000;
  in.cpus = 2;
  in.max_live_threads = 5;
  return in;
}

// Holds as a lock leaves them: half of 20 allocations timed while threads were held waited for a
// held thread (turns decide only where the holds agree, or a run without holds shows a sleeping lock).
ContentionInputs lock_holds(ContentionInputs in) {
  in.holds_recorded = true;
  in.peers.recorded = true;
  in.peers.holds = 20;
  in.peers.holds_released = 10;
  return in;
}

TEST(ExclusionMeasure, IsTheProbabilityThatAMetCallTookLonger) {
  // Alone: half 10, half 11 ticks.  Met: all 11 ticks: slower than half the alone calls, as long
  // as the other half (counted half): 0.75.
  const ExclusionMeasure m = measure_exclusion({cell(1000, 10, 400, 11, 0.0)});
  ExclusionCell c;
  c.alone.add(10, 500);
  c.alone.add(11, 500);
  c.met.add(11, 400);
  const ExclusionMeasure exact = measure_exclusion({c});
  ASSERT_TRUE(exact.slower.value);
  EXPECT_NEAR(*exact.slower.value, 0.75, 1e-12);
  EXPECT_LT(exact.slower.low(), 0.75);
  EXPECT_GT(exact.slower.high(), 0.75);
  EXPECT_EQ(exact.met, 400u);
  EXPECT_EQ(exact.alone, 1000u);
  ASSERT_TRUE(m.slower.value);
  EXPECT_NEAR(*m.slower.value, 1.0, 1e-12);  // every met call (11) slower than every alone one (10)
}

TEST(ExclusionMeasure, EqualDistributionsReadOneHalf) {
  const ExclusionMeasure m = measure_exclusion({cell(1000, 10, 1000, 10), cell(500, 40, 300, 40)});
  ASSERT_TRUE(m.slower.value);
  EXPECT_NEAR(*m.slower.value, 0.5, 1e-12);
}

TEST(ExclusionMeasure, PoolsClassesSoThatTheirMixDoesNotMoveIt) {
  // Met calls all in the slow class, alone calls mostly in the fast one: pooled across classes the
  // met calls would look slower; within each class they are not.
  const ExclusionMeasure m = measure_exclusion({cell(5000, 10, 20, 10), cell(100, 500, 2000, 500)});
  ASSERT_TRUE(m.slower.value);
  EXPECT_NEAR(*m.slower.value, 0.5, 1e-12);
}

TEST(ExclusionMeasure, NeedsEnoughMetCallsAndAReference) {
  EXPECT_FALSE(measure_exclusion({cell(1000, 10, 30, 10)}).slower.value);  // 30 met calls
  EXPECT_FALSE(measure_exclusion({cell(5, 10, 500, 10)}).slower.value);    // too few alone calls: no reference
}

TEST(ContentionVerdict, OneThreadIsSingleThread) {
  ContentionInputs in = inputs({cell(1000, 10, 1000, 20)});
  in.busy_threads = 1;
  in.calling_threads = 1;
  const ContentionVerdict v = judge_contention(in);
  EXPECT_EQ(v.kind, ContentionKind::SingleThread);
  EXPECT_EQ(contention_sentence(v), "One thread called the allocator: no contention.");
}

// A program that crashed before its first allocator call leaves a profile without calls: no thread
// to speak of, not one (it was said to be one, with 0 threads and 0 calls).
TEST(ContentionVerdict, NoCallsAtAllAreSaidSo) {
  ContentionInputs in = inputs({});
  in.busy_threads = 0;
  in.calling_threads = 0;
  const ContentionVerdict v = judge_contention(in);
  EXPECT_EQ(v.kind, ContentionKind::SingleThread);
  EXPECT_EQ(contention_sentence(v), "No thread called the allocator: no contention.");
  EXPECT_NE(contention_reason(v).find("no thread called the allocator"), std::string::npos) << contention_reason(v);
}

TEST(ContentionVerdict, OneLockInTheRunAloneIsContentionInPlacesWhereTheLockTestFoundNone) {
  // Calls take turns across classes, in a run too short for the lock test to say "none" on its
  // own: the run alone calls it one lock; the lock test found no lock that allocations share.
  ContentionInputs in = lock_holds(inputs({cell(1000, 10, 1000, 10)}, {}, ends(0.3, 0.02)));
  ASSERT_EQ(judge_contention(in).kind, ContentionKind::GlobalLock);
  in.lock_test.kind = LockTestKind::NoSharedLock;
  in.lock_test.apart = {120, 0, 1, 0};
  in.lock_test.confidence = 1;
  const ContentionVerdict v = judge_contention(in);
  EXPECT_EQ(v.kind, ContentionKind::Partial);
  EXPECT_EQ(v.reason, ContentionReason::LockTestOverrules);
  EXPECT_EQ(v.run_reason, ContentionReason::TakeTurns);
  EXPECT_NE(contention_reason(v).find("the run alone reads like one lock (calls take turns"), std::string::npos)
      << contention_reason(v);
}

TEST(ContentionVerdict, CallsTakingTurnsAcrossClassesAreOneGlobalLock) {
  const ContentionVerdict v = judge_contention(lock_holds(inputs({cell(1000, 10, 1000, 11)}, {}, ends(0.3, 0.02))));
  EXPECT_EQ(v.kind, ContentionKind::GlobalLock);
  EXPECT_EQ(v.reason, ContentionReason::TakeTurns);
  EXPECT_GT(v.confidence, 0.99);
  EXPECT_TRUE(v.oversubscribed);
}

TEST(ContentionVerdict, TurnsDecideEvenWhenMetCallsAreNotSlower) {
  // A spin lock around a call as short as the clock's step: met calls hardly slower, turns plain.
  const ContentionVerdict v = judge_contention(lock_holds(inputs({cell(5000, 10, 5000, 10)}, {}, ends(0.12, 0.005))));
  EXPECT_EQ(v.kind, ContentionKind::GlobalLock);
}

TEST(ContentionVerdict, TurnsThatNoHeldThreadMadeWaitAreUnsure) {
  // Measured: glibc behind one statistics word that every call adds to atomically, stress harness
  // at 2 threads: Q 0.14, met calls no slower, none of 28 holds released, nobody seen asleep.
  ContentionInputs in = inputs({cell(5000, 10, 5000, 10)}, {}, ends(0.14, 0.01));
  in.peers.recorded = true;
  in.holds_recorded = true;
  in.peers.holds = 28;
  in.peers.looks = 600;
  ContentionVerdict v = judge_contention(in);
  EXPECT_EQ(v.kind, ContentionKind::Unsure);
  EXPECT_EQ(v.reason, ContentionReason::TurnsWithoutHolding);
  EXPECT_NE(contention_reason(v).find("0 of 28 allocations"), std::string::npos);
  EXPECT_NE(contention_reason(v).find("no threads were seen asleep"), std::string::npos);
  EXPECT_FALSE(contention_advice(v).empty());
  // One of many released: glibc's own arena lock, shared now and then (measured: 1 of 55 at 8 threads).
  in.peers.holds = 55;
  in.peers.holds_released = 1;
  EXPECT_EQ(judge_contention(in).reason, ContentionReason::TurnsWithoutHolding);
  // Releases not clearly rarer than one in five: a lock (measured: the global spin lock released
  // 11-38 of 42-55).
  in.peers.holds = 48;
  in.peers.holds_released = 5;
  EXPECT_EQ(judge_contention(in).kind, ContentionKind::GlobalLock);
  in.peers.holds_released = 3;
  EXPECT_EQ(judge_contention(in).reason, ContentionReason::TurnsWithoutHolding);
  in.peers.holds = 28;
  // Threads asleep inside calls: a sleeping lock, whose held waiters release few holds (measured:
  // the global mutex at 8 threads, 1 of 73, with 30 threads seen asleep).
  in.peers.holds_released = 0;
  in.peers.futex_waits = 30;
  in.peers.futex_waits_allocating = 30;
  EXPECT_EQ(judge_contention(in).kind, ContentionKind::GlobalLock);
  // … in allocating calls: asleep in frees only, they wait for a lock that only frees take, and
  // the threads, freeing between their allocations, move in step (measured: a mutex around glibc's
  // free alone, the stress harness at 3-16 threads, Q 0.19-0.33 with sleepers on its one word and
  // none of 14-23 holds released, was called `global_lock`).
  in.peers.futex_waits_allocating = 2;
  EXPECT_EQ(judge_contention(in).reason, ContentionReason::TurnsWithoutHolding);
  in.peers.futex_waits_allocating = 0;
  in.slow_switched = 100;
  in.slow_slept = 30;  // frees asleep, as many as a sleeping lock's
  EXPECT_EQ(judge_contention(in).reason, ContentionReason::TurnsWithoutHolding);
  in.slow_allocating_switched = 50;
  in.slow_allocating_slept = 15;  // allocations asleep too
  EXPECT_EQ(judge_contention(in).kind, ContentionKind::GlobalLock);
  in.slow_switched = in.slow_slept = in.slow_allocating_switched = in.slow_allocating_slept = 0;
  in.peers.futex_waits = in.peers.futex_waits_allocating = 0;
  // One released of a few: no sign of a lock either — an allocation slow for reasons of its own
  // may last until a hold ends (measured: the counter at 2 threads, 0 or 1 of 10-16); two are (the
  // global spin lock beside a CPU hog at 8 threads, 2 of 10).
  in.peers.holds = 10;
  in.peers.holds_released = 1;
  EXPECT_EQ(judge_contention(in).reason, ContentionReason::TurnsWithoutHolding);
  in.peers.holds_released = 2;
  EXPECT_EQ(judge_contention(in).kind, ContentionKind::GlobalLock);
  // Too few holds to tell, even with met calls clearly slower: a word's turns can slow them as
  // much under load (measured: the counter once read global_lock from them while the test suite
  // ran beside it; the global spin lock that few holds catch, S 0.59-0.65, is left unsure).
  in.peers.holds = 3;
  in.peers.holds_released = 0;
  ContentionInputs slower = in;
  slower.allocating = inputs({cell(5000, 10, 5000, 13)}, {}, ends(0.5, 0.01)).allocating;
  ASSERT_TRUE(slower.allocating.slower.value);
  EXPECT_GT(slower.allocating.slower.low(), 0.6);
  EXPECT_EQ(judge_contention(slower).reason, ContentionReason::TurnsWithoutHolding);
  EXPECT_EQ(judge_contention(in).reason, ContentionReason::TurnsWithoutHolding);
  // A profile without holds (--sample 1, a trace, an older shim): turns alone cannot tell (measured:
  // lock-free allocators with every call timed on a loaded machine, Q 0.40-0.62, called global_lock),
  // unless a sleeping lock shows.
  in.peers.holds = 0;
  in.peers.holds_released = 0;
  in.holds_recorded = false;
  EXPECT_EQ(judge_contention(in).reason, ContentionReason::TurnsUnheld);
  EXPECT_NE(contention_advice(judge_contention(in)).find("default sampling"), std::string::npos);
  in.peers.futex_waits = in.peers.futex_waits_allocating = 30;
  EXPECT_EQ(judge_contention(in).kind, ContentionKind::GlobalLock);
}

TEST(ContentionVerdict, AShallowHoleNeedsMetCallsThatWait) {
  // Ends keep apart a little (0.6, bounds 0.57-0.63), met calls are no slower: locks of its own
  // that some calls take, not one that every call holds.
  const ContentionVerdict v = judge_contention(inputs({cell(5000, 10, 5000, 10)}, {}, ends(0.6, 0.013)));
  EXPECT_EQ(v.kind, ContentionKind::Unsure);
  EXPECT_EQ(v.reason, ContentionReason::Ambiguous);
  const ContentionVerdict waiting = judge_contention(lock_holds(inputs({cell(5000, 10, 5000, 11)}, {}, ends(0.6, 0.013))));
  EXPECT_EQ(waiting.kind, ContentionKind::GlobalLock);
  EXPECT_EQ(waiting.reason, ContentionReason::TakeTurns);
}

TEST(ContentionVerdict, AHoleAbove07IsNotTurnsEvenWhenMetCallsWait) {
  // tcmalloc under mixed sizes at 2 threads read 0.85 with met calls slower (0.61): its own locks
  // and interference, no global lock.  Met calls that wait leave it unsure, never a lock.
  for (const double q : {0.72, 0.78, 0.85}) {
    const ContentionVerdict v = judge_contention(inputs({cell(5000, 10, 5000, 11)}, {}, ends(q, 0.013)));
    EXPECT_EQ(v.kind, ContentionKind::Unsure) << q;
    EXPECT_EQ(v.reason, ContentionReason::SlowerWithoutTurns) << q;
  }
  // A deep hole needs nothing else.
  const ContentionVerdict deep = judge_contention(lock_holds(inputs({cell(5000, 10, 5000, 10)}, {}, ends(0.4, 0.013))));
  EXPECT_EQ(deep.kind, ContentionKind::GlobalLock);
}

TEST(ContentionVerdict, TurnsWithinClassesOnlyAreALockPerClass) {
  const ContentionVerdict v =
      judge_contention(inputs({cell(1000, 10, 1000, 11)}, {}, ends(0.5, 0.02), ends(1.0, 0.03)));
  EXPECT_EQ(v.kind, ContentionKind::Partial);
  EXPECT_EQ(v.reason, ContentionReason::TurnsWithinClasses);
}

TEST(ContentionVerdict, TurnsWithClassesUnclearAreUnsure) {
  const ContentionVerdict v =
      judge_contention(inputs({cell(1000, 10, 1000, 11)}, {}, ends(0.5, 0.02), ends(0.85, 0.1)));
  EXPECT_EQ(v.kind, ContentionKind::Unsure);
  EXPECT_EQ(v.reason, ContentionReason::MixedClasses);
}

TEST(ContentionVerdict, SlowerMetCallsWithoutTurnsAreUnsure) {
  // A lock handed over before its holder's call ends, or interference that is no lock: measured,
  // both look like this, so nothing is claimed.
  const ContentionVerdict v = judge_contention(inputs({cell(1000, 10, 1000, 11), cell(800, 30, 900, 31)}));
  EXPECT_EQ(v.kind, ContentionKind::Unsure);
  EXPECT_EQ(v.reason, ContentionReason::SlowerWithoutTurns);
  // 5 threads on 2 CPUs: more threads would add nothing; more timed calls can.
  EXPECT_TRUE(v.oversubscribed);
  EXPECT_EQ(contention_advice(v).find("more threads than CPUs"), std::string::npos);
  EXPECT_NE(contention_advice(v).find("--sample 8"), std::string::npos);
  // Recorded with --sample 8 already: the advice goes further, and with every call timed, longer.
  ContentionInputs eighth = inputs({cell(1000, 10, 1000, 11), cell(800, 30, 900, 31)});
  eighth.sample_every = 8;
  const std::string at_eighth = contention_advice(judge_contention(eighth));
  EXPECT_EQ(at_eighth.find("--sample 8"), std::string::npos);
  EXPECT_NE(at_eighth.find("--sample 1"), std::string::npos);
  eighth.sample_every = 1;
  const std::string at_every = contention_advice(judge_contention(eighth));
  EXPECT_EQ(at_every.find("--sample"), std::string::npos);
  EXPECT_NE(at_every.find("record a longer run"), std::string::npos);
  ContentionInputs fewer = inputs({cell(1000, 10, 1000, 11), cell(800, 30, 900, 31)});
  fewer.busy_threads = 2;  // and a main thread that only waits: 3 alive on 2 CPUs, 2 calling
  fewer.max_live_threads = 3;
  const ContentionVerdict w = judge_contention(fewer);
  EXPECT_FALSE(w.oversubscribed);
  EXPECT_EQ(w.reason, ContentionReason::SlowerWithoutTurns);
  EXPECT_NE(contention_advice(w).find("more threads than CPUs"), std::string::npos);
}

TEST(ContentionVerdict, AdviceNeverNamesTimingTheRunAlreadyHad) {
  // Whatever the reason, a run recorded with --sample N is told to time more than 1/N, or, with
  // every call timed, to run longer: never the sampling it had.
  for (unsigned r = 0; r <= static_cast<unsigned>(ContentionReason::FewHoldsPassed); ++r) {
    for (const uint32_t n : {64u, 8u, 2u, 1u}) {
      for (const bool oversubscribed : {false, true}) {
        ContentionVerdict v;
        v.kind = ContentionKind::Unsure;
        v.reason = static_cast<ContentionReason>(r);
        v.inputs.sample_every = n;
        v.oversubscribed = oversubscribed;
        const std::string a = contention_advice(v);
        EXPECT_FALSE(a.empty()) << r << " " << n;
        for (size_t at = a.find("--sample "); at != std::string::npos; at = a.find("--sample ", at + 1))
          EXPECT_LT(std::stoul(a.substr(at + 9)), n) << r << " " << n << ": " << a;
      }
    }
  }
}

// `c` with its met calls all beside calls of other size classes (met_apart = met), or none.
ExclusionCell across(ExclusionCell c, bool all_across = true) {
  if (all_across) c.met_apart = c.met;
  return c;
}

TEST(ContentionVerdict, SlowerMetCallsThatSleepAcrossClassesAreASleepingLockOfUnknownKind) {
  // A sleeping lock handed over before its holder's call ends: no turns, met calls slower, also
  // beside calls of other classes, and slow calls sleep inside the allocator.  One lock, or one per
  // class that every thread reaches at once: measured alike, so unsure, with the evidence said.
  ContentionInputs in = inputs({across(cell(1000, 10, 1000, 11)), across(cell(800, 30, 900, 31))});
  in.slow_switched = 100;
  in.slow_slept = 30;
  const ContentionVerdict v = judge_contention(in);
  EXPECT_EQ(v.kind, ContentionKind::Unsure);
  EXPECT_EQ(v.reason, ContentionReason::SleepWhenMet);
  EXPECT_TRUE(v.blocking);
  EXPECT_FALSE(contention_advice(v).empty());
  EXPECT_NE(contention_reason(v).find("30 of 100 timed calls of 2 µs or more slept"), std::string::npos);
}

TEST(ContentionVerdict, SleepingWithoutSlowerMetCallsAcrossClassesIsUnsure) {
  // A lock per size class: met calls beside calls of other classes are as fast as alone ones.
  ContentionInputs in = inputs({cell(1000, 10, 1000, 11), cell(800, 30, 900, 31)});
  std::vector<ExclusionCell> cells = {cell(1000, 10, 1000, 11), cell(800, 30, 900, 31)};
  cells[0].met_apart.add(10, 500);
  cells[0].met_apart.add(11, 500);
  cells[1].met_apart.add(30, 450);
  cells[1].met_apart.add(31, 450);
  in.allocating = measure_exclusion(cells);
  ASSERT_TRUE(in.allocating.apart.value);
  EXPECT_LT(in.allocating.apart.high(), 0.52);
  in.slow_switched = 100;
  in.slow_slept = 30;
  const ContentionVerdict v = judge_contention(in);
  EXPECT_EQ(v.kind, ContentionKind::Unsure);
  EXPECT_EQ(v.reason, ContentionReason::SlowerWithoutTurns);
}

TEST(ContentionVerdict, SlowerMetCallsThatNeverSleepAreUnsure) {
  // Interference (caches, preemption) slows met calls too, but no slow call sleeps inside.
  ContentionInputs in = inputs({across(cell(1000, 10, 1000, 11)), across(cell(800, 30, 900, 31))});
  in.slow_switched = 400;
  in.slow_slept = 4;  // fewer than 5: a system call that waited, not a lock
  in.slow_preempted = 100;
  const ContentionVerdict v = judge_contention(in);
  EXPECT_EQ(v.kind, ContentionKind::Unsure);
  EXPECT_EQ(v.reason, ContentionReason::SlowerWithoutTurns);
  in.slow_slept = 15;  // 5 or more, but under 5 % of the slow calls
  EXPECT_EQ(judge_contention(in).kind, ContentionKind::Unsure);
}

TEST(ContentionVerdict, ParallelCallsThatSleepAreUnsure) {
  // Ends coincide, met calls no slower, yet slow calls sleep inside the allocator: a lock the
  // measures do not see (threads asleep since before the window) is not ruled out.
  ContentionInputs in = inputs({across(cell(40000, 10, 40000, 10))}, {}, ends(1.0, 0.01));
  ASSERT_EQ(judge_contention(in).kind, ContentionKind::None);
  in.slow_switched = 60;
  in.slow_slept = 20;
  const ContentionVerdict v = judge_contention(in);
  EXPECT_EQ(v.kind, ContentionKind::Unsure);
  EXPECT_EQ(v.reason, ContentionReason::Sleeping);
}

// One class whose 40,000 calls made alone took 10 or 11 ticks (half each), and whose met calls
// (allocating, beside allocating and running calls alike) took 10 ticks `fast` times, 11 `slow`.
ExclusionCell met_and_alone(uint64_t fast, uint64_t slow) {
  ExclusionCell c;
  c.alone.add(10, 20000);
  c.alone.add(11, 20000);
  c.met.add(10, fast);
  c.met.add(11, slow);
  c.met_allocating = c.met;
  c.met_running = c.met;
  return c;
}

TEST(ContentionVerdict, AHairSlowerIsNoneOnlyWhereNoSlowCallSlept) {
  // Met calls 0.525 (bounds 0.521-0.529): interference, not enough for "none" by the strict
  // rule (S + 3σ < 0.52); enough where every slow call's switches were read and none slept.
  ContentionInputs in = inputs({met_and_alone(18000, 22000)}, {}, ends(1.0, 0.01));
  ASSERT_NEAR(*in.allocating.slower.value, 0.525, 1e-9);
  EXPECT_EQ(judge_contention(in).kind, ContentionKind::Unsure);  // switches not recorded
  in.switches_recorded = true;
  in.slow_switched = 300;
  const ContentionVerdict v = judge_contention(in);
  EXPECT_EQ(v.kind, ContentionKind::None);
  EXPECT_EQ(v.reason, ContentionReason::Parallel);
  in.slow_slept = 4;  // 1.3 % of the slow calls slept: the strict rule again
  EXPECT_EQ(judge_contention(in).kind, ContentionKind::Unsure);
  // Too few slow calls for "none slept" to mean much, but S is measured closely (2σ 0.004) and
  // below 0.535: a hair slower, as calls beside each other on one core are.
  in.slow_slept = 0;
  in.slow_switched = 60;
  EXPECT_EQ(judge_contention(in).kind, ContentionKind::None);
  // Not where the sampled calls slept, nor where switches were not read.
  in.rusage_blocked = 1;
  EXPECT_EQ(judge_contention(in).kind, ContentionKind::Unsure);
  in.rusage_blocked = 0;
  in.switches_recorded = false;
  EXPECT_EQ(judge_contention(in).kind, ContentionKind::Unsure);
}

TEST(ContentionVerdict, AHairSlowerNeedsCloseBoundsWithFewSlowCalls) {
  // S 0.532 over 40,000 met calls (bounds 0.528-0.536): above 0.535 at the upper bound.
  ContentionInputs in = inputs({met_and_alone(17440, 22560)}, {}, ends(1.0, 0.01));
  in.switches_recorded = true;
  in.slow_switched = 60;
  ASSERT_NEAR(*in.allocating.slower.value, 0.532, 1e-9);
  EXPECT_EQ(judge_contention(in).kind, ContentionKind::Unsure);
  // musl's producer/consumer on a loaded machine once read met calls 0.49, bounds 0.46-0.52, and
  // no sleep among few slow calls: bounds that wide say nothing of a hair.
  ContentionInputs few = inputs({met_and_alone(156, 144)}, {}, ends(1.0, 0.01));
  few.switches_recorded = true;
  few.slow_switched = 60;
  ASSERT_NEAR(*few.allocating.slower.value, 0.49, 1e-9);
  ASSERT_GT(few.allocating.slower.high(), 0.515);
  EXPECT_EQ(judge_contention(few).kind, ContentionKind::Unsure);
}

TEST(ContentionVerdict, AllocationsSlowedByAllocationsCountAsSlower) {
  // Musl's shape: a call that meets a free (mostly lock-free) does not wait; one that meets an
  // allocating call does.  Met calls: 1000 beside a free (as long as alone ones), 100 beside an
  // allocating call (a tick longer): all met calls together 0.545, not enough; those 100 alone 1.
  ExclusionCell c;
  c.alone.add(10, 500);
  c.alone.add(11, 500);
  c.met.add(10, 500);
  c.met.add(11, 500);
  c.met.add(12, 100);
  c.met_allocating.add(12, 100);
  ASSERT_LT(measure_exclusion({c}).slower.low(), 0.55);
  const ContentionVerdict without_turns = judge_contention(inputs({c}));
  EXPECT_EQ(without_turns.kind, ContentionKind::Unsure);
  EXPECT_EQ(without_turns.reason, ContentionReason::SlowerWithoutTurns);
}

TEST(ContentionVerdict, OneClassClearlySlowerAmongParallelOnesIsPartial) {
  // No turns; pooled, met calls are no slower (0.507); but one class holding 10 % of the met
  // calls is clearly slower when met (0.63): contention confined to that class.
  ExclusionCell even = cell(40000, 10, 40000, 10);
  ExclusionCell slow;
  slow.alone.add(10, 10000);
  slow.alone.add(11, 10000);
  slow.met.add(10, 1104);
  slow.met.add(11, 3496);
  slow.met_allocating = slow.met;
  slow.met_running = slow.met;
  const ExclusionMeasure m = measure_exclusion({even, slow});
  ASSERT_LT(*m.slower.value + 3 * m.slower.se, 0.52);
  ASSERT_GE(m.contended_share, 0.10);
  const ContentionVerdict v = judge_contention(inputs({even, slow}));
  EXPECT_EQ(v.kind, ContentionKind::Partial);
  EXPECT_EQ(v.reason, ContentionReason::ExcludedSome);
}

TEST(ContentionVerdict, NoTurnsAndMetCallsAsLongAsAloneOnesAreNone) {
  const ContentionVerdict v = judge_contention(inputs({cell(5000, 10, 5000, 10)}, {cell(5000, 10, 5000, 10)}));
  EXPECT_EQ(v.kind, ContentionKind::None);
  EXPECT_EQ(v.reason, ContentionReason::Parallel);
  EXPECT_GT(v.confidence, 0.5);
}

TEST(ContentionVerdict, MetCallsBesideRunningCallsSlowerDoubtNone) {
  // More threads than CPUs: most met calls met a thread preempted inside its call (no wait, 0.5),
  // the few that met a thread running through its call waited (a lock's holder runs).
  ExclusionCell c = cell(5000, 10, 5000, 10);
  c.met_running = FineHistogram();
  c.met_running.add(11, 300);
  const ContentionVerdict v = judge_contention(inputs({c}));
  EXPECT_EQ(v.kind, ContentionKind::Unsure);
  EXPECT_EQ(v.reason, ContentionReason::SlowerWithoutTurns);
}

TEST(ContentionVerdict, NoneNeedsEndsMeasured) {
  CoincidenceMeasure unmeasured;
  const ContentionVerdict v = judge_contention(inputs({cell(5000, 10, 5000, 10)}, {}, unmeasured));
  EXPECT_EQ(v.kind, ContentionKind::Unsure);
  EXPECT_EQ(v.reason, ContentionReason::TooFewEnds);  // met calls were measured; their ends were not
  EXPECT_NE(contention_reason(v).find("whether calls of different threads take turns cannot be told"), std::string::npos)
      << contention_reason(v);
}

TEST(ContentionVerdict, ParallelAllocationsWithExcludedFreesArePartial) {
  const ContentionVerdict v = judge_contention(inputs({cell(5000, 10, 5000, 10)}, {cell(1000, 10, 1000, 12)}));
  EXPECT_EQ(v.kind, ContentionKind::Partial);
  EXPECT_EQ(v.reason, ContentionReason::FreesExcluded);
}

TEST(ContentionVerdict, NoneNeedsThreeStandardErrors) {
  // 0.51 with 60 met calls: its bounds reach above 0.52, so nothing is claimed.
  ExclusionCell c;
  c.alone.add(10, 50);
  c.alone.add(11, 50);
  c.met.add(10, 29);
  c.met.add(11, 31);
  const ContentionVerdict v = judge_contention(inputs({c}));
  EXPECT_EQ(v.kind, ContentionKind::Unsure);
  EXPECT_EQ(v.reason, ContentionReason::Ambiguous);
}

TEST(ContentionVerdict, MetCallsFasterThanAloneOnesAreDisturbed) {
  const ContentionVerdict v = judge_contention(inputs({cell(1000, 12, 1000, 10)}));
  EXPECT_EQ(v.kind, ContentionKind::Unsure);
  EXPECT_EQ(v.reason, ContentionReason::Disturbed);
}

TEST(ContentionVerdict, SleepingCallsDoubtNone) {
  ContentionInputs in = inputs({cell(5000, 10, 5000, 10)});
  in.rusage_samples = 100;
  in.rusage_blocked = 10;
  const ContentionVerdict v = judge_contention(in);
  EXPECT_EQ(v.kind, ContentionKind::Unsure);
  EXPECT_EQ(v.reason, ContentionReason::Sleeping);
  EXPECT_TRUE(v.blocking);
}

TEST(ContentionVerdict, TooFewMetCallsIsUnsure) {
  const ContentionVerdict v = judge_contention(inputs({cell(1000, 10, 10, 20)}));
  EXPECT_EQ(v.kind, ContentionKind::Unsure);
  EXPECT_EQ(v.reason, ContentionReason::TooFewMet);
}

}  // namespace
}  // namespace allocscope

namespace allocscope {
namespace {

// A run whose slow calls sleep inside the allocator (30 of 100), with `p` as its sleep pairs, and
// nothing else settled: met calls slower without turns.
ContentionVerdict judge_sleep_pairs(const SleepPairsMeasure& p) {
  ContentionInputs in = inputs({cell(1000, 10, 1000, 11), cell(800, 30, 900, 31)});
  in.slow_switched = 100;
  in.slow_slept = 30;
  in.sleep_pairs = p;
  return judge_contention(in);
}

// 40 pairs, 16 of sizes twice apart, where 40 % of all met calls were: one lock's picture.
SleepPairsMeasure one_lock_pairs() {
  SleepPairsMeasure p;
  p.slept = 50;
  p.pairs = 40;
  p.apart = 16;
  p.met_apart_share = 0.4;
  p.joined_share = 0.97;
  p.threads_joined = true;
  p.min_thread_slept_allocating = 9;
  p.slept_allocating = 30;
  return p;
}

TEST(ContentionVerdict, SleepsBehindCallsOfEverySizeAreOneLock) {
  const ContentionVerdict v = judge_sleep_pairs(one_lock_pairs());
  EXPECT_EQ(v.kind, ContentionKind::GlobalLock);
  EXPECT_EQ(v.reason, ContentionReason::SleepsAcrossSizes);
  EXPECT_GT(v.confidence, 0.5);
  EXPECT_NE(contention_reason(v).find("16 of 40 calls that slept"), std::string::npos);
  EXPECT_NE(contention_sentence(v).find("one global lock"), std::string::npos);
  bool shown = false;
  for (const EvidenceItem& e : contention_evidence(v)) shown = shown || (e.kind == "sleep_pairs_apart" && e.value == 0.4);
  EXPECT_TRUE(shown);
}

TEST(ContentionVerdict, SleepPairsThatJoinFewSizesAreNotOneLock) {
  // A lock per class with one wide class (2 KiB and up in one): pairs apart inside it only.
  SleepPairsMeasure p = one_lock_pairs();
  p.joined_share = 0.36;
  EXPECT_EQ(judge_sleep_pairs(p).kind, ContentionKind::Unsure);
}

TEST(ContentionVerdict, SleepPairsApartNoMoreOftenThanNoiseAreNotOneLock) {
  // A lock per class: a few sleepers' neighbours had just moved on to a far size (7 %), where
  // 60 % of all met calls were beside a far size.
  SleepPairsMeasure p = one_lock_pairs();
  p.pairs = 150;
  p.apart = 11;
  p.met_apart_share = 0.6;
  EXPECT_EQ(judge_sleep_pairs(p).kind, ContentionKind::Unsure);
}

TEST(ContentionVerdict, ALockOneThreadsAllocationsNeverWaitForIsNotGlobal) {
  // glibc's arena under cross-thread frees: the consumer's frees sleep behind the producer's
  // allocations, the consumer's own allocations (its own arena) never sleep.
  SleepPairsMeasure p = one_lock_pairs();
  p.awake_threads = 1;
  EXPECT_EQ(judge_sleep_pairs(p).kind, ContentionKind::Unsure);
  p = one_lock_pairs();
  p.threads_joined = false;
  EXPECT_EQ(judge_sleep_pairs(p).kind, ContentionKind::Unsure);
  p = one_lock_pairs();
  p.slept_allocating = 4;  // hardly any allocation slept anywhere
  EXPECT_EQ(judge_sleep_pairs(p).kind, ContentionKind::Unsure);
}

TEST(ContentionVerdict, AThreadWithoutAnAllocationAsleepByChanceIsNoObjection) {
  // Sixteen threads, a short run: one thread's few timed allocations happened not to sleep,
  // which its frees' rate does not make unlikely.
  SleepPairsMeasure p = one_lock_pairs();
  p.min_thread_slept_allocating = 0;
  EXPECT_EQ(judge_sleep_pairs(p).kind, ContentionKind::GlobalLock);
}

TEST(ContentionVerdict, FewSleepPairsApartSayNothing) {
  SleepPairsMeasure p = one_lock_pairs();
  p.apart = 9;
  p.pairs = 20;
  EXPECT_EQ(judge_sleep_pairs(p).kind, ContentionKind::Unsure);
}

TEST(ContentionVerdict, SleepsThatCallsMadeAloneShareAreNoLock) {
  // usleep(0) in every call, no lock (measured: glibc behind it, mixed sizes at 8 and 16 threads:
  // 99-100 % of the slow calls asleep, 22 of 28 and 19 of 33 sleep pairs apart, `global_lock`).
  // Calls made alone, with nobody to wait for, sleep as often: no lock puts them to sleep.
  ContentionInputs in = inputs({cell(1000, 10, 1000, 11), cell(800, 30, 900, 31)});
  in.slow_switched = 100;
  in.slow_slept = 98;
  in.sleep_pairs = one_lock_pairs();
  EXPECT_EQ(judge_contention(in).kind, ContentionKind::GlobalLock);  // alone calls' switches unknown
  in.slow_alone_switched = 40;
  in.slow_alone_slept = 39;
  EXPECT_EQ(judge_contention(in).kind, ContentionKind::Unsure);
  // Under a lock calls made alone seldom sleep: a holder preempted before the window began.
  in.slow_alone_slept = 4;
  EXPECT_EQ(judge_contention(in).kind, ContentionKind::GlobalLock);
  // Too few made alone to say.
  in.slow_alone_switched = 10;
  in.slow_alone_slept = 10;
  EXPECT_EQ(judge_contention(in).kind, ContentionKind::GlobalLock);
}

TEST(ContentionVerdict, SleepPairsNeedCallsThatSleep) {
  ContentionInputs in = inputs({cell(1000, 10, 1000, 11), cell(800, 30, 900, 31)});
  in.slow_switched = 1000;
  in.slow_slept = 30;  // 3 %: not a sleeping allocator
  in.sleep_pairs = one_lock_pairs();
  EXPECT_EQ(judge_contention(in).kind, ContentionKind::Unsure);
}


// A run whose slow calls sleep inside the allocator (30 of 100), met calls slower without turns,
// with `p` as where the sleepers were seen waiting, among `busy` threads.
// How the met allocations of judge_words read: clearly slower, S 0.54 (bounds 0.53-0.55: not shown
// no slower, nor clearly slower), S 0.51 (bounds 0.48-0.54, 450 calls), or too few to measure.
enum class Met { ClearlySlower, NotShown, Hair, TooFew };

ContentionVerdict judge_words(const PeerWaitMeasure& p, uint32_t busy, Met met) {
  ContentionInputs in = inputs({cell(1000, 10, 1000, 11), cell(800, 30, 900, 31)});
  in.slow_switched = 100;
  in.slow_slept = 30;
  in.busy_threads = busy;
  in.peers = p;
  if (met == Met::NotShown) {
    in.allocating.slower = in.allocating.by_allocating = in.allocating.by_running = SlowerMeasure{2900, 0.54, 0.005};
  } else if (met == Met::Hair) {
    in.allocating.slower = in.allocating.by_allocating = in.allocating.by_running = SlowerMeasure{450, 0.51, 0.015};
  } else if (met == Met::TooFew) {
    in.allocating.slower = in.allocating.by_allocating = in.allocating.by_running = SlowerMeasure{30, std::nullopt, 0};
  }
  return judge_contention(in);
}

ContentionVerdict judge_words(const PeerWaitMeasure& p, uint32_t busy, bool met_clearly_slower = true) {
  return judge_words(p, busy, met_clearly_slower ? Met::ClearlySlower : Met::NotShown);
}

// 40 sleepers seen, `on_top` of them on one word, from `threads` threads' allocating calls of 16 B
// to 1 KiB; `busy` threads make allocating calls alike.  The looking threads' next allocations
// were held up 18 times of 20 after a sleeper (musl's congested lock).
PeerWaitMeasure sleepers(uint64_t on_top, uint32_t threads, uint32_t busy) {
  PeerWaitMeasure p;
  p.recorded = true;
  p.looks = 200;
  p.futex_waits = 40;
  p.words = on_top == 40 ? 1 : 3;
  p.top_waits = on_top;
  p.top_threads = threads;
  p.top_allocating_threads = threads;
  p.top_allocating = 30;
  p.top_min_size = 16;
  p.top_max_size = 1024;
  p.top_sizes_apart = true;
  p.top_spans_median = true;
  std::tie(p.top_threads_expected, p.top_threads_sd) = distinct_draws(std::vector<double>(busy, 1.0 / busy), p.top_allocating);
  p.probes_after_sleeper = 20;
  p.probes_after_sleeper_held = 18;
  p.probes = 200;
  p.probes_slept = 4;
  return p;
}

TEST(ContentionVerdict, SleepersOfEveryThreadOnOneWordAreOneLock) {
  const ContentionVerdict v = judge_words(sleepers(40, 8, 8), 8);
  EXPECT_EQ(v.kind, ContentionKind::GlobalLock);
  EXPECT_EQ(v.reason, ContentionReason::SleepersOnOneWord);
  EXPECT_GT(v.confidence, 0.9);
  EXPECT_NE(contention_reason(v).find("40 of the 40 calls seen asleep"), std::string::npos);
  bool shown = false;
  for (const EvidenceItem& e : contention_evidence(v)) shown = shown || (e.kind == "sleepers_on_one_word" && e.value == 1.0);
  EXPECT_TRUE(shown);
}

TEST(ContentionVerdict, SleepersSeenAreSleepsEnoughWithoutSlowTimedCallsThatSlept) {
  // Musl at 8 threads on 2 CPUs: most slow timed calls were preempted, 3 of 149 slept; the looks
  // outside the windows saw 31 calls asleep, every one on one word.
  ContentionInputs in = inputs({cell(1000, 10, 1000, 11), cell(800, 30, 900, 31)});
  in.slow_switched = 149;
  in.slow_slept = 3;
  in.busy_threads = 8;
  in.peers = sleepers(40, 8, 8);
  EXPECT_EQ(judge_contention(in).kind, ContentionKind::GlobalLock);
}

// Two threads under one lock: looks seldom see a sleeper, but the probes' allocations sleep while
// the other thread is inside an allocation of a size twice apart.
ContentionVerdict judge_probes(uint64_t apart, uint64_t slept, uint32_t threads, uint64_t across, uint64_t map_calls) {
  ContentionInputs in = inputs({cell(1000, 10, 1000, 11), cell(800, 30, 900, 31)});
  in.busy_threads = 2;
  in.cpus = 2;
  in.peers.recorded = true;
  in.peers.looks = 300;
  in.peers.map_syscalls = map_calls;
  in.peers.probes = 300;
  in.peers.probes_slept = 60;
  in.peers.probes_apart = apart;
  in.peers.probes_apart_slept = slept;
  in.peers.probes_apart_slept_threads = threads;
  in.peers.probes_apart_slept_across_median = across;
  return judge_contention(in);
}

TEST(ContentionVerdict, ProbesAsleepBesideSizesTwiceApartAreOneLock) {
  const ContentionVerdict v = judge_probes(170, 27, 2, 12, 4);
  EXPECT_EQ(v.kind, ContentionKind::GlobalLock);
  EXPECT_EQ(v.reason, ContentionReason::ProbesSleepApart);
  EXPECT_NE(contention_reason(v).find("27 of the 170 allocations"), std::string::npos);
  bool shown = false;
  for (const EvidenceItem& e : contention_evidence(v)) shown = shown || e.kind == "probes_asleep_beside_sizes_apart";
  EXPECT_TRUE(shown);
}

TEST(ContentionVerdict, ProbesAsleepOnlyWithinAWideClassOrOnTheMemoryMapAreNotOneLock) {
  // A few sleeps (a lock per class whose widest class joins sizes twice apart: 3 of 67).
  EXPECT_NE(judge_probes(67, 3, 3, 0, 4).kind, ContentionKind::GlobalLock);
  // Enough sleeps, but never across the median request (one class for every size of 2 KiB and up).
  EXPECT_NE(judge_probes(170, 27, 2, 0, 4).kind, ContentionKind::GlobalLock);
  // One thread's probes only.
  EXPECT_NE(judge_probes(170, 27, 1, 12, 4).kind, ContentionKind::GlobalLock);
  // Calls that spend their time on the memory map (mmap, munmap): the kernel's map lock.
  EXPECT_NE(judge_probes(170, 27, 2, 12, 60).kind, ContentionKind::GlobalLock);
  // More threads than CPUs: threads may share arenas.
  ContentionInputs shared = inputs({cell(1000, 10, 1000, 11), cell(800, 30, 900, 31)});
  shared.busy_threads = 16;
  shared.cpus = 2;
  shared.peers = judge_probes(170, 27, 2, 12, 4).inputs.peers;
  EXPECT_NE(judge_contention(shared).kind, ContentionKind::GlobalLock);
}

// Two threads under one spin lock: probes are held up beside allocations of sizes twice apart far
// more often than when nobody else is inside (measured: the global spin lock under mixed sizes at
// two threads, 191 of 464 against 30 of 253).
ContentionVerdict judge_holdups(uint64_t apart, uint64_t held, uint64_t unmet, uint64_t unmet_held, uint32_t threads,
                                uint32_t held_threads, uint32_t busy) {
  ContentionInputs in = inputs({cell(1000, 10, 1000, 11), cell(800, 30, 900, 31)});
  in.busy_threads = busy;
  in.cpus = 2;
  in.peers.recorded = true;
  in.peers.looks = 300;
  in.peers.probes = 1500;
  in.peers.probes_apart = apart + 50;
  in.peers.probes_apart_low = apart;
  in.peers.probes_apart_low_held = held;
  in.peers.probes_unmet = unmet;
  in.peers.probes_unmet_held = unmet_held;
  in.peers.probes_apart_low_threads = threads;
  in.peers.probes_apart_low_held_threads = held_threads;
  return judge_contention(in);
}

TEST(ContentionVerdict, ProbesHeldUpBesideSizesApartAloneAreNoLock) {
  // Held up beside other sizes far more often than alone, in every thread: evidence shown, no
  // longer a verdict of its own (it fell to chance beside a CPU hog; the holds give it directly).
  const ContentionVerdict v = judge_holdups(464, 191, 253, 30, 2, 2, 2);
  EXPECT_NE(v.kind, ContentionKind::GlobalLock);
  bool shown = false;
  for (const EvidenceItem& e : contention_evidence(v))
    shown = shown || (e.kind == "probes_held_beside_sizes_apart" && std::abs(e.value - 191.0 / 464) < 1e-12);
  EXPECT_TRUE(shown);
  // Measured, scudo's stress at two threads beside a CPU hog: 3 of 66 against 3 of 661.
  EXPECT_NE(judge_holdups(66, 3, 661, 3, 2, 2, 2).kind, ContentionKind::GlobalLock);
}

// Holds (peer_waits.h): `holds` allocations timed while the threads inside calls were held,
// `released` of them let go by a thread held in an allocation of a size apart; `busy` threads on 2 CPUs.
ContentionVerdict judge_holds(uint64_t holds, uint64_t released, uint32_t threads, uint32_t busy,
                              uint32_t joined = 3) {
  ContentionInputs in = inputs({met_and_alone(20000, 20000)}, {}, ends(1.0, 0.01));
  in.busy_threads = busy;
  in.cpus = 2;
  in.peers.recorded = true;
  in.peers.holds = holds;
  in.peers.holds_released = released;
  in.peers.holds_apart_low_released = released;
  in.peers.holds_apart_low_released_threads = threads;
  in.peers.holds_apart_low_joined = std::min(joined, busy);
  return judge_contention(in);
}

TEST(ContentionVerdict, HoldsReleasedBesideSizesApartAreOneLock) {
  // Measured: the global spin lock under mixed sizes at two threads, whose timed calls read like
  // calls side by side (met calls no slower, ends as chance says).
  const ContentionVerdict v = judge_holds(60, 23, 2, 2);
  EXPECT_EQ(v.kind, ContentionKind::GlobalLock);
  EXPECT_EQ(v.reason, ContentionReason::HoldsReleasedApart);
  EXPECT_GT(v.confidence, 0.99);
  EXPECT_NE(contention_reason(v).find("23 of 60 allocations"), std::string::npos);
  bool shown = false;
  for (const EvidenceItem& e : contention_evidence(v))
    shown = shown || (e.kind == "holds_released_beside_sizes_apart" && std::abs(e.value - 23.0 / 60) < 1e-12);
  EXPECT_TRUE(shown);
  EXPECT_EQ(judge_holds(200, 3, 1, 8, 5).kind, ContentionKind::GlobalLock);
  // Too few releases: the timed calls decide ("none" here).
  EXPECT_EQ(judge_holds(200, 2, 2, 2).kind, ContentionKind::None);
  // More than four busy threads per CPU: threads share arenas, and an arena's lock is held too.
  EXPECT_NE(judge_holds(200, 40, 9, 9).kind, ContentionKind::GlobalLock);
  // Releases that join two threads of eight: a lock those two share (four mutexes for eight
  // threads, thread k on lock k % 4), not one for all.
  EXPECT_NE(judge_holds(80, 7, 2, 8, 2).kind, ContentionKind::GlobalLock);
  EXPECT_EQ(judge_holds(80, 7, 2, 8, 5).kind, ContentionKind::GlobalLock);
  // Releases that join four threads of eight, half of them: two kinds of shared locks chained
  // (measured: the four mutexes under producer/consumer frees at eight threads, where a consumer
  // also takes its producer's glibc arena; threads 2-6 and 3-7 on one mutex each, 6-7 on an arena).
  EXPECT_NE(judge_holds(28, 3, 3, 8, 4).kind, ContentionKind::GlobalLock);
  EXPECT_EQ(judge_holds(28, 3, 3, 4, 3).kind, ContentionKind::GlobalLock);
}

TEST(ContentionVerdict, CallsOnTheMemoryMapSayNothingOfALockInTheHoldsOrProbes) {
  // Measured: glibc with every block mmapped (glibc.malloc.mmap_threshold=131072), 2 threads of
  // 200 KB-1 MB blocks: 422 of 422 looks found the other thread running (the kernel names a system
  // call only while a thread sleeps in it); 15 of 60 probes slept beside sizes twice apart, on the
  // kernel's map lock; 3-4 of 87-91 holds released; its calls made alone took 53 µs at the median.
  ContentionInputs in = inputs({met_and_alone(20000, 20000)}, {}, ends(1.0, 0.01));
  in.busy_threads = 2;
  in.cpus = 2;
  in.peers.recorded = true;
  in.peers.looks = 422;
  in.peers.running = 422;
  in.peers.probes = 900;
  in.peers.probes_apart = 60;
  in.peers.probes_apart_slept = 15;
  in.peers.probes_apart_slept_threads = 2;
  in.peers.probes_apart_slept_across_median = 15;
  // Calls made alone in a microsecond: the probes' sleeps are a lock's.
  in.alone_median_ns = 1000;
  EXPECT_EQ(judge_contention(in).reason, ContentionReason::ProbesSleepApart);
  in.alone_median_ns = 52763;
  EXPECT_NE(judge_contention(in).kind, ContentionKind::GlobalLock);
  // Shorter than a hold, still a system call of its own (the same blocks, 24 µs at the median).
  in.alone_median_ns = 24427;
  EXPECT_NE(judge_contention(in).kind, ContentionKind::GlobalLock);
  // The same for the holds.
  in.peers.probes_apart_slept = 0;
  in.peers.holds = 91;
  in.peers.holds_released = 4;
  in.peers.holds_apart_low_released = 4;
  in.peers.holds_apart_low_released_threads = 2;
  in.peers.holds_apart_low_joined = 2;
  EXPECT_NE(judge_contention(in).kind, ContentionKind::GlobalLock);
  in.alone_median_ns = 1740;  // musl's mixed sizes at 4 threads, whose holds say one lock
  EXPECT_EQ(judge_contention(in).reason, ContentionReason::HoldsReleasedApart);
}

TEST(ContentionVerdict, SleepersSeenOnLocksMakeNoneContentionInPlaces) {
  // Calls side by side, met calls no slower: "none" — unless the looks at threads inside calls
  // often find one asleep in a futex wait (measured: four mutexes that pairs of eight threads
  // share, 273 sleepers in 1,675 looks, read as calls side by side).
  ContentionInputs in = inputs({met_and_alone(20000, 20000)}, {}, ends(1.0, 0.01));
  in.busy_threads = 8;
  in.cpus = 2;
  in.peers.recorded = true;
  in.peers.looks = 1675;
  in.peers.futex_waits = 273;
  in.peers.words = 4;
  const ContentionVerdict v = judge_contention(in);
  EXPECT_EQ(v.kind, ContentionKind::Partial);
  EXPECT_EQ(v.reason, ContentionReason::SleepersInPlaces);
  EXPECT_NE(contention_reason(v).find("273 of 1675 looks"), std::string::npos);
  EXPECT_NE(contention_reason(v).find("on 4 words"), std::string::npos);
  // A few sleepers, or sleepers in a small share of many looks (measured: the stress harness under
  // scudo at 8 threads, 18 of 1,427): nothing the calls themselves do not show.
  in.peers.futex_waits = 18;
  EXPECT_EQ(judge_contention(in).kind, ContentionKind::None);
  in.peers.looks = 2150;
  in.peers.futex_waits = 50;
  EXPECT_EQ(judge_contention(in).kind, ContentionKind::None);
}

TEST(ContentionVerdict, TheAllocatorsOwnLocksContendedMakeNoneContentionInPlaces) {
  // Calls side by side, met calls no slower: "none" — unless the shim counted the allocator's own
  // locks waited on when its calls came to them, for a share of its time that matters.
  ContentionInputs in = inputs({met_and_alone(20000, 20000)}, {}, ends(1.0, 0.01));
  in.busy_threads = 4;
  in.cpus = 2;
  in.allocator_locks.recorded = true;
  in.allocator_locks.waits = 500;
  in.allocator_locks.wait_ns = 20e6;
  in.allocator_time_ns = 400e6;
  in.allocator_lock_share = 0.05;
  const ContentionVerdict v = judge_contention(in);
  EXPECT_EQ(v.kind, ContentionKind::Partial);
  EXPECT_EQ(v.reason, ContentionReason::AllocatorLocksWaited);
  EXPECT_NE(contention_reason(v).find("waited on locks of its own 500 times, 20"), std::string::npos) << contention_reason(v);
  in.allocator_lock_share = 0.005;  // half a percent of the time inside the allocator: none
  EXPECT_EQ(judge_contention(in).kind, ContentionKind::None);
  in.allocator_lock_share = 0.05;
  in.allocator_locks.waits = 9;     // a handful of waits: none
  EXPECT_EQ(judge_contention(in).kind, ContentionKind::None);
}

TEST(ContentionVerdict, NoneNeedsAllocationsThatWentPastHeldThreads) {
  // Met calls no slower, ends as chance says: "none" by the timed calls alone.  Where the shim held
  // threads, it also needs five allocations that went on past a thread held inside a call (the
  // global spin lock on an overloaded machine: 2 holds made, called "none").
  ContentionInputs in = inputs({met_and_alone(20000, 20000)}, {}, ends(1.0, 0.01));
  in.busy_threads = 2;
  in.cpus = 2;
  ASSERT_EQ(judge_contention(in).kind, ContentionKind::None);  // no holds made: the windows alone
  in.holds_recorded = true;
  in.peers.holds = 2;
  in.peers.holds_passed = 2;
  ContentionVerdict v = judge_contention(in);
  EXPECT_EQ(v.kind, ContentionKind::Unsure);
  EXPECT_EQ(v.reason, ContentionReason::FewHoldsPassed);
  EXPECT_NE(contention_reason(v).find("only 2 of the 2 calls"), std::string::npos);
  EXPECT_NE(contention_advice(v).find("longer run"), std::string::npos);
  // Many holds, most of them waiting for a held thread (of sizes too close to say one lock): still unsure.
  in.peers.holds = 40;
  in.peers.holds_released = 36;
  in.peers.holds_passed = 4;
  EXPECT_EQ(judge_contention(in).reason, ContentionReason::FewHoldsPassed);
  in.peers.holds_passed = 5;
  EXPECT_EQ(judge_contention(in).kind, ContentionKind::None);
  // And "partial" as well: sleepers seen in places rest on the same calls side by side.
  in.peers.futex_waits = 200;
  in.peers.looks = 1000;
  EXPECT_EQ(judge_contention(in).kind, ContentionKind::Partial);
  in.peers.holds_passed = 1;
  EXPECT_EQ(judge_contention(in).reason, ContentionReason::FewHoldsPassed);
}

TEST(ContentionVerdict, ProbesHeldUpBesideOtherSizesForbidNone) {
  // Met calls no slower, ends as chance says: "none" — unless the probes were held up beside
  // allocations of other sizes more often than alone (a spin lock with short critical sections,
  // measured under mixed sizes at two threads); in one thread only, that cannot say one lock for
  // all either.
  ContentionInputs in = inputs({met_and_alone(20000, 20000)}, {}, ends(1.0, 0.01));
  in.busy_threads = 2;
  in.cpus = 2;
  ASSERT_EQ(judge_contention(in).kind, ContentionKind::None);
  in.peers = judge_holdups(300, 90, 200, 10, 2, 1, 2).inputs.peers;
  const ContentionVerdict v = judge_contention(in);
  EXPECT_EQ(v.kind, ContentionKind::Unsure);
  EXPECT_EQ(v.reason, ContentionReason::HeldBesideOthers);
  EXPECT_NE(contention_reason(v).find("90 times of 300"), std::string::npos);
  EXPECT_FALSE(contention_advice(v).empty());
  // Held up in every thread: still no verdict of its own (the holds give one).
  in.peers.probes_apart_low_held_threads = 2;
  EXPECT_EQ(judge_contention(in).kind, ContentionKind::Unsure);
  // As often as alone: none again.
  in.peers.probes_apart_low_held = 16;
  EXPECT_EQ(judge_contention(in).kind, ContentionKind::None);
}

TEST(ContentionVerdict, SleepersOnSeveralWordsOrOfFewThreadsAreNotOneLock) {
  // Several words (a lock per class or arena), or one word shared by two threads of sixteen (two
  // threads on one glibc arena), or one size only, or large sizes only, or too few sleepers.
  EXPECT_NE(judge_words(sleepers(30, 8, 8), 8).kind, ContentionKind::GlobalLock);
  EXPECT_NE(judge_words(sleepers(40, 2, 16), 16).kind, ContentionKind::GlobalLock);
  PeerWaitMeasure one_size = sleepers(40, 8, 8);
  one_size.top_sizes_apart = false;
  EXPECT_NE(judge_words(one_size, 8).kind, ContentionKind::GlobalLock);
  PeerWaitMeasure large_only = sleepers(40, 8, 8);  // one lock for the sizes of 2 KiB and up
  large_only.top_spans_median = false;
  EXPECT_NE(judge_words(large_only, 8).kind, ContentionKind::GlobalLock);
  PeerWaitMeasure few = sleepers(40, 8, 8);
  few.futex_waits = few.top_waits = 9;
  EXPECT_NE(judge_words(few, 8).kind, ContentionKind::GlobalLock);
  // Every thread sleeps on one word now and then, while allocations that meet another thread run
  // no slower: a lock on a slow path that few calls take (scudo's refills and drains).
  ContentionInputs slow_path = inputs({cell(1000, 10, 1000, 11), cell(800, 30, 900, 31)});
  slow_path.busy_threads = 8;
  slow_path.peers = sleepers(40, 8, 8);
  slow_path.allocating.slower = SlowerMeasure{2900, 0.502, 0.005};
  EXPECT_NE(judge_contention(slow_path).kind, ContentionKind::GlobalLock);
  slow_path.allocating.slower = SlowerMeasure{2900, 0.55, 0.005};
  EXPECT_EQ(judge_contention(slow_path).kind, ContentionKind::GlobalLock);
  // Met allocations not clearly slower, and nothing shows that ordinary allocations take the
  // lock: the next allocation after a sleeper ran on (3 of 20 held up), and allocations seldom
  // sleep (2 of 200): a lock on a path that few calls take, as scudo's refills and drains —
  // whatever the words say.
  PeerWaitMeasure rare = sleepers(40, 8, 8);
  rare.probes_after_sleeper_held = 3;
  rare.probes_slept = 2;
  EXPECT_NE(judge_words(rare, 8, false).kind, ContentionKind::GlobalLock);
  // … while met allocations clearly slower say it as well as the probes (musl's producer/consumer
  // at 4 and 8 threads: met allocations slower 0.70-0.75, few probes after a sleeper).
  EXPECT_EQ(judge_words(rare, 8).kind, ContentionKind::GlobalLock);
  // A lock every call takes but holds briefly (a global mutex around a fast allocator): the next
  // allocation is seldom held up, yet ordinary allocations sleep often (40 of 200).
  PeerWaitMeasure brief = rare;
  brief.probes_slept = 40;
  EXPECT_EQ(judge_words(brief, 8, false).kind, ContentionKind::GlobalLock);
  // … but not where the looks found calls on the memory map (the kernel's map lock): 60 of 200.
  PeerWaitMeasure mapping = brief;
  mapping.looks = 200;
  mapping.map_syscalls = 60;
  EXPECT_NE(judge_words(mapping, 8, false).kind, ContentionKind::GlobalLock);
  // A global mutex around a fast allocator under mixed sizes beside a CPU hog: the next allocation
  // is seldom held up and met calls are too few to weigh, but the looks outside the windows find
  // most threads inside calls asleep on the word (533 of 907): a lock the calls in progress queue
  // for.  A lock on a path few calls take gathers few (tcmalloc's page heap: 15 of 413 looks), and
  // so do too few looks (40 of 80).
  PeerWaitMeasure crowded = rare;
  crowded.outside_looks = 907;
  crowded.futex_waits = crowded.top_waits = crowded.top_waits_outside = 533;
  EXPECT_EQ(judge_words(crowded, 8, Met::TooFew).kind, ContentionKind::GlobalLock);
  EXPECT_EQ(judge_words(crowded, 8, Met::NotShown).kind, ContentionKind::GlobalLock);
  // A refill lock behind thread caches, crowded by a CPU hog that preempts its holders: its met
  // allocations, measured, are not clearly slower (S 0.50-0.55, lower bounds 0.47-0.50).
  EXPECT_NE(judge_words(crowded, 8, Met::Hair).kind, ContentionKind::GlobalLock);
  // … and where its met allocations were too few to measure, the next allocation after a sleeper
  // seldom waits: 0 of 106 (the global mutex's 12 of 226 at the least).
  PeerWaitMeasure refill = crowded;
  refill.probes_after_sleeper = 106;
  refill.probes_after_sleeper_held = 0;
  EXPECT_NE(judge_words(refill, 8, Met::TooFew).kind, ContentionKind::GlobalLock);
  refill.probes_after_sleeper = 226;
  refill.probes_after_sleeper_held = 12;
  EXPECT_EQ(judge_words(refill, 8, Met::TooFew).kind, ContentionKind::GlobalLock);
  crowded.futex_waits = crowded.top_waits = crowded.top_waits_outside = 15;
  crowded.outside_looks = 413;
  EXPECT_NE(judge_words(crowded, 8, Met::TooFew).kind, ContentionKind::GlobalLock);
  crowded.futex_waits = crowded.top_waits = crowded.top_waits_outside = 40;
  crowded.outside_looks = 80;
  EXPECT_NE(judge_words(crowded, 8, Met::TooFew).kind, ContentionKind::GlobalLock);
  // … and crowding says nothing of sleepers confined to the large sizes (a lock for every size of
  // 2 KiB and up: 697 of 895 looks under mixed sizes at 16 threads).
  PeerWaitMeasure crowded_large = rare;
  crowded_large.outside_looks = 895;
  crowded_large.futex_waits = crowded_large.top_waits = crowded_large.top_waits_outside = 697;
  crowded_large.top_spans_median = false;
  EXPECT_NE(judge_words(crowded_large, 8, false).kind, ContentionKind::GlobalLock);
  // Too few probes after a sleeper to say (4 of 4), and none asleep.
  PeerWaitMeasure few_probes = rare;
  few_probes.probes_after_sleeper = few_probes.probes_after_sleeper_held = 4;
  EXPECT_NE(judge_words(few_probes, 8, false).kind, ContentionKind::GlobalLock);
  // Two threads on one word, but one of them only ever asleep in frees: a consumer freeing into
  // its producer's arena, not one lock for all.
  PeerWaitMeasure pair = sleepers(40, 2, 2);
  pair.top_allocating_threads = 1;
  EXPECT_NE(judge_words(pair, 2).kind, ContentionKind::GlobalLock);
  // Half the threads of eight (a lock on a path some threads take, or one arena they share).
  EXPECT_NE(judge_words(sleepers(40, 4, 8), 8).kind, ContentionKind::GlobalLock);
  // Two threads, both asleep on one word: one lock for the two.
  EXPECT_EQ(judge_words(sleepers(40, 2, 2), 2).kind, ContentionKind::GlobalLock);
}

}  // namespace
}  // namespace allocscope
