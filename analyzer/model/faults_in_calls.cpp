// faults_in_calls.cpp — see faults_in_calls.h.
#include "model/faults_in_calls.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "allocscope/format.h"

namespace allocscope {

FaultSample::FaultSample(const std::optional<format::Calibration>& c) {
  if (c && (c->mode_flags & format::kModeFaults)) {
    fault_reads = true;
    short_ticks = format::fault_free_ticks(*c);
  }
  if (c) window_shift = std::min(c->window_shift, 63u);
}

void FaultSample::add(const format::EventsHeader& header, std::span<const format::Event> events) {
  ThreadFaultSample& thread = threads[header.thread_serial];
  // A read call in the window sums: a new window begins a new sampling unit.
  const auto add_read = [&](const format::Event& e, const CellFaultSample& c, uint64_t faults) {
    const uint64_t window = e.start_tick >> window_shift;
    if (window != thread.last_window) {
      thread.windows.begin_window();
      thread.last_window = window;
    }
    FaultSum& sum = thread.windows.at(c.id);
    sum.read++;
    sum.faults += static_cast<double>(faults);
  };
  for (const auto& e : events) {
    const bool known = (e.flags & format::kEvRusage) || (fault_reads && (e.flags & format::kEvFaults));
    if (!fault_reads && !known) continue;  // without fault reads, the rusage probe's calls alone
    const auto [it, fresh] = thread.cells.try_emplace(CellKey{e.op, e.bucket});
    CellFaultSample& c = it->second;
    if (fresh) c.id = static_cast<uint32_t>(thread.cells.size() - 1);
    c.timed++;
    const bool slow = !fault_reads || e.duration_ticks >= short_ticks;
    if (known) {
      add_read(e, c, e.minflt);
      c.read++;
      c.faults_read += e.minflt;
      c.faults_read2 += static_cast<double>(e.minflt) * static_cast<double>(e.minflt);
      if (slow) {
        c.slow_read++;
        c.slow_faults += e.minflt;
      }
    } else if (slow) {
      c.slow_unread++;
      // As many as fit in the call, a fault costing at least twice short_ticks; at most those
      // since a reading before the call, where the shim has them (kEvFaultsAtMost).
      const uint64_t fit = e.duration_ticks / (2 * short_ticks) + 1;
      c.unread_most += (e.flags & format::kEvFaultsAtMost) ? std::min<uint64_t>(e.minflt, fit) : fit;
    } else {
      add_read(e, c, 0);
      c.read++;  // too short to fault: known to have taken none
    }
  }
}

FaultEstimate thread_faults_in_calls(const ThreadFaultSample& sample, const CellMap& cells, uint64_t faults) {
  const double total = static_cast<double>(faults);
  // The thread's own rates: for cells whose slow calls were none read, or no call at all.
  // And each operation's, for its calls counted without a size (untimed releases: kBucketUnknown):
  // its pooled mean × those calls, which is what the cost model's apportioning in proportion to the
  // timed calls per class (cost_cells.cpp) comes to for a count.
  const auto add = [](CellFaultSample& to, const CellFaultSample& c) {
    to.timed += c.timed;
    to.read += c.read;
    to.faults_read += c.faults_read;
    to.faults_read2 += c.faults_read2;
    to.slow_read += c.slow_read;
    to.slow_unread += c.slow_unread;
    to.slow_faults += c.slow_faults;
    to.unread_most += c.unread_most;
  };
  CellFaultSample all;
  std::map<uint8_t, CellFaultSample> by_op;
  for (const auto& [key, c] : sample.cells) {
    add(all, c);
    add(by_op[key.op], c);
  }
  if (all.read == 0) return {0, total};  // nothing read: any of them may have been inside
  const auto per_slow = [&](const CellFaultSample& c) {
    if (c.slow_read > 0) return static_cast<double>(c.slow_faults) / static_cast<double>(c.slow_read);
    return all.slow_read > 0 ? static_cast<double>(all.slow_faults) / static_cast<double>(all.slow_read) : 0.0;
  };
  const auto mean_of = [&](const CellFaultSample& c) {
    return (static_cast<double>(c.faults_read) + static_cast<double>(c.slow_unread) * per_slow(c)) /
           static_cast<double>(c.timed);
  };
  const double thread_mean = mean_of(all);
  double estimate = 0, variance = 0, floor = 0, unsampled = 0, unread = 0;
  // Each sample cell's weight in the windows' deviations (linearized: docs/analysis.md, "Error
  // bounds"): its own calls over its read ones, and for an operation's calls without a size, the
  // operation's pooled cells' — (weight, mean) per cell id, the second pair the operation's.
  struct Weights {
    double own = 0, own_mean = 0, op = 0, op_mean = 0;
  };
  std::vector<Weights> weights(sample.cells.size());
  for (const auto& [key, cell] : cells) {
    const double calls = static_cast<double>(cell.counters.calls);
    if (calls <= 0) continue;
    const CellFaultSample* found = nullptr;
    if (key.bucket == kBucketUnknown) {
      if (const auto it = by_op.find(key.op); it != by_op.end()) found = &it->second;
    } else if (const auto it = sample.cells.find(key); it != sample.cells.end()) {
      found = &it->second;
    }
    if (!found || found->read == 0) {
      estimate += thread_mean * calls;
      unsampled += calls;
      continue;
    }
    const CellFaultSample& c = *found;
    const double n = static_cast<double>(c.read);
    const double m = static_cast<double>(c.faults_read) / n;
    const double var = n > 1 ? std::max(0.0, (c.faults_read2 - n * m * m) / (n - 1)) : m * m;
    estimate += mean_of(c) * calls;
    variance += calls * calls * var / n;
    floor += calls;
    // The unread slow calls may have faulted as often as their length allows, whatever the read did.
    unread += static_cast<double>(c.unread_most) * calls / static_cast<double>(c.timed);
    if (key.bucket == kBucketUnknown) {
      for (const auto& [k, sc] : sample.cells) {
        if (k.op != key.op) continue;
        weights[sc.id].op += calls / n;
        weights[sc.id].op_mean = m;
      }
    } else {
      weights[c.id].own += calls / n;
      weights[c.id].own_mean = m;
    }
  }
  // The variance over the windows: z_w = Σ weight · (faults_w − mean · read_w).
  double by_windows = 0;
  uint64_t units = 0;
  for (const auto& cluster : sample.windows.clusters()) {
    double z = 0;
    for (const auto& [id, sum] : cluster) {
      const Weights& w = weights[id];
      const double n = static_cast<double>(sum.read);
      z += w.own * (sum.faults - w.own_mean * n) + w.op * (sum.faults - w.op_mean * n);
    }
    if (!cluster.empty()) ++units;
    by_windows += z * z;
  }
  if (units >= cost::kMinWindowsForBound) {
    variance = std::max(variance, by_windows * static_cast<double>(units) / static_cast<double>(units - 1));
  } else {
    variance = std::max(variance, estimate * estimate / 9);  // 3 σ: the estimate itself
  }
  const double per_read = 3 / static_cast<double>(all.read);  // the rule of three, per call
  FaultEstimate e;
  e.faults = std::min(total, estimate);
  // Three standard errors, not two: faults come in bursts that span calls next to each other,
  // which the per-call variance does not see (measured against the calls' own counts: docs/analysis.md).
  // And a share of the estimate for the windows' own pace: the reads a timed call takes slow the
  // program inside the windows, so that the mix of faulting and other calls timed there is not
  // quite the mix outside them (measured on musl's faulter, up to 6 % either way: docs/analysis.md).
  e.bound = std::min(total, std::max(3 * std::sqrt(variance), per_read * floor) + per_read * unsampled + unread +
                                kWindowPaceShare * estimate);
  return e;
}

}  // namespace allocscope
