// The cost model of `allocscope report` (see cost_model.h and docs/analysis.md).
#include "cost_model.h"
#include "contention_wording.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <numeric>
#include <variant>

#include "allocscope/buckets.h"
#include "class_tables.h"
#include "fine_histogram.h"
#include "format_names.h"
#include "profile.h"
#include "profile_reader.h"
#include "thread_profile.h"
#include "timeline.h"
#include "trace_decode.h"
#include "window_sweep.h"

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
constexpr uint64_t kMinFastReference = 20;   // timed calls an (op, bucket) needs for its fast threshold
constexpr double kPreemptedSeconds = 100e-6;  // a call this long that did not block was descheduled

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

// Off-CPU time of a rusage-sampled call that blocked, in ticks; 0 when it did not block.
double blocked_wait_ticks(const format::Event& e, double duration, double ticks_per_us) {
  if (!(e.flags & format::kEvRusage) || e.nvcsw == 0) return 0;
  const double cpu = static_cast<double>(e.cpu_us) * ticks_per_us;
  return std::clamp(duration - cpu, 0.0, duration);
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

  // A blocking wait costs at least a FUTEX_WAIT, the wake-up and two context switches.
  if (cal) {
    m.block_threshold = static_cast<double>(cal->futex_wait_ticks + cal->futex_wake_ticks + 2 * cal->syscall_ticks);
  } else {
    m.block_threshold = m.ticks_per_us;  // 1 µs
  }
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

struct Pass2 {
  std::vector<ThreadAcc> threads;
  std::vector<FineHistogram> by_class;  // corrected ticks
  std::array<FineHistogram, kInsideRows> by_inside;
  double si_progress = 0;      // raw ticks of progress made while 2+ threads were inside
  double si_time = 0;          // raw ticks with 2+ threads inside (windows counted for the index)
  uint64_t si_calls = 0;       // calls that were inside with another thread at some point
  uint64_t si_excluded_windows = 0;  // contended windows left out: a call in them was descheduled
  uint64_t contended = 0, classified = 0;
  ExclusionTally exclusion;    // timed calls by class, met or alone at their start, fast or not
  uint64_t rusage_samples = 0, rusage_blocked = 0, rusage_preempted = 0;
  SweepTotals sweep;
};

// Splits `total` into parts proportional to `weights`, by largest remainder (exact in integers).
std::vector<uint64_t> apportion(uint64_t total, const std::vector<uint64_t>& weights) {
  std::vector<uint64_t> parts(weights.size(), 0);
  const unsigned __int128 sum = std::accumulate(weights.begin(), weights.end(), static_cast<unsigned __int128>(0));
  if (sum == 0 || total == 0) return parts;
  std::vector<std::pair<unsigned __int128, size_t>> remainders;
  uint64_t given = 0;
  for (size_t i = 0; i < weights.size(); ++i) {
    const unsigned __int128 scaled = static_cast<unsigned __int128>(total) * weights[i];
    parts[i] = static_cast<uint64_t>(scaled / sum);
    given += parts[i];
    remainders.emplace_back(scaled % sum, i);
  }
  std::stable_sort(remainders.begin(), remainders.end(),
                   [](const auto& a, const auto& b) { return a.first > b.first; });
  for (size_t i = 0; given < total; ++i, ++given) parts[remainders[i % remainders.size()].second] += 1;
  return parts;
}

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

std::string percent(double share) { return fmt::format("{:.0f} %", 100 * share); }

Verdict make_verdict(const CostReport& r) {
  Verdict v;
  const double total = r.split.total();
  if (r.calls == 0 || total <= 0) {
    v.dominant = "none";
    v.text = r.calls == 0 ? "No allocator calls were recorded."
                          : "No call was timed: record with sampling (--sample N, N >= 1) to see where the time goes.";
    return v;
  }
  const Contention& c = r.contention;
  // How much slower calls were with another thread inside than alone.
  std::optional<double> slowdown;
  if (c.by_inside.size() >= 2 && c.by_inside[0].inside == 1) {
    double calls = 0, sum = 0;
    for (size_t i = 1; i < c.by_inside.size(); ++i) {
      calls += static_cast<double>(c.by_inside[i].calls);
      sum += static_cast<double>(c.by_inside[i].calls) * c.by_inside[i].mean_ns;
    }
    if (calls >= static_cast<double>(kMinContended) && c.by_inside[0].mean_ns > 0) slowdown = sum / calls / c.by_inside[0].mean_ns;
  }
  std::string text;
  const double fast = r.split.fast_ns / total, slow = r.split.slow_ns / total, wait = r.split.wait_ns / total;
  if (wait >= fast && wait >= slow) {
    v.dominant = "waiting";
    text = fmt::format("{} of allocator time is waiting: threads blocked off-CPU inside the allocator", percent(wait));
    if (r.model.rusage_blocked) {
      text += fmt::format(" ({} sampled calls caught blocking)", r.model.rusage_blocked);
    } else if (r.model.fallback_blocked_calls >= 1) {
      text += fmt::format(" (about {} blocking calls, matching the threads' voluntary context switches)",
                          static_cast<uint64_t>(std::llround(r.model.fallback_blocked_calls)));
    }
  } else if (slow >= fast) {
    v.dominant = "slow";
    text = fmt::format("{} of allocator time is spent running beyond the calls' uncontended cost", percent(slow));
    const bool excluded = c.verdict.kind == ContentionKind::GlobalLock || c.verdict.kind == ContentionKind::Partial;
    if (excluded && slowdown && *slowdown > 1.2) {
      text += fmt::format(": calls that met another thread inside took {:.1f}x as long as calls made alone "
                          "(spinning, lock hand-over, shared cache lines)", *slowdown);
    } else {
      text += " (page faults, system calls, refills, preemption)";
    }
  } else {
    v.dominant = "fast";
    text = fmt::format("{} of allocator time is the calls' uncontended cost: the fast path dominates", percent(fast));
  }
  text += ".";
  text += " " + contention_sentence(c.verdict);
  text += fmt::format(" The allocator takes {} of thread time.", percent(r.allocator_share));
  if (r.allocator_time_ns > 0 && r.allocator_error_ns > 0.5 * r.allocator_time_ns) {
    text += fmt::format(" Uncertain: a few very long timed calls dominate the estimate (± {} of it).",
                        percent(r.allocator_error_ns / r.allocator_time_ns));
  }
  v.text = text;
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

// ---- pass 0: the calibration, which comes before any event ----

std::optional<format::Calibration> read_calibration(const std::filesystem::path& path) {
  ProfileReader reader(path, [](std::string_view) {});
  Chunk chunk;
  while (reader.next(chunk)) {
    if (const auto* c = std::get_if<format::Calibration>(&chunk.body)) return *c;
    if (std::holds_alternative<EventsRecord>(chunk.body)) break;
  }
  return std::nullopt;
}

CostReport analyze_profile(const std::filesystem::path& path, const CostOptions& options) {
  const std::optional<format::Calibration> cal0 = read_calibration(path);
  const double hz0 = cal0 && cal0->tick_hz ? static_cast<double>(cal0->tick_hz) : 1e9;
  const SweepConfig sweep_config = cal0 ? sweep_config_for(*cal0, hz0) : SweepConfig{};
  const double ticks_per_us0 = hz0 / 1e6;

  // ---- pass 1 ----
  Pass1 p1;
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
      if (e.flags & format::kEvRusage) {
        EvidenceBin& bin = p1.evidence[latency_bin_of(e.duration_ticks)];
        const double d = static_cast<double>(e.duration_ticks);
        ++bin.samples;
        bin.ticks += d;
        if (e.nvcsw > 0) {
          ++bin.blocked;
          bin.wait_ticks += blocked_wait_ticks(e, d, ticks_per_us0);
        }
      }
    }
  });
  LoadOptions load1;
  load1.on_events = [&](const format::EventsHeader& header, std::span<const format::Event> events) {
    ++p1.event_chunks;
    p1.sizes.add(events);
    sweep1.add(header.thread_serial, events);
  };
  // A trace holds every call, timed: its records are the timed-call events of the model.
  load1.on_trace = [&](const TraceEventsRecord& chunk) {
    const std::vector<format::Event> events = trace_chunk_as_events(chunk);
    load1.on_events(trace_chunk_events_header(chunk), events);
  };
  const Profile profile = load_profile(path, load1);
  sweep1.finish();
  p1.sweep = sweep1.totals();

  const std::optional<format::Calibration>& cal = profile.calibration;
  const Model model = learn(p1, profile, cal);
  auto to_ns = [&](double ticks) { return profile.clock.to_ns_exact(ticks); };

  // The size classes.
  const ClassTable* table = nullptr;
  if (options.by != ReportGrouping::Bucket && profile.process) {
    table = class_table_for(profile.process->allocator, static_cast<format::Libc>(profile.process->info.libc));
  }
  if (!table) table = &bucket_class_table();
  const auto classes = table->classes();
  const ClassLookup class_of(*table);

  // Threads, by serial.
  std::vector<int32_t> thread_of_serial;
  for (size_t i = 0; i < profile.threads.size(); ++i) {
    const uint32_t serial = profile.threads[i].serial;
    if (serial >= thread_of_serial.size()) thread_of_serial.resize(serial + 1, -1);
    thread_of_serial[serial] = static_cast<int32_t>(i);
  }
  ModelNotes notes;
  std::vector<std::vector<double>> phi;
  for (const auto& t : profile.threads) phi.push_back(fallback_blocked(t, model, notes.fallback_blocked_calls));

  // The fast threshold of each (op, bucket) for the exclusion test (contention_verdict.h).
  std::vector<double> fast_ticks(kOpSlots * kBucketSlots, -1.0);
  for (size_t c = 0; c < fast_ticks.size(); ++c) {
    if (p1.all[c].total() >= kMinFastReference) fast_ticks[c] = kFastFactor * static_cast<double>(p1.all[c].quantile(0.05));
  }

  // ---- pass 2 ----
  Pass2 p2;
  p2.threads.resize(profile.threads.size());
  // A call this long that did not block was descheduled (preempted, or its CPU taken by the
  // hypervisor): the windows it spans say more about the machine's load than about the allocator,
  // and are left out of the serialization index.
  const double preempted_ticks = profile.clock.hz() * kPreemptedSeconds;
  uint64_t excluded_until = 0;
  std::vector<double> waits;
  TimelineBuilder timeline(profile, sweep_config);
  WindowSweep sweep2(sweep_config, [&](std::span<const SweepItem> items, const WindowInfo& info) {
    timeline.add_window(info);
    waits.assign(items.size(), 0.0);
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
      if (e.flags & format::kEvRusage) {
        wait = blocked_wait_ticks(e, d, model.ticks_per_us);
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
      if (cls >= p2.by_class.size()) p2.by_class.resize(cls + 1);
      p2.by_class[cls].add(e.duration_ticks);  // latency as measured, probe included
      if (e.flags & format::kEvRusage) {
        ++p2.rusage_samples;
        p2.rusage_blocked += e.nvcsw > 0;
        p2.rusage_preempted += e.nivcsw > 0;
      }
      const double fast = fast_ticks[cell_index(e.op, e.bucket)];
      if (it.inside >= 0 && fast >= 0 && e.op != static_cast<uint8_t>(Op::MallocUsableSize)) {
        const CallGroup group = e.op == static_cast<uint8_t>(Op::Free) ? CallGroup::Freeing : CallGroup::Allocating;
        p2.exclusion.add(group, cls, it.inside >= 1, raw <= fast);
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
    if (info.late || info.contended_ticks == 0) return;
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
  load2.on_events = [&](const format::EventsHeader& header, std::span<const format::Event> events) {
    if (++chunks_seen > p1.event_chunks) return;  // the file grew since pass 1
    sweep2.add(header.thread_serial, events);
  };
  load2.on_trace = [&](const TraceEventsRecord& chunk) {
    const std::vector<format::Event> events = trace_chunk_as_events(chunk);
    load2.on_events(trace_chunk_events_header(chunk), events);
  };
  (void)load_profile(path, load2);
  sweep2.finish();
  p2.sweep = sweep2.totals();

  // ---- scale to all calls ----
  const size_t unknown_class = classes.size();
  const size_t n_class_slots = classes.size() + 1;
  const size_t n_threads = profile.threads.size();
  auto slot_of = [&](uint32_t cls) { return cls == kNoClass ? unknown_class : static_cast<size_t>(cls); };

  // Each thread's (class, op) cells; frees whose size was not taken are apportioned to the classes
  // of the thread's timed frees (else the process's), in proportion.
  std::vector<std::map<ClassKeyOp, ThreadCell>> cells(n_threads);
  std::map<ClassKeyOp, Cell> pooled;  // over threads, before apportioning (weights of last resort)
  for (size_t ti = 0; ti < n_threads; ++ti) {
    for (const auto& [key, cell] : split_cells(profile.threads[ti].cells, *table, &p1.sizes)) {
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
      const auto parts = apportion(unknown->second.counters.calls, weights);
      unknown->second.counters.calls = 0;
      for (size_t cls = 0; cls < parts.size(); ++cls) {
        if (parts[cls]) mine[{static_cast<uint32_t>(cls), op}].counters.calls += parts[cls];
      }
    }
  }

  // Pooled cells: the process-wide estimate of each (class, op).
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
    }
    const Moments m = histogram_moments(pc.latency, c.max_ticks, model.overhead);
    pc.var = m.var;
    pc.se2 = untimed_se2 ? *untimed_se2 : sampling_variance(m.var, c.timed, c.calls);
    pc.fractions = fractions_of(pc.acc.n ? pc.acc : op_acc[k.op]);
  }

  // Per thread: its own mean where its sample says more than the spread between threads, else the
  // process's (shrinkage); then every cell is scaled so that the threads add up to the process.
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
  struct ThreadEst {
    double time = 0, err2 = 0;
    Fractions fractions;
  };
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
  r.class_table = std::string(table->name());
  r.class_table_source = std::string(table->source());
  r.by = options.by;
  r.complete = profile.complete();
  r.trace = profile.trace_mode() && !profile.trace_chunks.empty();
  if (const auto wall = profile.wall_ns()) r.wall_ns = static_cast<double>(*wall);
  r.threads = static_cast<uint32_t>(profile.threads_seen());
  r.sample_every = cal ? cal->sample_every : 0;

  std::vector<ClassRow> class_rows(n_class_slots);
  std::vector<double> class_err2(n_class_slots, 0.0);
  double total_err2 = 0;
  for (const auto& [k, pc] : cells_all) {
    const double e2 = std::pow(2 * static_cast<double>(pc.counters.calls), 2) * pc.se2;
    class_err2[k.cls] += e2;
    total_err2 += e2;
  }

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

    // Bytes and timed calls of every cell (a split may give a class bytes but no call).
    for (const auto& [k, tc] : cells[ti]) {
      ClassRow& cr = class_rows[k.cls];
      if (k.op != static_cast<unsigned>(Op::Free) && k.op != static_cast<unsigned>(Op::MallocUsableSize)) {
        cr.bytes += tc.counters.bytes;
      }
      cr.timed += tc.counters.timed;
    }

    // A thread can't be inside the allocator for longer than it lived.
    double thread_time = 0;
    for (const auto& [k, e] : est[ti]) thread_time += e.time;
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
      ClassRow& cr = class_rows[k.cls];
      cr.calls += tc.counters.calls;
      cr.time_ns += time;  // ticks for now
      cr.split.add(split);
      cr.calls_by_op[k.op] += tc.counters.calls;
      cr.time_by_op[k.op] += time;
      thread_err2 += e.err2 * scale * scale;
      tr.calls += tc.counters.calls;
      tr.timed += tc.counters.timed;
      tr.time_ns += time;
      tr.split.add(split);
      if (tc.counters.timed > 0) {
        // Longest call: snapshots see every timed call (events may have been dropped).
        if (!cr.latency) cr.latency = LatencySummary{};
        cr.latency->max_ns = std::max(cr.latency->max_ns, to_ns(static_cast<double>(tc.counters.max_ticks)));
      }
    }
    tr.time_ns = to_ns(tr.time_ns);
    tr.error_ns = to_ns(std::sqrt(thread_err2));
    tr.split = {to_ns(tr.split.fast_ns), to_ns(tr.split.slow_ns), to_ns(tr.split.wait_ns)};
    tr.share = tr.lifetime_ns > 0 ? tr.time_ns / tr.lifetime_ns : 0;
    r.calls += tr.calls;
    r.timed += tr.timed;
    r.thread_time_ns += tr.lifetime_ns;
    r.threads_rows.push_back(tr);
  }

  // Class rows, in ns, in size order; the unknown-size row last.
  for (size_t cls = 0; cls < n_class_slots; ++cls) {
    ClassRow& cr = class_rows[cls];
    if (cr.calls == 0 && cr.bytes == 0) continue;
    if (cls == unknown_class) {
      cr.size_known = false;
      cr.label = "size not taken";
    } else {
      cr.lo = classes[cls].lo;
      cr.hi = classes[cls].hi;
      cr.label = std::string(classes[cls].label);
    }
    cr.time_ns = to_ns(cr.time_ns);
    cr.error_ns = to_ns(std::sqrt(class_err2[cls]));
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
    r.allocator_time_ns += cr.time_ns;
    r.split.add(cr.split);
    r.classes.push_back(std::move(cr));
  }
  for (ClassRow& cr : r.classes) {
    cr.call_share = r.calls ? static_cast<double>(cr.calls) / static_cast<double>(r.calls) : 0;
    cr.time_share = r.allocator_time_ns > 0 ? cr.time_ns / r.allocator_time_ns : 0;
  }
  r.allocator_error_ns = to_ns(std::sqrt(total_err2));
  r.allocator_share = r.thread_time_ns > 0 ? r.allocator_time_ns / r.thread_time_ns : 0;

  // Contention.
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
  evidence.busy_threads = c.busy_threads;
  evidence.timed = r.timed;
  evidence.rusage_samples = p2.rusage_samples;
  evidence.rusage_blocked = p2.rusage_blocked;
  evidence.rusage_preempted = p2.rusage_preempted;
  if (profile.process) {
    const auto& info = profile.process->info;
    evidence.cpus = info.cpus_allowed ? info.cpus_allowed : info.cpus_online;
  }
  evidence.max_live_threads = profile.end ? profile.end->max_live_threads : static_cast<uint32_t>(profile.threads.size());
  evidence.wall_seconds = r.wall_ns ? *r.wall_ns / 1e9 : 0;
  c.verdict = judge_contention(evidence);

  // Notes on the model and the data.
  notes.probe_overhead_ns = to_ns(model.overhead);
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
  r.timeline = timeline.finish();
  r.model = std::move(notes);
  std::map<uint32_t, double> lifetimes;
  for (const auto& t : r.threads_rows) lifetimes[t.serial] = t.lifetime_ns;
  r.locks = analyze_locks(profile, r.thread_time_ns, lifetimes);
  r.verdict = make_verdict(r);
  return r;
}

}  // namespace allocscope
