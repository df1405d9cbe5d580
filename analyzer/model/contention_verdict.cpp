// contention_verdict.cpp — the measure of exclusion and the verdict drawn from it (contention_verdict.h).
#include "model/contention_verdict.h"

#include <algorithm>
#include <cmath>
#include <optional>

namespace allocscope {
namespace {

// Thresholds of docs/analysis.md, "Contention verdict".
constexpr double kTurnsBelow = 0.9;          // Q's upper bound (2σ) below this: calls take turns, …
constexpr double kDeepTurnsBelow = 0.5;      // … conclusively below this; between, Q itself below this, …
constexpr double kShallowTurnsBelow = 0.7;   // … and met calls must wait too:
constexpr double kCorroborateAbove = 0.52;   // … S (or S over allocating or running neighbours) above this
constexpr double kExcludedAbove = 0.55;      // S's lower bound (2σ) above this: met calls are slower
constexpr double kParallelBelow = 0.52;      // S's upper bound (3σ) below this: they do not, …
constexpr double kParallelAwakeBelow = 0.54; // … or its upper bound (2σ) below this, where no slow call slept:
constexpr double kAwakeSleptShare = 0.01;    // at most this share of the slow calls whose switches are known, …
constexpr uint64_t kMinAwakeSlow = 100;      // … of at least this many: a lock whose waiters sleep in 5 % of
                                             // the slow calls (kSleptShare) shows none in 100 by a 0.6 % chance
constexpr double kPreciseBelow = 0.535;      // … or, where no slow call slept, its upper bound (2σ) below this
constexpr double kPreciseHalfWidth = 0.015;  // … measured to within this (2σ): slower by a hair, no more
constexpr double kByAllocatingBelow = 0.55;  // … and the same over allocating or running neighbours, if measured, below this
constexpr double kDisturbedBelow = 0.45;     // S's upper bound (2σ) below this: the reference is disturbed
constexpr double kClassExcluded = 0.6;       // a class is clearly excluded: S_c - 3σ above this
constexpr double kClassParallel = 0.53;      // … clearly not: S_c + 3σ below this
constexpr double kPartialMinExcluded = 0.10; // … or at least this share in excluded ones
constexpr uint64_t kMinReference = 10;       // alone calls a class needs to stand for its met calls
constexpr uint64_t kMinClassCalls = 20;      // met and alone calls a class needs to be judged alone
constexpr uint64_t kMinBlockedSamples = 2;   // sampled calls that slept, …
constexpr double kSleepingShare = 0.05;      // … and their share, before "none" is doubted
constexpr uint64_t kMinMet = 50;             // met calls for a measure
constexpr uint64_t kMinSlept = 5;            // slow calls that slept inside the allocator, …
constexpr double kSleptShare = 0.05;         // … and their share of the slow calls whose switches are known
constexpr uint64_t kMinSleptAtAll = 2;       // slow calls that slept: too many to say that no thread waited
constexpr uint64_t kMinAloneSlow = 20;       // slow calls made alone that can show they sleep as often as met ones, …
constexpr double kAloneSleepShare = 0.5;     // … at this share of the met ones' rate (alone_sleep_as_often)
constexpr uint64_t kMinApartSleeps = 10;     // sleep pairs of sizes twice apart before they say one lock, …
constexpr double kApartOfMet = 0.5;          // … as often, within 2σ, as this share of met_apart_share, …
constexpr double kJoinedShare = 0.9;         // … joining sizes that carry at least this share of the calls, …
// … and no busy thread's allocations clearly awake (sleep_pairs.h kAwakeExpected), kMinSlept of them asleep
constexpr uint64_t kMinWordWaits = 10;       // calls seen asleep in a futex wait before their words say anything, …
constexpr double kOneWordShare = 0.9;        // … this share of them on one word, …
constexpr uint64_t kMinProbes = 5;           // … and probes (peer_waits.h) that show ordinary allocations take it:
constexpr double kHeldAfterSleeper = 0.5;    // … the next allocation held up after a sleeper was seen (lower bound), or
constexpr double kProbesSlept = 0.05;        // … allocations asleep inside the allocator (lower bound above this)
constexpr uint64_t kMinCrowdedWaits = 50;    // … or this many sleepers seen by the looks outside the windows, …
constexpr double kCrowdedShare = 0.2;        // … in at least this share of them (lower bound), with the next
constexpr double kCrowdedHeldAbove = 0.02;   // … allocation after a sleeper held up at least this often (lower bound)
constexpr uint32_t kWordThreadsPerCpu = 8;   // with more busy threads per CPU, only the next allocation held up corroborates
constexpr double kWordThreadsSd = 2;         // … from as many threads as one lock for all would leave, within this many σ (and two)
constexpr double kWordThreadsShare = 0.9;    // … or this share of them
constexpr uint64_t kMinUnmetProbes = 10;     // probes that met nobody, to say how often a call is held up alone
constexpr uint64_t kMinApartProbes = 20;     // probes beside sizes twice apart, to compare with them
constexpr uint64_t kMinAcrossMedian = 3;     // probes asleep beside sizes twice apart: across the median request
constexpr double kMapSyscallShare = 0.1;     // looks at threads in calls on the memory map: below this share for the probes' sleeps
constexpr uint32_t kArenasPerCpu = 4;        // threads per CPU below which allocators give each thread its own arena
constexpr uint64_t kMinHoldReleases = 3;      // hold calls released beside sizes apart that make one lock (by_holds), …
constexpr uint32_t kMinHoldThreads = 3;       // … joining this many threads and more than half the busy ones
constexpr uint64_t kMinPlacesSleepers = 20;  // threads seen asleep on locks inside calls, …
constexpr double kPlacesSleepShare = 0.05;     // … in this share of the looks (lower bound): "none" becomes "partial"
constexpr uint64_t kMinTurnSleepers = 3;     // threads seen asleep in futex waits inside calls: a sleeping lock, unless
constexpr uint64_t kMinPassingHolds = 20;    // fewer; then holds that clearly seldom waited for a held thread (Wilson's upper
constexpr double kLockReleasesAbove = 0.2;   // bound below this), and no slow calls asleep inside (sleeps_inside): turns
                                             // that are no lock; with fewer holds, fewer than
constexpr uint64_t kMinLockReleases = 2;     // … this many released: no lock either
constexpr uint64_t kMinAllocatorLockWaits = 10;  // waits on the allocator's own locks, …
constexpr double kAllocatorLockShare = 0.01;     // … and their share of the threads' time inside the allocator
constexpr double kSleepLockParallelBelow = 0.25;  // "sleeping lock" evidence: fewer met calls than this in clearly parallel classes

double normal_cdf(double z) { return 0.5 * std::erfc(-z / std::sqrt(2.0)); }

// The binomial variance of a share measured over n trials, never below that of one trial in n
// (a share of 0 or 1 is not known exactly).
double share_variance(double share, double n) { return std::max(share * (1 - share), 1.0 / n) / n; }

// A tenth or more of the looks found threads in calls on the memory map (or there were no looks):
// probes may have slept on the kernel's map lock, not on any lock of the allocator's.
bool on_memory_map(const PeerWaitMeasure& p) {
  return static_cast<double>(p.map_syscalls) >= kMapSyscallShare * static_cast<double>(p.looks);
}

// Calls made alone usually last as long as a hold or longer: the allocator's calls are system calls
// of their own (mmap and munmap of large blocks, the pages they fault in), whose waits and sleeps
// are the kernel's — its lock of the memory map — and which outlast a hold without being kept
// waiting.  The looks cannot show it: the kernel names a thread's system call only while it sleeps
// in it (and mallocng, which maps and unmaps its groups, has most of its looks that find a system
// call find a map call, 6 of 11 and 12 of 15 at 2 threads, while its holds say one lock).
// Measured: glibc with every block mmapped (glibc.malloc.mmap_threshold=131072), 2 threads of
// 200 KB-1 MB blocks, its calls alone 53 µs at the median, 422 of 422 looks at a thread running,
// 3-4 of 87-91 holds released and 15 of 60 probes asleep beside sizes twice apart: called
// global_lock; the 29 lock runs of a 0.6 s matrix the holds and probes decide made their calls alone
// in 0.02-1.74 µs at the median (musl's mixed sizes at 4 threads 1.74 µs; at 2 threads 0.45 µs,
// with 1 % of them above 360 µs).  The line was once the hold's length (30 µs); the same glibc with
// 200 KB-1 MB blocks made its calls alone in 24-27 µs at the median in other runs of 2 threads, and
// one of them, recorded while other programs loaded the machine, was called global_lock by 6 of 53
// probes asleep beside sizes twice apart.  A call that goes into the kernel on its own takes
// microseconds; 10 µs at the median is far above any lock run of the matrices (all below 3 µs).
constexpr double kSyscallAloneNs = 10000;
bool long_alone(const ContentionInputs& in) { return in.alone_median_ns >= kSyscallAloneNs; }

// U of one class: met calls slower than alone calls, ties half, from the two histograms (calls
// in one bin count as equally long: exact below 1024 ticks, 3 % wide above).
double mann_whitney_u(const FineHistogram& met, const FineHistogram& alone) {
  const std::vector<uint64_t>& m = met.counts();
  const std::vector<uint64_t>& a = alone.counts();
  double u = 0, below = 0;
  for (size_t i = 0; i < m.size(); ++i) {
    const double ai = i < a.size() ? static_cast<double>(a[i]) : 0.0;
    if (m[i]) u += static_cast<double>(m[i]) * (below + 0.5 * ai);
    below += ai;
  }
  return u;
}

// The variance of U under no difference (no tie correction: ties only narrow it).
double u_variance(double n1, double n2) { return n1 * n2 * (n1 + n2 + 1) / 12; }

struct Pooled {
  double u = 0, pairs = 0, variance = 0;
  uint64_t met = 0;
  void add(const FineHistogram& met_calls, const FineHistogram& alone) {
    if (met_calls.empty()) return;
    const double n1 = static_cast<double>(met_calls.total()), n2 = static_cast<double>(alone.total());
    u += mann_whitney_u(met_calls, alone);
    pairs += n1 * n2;
    variance += u_variance(n1, n2);
    met += met_calls.total();
  }
  SlowerMeasure measure() const {
    SlowerMeasure s;
    s.met = met;
    if (met >= kMinMet && pairs > 0) {
      s.value = u / pairs;
      s.se = std::sqrt(variance) / pairs;
    }
    return s;
  }
};

}  // namespace

void ExclusionTally::add(CallGroup group, size_t cls, uint32_t inside, uint32_t inside_allocating,
                         uint32_t inside_running, uint32_t inside_near_size, uint64_t duration) {
  std::vector<ExclusionCell>& cells = cells_[static_cast<size_t>(group)];
  if (cls >= cells.size()) cells.resize(cls + 1);
  ExclusionCell& c = cells[cls];
  if (inside == 0) {
    c.alone.add(duration);
    return;
  }
  c.met.add(duration);
  if (inside_allocating > 0) c.met_allocating.add(duration);
  if (inside_running > 0) c.met_running.add(duration);
  if (inside_near_size == 0) c.met_apart.add(duration);
}

ExclusionMeasure measure_exclusion(const std::vector<ExclusionCell>& cells) {
  ExclusionMeasure m;
  Pooled all, allocating, running, apart;
  uint64_t contended = 0, uncontended = 0;
  for (const ExclusionCell& c : cells) {
    if (c.alone.total() < kMinReference || c.met.empty()) continue;
    m.met += c.met.total();
    m.alone += c.alone.total();
    all.add(c.met, c.alone);
    allocating.add(c.met_allocating, c.alone);
    running.add(c.met_running, c.alone);
    apart.add(c.met_apart, c.alone);
    if (c.met.total() >= kMinClassCalls && c.alone.total() >= kMinClassCalls) {
      ++m.classes;
      const double n1 = static_cast<double>(c.met.total()), n2 = static_cast<double>(c.alone.total());
      const double s = mann_whitney_u(c.met, c.alone) / (n1 * n2);
      const double se = std::sqrt(u_variance(n1, n2)) / (n1 * n2);
      if (s - 3 * se > kClassExcluded) contended += c.met.total();
      if (s + 3 * se < kClassParallel) uncontended += c.met.total();
    }
  }
  if (m.met > 0) {
    m.contended_share = static_cast<double>(contended) / static_cast<double>(m.met);
    m.uncontended_share = static_cast<double>(uncontended) / static_cast<double>(m.met);
  }
  m.slower = all.measure();
  m.by_allocating = allocating.measure();
  m.by_running = running.measure();
  m.apart = apart.measure();
  return m;
}

const char* contention_kind_name(ContentionKind kind) {
  switch (kind) {
    case ContentionKind::SingleThread: return "single_thread";
    case ContentionKind::None: return "none";
    case ContentionKind::Partial: return "partial";
    case ContentionKind::GlobalLock: return "global_lock";
    case ContentionKind::Unsure: return "unsure";
  }
  return "unsure";
}

namespace {

// One rule's verdict; rules run in order and the first that decides wins (judge_contention).
struct Decision {
  ContentionKind kind;
  ContentionReason reason;
  double confidence;
  ContentionReason run_reason = ContentionReason::Ambiguous;  // LockTestOverrules: what the run alone said
};
using Rule = std::optional<Decision>;

// At least `fewest` of `slept`, and kSleptShare of `switched` (the slow calls whose switches are known).
bool sleep_often(uint64_t slept, uint64_t switched, uint64_t fewest = kMinSlept) {
  return slept >= fewest && static_cast<double>(slept) >= kSleptShare * static_cast<double>(switched);
}

// The allocator's own locks were contended (allocator_locks.h: pthread lock calls, futex waits):
// kMinAllocatorLockWaits waits or more, together at least kAllocatorLockShare of the threads' time
// inside the allocator.  Each is a call that found a lock of the allocator's held by another thread
// and waited for it (or slept on its futex until woken),
// counted in every call, not sampled: a lock that few calls take, contended only when its holder
// loses its CPU, shows here when the timing windows see none of it (docs/analysis.md: a refill
// lock beside busy loops, 89-1,179 waits a run, none of them in a window).
bool allocator_locks_waited(const ContentionInputs& in) {
  const AllocatorLockWaits& l = in.allocator_locks;
  return l.waits >= kMinAllocatorLockWaits && in.allocator_lock_share >= kAllocatorLockShare;
}

// Slow calls sleep inside the allocator: threads wait there for something — another thread, or
// the kernel.
bool sleeps_inside(const ContentionInputs& in) { return sleep_often(in.slow_slept, in.slow_switched); }

// Slow calls slept inside the allocator more than by chance: two or more, and kSleptShare of them
// (one sleep among many is the kernel's, a page fault waiting on the memory map's lock). Enough to
// keep "no thread waited" from being said; sleeps_inside() is what says that threads did.
bool sleep_at_all(const ContentionInputs& in) { return sleep_often(in.slow_slept, in.slow_switched, kMinSleptAtAll); }

// Calls made alone (nobody else inside at their start: nobody to wait for) slept about as often as
// the slow calls that met another thread (the lower end of Wilson's interval at least
// kAloneSleepShare of their share, over kMinAloneSlow slow calls made alone or more): whatever puts
// them to sleep — a system call of the allocator's own that blocks, a sched_yield or usleep in every
// call — does so without another thread.  Measured: glibc behind usleep(0) in every call, under the
// mixed workload at 8 and 16 threads, slept in 99-100 % of its slow calls and was called
// `global_lock` by the sleep pairs (22 of 28 and 19 of 33 pairs of sizes twice apart).
bool alone_sleep_as_often(const ContentionInputs& in) {
  if (in.slow_alone_switched < kMinAloneSlow || in.slow_switched <= in.slow_alone_switched) return false;
  const double met_rate = static_cast<double>(in.slow_slept - in.slow_alone_slept) /
                          static_cast<double>(in.slow_switched - in.slow_alone_switched);
  return wilson_low(in.slow_alone_slept, in.slow_alone_switched) >= kAloneSleepShare * met_rate;
}

// Slow calls sleep inside the allocator, waiting for another thread: calls made alone do not
// sleep as often.
bool sleeps_for_others(const ContentionInputs& in) { return sleeps_inside(in) && !alone_sleep_as_often(in); }

// The same of the allocating calls: a lock that only frees take puts no allocation to sleep.
bool allocations_sleep_for_others(const ContentionInputs& in) {
  return sleep_often(in.slow_allocating_slept, in.slow_allocating_switched) && !alone_sleep_as_often(in);
}

// Any of S, S over allocating neighbours and S over running ones has its lower bound above `above`.
bool any_slower_than(const ExclusionMeasure& a, double above) {
  return (a.slower.value && a.slower.low() > above) || (a.by_allocating.value && a.by_allocating.low() > above) ||
         (a.by_running.value && a.by_running.low() > above);
}

// Calls that slept behind a call of a size twice apart, the only other thread inside: the lock
// they waited for serves both sizes.  Joined, such pairs span most sizes, and allocations slept
// too, in no thread clearly less than its frees: one lock serves them all (sleep_pairs.h).  A lock
// per class never pairs sizes twice apart; a lock that one thread's frees share with another's
// allocations leaves the freeing thread's allocations awake while its frees sleep.
Rule by_sleep_pairs(const ContentionInputs& in) {
  const SleepPairsMeasure& p = in.sleep_pairs;
  const double apart_share = p.pairs ? static_cast<double>(p.apart) / static_cast<double>(p.pairs) : 0;
  const double apart_low = apart_share - 2 * std::sqrt(apart_share * (1 - apart_share) / std::max<double>(1, p.pairs));
  if (!sleeps_for_others(in) || p.apart < kMinApartSleeps || apart_low < kApartOfMet * p.met_apart_share ||
      p.joined_share < kJoinedShare || !p.threads_joined || p.awake_threads > 0 || p.slept_allocating < kMinSlept) {
    return std::nullopt;
  }
  const double by_pairs = static_cast<double>(p.apart - kMinApartSleeps) / static_cast<double>(kMinApartSleeps);
  const double by_share = (p.joined_share - kJoinedShare) / (1 - kJoinedShare);
  return Decision{ContentionKind::GlobalLock, ContentionReason::SleepsAcrossSizes,
                  0.5 + 0.5 * std::min(1.0, std::min(by_pairs, by_share))};
}

// Calls seen asleep inside the allocator waited on one futex word (peer_waits.h): nearly all of
// them, in allocating calls of as many threads as sleepers drawn from every thread's allocations
// would come from (within two standard deviations; two at least), of sizes twice apart that reach
// across the median request.  Each of them is a call seen asleep inside the allocator: no count of
// slow calls that slept is needed besides (the looks outside the windows see far more sleepers
// than the windows' few slow calls).  One word that every thread and size class sleeps on is one
// lock.  A lock per size class or per arena spreads its sleepers over several words; an arena that
// two threads of many share, or a lock on a slow path that some threads take (measured: jemalloc
// under mixed sizes, 8 sleepers of 3 threads of 8; scudo's producer/consumer, 10 of 4 of 16),
// gathers the sleepers of those threads only; a lock for one wide class (every size of 2 KiB and
// up) gathers large sizes only.  And a lock that every allocation takes makes allocations that meet
// another thread inside wait: where they were measured no slower (S's upper bound below
// kCorroborateAbove), the word is a lock on a path that few calls take — measured, scudo's stress
// runs at 8 threads: 10 sleepers of 5 threads on one word across sizes 64-768 B (its refills and
// drains share one lock), while met allocations read S 0.50 over 2,900 calls.  The probes say
// whether ordinary allocations take the lock: right after a thread was seen asleep on it, the
// looking thread's own next allocation was held up (slept, or took 2 µs or more) — a congested
// lock, as musl's; or ordinary allocations sleep inside the allocator often (lower bound above
// 5 %) — a lock that every call takes, held briefly (a global mutex around a fast allocator).
// Measured at the default sampling (docs/analysis.md): musl's and mallocng's next allocations
// were held up 0.83-1.00 of the times after a sleeper, scudo's, jemalloc's and tcmalloc's 0-0.20
// (their ordinary allocations slept 0-0.9 % of the probes under the stress and mixed workloads),
// the global mutex's 0.03-0.25 with 13-38 % of its allocations asleep under mixed sizes.
Rule by_shared_word(const ContentionInputs& in) {
  const PeerWaitMeasure& p = in.peers;
  const SlowerMeasure& s = in.allocating.slower;
  if (s.value && s.high() < kCorroborateAbove) return std::nullopt;
  const bool holds_up = p.probes_after_sleeper >= kMinProbes &&
                        wilson_low(p.probes_after_sleeper_held, p.probes_after_sleeper) >= kHeldAfterSleeper;
  // Allocations that sleep often say so only where calls do not spend their time on the memory map:
  // there they sleep on the kernel's map lock (scudo's stress at 16 threads, growing its regions:
  // 43 of 254 probes asleep, 172 of 415 looks in mmap or mprotect).
  const bool sleep_often = !on_memory_map(p) && p.probes >= kMinProbes && wilson_low(p.probes_slept, p.probes) > kProbesSlept;
  // Or allocations that met another thread inside were clearly slower (S's lower bound above
  // kExcludedAbove): a lock on a path that few calls take leaves the met allocations as fast as
  // the others (scudo's batch-class lock: S 0.50-0.52 in the runs where it gathered sleepers).
  const bool met_wait = any_slower_than(in.allocating, kExcludedAbove);
  // Or the threads inside allocator calls were found asleep on that word in a fifth or more of the
  // looks outside the windows (which look at a thread inside any call, chosen at random: the lower
  // end of Wilson's interval), kMinCrowdedWaits times or more: a lock that most of the calls in
  // progress queue for.  A global mutex around a fast allocator (glibc's) hands its lock over
  // before the sleepers wake, so the next allocation seldom waits (12-28 of 73-226 after a sleeper)
  // and its met calls are too few to weigh under mixed sizes beside a CPU hog, while 29-82 % of its
  // looks found a sleeper on it (90-765 of them); a lock on a path few calls take gathers a few:
  // tcmalloc's page heap under blocks of 0.3-2 MiB at 8 and 16 threads, 15 and 18 sleepers in 413
  // and 415 looks; scudo's batch-class lock, which every refill and drain takes, 8 % of the looks
  // under the stress harness at 16 threads (docs/analysis.md).
  // And only where met allocations were too few to measure or clearly slower (S's lower bound above
  // kCorroborateAbove): a CPU hog crowds a lock that only some calls take as well, its holders
  // preempted while the others pile up behind them — a refill lock behind thread caches
  // (libcache_alloc.so, one mutex that a refill or drain of 32 blocks takes) under the stress harness
  // at 8 threads beside two busy loops gathered 172-432 sleepers in 36-51 % of the looks in 5 runs of
  // 6, while its met allocations read S 0.50-0.55 with lower bounds 0.47-0.50 (148-2,003 met calls)
  // and the next allocation after a sleeper was held up 0-2 times of 63-151; the global locks that
  // this decides read S 0.63-0.91 over hundreds of met calls where it was measured.  Nor where the
  // next allocation after a sleeper was held up clearly less often than one in fifty (Wilson's lower
  // bound): the refill lock's, 0-2 times of 63-151, and in a run whose met allocations were too few
  // to measure, 0 of 106; the global locks' 12-28 of 73-226 at the least (lower bounds 0.03 and up).
  const bool crowded = in.cpus > 0 && p.top_waits_outside >= kMinCrowdedWaits &&
                       wilson_low(p.top_waits_outside, p.outside_looks) >= kCrowdedShare &&
                       (!s.value || s.low() > kCorroborateAbove) &&
                       wilson_low(p.probes_after_sleeper_held, p.probes_after_sleeper) >= kCrowdedHeldAbove;
  // With many threads per CPU, only the next allocation held up says it.  There a lock on a path
  // that every size class takes now and then gathers the threads as one lock for all does: scudo's
  // batch-class lock, which its refills and drains take, held 362 of 370 sleepers seen, of 113 of
  // the stress harness's 128 threads on 2 CPUs, in 20 % of the looks, and its met allocations ran
  // slower (0.69, 66 calls) — while the next allocation after a sleeper ran on, 143 times of 143.
  // musl's and mallocng's at 32 and 64 threads: held up 149-225 times of 149-226, in 10-13 % of
  // the looks (docs/analysis.md).
  const bool crammed = in.cpus > 0 && in.busy_threads > kWordThreadsPerCpu * in.cpus;
  if (!holds_up && (crammed || (!sleep_often && !met_wait && !crowded))) return std::nullopt;
  // As many threads as one lock for all would leave, within kWordThreadsSd σ — or nine in ten of
  // them: with many sleepers the spread of that number is a fraction of one thread, and one thread
  // of 64 that seldom slept (musl's stress harness, 63 of 63.9 ± 0.3) is not a lock that only some
  // threads take.
  const double expected = p.top_threads_expected;
  const double need_threads =
      std::max(2.0, std::ceil(std::min(expected - kWordThreadsSd * p.top_threads_sd, kWordThreadsShare * expected)));
  if (p.futex_waits < kMinWordWaits || p.top_share() < kOneWordShare ||
      static_cast<double>(p.top_threads) < need_threads || p.top_allocating_threads < 2 || !p.top_sizes_apart ||
      !p.top_spans_median)
    return std::nullopt;
  // Confidence: how far the share of the top word lies above the threshold, in binomial errors.
  const double share = p.top_share(), n = static_cast<double>(p.futex_waits);
  const double se = std::sqrt(share_variance(share, n));
  return Decision{ContentionKind::GlobalLock, ContentionReason::SleepersOnOneWord,
                  normal_cdf((share - kOneWordShare) / se)};
}

// Probes (peer_waits.h) of two or more threads slept inside the allocator while every other
// thread inside a call was in an allocation of a size at least twice apart, some of them with
// the sizes on either side of the median request: a lock per size class cannot put such a call
// to sleep (measured: the per-class lock, whose one class for 2 KiB and up joins sizes twice
// apart, slept in 2-3 of 45-67 such probes under mixed sizes, all of them above the median),
// nor can an allocator without locks; one lock for every
// call can, and does as often as it is contended (measured at two threads, where looks seldom find
// a sleeper: docs/analysis.md).  Unless the allocator's calls spend their time on the memory map
// (mmap and munmap of large blocks): there the kernel's own map lock puts calls to sleep, whatever
// their size, without any lock of the allocator's.  And only with no more busy threads than CPUs:
// allocators give threads arenas in proportion to the CPUs (glibc 8 per CPU, jemalloc 4), and
// threads that share an arena sleep behind each other's calls of any size — measured, glibc's
// mixed sizes at 16 threads beside a CPU hog: 5 of 42 such probes asleep, in 4 threads.
Rule by_probe_sleeps(const ContentionInputs& in) {
  const PeerWaitMeasure& p = in.peers;
  if (in.cpus == 0 || in.busy_threads > in.cpus) return std::nullopt;
  if (p.probes_apart_slept < kMinProbes || p.probes_apart_slept_threads < 2 ||
      p.probes_apart_slept_across_median < kMinAcrossMedian || wilson_low(p.probes_apart_slept, p.probes_apart) <= kProbesSlept)
    return std::nullopt;
  if (on_memory_map(p) || long_alone(in)) return std::nullopt;
  const double share = p.apart_slept_share(), n = static_cast<double>(p.probes_apart);
  const double se = std::sqrt(share_variance(share, n));
  return Decision{ContentionKind::GlobalLock, ContentionReason::ProbesSleepApart, normal_cdf((share - kProbesSlept) / se)};
}

// Probes held up — asleep, or 2 µs or more — while every other thread inside a call was in an
// allocation of a size at least twice apart, one of the two sides below the median request,
// clearly more often (Wilson's intervals apart) than probes made while nobody else was inside
// (peer_waits.h).  A lock per size class adds nothing beside other sizes, nor does an allocator
// without locks; one lock for every call holds such probes up.  This once said `global_lock` on
// its own (in every observing thread with enough such probes); it fell to chance twice in one
// matrix beside a CPU hog (scudo's stress and mixed sizes at two threads: 3 of 66 held up against
// 3 of 661, 12 of 198 against 13 of 671), and the holds (by_holds) now give that evidence
// directly.  It still forbids "none" (by_parallel_calls).
bool held_beside_others(const PeerWaitMeasure& p) {
  return p.probes_unmet >= kMinUnmetProbes && p.probes_apart_low >= kMinApartProbes &&
         wilson_low(p.probes_apart_low_held, p.probes_apart_low) > wilson_high(p.probes_unmet_held, p.probes_unmet);
}

// Holds (shim/peer_waits.h): the threads inside allocator calls were held where they were for
// 30 µs, and another thread's allocation, timed meanwhile, lasted until one of them — held inside
// an allocation of a size at least twice apart, one of the two below the median request — was let
// go, and ended within kHoldReleaseNs of it, in kMinHoldReleases holds or more, the observer
// keeping its CPU throughout.  A thread held inside a call holds whatever lock it held: a lock
// that every call takes stops every other allocation until the hold ends, a lock per size class
// only those of its class (and the side below the median keeps out a lock for one wide class of
// the large sizes, as above); an allocator without locks lets the observer through.  Measured on
// the matrix's allocators (docs/analysis.md): no release beside sizes apart for glibc, jemalloc,
// mimalloc, scudo, tcmalloc or the per-class lock.  Not with more busy threads than kArenasPerCpu
// per CPU, where allocators make threads share an arena and its lock.  And the releases must join
// three threads or more (every busy thread, with two): one lock for all is let go by whichever
// thread held it, while locks that pairs of threads share — arenas shared by two threads each —
// only ever release a thread's partner (measured: four mutexes for eight threads, thread k on
// lock k % 4, under mixed sizes: 7 releases, joining two threads, were called `global_lock`).
// And more than half the busy threads: two kinds of shared locks chain pairs into larger sets
// (the same mutexes under producer/consumer frees, where a consumer also takes its producer's
// glibc arena: 3 releases joined four threads of eight).  And not where calls made alone last as
// long as a hold (long_alone): an allocation that outlasts a hold on its own work was not kept
// waiting, and a held thread is held in user space, never inside the kernel holding its map lock.
Rule by_holds(const ContentionInputs& in) {
  const PeerWaitMeasure& p = in.peers;
  if (in.cpus == 0 || in.busy_threads > kArenasPerCpu * in.cpus || long_alone(in) ||
      p.holds_apart_low_released < kMinHoldReleases ||
      p.holds_apart_low_joined < std::min(kMinHoldThreads, in.busy_threads) || 2 * p.holds_apart_low_joined <= in.busy_threads)
    return std::nullopt;
  const double n = static_cast<double>(p.holds), released = static_cast<double>(p.holds_apart_low_released) / n;
  return Decision{ContentionKind::GlobalLock, ContentionReason::HoldsReleasedApart,
                  normal_cdf(released / std::sqrt(share_variance(released, n)))};
}

// Turns that no lock makes: calls of different threads also take turns at a word that every call
// updates (a statistics counter, the head of a shared free list changed atomically) — each call
// waits for the cache line, not for another call to end.  Holds tell them apart: one lock for every
// call, held by a thread that is held inside a call, keeps the allocation made meanwhile waiting
// until the hold ends; a word updated atomically never does — though a lock of glibc's own, an
// arena two threads share, now and then may, and so may an allocation slow for reasons of its own
// (the heap grown, its pages faulted in) that happens to last until a hold ends.  So where the shim
// held threads and no sleeping lock shows (fewer than kMinTurnSleepers threads seen asleep in futex
// waits inside calls, no slow timed calls asleep inside: a word updated atomically puts nobody to
// sleep, and a sleeping lock's held waiters release few holds), turns say one lock only with two holds
// released or more, not clearly less often than one in five.  Measured (docs/analysis.md): glibc
// behind one shared counter (libcounter_alloc.so) under the stress harness at 2-16 threads read Q
// 0.14-0.53 with 0-1 of 10-59 holds released and no thread seen asleep inside; the global spin lock
// under the stress harness released 2-38 of 10-55; the global mutex and rwlock 2-40 of 16-75, and at
// 8 and 16 threads, where their waiters sleep, 0-4 of 16-73 with 4-263 threads seen asleep.  A lock
// that few holds catch (the spin lock under a program that works between its calls: 0-3 of 1-7)
// is then `unsure`: met calls slower by as much (S 0.59-0.65 at the lower bound) were not enough
// to tell, as the counter's read as high once in a short run while the test suite ran beside it.
// A sleeping lock shows: threads seen asleep in futex waits inside allocating calls, or slow
// allocations that slept for another thread.
bool sleeping_lock_shows(const ContentionInputs& in) {
  return in.peers.futex_waits_allocating >= kMinTurnSleepers || allocations_sleep_for_others(in);
}

bool turns_without_holding(const ContentionInputs& in) {
  const PeerWaitMeasure& p = in.peers;
  if (!in.holds_recorded || sleeping_lock_shows(in)) return false;
  return p.holds_released < kMinLockReleases ||
         (p.holds >= kMinPassingHolds && wilson_high(p.holds_released, p.holds) < kLockReleasesAbove);
}

// Calls take turns: the ends of different threads' calls keep apart.  Nothing but mutual
// exclusion does that — of whole calls, or of a word they all update (turns_without_holding) —;
// whether it spans size classes tells one lock from a lock per class.  A
// shallow hole needs Q itself below kShallowTurnsBelow and met calls that wait as well:
// measured, tcmalloc (a lock-free allocator with locks of its own) read 0.78 (bounds 0.76-0.81)
// at 8 threads beside a CPU hog and 0.85 with met calls slower (0.61) under the mixed workload
// at 2 threads (and 0.79 under cross-thread frees), while the global locks' shallow holes that
// decide a verdict read 0.37-0.63 (docs/analysis.md, the 2 s matrices).
Rule by_turns(const ContentionInputs& in) {
  const CoincidenceMeasure& q = in.ends;
  const bool shallow = q.value && q.high() >= kDeepTurnsBelow;
  if (!q.value || q.high() >= kTurnsBelow ||
      (shallow && (*q.value >= kShallowTurnsBelow || !any_slower_than(in.allocating, kCorroborateAbove))))
    return std::nullopt;
  const double confidence = normal_cdf((kTurnsBelow - *q.value) / std::max(1e-9, q.se));
  const CoincidenceMeasure& x = in.ends_across;
  if (x.value && x.low() > kTurnsBelow) return Decision{ContentionKind::Partial, ContentionReason::TurnsWithinClasses, confidence};
  // Too few ends of sizes twice apart to tell: a lock per class makes the calls of one class take
  // turns as well (measured: the per-class lock's producer/consumer at 4 threads beside a CPU
  // hog read Q 0.54, bounds 0.30-0.78 over 21 windows, with no pair of sizes apart to measure).
  if (!x.value || x.high() >= kTurnsBelow) return Decision{ContentionKind::Unsure, ContentionReason::MixedClasses, 0};
  if (turns_without_holding(in)) return Decision{ContentionKind::Unsure, ContentionReason::TurnsWithoutHolding, 0};
  // A run that made no holds (every call timed — --sample 1, a trace — leaves no time outside the
  // windows for them; or a shim from before them) has turns alone, unless a sleeping lock shows.
  // Measured, every call timed on a machine that other programs loaded: glibc, jemalloc, mimalloc
  // and tcmalloc under programs of linked lists and of calloc bursts at 2 and 4 threads read Q
  // 0.40-0.62 (12-61 windows), met calls no slower or only some, nobody asleep, and were called
  // `global_lock` in 7 of about 100 such runs.
  if (!in.holds_recorded && !sleeping_lock_shows(in))
    return Decision{ContentionKind::Unsure, ContentionReason::TurnsUnheld, 0};
  return Decision{ContentionKind::GlobalLock, ContentionReason::TakeTurns, confidence};
}

// Met calls slower while ends coincide freely: something slows a call when another thread is
// inside — a lock handed over before its holder's call ends (a sleeping lock whose holder wakes
// the next thread after releasing it), or interference that is no lock at all (shared caches,
// page faults, the kernel).  Both have been measured; the run cannot tell them apart.
// Slow calls that sleep inside the allocator tell a lock from interference: interference slows
// a call on its CPU, or takes the CPU away (an involuntary switch); a thread that sleeps inside
// an allocator call waits for something another thread holds.  Whether that is one lock for
// all classes, met calls' durations cannot tell (the sleep pairs above can, when they see
// enough): measured, a lock per size class (libclasslock_alloc.so) under the stress harness,
// whose threads sweep their sizes in step, read met calls slower by as much beside sizes twice
// apart (0.59-0.62) with as many sleeping calls (11-38 %) as musl's and a global mutex's runs;
// and a lock shared by a producer and its consumer (glibc's arena under cross-thread frees) is
// one lock for two threads.  So it is said, and left unsure.
Rule by_slowness(const ContentionInputs& in) {
  const ExclusionMeasure& a = in.allocating;
  if (!any_slower_than(a, kExcludedAbove)) return std::nullopt;
  const SlowerMeasure& x = a.apart;
  if (sleeps_inside(in) && x.value && x.low() > kCorroborateAbove && a.uncontended_share < kSleepLockParallelBelow)
    return Decision{ContentionKind::Unsure, ContentionReason::SleepWhenMet, 0};
  return Decision{ContentionKind::Unsure, ContentionReason::SlowerWithoutTurns, 0};
}

// With both measures taken and no turns, no slowdown: "none" needs both — ends that coincide as
// chance says, and met calls no slower (three standard errors), allocations that met allocations
// included.  Where every slow call's switches were read and none slept inside the allocator, a
// waiting thread could only have spun on a lock that leaves the calls' ends apart (turns, above):
// met calls then need only be no slower within 2σ of 0.54.  Met calls faster than alone ones is
// not what running side by side does: the calls made alone were slowed by something the windows
// did not see (a thread asleep inside a call that began before the window, whose wake-up the
// caller pays).
Decision by_parallel_calls(const ContentionInputs& in) {
  const ExclusionMeasure& a = in.allocating;
  const SlowerMeasure& s = a.slower;
  const SlowerMeasure& b = a.by_allocating;
  const SlowerMeasure& r = a.by_running;
  const CoincidenceMeasure& q = in.ends;
  if (!s.value) return Decision{ContentionKind::Unsure, ContentionReason::TooFewMet, 0};
  if (!q.value) return Decision{ContentionKind::Unsure, ContentionReason::TooFewEnds, 0};
  if (s.high() < kDisturbedBelow) return Decision{ContentionKind::Unsure, ContentionReason::Disturbed, 0};
  const double se = std::max(1e-9, s.se);
  const bool awake = in.switches_recorded && in.rusage_blocked == 0 && in.slow_switched >= kMinAwakeSlow &&
                     static_cast<double>(in.slow_slept) <= kAwakeSleptShare * static_cast<double>(in.slow_switched);
  // Met calls slower by a hair, measured closely, where no slow call slept: calls that run side by
  // side on one core's two hardware threads, or beside a thread that shares their cache lines,
  // take a little longer than calls made alone — lock-free allocators under the stress harness read
  // S 0.51-0.53 (bounds ±0.005-0.01) at 4-16 threads.  This widens no gap the strict rule leaves: a
  // global spin lock's met calls can read 0.50 (under mixed sizes at two threads), and the holds and
  // probes below tell it, as before.  Not where a slow call slept: a sleeping lock's handovers may
  // leave met calls little slower (musl's producer/consumer once read 0.49, bounds 0.46-0.52, with
  // no sleep among few slow calls; bounds that wide are not close enough for this).
  const bool precise = in.switches_recorded && in.rusage_blocked == 0 && in.slow_slept == 0 &&
                       2 * se <= kPreciseHalfWidth && s.high() < kPreciseBelow;
  const bool strict = *s.value + 3 * se < kParallelBelow;
  const double parallel_below = awake ? kParallelAwakeBelow : strict || !precise ? kParallelBelow : kPreciseBelow;
  const bool no_slower = awake ? s.high() < kParallelAwakeBelow : strict || precise;
  const bool parallel = q.low() > kTurnsBelow && no_slower && (!b.value || b.high() < kByAllocatingBelow) &&
                        (!r.value || r.high() < kByAllocatingBelow);
  if (!parallel) return Decision{ContentionKind::Unsure, ContentionReason::Ambiguous, 0};
  // Met calls no slower, yet the probes were held up beside other sizes more often than alone (in
  // some threads only, or with too many threads to say one lock): a lock with short critical
  // sections shows little in the timed calls (measured: the global spin lock under mixed sizes at
  // two threads read S 0.50-0.55 with ends coinciding as chance says, and was once called none).
  if (held_beside_others(in.peers)) return Decision{ContentionKind::Unsure, ContentionReason::HeldBesideOthers, 0};
  // Calls side by side by the timed calls, yet too few allocations went past a thread held inside a
  // call: the one measure that stops a call where it is and asks whether the others go on.  A lock
  // with critical sections of a few tens of nanoseconds, seldom contended, leaves the timed calls as
  // they are without it: the global spin lock under a program that works between its calls, on a
  // machine with two busy loops per CPU beside it, read met calls no slower (S 0.47-0.48), ends
  // together as chance says or more often (Q 1.19-1.33: handovers end calls in pairs), and was called
  // `none` in 2 runs of 6, with 2 holds made in each — its waiters' long waits, behind holders
  // preempted inside their calls, begin outside the windows.  Where holds are made at all, "none"
  // and "partial" need kMinHoldsPassed calls past a held thread; in the matrix of the day, the
  // lock-free allocators' runs called `none` under the stress harness made 3-65 holds, of which 0-5
  // waited for a held thread, and those with fewer holds were the producer/consumer's, whose
  // consumer only frees (docs/analysis.md).
  if (in.holds_recorded && in.peers.holds_passed < kMinHoldsPassed)
    return Decision{ContentionKind::Unsure, ContentionReason::FewHoldsPassed, 0};
  const bool sleeping = sleeps_inside(in) || (in.rusage_blocked >= kMinBlockedSamples &&
                                              static_cast<double>(in.rusage_blocked) >=
                                                  kSleepingShare * static_cast<double>(in.rusage_samples));
  if (sleeping) return Decision{ContentionKind::Unsure, ContentionReason::Sleeping, 0};
  const double confidence = std::min(normal_cdf((parallel_below - *s.value) / se),
                                     normal_cdf((*q.value - kTurnsBelow) / std::max(1e-9, q.se)));
  if (a.contended_share >= kPartialMinExcluded) return Decision{ContentionKind::Partial, ContentionReason::ExcludedSome, confidence};
  const ExclusionMeasure& f = in.freeing;
  if (f.slower.value && f.slower.low() > kExcludedAbove)
    return Decision{ContentionKind::Partial, ContentionReason::FreesExcluded, confidence};
  // Calls run side by side, yet the looks often find a thread inside a call asleep in a futex wait:
  // a lock inside the allocator is contended, one that most calls do not take (a lock per size
  // class, arenas that threads share, a refill lock behind per-thread caches).  Measured in the
  // matrices (docs/analysis.md): four mutexes that pairs of eight threads share, 91-658 sleepers in
  // 16-23 % of the looks, and at 16 threads tcmalloc's, scudo's and jemalloc's own locks (15-26 %),
  // were called `none`; where the lock-free allocators read `none` at 2 and 4 threads the looks
  // found at most 33 sleepers, in at most 2.9 % of them.
  const PeerWaitMeasure& p = in.peers;
  if (p.futex_waits >= kMinPlacesSleepers && wilson_low(p.futex_waits, p.looks) >= kPlacesSleepShare)
    return Decision{ContentionKind::Partial, ContentionReason::SleepersInPlaces, confidence};
  // Or the allocator's own locks were contended, counted where they are taken.
  if (allocator_locks_waited(in)) return Decision{ContentionKind::Partial, ContentionReason::AllocatorLocksWaited, confidence};
  return Decision{ContentionKind::None, ContentionReason::Parallel, confidence};
}

// Times the program's threads were seen inside the allocator together: timed calls that met
// another thread inside, probes that did, looks at a thread inside a call (made by a thread about
// to call).  Two threads that only ever take turns by other means (a condition variable) leave none.
uint64_t seen_together(const ContentionInputs& in) {
  const PeerWaitMeasure& p = in.peers;
  return in.allocating.met + in.freeing.met + (p.probes - std::min(p.probes, p.probes_unmet)) + p.looks;
}

// Signs in the run that threads waited for each other inside the allocator somewhere: slow calls
// that slept more often than those made alone, looks that found threads asleep on locks, met
// calls clearly slower, the allocator's own locks contended.
bool waits_seen(const ContentionInputs& in) {
  const PeerWaitMeasure& p = in.peers;
  return sleeps_for_others(in) || allocator_locks_waited(in) ||
         (p.futex_waits >= kMinPlacesSleepers && wilson_low(p.futex_waits, p.looks) >= kPlacesSleepShare) ||
         any_slower_than(in.allocating, kExcludedAbove) || any_slower_than(in.freeing, kExcludedAbove);
}

constexpr double kMinQuietRunSeconds = 0.1;  // a run this long at least, to say that no thread waited
constexpr uint64_t kMinQuietRunTimed = 100;  // … with this many timed calls at least

// The lock test (lock_test.h) decides what the lock is where it is conclusive: one lock for
// every allocation, or none that allocations of different sizes share. The run then says whether
// its threads met there: together inside the allocator (one lock: they took turns at it), or
// waiting somewhere (no lock for all: contention in places), or neither.
Rule by_lock_test(const ContentionInputs& in) {
  constexpr uint64_t kMinTogether = 5;
  const LockTestFinding& t = in.lock_test;
  switch (t.kind) {
    case LockTestKind::OneLockForAll:
      if (seen_together(in) >= kMinTogether)
        return Decision{ContentionKind::GlobalLock, ContentionReason::LockTestOneLock, t.confidence};
      return std::nullopt;
    case LockTestKind::NoSharedLock:
    case LockTestKind::NoLockAcrossSizes:
    case LockTestKind::LockPerClass:
      if (waits_seen(in)) return Decision{ContentionKind::Partial, ContentionReason::LockTestWaitsInPlaces, t.confidence};
      // "No thread waited" needs a run that could have shown one: kMinQuietRunTimed timed calls
      // over a tenth of a second at least (a run of a few milliseconds, or one whose threads
      // seldom call the allocator, is told to time more, as below), and slow calls that did not
      // sleep inside the allocator (sleep_at_all: a refill behind a lock that some calls take once
      // slept in 2 of 38 slow calls, 3 of 51, 4 of 49 under producer/consumer frees beside a
      // busy machine). Sleeps may also be the allocator's own (a nap): the rules of the run weigh
      // them, below.
      if (in.timed < kMinQuietRunTimed || in.wall_seconds < kMinQuietRunSeconds || sleep_at_all(in)) return std::nullopt;
      return Decision{ContentionKind::None, ContentionReason::LockTestNoLock, t.confidence};
    default:
      return std::nullopt;
  }
}

bool found_no_lock_for_all(const LockTestFinding& t) {
  return t.kind == LockTestKind::NoSharedLock || t.kind == LockTestKind::NoLockAcrossSizes ||
         t.kind == LockTestKind::LockPerClass;
}

Decision decide_from_the_run(const ContentionInputs& in);

// The rules in order (docs/analysis.md, "The verdict").
Decision decide(const ContentionInputs& in) {
  if (in.busy_threads < 2) return Decision{ContentionKind::SingleThread, ContentionReason::OneThread, 1.0};
  if (const Rule d = by_lock_test(in)) return *d;
  const Decision d = decide_from_the_run(in);
  // Where the lock test found no lock that allocations share, what looks like one in the run is
  // a lock that some calls take: contention in places.
  if (d.kind == ContentionKind::GlobalLock && found_no_lock_for_all(in.lock_test))
    return Decision{ContentionKind::Partial, ContentionReason::LockTestOverrules, in.lock_test.confidence, d.reason};
  return d;
}

// The rules that read the run alone (docs/analysis.md, "The verdict").
Decision decide_from_the_run(const ContentionInputs& in) {
  if (in.timed == 0) return Decision{ContentionKind::Unsure, ContentionReason::NotTimed, 0};
  if (const Rule d = by_holds(in)) return *d;
  // Turns that leave it unsure — too few ends of sizes twice apart to say whether they span the
  // size classes, or no held thread made a call wait — leave the lock's other evidence to speak:
  // one futex word that every thread and size sleeps on, probes asleep beside other sizes, sleep pairs.
  if (const Rule d = by_turns(in)) {
    if (d->kind == ContentionKind::Unsure) {
      if (const Rule w = by_shared_word(in)) return *w;
      if (const Rule w = by_probe_sleeps(in)) return *w;
      if (const Rule w = by_sleep_pairs(in)) return *w;
    }
    return *d;
  }
  if (const Rule d = by_shared_word(in)) return *d;
  if (const Rule d = by_probe_sleeps(in)) return *d;
  if (const Rule d = by_sleep_pairs(in)) return *d;
  if (!in.allocating.slower.value && !in.ends.value) return Decision{ContentionKind::Unsure, ContentionReason::TooFewMet, 0};
  if (const Rule d = by_slowness(in)) return *d;
  return by_parallel_calls(in);
}

}  // namespace

ContentionVerdict judge_contention(const ContentionInputs& in) {
  ContentionVerdict v;
  v.inputs = in;
  v.blocking = in.rusage_blocked > 0 || in.slow_slept > 0;
  // The threads that make the calls, not a main thread that only waits for its workers: the one
  // definition of "more threads than CPUs" (diff.cpp uses it too).
  v.oversubscribed = in.cpus > 0 && in.busy_threads > in.cpus;
  const Decision d = decide(in);
  v.kind = d.kind;
  v.reason = d.reason;
  v.run_reason = d.run_reason;
  v.confidence = std::clamp(d.confidence, 0.0, 1.0);
  return v;
}

}  // namespace allocscope
