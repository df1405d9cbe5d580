// The cost model's estimate per thread and (class, op) cell (cost_model.h, docs/analysis.md): each
// thread's cells with the releases in their blocks' classes, the process's pooled cells, and each
// thread's estimate shrunk towards the process's.
#include <algorithm>
#include <cmath>

#include "model/cost_parts.h"
#include "util/largest_remainder.h"

namespace allocscope::cost {

namespace {

// The mean corrected duration of a cell's timed calls (it has some).
double mean_of(const Counters& c, double overhead) {
  return std::max(0.0, static_cast<double>(c.timed_ticks) / static_cast<double>(c.timed) - overhead);
}

// The variance of the true per-thread means of each cell, beyond sampling: how much the threads
// differ.  Only cells that two threads or more timed twice or more have one.
std::map<ClassKeyOp, double> thread_spread(const ThreadCells& cells, const Model& model) {
  const size_t n_threads = cells.size();
  std::map<ClassKeyOp, double> tau2;  // variance of the true per-thread means, beyond sampling
  std::map<ClassKeyOp, std::vector<std::pair<double, double>>> means;  // (mean, se2) per thread
  for (size_t ti = 0; ti < n_threads; ++ti) {
    for (const auto& [k, tc] : cells[ti]) {
      if (tc.counters.timed < 2) continue;
      const Moments m = histogram_moments(tc.latency, tc.counters.max_ticks, model.overhead);
      means[k].emplace_back(mean_of(tc.counters, model.overhead), sampling_variance(m.var, tc.counters.timed, tc.counters.calls));
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
  return tau2;
}

}  // namespace

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

double sampling_variance(double var, uint64_t timed, uint64_t calls) {
  if (calls == 0) return 0;
  const double n = static_cast<double>(std::max<uint64_t>(std::min(timed, calls), 1));
  const double fpc = std::max(0.0, 1.0 - static_cast<double>(std::min(timed, calls)) / static_cast<double>(calls));
  return var / n * fpc;
}

ThreadCells thread_class_cells(const Profile& profile, const ClassTable& table, const EventSizes& sizes,
                               ReleaseTotals& release_totals) {
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

PooledCells pooled_cells(const ThreadCells& cells, const Pass2& p2, const Model& model) {
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
      timed_means[k.op].emplace_back(k.cls, mean_of(pc.counters, model.overhead));
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
      pc.mean = mean_of(c, model.overhead);
    } else if (const auto near = neighbours(k)) {
      pc.mean = (near->first + near->second) / 2;
      const double half = (near->second - near->first) / 2;  // 2·SE = half the spread
      untimed_se2 = half * half / 4;
    } else if (op_counters[k.op].timed > 0) {
      pc.mean = mean_of(op_counters[k.op], model.overhead);
    } else if (all_ops.timed > 0) {
      // No call of the operation was timed anywhere: the mean of every timed call stands in (its
      // bound is the whole estimate, below), rather than a time of 0 that would look exact.
      pc.mean = mean_of(all_ops, model.overhead);
    }
    const Moments m = histogram_moments(pc.latency, c.max_ticks, model.overhead);
    pc.var = m.var;
    pc.se2 = untimed_se2 ? *untimed_se2 : sampling_variance(m.var, c.timed, c.calls);
    pc.fractions = fractions_of(pc.acc.n ? pc.acc : op_acc[k.op]);
  }
  return cells_all;
}

ThreadEstimates thread_estimates(const ThreadCells& cells, const PooledCells& cells_all, const Pass2& p2,
                                 const Model& model) {
  const size_t n_threads = cells.size();
  const std::map<ClassKeyOp, double> tau2 = thread_spread(cells, model);
  std::vector<std::map<ClassKeyOp, ThreadEst>> est(n_threads);
  std::map<ClassKeyOp, double> est_sum;
  for (size_t ti = 0; ti < n_threads; ++ti) {
    for (const auto& [k, tc] : cells[ti]) {
      if (tc.counters.calls == 0) continue;
      const PooledCell& pc = cells_all.at(k);
      double w = 0, se2 = pc.se2;
      double own = pc.mean;
      if (tc.counters.timed > 0) {
        own = mean_of(tc.counters, model.overhead);
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

}  // namespace allocscope::cost
