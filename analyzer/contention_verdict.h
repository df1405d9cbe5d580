// contention_verdict.h — whether threads exclude each other inside the allocator, from evidence.
//
// The test (docs/analysis.md, "Contention verdict"): a timed call is *fast* when its measured
// duration is at most kFastFactor times the 5th percentile of its (operation, size bucket)'s timed
// durations.  Calls are split by what they met at their start: *alone* (no other thread inside the
// allocator) or *met* (another thread inside).  Under one lock that every call takes, a call that
// starts while another thread is inside must wait for that thread's critical section, so it is
// rarely fast; where threads do not exclude each other, meeting another thread does not change the
// chance of being fast.  The *exclusion ratio* compares the met calls' fast count with the count
// their size classes' alone calls predict:
//
//   R = Σ_c met_fast_c / Σ_c met_c · p_c,   p_c = alone_fast_c / alone_c
//
// ≈ 1: no exclusion; ≪ 1: calls wait for each other.  Both groups come from the same run and the
// same timing windows, so anything that slows every call — a busy machine, preemption, more threads
// than CPUs, cache misses, page faults — lowers p_c and the met calls' fast share alike and leaves R
// where it was: a fast allocator cannot look locked by being slow.  Per size class the same ratio
// tells whether the exclusion is everywhere (one global lock) or confined to some classes (partial).
//
// This file computes numbers and enums only; contention_wording.h turns them into sentences.
#pragma once
#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

namespace allocscope {

constexpr double kFastFactor = 1.3;          // fast: at most this times the cell's 5th percentile

// Timed calls of one size class, by what they met at their start and whether they were fast.
struct ExclusionCell {
  uint64_t alone = 0, alone_fast = 0;
  uint64_t met = 0, met_fast = 0;
};

// Allocating calls (malloc, calloc, realloc, new, the aligned family) and freeing calls are
// measured apart: an allocator may lock one and not the other (musl's free is mostly lock-free).
enum class CallGroup : uint8_t { Allocating = 0, Freeing = 1 };
constexpr size_t kCallGroups = 2;

class ExclusionTally {
 public:
  void add(CallGroup group, size_t cls, bool met, bool fast);
  const std::vector<ExclusionCell>& cells(CallGroup group) const { return cells_[static_cast<size_t>(group)]; }

 private:
  std::vector<ExclusionCell> cells_[kCallGroups];
};

// The exclusion ratio of one group of calls and how its classes divide.
struct ExclusionMeasure {
  uint64_t met = 0, alone = 0;            // timed calls placed on the time line, of classes with a reference
  double expected_fast = 0;               // met calls expected fast from their classes' alone calls
  uint64_t observed_fast = 0;             // met calls that were fast
  uint64_t alone_fast = 0;                // alone calls that were fast
  std::optional<double> ratio;            // observed / expected; null: too little to measure
  double low = 0, high = 0;               // ratio ± 2 standard errors
  double contended_share = 0;             // of met calls, in classes that are clearly excluded (R_c + 3σ < 0.6)
  double uncontended_share = 0;           // … clearly not (R_c - 3σ > 0.8)
  uint32_t classes = 0;                   // classes with enough calls to judge one by one
};

ExclusionMeasure measure_exclusion(const std::vector<ExclusionCell>& cells);

enum class ContentionKind : uint8_t { SingleThread, None, Partial, GlobalLock, Unsure };
const char* contention_kind_name(ContentionKind kind);  // "single_thread", "none", "partial", …

// Why a verdict is what it is; the wording is contention_wording.h's.
enum class ContentionReason : uint8_t {
  OneThread,          // fewer than two threads made calls
  NotTimed,           // no timed calls (count-only profile)
  TooFewMet,          // too few timed calls met another thread inside
  Excluded,           // allocating calls wait for each other in every class measured
  ExcludedSome,       // … in some classes, not in others
  FreesExcluded,      // allocating calls run side by side; frees wait for each other
  Parallel,           // calls run side by side
  Ambiguous,          // the ratio lies between the thresholds, or its bound spans them
  MixedClasses,       // the ratio says exclusion, but some classes clearly run side by side
  Disturbed,          // met calls were fast more often than alone ones: the reference is disturbed
  Sleeping,           // the ratio says no exclusion, but sampled calls slept in the kernel
  Masked,             // the ratio says no exclusion, but the met calls were mostly slow anyway
};

struct ContentionInputs {
  ExclusionMeasure allocating, freeing;
  uint32_t busy_threads = 0;              // threads with >= 1 % of the calls
  uint64_t timed = 0;                     // timed calls
  uint64_t rusage_samples = 0, rusage_blocked = 0, rusage_preempted = 0;  // sampled calls; with nvcsw; with nivcsw
  uint32_t cpus = 0;                      // CPUs the process may run on (0: not recorded)
  uint32_t max_live_threads = 0;
  double wall_seconds = 0;
};

struct ContentionVerdict {
  ContentionKind kind = ContentionKind::Unsure;
  ContentionReason reason = ContentionReason::Ambiguous;
  double confidence = 0;                  // 0..1: how far the evidence lies from the nearest threshold
  bool blocking = false;                  // sampled calls slept in the kernel (a sleeping lock)
  bool oversubscribed = false;            // more threads alive than CPUs
  ContentionInputs inputs;
};

ContentionVerdict judge_contention(const ContentionInputs& in);

}  // namespace allocscope
