// The cost model's report rows (cost_model.h): the estimate of every call placed in the thread
// rows, the display class rows (the allocator's classes, or --by bucket allocscope's buckets) and
// the estimate cells, with their totals and error bounds.
#include <algorithm>
#include <cmath>

#include "allocscope/buckets.h"
#include "model/cost_parts.h"
#include "profile/format_names.h"
#include "util/largest_remainder.h"

namespace allocscope::cost {

namespace {

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

using DispParts = std::map<size_t, uint64_t>;  // display class -> calls

  // Display rows: the estimate's classes, or (--by bucket) allocscope's buckets, each estimate
  // cell apportioned to the buckets its calls fell in (by their calls).  Releases count in the
  // class of the request that made their block (release_classes.h) in the display rows too: an
  // estimate cell of releases goes to the buckets of the blocks made in its class (by the
  // operations whose blocks it gives back), in proportion, so that a thread that gives back all
  // it makes has, in every bucket, as many releases as blocks made; releases of size 0 stay in
  // the bucket of 0 B.
struct DisplaySplit {
  DisplaySplit(const Profile& profile, const ClassGrid& grid, const EventSizes& sizes);
  // The display rows of an estimate cell's calls in one thread: (display class, calls).
  std::vector<std::pair<size_t, uint64_t>> targets(size_t ti, const ClassKeyOp& k, uint64_t calls) const;

  bool regrid;
  size_t unknown_class, disp_unknown, zero_class, disp_zero_class;
  std::vector<std::map<ClassKeyOp, DispParts>> disp_weights;
  std::map<ClassKeyOp, DispParts> disp_pooled;
  std::vector<std::map<ClassKeyOp, DispParts>> made_weights;  // (class, allocating op) -> blocks per bucket
  std::map<ClassKeyOp, DispParts> made_pooled;
  std::array<uint64_t, kOpSlots> made_by_op{};
  std::vector<std::array<uint64_t, kOpSlots>> zero_releases;
  std::vector<ClassCellMap> disp_cells;

 private:
  void weigh_thread(size_t ti, const Profile& profile, const ClassTable* table, const ClassTable* disp_table,
                    const EventSizes& sizes);
  // The blocks made in an estimate class, per display bucket, that releases of `rop` give back:
  // the family's (feeds_release), else (no such block in the process) every allocating operation's.
  DispParts made_in(const std::map<ClassKeyOp, DispParts>& weights, const ClassKeyOp& k) const;
};

DisplaySplit::DisplaySplit(const Profile& profile, const ClassGrid& grid, const EventSizes& sizes)
    : regrid(grid.regrid), unknown_class(grid.classes.size()), disp_unknown(grid.disp_classes.size()) {
  const ClassTable* table = grid.table;
  const ClassTable* disp_table = grid.disp_table;
  const size_t n_threads = profile.threads.size();
  auto slot_of = [&](uint32_t cls) { return cls == kNoClass ? unknown_class : static_cast<size_t>(cls); };
  disp_weights.resize(regrid ? n_threads : 0);
  made_weights.resize(regrid ? n_threads : 0);
  zero_releases.resize(regrid ? n_threads : 0);
  disp_cells.resize(regrid ? n_threads : 0);
  zero_class = slot_of(static_cast<uint32_t>(table->class_of(0)));
  disp_zero_class = static_cast<size_t>(disp_table->class_of(0));
  if (regrid) {
    std::vector<const CellMap*> thread_cells(n_threads);
    for (size_t ti = 0; ti < n_threads; ++ti) thread_cells[ti] = &profile.threads[ti].cells;
    for (size_t ti = 0; ti < n_threads; ++ti) weigh_thread(ti, profile, table, disp_table, sizes);
    (void)attribute_releases(disp_cells, thread_cells, *disp_table);  // timed releases go with their calls
  }
}

void DisplaySplit::weigh_thread(size_t ti, const Profile& profile, const ClassTable* table,
                                const ClassTable* disp_table, const EventSizes& sizes) {
  auto slot_of = [&](uint32_t cls) { return cls == kNoClass ? unknown_class : static_cast<size_t>(cls); };
  zero_releases[ti].fill(0);
  for (const auto& [ckey, cell] : profile.threads[ti].cells) {
    CellMap one;
    one.emplace(ckey, cell);
    const ClassCellMap in_disp = split_cells(one, *disp_table, &sizes);
    if (in_disp.empty()) continue;
    const uint32_t d = in_disp.begin()->first.cls;
    const size_t dcls = d == kNoClass ? disp_unknown : static_cast<size_t>(d);
    if (releases(ckey.op) && ckey.bucket == 0) zero_releases[ti][ckey.op] += cell.counters.calls;
    for (const auto& [k, c] : split_cells(one, *table, &sizes)) {
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
  disp_cells[ti] = split_cells(profile.threads[ti].cells, *disp_table, &sizes);
}

DispParts DisplaySplit::made_in(const std::map<ClassKeyOp, DispParts>& weights, const ClassKeyOp& k) const {
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
}

std::vector<std::pair<size_t, uint64_t>> DisplaySplit::targets(size_t ti, const ClassKeyOp& k, uint64_t calls) const {
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
}

// The estimate placed in rows, before the error bounds.
struct Placement {
  std::vector<ClassRow> class_rows;                        // display rows, times in ticks for now
  double uncapped_ticks = 0;                               // the estimate before the lifetime cap
  std::map<ClassKeyOp, EstimateCell> est_cells;            // corrected ticks for now
  std::map<std::pair<ClassKeyOp, size_t>, double> placed;  // ticks of an estimate cell in a display row
};

// What place_thread() reads.
struct RowInputs {
  const Profile& profile;
  const ClassGrid& grid;
  const DisplaySplit& display;
  const ThreadCells& cells;
  const ThreadEstimates& est;
  const Pass2& p2;
};

// Bytes, timed calls and the longest call of every display cell (a split may give a class bytes
// but no call); snapshots see every timed call (events may have been dropped).  Not of releases:
// a thread's timed releases are shared out over the classes in proportion (release_classes.h),
// and the longest of them belongs to one class, not to each; theirs comes from the events.
void count_display_cells(Placement& pl, const RowInputs& in, size_t ti) {
  const Profile& profile = in.profile;
  auto to_ns = [&](double ticks) { return profile.clock.to_ns_exact(ticks); };
  std::vector<ClassRow>& class_rows = pl.class_rows;
  const size_t disp_unknown = in.display.disp_unknown;
  const auto& disp_cells = in.display.disp_cells;
  const auto& cells = in.cells;
  const bool regrid = in.grid.regrid;
  auto add_display_cell = [&](size_t dcls, unsigned op, const Counters& c) {
    ClassRow& cr = class_rows[dcls];
    if (!releases(op) && op != static_cast<unsigned>(Op::MallocUsableSize)) cr.bytes += c.bytes;
    cr.timed += c.timed;
    if (c.timed > 0 && !releases(op)) {
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
}

// Thread `ti`'s row, and its estimate placed in the display rows and the estimate cells.
ThreadRow place_thread(Placement& pl, ModelNotes& notes, const RowInputs& in, size_t ti) {
  const Profile& profile = in.profile;
  auto to_ns = [&](double ticks) { return profile.clock.to_ns_exact(ticks); };
  const Pass2& p2 = in.p2;
  const auto& est = in.est;
  const auto& cells = in.cells;
  const bool regrid = in.grid.regrid;
  std::vector<ClassRow>& class_rows = pl.class_rows;
  std::map<ClassKeyOp, EstimateCell>& est_cells = pl.est_cells;
  double& uncapped_ticks = pl.uncapped_ticks;
  auto& placed = pl.placed;
  const ThreadProfile& t = profile.threads[ti];
  ThreadRow tr;
  tr.serial = t.serial;
  tr.tid = t.tid;
  tr.state = t.state;
  tr.lifetime_ns = to_ns(static_cast<double>(t.active_ticks()));
  tr.rusage = t.rusage;
  tr.classified = p2.threads[ti].classified;
  tr.contended = p2.threads[ti].contended;
  count_display_cells(pl, in, ti);

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
    const auto parts = in.display.targets(ti, k, tc.counters.calls);
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
  return tr;
}

// Class rows, in ns, in size order; the unknown-size row last.
void finish_class_rows(CostReport& r, Placement& pl, WindowErrors& we, const ClassGrid& grid, const Pass2& p2,
                       const Profile& profile) {
  auto to_ns = [&](double ticks) { return profile.clock.to_ns_exact(ticks); };
  const bool regrid = grid.regrid;
  const auto disp_classes = grid.disp_classes;
  const size_t disp_unknown = disp_classes.size();
  const size_t n_disp_slots = disp_classes.size() + 1;
  std::vector<ClassRow>& class_rows = pl.class_rows;
  const std::map<ClassKeyOp, EstimateCell>& est_cells = pl.est_cells;
  const std::vector<double>& class_err2 = we.class_err2;
  std::map<ClassKeyOp, double>& cell_err2 = we.cell_err2;
  const auto& placed = pl.placed;
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
      l.max_ns = std::max(cr.latency ? cr.latency->max_ns : 0.0, to_ns(static_cast<double>(h.max())));
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
}

// The total and its split are the estimate cells' sums (the display rows add up to them).
void sum_estimate(CostReport& r, Placement& pl, const WindowErrors& we, const ClassGrid& grid, const Pass2& p2,
                  const Profile& profile) {
  auto to_ns = [&](double ticks) { return profile.clock.to_ns_exact(ticks); };
  const ClassTable* table = grid.table;
  const size_t unknown_class = grid.classes.size();
  const double sampled = we.sampled;
  const size_t n_clusters = we.n_clusters;
  const double total_err2 = we.total_err2;
  const ShareBounds& share_bounds = we.share_bounds;
  std::map<ClassKeyOp, EstimateCell>& est_cells = pl.est_cells;
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
}

}  // namespace

ClassGrid class_grid(const Profile& profile, ReportGrouping by) {
  const ClassTable* table = nullptr;
  if (profile.process) {
    table = class_table_for(profile.process->allocator, static_cast<format::Libc>(profile.process->info.libc));
  }
  if (!table) table = &bucket_class_table();
  return ClassGrid(*table, by == ReportGrouping::Bucket ? bucket_class_table() : *table);
}

CostReport describe_profile(const Profile& profile, const ClassGrid& grid, ReportGrouping by) {
  const std::optional<format::Calibration>& cal = profile.calibration;
  const ClassTable* disp_table = grid.disp_table;
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
  r.by = by;
  r.complete = profile.complete();
  r.trace = profile.trace_mode() && !profile.trace_chunks.empty();
  r.rusage_since_observed = cal && (cal->mode_flags & format::kModeRusageSinceObserved);
  if (const auto wall = profile.wall_ns()) r.wall_ns = static_cast<double>(*wall);
  r.threads = static_cast<uint32_t>(profile.threads_seen());
  r.sample_every = cal ? cal->sample_every : 0;
  // Sparse calls: with no call timed, was it the calls that were few, or the run that was short?
  // A run of 256 sampling periods or more holds as many timing windows (about 0.26 s at 2^21
  // ticks of 2.1 GHz): calls that came as often as one a period would have met some of them.
  if (cal && cal->window_shift < 63 && r.wall_ns) {
    constexpr double kManyPeriods = 256;
    const double period_ns = static_cast<double>(profile.ticks_to_ns(uint64_t{1} << cal->window_shift));
    r.sparse_calls = period_ns > 0 && *r.wall_ns >= kManyPeriods * period_ns;
  }
  return r;
}

void estimate_calls(CostReport& r, ModelNotes& notes, ReleaseTotals& release_totals, const Profile& profile,
                    const ClassGrid& grid, const Pass1& p1, const Pass2& p2, const Model& model) {
  const ThreadCells cells = thread_class_cells(profile, *grid.table, p1.sizes, release_totals);
  const PooledCells cells_all = pooled_cells(cells, p2, model);
  const ThreadEstimates est = thread_estimates(cells, cells_all, p2, model);
  const DisplaySplit display(profile, grid, p1.sizes);
  Placement pl;
  pl.class_rows.resize(grid.disp_classes.size() + 1);
  const RowInputs in{profile, grid, display, cells, est, p2};
  for (size_t ti = 0; ti < profile.threads.size(); ++ti) {
    const ThreadRow tr = place_thread(pl, notes, in, ti);
    r.calls += tr.calls;
    r.timed += tr.timed;
    r.thread_time_ns += tr.lifetime_ns;
    r.threads_rows.push_back(tr);
  }
  const BusyScale scale = busy_scale(profile.threads);
  for (size_t ti = 0; ti < profile.threads.size(); ++ti) r.threads_rows[ti].busy = busy_thread(profile.threads[ti], scale);
  WindowErrors we = window_errors(p2, cells_all, grid.classes.size() + 1);
  bound_cells(we, pl.est_cells, pl.uncapped_ticks, cells_all);
  finish_class_rows(r, pl, we, grid, p2, profile);
  sum_estimate(r, pl, we, grid, p2, profile);
}

}  // namespace allocscope::cost
