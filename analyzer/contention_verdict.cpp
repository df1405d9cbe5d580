// contention_verdict.cpp — the exclusion ratio and the verdict drawn from it (contention_verdict.h).
#include "contention_verdict.h"

#include <algorithm>
#include <cmath>

namespace allocscope {
namespace {

// Thresholds of docs/analysis.md, "Contention verdict".
constexpr double kExcludedBelow = 0.7;       // ratio's upper bound below this: calls wait for each other
constexpr double kParallelAbove = 0.8;       // ratio's lower bound above this: they do not
constexpr double kClassExcluded = 0.6;       // a class is clearly excluded: R_c + 3σ below this
constexpr double kClassParallel = 0.8;       // … clearly not: R_c - 3σ above this
constexpr double kGlobalMaxParallel = 0.02;  // a global lock leaves (almost) no class running side by side
constexpr double kPartialMinParallel = 0.25; // partial: at least this share of met calls in parallel classes
constexpr double kPartialMinExcluded = 0.10; // … or at least this share in excluded ones
constexpr uint64_t kMinReference = 10;       // alone calls a class needs to predict its met calls
constexpr uint64_t kMinClassCalls = 20;      // met and alone calls a class needs to be judged alone
constexpr double kMinClassFastShare = 0.1;   // … and its alone calls' fast share (binomial bounds hold)
constexpr double kDisturbedAbove = 1.2;     // ratio's lower bound above this: the reference is disturbed
constexpr uint64_t kMinBlockedSamples = 2;   // sampled calls that slept, …
constexpr double kSleepingShare = 0.05;      // … and their share, before "none" is doubted
constexpr double kMinMetFastShare = 0.5;     // "none" needs met calls mostly fast: else a lock is masked
constexpr double kMinExpected = 20;          // expected fast met calls for a ratio
constexpr uint64_t kMinMet = 50;             // met calls for a ratio

double normal_cdf(double z) { return 0.5 * std::erfc(-z / std::sqrt(2.0)); }

}  // namespace

void ExclusionTally::add(CallGroup group, size_t cls, bool met, bool fast) {
  std::vector<ExclusionCell>& cells = cells_[static_cast<size_t>(group)];
  if (cls >= cells.size()) cells.resize(cls + 1);
  ExclusionCell& c = cells[cls];
  if (met) {
    ++c.met;
    c.met_fast += fast;
  } else {
    ++c.alone;
    c.alone_fast += fast;
  }
}

ExclusionMeasure measure_exclusion(const std::vector<ExclusionCell>& cells) {
  ExclusionMeasure m;
  double variance = 0;
  uint64_t contended = 0, uncontended = 0;
  for (const ExclusionCell& c : cells) {
    if (c.alone < kMinReference || c.alone_fast == 0) continue;
    const double p = static_cast<double>(c.alone_fast) / static_cast<double>(c.alone);
    const double met = static_cast<double>(c.met);
    m.met += c.met;
    m.alone += c.alone;
    m.alone_fast += c.alone_fast;
    m.expected_fast += met * p;
    m.observed_fast += c.met_fast;
    // Var(observed - expected): the met calls' binomial spread plus that of the estimate of p.
    const double v = met * p * (1 - p) + met * met * p * (1 - p) / static_cast<double>(c.alone);
    variance += v;
    if (c.met >= kMinClassCalls && c.alone >= kMinClassCalls && p >= kMinClassFastShare) {
      ++m.classes;
      const double r = static_cast<double>(c.met_fast) / (met * p);
      const double se = std::sqrt(v) / (met * p);
      if (r + 3 * se < kClassExcluded) contended += c.met;
      if (r - 3 * se > kClassParallel) uncontended += c.met;
    }
  }
  if (m.met > 0) {
    m.contended_share = static_cast<double>(contended) / static_cast<double>(m.met);
    m.uncontended_share = static_cast<double>(uncontended) / static_cast<double>(m.met);
  }
  if (m.expected_fast >= kMinExpected && m.met >= kMinMet) {
    const double r = static_cast<double>(m.observed_fast) / m.expected_fast;
    const double se = std::sqrt(variance) / m.expected_fast;
    m.ratio = r;
    m.low = std::max(0.0, r - 2 * se);
    m.high = r + 2 * se;
  }
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

ContentionVerdict judge_contention(const ContentionInputs& in) {
  ContentionVerdict v;
  v.inputs = in;
  v.blocking = in.rusage_blocked > 0;
  v.oversubscribed = in.cpus > 0 && in.max_live_threads > in.cpus;
  auto set = [&](ContentionKind kind, ContentionReason reason, double confidence) {
    v.kind = kind;
    v.reason = reason;
    v.confidence = std::clamp(confidence, 0.0, 1.0);
  };
  if (in.busy_threads < 2) {
    set(ContentionKind::SingleThread, ContentionReason::OneThread, 1.0);
    return v;
  }
  if (in.timed == 0) {
    set(ContentionKind::Unsure, ContentionReason::NotTimed, 0);
    return v;
  }
  const ExclusionMeasure& a = in.allocating;
  if (!a.ratio) {
    set(ContentionKind::Unsure, ContentionReason::TooFewMet, 0);
    return v;
  }
  const double r = *a.ratio;
  const double se = std::max(1e-9, (a.high - r) / 2);
  if (a.high < kExcludedBelow) {
    const double confidence = normal_cdf((kExcludedBelow - r) / se);
    if (a.uncontended_share <= kGlobalMaxParallel) {
      set(ContentionKind::GlobalLock, ContentionReason::Excluded, confidence);
    } else if (a.uncontended_share >= kPartialMinParallel) {
      set(ContentionKind::Partial, ContentionReason::ExcludedSome, confidence);
    } else {
      set(ContentionKind::Unsure, ContentionReason::MixedClasses, 0);
    }
    return v;
  }
  // Met calls faster than alone ones is not what running side by side does: the calls made alone
  // were slowed by something the windows did not see (a thread asleep inside a call that began
  // before the window, whose wake-up the caller pays).  Sleeping calls say the same.
  const bool disturbed = a.low > kDisturbedAbove;
  const bool sleeping = in.rusage_blocked >= kMinBlockedSamples &&
                        static_cast<double>(in.rusage_blocked) >= kSleepingShare * static_cast<double>(in.rusage_samples);
  if (a.low > kParallelAbove && (disturbed || sleeping)) {
    set(ContentionKind::Unsure, disturbed ? ContentionReason::Disturbed : ContentionReason::Sleeping, 0);
    return v;
  }
  // When the calls that met another thread were mostly slow anyway, a ratio near 1 does not show
  // that nobody waits: measured, the global mutex and mallocng at two to four threads read about
  // 1 with a third of their met calls fast (the threads queued on the lock sleep where the windows
  // do not see them, and a newcomer takes the lock ahead of them), like lock-free allocators whose
  // calls are slow for other reasons.  Only mostly fast met calls make "none" a finding.
  if (a.low > kParallelAbove && static_cast<double>(a.observed_fast) < kMinMetFastShare * static_cast<double>(a.met)) {
    set(ContentionKind::Unsure, ContentionReason::Masked, 0);
    return v;
  }
  if (a.low > kParallelAbove) {
    const double confidence = normal_cdf((r - kParallelAbove) / se);
    const ExclusionMeasure& f = in.freeing;
    if (a.contended_share >= kPartialMinExcluded) {
      set(ContentionKind::Partial, ContentionReason::ExcludedSome, confidence);
    } else if (f.ratio && f.high < kExcludedBelow) {
      set(ContentionKind::Partial, ContentionReason::FreesExcluded, confidence);
    } else {
      set(ContentionKind::None, ContentionReason::Parallel, confidence);
    }
    return v;
  }
  if (a.contended_share >= kPartialMinExcluded && a.uncontended_share >= kPartialMinParallel) {
    set(ContentionKind::Partial, ContentionReason::ExcludedSome, 0.5);
    return v;
  }
  set(ContentionKind::Unsure, ContentionReason::Ambiguous, 0);
  return v;
}

}  // namespace allocscope
