#include "model/lock_test.h"

#include <algorithm>
#include <cmath>

#include "model/peer_waits.h"

namespace allocscope {

namespace {

LockTestHolds holds_at(const format::LockTest& t, int phase, int where) {
  const uint32_t* c = t.counts[phase][where];
  LockTestHolds h;
  h.stopped = c[format::kWatchedStopped];
  h.stopped_later = c[format::kWatchedStoppedLater];
  h.told = c[format::kWatchedPassed] + h.stopped + h.stopped_later;
  h.preempted = c[format::kWatchedPreempted];
  return h;
}

LockTestHolds sum(const LockTestHolds& a, const LockTestHolds& b) {
  return {a.told + b.told, a.stopped + b.stopped, a.stopped_later + b.stopped_later, a.preempted + b.preempted};
}

bool enough(const LockTestHolds& h) { return h.told >= kLockTestMinTold; }
bool stops_at_once(const LockTestHolds& h) {
  return enough(h) && h.low() >= kLockTestStops && h.stopped >= kLockTestAtOnce * h.stopped_later;
}
bool never_stops(const LockTestHolds& h) { return enough(h) && h.high() < kLockTestStops; }

// How many standard errors the share lies from the threshold, as a probability.
double confidence_of(const LockTestHolds& h) {
  const double n = static_cast<double>(h.told);
  if (n == 0) return 0;
  const double p = h.share();
  const double se = std::sqrt(std::max(p * (1 - p), 1.0 / n) / n);
  return 0.5 * std::erfc(-std::fabs(p - kLockTestStops) / se / std::sqrt(2.0));
}

}  // namespace

double LockTestHolds::low() const { return wilson_low(stopped, told); }
double LockTestHolds::high() const { return wilson_high(stopped, told); }

const char* lock_test_kind_name(LockTestKind kind) {
  switch (kind) {
    case LockTestKind::NotRun: return "not_run";
    case LockTestKind::Failed: return "failed";
    case LockTestKind::Inconclusive: return "inconclusive";
    case LockTestKind::OneLockForAll: return "one_lock_for_all";
    case LockTestKind::LockPerClass: return "lock_per_class";
    case LockTestKind::NoSharedLock: return "no_shared_lock";
    case LockTestKind::NoLockAcrossSizes: return "no_lock_across_sizes";
  }
  return "?";
}

LockTestFinding read_lock_test(const std::optional<LockTestRecord>& record) {
  LockTestFinding f;
  if (!record) return f;
  f.detail = record->detail;
  const auto status = static_cast<format::LockTestStatus>(record->test.status);
  if (status != format::LockTestStatus::Ran) {
    f.kind = status == format::LockTestStatus::Failed ? LockTestKind::Failed : LockTestKind::NotRun;
    return f;
  }
  const format::LockTest& t = record->test;
  f.apart = holds_at(t, format::kLockTestApart, format::kHeldInMalloc);
  f.same = holds_at(t, format::kLockTestSame, format::kHeldInMalloc);
  f.between = sum(holds_at(t, format::kLockTestApart, format::kHeldOutside),
                  holds_at(t, format::kLockTestSame, format::kHeldOutside));
  f.kind = LockTestKind::Inconclusive;
  // Held between its calls, the thread holds nothing: if that stops the other as often, what stops
  // it is the machine, not a lock.
  if (f.between.told > 0 && f.between.low() >= kLockTestStops) return f;
  if (stops_at_once(f.apart)) {
    f.kind = LockTestKind::OneLockForAll;
    f.confidence = confidence_of(f.apart);
  } else if (never_stops(f.apart)) {
    if (stops_at_once(f.same)) {
      f.kind = LockTestKind::LockPerClass;
      f.confidence = std::min(confidence_of(f.apart), confidence_of(f.same));
    } else if (never_stops(f.same)) {
      f.kind = LockTestKind::NoSharedLock;
      f.confidence = std::min(confidence_of(f.apart), confidence_of(f.same));
    } else {
      f.kind = LockTestKind::NoLockAcrossSizes;
      f.confidence = confidence_of(f.apart);
    }
  }
  return f;
}

}  // namespace allocscope
