#include "model/concurrency.h"

#include <algorithm>
#include <cmath>

#include "allocscope/buckets.h"
#include "allocscope/ops.h"
#include "model/cost_constants.h"

namespace allocscope {

namespace {

// Mean of the ceil(q * total) smallest values, each bin at its middle (capped at the maximum).
double low_mean(const FineHistogram& h, double q) {
  if (h.empty()) return 0;
  const uint64_t rank = std::clamp<uint64_t>(
      static_cast<uint64_t>(std::ceil(q * static_cast<double>(h.total()))), 1, h.total());
  uint64_t taken = 0;
  double sum = 0;
  const auto& counts = h.counts();
  for (unsigned i = 0; i < counts.size() && taken < rank; ++i) {
    const uint64_t n = std::min(counts[i], rank - taken);
    sum += static_cast<double>(n) * std::min(FineHistogram::mid_of(i), static_cast<double>(h.max()));
    taken += n;
  }
  return sum / static_cast<double>(taken);
}

}  // namespace

ConcurrencyTracker::ConcurrencyTracker(const format::Calibration* calibration, uint64_t t0, uint64_t t1,
                                       unsigned slots)
    : t0_(t0),
      t1_(std::max(t0, t1)),
      calibration_overhead_(calibration ? static_cast<double>(calibration->clock_read_ticks) : 0.0),
      all_(kOpSlots * kBucketSlots),
      alone_hist_(kOpSlots * kBucketSlots),
      contended_(kOpSlots * kBucketSlots) {
  r_.timeline.resize(slots);
}

size_t ConcurrencyTracker::cell(const TraceCall& call) const {
  const unsigned op = call.record.op;
  const unsigned bucket = trace::has_size(op) ? bucket_of(call.record.size) : kBucketUnknown;
  return op * kBucketSlots + bucket;
}

void ConcurrencyTracker::advance_to(uint64_t tick) {
  if (!started_) {
    started_ = true;
    first_ = now_ = tick;
    return;
  }
  if (tick <= now_) return;
  const uint64_t dt = tick - now_;
  if (inside_ >= r_.ticks_at.size()) r_.ticks_at.resize(inside_ + 1, 0);
  r_.ticks_at[inside_] += dt;
  if (inside_ > 0) {
    r_.busy_ticks += dt;
    r_.max_inside = std::max(r_.max_inside, inside_);
  }
  if (inside_ > 1) r_.contended_ticks += dt;
  // Spread [now_, tick) over the timeline's slots; time past t1 (the last call's start) goes to
  // the last slot.
  if (!r_.timeline.empty() && inside_ > 0) {
    const unsigned __int128 span = t1_ - t0_ + 1;
    const size_t n = r_.timeline.size();
    uint64_t from = now_ < t0_ ? 0 : now_ - t0_;
    const uint64_t to = tick < t0_ ? 0 : tick - t0_;
    while (from < to) {
      const size_t slot = static_cast<size_t>(std::min<unsigned __int128>(n - 1, from * static_cast<unsigned __int128>(n) / span));
      const unsigned __int128 slot_end = slot + 1 == n ? to : (span * (slot + 1) + n - 1) / n;
      const uint64_t upto = std::max<uint64_t>(from + 1, static_cast<uint64_t>(std::min<unsigned __int128>(to, slot_end)));
      InsideSample& s = r_.timeline[slot];
      s.max_inside = std::max(s.max_inside, inside_);
      s.inside_ticks += (upto - from) * inside_;
      from = upto;
    }
  }
  now_ = tick;
}

// A call without a duration (a trace recorded with --sample N > 1, outside the windows) was not
// watched from enter to exit: it is left out, so the figures are those of the timed windows.
void ConcurrencyTracker::enter(const TraceCall& call) {
  if (call.record.duration == 0) return;
  advance_to(call.enter_tick);
  if (call.thread >= active_.size()) active_.resize(call.thread + 1);
  active_[call.thread] = Active{inside_, r_.contended_ticks};
  ++(inside_ == 0 ? r_.alone_calls : r_.contended_calls);
  ++inside_;
}

void ConcurrencyTracker::exit(const TraceCall& call) {
  if (call.record.duration == 0) {
    ++r_.untimed_calls;
    return;
  }
  advance_to(call.exit_tick);
  if (inside_ > 0) --inside_;
  ++r_.calls;
  const uint64_t d = call.duration();
  r_.inside_ticks += d;
  const size_t c = cell(call);
  all_[c].add(d);
  raw_.add(d);
  const Active a = call.thread < active_.size() ? active_[call.thread] : Active{};
  if (a.others == 0) alone_hist_[c].add(d);
  const uint64_t contended = r_.contended_ticks - a.contended_at;
  if (contended > 0) {
    ++r_.si_calls;
    std::vector<double>& by_bin = contended_[c];
    const unsigned bin = FineHistogram::index_of(d);
    if (bin >= by_bin.size()) by_bin.resize(bin + 1, 0.0);
    by_bin[bin] += static_cast<double>(contended);
  }
}

void ConcurrencyTracker::finish() {
  if (started_) r_.span_ticks = now_ - first_;
  if (r_.ticks_at.size() < static_cast<size_t>(r_.max_inside) + 1) r_.ticks_at.resize(r_.max_inside + 1, 0);
  if (raw_.empty()) return;
  r_.overhead_ticks = std::min(calibration_overhead_, static_cast<double>(raw_.quantile(kOverheadQuantile)));
  if (r_.si_calls < kMinContended || r_.contended_ticks == 0) return;
  std::vector<FineHistogram> op_alone(kOpSlots);
  for (unsigned op = 0; op < kOpSlots; ++op) {
    for (unsigned b = 0; b < kBucketSlots; ++b) op_alone[op].merge(alone_hist_[op * kBucketSlots + b]);
  }
  double progress = 0;
  for (unsigned op = 0; op < kOpSlots; ++op) {
    for (unsigned b = 0; b < kBucketSlots; ++b) {
      const size_t c = op * kBucketSlots + b;
      if (contended_[c].empty()) continue;
      const FineHistogram& all = all_[c];
      const FineHistogram& alone = alone_hist_[c];
      double base;
      if (alone.total() >= kMinAlone) {
        base = low_mean(alone, kBaselineQuantile);
      } else if (op_alone[op].total() >= kMinAlone) {
        base = low_mean(op_alone[op], kBaselineQuantile);
      } else {
        base = static_cast<double>(all.quantile(kFallbackQuantile));
      }
      const std::vector<double>& by_bin = contended_[c];
      for (unsigned i = 0; i < by_bin.size(); ++i) {
        if (by_bin[i] == 0) continue;
        const double d = std::min(FineHistogram::mid_of(i), static_cast<double>(all.max()));
        const double rate = d > 0 ? std::min(1.0, base / d) : 1.0;
        progress += rate * by_bin[i];
      }
    }
  }
  r_.serialization_index = progress / static_cast<double>(r_.contended_ticks);
}

}  // namespace allocscope
