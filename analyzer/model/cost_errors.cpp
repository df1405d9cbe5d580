// The error bounds of the cost model's estimate (docs/analysis.md, "Error bounds"): the timing
// windows are the sampling units.  Each cell's estimate is N_c × (its timed calls' time / their
// number); linearized, the total's error is the spread over windows of
// z_w = Σ_c (N_c / n_c) · (y_wc − m_c · n_wc), with y_wc and n_wc the time and number of cell c's
// timed calls in window w and m_c = y_c / n_c:
//   Var = (1 − f) · K / (K − 1) · Σ_w z_w²,  f = timed calls / calls,  K windows (or clusters).
// The bound is 2 · sqrt(Var).  A cell without timed calls adds the spread of the neighbours it
// borrowed its mean from; a cell with fewer than kMinTimedForBound timed calls, or a run with
// fewer than kMinWindowsForBound windows, cannot bound anything: its bound is the estimate itself.
// Releases are sampled per operation, as they are estimated (window_errors).
#include <algorithm>
#include <array>
#include <cmath>

#include "model/cost_parts.h"

namespace allocscope::cost {

namespace {

using CellSums = std::map<uint32_t, WindowClusters::Sum>;
using CellScales = std::map<uint32_t, std::pair<double, double>>;  // cell -> (N_c / n_c, m_c)

// Bounds of the waiting and fast shares (ratios of estimates over the same windows, linearized:
// z_w = (ΔX_w − s · ΔT_w) / T), on which the verdict's dominant cost rests.
ShareBounds share_bounds_of(const std::vector<WindowClusters::Cluster>& clusters, const CellSums& cell_sums,
                            const CellScales& cell_am, size_t n_clusters, double cluster_factor) {
  ShareBounds share_bounds;
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
    for (const auto& cluster : clusters) {
      double dt = 0, dw = 0, df = 0;
      for (const auto& [cell, sum] : cluster) {
        const auto am = cell_am.find(cell);
        if (am == cell_am.end()) continue;
        const auto& cs = cell_sums.at(cell);
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
  return share_bounds;
}

}  // namespace

// Releases are estimated per operation, not per class: a thread's timed releases go with its
// calls in proportion, every class's releases costing the operation's mean (release_classes.h),
// whatever usable size put a timed release in a class.  So their sampling cell is the operation
// (class kAllClasses), and each class takes the share N_c / N of its deviation, as its estimate
// takes that share of the operation's time.
constexpr uint32_t kAllClasses = ~uint32_t{0} / kOpSlots;

// The releasing operations' calls over all classes (N), each class's share of them (N_c / N),
// and the windows' sums by estimate cell: releases merged over their classes into kAllClasses.
struct EstimateCells {
  std::array<double, kOpSlots> release_calls{};
  std::array<std::vector<std::pair<uint32_t, double>>, kOpSlots> release_shares;  // (class cell, N_c / N)
  std::vector<WindowClusters::Cluster> clusters;
};

EstimateCells estimate_cells(const std::vector<WindowClusters::Cluster>& clusters, const PooledCells& cells_all,
                             size_t n_class_slots) {
  EstimateCells e;
  auto estimate_cell = [](uint32_t cell) { return releases(cell % kOpSlots) ? kAllClasses * kOpSlots + cell % kOpSlots : cell; };
  for (const auto& [k, pc] : cells_all) {
    if (k.op < kOpSlots && releases(k.op)) e.release_calls[k.op] += static_cast<double>(pc.counters.calls);
  }
  for (const auto& [k, pc] : cells_all) {
    if (k.op < kOpSlots && releases(k.op) && e.release_calls[k.op] > 0 && pc.counters.calls > 0 && k.cls < n_class_slots)
      e.release_shares[k.op].emplace_back(k.cls * kOpSlots + k.op, static_cast<double>(pc.counters.calls) / e.release_calls[k.op]);
  }
  e.clusters.resize(clusters.size());
  for (size_t i = 0; i < clusters.size(); ++i) {
    WindowClusters::Cluster& out = e.clusters[i];
    for (const auto& [cell, sum] : clusters[i]) {
      const uint32_t key = estimate_cell(cell);
      auto it = std::find_if(out.begin(), out.end(), [key](const auto& x) { return x.first == key; });
      if (it == out.end()) it = out.insert(out.end(), {key, WindowClusters::Sum{}});
      it->second.ticks += sum.ticks;
      it->second.wait += sum.wait;
      it->second.base += sum.base;
      it->second.calls += sum.calls;
    }
  }
  return e;
}

WindowErrors window_errors(const Pass2& p2, const PooledCells& cells_all, size_t n_class_slots) {
  WindowErrors we;
  const auto& clusters = p2.clusters.clusters();
  const EstimateCells ec = estimate_cells(clusters, cells_all, n_class_slots);
  const auto& release_calls = ec.release_calls;
  const auto& release_shares = ec.release_shares;
  const std::vector<WindowClusters::Cluster>& by_estimate = ec.clusters;
  CellSums cell_sums;
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
  CellScales cell_am;  // cell -> (N_c / n_c, m_c)
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
  we.share_bounds = share_bounds_of(by_estimate, cell_sums, cell_am, n_clusters, cluster_factor);
  return we;
}

void bound_cells(WindowErrors& we, const std::map<ClassKeyOp, EstimateCell>& est_cells, double uncapped_ticks,
                 const PooledCells& cells_all) {
  const double sampled = we.sampled;
  const std::map<uint32_t, size_t>& cell_clusters = we.cell_clusters;
  double& total_err2 = we.total_err2;
  std::vector<double>& class_err2 = we.class_err2;
  std::map<ClassKeyOp, double>& cell_err2 = we.cell_err2;

  // The bounds of window_errors() are of the estimate before the lifetime cap: capped estimates
  // scale them down alike (as the threads' own bounds).
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
}

}  // namespace allocscope::cost
