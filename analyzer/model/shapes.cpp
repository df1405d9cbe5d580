#include "model/shapes.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <set>

#include "allocscope/buckets.h"
#include "model/apportion.h"
#include "model/cost_model.h"
#include "util/side_by_side.h"

namespace allocscope {

namespace {

std::optional<uint64_t> quantile_ns(const FineHistogram& h, double q, const TickClock& clock) {
  if (h.empty()) return std::nullopt;
  return clock.to_ns(h.quantile(q));
}

std::optional<uint64_t> quantile_of(const FineHistogram& h, double q) {
  if (h.empty()) return std::nullopt;
  return h.quantile(q);
}

std::vector<ShapeRow> shape_rows(const std::map<ShapeKey, ShapeCounts>& shapes, const TickClock& clock,
                                 auto range_of) {
  std::vector<ShapeRow> rows;
  for (const auto& [key, counts] : shapes) {
    ShapeRow row;
    row.cls = key.cls;
    range_of(key.cls, row);
    row.band = key.band;
    row.cross_thread = key.cross_thread;
    row.blocks = counts.blocks;
    row.calls = counts.calls;
    row.time_ns = clock.to_ns(counts.ticks);
    row.bytes = counts.bytes;
    row.min_size = counts.blocks ? counts.min_size : 0;
    row.max_size = counts.max_size;
    row.by_op = counts.by_op;
    rows.push_back(std::move(row));
  }
  std::stable_sort(rows.begin(), rows.end(), [](const ShapeRow& a, const ShapeRow& b) {
    if (a.time_ns != b.time_ns) return a.time_ns > b.time_ns;
    return a.calls > b.calls;
  });
  return rows;
}

// Fine shapes merged across adjacent classes (shape_groups.h), by time, most first.
std::vector<ShapeGroupRow> group_rows(const std::vector<ShapeRow>& shapes) {
  std::set<ShapeCell> cells;
  for (const ShapeRow& s : shapes) cells.insert({shape_group_key(s.band, s.cross_thread), s.cls});
  const auto runs = class_runs(cells);
  std::map<ShapeCell, ShapeGroupRow> groups;  // by (key, first class of the run)
  std::map<ShapeCell, std::set<uint32_t>> classes;
  for (const ShapeRow& s : shapes) {
    const ShapeGroupKey key = shape_group_key(s.band, s.cross_thread);
    const ShapeCell run{key, runs.at({key, s.cls})};
    ShapeGroupRow& g = groups[run];
    if (g.blocks == 0 || s.min_size < g.lo) g.lo = s.min_size;
    g.hi = std::max(g.hi, s.max_size);
    g.key = key;
    g.blocks += s.blocks;
    g.calls += s.calls;
    g.time_ns += s.time_ns;
    g.bytes += s.bytes;
    classes[run].insert(s.cls);
  }
  std::vector<ShapeGroupRow> rows;
  for (auto& [run, g] : groups) {
    g.classes = static_cast<uint32_t>(classes[run].size());
    rows.push_back(g);
  }
  std::stable_sort(rows.begin(), rows.end(), [](const ShapeGroupRow& a, const ShapeGroupRow& b) {
    if (a.time_ns != b.time_ns) return a.time_ns > b.time_ns;
    return a.calls > b.calls;
  });
  return rows;
}

// One class's lifetimes as a row; none for a class no block went through.
std::optional<ClassLifetimeRow> class_lifetime_row(const ClassLifetimes& cl, const SizeClass& sc, const TickClock& clock) {
  if (cl.blocks == 0 && cl.freed == 0 && cl.leaked == 0) return std::nullopt;
  ClassLifetimeRow row;
  row.lo = sc.lo;
  row.hi = sc.hi;
  row.label = std::string(sc.label);
  row.blocks = cl.blocks;
  row.bytes = cl.bytes;
  row.freed = cl.freed;
  row.same_thread = cl.same_thread;
  row.cross_thread = cl.cross_thread;
  row.leaked = cl.leaked;
  row.leaked_bytes = cl.leaked_bytes;
  row.bands = cl.bands;
  row.p50_ns = quantile_ns(cl.lifetime_ticks, 0.50, clock);
  row.p90_ns = quantile_ns(cl.lifetime_ticks, 0.90, clock);
  row.p99_ns = quantile_ns(cl.lifetime_ticks, 0.99, clock);
  if (!cl.lifetime_ticks.empty()) row.max_ns = clock.to_ns(cl.lifetime_ticks.max());
  row.between_p50 = quantile_of(cl.allocs_between, 0.50);
  row.between_p90 = quantile_of(cl.allocs_between, 0.90);
  row.between_p99 = quantile_of(cl.allocs_between, 0.99);
  if (!cl.allocs_between.empty()) row.between_mean = cl.allocs_between.mean();
  return row;
}

ChainSummary realloc_summary(const ReallocChains& ch) {
  ChainSummary s;
  s.chains = ch.chains;
  s.steps = ch.steps;
  s.in_place = ch.in_place;
  s.moved = ch.moved;
  s.grew = ch.grew;
  s.shrank = ch.shrank;
  s.same = ch.same;
  s.max_length = ch.max_length;
  s.by_length = ch.by_length;
  if (ch.growth_chains) s.mean_growth = std::exp(ch.log_growth_sum / static_cast<double>(ch.growth_chains));
  if (ch.growth_steps) s.mean_step_growth = std::exp(ch.log_step_sum / static_cast<double>(ch.growth_steps));
  return s;
}

// The trace's timeline: live bytes and threads inside, over as many slots as either has.
std::vector<TimelinePoint> timeline_points(const TraceAnalysis& a, const TickClock& clock, uint64_t origin,
                                           uint64_t& slot_ns) {
  const LifetimeResults& l = a.lifetimes;
  auto since_start_ns = [&](uint64_t tick) { return tick > origin ? clock.to_ns(tick - origin) : 0; };
  std::vector<TimelinePoint> points;
  const ConcurrencyResults& c = a.concurrency;
  const size_t slots = std::max(l.timeline.size(), c.timeline.size());
  const double span_ticks = static_cast<double>(a.t1 - a.t0 + 1);
  slot_ns = slots ? clock.to_ns(static_cast<uint64_t>(std::ceil(span_ticks / static_cast<double>(slots)))) : 0;
  for (size_t i = 0; i < slots; ++i) {
    TimelinePoint p;
    const double slot_start = static_cast<double>(a.t0) + span_ticks * static_cast<double>(i) / static_cast<double>(slots);
    const double slot_len = span_ticks / static_cast<double>(slots);
    p.t_ns = since_start_ns(static_cast<uint64_t>(slot_start));
    if (i < l.timeline.size()) {
      p.max_live_bytes = l.timeline[i].max_live;
      p.live_bytes = l.timeline[i].end_live;
    }
    if (i < c.timeline.size()) {
      p.max_inside = c.timeline[i].max_inside;
      p.mean_inside = slot_len > 0 ? static_cast<double>(c.timeline[i].inside_ticks) / slot_len : 0;
    }
    points.push_back(p);
  }
  return points;
}

ConcurrencySummary concurrency_summary(const ConcurrencyResults& c, const TickClock& clock) {
  ConcurrencySummary cs;
  cs.max_inside = c.max_inside;
  cs.span_ns = clock.to_ns(c.span_ticks);
  cs.busy_ns = clock.to_ns(c.busy_ticks);
  if (c.busy_ticks) cs.mean_inside = static_cast<double>(c.inside_ticks) / static_cast<double>(c.busy_ticks);
  for (uint64_t ticks : c.ticks_at) cs.time_at_ns.push_back(clock.to_ns(ticks));
  cs.contended_ns = clock.to_ns(c.contended_ticks);
  cs.serialization_index = c.serialization_index;
  cs.si_calls = c.si_calls;
  cs.alone_calls = c.alone_calls;
  cs.contended_calls = c.contended_calls;
  cs.overhead_ns = clock.to_ns_exact(c.overhead_ticks);
  cs.untimed_calls = c.untimed_calls;
  return cs;
}

}  // namespace

GroupTotals group_totals(const std::vector<ShapeGroupRow>& groups) {
  GroupTotals t;
  for (const ShapeGroupRow& g : groups) {
    t.calls += g.calls;
    t.time_ns += g.time_ns;
  }
  return t;
}

ShapeReport shape_report(const Profile& profile, const TraceAnalysis& a) {
  ShapeReport r;
  r.file = profile.file;
  if (profile.process) r.program = profile.process->exe;
  const ClassTable& table = a.table ? *a.table : class_table_of(profile);
  r.class_table = std::string(table.name());
  r.class_table_source = std::string(table.source());
  r.trace = profile.trace_mode() && !profile.trace_chunks.empty();
  r.complete = profile.complete();
  if (!r.trace) return r;
  const TickClock& clock = profile.clock;
  const LifetimeResults& l = a.lifetimes;
  r.calls = a.merge.calls;
  r.threads = a.merge.threads;
  r.missing_records = a.merge.missing;
  r.repeated_records = a.merge.repeated;
  r.reordered_steps = a.merge.reordered;
  r.blocks = l.blocks;
  r.frees = l.frees;
  r.same_thread_frees = l.same_thread_frees;
  r.cross_thread_frees = l.cross_thread_frees;
  r.resized = l.resized;
  r.unmatched_frees = l.unmatched_frees;
  r.unmatched_reallocs = l.unmatched_reallocs;
  r.null_frees = l.null_frees;
  r.failed = l.failed;
  r.reused_live = l.reused_live;
  r.leaked_blocks = l.leaked_blocks;
  r.leaked_bytes = l.leaked_bytes;
  r.peak_live_bytes = l.peak_live_bytes;
  r.end_live_bytes = l.live_bytes;
  const uint64_t origin = profile.process ? profile.process->info.start_tick : a.t0;
  auto since_start_ns = [&](uint64_t tick) { return tick > origin ? clock.to_ns(tick - origin) : 0; };
  r.peak_live_at_ns = since_start_ns(l.peak_tick);

  const auto classes = table.classes();
  r.shapes = shape_rows(l.shapes, clock, [&](uint32_t cls, ShapeRow& row) {
    row.lo = classes[cls].lo;
    row.hi = classes[cls].hi;
    row.label = std::string(classes[cls].label);
  });
  r.bucket_shapes = shape_rows(l.bucket_shapes, clock, [&](uint32_t b, ShapeRow& row) {
    row.lo = bucket_lo(b);
    row.hi = bucket_hi(b);
    row.label = fmt::format("bucket {}", b);
  });
  r.groups = group_rows(r.shapes);

  for (size_t c = 0; c < l.classes.size(); ++c) {
    if (auto row = class_lifetime_row(l.classes[c], classes[c], clock)) r.classes.push_back(std::move(*row));
  }
  r.realloc = realloc_summary(l.chains);
  r.timeline = timeline_points(a, clock, origin, r.slot_ns);
  r.concurrency = concurrency_summary(a.concurrency, clock);
  r.timed_calls = l.timed_calls;
  return r;
}

namespace {

// The view cells of shape rows: one per (row, op) with calls; `table_class` says whether the rows'
// classes are those of the estimate's table (else kAnyClass).
std::vector<ViewCell> shape_cells(const std::vector<ShapeRow>& rows, bool table_class) {
  std::vector<ViewCell> cells;
  for (size_t i = 0; i < rows.size(); ++i) {
    for (unsigned op = 0; op < kOpSlots; ++op) {
      const TimedCalls& t = rows[i].by_op[op];
      if (t.calls == 0) continue;
      ViewCell c;
      c.row = i;
      c.cls = table_class ? (rows[i].cls == kNoClass ? kEstimateNoClass : rows[i].cls) : kAnyClass;
      c.op = static_cast<uint8_t>(op);
      c.calls = t.calls;
      if (t.timed > 0) c.weight = static_cast<double>(t.ticks) * static_cast<double>(t.calls) / static_cast<double>(t.timed);
      cells.push_back(c);
    }
  }
  return cells;
}

void sort_by_time(std::vector<ShapeRow>& rows) {
  std::stable_sort(rows.begin(), rows.end(), [](const ShapeRow& a, const ShapeRow& b) {
    if (a.time_ns != b.time_ns) return a.time_ns > b.time_ns;
    return a.calls > b.calls;
  });
}

}  // namespace

void apply_estimate(ShapeReport& r, const CostReport& estimate) {
  // A profile whose threads left no counts (no snapshot: cut short) has no estimate to share.
  if (!r.trace || estimate.cells.empty()) return;
  const Apportioned fine = apportion_estimate(estimate, shape_cells(r.shapes, true), r.shapes.size());
  for (size_t i = 0; i < r.shapes.size(); ++i) r.shapes[i].time_ns = static_cast<uint64_t>(std::llround(fine.row_ns[i]));
  const Apportioned coarse = apportion_estimate(estimate, shape_cells(r.bucket_shapes, false), r.bucket_shapes.size());
  for (size_t i = 0; i < r.bucket_shapes.size(); ++i)
    r.bucket_shapes[i].time_ns = static_cast<uint64_t>(std::llround(coarse.row_ns[i]));
  sort_by_time(r.shapes);
  sort_by_time(r.bucket_shapes);
  r.groups = group_rows(r.shapes);
  r.estimated = true;
  r.allocator_time_ns = estimate.allocator_time_ns;
  r.outside_shapes_ns = 0;
  for (double ns : fine.unplaced_ns) r.outside_shapes_ns += ns;
}

ShapeReport analyze_shapes(const std::filesystem::path& path, const TraceOptions& options) {
  auto [shapes, estimate] = side_by_side(
      [&] {
        const Profile profile = load_profile(path);
        return shape_report(profile, analyze_trace(profile, options));
      },
      [&] { return analyze_profile(path); });
  apply_estimate(shapes, estimate);
  return shapes;
}

// ---- comparing two traces ----

ShapeGap attribute_gap(const ShapeReport& base, const ShapeReport& other, const ClassTable& table) {
  struct Acc {
    uint64_t base_calls = 0, other_calls = 0, base_ns = 0, other_ns = 0;
    uint64_t min_size = ~uint64_t{0}, max_size = 0;
  };
  std::map<ShapeKey, Acc> acc;
  ShapeGap gap;
  auto add = [&](const std::vector<ShapeRow>& rows, bool is_base) {
    for (const ShapeRow& s : rows) {
      const auto cls = static_cast<uint32_t>(table.class_of(s.lo));
      Acc& a = acc[ShapeKey{cls, s.band, s.cross_thread}];
      (is_base ? a.base_calls : a.other_calls) += s.calls;
      (is_base ? a.base_ns : a.other_ns) += s.time_ns;
      (is_base ? gap.base_ns : gap.other_ns) += s.time_ns;
      if (s.blocks) {
        a.min_size = std::min(a.min_size, s.min_size);
        a.max_size = std::max(a.max_size, s.max_size);
      }
    }
  };
  add(base.bucket_shapes, true);
  add(other.bucket_shapes, false);
  // Calls in no shape (free(NULL), failed or unmatched calls) are part of each run's total.
  gap.base_outside_ns = base.outside_shapes_ns;
  gap.other_outside_ns = other.outside_shapes_ns;
  gap.base_ns += static_cast<uint64_t>(std::llround(base.outside_shapes_ns));
  gap.other_ns += static_cast<uint64_t>(std::llround(other.outside_shapes_ns));
  gap.gap_ns = static_cast<double>(gap.other_ns) - static_cast<double>(gap.base_ns);
  auto share_of = [&](double delta) { return gap.gap_ns != 0 ? delta / gap.gap_ns : 0; };

  std::set<ShapeCell> cells;
  for (const auto& [key, a] : acc) cells.insert({shape_group_key(key.band, key.cross_thread), key.cls});
  const auto runs = class_runs(cells);
  std::map<ShapeCell, ShapeGapGroup> groups;
  std::map<ShapeCell, std::set<uint32_t>> group_classes;

  const auto classes = table.classes();
  for (const auto& [key, a] : acc) {
    ShapeGapRow row;
    row.cls = key.cls;
    row.lo = classes[key.cls].lo;
    row.hi = classes[key.cls].hi;
    row.min_size = a.max_size ? a.min_size : 0;
    row.max_size = a.max_size;
    row.band = key.band;
    row.cross_thread = key.cross_thread;
    row.base_calls = a.base_calls;
    row.other_calls = a.other_calls;
    row.base_ns = a.base_ns;
    row.other_ns = a.other_ns;
    row.delta_ns = static_cast<double>(a.other_ns) - static_cast<double>(a.base_ns);

    const ShapeGroupKey group_key = shape_group_key(key.band, key.cross_thread);
    const ShapeCell run{group_key, runs.at({group_key, key.cls})};
    ShapeGapGroup& g = groups[run];
    if (group_classes[run].empty() || row.min_size < g.lo) g.lo = row.min_size;
    group_classes[run].insert(key.cls);
    g.key = group_key;
    g.hi = std::max(g.hi, row.max_size);
    g.base_calls += row.base_calls;
    g.other_calls += row.other_calls;
    g.base_ns += row.base_ns;
    g.other_ns += row.other_ns;

    if (row.delta_ns == 0) continue;
    row.share = share_of(row.delta_ns);
    gap.rows.push_back(row);
  }
  for (auto& [run, g] : groups) {
    g.classes = static_cast<uint32_t>(group_classes[run].size());
    g.delta_ns = static_cast<double>(g.other_ns) - static_cast<double>(g.base_ns);
    if (g.delta_ns == 0) continue;
    g.share = share_of(g.delta_ns);
    gap.groups.push_back(g);
  }
  auto by_delta = [](const auto& a, const auto& b) { return std::abs(a.delta_ns) > std::abs(b.delta_ns); };
  std::stable_sort(gap.rows.begin(), gap.rows.end(), by_delta);
  std::stable_sort(gap.groups.begin(), gap.groups.end(), by_delta);
  return gap;
}

}  // namespace allocscope
