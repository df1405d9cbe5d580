#include "model/shapes.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "allocscope/buckets.h"
#include "model/apportion.h"
#include "model/cost_model.h"
#include "util/side_by_side.h"
#include "util/text_table.h"
#include "util/units.h"

namespace allocscope {

namespace {

using Align = TextTable::Align;

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

std::string opt_duration(const std::optional<uint64_t>& ns) {
  return ns ? format_duration_ns(static_cast<double>(*ns)) : "-";
}

std::string opt_count(const std::optional<uint64_t>& n) { return n ? group_digits(*n) : "-"; }

// One character per slot, from ▁ to █ relative to the highest value.
std::string sparkline(const std::vector<double>& values) {
  static const char* kBars[] = {" ", "▁", "▂", "▃", "▄", "▅", "▆", "▇", "█"};
  double top = 0;
  for (double v : values) top = std::max(top, v);
  std::string out;
  for (double v : values) {
    const int level = top > 0 ? static_cast<int>(std::ceil(v / top * 8)) : 0;
    out += kBars[std::clamp(level, 0, 8)];
  }
  return out;
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

// Requested sizes, exact: "16–1039 B", "3000 B".
std::string request_range_text(uint64_t lo, uint64_t hi) {
  return lo == hi ? fmt::format("{} B", lo) : fmt::format("{}–{} B", lo, hi);
}

std::string thread_pattern(bool cross_thread) { return cross_thread ? "cross-thread" : "same-thread"; }

}  // namespace

std::string size_range_text(uint64_t lo, uint64_t hi) {
  if (hi == ~uint64_t{0}) return fmt::format("≥ {}", format_bytes(lo));
  if (lo == hi) return format_bytes(lo);
  if (hi < 1024) return fmt::format("{}–{} B", lo, hi);
  return fmt::format("{}–{}", format_bytes(lo), format_bytes(hi));
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
    const ClassLifetimes& cl = l.classes[c];
    if (cl.blocks == 0 && cl.freed == 0 && cl.leaked == 0) continue;
    ClassLifetimeRow row;
    row.lo = classes[c].lo;
    row.hi = classes[c].hi;
    row.label = std::string(classes[c].label);
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
    r.classes.push_back(std::move(row));
  }

  const ReallocChains& ch = l.chains;
  r.realloc.chains = ch.chains;
  r.realloc.steps = ch.steps;
  r.realloc.in_place = ch.in_place;
  r.realloc.moved = ch.moved;
  r.realloc.grew = ch.grew;
  r.realloc.shrank = ch.shrank;
  r.realloc.same = ch.same;
  r.realloc.max_length = ch.max_length;
  r.realloc.by_length = ch.by_length;
  if (ch.growth_chains) r.realloc.mean_growth = std::exp(ch.log_growth_sum / static_cast<double>(ch.growth_chains));
  if (ch.growth_steps) r.realloc.mean_step_growth = std::exp(ch.log_step_sum / static_cast<double>(ch.growth_steps));

  const ConcurrencyResults& c = a.concurrency;
  const size_t slots = std::max(l.timeline.size(), c.timeline.size());
  const double span_ticks = static_cast<double>(a.t1 - a.t0 + 1);
  r.slot_ns = slots ? clock.to_ns(static_cast<uint64_t>(std::ceil(span_ticks / static_cast<double>(slots)))) : 0;
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
    r.timeline.push_back(p);
  }

  ConcurrencySummary& cs = r.concurrency;
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

// ---- JSON ----

namespace {

void write_shape_row(JsonWriter& w, const ShapeRow& s) {
  w.begin_object();
  w.field("lo", s.lo).key("hi");
  s.hi == ~uint64_t{0} ? w.null() : w.value(s.hi);
  w.field("label", s.label).field("lifetime", lifetime_band_name(s.band));
  w.field("cross_thread", s.cross_thread).field("blocks", s.blocks).field("calls", s.calls);
  w.field("time_ns", s.time_ns).field("bytes", s.bytes);
  w.field("min_size", s.min_size).field("max_size", s.max_size);
  w.end_object();
}

}  // namespace

void write_shape_fields(JsonWriter& w, const ShapeReport& r) {
  w.field("cross_thread_frees", r.cross_thread_frees).field("same_thread_frees", r.same_thread_frees);
  w.field("leaked_blocks", r.leaked_blocks).field("leaked_bytes", r.leaked_bytes);
  w.field("peak_live_bytes", r.peak_live_bytes);
  w.key("shapes").begin_array();
  for (const ShapeRow& s : r.shapes) write_shape_row(w, s);
  w.end_array();

  w.field("shapes_time_estimated", r.estimated);
  w.field("shapes_allocator_time_ns", static_cast<int64_t>(std::llround(r.allocator_time_ns)));
  w.field("outside_shapes_ns", static_cast<int64_t>(std::llround(r.outside_shapes_ns)));
  w.key("trace").begin_object();
  w.field("calls", r.calls).field("timed_calls", r.timed_calls).field("threads", r.threads).field("complete", r.complete);
  w.field("class_table", r.class_table);
  w.field("missing_records", r.missing_records).field("repeated_records", r.repeated_records);
  w.field("reordered_steps", r.reordered_steps);
  w.field("blocks", r.blocks).field("frees", r.frees).field("resized", r.resized);
  w.field("unmatched_frees", r.unmatched_frees).field("unmatched_reallocs", r.unmatched_reallocs);
  w.field("null_frees", r.null_frees).field("failed", r.failed).field("reused_live", r.reused_live);
  w.field("peak_live_at_ns", r.peak_live_at_ns).field("end_live_bytes", r.end_live_bytes);

  w.key("lifetimes").begin_array();
  for (const ClassLifetimeRow& c : r.classes) {
    w.begin_object();
    w.field("lo", c.lo).key("hi");
    c.hi == ~uint64_t{0} ? w.null() : w.value(c.hi);
    w.field("label", c.label).field("blocks", c.blocks).field("bytes", c.bytes);
    w.field("freed", c.freed).field("same_thread", c.same_thread).field("cross_thread", c.cross_thread);
    w.field("leaked", c.leaked).field("leaked_bytes", c.leaked_bytes);
    w.key("bands").begin_object();
    for (unsigned b = 0; b < kLifetimeBands; ++b) {
      w.field(lifetime_band_name(static_cast<LifetimeBand>(b)), c.bands[b]);
    }
    w.end_object();
    w.field("p50_ns", c.p50_ns).field("p90_ns", c.p90_ns).field("p99_ns", c.p99_ns).field("max_ns", c.max_ns);
    w.field("allocs_between_p50", c.between_p50).field("allocs_between_p90", c.between_p90);
    w.field("allocs_between_p99", c.between_p99).field("allocs_between_mean", c.between_mean);
    w.end_object();
  }
  w.end_array();

  const ChainSummary& ch = r.realloc;
  w.key("realloc_chains").begin_object();
  w.field("chains", ch.chains).field("reallocs", ch.steps).field("in_place", ch.in_place);
  w.field("moved", ch.moved).field("grew", ch.grew).field("shrank", ch.shrank).field("same_size", ch.same);
  w.field("max_length", ch.max_length);
  w.field("mean_growth", ch.mean_growth).field("mean_step_growth", ch.mean_step_growth);
  w.key("by_length").begin_array();
  for (const auto& [length, chains] : ch.by_length) {
    w.begin_object().field("length", length).field("chains", chains).end_object();
  }
  w.end_array();
  w.end_object();

  const ConcurrencySummary& cs = r.concurrency;
  w.key("concurrency").begin_object();
  w.field("max_inside", cs.max_inside).field("span_ns", cs.span_ns).field("busy_ns", cs.busy_ns);
  w.field("contended_ns", cs.contended_ns).field("mean_inside", cs.mean_inside);
  w.field("serialization_index", cs.serialization_index).field("si_calls", cs.si_calls);
  w.field("alone_calls", cs.alone_calls).field("contended_calls", cs.contended_calls);
  // Picoseconds: the probe overhead summed over calls can be below a nanosecond.
  w.field("overhead_ps", static_cast<uint64_t>(std::llround(std::max(0.0, cs.overhead_ns) * 1000)));
  w.field("untimed_calls", cs.untimed_calls);
  w.key("time_at_ns").begin_array();
  for (uint64_t ns : cs.time_at_ns) w.value(ns);
  w.end_array();
  w.end_object();

  w.key("timeline").begin_object();
  w.field("slot_ns", r.slot_ns);
  w.key("points").begin_array();
  for (const TimelinePoint& p : r.timeline) {
    w.begin_object().field("t_ns", p.t_ns).field("max_live_bytes", p.max_live_bytes);
    w.field("live_bytes", p.live_bytes).field("max_inside", p.max_inside);
    w.field("mean_inside", std::round(p.mean_inside * 1000) / 1000).end_object();
  }
  w.end_array();
  w.end_object();
  w.end_object();
}

void write_shape_groups(JsonWriter& w, const ShapeReport& r) {
  uint64_t calls = 0, time = 0;
  for (const ShapeGroupRow& g : r.groups) {
    calls += g.calls;
    time += g.time_ns;
  }
  auto share = [](uint64_t part, uint64_t total) {
    return total ? std::round(static_cast<double>(part) / static_cast<double>(total) * 1e4) / 1e4 : 0.0;
  };
  w.key("shape_groups").begin_array();
  for (const ShapeGroupRow& g : r.groups) {
    w.begin_object();
    w.field("lo", g.lo).field("hi", g.hi).field("lifetime", lifetime_group_name(g.key.group));
    w.field("cross_thread", g.key.cross_thread).field("classes", g.classes);
    w.field("description", describe_shape_group(g.lo, g.hi, g.key));
    w.field("blocks", g.blocks).field("calls", g.calls).field("time_ns", g.time_ns).field("bytes", g.bytes);
    w.field("call_share", share(g.calls, calls)).field("time_share", share(g.time_ns, time));
    w.end_object();
  }
  w.end_array();
}

std::string shapes_json(const ShapeReport& r) {
  std::string out;
  JsonWriter w(out);
  w.begin_object();
  w.field("schema", "allocscope-shapes/1");
  w.field("file", r.file).field("program", r.program).field("has_trace", r.trace);
  if (r.trace) {
    write_shape_fields(w, r);
    write_shape_groups(w, r);
  }
  w.end_object();
  out += '\n';
  return out;
}

// ---- text ----

std::string shapes_summary_text(const ShapeReport& r) {
  TextTable summary({{"", Align::Left}, {"", Align::Left}});
  summary.add_row({"blocks", fmt::format("{} obtained, {} freed ({} by another thread), {} resized by realloc",
                                         group_digits(r.blocks), group_digits(r.frees),
                                         group_digits(r.cross_thread_frees), group_digits(r.resized))});
  summary.add_row({r.complete ? "leaked at exit" : "live at the end",
                   fmt::format("{} blocks, {}", group_digits(r.leaked_blocks), format_bytes(r.leaked_bytes))});
  summary.add_row({"live bytes", fmt::format("peak {} at {}", format_bytes(r.peak_live_bytes),
                                             format_duration_ns(static_cast<double>(r.peak_live_at_ns)))});
  if (r.unmatched_frees || r.unmatched_reallocs) {
    summary.add_row({"unmatched", fmt::format("{} frees and {} reallocs of blocks obtained before the trace",
                                              group_digits(r.unmatched_frees), group_digits(r.unmatched_reallocs))});
  }
  const ChainSummary& ch = r.realloc;
  if (ch.steps) {
    summary.add_row({"realloc chains",
                     fmt::format("{} chains, {} reallocs ({} in place), longest {}{}", group_digits(ch.chains),
                                 group_digits(ch.steps),
                                 format_percent(static_cast<double>(ch.in_place) / static_cast<double>(ch.steps), 1),
                                 ch.max_length,
                                 ch.mean_step_growth ? fmt::format(", ×{:.2f} per realloc", *ch.mean_step_growth) : "")});
  }
  if (r.estimated) {
    summary.add_row({"allocator time",
                     fmt::format("{} (report's estimate): {} in shapes, {} in calls of no shape",
                                 format_duration_ns(r.allocator_time_ns),
                                 format_duration_ns(r.allocator_time_ns - r.outside_shapes_ns),
                                 format_duration_ns(r.outside_shapes_ns))});
  }
  const ConcurrencySummary& cs = r.concurrency;
  summary.add_row({"threads inside",
                   fmt::format("at most {}, {} on average while any{}", cs.max_inside,
                               cs.mean_inside ? fmt::format("{:.2f}", *cs.mean_inside) : "-",
                               cs.serialization_index
                                   ? fmt::format("; serialization index {:.2f}", *cs.serialization_index)
                                   : "") +
                       (cs.untimed_calls ? " (timed windows only)" : "")});
  if (r.timed_calls < r.calls) {
    summary.add_row({"timed calls", fmt::format("{} of {} (recorded with --sample: the other calls' times are "
                                                "estimated from them)",
                                                group_digits(r.timed_calls), group_digits(r.calls))});
  }
  return summary.render();
}

std::string shape_groups_text(const ShapeReport& r, size_t rows) {
  uint64_t calls = 0, time = 0;
  for (const ShapeGroupRow& g : r.groups) {
    calls += g.calls;
    time += g.time_ns;
  }
  TextTable table({{"shape", Align::Left}, {"classes"}, {"blocks"}, {"calls"}, {"calls %"}, {"time"}, {"time %"}});
  for (size_t i = 0; i < r.groups.size() && i < rows; ++i) {
    const ShapeGroupRow& g = r.groups[i];
    table.add_row({describe_shape_group(g.lo, g.hi, g.key), group_digits(g.classes), group_digits(g.blocks),
                   group_digits(g.calls), calls ? format_percent(static_cast<double>(g.calls) / static_cast<double>(calls), 1) : "-",
                   format_duration_ns(static_cast<double>(g.time_ns)),
                   time ? format_percent(static_cast<double>(g.time_ns) / static_cast<double>(time), 1) : "-"});
  }
  std::string out = table.render();
  if (r.groups.size() > rows) out += fmt::format("  … {} more (--json lists all)\n", r.groups.size() - rows);
  return out;
}

std::string shape_rows_text(const ShapeReport& r, size_t rows) {
  TextTable shapes({{"size class", Align::Left}, {"lifetime", Align::Left}, {"freed by", Align::Left},
                    {"blocks"}, {"calls"}, {"time"}, {"share"}});
  uint64_t total = 0;
  for (const ShapeRow& s : r.shapes) total += s.time_ns;
  for (size_t i = 0; i < r.shapes.size() && i < rows; ++i) {
    const ShapeRow& s = r.shapes[i];
    shapes.add_row({size_range_text(s.lo, s.hi), lifetime_band_label(s.band),
                    s.band == LifetimeBand::Leaked ? "-" : (s.cross_thread ? "other thread" : "same thread"),
                    group_digits(s.blocks), group_digits(s.calls), format_duration_ns(static_cast<double>(s.time_ns)),
                    total ? format_percent(static_cast<double>(s.time_ns) / static_cast<double>(total), 1) : "-"});
  }
  std::string out = shapes.render();
  if (r.shapes.size() > rows) out += fmt::format("  … {} more shapes (--json lists all)\n", r.shapes.size() - rows);
  return out;
}

std::string shapes_text(const ShapeReport& r) {
  std::string out = fmt::format("Shapes of {}\n", r.program.empty() ? r.file : r.program);
  if (!r.trace) {
    out += "  This profile holds no trace: record with `allocscope record --trace` to see shapes.\n";
    return out;
  }
  out += fmt::format("  {} calls on {} threads; classes of {} ({})\n", group_digits(r.calls), r.threads,
                     r.class_table, r.class_table_source);
  if (r.missing_records) out += fmt::format("  {} calls are missing from the trace\n", group_digits(r.missing_records));
  out += '\n';
  out += shapes_summary_text(r);

  out += "\nShapes, adjacent size classes merged, by allocator time\n";
  out += shape_groups_text(r);
  out += "\nShapes by size class, lifetime and thread, by allocator time\n";
  out += shape_rows_text(r);

  out += "\nLifetimes by size class\n";
  TextTable classes({{"size class", Align::Left}, {"blocks"}, {"cross"}, {"leaked"}, {"<1µs"}, {"<10µs"},
                     {"<100µs"}, {"<1ms"}, {"<1s"}, {"≥1s"}, {"p50"}, {"p99"}, {"allocs between p50/p99"}});
  for (const ClassLifetimeRow& c : r.classes) {
    std::vector<std::string> row = {size_range_text(c.lo, c.hi), group_digits(c.blocks), group_digits(c.cross_thread),
                                    group_digits(c.leaked)};
    for (unsigned b = 0; b + 1 < kLifetimeBands; ++b) row.push_back(group_digits(c.bands[b]));
    row.push_back(opt_duration(c.p50_ns));
    row.push_back(opt_duration(c.p99_ns));
    row.push_back(fmt::format("{} / {}", opt_count(c.between_p50), opt_count(c.between_p99)));
    classes.add_row(std::move(row));
  }
  out += classes.render();

  if (!r.timeline.empty()) {
    std::vector<double> live, inside;
    for (const TimelinePoint& p : r.timeline) {
      live.push_back(static_cast<double>(p.max_live_bytes));
      inside.push_back(p.mean_inside);
    }
    out += fmt::format("\nOver time ({} per character)\n", format_duration_ns(static_cast<double>(r.slot_ns)));
    out += fmt::format("  live bytes      |{}| peak {}\n", sparkline(live), format_bytes(r.peak_live_bytes));
    out += fmt::format("  threads inside  |{}| at most {}\n", sparkline(inside), r.concurrency.max_inside);
  }
  return out;
}

// ---- comparing two traces ----

std::string describe_shape(uint64_t lo, uint64_t hi, LifetimeBand band, bool cross_thread) {
  if (band == LifetimeBand::Leaked) return fmt::format("leaked {}", size_range_text(lo, hi));
  const char* life = band <= LifetimeBand::Under10us ? "short-lived"
                     : band <= LifetimeBand::Under1s ? "medium-lived"
                                                     : "long-lived";
  return fmt::format("{} ({}) {} {}", life, lifetime_band_label(band), cross_thread ? "cross-thread" : "same-thread",
                     size_range_text(lo, hi));
}

std::string describe_shape_group(uint64_t lo, uint64_t hi, ShapeGroupKey key) {
  if (key.group == LifetimeGroup::Leaked) return fmt::format("leaked {}", request_range_text(lo, hi));
  const char* life = key.group == LifetimeGroup::Short    ? "short-lived"
                     : key.group == LifetimeGroup::Medium ? "medium-lived"
                                                          : "long-lived";
  return fmt::format("{} {} {}", life, thread_pattern(key.cross_thread), request_range_text(lo, hi));
}

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

void write_shape_gap(JsonWriter& w, const ShapeGap& gap) {
  w.begin_object();
  w.field("base_ns", gap.base_ns).field("other_ns", gap.other_ns).field("gap_ns", gap.gap_ns);
  w.field("base_outside_shapes_ns", static_cast<int64_t>(std::llround(gap.base_outside_ns)));
  w.field("other_outside_shapes_ns", static_cast<int64_t>(std::llround(gap.other_outside_ns)));
  w.key("groups").begin_array();
  for (const ShapeGapGroup& g : gap.groups) {
    w.begin_object();
    w.field("lo", g.lo).field("hi", g.hi).field("lifetime", lifetime_group_name(g.key.group));
    w.field("cross_thread", g.key.cross_thread).field("classes", g.classes);
    w.field("description", describe_shape_group(g.lo, g.hi, g.key));
    w.field("base_calls", g.base_calls).field("other_calls", g.other_calls);
    w.field("base_ns", g.base_ns).field("other_ns", g.other_ns).field("delta_ns", g.delta_ns);
    w.field("share", g.share);
    w.end_object();
  }
  w.end_array();
  w.key("shapes").begin_array();
  for (const ShapeGapRow& s : gap.rows) {
    w.begin_object();
    w.field("lo", s.lo).key("hi");
    s.hi == ~uint64_t{0} ? w.null() : w.value(s.hi);
    w.field("lifetime", lifetime_band_name(s.band)).field("cross_thread", s.cross_thread);
    w.field("description", describe_shape(s.lo, s.hi, s.band, s.cross_thread));
    w.field("base_calls", s.base_calls).field("other_calls", s.other_calls);
    w.field("base_ns", s.base_ns).field("other_ns", s.other_ns).field("delta_ns", s.delta_ns);
    w.field("share", s.share);
    w.end_object();
  }
  w.end_array();
  w.end_object();
}

std::string shape_gap_text(const ShapeGap& gap, size_t rows) {
  std::string out = fmt::format("Allocator time (each run's estimate, apportioned over its shapes) {} → {} ({}), by shape:\n",
                                format_duration_ns(static_cast<double>(gap.base_ns)),
                                format_duration_ns(static_cast<double>(gap.other_ns)), format_signed_duration_ns(gap.gap_ns, "−"));
  if (gap.base_outside_ns > 0 || gap.other_outside_ns > 0) {
    out += fmt::format("  of which calls in no shape (free(NULL), failed or unmatched calls): {} → {}\n",
                       format_duration_ns(gap.base_outside_ns), format_duration_ns(gap.other_outside_ns));
  }
  TextTable merged({{"shape (adjacent size classes merged)", Align::Left}, {"before"}, {"after"}, {"difference"},
                    {"of the gap"}});
  for (size_t i = 0; i < gap.groups.size() && i < rows; ++i) {
    const ShapeGapGroup& g = gap.groups[i];
    merged.add_row({describe_shape_group(g.lo, g.hi, g.key), format_duration_ns(static_cast<double>(g.base_ns)),
                    format_duration_ns(static_cast<double>(g.other_ns)), format_signed_duration_ns(g.delta_ns, "−"),
                    format_percent(g.share, 1)});
  }
  out += merged.render();
  out += "\nBy size class (of the first profile) and lifetime band:\n";
  TextTable table({{"shape", Align::Left}, {"before"}, {"after"}, {"difference"}, {"of the gap"}});
  for (size_t i = 0; i < gap.rows.size() && i < rows; ++i) {
    const ShapeGapRow& s = gap.rows[i];
    table.add_row({describe_shape(s.lo, s.hi, s.band, s.cross_thread),
                   format_duration_ns(static_cast<double>(s.base_ns)),
                   format_duration_ns(static_cast<double>(s.other_ns)), format_signed_duration_ns(s.delta_ns, "−"),
                   format_percent(s.share, 1)});
  }
  out += table.render();
  return out;
}

}  // namespace allocscope
