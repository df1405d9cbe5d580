// Looks at threads inside allocator calls (model/peer_waits.h): joined to timed calls, or taken
// outside the windows with the call's kind and size bucket from the peer's gate.
#include "model/peer_waits.h"

#include <gtest/gtest.h>
#include <sys/syscall.h>

#include <cmath>
#include <vector>

#include "allocscope/buckets.h"
#include "allocscope/ops.h"

namespace allocscope {
namespace {

constexpr uint64_t kWord = 0x7f00001000;

Profile::PeerLook outside(uint32_t observer, uint32_t peer, Op op, uint64_t size, int32_t syscall, uint64_t word) {
  Profile::PeerLook l{};
  l.observer = observer;
  l.wait.tick = 1000;
  l.wait.peer_serial = peer;
  l.wait.peer_start_tick = format::peer_untimed_call(static_cast<unsigned>(op), bucket_of(size));
  l.wait.syscall = syscall;
  l.wait.arg0 = word;
  l.wait.arg1 = 128;  // FUTEX_WAIT | FUTEX_PRIVATE_FLAG
  return l;
}

format::Event timed(Op op, uint64_t size, uint64_t start) {
  format::Event e{};
  e.op = static_cast<uint8_t>(op);
  e.bucket = static_cast<uint8_t>(bucket_of(size));
  e.size = static_cast<uint32_t>(size);
  e.start_tick = start;
  e.duration_ticks = 100;
  return e;
}

// The looks' measure, with `threads` threads' ten timed allocations of 64 B each (the median
// request: size group 6; and each thread's share of the timed calls, alike).
PeerWaitMeasure measure_beside_timed(const std::vector<Profile::PeerLook>& looks, uint32_t threads) {
  PeerWaitTally tally;
  tally.expect(looks, true, 1000, 1000000);
  for (uint32_t t = 1; t <= threads; ++t)
    for (uint64_t i = 0; i < 10; ++i) tally.add_call(t, timed(Op::Malloc, 64, 5000 + i * 1000));
  return tally.measure();
}

TEST(PeerWaits, LooksOutsideTheWindowsCountWithTheirCallsKindAndSize) {
  std::vector<Profile::PeerLook> looks;
  for (uint32_t t = 1; t <= 4; ++t) {
    looks.push_back(outside(9, t, Op::Malloc, 16u << t, SYS_futex, kWord));   // asleep on the word
    looks.push_back(outside(9, t, Op::Free, 0, SYS_futex, kWord));            // a free of unknown size
    looks.push_back(outside(9, t, Op::Malloc, 64, format::kPeerRunning, 0));  // on a CPU
  }
  looks.back().wait.peer_start_tick = format::peer_untimed_call(static_cast<unsigned>(Op::Free), kBucketUnknown);
  const PeerWaitMeasure m = measure_beside_timed(looks, 4);
  EXPECT_EQ(m.looks, 12u);
  EXPECT_EQ(m.outside_looks, 12u);
  EXPECT_EQ(m.futex_waits, 8u);
  EXPECT_EQ(m.running, 4u);
  EXPECT_EQ(m.words, 1u);
  EXPECT_EQ(m.top_waits, 8u);
  EXPECT_EQ(m.top_threads, 4u);     // the threads whose calls slept there
  EXPECT_EQ(m.top_allocating, 4u);  // the frees are not allocating calls
  EXPECT_EQ(m.top_min_size, bucket_lo(bucket_of(32)));
  EXPECT_EQ(m.top_max_size, bucket_lo(bucket_of(256)));
  EXPECT_TRUE(m.top_sizes_apart);
  EXPECT_TRUE(m.top_spans_median);
  // Eight sleepers drawn from four threads alike come from 4 (1 - (3/4)^8) = 3.6 threads on average.
  EXPECT_NEAR(m.top_threads_expected, 4 * (1 - std::pow(0.75, 8)), 1e-9);
  EXPECT_GT(m.top_threads_sd, 0.3);
}

TEST(PeerWaits, ProbesAsleepBesideSizesTwiceApartAreCountedAcrossTheMedian) {
  // Looks outside the windows at a running thread, each followed by the observer's own allocation
  // (a probe) and what the others were inside as it started.
  auto probe = [](uint32_t observer, uint64_t own, uint64_t lo, uint64_t hi, bool slept, bool unknown) {
    Profile::PeerLook l = outside(observer, observer == 1 ? 2 : 1, Op::Malloc, 64, format::kPeerRunning, 0);
    format::ProbePeers pp = format::kNoProbePeers;
    pp.inside = 1;
    pp.min_bucket = bucket_of(lo);
    pp.max_bucket = bucket_of(hi);
    pp.unknown = unknown;
    l.wait.peer_start_tick |= format::peer_probe(static_cast<unsigned>(Op::Malloc), bucket_of(own), 10, slept, pp);
    return l;
  };
  std::vector<Profile::PeerLook> looks = {
      probe(1, 32, 1024, 1024, true, false),   // asleep beside 1 KiB: apart, across the median (64 B)
      probe(2, 1024, 32, 48, true, false),     // the other way round
      probe(1, 32, 1024, 1024, false, false),  // apart, awake
      probe(2, 48, 64, 64, true, false),       // beside a near size: not apart
      probe(1, 32, 1024, 1024, true, true),    // a thread in a call of no known size besides
      probe(2, 128, 1000, 1000, true, false),     // apart, but both above the median
      probe(1, 4096, 32768, 32768, true, false),  // both 1 KiB or more: never apart (kApartBelowGroup)
  };
  const PeerWaitMeasure m = measure_beside_timed(looks, 1);
  EXPECT_EQ(m.probes, 7u);
  EXPECT_EQ(m.probes_slept, 6u);
  EXPECT_EQ(m.probes_apart, 4u);
  EXPECT_EQ(m.probes_apart_slept, 3u);
  EXPECT_EQ(m.probes_apart_slept_threads, 2u);
  EXPECT_EQ(m.probes_apart_slept_across_median, 2u);
  EXPECT_EQ(m.looks, 7u);
}

TEST(PeerWaits, AProbeWithNobodySeenCountsAsAProbeNotALook) {
  Profile::PeerLook l = outside(1, 2, Op::Malloc, 64, format::kPeerNotSeen, 0);
  l.wait.peer_start_tick = format::kPeerUntimed |
                           format::peer_probe(static_cast<unsigned>(Op::Malloc), bucket_of(64), 10, true, format::kNoProbePeers);
  PeerWaitTally tally;
  tally.expect({l}, true, 1000, 1000000);
  const PeerWaitMeasure m = tally.measure();
  EXPECT_EQ(m.looks, 0u);
  EXPECT_EQ(m.running, 0u);
  EXPECT_EQ(m.probes, 1u);
  EXPECT_EQ(m.probes_slept, 1u);
  EXPECT_EQ(m.probes_apart, 0u);  // nobody inside a call
}

// A probe without a look (format.h kPeerNoLook) of `observer`'s own allocation of `own` bytes, held
// up or not, as `inside` others were in allocations of `lo`..`hi` bytes (none: inside 0).
Profile::PeerLook probe_alone(uint32_t observer, uint64_t own, unsigned inside, uint64_t lo, uint64_t hi, bool held) {
  Profile::PeerLook l{};
  l.observer = observer;
  l.wait.tick = 1000;
  l.wait.peer_serial = observer;
  l.wait.syscall = format::kPeerNoLook;
  format::ProbePeers pp = format::kNoProbePeers;
  pp.inside = inside;
  if (inside) pp.min_bucket = bucket_of(lo), pp.max_bucket = bucket_of(hi);
  // The tally's slow_ticks is 1000: a held-up probe's latency bin starts at 1024 ticks, another's at 48.
  l.wait.peer_start_tick = format::kPeerUntimed | format::peer_probe(static_cast<unsigned>(Op::Malloc), bucket_of(own),
                                                                     held ? bucket_of(1024) : bucket_of(48), false, pp);
  return l;
}

TEST(PeerWaits, ProbesWithoutALookCountAsProbesNotLooks) {
  const PeerWaitMeasure m = measure_beside_timed({probe_alone(1, 64, 0, 0, 0, true), probe_alone(2, 64, 0, 0, 0, false)}, 2);
  EXPECT_EQ(m.looks, 0u);
  EXPECT_EQ(m.outside_looks, 0u);
  EXPECT_EQ(m.probes, 2u);
  EXPECT_EQ(m.probes_alone, 2u);
  EXPECT_EQ(m.probes_unmet, 2u);
  EXPECT_EQ(m.probes_unmet_held, 1u);
}

TEST(PeerWaits, ProbesHeldUpBesideSizesApartBelowTheMedianAreCountedPerThread) {
  // The median request is 64 B (measure_beside_timed).
  std::vector<Profile::PeerLook> probes;
  // Unmet: 2 of 20 held up (at most 0.30 by the upper end of Wilson's interval).
  for (int i = 0; i < 20; ++i) probes.push_back(probe_alone(1 + i % 2, 64, 0, 0, 0, i < 2));
  // Thread 1: 8 of 10 held up, its 32 B beside 1 KiB (the smaller side below the median).
  for (int i = 0; i < 10; ++i) probes.push_back(probe_alone(1, 32, 1, 1024, 1024, i < 8));
  // Thread 2: 1 of 6 held up (0.17), its 1 KiB beside 16 B; a near size and one of no known
  // size besides.
  for (int i = 0; i < 6; ++i) probes.push_back(probe_alone(2, 1024, 1, 16, 16, i < 1));
  probes.push_back(probe_alone(2, 64, 1, 48, 48, true));
  Profile::PeerLook unknown = probe_alone(2, 1024, 1, 16, 16, true);
  unknown.wait.peer_start_tick |= format::kPeerProbeUnknownPeer;
  probes.push_back(unknown);
  // Thread 3: apart, but both sides above the median (a wide class of the larger sizes).
  for (int i = 0; i < 7; ++i) probes.push_back(probe_alone(3, 900, 2, 128, 128, true));
  // Thread 4: three below the median, too few to be judged alone.
  for (int i = 0; i < 3; ++i) probes.push_back(probe_alone(4, 16, 1, 256, 256, true));
  const PeerWaitMeasure m = measure_beside_timed(probes, 4);
  EXPECT_EQ(m.probes_unmet, 20u);
  EXPECT_EQ(m.probes_unmet_held, 2u);
  EXPECT_EQ(m.probes_apart, 26u);
  EXPECT_EQ(m.probes_apart_low, 19u);
  EXPECT_EQ(m.probes_apart_low_held, 12u);
  EXPECT_EQ(m.probes_apart_low_threads, 2u);       // threads 1 and 2 (5 such probes or more)
  EXPECT_EQ(m.probes_apart_low_held_threads, 1u);  // thread 1 only: 1 of 6 is within what unmet probes allow
  EXPECT_EQ(m.probes, 48u);
}

TEST(PeerWaits, WilsonBoundsHoldTheShare) {
  EXPECT_EQ(wilson_low(0, 0), 0);
  EXPECT_EQ(wilson_high(0, 0), 1);
  EXPECT_EQ(wilson_low(0, 10), 0);
  EXPECT_NEAR(wilson_high(10, 10), 1, 1e-12);
  // 8 of 10 at z = 2: 0.8 within 0.48-0.94.
  EXPECT_NEAR(wilson_low(8, 10), 0.4839, 1e-4);
  EXPECT_NEAR(wilson_high(8, 10), 0.9446, 1e-4);
}

TEST(PeerWaits, DistinctThreadsAmongDrawsMatchACount) {
  // Exact for one draw and for one thread; the mean and spread of a simulation otherwise.
  auto [one, one_sd] = distinct_draws({0.25, 0.25, 0.5}, 1);
  EXPECT_DOUBLE_EQ(one, 1);
  EXPECT_NEAR(one_sd, 0, 1e-9);
  auto [only, only_sd] = distinct_draws({1.0}, 30);
  EXPECT_DOUBLE_EQ(only, 1);
  EXPECT_NEAR(only_sd, 0, 1e-9);
  const std::vector<double> p = {0.4, 0.3, 0.1, 0.1, 0.05, 0.05};
  auto [mean, sd] = distinct_draws(p, 6);
  uint64_t state = 12345;
  double sum = 0, sum2 = 0;
  constexpr int kRuns = 200000;
  for (int r = 0; r < kRuns; ++r) {
    unsigned seen = 0;
    for (int d = 0; d < 6; ++d) {
      state = state * 6364136223846793005ull + 1442695040888963407ull;
      double u = static_cast<double>(state >> 11) / 9007199254740992.0, acc = 0;
      for (size_t t = 0; t < p.size(); ++t) {
        acc += p[t];
        if (u < acc || t + 1 == p.size()) {
          seen |= 1u << t;
          break;
        }
      }
    }
    const double k = __builtin_popcount(seen);
    sum += k;
    sum2 += k * k;
  }
  const double sim_mean = sum / kRuns, sim_sd = std::sqrt(sum2 / kRuns - sim_mean * sim_mean);
  EXPECT_NEAR(mean, sim_mean, 0.01);
  EXPECT_NEAR(sd, sim_sd, 0.01);
}

TEST(PeerWaits, ALookAtATimedCallJoinsItOnlyWhileTheCallLasted) {
  Profile::PeerLook in{};
  in.wait.tick = 5050;
  in.wait.peer_serial = 2;
  in.wait.peer_start_tick = 5000;
  in.wait.syscall = SYS_futex;
  in.wait.arg0 = kWord;
  Profile::PeerLook late = in;
  late.wait.tick = 5200;  // after the call's end: another call's wait
  PeerWaitTally tally;
  tally.expect({in, late}, true, 1000, 1000000);
  tally.add_call(2, timed(Op::Malloc, 100, 5000));
  const PeerWaitMeasure m = tally.measure();
  EXPECT_EQ(m.looks, 1u);
  EXPECT_EQ(m.outside_looks, 0u);
  EXPECT_EQ(m.futex_waits, 1u);
}

}  // namespace
}  // namespace allocscope

namespace allocscope {
namespace {

// A hold's call (format.h kPeerHold): `observer`'s own allocation of `own` bytes (or a free), made
// while others were held; released (or not) by a thread held in an `op` of `theirs` bytes, its
// call ending `after` ticks after that hold did.
Profile::PeerLook hold(uint32_t observer, Op own_op, uint64_t own, bool released, Op op, uint64_t theirs,
                       uint64_t after, bool preempted = false) {
  Profile::PeerLook l{};
  l.observer = observer;
  l.wait.tick = 1000;
  l.wait.peer_serial = released ? observer + 100 : observer;
  l.wait.syscall = format::kPeerHold;
  format::ProbePeers pp = format::kNoProbePeers;
  pp.inside = 1;
  l.wait.peer_start_tick = format::kPeerUntimed | format::peer_probe(static_cast<unsigned>(own_op), bucket_of(own),
                                                                     bucket_of(4096), false, pp);
  l.wait.arg0 = 40000;
  l.wait.arg1 = format::hold_outcome(format::HoldOutcome{released, after, static_cast<unsigned>(op),
                                                         op == Op::Free ? kBucketUnknown : bucket_of(theirs), 1,
                                                         preempted, released ? 1u : 0u});
  return l;
}

TEST(PeerWaits, HoldsReleasedBesideSizesApartBelowTheMedianAreCounted) {
  // The median request is 64 B (measure_beside_timed); the release window 1,000,000 ticks.
  const std::vector<Profile::PeerLook> holds{
      hold(1, Op::Malloc, 32, true, Op::Malloc, 1024, 500),      // apart, below the median: counted
      hold(2, Op::Malloc, 1024, true, Op::Calloc, 16, 90000),    // idem, the other way round
      hold(1, Op::Malloc, 64, true, Op::Malloc, 96, 500),        // neighbouring sizes: one class, maybe
      hold(1, Op::Malloc, 4096, true, Op::Malloc, 1024, 500),    // apart, both above the median
      hold(1, Op::Malloc, 32, true, Op::Free, 0, 500),           // held in a free: its size is not known
      hold(1, Op::Malloc, 32, true, Op::Malloc, 1024, 2000000),  // ended long after the hold
      hold(1, Op::Malloc, 32, true, Op::Malloc, 1024, 500, true),  // the observer lost its CPU
      hold(1, Op::Free, 32, true, Op::Malloc, 1024, 500),        // the observer's free: not an allocation
      hold(2, Op::Malloc, 32, false, Op::Malloc, 0, 0),          // went through
  };
  const PeerWaitMeasure m = measure_beside_timed(holds, 2);
  EXPECT_EQ(m.holds, 7u);  // not the preempted one, nor the free
  EXPECT_EQ(m.holds_released, 5u);  // not the one that ended long after the hold
  EXPECT_EQ(m.holds_apart_low_released, 2u);
  EXPECT_EQ(m.holds_apart_low_released_threads, 2u);
  // The free as the observer's call counts apart; what went past a held thread, of either kind: the
  // one that went through, and the one released long after its hold ended is no pass either.
  EXPECT_EQ(m.release_holds, 1u);
  EXPECT_EQ(m.holds_passed, 1u);
  // Holds are neither looks nor probes.
  EXPECT_EQ(m.looks, 0u);
  EXPECT_EQ(m.probes, 0u);
  EXPECT_EQ(m.probes_alone, 0u);
}

TEST(PeerWaits, ReleasesThatWentPastHeldThreadsArePasses) {
  // A consumer that only frees: its holds are releases, counted apart from the allocations' and
  // never as releases beside sizes apart; those that went through are passes.
  const std::vector<Profile::PeerLook> holds{
      hold(1, Op::Free, 0, false, Op::Malloc, 0, 0),
      hold(1, Op::Free, 0, false, Op::Malloc, 0, 0),
      hold(1, Op::Free, 0, true, Op::Malloc, 1024, 500),         // waited for the held allocation
      hold(1, Op::Free, 0, false, Op::Malloc, 0, 0, true),       // lost its CPU: not counted
  };
  const PeerWaitMeasure m = measure_beside_timed(holds, 2);
  EXPECT_EQ(m.holds, 0u);
  EXPECT_EQ(m.holds_released, 0u);
  EXPECT_EQ(m.release_holds, 3u);
  EXPECT_EQ(m.holds_passed, 2u);
}

}  // namespace
}  // namespace allocscope
