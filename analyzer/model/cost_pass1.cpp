// Pass 1 of the cost model (cost_model.h): the profile read, and what its timed calls say about
// the allocator alone — the probe overhead, each (operation, size bucket)'s uncontended cost, the
// waiting share of each latency bin, and the calls taken as blocked without evidence.
#include <algorithm>
#include <cmath>
#include <limits>

#include "allocscope/buckets.h"
#include "model/cost_constants.h"
#include "model/cost_parts.h"
#include "profile/trace_decode.h"

namespace allocscope::cost {

namespace {

constexpr uint64_t kMinEvidence = 16;         // rusage samples for a latency bin's waiting share

bool rusage_known(uint64_t v) { return v != kRusageUnavailable; }

// Probe overhead: the calibration's clock-read cost, but never more than the fastest calls.
double probe_overhead(const Pass1& p1, const Profile& profile, const std::optional<format::Calibration>& cal) {
  double overhead = cal ? static_cast<double>(cal->clock_read_ticks) : 0.0;
  if (!p1.raw.empty()) {
    overhead = std::min(overhead, static_cast<double>(p1.raw.quantile(kOverheadQuantile)));
  } else {
    LatencyHistogram pooled{};
    for (const auto& op : profile.totals_by_op()) {
      for (unsigned b = 0; b < kLatencyBins; ++b) pooled[b] += op.latency[b];
    }
    if (histogram_total(pooled)) {
      const uint64_t top = latency_quantile_ticks(pooled, kOverheadQuantile, 0);
      overhead = std::min(overhead, static_cast<double>(bucket_lo(latency_bin_of(top))));
    }
  }
  return overhead;
}

// Uncontended cost per (op, bucket).
void learn_baselines(Model& m, const Pass1& p1) {
  const double overhead = m.overhead;
  std::vector<FineHistogram> op_alone(kOpSlots), op_all(kOpSlots);
  for (unsigned op = 0; op < kOpSlots; ++op) {
    for (unsigned b = 0; b < kBucketSlots; ++b) {
      op_alone[op].merge(p1.alone[cell_index(op, b)]);
      op_all[op].merge(p1.all[cell_index(op, b)]);
    }
  }
  m.baseline.assign(kOpSlots * kBucketSlots, 0.0);
  m.baseline_alone.assign(kOpSlots * kBucketSlots, 0);
  for (unsigned op = 0; op < kOpSlots; ++op) {
    for (unsigned b = 0; b < kBucketSlots; ++b) {
      const size_t c = cell_index(op, b);
      double base = 0;
      if (p1.alone[c].total() >= kMinAlone) {
        base = p1.alone[c].trimmed_mean(kBaselineQuantile, overhead);
        m.baseline_alone[c] = 1;
      } else if (op_alone[op].total() >= kMinAlone) {
        base = op_alone[op].trimmed_mean(kBaselineQuantile, overhead);
        m.baseline_alone[c] = 1;
      } else if (!p1.all[c].empty()) {
        base = shifted(p1.all[c].quantile(kFallbackQuantile), overhead);
      } else if (!op_all[op].empty()) {
        base = shifted(op_all[op].quantile(kFallbackQuantile), overhead);
      }
      m.baseline[c] = base;
    }
  }
}

// Waiting share per latency bin, where rusage samples are enough (pooling neighbours if needed).
void learn_wait_shares(Model& m, const Pass1& p1) {
  for (unsigned b = 0; b < kLatencyBins; ++b) {
    EvidenceBin pooled = p1.evidence[b];
    if (pooled.samples < kMinEvidence) {
      for (int n : {-1, 1}) {
        const int nb = static_cast<int>(b) + n;
        if (nb < 0 || nb >= static_cast<int>(kLatencyBins)) continue;
        const EvidenceBin& e = p1.evidence[static_cast<unsigned>(nb)];
        pooled.samples += e.samples;
        pooled.blocked += e.blocked;
        pooled.ticks += e.ticks;
        pooled.wait_ticks += e.wait_ticks;
      }
    }
    if (pooled.samples >= kMinEvidence && pooled.ticks > 0) {
      m.wait_share[b] = pooled.wait_ticks / pooled.ticks;
      m.blocked_share[b] = static_cast<double>(pooled.blocked) / static_cast<double>(pooled.samples);
    } else {
      m.wait_share[b] = -1;
      m.blocked_share[b] = 0;
    }
  }
}

}  // namespace

bool switches_known_slow(const format::Event& e, uint64_t slow_ticks) {
  if (e.flags & format::kEvSwitches) return true;
  return (e.flags & format::kEvRusage) && e.duration_ticks >= slow_ticks;
}

double block_threshold_ticks(const std::optional<format::Calibration>& cal, double ticks_per_us) {
  if (!cal) return ticks_per_us;
  return static_cast<double>(cal->futex_wait_ticks + cal->futex_wake_ticks + 2 * cal->syscall_ticks);
}

std::optional<double> known_wait(const format::Event& e, double duration, double base, double ticks_per_us,
                                 double block) {
  if (!(e.flags & (format::kEvRusage | format::kEvSwitches))) return std::nullopt;
  if (e.nvcsw == 0) return 0.0;
  if (e.flags & format::kEvRusage) {
    const double cpu = static_cast<double>(e.cpu_us) * ticks_per_us;
    return std::clamp(duration - cpu, 0.0, duration);
  }
  return std::max(0.0, duration - base - block);
}

Model learn(const Pass1& p1, const Profile& profile, const std::optional<format::Calibration>& cal) {
  Model m;
  m.ticks_per_us = profile.clock.hz() / 1e6;
  m.overhead = probe_overhead(p1, profile, cal);
  learn_baselines(m, p1);
  learn_wait_shares(m, p1);
  m.block_threshold = block_threshold_ticks(cal, m.ticks_per_us);
  return m;
}

std::vector<double> fallback_blocked(const ThreadProfile& t, const Model& m, double& blocked_calls) {
  std::vector<double> phi(kLatencyBins, 0.0);
  std::array<double, kLatencyBins> est{};  // estimated calls per latency bin
  const OpTable ops = t.totals_by_op();
  for (const auto& op : ops) {
    if (op.counters.timed == 0) continue;
    const double scale = static_cast<double>(op.counters.calls) / static_cast<double>(op.counters.timed);
    for (unsigned b = 0; b < kLatencyBins; ++b) est[b] += static_cast<double>(op.latency[b]) * scale;
  }
  double budget = rusage_known(t.rusage.nvcsw) ? static_cast<double>(t.rusage.nvcsw)
                                                : std::numeric_limits<double>::infinity();
  for (unsigned b = 0; b < kLatencyBins; ++b) {
    if (m.wait_share[b] >= 0) budget -= m.blocked_share[b] * est[b];
  }
  for (unsigned b = kLatencyBins; b-- > 0;) {
    if (shifted(bucket_lo(b), m.overhead) < m.block_threshold) break;
    if (m.wait_share[b] >= 0 || est[b] <= 0) continue;
    if (budget <= 0) break;
    const double take = std::min(est[b], budget);
    phi[b] = take / est[b];
    budget -= take;
    blocked_calls += take;
  }
  return phi;
}

// Reads the profile; its timed calls, window by window, fill `p1`.
Profile pass1(const std::filesystem::path& path, const SweepConfig& sweep_config, double ticks_per_us0,
              double block_ticks0, Pass1& p1) {
  WindowSweep sweep1(sweep_config, [&](std::span<const SweepItem> items, const WindowInfo&) {
    for (const SweepItem& it : items) {
      const format::Event& e = it.event;
      if (e.op >= kOpSlots) continue;
      const size_t c = cell_index(e.op, e.bucket);
      p1.all[c].add(e.duration_ticks);
      p1.raw.add(e.duration_ticks);
      // Alone: no other thread inside at any moment of the call.  A call that merely started
      // alone may still pay for a thread arriving meanwhile (a futex wake on unlock).
      if (it.inside == 0 && it.contended_ticks == 0) p1.alone[c].add(e.duration_ticks);
      // A call whose switches are known (the rusage probe's, or a slow one's) is evidence for its
      // latency bin: the calls of that bin without any then wait as these did.
      const double d = static_cast<double>(e.duration_ticks);
      if (const std::optional<double> wait = known_wait(e, d, 0, ticks_per_us0, block_ticks0)) {
        EvidenceBin& bin = p1.evidence[latency_bin_of(e.duration_ticks)];
        ++bin.samples;
        bin.ticks += d;
        bin.blocked += e.nvcsw > 0;
        bin.wait_ticks += *wait;
      }
    }
  });
  LoadOptions load1;
  read_timed_calls(load1, [&](const format::EventsHeader& header, std::span<const format::Event> events) {
    ++p1.event_chunks;
    p1.sizes.add(events);
    sweep1.add(header.thread_serial, events);
  });
  Profile profile = load_profile(path, load1);
  sweep1.finish();
  p1.sweep = sweep1.totals();
  return profile;
}

}  // namespace allocscope::cost
