// lock_test_test.cpp — what the lock test's counts say (model/lock_test.h), and how the contention
// verdict takes them (contention_verdict.h by_lock_test), on counts with known answers.
#include "model/lock_test.h"

#include <gtest/gtest.h>

#include "model/contention_verdict.h"
#include "render/contention_wording.h"

namespace allocscope {
namespace {

struct Counts {
  uint32_t passed = 0, stopped = 0, later = 0, preempted = 0;
};

// A test that ran: holds inside malloc at sizes apart and at one size, and holds between calls.
LockTestRecord ran(Counts apart, Counts same, Counts between = {60, 0, 0, 5}) {
  LockTestRecord r;
  r.test.status = static_cast<uint8_t>(format::LockTestStatus::Ran);
  const auto put = [&](int phase, int where, Counts c) {
    uint32_t* o = r.test.counts[phase][where];
    o[format::kWatchedPassed] = c.passed;
    o[format::kWatchedStopped] = c.stopped;
    o[format::kWatchedStoppedLater] = c.later;
    o[format::kWatchedPreempted] = c.preempted;
  };
  put(format::kLockTestApart, format::kHeldInMalloc, apart);
  put(format::kLockTestSame, format::kHeldInMalloc, same);
  put(format::kLockTestApart, format::kHeldOutside, between);
  // Waiters woken by the signal hold nothing: never counted, however many stopped.
  put(format::kLockTestApart, format::kHeldAfterSyscall, {0, 50, 0, 0});
  r.detail = "allocscope-lockprobe-glibc with libtest.so";
  return r;
}

TEST(LockTest, NoRecordIsNotRun) {
  EXPECT_EQ(read_lock_test(std::nullopt).kind, LockTestKind::NotRun);
}

TEST(LockTest, NotRunAndFailedKeepTheirReason) {
  LockTestRecord r;
  r.test.status = static_cast<uint8_t>(format::LockTestStatus::NotRun);
  r.detail = "the allocator is linked into the program";
  EXPECT_EQ(read_lock_test(r).kind, LockTestKind::NotRun);
  EXPECT_EQ(read_lock_test(r).detail, r.detail);
  r.test.status = static_cast<uint8_t>(format::LockTestStatus::Failed);
  EXPECT_EQ(read_lock_test(r).kind, LockTestKind::Failed);
}

TEST(LockTest, StoppedAtTheNextAllocationOfAnotherSizeIsOneLockForAll) {
  // musl's mallocng, measured: 54 of 117 holds stopped the other at once, none later.
  const LockTestFinding f = read_lock_test(ran({63, 54, 0}, {52, 38, 2}));
  EXPECT_EQ(f.kind, LockTestKind::OneLockForAll);
  EXPECT_EQ(f.apart.told, 117u);
  EXPECT_EQ(f.apart.stopped, 54u);
  EXPECT_GT(f.confidence, 0.99);
}

TEST(LockTest, StoppedOnlyAtOneSizeIsALockPerClass) {
  const LockTestFinding f = read_lock_test(ran({70, 0, 0}, {79, 78, 0}));
  EXPECT_EQ(f.kind, LockTestKind::LockPerClass);
}

TEST(LockTest, NeverStoppedIsNoSharedLock) {
  EXPECT_EQ(read_lock_test(ran({66, 0, 1}, {42, 0, 0})).kind, LockTestKind::NoSharedLock);
  // scudo, measured: a refill lock that some calls take stops the other now and then, mostly later.
  EXPECT_EQ(read_lock_test(ran({35, 1, 3}, {99, 0, 11})).kind, LockTestKind::NoSharedLock);
}

TEST(LockTest, TooFewHoldsAtOneSizeLeaveOnlySizesApart) {
  EXPECT_EQ(read_lock_test(ran({66, 0, 1}, {5, 0, 0})).kind, LockTestKind::NoLockAcrossSizes);
}

TEST(LockTest, SomeStoppedLaterStillOneLockForAll) {
  // mallocng under the matrix once: 43 at once, 18 later (the watched thread's frees mostly take no lock).
  EXPECT_EQ(read_lock_test(ran({59, 43, 18}, {58, 51, 11})).kind, LockTestKind::OneLockForAll);
}

TEST(LockTest, StoppedSomeCallsLaterIsNoLockForEveryCall) {
  // A lock that one call in several takes stops the other after a few calls, not at its next.
  EXPECT_EQ(read_lock_test(ran({40, 10, 30}, {40, 10, 30})).kind, LockTestKind::Inconclusive);
}

TEST(LockTest, TooFewHoldsAreInconclusive) {
  EXPECT_EQ(read_lock_test(ran({2, 11, 0, 80}, {2, 12, 0, 60})).kind, LockTestKind::Inconclusive);
}

TEST(LockTest, StoppedAsOftenBetweenCallsIsTheMachine) {
  EXPECT_EQ(read_lock_test(ran({40, 40, 0}, {40, 40, 0}, {30, 30, 0})).kind, LockTestKind::Inconclusive);
}

// The run's evidence around it (contention_verdict_test.cpp builds richer ones).
ContentionInputs run_with(LockTestFinding t) {
  ContentionInputs in;
  in.busy_threads = 2;
  in.calling_threads = 2;
  in.timed = 1000;
  in.cpus = 2;
  in.max_live_threads = 3;
  in.wall_seconds = 0.5;
  in.lock_test = std::move(t);
  return in;
}

TEST(LockTestVerdict, OneLockForAllMetTogetherIsAGlobalLock) {
  ContentionInputs in = run_with(read_lock_test(ran({63, 54, 0}, {52, 38, 2})));
  in.peers.looks = 40;
  const ContentionVerdict v = judge_contention(in);
  EXPECT_EQ(v.kind, ContentionKind::GlobalLock);
  EXPECT_EQ(v.reason, ContentionReason::LockTestOneLock);
  EXPECT_NE(contention_sentence(v).find("one global lock"), std::string::npos);
  EXPECT_NE(contention_reason(v).find("54 of 117 holds stopped"), std::string::npos) << contention_reason(v);
}

TEST(LockTestVerdict, OneLockForAllNeverSharedInTimeIsNotClaimed) {
  // Two threads that never were inside the allocator together took no turns at its lock.
  const ContentionVerdict v = judge_contention(run_with(read_lock_test(ran({63, 54, 0}, {52, 38, 2}))));
  EXPECT_NE(v.kind, ContentionKind::GlobalLock);
  EXPECT_NE(v.reason, ContentionReason::LockTestOneLock);
}

TEST(LockTestVerdict, OneThreadStaysOneThread) {
  ContentionInputs in = run_with(read_lock_test(ran({63, 54, 0}, {52, 38, 2})));
  in.busy_threads = 1;
  in.peers.looks = 40;
  EXPECT_EQ(judge_contention(in).kind, ContentionKind::SingleThread);
}

TEST(LockTestVerdict, NoSharedLockAndNoWaitIsNone) {
  const ContentionVerdict v = judge_contention(run_with(read_lock_test(ran({66, 0, 1}, {42, 0, 0}))));
  EXPECT_EQ(v.kind, ContentionKind::None);
  EXPECT_EQ(v.reason, ContentionReason::LockTestNoLock);
  const std::vector<EvidenceItem> items = contention_evidence(v);
  const auto it = std::find_if(items.begin(), items.end(), [](const EvidenceItem& e) { return e.kind == "lock_test"; });
  ASSERT_NE(it, items.end());
  EXPECT_NE(it->meaning.find("found: no lock that allocations of two threads share"), std::string::npos) << it->meaning;
}

TEST(LockTestVerdict, NoSharedLockInARunOfAFewMillisecondsIsNotNone) {
  // Too short to have shown a wait: the rules of the run decide, and they ask for a longer one.
  ContentionInputs in = run_with(read_lock_test(ran({66, 0, 1}, {42, 0, 0})));
  in.wall_seconds = 0.003;
  EXPECT_NE(judge_contention(in).kind, ContentionKind::None);
}

TEST(LockTestVerdict, NoSharedLockWithFewTimedCallsIsNotNone) {
  // A program whose threads seldom call the allocator: one timed call cannot have shown a wait.
  ContentionInputs in = run_with(read_lock_test(ran({66, 0, 1}, {42, 0, 0})));
  in.timed = 1;
  EXPECT_NE(judge_contention(in).kind, ContentionKind::None);
  in.timed = 99;
  EXPECT_NE(judge_contention(in).kind, ContentionKind::None);
  in.timed = 100;
  EXPECT_EQ(judge_contention(in).reason, ContentionReason::LockTestNoLock);
}

TEST(LockTestVerdict, NoSharedLockWithSomeSlowCallsAsleepIsNotNone) {
  // Measured: a refill lock that one call in 32 takes, producer/consumer frees beside a busy
  // machine: 2 of 38 slow calls slept inside the allocator. Fewer than sleeps_inside() asks to say
  // that threads waited, too many to say that none did.
  ContentionInputs in = run_with(read_lock_test(ran({66, 0, 1}, {42, 0, 0})));
  in.slow_switched = 38;
  in.slow_slept = 2;
  EXPECT_NE(judge_contention(in).kind, ContentionKind::None);
  EXPECT_NE(judge_contention(in).reason, ContentionReason::LockTestNoLock);
  // One sleep among many is the kernel's (a fault on the memory map's lock): still none.
  in.slow_switched = 200;
  in.slow_slept = 1;
  EXPECT_EQ(judge_contention(in).reason, ContentionReason::LockTestNoLock);
  // Two among many, under 5 %: still none.
  in.slow_slept = 2;
  EXPECT_EQ(judge_contention(in).reason, ContentionReason::LockTestNoLock);
}

TEST(LockTestVerdict, NoSharedLockWithThreadsAsleepOnLocksIsContentionInPlaces) {
  ContentionInputs in = run_with(read_lock_test(ran({66, 0, 1}, {79, 78, 0})));
  in.peers.looks = 300;
  in.peers.futex_waits = 60;
  const ContentionVerdict v = judge_contention(in);
  EXPECT_EQ(v.kind, ContentionKind::Partial);
  EXPECT_EQ(v.reason, ContentionReason::LockTestWaitsInPlaces);
}

TEST(LockTestVerdict, NoSharedLockWithTheAllocatorsOwnLocksContendedIsContentionInPlaces) {
  // Measured: a refill lock behind thread caches, producer/consumer beside two busy loops: the
  // windows saw no wait (1 of 30 slow calls slept, 0 of 4 looks), the shim counted 89 waits on the
  // allocator's own mutex, 40 ms in 0.13 s inside the allocator.
  ContentionInputs in = run_with(read_lock_test(ran({66, 0, 1}, {42, 0, 0})));
  in.allocator_locks.recorded = true;
  in.allocator_time_ns = 130e6;
  in.allocator_locks.waits = 89;
  in.allocator_locks.wait_ns = 40e6;
  in.allocator_lock_share = in.allocator_locks.wait_ns / in.allocator_time_ns;
  const ContentionVerdict v = judge_contention(in);
  EXPECT_EQ(v.kind, ContentionKind::Partial);
  EXPECT_EQ(v.reason, ContentionReason::LockTestWaitsInPlaces);
  EXPECT_NE(contention_reason(v).find("waited on locks of its own 89 times"), std::string::npos)
      << contention_reason(v);
  const std::vector<EvidenceItem> items = contention_evidence(v);
  const auto it =
      std::find_if(items.begin(), items.end(), [](const EvidenceItem& e) { return e.kind == "allocator_lock_waits"; });
  ASSERT_NE(it, items.end());
  EXPECT_EQ(it->value, 89);
  // A few short waits in a long run say no more than the windows did.
  in.allocator_locks.waits = 9;
  EXPECT_EQ(judge_contention(in).reason, ContentionReason::LockTestNoLock);
  in.allocator_locks.waits = 89;
  in.allocator_lock_share = 0.009;
  EXPECT_EQ(judge_contention(in).reason, ContentionReason::LockTestNoLock);
  EXPECT_NE(contention_reason(judge_contention(in)).find("of its own 89 times"), std::string::npos);
}

TEST(LockTestVerdict, AnInconclusiveTestLeavesTheRunToDecide) {
  ContentionInputs in = run_with(read_lock_test(ran({2, 11, 0, 80}, {2, 12, 0, 60})));
  in.peers.looks = 40;
  const ContentionVerdict v = judge_contention(in);
  EXPECT_NE(v.reason, ContentionReason::LockTestOneLock);
  EXPECT_NE(v.reason, ContentionReason::LockTestNoLock);
}

}  // namespace
}  // namespace allocscope
