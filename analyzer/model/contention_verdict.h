// contention_verdict.h — whether threads exclude each other inside the allocator, from evidence.
//
// The test (docs/analysis.md, "Contention verdict"): timed calls are split by what they met at
// their start: *alone* (no other thread inside the allocator) or *met* (another thread inside).
// Under one lock that every call takes, a call that starts while another thread is inside must
// wait for that thread's critical section, so it takes longer than the calls of its size class
// made alone; where threads do not exclude each other, meeting another thread does not change how
// long a call takes.  The measure compares the two duration distributions within each size class
// c and pools the classes (so that a different mix of sizes among met and alone calls does not
// move it):
//
//   S = Σ_c U_c / Σ_c met_c · alone_c,
//   U_c = #{(m, a): m slower than a} + ½ #{(m, a): as long}  over met calls m and alone calls a of c
//
// the probability that a met call took longer than an alone call of its class (the Mann–Whitney
// statistic, ties counted half: a clock whose step is as long as a fast call makes many ties).
// S ≈ 0.5: no exclusion; S → 1: calls wait for each other.  Both groups come from the same run and
// the same timing windows, so anything that slows every call — a busy machine, preemption, more
// threads than CPUs, cache misses, page faults — slows met and alone calls alike and leaves S where
// it was: a fast allocator cannot look locked by being slow.  It compares whole distributions, not
// a share below a threshold, so a lock whose critical section is shorter than the clock's step
// still shows (its met calls take one step longer more often).  The same measure over the met
// calls whose other thread was in an allocating call tells allocations that wait for each other
// from allocations slowed by other threads' frees; over the met calls whose other thread ran
// through its call (shorter than 10 µs) it leaves out the threads preempted or asleep inside a
// call, which hold no lock a call could wait for (with more threads than CPUs they are most of
// the met calls); per size class it tells whether the exclusion is everywhere (one global lock)
// or confined to some classes (partial).
//
// This file computes numbers and enums only; contention_wording.h turns them into sentences.
#pragma once
#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "model/allocator_locks.h"
#include "model/completion_coincidence.h"
#include "model/lock_test.h"
#include "model/peer_waits.h"
#include "model/sleep_pairs.h"
#include "util/fine_histogram.h"

namespace allocscope {

// Timed durations (ticks, probe included) of one size class, by what the call met at its start.
struct ExclusionCell {
  FineHistogram alone;           // no other thread inside
  FineHistogram met;             // another thread inside
  FineHistogram met_allocating;  // … of them, another thread inside a call that requests bytes
  FineHistogram met_running;     // … another thread inside a call it ran through (shorter than 10 µs)
  FineHistogram met_apart;       // … only threads inside calls of sizes at least twice apart (size_group)
};

// Allocating calls (malloc, calloc, realloc, new, the aligned family) and freeing calls are
// measured apart: an allocator may lock one and not the other (musl's free is mostly lock-free).
enum class CallGroup : uint8_t { Allocating = 0, Freeing = 1 };
constexpr size_t kCallGroups = 2;

class ExclusionTally {
 public:
  // `inside` other threads were inside at the call's start, `inside_allocating` of them in an
  // allocating call, `inside_running` in a call they ran through, `inside_near_size` in a call of
  // a size less than twice apart from its own (or unknown).
  void add(CallGroup group, size_t cls, uint32_t inside, uint32_t inside_allocating, uint32_t inside_running,
           uint32_t inside_near_size, uint64_t duration);
  const std::vector<ExclusionCell>& cells(CallGroup group) const { return cells_[static_cast<size_t>(group)]; }

 private:
  std::vector<ExclusionCell> cells_[kCallGroups];
};

// S over some met calls against the alone calls of their classes, with its standard error.
struct SlowerMeasure {
  uint64_t met = 0;              // met calls of classes with a reference
  std::optional<double> value;   // S; null: too few calls to measure
  double se = 0;                 // standard error of S
  double low() const { return value ? *value - 2 * se : 0; }
  double high() const { return value ? *value + 2 * se : 0; }
};

// The measure of one group of calls and how its classes divide.
struct ExclusionMeasure {
  uint64_t met = 0, alone = 0;   // timed calls placed on the time line, of classes with a reference
  SlowerMeasure slower;          // every met call
  SlowerMeasure by_allocating;   // met calls whose other thread was in an allocating call
  SlowerMeasure by_running;      // met calls whose other thread ran through its call (not preempted, not asleep)
  SlowerMeasure apart;           // met calls whose other threads were all in calls of sizes twice apart
  double contended_share = 0;    // of met calls, in classes that are clearly excluded (S_c - 3σ > 0.6)
  double uncontended_share = 0;  // … clearly not (S_c + 3σ < 0.53)
  uint32_t classes = 0;          // classes with enough calls to judge one by one
};

ExclusionMeasure measure_exclusion(const std::vector<ExclusionCell>& cells);

enum class ContentionKind : uint8_t { SingleThread, None, Partial, GlobalLock, Unsure };
const char* contention_kind_name(ContentionKind kind);  // "single_thread", "none", "partial", …

// Why a verdict is what it is; the wording is contention_wording.h's.
enum class ContentionReason : uint8_t {
  OneThread,          // fewer than two threads made calls
  NotTimed,           // no timed calls (count-only profile)
  TooFewMet,          // too few timed calls met another thread inside
  TooFewEnds,         // met calls were measured (not clearly slower), but too few ends to tell turns
  TakeTurns,          // calls of different threads never end together: they take turns, across classes
  TurnsWithoutHolding,// … yet no allocation waited for a thread held inside a call, nor did any thread sleep
  TurnsUnheld,        // … in a run that made no holds (every call timed), and no allocation slept for another thread
                      // inside: a word every call updates, not a lock (unsure)
  TurnsWithinClasses, // … within each size class, while calls of different classes end together
  SlowerWithoutTurns, // met calls are slower, yet ends coincide freely: a lock or interference
  ExcludedSome,       // met calls are slower in some classes, not in others
  FreesExcluded,      // allocating calls run side by side; frees wait for each other
  SleepersInPlaces,   // calls run side by side, yet the looks find threads asleep on locks inside
  Parallel,           // calls run side by side
  Ambiguous,          // the measure lies between the thresholds, or its bounds span them
  MixedClasses,       // the measure says exclusion, but some classes clearly run side by side
  Disturbed,          // met calls were faster than alone ones: the reference is disturbed
  Sleeping,           // the measure says no exclusion, but sampled calls slept in the kernel
  SleepsAcrossSizes,  // calls slept behind calls of sizes twice apart, joining most sizes and every thread: one lock
  SleepWhenMet,       // met calls are slower, also beside sizes twice apart, and slow calls sleep inside: a sleeping
                      // lock, one for all classes or one per class (unsure)
  SleepersOnOneWord,  // calls seen asleep inside, of most threads and sizes twice apart, waited on one futex word
  ProbesSleepApart,   // allocations slept inside while every other thread inside was in an allocation of a size
                      // twice apart (peer_waits.h probes)
  HoldsReleasedApart, // allocations made while the threads inside calls were held waited until one held in an
                      // allocation of a size twice apart was let go (peer_waits.h holds)
  HeldBesideOthers,   // met calls no slower, but probes held up beside sizes twice apart more often than alone:
                      // a lock the timed calls do not show (unsure)
  FewHoldsPassed,     // met calls no slower and ends as chance says, but too few allocations went past a thread
                      // held inside a call to show that no lock stops them (unsure)
  LockTestOneLock,    // the lock test: a thread held inside malloc stopped another's allocations of sizes apart,
                      // and the program's threads were inside the allocator at the same time
  LockTestNoLock,     // the lock test found no lock that allocations share, and the run saw no thread wait
  LockTestWaitsInPlaces,  // … no lock that allocations of every size share, yet threads waited inside the allocator
  AllocatorLocksWaited,  // calls run side by side, yet threads waited on the allocator's own locks
                         // (allocator_locks.h): a lock that some calls take is contended (partial)
  LockTestOverrules,  // the run alone reads like one lock (ContentionVerdict::run_reason), the lock test found none:
                      // a lock that some calls take (partial)
};

// "none" and "partial", where the shim held threads: allocations that went past a held thread, at
// least (contention_verdict.cpp by_parallel_calls).
constexpr uint64_t kMinHoldsPassed = 5;

struct ContentionInputs {
  ExclusionMeasure allocating, freeing;
  CoincidenceMeasure ends, ends_across;   // completion_coincidence.h: all pairs; pairs of different classes
  double ends_near_ns = 0;                // the near zone of that measure
  uint32_t busy_threads = 0;              // cost_model.h busy_thread
  uint32_t calling_threads = 0;           // threads that made calls at all
  uint64_t timed = 0;                     // timed calls
  uint32_t sample_every = 0;              // the profile's sampling: 1/N of the time timed (0: nothing, by choice)
  uint64_t rusage_samples = 0, rusage_blocked = 0, rusage_preempted = 0;  // sampled calls; with nvcsw; with nivcsw
  // Calls of kSwitchSlowNs or longer whose context switches are known (format.h kEvSwitches, and
  // the probe's); of them, those that slept (a voluntary switch) and those only preempted.
  uint64_t slow_switched = 0, slow_slept = 0, slow_preempted = 0;
  // Of them, those made alone (nobody else inside at the start: nobody to wait for), and those
  // of allocating calls.
  uint64_t slow_alone_switched = 0, slow_alone_slept = 0;
  uint64_t slow_allocating_switched = 0, slow_allocating_slept = 0;
  bool switches_recorded = false;         // every slow timed call's switches were read (format.h kModeSwitches)
  bool holds_recorded = false;            // the shim held threads now and then (format.h kModeHolds)
  SleepPairsMeasure sleep_pairs;          // whom the calls that slept waited behind (sleep_pairs.h)
  PeerWaitMeasure peers;                  // where calls asleep inside waited (peer_waits.h)
  uint32_t cpus = 0;                      // CPUs the process may run on (0: not recorded)
  uint32_t max_live_threads = 0;
  double wall_seconds = 0;
  double alone_median_ns = 0;             // the median duration of the timed calls made alone (by_inside's first row)
  uint64_t calls = 0;                     // allocator calls, timed or not
  bool sparse_calls = false;              // CostReport::sparse_calls: none timed for too few calls, not too short a run
  LockTestFinding lock_test;              // what `record`'s lock test found (lock_test.h)
  AllocatorLockWaits allocator_locks;     // the allocator's own lock waits (allocator_locks.h)
  double allocator_time_ns = 0;           // the threads' time inside the allocator (CostReport::allocator_time_ns)
  double allocator_lock_share = 0;        // allocator_locks.wait_ns / allocator_time_ns (0 without that time)
};

struct ContentionVerdict {
  ContentionKind kind = ContentionKind::Unsure;
  ContentionReason reason = ContentionReason::Ambiguous;
  double confidence = 0;                  // 0..1: how far the evidence lies from the nearest threshold
  bool blocking = false;                  // sampled calls slept in the kernel (a sleeping lock)
  bool oversubscribed = false;            // more calling threads (busy_threads) than CPUs: they queue for them
  ContentionReason run_reason = ContentionReason::Ambiguous;  // LockTestOverrules: what the run alone said
  ContentionInputs inputs;
};

ContentionVerdict judge_contention(const ContentionInputs& in);

}  // namespace allocscope
