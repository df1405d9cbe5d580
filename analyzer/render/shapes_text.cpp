// shapes_text.cpp — the shapes of a trace and the gap between two traces as text (shapes.h).
#include "render/shapes.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "util/text_table.h"
#include "util/units.h"

namespace allocscope {

namespace {

using Align = TextTable::Align;

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

// Requested sizes, exact: "16–1039 B", "3000 B".
std::string request_range_text(uint64_t lo, uint64_t hi) {
  return lo == hi ? fmt::format("{} B", lo) : fmt::format("{}–{} B", lo, hi);
}

std::string thread_pattern(bool cross_thread) { return cross_thread ? "cross-thread" : "same-thread"; }

}  // namespace

const char* lifetime_band_label(LifetimeBand band) {
  constexpr const char* labels[kLifetimeBands] = {"< 1 µs", "< 10 µs", "< 100 µs", "< 1 ms",
                                                  "< 1 s",  "≥ 1 s",   "leaked"};
  return labels[static_cast<unsigned>(band)];
}

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
  const GroupTotals totals = group_totals(r.groups);
  const uint64_t calls = totals.calls, time = totals.time_ns;
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
