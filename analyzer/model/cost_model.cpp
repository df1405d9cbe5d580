// The cost model of `allocscope report` (see cost_model.h and docs/analysis.md).
#include "model/cost_model.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <numeric>
#include <variant>

#include "allocscope/buckets.h"
#include "model/class_tables.h"
#include "model/completion_coincidence.h"
#include "util/fine_histogram.h"
#include "profile/format_names.h"
#include "profile/peek.h"
#include "profile/profile.h"
#include "util/largest_remainder.h"
#include "model/release_classes.h"
#include "profile/thread_profile.h"
#include "model/timeline.h"
#include "profile/trace_decode.h"
#include "util/units.h"
#include "model/sleep_pairs.h"
#include "model/window_sweep.h"

namespace allocscope {

namespace {

constexpr unsigned kBucketSlots = 256;        // size buckets and kBucketUnknown
constexpr double kBaselineQuantile = 0.99;    // the uncontended cost: mean of calls made alone, top 1 % left out
constexpr double kFallbackQuantile = 0.10;    // without calls made alone: the cell's 10th percentile
constexpr double kOverheadQuantile = 0.001;   // the probe overhead can't exceed the fastest calls
constexpr uint64_t kMinAlone = 20;            // calls made alone for a cell's own baseline
constexpr uint64_t kMinEvidence = 16;         // rusage samples for a latency bin's waiting share
constexpr uint64_t kMinContended = 20;        // calls meeting another thread, for a serialization index
constexpr unsigned kInsideRows = 64;          // by_inside rows; more threads inside are folded into the last
constexpr double kBusyThreadShare = 0.01;     // threads with at least this share of the calls are "busy"
constexpr double kPreemptedSeconds = 100e-6;  // a call this long that did not block was descheduled
constexpr double kCoincidenceNearSeconds = 20e-9;  // least width of the near zone of the ends' measure
constexpr uint64_t kMinTimedForBound = 5;     // timed calls a cell needs before its spread bounds anything
constexpr size_t kMinWindowsForBound = 5;     // timing windows a sampled run needs for an error bound

size_t cell_index(unsigned op, unsigned bucket) { return op * kBucketSlots + bucket; }

bool rusage_known(uint64_t v) { return v != kRusageUnavailable; }

// Timed calls of a FineHistogram (ticks) in LatencyBins: a quarter of a power of two of ns wide,
// calls under 1 ns in the first bin, from 0.  Each fine bin goes whole to the bin of its value.
template <class ToNs>
std::vector<LatencyBin> latency_bins(const FineHistogram& h, ToNs to_ns) {
  std::map<int, uint64_t> counts;  // bin k: [2^(k/4), 2^((k+1)/4)) ns; k = -1: [0, 1) ns
  const auto& fine = h.counts();
  for (unsigned i = 0; i < fine.size(); ++i) {
    if (fine[i] == 0) continue;
    const double ns = to_ns(std::min(FineHistogram::mid_of(i), static_cast<double>(h.max())));
    const int k = ns < 1 ? -1 : static_cast<int>(std::floor(4 * std::log2(ns)));
    counts[k] += fine[i];
  }
  std::vector<LatencyBin> bins;
  for (const auto& [k, calls] : counts) {
    LatencyBin b;
    b.lo_ns = k < 0 ? 0 : std::exp2(k / 4.0);
    b.hi_ns = std::exp2((k + 1) / 4.0);
    b.calls = calls;
    bins.push_back(b);
  }
  return bins;
}

// ---- pass 1 ----

struct EvidenceBin {
  uint64_t samples = 0;   // rusage-sampled calls in this latency bin
  uint64_t blocked = 0;   // … with a voluntary context switch
  double ticks = 0;       // their durations
  double wait_ticks = 0;  // their off-CPU time, blocked calls only
};

struct Pass1 {
  std::vector<FineHistogram> alone = std::vector<FineHistogram>(kOpSlots * kBucketSlots);
  std::vector<FineHistogram> all = std::vector<FineHistogram>(kOpSlots * kBucketSlots);
  FineHistogram raw;
  std::array<EvidenceBin, kLatencyBins> evidence{};
  EventSizes sizes;
  uint64_t event_chunks = 0;
  SweepTotals sweep;
};

// A slow call whose context switches are known: one the shim read them for (kEvSwitches), or one
// of the rusage probe's that lasted kSwitchSlowNs or longer.
bool switches_known_slow(const format::Event& e, uint64_t slow_ticks) {
  if (e.flags & format::kEvSwitches) return true;
  return (e.flags & format::kEvRusage) && e.duration_ticks >= slow_ticks;
}

// What a blocking wait costs at least, in ticks: a FUTEX_WAIT, the wake-up and two context
// switches (the probe costs of the calibration; 1 µs without one).
double block_threshold_ticks(const std::optional<format::Calibration>& cal, double ticks_per_us) {
  if (!cal) return ticks_per_us;
  return static_cast<double>(cal->futex_wait_ticks + cal->futex_wake_ticks + 2 * cal->syscall_ticks);
}

// The wait of a call whose context switches are known, in ticks (null: not known).  One that did
// not sleep (no voluntary switch) waited 0.  One of the rusage probe's that slept waited its
// off-CPU time; a slow one whose switches the shim read (kEvSwitches, no CPU time) waited beyond
// its uncontended cost `base` and the cost of blocking itself `block`.
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

// ---- the model's parameters, learned in pass 1 ----

struct Model {
  double overhead = 0;                      // ticks taken from every duration
  std::vector<double> baseline;             // per cell_index: uncontended cost, corrected ticks
  std::vector<uint8_t> baseline_alone;      // 1: from calls made alone
  std::array<double, kLatencyBins> wait_share{};    // < 0: no evidence for that bin
  std::array<double, kLatencyBins> blocked_share{};
  double block_threshold = 0;               // corrected ticks
  double ticks_per_us = 1000;
};

double shifted(uint64_t raw, double overhead) {
  const double d = static_cast<double>(raw) - overhead;
  return d > 0 ? d : 0;
}

Model learn(const Pass1& p1, const Profile& profile, const std::optional<format::Calibration>& cal) {
  Model m;
  m.ticks_per_us = profile.clock.hz() / 1e6;

  // Probe overhead: the calibration's clock-read cost, but never more than the fastest calls.
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
  m.overhead = overhead;

  // Uncontended cost per (op, bucket).
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

  // Waiting share per latency bin, where rusage samples are enough (pooling neighbours if needed).
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

  m.block_threshold = block_threshold_ticks(cal, m.ticks_per_us);
  return m;
}

// Per thread and latency bin: the share of calls without rusage evidence taken as blocked.  A
// thread can't have blocked more often than its voluntary context switches; those are given to
// its longest calls first (a blocking wait is a sleep until a wake-up), down to the threshold.
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

// ---- pass 2 ----

struct RowAcc {
  uint64_t n = 0;
  double d = 0, wait = 0, base = 0;  // corrected ticks
  void add(const RowAcc& o) {
    n += o.n;
    d += o.d;
    wait += o.wait;
    base += o.base;
  }
};

struct ThreadAcc {
  std::vector<RowAcc> rows;  // [class * kOpSlots + op]
  uint64_t classified = 0, contended = 0;
  RowAcc& row(size_t cls, unsigned op) {
    const size_t i = cls * kOpSlots + op;
    if (i >= rows.size()) rows.resize(i + 1);
    return rows[i];
  }
};

// The timed calls of each timing window, per (class, op) cell: the windows are the sampling units
// of the error bound (calls of one window are timed together, so they are not independent
// draws).  At most kMaxClusters clusters are kept: when full, neighbouring clusters merge
// pairwise and each later cluster gathers twice as many windows (memory stays bounded; a
// cluster of neighbouring windows is still a valid sampling unit, and a more cautious one).
class WindowClusters {
 public:
  static constexpr size_t kMaxClusters = 4096;
  struct Sum {
    double ticks = 0;  // corrected
    double wait = 0;   // of which waiting
    double base = 0;   // the calls' uncontended cost
    uint64_t calls = 0;
  };
  using Cluster = std::vector<std::pair<uint32_t, Sum>>;  // (cell, sum), cells unsorted

  void begin_window() {
    ++windows_;
    if (clusters_.empty() || in_last_ >= per_cluster_) {
      if (clusters_.size() == kMaxClusters) merge_pairs();
      // The last cluster's index is cleared entry by entry (it holds few cells).
      if (!clusters_.empty()) {
        for (const auto& [cell, sum] : clusters_.back()) index_[cell] = -1;
      }
      clusters_.emplace_back();
      in_last_ = 0;
    }
    ++in_last_;
  }
  void add(uint32_t cell, double ticks, double wait, double base) {
    if (clusters_.empty()) begin_window();
    Cluster& c = clusters_.back();
    if (cell >= index_.size()) index_.resize(cell + 1, -1);
    if (index_[cell] < 0) {
      index_[cell] = static_cast<int32_t>(c.size());
      c.emplace_back(cell, Sum{});
    }
    Sum& s = c[static_cast<size_t>(index_[cell])].second;
    s.ticks += ticks;
    s.wait += wait;
    s.base += base;
    ++s.calls;
  }
  const std::vector<Cluster>& clusters() const { return clusters_; }
  uint64_t windows() const { return windows_; }

 private:
  void merge_pairs() {
    std::vector<Cluster> merged;
    for (size_t i = 0; i < clusters_.size(); i += 2) {
      Cluster c = std::move(clusters_[i]);
      if (i + 1 < clusters_.size()) {
        for (const auto& entry : clusters_[i + 1]) {
          const uint32_t cell = entry.first;
          const Sum& sum = entry.second;
          auto it = std::find_if(c.begin(), c.end(), [cell](const auto& e) { return e.first == cell; });
          if (it == c.end()) {
            c.emplace_back(cell, sum);
          } else {
            it->second.ticks += sum.ticks;
            it->second.wait += sum.wait;
            it->second.base += sum.base;
            it->second.calls += sum.calls;
          }
        }
      }
      merged.push_back(std::move(c));
    }
    clusters_ = std::move(merged);
    per_cluster_ *= 2;
    // begin_window() starts a new cluster next: no cell of the merged ones is current.
    std::fill(index_.begin(), index_.end(), -1);
  }
  std::vector<Cluster> clusters_;
  std::vector<int32_t> index_;  // cell -> its entry in the last cluster, or -1
  uint64_t per_cluster_ = 1, in_last_ = 0, windows_ = 0;
};

struct Pass2 {
  std::vector<ThreadAcc> threads;
  WindowClusters clusters;              // by (class, op) of the allocator's table
  std::vector<FineHistogram> by_class;  // corrected ticks
  std::array<FineHistogram, kInsideRows> by_inside;
  double si_progress = 0;      // raw ticks of progress made while 2+ threads were inside
  double si_time = 0;          // raw ticks with 2+ threads inside (windows counted for the index)
  uint64_t si_calls = 0;       // calls that were inside with another thread at some point
  uint64_t si_excluded_windows = 0;  // contended windows left out: a call in them was descheduled
  uint64_t contended = 0, classified = 0;
  ExclusionTally exclusion;    // timed durations by class, met or alone at their start
  uint64_t rusage_samples = 0, rusage_blocked = 0, rusage_preempted = 0;
  uint64_t slow_switched = 0, slow_slept = 0, slow_preempted = 0;  // slow calls with known switches
  SleepPairsMeasure sleep_pairs;  // whom the calls that slept waited behind (sleep_pairs.h)
  SweepTotals sweep;
};


// Mean and variance of corrected durations from a latency histogram (bin middles).
struct Moments {
  double n = 0, mean = 0, var = 0;
};

Moments histogram_moments(const std::map<uint16_t, uint64_t>& latency, uint64_t max_ticks, double overhead) {
  Moments m;
  double sum = 0, sum2 = 0;
  for (const auto& [bin, count] : latency) {
    if (bin >= kLatencyBins || count == 0) continue;
    const double hi = bin + 1u == kLatencyBins ? static_cast<double>(max_ticks) : static_cast<double>(bucket_hi(bin));
    double mid = (static_cast<double>(bucket_lo(bin)) + hi) / 2;
    if (max_ticks) mid = std::min(mid, static_cast<double>(max_ticks));
    const double v = std::max(0.0, mid - overhead);
    const double n = static_cast<double>(count);
    m.n += n;
    sum += n * v;
    sum2 += n * v * v;
  }
  if (m.n > 0) m.mean = sum / m.n;
  if (m.n > 1) m.var = std::max(0.0, (sum2 - m.n * m.mean * m.mean) / (m.n - 1));
  return m;
}

struct ClassKeyOp {
  uint32_t cls;
  unsigned op;
  auto operator<=>(const ClassKeyOp&) const = default;
};

struct ThreadCell {
  Counters counters;
  std::map<uint16_t, uint64_t> latency;
};

// Shares of a call's time: fast path, slow but running, waiting.
struct Fractions {
  double fast = 1, slow = 0, wait = 0;
};

// From the corrected sums of a set of timed calls: waiting as measured; fast is the calls'
// uncontended cost, up to what they spent running; slow is the rest of the running time.
Fractions fractions_of(const RowAcc& acc) {
  Fractions f;
  if (acc.n == 0 || acc.d <= 0) return f;
  f.wait = std::clamp(acc.wait / acc.d, 0.0, 1.0);
  const double run = acc.d - acc.wait;
  f.fast = std::clamp(std::min(run, acc.base) / acc.d, 0.0, 1.0 - f.wait);
  f.slow = std::max(0.0, 1.0 - f.fast - f.wait);
  return f;
}

Fractions blend(const Fractions& own, const Fractions& pooled, double w) {
  return {w * own.fast + (1 - w) * pooled.fast, w * own.slow + (1 - w) * pooled.slow,
          w * own.wait + (1 - w) * pooled.wait};
}

struct PooledCell {
  Counters counters;
  std::map<uint16_t, uint64_t> latency;
  RowAcc acc;
  double mean = 0;  // corrected ticks per call
  double var = 0;   // of a call's duration
  double se2 = 0;   // of the mean
  Fractions fractions;
};

// Variance of the mean of `timed` calls drawn from `calls` (finite population: 0 when all timed).
double sampling_variance(double var, uint64_t timed, uint64_t calls) {
  if (calls == 0) return 0;
  const double n = static_cast<double>(std::max<uint64_t>(std::min(timed, calls), 1));
  const double fpc = std::max(0.0, 1.0 - static_cast<double>(std::min(timed, calls)) / static_cast<double>(calls));
  return var / n * fpc;
}

Verdict make_verdict(const CostReport& r) {
  Verdict v;
  const double total = r.split.total();
  if (r.calls > 0 && r.timed == 0 && r.sample_every > 1) {
    v.dominant = "unsure";
    v.kind = VerdictKind::NoCallTimed;
    return v;
  }
  if (r.calls == 0 || total <= 0) {
    v.dominant = "none";
    v.kind = r.calls == 0 ? VerdictKind::NoCalls : r.sample_every == 0 ? VerdictKind::NotSampling : VerdictKind::NoneTimed;
    return v;
  }
  // The dominant cost is claimed only when its share beats the runner-up by more than both bounds.
  const double fs = r.split.fast_ns / total, ss = r.split.slow_ns / total, ws = r.split.wait_ns / total;
  bool shares_sure = r.error.sampled_fraction >= 1;
  if (!shares_sure && r.error.wait_share_bound && r.error.fast_share_bound) {
    const double bw = *r.error.wait_share_bound, bf = *r.error.fast_share_bound, bs = std::hypot(bw, bf);
    const std::pair<double, double> parts[] = {{ws, bw}, {ss, bs}, {fs, bf}};
    const auto top = std::max_element(std::begin(parts), std::end(parts));
    shares_sure = true;
    for (const auto& p : parts) {
      if (&p != top && top->first - p.first <= top->second + p.second) shares_sure = false;
    }
  }
  if (!shares_sure) {
    // No claim rests on an unsure figure.  The contention verdict rests on figures of its own (and
    // says when they are too few), so it stays.
    v.dominant = "unsure";
    v.kind = VerdictKind::SharesUnsure;
    return v;
  }
  const Contention& c = r.contention;
  // How much slower calls were with another thread inside than alone.
  if (c.by_inside.size() >= 2 && c.by_inside[0].inside == 1) {
    double calls = 0, sum = 0;
    for (size_t i = 1; i < c.by_inside.size(); ++i) {
      calls += static_cast<double>(c.by_inside[i].calls);
      sum += static_cast<double>(c.by_inside[i].calls) * c.by_inside[i].mean_ns;
    }
    if (calls >= static_cast<double>(kMinContended) && c.by_inside[0].mean_ns > 0) v.slowdown = sum / calls / c.by_inside[0].mean_ns;
  }
  const double fast = r.split.fast_ns / total, slow = r.split.slow_ns / total, wait = r.split.wait_ns / total;
  if (wait >= fast && wait >= slow) {
    v.dominant = "waiting";
    v.kind = VerdictKind::Waiting;
  } else if (slow >= fast) {
    v.dominant = "slow";
    v.kind = VerdictKind::Slow;
  } else {
    v.dominant = "fast";
    v.kind = VerdictKind::Fast;
  }
  return v;
}

}  // namespace

const char* grouping_name(ReportGrouping by) {
  switch (by) {
    case ReportGrouping::Class: return "class";
    case ReportGrouping::Bucket: return "bucket";
    case ReportGrouping::Thread: return "thread";
    case ReportGrouping::Shape: return "shape";
    case ReportGrouping::Callsite: return "callsite";
  }
  return "class";
}

namespace {

// ---- pass 1: the profile, and what its timed calls say about the allocator alone ----

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

// The classes the estimate is made on (the allocator's own, whatever the grouping, so that every
// view of a profile rests on one estimate), and those the report shows: `--by bucket` shows the
// estimate apportioned to allocscope's buckets.
struct ClassGrid {
  ClassGrid(const ClassTable& estimate, const ClassTable& display)
      : table(&estimate), disp_table(&display), regrid(&display != &estimate), classes(estimate.classes()),
        disp_classes(display.classes()), class_of(estimate), disp_class_of(display) {}
  const ClassTable* table;
  const ClassTable* disp_table;
  bool regrid;
  std::span<const SizeClass> classes, disp_classes;
  ClassLookup class_of, disp_class_of;
};

ClassGrid class_grid(const Profile& profile, ReportGrouping by) {
  const ClassTable* table = nullptr;
  if (profile.process) {
    table = class_table_for(profile.process->allocator, static_cast<format::Libc>(profile.process->info.libc));
  }
  if (!table) table = &bucket_class_table();
  return ClassGrid(*table, by == ReportGrouping::Bucket ? bucket_class_table() : *table);
}

// ---- pass 2: every timed call again, corrected by the model ----

// Each timed call's wait and uncontended cost by the model (phi: each thread's share of blocking
// calls by latency bin), added up per thread and class in `p2`, into the timeline and into the
// completion coincidences; the serialization index's progress over the contended windows.
void pass2(const std::filesystem::path& path, const Profile& profile, const Pass1& p1, const Model& model,
           const std::vector<std::vector<double>>& phi, const ClassGrid& grid, const SweepConfig& sweep_config,
           Pass2& p2, TimelineBuilder& timeline, CoincidenceTally& coincidence) {
  const auto classes = grid.classes;
  const auto disp_classes = grid.disp_classes;
  const ClassLookup& class_of = grid.class_of;
  const ClassLookup& disp_class_of = grid.disp_class_of;
  const bool regrid = grid.regrid;
  // Threads, by serial.
  std::vector<int32_t> thread_of_serial;
  for (size_t i = 0; i < profile.threads.size(); ++i) {
    const uint32_t serial = profile.threads[i].serial;
    if (serial >= thread_of_serial.size()) thread_of_serial.resize(serial + 1, -1);
    thread_of_serial[serial] = static_cast<int32_t>(i);
  }
  p2.threads.resize(profile.threads.size());
  // A call this long that did not block was descheduled (preempted, or its CPU taken by the
  // hypervisor): the windows it spans say more about the machine's load than about the allocator,
  // and are left out of the serialization index.
  const double preempted_ticks = profile.clock.hz() * kPreemptedSeconds;
  const uint64_t switch_slow_ticks = static_cast<uint64_t>(std::llround(profile.clock.hz() * 1e-9 * format::kSwitchSlowNs));
  uint64_t excluded_until = 0;
  std::vector<double> waits;
  std::vector<CallEnd> ends;
  std::vector<ThreadSpan> span_of_serial(thread_of_serial.size());
  uint64_t all_calls = 0;
  for (const ThreadProfile& t : profile.threads) all_calls += t.total().calls;
  for (const ThreadProfile& t : profile.threads) {
    const uint64_t calls = t.total().calls;
    span_of_serial[t.serial] = ThreadSpan{t.first_tick, t.last_tick,
                                          calls > 0 && static_cast<double>(calls) >= kBusyThreadShare * static_cast<double>(all_calls)};
  }
  SleepPairTally sleep_pairs(std::move(span_of_serial));
  std::vector<uint8_t> slept;
  WindowSweep sweep2(sweep_config, [&](std::span<const SweepItem> items, const WindowInfo& info) {
    timeline.add_window(info);
    ends.clear();
    if (!info.late) p2.clusters.begin_window();
    waits.assign(items.size(), 0.0);
    slept.assign(items.size(), 0);
    bool preempted = false;
    double window_progress = 0;
    for (size_t i = 0; i < items.size(); ++i) {
      const SweepItem& it = items[i];
      const format::Event& e = it.event;
      if (e.op >= kOpSlots || it.thread >= thread_of_serial.size()) continue;
      const int32_t ti = thread_of_serial[it.thread];
      if (ti < 0) continue;
      const double raw = static_cast<double>(e.duration_ticks);
      const double d = raw > model.overhead ? raw - model.overhead : 0.0;
      const double base = model.baseline[cell_index(e.op, e.bucket)];
      double wait;
      if (const std::optional<double> known = known_wait(e, d, base, model.ticks_per_us, model.block_threshold)) {
        wait = *known;
      } else {
        const unsigned bin = latency_bin_of(e.duration_ticks);
        const double share = model.wait_share[bin];
        if (share >= 0) {
          wait = share * d;
        } else {
          const double p = phi[static_cast<size_t>(ti)][bin];
          wait = p > 0 ? p * std::max(0.0, d - base - model.block_threshold) : 0.0;
        }
      }
      waits[i] = wait;
      timeline.add_call(static_cast<size_t>(ti), e, d, wait);
      if (raw >= preempted_ticks && wait < 0.5 * d) {
        preempted = true;
        excluded_until = std::max(excluded_until, e.start_tick + e.duration_ticks);
      }
      uint64_t size = e.size;
      if (e.size == 0xffffffffu && e.bucket < kSizeBuckets) size = std::max<uint64_t>(size, bucket_lo(e.bucket));
      const size_t cls = e.bucket == kBucketUnknown ? classes.size() : class_of(size);
      ThreadAcc& acc = p2.threads[static_cast<size_t>(ti)];
      RowAcc& row = acc.row(cls, e.op);
      ++row.n;
      row.d += d;
      row.wait += wait;
      row.base += base;
      p2.clusters.add(static_cast<uint32_t>(cls * kOpSlots + e.op), d, wait, std::min(base, d));
      const size_t dcls = !regrid ? cls : e.bucket == kBucketUnknown ? disp_classes.size() : disp_class_of(size);
      if (dcls >= p2.by_class.size()) p2.by_class.resize(dcls + 1);
      p2.by_class[dcls].add(e.duration_ticks);  // latency as measured, probe included
      if (e.flags & format::kEvRusage) {
        ++p2.rusage_samples;
        p2.rusage_blocked += e.nvcsw > 0;
        p2.rusage_preempted += e.nivcsw > 0;
      }
      if (switches_known_slow(e, switch_slow_ticks)) {
        ++p2.slow_switched;
        p2.slow_slept += e.nvcsw > 0;
        p2.slow_preempted += e.nvcsw == 0 && e.nivcsw > 0;
        slept[i] = e.nvcsw > 0;
      }
      if (it.inside >= 0) {
        ends.push_back(CallEnd{e.start_tick + e.duration_ticks, it.thread,
                               e.bucket == kBucketUnknown ? kUnknownGroup : size_group(size)});
      }
      if (it.inside >= 0 && e.op != static_cast<uint8_t>(Op::MallocUsableSize)) {
        const CallGroup group = releases(e.op) ? CallGroup::Freeing : CallGroup::Allocating;
        p2.exclusion.add(group, cls, static_cast<uint32_t>(it.inside),
                         static_cast<uint32_t>(std::max(0, it.inside_allocating)),
                         static_cast<uint32_t>(std::max(0, it.inside_running)),
                         static_cast<uint32_t>(std::max(0, it.inside_near_size)), e.duration_ticks);
      }
      if (it.inside >= 0) {
        ++acc.classified;
        ++p2.classified;
        const unsigned k = std::min<unsigned>(static_cast<unsigned>(it.inside), kInsideRows - 1);
        p2.by_inside[k].add(e.duration_ticks);
        if (it.inside >= 1) {
          ++acc.contended;
          ++p2.contended;
        }
      }
      if (it.contended_ticks > 0) {
        // The call progresses at min(1, uncontended cost / duration), uniformly over its length.
        const double rate = raw > 0 ? std::min(1.0, (base + model.overhead) / raw) : 1.0;
        window_progress += rate * static_cast<double>(it.contended_ticks);
      }
    }
    if (!info.late) sleep_pairs.add_window(items, slept, info.start + sweep_config.trim);
    if (info.late || info.contended_ticks == 0) return;
    if (!info.late) coincidence.add_window(ends, info.start + sweep_config.trim, info.start + sweep_config.window_len);
    if (preempted || info.start < excluded_until) {
      ++p2.si_excluded_windows;
      return;
    }
    p2.si_progress += window_progress;
    p2.si_time += static_cast<double>(info.contended_ticks);
    for (const SweepItem& it : items) p2.si_calls += it.contended_ticks > 0;
  });
  uint64_t chunks_seen = 0;
  LoadOptions load2;
  load2.warn = [](std::string_view) {};
  read_timed_calls(load2, [&](const format::EventsHeader& header, std::span<const format::Event> events) {
    if (++chunks_seen > p1.event_chunks) return;  // the file grew since pass 1
    sweep2.add(header.thread_serial, events);
  });
  (void)load_profile(path, load2);
  sweep2.finish();
  p2.sweep = sweep2.totals();
  p2.sleep_pairs = sleep_pairs.measure();
}

// ---- contention and notes, from the estimate and the passes ----

// The threads meeting inside the allocator: shares, the serialization index, latency by threads
// inside, and the contention verdict on that evidence (contention_verdict.h).
void measure_contention(CostReport& r, const Pass2& p2, const CoincidenceTally& coincidence, const Profile& profile) {
  auto to_ns = [&](double ticks) { return profile.clock.to_ns_exact(ticks); };
  Contention& c = r.contention;
  c.wait_share = r.allocator_time_ns > 0 ? r.split.wait_ns / r.allocator_time_ns : 0;
  c.classified = p2.classified;
  c.contended = p2.contended;
  c.contended_share = c.classified ? static_cast<double>(c.contended) / static_cast<double>(c.classified) : 0;
  const uint64_t contended_ticks = p2.sweep.contended_ticks();
  c.contended_time_share = p2.sweep.busy_ticks() ? static_cast<double>(contended_ticks) / static_cast<double>(p2.sweep.busy_ticks()) : 0;
  c.si_calls = p2.si_calls;
  if (p2.si_calls >= kMinContended && p2.si_time > 0) c.serialization_index = p2.si_progress / p2.si_time;
  c.si_excluded_windows = p2.si_excluded_windows;
  if (p2.sweep.busy_ticks() > 0) {
    c.occupancy = p2.sweep.inside_ticks() / static_cast<double>(p2.sweep.busy_ticks());
  }
  c.max_inside = p2.sweep.max_inside;
  for (const auto& t : r.threads_rows) {
    if (t.calls > 0 && static_cast<double>(t.calls) >= kBusyThreadShare * static_cast<double>(r.calls)) ++c.busy_threads;
  }
  const double alone_mean = p2.by_inside[0].empty() ? 0 : p2.by_inside[0].mean();
  for (unsigned k = 0; k < kInsideRows; ++k) {
    const FineHistogram& h = p2.by_inside[k];
    if (h.empty()) continue;
    InsideRow row;
    row.inside = k + 1;
    row.calls = h.total();
    row.mean_ns = to_ns(h.mean());
    row.p50_ns = to_ns(static_cast<double>(h.quantile(0.5)));
    row.p99_ns = to_ns(static_cast<double>(h.quantile(0.99)));
    if (alone_mean > 0) row.vs_alone = h.mean() / alone_mean;
    c.by_inside.push_back(row);
  }

  ContentionInputs evidence;
  evidence.allocating = measure_exclusion(p2.exclusion.cells(CallGroup::Allocating));
  evidence.freeing = measure_exclusion(p2.exclusion.cells(CallGroup::Freeing));
  evidence.ends = coincidence.all();
  evidence.ends_across = coincidence.across_classes();
  evidence.ends_near_ns = to_ns(static_cast<double>(coincidence.near_ticks()));
  evidence.busy_threads = c.busy_threads;
  evidence.timed = r.timed;
  evidence.rusage_samples = p2.rusage_samples;
  evidence.rusage_blocked = p2.rusage_blocked;
  evidence.rusage_preempted = p2.rusage_preempted;
  evidence.slow_switched = p2.slow_switched;
  evidence.slow_slept = p2.slow_slept;
  evidence.slow_preempted = p2.slow_preempted;
  evidence.sleep_pairs = p2.sleep_pairs;
  evidence.switches_recorded =
      profile.calibration && (profile.calibration->mode_flags & format::kModeSwitches) != 0;
  if (profile.process) {
    const auto& info = profile.process->info;
    evidence.cpus = info.cpus_allowed ? info.cpus_allowed : info.cpus_online;
  }
  evidence.max_live_threads = profile.end ? profile.end->max_live_threads : static_cast<uint32_t>(profile.threads.size());
  evidence.wall_seconds = r.wall_ns ? *r.wall_ns / 1e9 : 0;
  c.verdict = judge_contention(evidence);
}

// What the report says about the model and the data: its constants, what was read, and caveats.
void note_model(ModelNotes& notes, const CostReport& r, const Profile& profile, const Pass1& p1, const Pass2& p2,
                const Model& model, const ReleaseTotals& release_totals, const SweepConfig& sweep_config) {
  auto to_ns = [&](double ticks) { return profile.clock.to_ns_exact(ticks); };
  notes.probe_overhead_ns = to_ns(model.overhead);
  notes.blocks_made = release_totals.blocks_made;
  notes.blocks_released = release_totals.releases;
  notes.unreleased_blocks = release_totals.unreleased();
  notes.window_trim_ns = to_ns(static_cast<double>(sweep_config.trim));
  notes.block_threshold_ns = to_ns(model.block_threshold);
  notes.events = profile.events_read;
  notes.events_dropped = profile.events_dropped();
  notes.late_events = p2.sweep.late_events;
  notes.windows = p2.sweep.windows;
  for (const EvidenceBin& e : p1.evidence) {
    notes.rusage_samples += e.samples;
    notes.rusage_blocked += e.blocked;
  }
  for (unsigned b = 0; b < kLatencyBins; ++b) notes.evidence_bins += model.wait_share[b] >= 0;
  if (!r.complete) notes.caveats.push_back("the profile has no end record: the program crashed, was killed or is still running");
  if (profile.truncated()) notes.caveats.push_back("the profile is cut short; its last chunks are missing");
  if (notes.events_dropped) {
    notes.caveats.push_back(fmt::format("{} timed-call events were dropped; latency counts still include them",
                                        notes.events_dropped));
  }
  if (notes.late_events) {
    notes.caveats.push_back(fmt::format("{} events arrived too late to place on the time line; their concurrency is unknown",
                                        notes.late_events));
  }
  if (notes.capped_threads) {
    notes.caveats.push_back(fmt::format("{} thread(s) had an estimate longer than their lifetime (rare very long calls); "
                                        "scaled down to it", notes.capped_threads));
  }
  if (r.sample_every == 0 && r.calls) notes.caveats.push_back("calls were counted but none timed (--sample 0)");
  // What the shim said about calls it could not see (an allocator entry point defined ahead of it).
  for (std::string_view note : profile.notes) {
    for (size_t end; !note.empty(); note.remove_prefix(end + (end < note.size()))) {
      end = std::min(note.find('\n'), note.size());
      std::string_view line = note.substr(0, end);
      if (line.starts_with("allocscope: ")) line.remove_prefix(12);
      if (!line.empty()) notes.caveats.emplace_back(line);
    }
  }
}

// ---- the estimate: every call, per thread and class ----

// Each thread's (class, op) cells.  Releases (free, delete, delete[]) count in the classes of
// the blocks they give back (release_classes.h); only in a profile without any allocating call
// are frees whose size was not taken apportioned to the classes of the thread's timed frees
// (else the process's), in proportion.
std::vector<std::map<ClassKeyOp, ThreadCell>> thread_class_cells(const Profile& profile, const ClassTable& table,
                                                                 const EventSizes& sizes, ReleaseTotals& release_totals) {
  const auto classes = table.classes();
  const size_t unknown_class = classes.size();
  const size_t n_threads = profile.threads.size();
  auto slot_of = [&](uint32_t cls) { return cls == kNoClass ? unknown_class : static_cast<size_t>(cls); };
  std::vector<ClassCellMap> split(n_threads);
  for (size_t ti = 0; ti < n_threads; ++ti) split[ti] = split_cells(profile.threads[ti].cells, table, &sizes);
  std::vector<const CellMap*> thread_cells(n_threads);
  for (size_t ti = 0; ti < n_threads; ++ti) thread_cells[ti] = &profile.threads[ti].cells;
  release_totals = attribute_releases(split, thread_cells, table);
  std::vector<std::map<ClassKeyOp, ThreadCell>> cells(n_threads);
  std::map<ClassKeyOp, Cell> pooled;  // over threads, before apportioning (weights of last resort)
  for (size_t ti = 0; ti < n_threads; ++ti) {
    for (const auto& [key, cell] : split[ti]) {
      const ClassKeyOp k{static_cast<uint32_t>(slot_of(key.cls)), key.op};
      ThreadCell& tc = cells[ti][k];
      tc.counters.add(cell.counters);
      for (const auto& [bin, count] : cell.latency) tc.latency[bin] += count;
      Cell& pc = pooled[k];
      pc.counters.add(cell.counters);
    }
  }
  for (size_t ti = 0; ti < n_threads; ++ti) {
    auto& mine = cells[ti];
    for (unsigned op = 0; op < kOpSlots; ++op) {
      const auto unknown = mine.find({static_cast<uint32_t>(unknown_class), op});
      if (unknown == mine.end() || unknown->second.counters.calls == 0) continue;
      std::vector<uint64_t> weights(classes.size(), 0);
      uint64_t sum = 0;
      for (const auto& [k, tc] : mine) {
        if (k.cls != unknown_class && k.op == op) sum += (weights[k.cls] = tc.counters.timed);
      }
      if (sum == 0) {
        for (const auto& [k, pc] : pooled) {
          if (k.cls != unknown_class && k.op == op) sum += (weights[k.cls] = pc.counters.timed);
        }
      }
      if (sum == 0) continue;  // stays "size not taken"
      const auto parts = largest_remainder(unknown->second.counters.calls, weights);
      unknown->second.counters.calls = 0;
      for (size_t cls = 0; cls < parts.size(); ++cls) {
        if (parts[cls]) mine[{static_cast<uint32_t>(cls), op}].counters.calls += parts[cls];
      }
    }
  }
  return cells;
}

// Pooled cells: the process-wide estimate of each (class, op), from every thread's cells and its
// timed calls (p2).
std::map<ClassKeyOp, PooledCell> pooled_cells(const std::vector<std::map<ClassKeyOp, ThreadCell>>& cells,
                                              const Pass2& p2, const Model& model) {
  const size_t n_threads = cells.size();
  std::map<ClassKeyOp, PooledCell> cells_all;
  std::array<Counters, kOpSlots> op_counters{};
  for (size_t ti = 0; ti < n_threads; ++ti) {
    for (const auto& [k, tc] : cells[ti]) {
      PooledCell& pc = cells_all[k];
      pc.counters.add(tc.counters);
      for (const auto& [bin, count] : tc.latency) pc.latency[bin] += count;
      op_counters[k.op].add(tc.counters);
      const size_t ai = k.cls * kOpSlots + k.op;
      const ThreadAcc& acc = p2.threads[ti];
      if (ai < acc.rows.size()) pc.acc.add(acc.rows[ai]);
    }
  }
  std::array<RowAcc, kOpSlots> op_acc{};
  for (const auto& [k, pc] : cells_all) op_acc[k.op].add(pc.acc);
  auto mean_of = [&](const Counters& c) { return std::max(0.0, static_cast<double>(c.timed_ticks) / static_cast<double>(c.timed) - model.overhead); };
  // A cell without timed calls takes the mean of the nearest classes by size that have timed
  // calls of the same operation (the one below and the one above: their midpoint), and the
  // operation's mean only when it has none (and for calls of no known size).  The operation's
  // mean leans to where the timing windows fell: a program whose sizes come in runs, in step
  // with the windows, has whole classes the windows always miss next to slow ones they always
  // catch, and would lend the slow ones' cost to every class missed.  Such a cell's error bound
  // spans both neighbours' means: the estimate says it does not know where in between it is.
  std::array<std::vector<std::pair<uint32_t, double>>, kOpSlots> timed_means;  // by class, ascending
  for (const auto& [k, pc] : cells_all) {
    if (pc.counters.timed > 0 && k.cls != kNoClass && k.op < kOpSlots)
      timed_means[k.op].emplace_back(k.cls, mean_of(pc.counters));
  }
  // (low, high) of the nearest timed classes' means, or nothing.
  auto neighbours = [&](const ClassKeyOp& k) -> std::optional<std::pair<double, double>> {
    if (k.cls == kNoClass || k.op >= kOpSlots) return std::nullopt;
    const auto& v = timed_means[k.op];
    const auto above = std::lower_bound(v.begin(), v.end(), std::make_pair(k.cls, 0.0),
                                        [](const auto& a, const auto& b) { return a.first < b.first; });
    std::optional<std::pair<double, double>> r;
    if (above != v.end()) r = std::make_pair(above->second, above->second);
    if (above != v.begin()) {
      const double m = std::prev(above)->second;
      r = r ? std::make_pair(std::min(r->first, m), std::max(r->second, m)) : std::make_pair(m, m);
    }
    return r;
  };
  Counters all_ops;
  for (const Counters& c : op_counters) all_ops.add(c);
  for (auto& [k, pc] : cells_all) {
    const Counters& c = pc.counters;
    std::optional<double> untimed_se2;
    if (c.timed > 0) {
      pc.mean = mean_of(c);
    } else if (const auto near = neighbours(k)) {
      pc.mean = (near->first + near->second) / 2;
      const double half = (near->second - near->first) / 2;  // 2·SE = half the spread
      untimed_se2 = half * half / 4;
    } else if (op_counters[k.op].timed > 0) {
      pc.mean = mean_of(op_counters[k.op]);
    } else if (all_ops.timed > 0) {
      // No call of the operation was timed anywhere: the mean of every timed call stands in (its
      // bound is the whole estimate, below), rather than a time of 0 that would look exact.
      pc.mean = mean_of(all_ops);
    }
    const Moments m = histogram_moments(pc.latency, c.max_ticks, model.overhead);
    pc.var = m.var;
    pc.se2 = untimed_se2 ? *untimed_se2 : sampling_variance(m.var, c.timed, c.calls);
    pc.fractions = fractions_of(pc.acc.n ? pc.acc : op_acc[k.op]);
  }
  return cells_all;
}

// Error bounds over the timing windows (docs/analysis.md, "Error bounds"), before the lifetime
// cap: of the total, of each class and cell, and of the waiting and fast shares.
struct ShareBounds {
  double wait = 0, fast = 0;
  bool known = false;
};

struct WindowErrors {
  double sampled = 1;      // timed calls / calls
  size_t n_clusters = 0;   // timing windows, or clusters of them
  std::map<uint32_t, size_t> cell_clusters;  // cell -> clusters holding timed calls of it
  double total_err2 = 0;
  ShareBounds share_bounds;
  std::vector<double> class_err2;  // per class slot
  std::map<ClassKeyOp, double> cell_err2;
};

WindowErrors window_errors(const Pass2& p2, const std::map<ClassKeyOp, PooledCell>& cells_all, size_t n_class_slots) {
  WindowErrors we;
  const auto& clusters = p2.clusters.clusters();
  // Releases are estimated per operation, not per class: a thread's timed releases go with its
  // calls in proportion, every class's releases costing the operation's mean (release_classes.h),
  // whatever the usable size that put a timed release in a class.  So their sampling unit is the
  // operation: one estimate cell per releasing operation (class kAllClasses), whose deviation each
  // class shares by its releases (N_c / N), as its estimate does.
  constexpr uint32_t kAllClasses = ~uint32_t{0} / kOpSlots;
  auto estimate_cell = [&](uint32_t cell) { return releases(cell % kOpSlots) ? kAllClasses * kOpSlots + cell % kOpSlots : cell; };
  std::array<double, kOpSlots> release_calls{};  // N of each releasing operation, over its classes
  for (const auto& [k, pc] : cells_all) {
    if (k.op < kOpSlots && releases(k.op)) release_calls[k.op] += static_cast<double>(pc.counters.calls);
  }
  // The (class cell, share) that an estimate cell's deviation goes to.
  std::array<std::vector<std::pair<uint32_t, double>>, kOpSlots> release_shares;
  for (const auto& [k, pc] : cells_all) {
    if (k.op < kOpSlots && releases(k.op) && release_calls[k.op] > 0 && pc.counters.calls > 0 && k.cls < n_class_slots)
      release_shares[k.op].emplace_back(k.cls * kOpSlots + k.op, static_cast<double>(pc.counters.calls) / release_calls[k.op]);
  }
  // Each cluster's sums by estimate cell (releases merged over their classes).
  std::vector<std::map<uint32_t, WindowClusters::Sum>> by_estimate(clusters.size());
  for (size_t i = 0; i < clusters.size(); ++i) {
    for (const auto& [cell, sum] : clusters[i]) {
      WindowClusters::Sum& t = by_estimate[i][estimate_cell(cell)];
      t.ticks += sum.ticks;
      t.wait += sum.wait;
      t.base += sum.base;
      t.calls += sum.calls;
    }
  }
  std::map<uint32_t, WindowClusters::Sum> cell_sums;
  std::map<uint32_t, size_t>& cell_clusters = we.cell_clusters;  // cell -> clusters holding timed calls of it
  for (const auto& cluster : by_estimate) {
    for (const auto& [cell, sum] : cluster) {
      cell_clusters[cell] += sum.calls > 0;
      cell_sums[cell].ticks += sum.ticks;
      cell_sums[cell].wait += sum.wait;
      cell_sums[cell].base += sum.base;
      cell_sums[cell].calls += sum.calls;
    }
  }
  // A class's releases were sampled in as many clusters as their operation's.
  for (unsigned op = 0; op < kOpSlots; ++op) {
    const auto held = cell_clusters.find(kAllClasses * kOpSlots + op);
    if (held == cell_clusters.end()) continue;
    for (const auto& [cell, share] : release_shares[op]) cell_clusters[cell] = held->second;
  }
  double all_calls = 0, all_timed = 0;
  for (const auto& [k, pc] : cells_all) all_calls += static_cast<double>(pc.counters.calls);
  for (const auto& [cell, sum] : cell_sums) all_timed += static_cast<double>(sum.calls);
  we.sampled = all_calls > 0 ? std::min(1.0, all_timed / all_calls) : 1.0;
  we.n_clusters = clusters.size();
  const double sampled = we.sampled;
  const size_t n_clusters = we.n_clusters;
  const double cluster_factor = n_clusters > 1 ? (1 - sampled) * static_cast<double>(n_clusters) / static_cast<double>(n_clusters - 1) : 0.0;
  std::map<uint32_t, std::pair<double, double>> cell_am;  // cell -> (N_c / n_c, m_c)
  for (const auto& [cell, sum] : cell_sums) {
    if (sum.calls == 0) continue;
    double calls = 0;
    if (cell / kOpSlots == kAllClasses) {
      calls = release_calls[cell % kOpSlots];
    } else if (const auto it = cells_all.find(ClassKeyOp{cell / kOpSlots, cell % kOpSlots}); it != cells_all.end()) {
      calls = static_cast<double>(it->second.counters.calls);
    }
    if (calls == 0) continue;
    cell_am[cell] = {calls / static_cast<double>(sum.calls), sum.ticks / static_cast<double>(sum.calls)};
  }
  double& total_err2 = we.total_err2;
  ShareBounds& share_bounds = we.share_bounds;
  std::vector<double>& class_err2 = we.class_err2;
  class_err2.assign(n_class_slots, 0.0);
  std::map<ClassKeyOp, double>& cell_err2 = we.cell_err2;
  {
    std::vector<double> z_class(n_class_slots, 0.0);
    std::vector<uint32_t> touched;
    for (const auto& cluster : by_estimate) {
      double z = 0;
      touched.clear();
      auto to_class = [&](uint32_t cell, double zc) {
        const uint32_t cls = cell / kOpSlots;
        if (cls >= n_class_slots) return;
        cell_err2[{cls, cell % kOpSlots}] += 4 * cluster_factor * zc * zc;
        if (z_class[cls] == 0) touched.push_back(cls);
        z_class[cls] += zc;
      };
      for (const auto& [cell, sum] : cluster) {
        const auto am = cell_am.find(cell);
        if (am == cell_am.end()) continue;
        const double zc = am->second.first * (sum.ticks - am->second.second * static_cast<double>(sum.calls));
        z += zc;
        if (cell / kOpSlots == kAllClasses) {
          for (const auto& [c, share] : release_shares[cell % kOpSlots]) to_class(c, zc * share);
        } else {
          to_class(cell, zc);
        }
      }
      total_err2 += 4 * cluster_factor * z * z;
      for (uint32_t cls : touched) {
        class_err2[cls] += 4 * cluster_factor * z_class[cls] * z_class[cls];
        z_class[cls] = 0;
      }
    }
  }
  // Bounds of the waiting and fast shares (ratios of estimates over the same windows, linearized:
  // z_w = (ΔX_w − s · ΔT_w) / T), on which the verdict's dominant cost rests.
  {
    double T = 0, W = 0, F = 0;
    for (const auto& [cell, sum] : cell_sums) {
      const auto am = cell_am.find(cell);
      if (am == cell_am.end()) continue;
      T += am->second.first * sum.ticks;
      W += am->second.first * sum.wait;
      F += am->second.first * sum.base;
    }
    if (T > 0 && n_clusters > 1) {
      const double sw = W / T, sf = F / T;
      double vw = 0, vf = 0;
      for (const auto& cluster : by_estimate) {
        double dt = 0, dw = 0, df = 0;
        for (const auto& [cell, sum] : cluster) {
          const auto am = cell_am.find(cell);
          if (am == cell_am.end()) continue;
          const auto& cs = cell_sums[cell];
          const double a = am->second.first, n = static_cast<double>(sum.calls), nc = static_cast<double>(cs.calls);
          dt += a * (sum.ticks - cs.ticks / nc * n);
          dw += a * (sum.wait - cs.wait / nc * n);
          df += a * (sum.base - cs.base / nc * n);
        }
        vw += std::pow((dw - sw * dt) / T, 2);
        vf += std::pow((df - sf * dt) / T, 2);
      }
      share_bounds.wait = 2 * std::sqrt(cluster_factor * vw);
      share_bounds.fast = 2 * std::sqrt(cluster_factor * vf);
      share_bounds.known = true;
    }
  }
  return we;
}

struct ThreadEst {
  double time = 0, err2 = 0;
  Fractions fractions;
};

// Per thread: its own mean where its sample says more than the spread between threads, else the
// process's (shrinkage); then every cell is scaled so that the threads add up to the process.
std::vector<std::map<ClassKeyOp, ThreadEst>> thread_estimates(const std::vector<std::map<ClassKeyOp, ThreadCell>>& cells,
                                                              const std::map<ClassKeyOp, PooledCell>& cells_all,
                                                              const Pass2& p2, const Model& model) {
  const size_t n_threads = cells.size();
  auto mean_of = [&](const Counters& c) { return std::max(0.0, static_cast<double>(c.timed_ticks) / static_cast<double>(c.timed) - model.overhead); };
  std::map<ClassKeyOp, double> tau2;  // variance of the true per-thread means, beyond sampling
  {
    std::map<ClassKeyOp, std::vector<std::pair<double, double>>> means;  // (mean, se2) per thread
    for (size_t ti = 0; ti < n_threads; ++ti) {
      for (const auto& [k, tc] : cells[ti]) {
        if (tc.counters.timed < 2) continue;
        const Moments m = histogram_moments(tc.latency, tc.counters.max_ticks, model.overhead);
        means[k].emplace_back(mean_of(tc.counters), sampling_variance(m.var, tc.counters.timed, tc.counters.calls));
      }
    }
    for (const auto& [k, v] : means) {
      if (v.size() < 2) continue;
      double mean = 0, se2 = 0;
      for (const auto& [m, s2] : v) {
        mean += m;
        se2 += s2;
      }
      mean /= static_cast<double>(v.size());
      se2 /= static_cast<double>(v.size());
      double spread = 0;
      for (const auto& [m, s2] : v) spread += (m - mean) * (m - mean);
      spread /= static_cast<double>(v.size() - 1);
      tau2[k] = std::max(0.0, spread - se2);
    }
  }
  std::vector<std::map<ClassKeyOp, ThreadEst>> est(n_threads);
  std::map<ClassKeyOp, double> est_sum;
  for (size_t ti = 0; ti < n_threads; ++ti) {
    for (const auto& [k, tc] : cells[ti]) {
      if (tc.counters.calls == 0) continue;
      const PooledCell& pc = cells_all.at(k);
      double w = 0, se2 = pc.se2;
      double own = pc.mean;
      if (tc.counters.timed > 0) {
        own = mean_of(tc.counters);
        const double var = tc.counters.timed >= 2 ? histogram_moments(tc.latency, tc.counters.max_ticks, model.overhead).var : pc.var;
        se2 = sampling_variance(var, tc.counters.timed, tc.counters.calls);
        const auto t2 = tau2.find(k);
        if (t2 == tau2.end()) {
          w = 1;  // the only thread with timed calls here: nothing to pool with
        } else {
          w = t2->second + se2 > 0 ? t2->second / (t2->second + se2) : 1;
        }
      }
      const double mean = w * own + (1 - w) * pc.mean;
      const double calls = static_cast<double>(tc.counters.calls);
      ThreadEst e;
      e.time = mean * calls;
      e.err2 = std::pow(2 * calls, 2) * (w * w * se2 + (1 - w) * (1 - w) * pc.se2);
      const size_t ai = k.cls * kOpSlots + k.op;
      const ThreadAcc& acc = p2.threads[ti];
      if (ai < acc.rows.size() && acc.rows[ai].n > 0) {
        e.fractions = blend(fractions_of(acc.rows[ai]), pc.fractions, w);
      } else {
        e.fractions = pc.fractions;
      }
      est_sum[k] += e.time;
      est[ti][k] = e;
    }
  }
  for (size_t ti = 0; ti < n_threads; ++ti) {
    for (auto& [k, e] : est[ti]) {
      const PooledCell& pc = cells_all.at(k);
      const double target = pc.mean * static_cast<double>(pc.counters.calls);
      const double sum = est_sum[k];
      if (sum > 0) e.time *= target / sum;
    }
  }
  return est;
}

}  // namespace

CostReport analyze_profile(const std::filesystem::path& path, const CostOptions& options) {
  const std::optional<format::Calibration> cal0 = read_calibration(path);
  const double hz0 = cal0 && cal0->tick_hz ? static_cast<double>(cal0->tick_hz) : 1e9;
  const SweepConfig sweep_config = cal0 ? sweep_config_for(*cal0, hz0) : SweepConfig{};
  const double ticks_per_us0 = hz0 / 1e6;

  Pass1 p1;
  const Profile profile = pass1(path, sweep_config, ticks_per_us0, block_threshold_ticks(cal0, ticks_per_us0), p1);

  const std::optional<format::Calibration>& cal = profile.calibration;
  const Model model = learn(p1, profile, cal);
  auto to_ns = [&](double ticks) { return profile.clock.to_ns_exact(ticks); };

  // The size classes: the model estimates on the allocator's own classes whatever the grouping
  // (so that every view of a profile rests on one estimate); `--by bucket` shows the estimate
  // apportioned to allocscope's buckets.
  const ClassGrid grid = class_grid(profile, options.by);
  const ClassTable* table = grid.table;
  const ClassTable* disp_table = grid.disp_table;
  const bool regrid = grid.regrid;
  const auto classes = grid.classes;
  const auto disp_classes = grid.disp_classes;

  ModelNotes notes;
  std::vector<std::vector<double>> phi;
  for (const auto& t : profile.threads) phi.push_back(fallback_blocked(t, model, notes.fallback_blocked_calls));

  Pass2 p2;
  TimelineBuilder timeline(profile, sweep_config);
  // Whether calls of different threads end at the same moments (completion_coincidence.h).
  CoincidenceTally coincidence(clock_step_of(p1.raw.counts(), p1.raw.total()),
                               static_cast<uint64_t>(std::ceil(profile.clock.hz() * kCoincidenceNearSeconds)));
  pass2(path, profile, p1, model, phi, grid, sweep_config, p2, timeline, coincidence);

  // ---- scale to all calls ----
  const size_t unknown_class = classes.size();
  const size_t n_class_slots = classes.size() + 1;
  const size_t n_threads = profile.threads.size();
  auto slot_of = [&](uint32_t cls) { return cls == kNoClass ? unknown_class : static_cast<size_t>(cls); };

  ReleaseTotals release_totals;
  std::vector<std::map<ClassKeyOp, ThreadCell>> cells = thread_class_cells(profile, *table, p1.sizes, release_totals);
  std::vector<const CellMap*> thread_cells(n_threads);
  for (size_t ti = 0; ti < n_threads; ++ti) thread_cells[ti] = &profile.threads[ti].cells;

  const std::map<ClassKeyOp, PooledCell> cells_all = pooled_cells(cells, p2, model);

  const std::vector<std::map<ClassKeyOp, ThreadEst>> est = thread_estimates(cells, cells_all, p2, model);

  CostReport r;
  r.file = profile.file;
  if (profile.process) {
    r.program = profile.process->exe;
    r.args = profile.process->args;
    r.pid = profile.process->info.pid;
    r.libc = libc_name(profile.process->info.libc);
    r.libc_version = profile.process->libc_version;
    r.allocator = profile.process->allocator;
  }
  r.class_table = std::string(disp_table->name());
  r.class_table_source = std::string(disp_table->source());
  r.by = options.by;
  r.complete = profile.complete();
  r.trace = profile.trace_mode() && !profile.trace_chunks.empty();
  if (const auto wall = profile.wall_ns()) r.wall_ns = static_cast<double>(*wall);
  r.threads = static_cast<uint32_t>(profile.threads_seen());
  r.sample_every = cal ? cal->sample_every : 0;

  // Display rows: the estimate's classes, or (--by bucket) allocscope's buckets, each estimate
  // cell apportioned to the buckets its calls fell in (by their calls).  Releases count in the
  // class of the request that made their block (release_classes.h) in the display rows too: an
  // estimate cell of releases goes to the buckets of the blocks made in its class (by the
  // operations whose blocks it gives back), in proportion, so that a thread that gives back all
  // it makes has, in every bucket, as many releases as blocks made; releases of size 0 stay in
  // the bucket of 0 B.
  const size_t disp_unknown = disp_classes.size();
  const size_t n_disp_slots = disp_classes.size() + 1;
  using DispParts = std::map<size_t, uint64_t>;  // display class -> calls
  std::vector<std::map<ClassKeyOp, DispParts>> disp_weights(regrid ? n_threads : 0);
  std::map<ClassKeyOp, DispParts> disp_pooled;
  std::vector<std::map<ClassKeyOp, DispParts>> made_weights(regrid ? n_threads : 0);  // (class, allocating op) -> blocks per bucket
  std::map<ClassKeyOp, DispParts> made_pooled;
  std::array<uint64_t, kOpSlots> made_by_op{};
  std::vector<std::array<uint64_t, kOpSlots>> zero_releases(regrid ? n_threads : 0);
  std::vector<ClassCellMap> disp_cells(regrid ? n_threads : 0);
  const size_t zero_class = slot_of(static_cast<uint32_t>(table->class_of(0)));
  const size_t disp_zero_class = static_cast<size_t>(disp_table->class_of(0));
  if (regrid) {
    for (size_t ti = 0; ti < n_threads; ++ti) {
      zero_releases[ti].fill(0);
      for (const auto& [ckey, cell] : profile.threads[ti].cells) {
        CellMap one;
        one.emplace(ckey, cell);
        const ClassCellMap in_disp = split_cells(one, *disp_table, &p1.sizes);
        if (in_disp.empty()) continue;
        const uint32_t d = in_disp.begin()->first.cls;
        const size_t dcls = d == kNoClass ? disp_unknown : static_cast<size_t>(d);
        if (releases(ckey.op) && ckey.bucket == 0) zero_releases[ti][ckey.op] += cell.counters.calls;
        for (const auto& [k, c] : split_cells(one, *table, &p1.sizes)) {
          if (c.counters.calls == 0) continue;
          const ClassKeyOp ek{static_cast<uint32_t>(slot_of(k.cls)), k.op};
          disp_weights[ti][ek][dcls] += c.counters.calls;
          disp_pooled[ek][dcls] += c.counters.calls;
          if (allocates(k.op) && k.cls != kNoClass) {
            const uint64_t made = c.counters.calls - std::min(c.counters.calls, c.counters.failed);
            if (made == 0) continue;
            made_weights[ti][ek][dcls] += made;
            made_pooled[ek][dcls] += made;
            made_by_op[k.op] += made;
          }
        }
      }
      disp_cells[ti] = split_cells(profile.threads[ti].cells, *disp_table, &p1.sizes);
    }
    (void)attribute_releases(disp_cells, thread_cells, *disp_table);  // timed releases go with their calls
  }
  // The blocks made in an estimate class, per display bucket, that releases of `rop` give back:
  // the family's (feeds_release), else (no such block in the process) every allocating operation's.
  auto made_in = [&](const std::map<ClassKeyOp, DispParts>& weights, const ClassKeyOp& k) {
    bool family = false;
    for (unsigned op = 0; op < kOpSlots; ++op) family |= feeds_release(op, k.op) && made_by_op[op] > 0;
    DispParts out;
    for (unsigned op = 0; op < kOpSlots; ++op) {
      if (!allocates(op) || (family && !feeds_release(op, k.op))) continue;
      const auto it = weights.find(ClassKeyOp{k.cls, op});
      if (it == weights.end()) continue;
      for (const auto& [d, n] : it->second) out[d] += n;
    }
    return out;
  };
  // The display rows of an estimate cell's calls in one thread: (display class, calls).
  auto targets = [&](size_t ti, const ClassKeyOp& k, uint64_t calls) {
    std::vector<std::pair<size_t, uint64_t>> out;
    if (!regrid) {
      out.emplace_back(k.cls, calls);
      return out;
    }
    const DispParts* w = nullptr;
    DispParts made;
    if (releases(k.op) && k.cls != unknown_class) {
      if (k.cls == zero_class) {
        const uint64_t zero = std::min(calls, zero_releases[ti][k.op]);
        if (zero) out.emplace_back(disp_zero_class, zero);
        calls -= zero;
        if (calls == 0) return out;
      }
      made = made_in(made_weights[ti], k);
      if (made.empty()) made = made_in(made_pooled, k);
      if (!made.empty()) w = &made;
    }
    if (!w && k.cls != unknown_class) {
      if (const auto it = disp_weights[ti].find(k); it != disp_weights[ti].end()) {
        w = &it->second;
      } else if (const auto it2 = disp_pooled.find(k); it2 != disp_pooled.end()) {
        w = &it2->second;
      }
    }
    if (!w) {
      out.emplace_back(disp_unknown, calls);
      return out;
    }
    std::vector<uint64_t> weights;
    std::vector<size_t> ids;
    for (const auto& [d, n] : *w) {
      ids.push_back(d);
      weights.push_back(n);
    }
    const auto parts = largest_remainder(calls, weights);
    for (size_t i = 0; i < ids.size(); ++i) {
      if (parts[i]) out.emplace_back(ids[i], parts[i]);
    }
    if (out.empty()) out.emplace_back(ids.front(), calls);  // a cell of no calls: its time goes with its first bucket
    return out;
  };

  std::vector<ClassRow> class_rows(n_disp_slots);
  double uncapped_ticks = 0;                                  // the estimate before the lifetime cap
  std::map<ClassKeyOp, EstimateCell> est_cells;             // corrected ticks for now
  std::map<std::pair<ClassKeyOp, size_t>, double> placed;    // ticks of an estimate cell in a display row

  for (size_t ti = 0; ti < n_threads; ++ti) {
    const ThreadProfile& t = profile.threads[ti];
    ThreadRow tr;
    tr.serial = t.serial;
    tr.tid = t.tid;
    tr.state = t.state;
    tr.lifetime_ns = to_ns(static_cast<double>(t.active_ticks()));
    tr.rusage = t.rusage;
    tr.classified = p2.threads[ti].classified;
    tr.contended = p2.threads[ti].contended;

    // Bytes, timed calls and the longest call of every display cell (a split may give a class
    // bytes but no call); snapshots see every timed call (events may have been dropped).
    auto add_display_cell = [&](size_t dcls, unsigned op, const Counters& c) {
      ClassRow& cr = class_rows[dcls];
      if (!releases(op) && op != static_cast<unsigned>(Op::MallocUsableSize)) cr.bytes += c.bytes;
      cr.timed += c.timed;
      if (c.timed > 0) {
        if (!cr.latency) cr.latency = LatencySummary{};
        cr.latency->max_ns = std::max(cr.latency->max_ns, to_ns(static_cast<double>(c.max_ticks)));
      }
    };
    if (!regrid) {
      for (const auto& [k, tc] : cells[ti]) add_display_cell(k.cls, k.op, tc.counters);
    } else {
      for (const auto& [k, c] : disp_cells[ti]) {
        const size_t dcls = k.cls == kNoClass ? disp_unknown : k.cls;
        add_display_cell(dcls, k.op, c.counters);
        // The release counts of the display rows: the release rule applied to the display
        // classes themselves, so that they depend on the requests alone, not on the allocator's
        // classes the estimate was made on (their time comes from the estimate, below).
        if (releases(k.op)) {
          class_rows[dcls].calls += c.counters.calls;
          class_rows[dcls].calls_by_op[k.op] += c.counters.calls;
        }
      }
    }

    // A thread can't be inside the allocator for longer than it lived.
    double thread_time = 0;
    for (const auto& [k, e] : est[ti]) thread_time += e.time;
    uncapped_ticks += thread_time;
    double scale = 1;
    if (tr.lifetime_ns > 0 && to_ns(thread_time) > tr.lifetime_ns) {
      scale = tr.lifetime_ns / to_ns(thread_time);
      tr.capped = true;
      ++notes.capped_threads;
    }
    double thread_err2 = 0;
    for (const auto& [k, e] : est[ti]) {
      const ThreadCell& tc = cells[ti].at(k);
      const double time = e.time * scale;
      const TimeSplit split{time * e.fractions.fast, time * e.fractions.slow, time * e.fractions.wait};
      EstimateCell& ec = est_cells[k];
      ec.calls += tc.counters.calls;
      ec.timed += tc.counters.timed;
      ec.time_ns += time;
      ec.split.add(split);
      const auto parts = targets(ti, k, tc.counters.calls);
      for (const auto& [dcls, n] : parts) {
        const double f = tc.counters.calls ? static_cast<double>(n) / static_cast<double>(tc.counters.calls)
                                           : 1.0 / static_cast<double>(parts.size());
        ClassRow& cr = class_rows[dcls];
        if (!regrid || !releases(k.op)) {  // (the display rows' releases are counted above)
          cr.calls += n;
          cr.calls_by_op[k.op] += n;
        }
        cr.time_ns += time * f;  // ticks for now
        cr.split.add({split.fast_ns * f, split.slow_ns * f, split.wait_ns * f});
        cr.time_by_op[k.op] += time * f;
        placed[{k, dcls}] += time * f;
      }
      thread_err2 += e.err2 * scale * scale;
      tr.calls += tc.counters.calls;
      tr.timed += tc.counters.timed;
      tr.time_ns += time;
      tr.split.add(split);
    }
    tr.time_ns = to_ns(tr.time_ns);
    tr.error_ns = to_ns(std::sqrt(thread_err2));
    // Fewer than a few timed calls bound nothing: the estimate may be off by all of it.
    if (tr.calls > tr.timed && tr.timed < kMinTimedForBound) tr.error_ns = std::max(tr.error_ns, tr.time_ns);
    tr.unsure = is_unsure(tr.time_ns, tr.error_ns);
    tr.split = {to_ns(tr.split.fast_ns), to_ns(tr.split.slow_ns), to_ns(tr.split.wait_ns)};
    tr.share = tr.lifetime_ns > 0 ? tr.time_ns / tr.lifetime_ns : 0;
    r.calls += tr.calls;
    r.timed += tr.timed;
    r.thread_time_ns += tr.lifetime_ns;
    r.threads_rows.push_back(tr);
  }

  // Error bounds (docs/analysis.md, "Error bounds"): the timing windows are the sampling units.
  // Each cell's estimate is N_c × (its timed calls' time / their number); linearized, the total's
  // error is the spread over windows of z_w = Σ_c (N_c / n_c) · (y_wc − m_c · n_wc), with y_wc and
  // n_wc the time and number of cell c's timed calls in window w and m_c = y_c / n_c:
  //   Var = (1 − f) · K / (K − 1) · Σ_w z_w²,  f = timed calls / calls,  K windows (or clusters).
  // The bound is 2 · sqrt(Var).  A cell without timed calls adds the spread of the neighbours it
  // borrowed its mean from; a cell with fewer than kMinTimedForBound timed calls, or a run with
  // fewer than kMinWindowsForBound windows, cannot bound anything: its bound is the estimate itself.
  WindowErrors we = window_errors(p2, cells_all, n_class_slots);
  const double sampled = we.sampled;
  const size_t n_clusters = we.n_clusters;
  const std::map<uint32_t, size_t>& cell_clusters = we.cell_clusters;
  double& total_err2 = we.total_err2;
  const ShareBounds& share_bounds = we.share_bounds;
  std::vector<double>& class_err2 = we.class_err2;
  std::map<ClassKeyOp, double>& cell_err2 = we.cell_err2;

  // The bounds above are of the estimate before the lifetime cap: capped estimates scale them
  // down alike (as the threads' own bounds).
  {
    double capped_ticks = 0;
    for (const auto& [k, ec] : est_cells) capped_ticks += ec.time_ns;
    const double f = uncapped_ticks > 0 ? std::min(1.0, capped_ticks / uncapped_ticks) : 1.0;
    total_err2 *= f * f;
    for (double& e2 : class_err2) e2 *= f * f;
    for (auto& [k, e2] : cell_err2) e2 *= f * f;
  }
  for (const auto& [k, pc] : cells_all) {
    const auto ec = est_cells.find(k);
    const double time = ec == est_cells.end() ? 0.0 : ec->second.time_ns;
    double extra = 0;
    if (pc.counters.timed == 0 && pc.counters.calls > 0) {
      // Borrowed from the neighbours: their spread, and never less than the estimate itself.
      extra = std::max(std::pow(2 * static_cast<double>(pc.counters.calls), 2) * pc.se2, time * time);
    } else if (pc.counters.calls > pc.counters.timed && pc.counters.timed < kMinTimedForBound) {
      extra = time * time;
    } else if (pc.counters.calls > pc.counters.timed && sampled < 1) {
      // Timed calls in fewer than a few windows: their spread over the windows is no spread at
      // all (one window's deviation from its own mean is 0), so it bounds nothing either.
      const auto held = cell_clusters.find(static_cast<uint32_t>(k.cls * kOpSlots + k.op));
      if (held == cell_clusters.end() || held->second < kMinWindowsForBound) extra = time * time;
    }
    cell_err2[k] += extra;
    class_err2[k.cls] += extra;
    total_err2 += extra;
  }

  // Class rows, in ns, in size order; the unknown-size row last.
  std::vector<double> disp_err2(n_disp_slots, 0.0);
  if (!regrid) {
    disp_err2 = class_err2;
  } else {
    for (const auto& [key, ticks] : placed) {
      const auto ec = est_cells.find(key.first);
      if (ec == est_cells.end() || ec->second.time_ns <= 0) continue;
      const double f = ticks / ec->second.time_ns;
      disp_err2[key.second] += f * f * cell_err2[key.first];
    }
  }
  for (size_t cls = 0; cls < n_disp_slots; ++cls) {
    ClassRow& cr = class_rows[cls];
    if (cr.calls == 0 && cr.bytes == 0) continue;
    if (cls == disp_unknown) {
      cr.size_known = false;
      cr.label = "size not taken";
    } else {
      cr.lo = disp_classes[cls].lo;
      cr.hi = disp_classes[cls].hi;
      cr.label = std::string(disp_classes[cls].label);
    }
    cr.time_ns = to_ns(cr.time_ns);
    cr.error_ns = to_ns(std::sqrt(disp_err2[cls]));
    cr.unsure = is_unsure(cr.time_ns, cr.error_ns);
    cr.split = {to_ns(cr.split.fast_ns), to_ns(cr.split.slow_ns), to_ns(cr.split.wait_ns)};
    for (double& t : cr.time_by_op) t = to_ns(t);
    if (cls < p2.by_class.size() && !p2.by_class[cls].empty()) {
      const FineHistogram& h = p2.by_class[cls];
      LatencySummary l;
      l.max_ns = cr.latency ? cr.latency->max_ns : to_ns(static_cast<double>(h.max()));
      l.p50_ns = std::min(l.max_ns, to_ns(static_cast<double>(h.quantile(0.50))));
      l.p90_ns = std::min(l.max_ns, to_ns(static_cast<double>(h.quantile(0.90))));
      l.p99_ns = std::min(l.max_ns, to_ns(static_cast<double>(h.quantile(0.99))));
      l.p999_ns = std::min(l.max_ns, to_ns(static_cast<double>(h.quantile(0.999))));
      cr.latency = l;
      cr.histogram = latency_bins(h, to_ns);
    } else {
      cr.latency.reset();
    }
    r.classes.push_back(std::move(cr));
  }
  // The total and its split are the estimate cells' sums (the display rows add up to them).
  r.estimate_table = std::string(table->name());
  for (auto& [k, ec] : est_cells) {
    ec.cls = k.cls == unknown_class ? kEstimateNoClass : k.cls;
    ec.op = static_cast<uint8_t>(k.op);
    ec.time_ns = to_ns(ec.time_ns);
    ec.split = {to_ns(ec.split.fast_ns), to_ns(ec.split.slow_ns), to_ns(ec.split.wait_ns)};
    r.allocator_time_ns += ec.time_ns;
    r.split.add(ec.split);
    r.cells.push_back(ec);
  }
  for (ClassRow& cr : r.classes) {
    cr.call_share = r.calls ? static_cast<double>(cr.calls) / static_cast<double>(r.calls) : 0;
    cr.time_share = r.allocator_time_ns > 0 ? cr.time_ns / r.allocator_time_ns : 0;
  }
  r.allocator_error_ns = to_ns(std::sqrt(total_err2));
  if (sampled < 1 && n_clusters < kMinWindowsForBound) r.allocator_error_ns = std::max(r.allocator_error_ns, r.allocator_time_ns);
  // No timed call at all: the time is unknown, not zero.
  r.allocator_unsure = is_unsure(r.allocator_time_ns, r.allocator_error_ns) || (r.calls > 0 && r.timed == 0 && r.sample_every > 0);
  r.error.method = sampled >= 1 ? "every call timed: the times are measured, not estimated"
                                : "2 standard errors over the timing windows (docs/analysis.md)";
  r.error.windows = p2.clusters.windows();
  r.error.clusters = n_clusters;
  r.error.sampled_fraction = sampled;
  if (sampled >= 1) {
    r.error.wait_share_bound = r.error.fast_share_bound = 0;
  } else if (share_bounds.known && n_clusters >= kMinWindowsForBound) {
    r.error.wait_share_bound = share_bounds.wait;
    r.error.fast_share_bound = share_bounds.fast;
  }
  r.allocator_share = r.thread_time_ns > 0 ? r.allocator_time_ns / r.thread_time_ns : 0;

  measure_contention(r, p2, coincidence, profile);

  note_model(notes, r, profile, p1, p2, model, release_totals, sweep_config);
  r.timeline = timeline.finish();
  r.model = std::move(notes);
  std::map<uint32_t, double> lifetimes;
  for (const auto& t : r.threads_rows) lifetimes[t.serial] = t.lifetime_ns;
  r.locks = analyze_locks(profile, r.thread_time_ns, lifetimes);
  r.verdict = make_verdict(r);
  return r;
}

}  // namespace allocscope
