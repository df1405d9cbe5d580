// The text rendering of `allocscope report`: aligned tables that fit in 100 columns.
#include <fmt/format.h>

#include <cmath>
#include <iterator>

#include "render/contention_wording.h"
#include "render/report.h"
#include "render/report_notes.h"
#include "render/report_verdict.h"
#include "render/callsites.h"
#include "render/cpu_parts.h"
#include "render/lock_report.h"
#include "render/shapes.h"
#include "util/text_table.h"
#include "profile/thread_profile.h"
#include "util/units.h"

namespace allocscope {

namespace {

using Align = TextTable::Align;
constexpr size_t kWidth = 100;

std::string dur(double ns) { return format_duration_ns(std::max(0.0, ns)); }

// A duration in a table cell: three significant digits, so that columns stay narrow.
std::string cell_dur(double ns) {
  ns = std::max(0.0, ns);
  if (ns < 10) return fmt::format("{:.1f} ns", ns);
  if (ns < 999.5) return fmt::format("{:.0f} ns", ns);
  static constexpr const char* kUnits[] = {"µs", "ms", "s"};
  double v = ns / 1e3;
  size_t unit = 0;
  while (unit + 1 < std::size(kUnits) && v >= 999.5) {
    v /= 1e3;
    ++unit;
  }
  const int decimals = v < 9.995 ? 2 : v < 99.95 ? 1 : 0;
  return fmt::format("{:.{}f} {}", v, decimals, kUnits[unit]);
}

// A share of a total, or "-" when the total is zero.
std::string pct_of(double part, double total) { return total > 0 ? format_percent(part / total, 1) : "-"; }

std::string count(uint64_t n) { return group_digits(n); }

std::string rusage_count(uint64_t v) { return v == kRusageUnavailable ? "-" : group_digits(v); }

std::string cpu_time(const format::Rusage& r) {
  if (r.utime_us == kRusageUnavailable || r.stime_us == kRusageUnavailable) return "-";
  return cell_dur(static_cast<double>(r.utime_us + r.stime_us) * 1e3);
}

std::string command_line(const CostReport& r) {
  std::string line;
  for (const auto& arg : r.args) line += (line.empty() ? "" : " ") + printable(arg);
  return line.empty() ? printable(r.program) : line;
}

std::string header(const CostReport& r) {
  TextTable fields({{"", Align::Left}, {"", Align::Left}});
  fields.add_row({"program", r.program.empty() ? "-" : fmt::format("{} (pid {})", printable(r.program), r.pid)});
  if (!r.args.empty()) fields.add_row({"command", command_line(r)});
  fields.add_row({"libc", r.libc.empty() ? "-" : (r.libc_version.empty() ? r.libc : r.libc + " " + printable(r.libc_version))});
  fields.add_row({"allocator", r.allocator.empty() ? "-" : printable(r.allocator)});
  fields.add_row({"size classes", r.class_table == "buckets" ? std::string("allocscope size buckets")
                                                              : fmt::format("{} ({})", r.class_table, r.class_table_source)});
  fields.add_row({"wall time", r.wall_ns ? dur(*r.wall_ns) + (r.complete ? "" : " (no end record)") : "-"});
  fields.add_row({"threads", fmt::format("{} ({} busy: at least 1 % of the calls or of their time, or half the mean)", r.threads, r.contention.busy_threads)});
  std::string sampling;
  if (r.sample_every == 0) {
    sampling = "none timed";
  } else if (r.sample_every == 1) {
    sampling = "every call timed";
  } else {
    sampling = fmt::format("timed in windows of 1/{} of the time", r.sample_every);
  }
  fields.add_row({"calls", fmt::format("{} ({} timed: {})", count(r.calls), count(r.timed), sampling)});
  fields.add_row({"allocator time", r.calls > 0 && r.timed == 0 ? std::string("unknown (unsure): no call was timed") :
                  fmt::format("{} ± {}{} = {} of {} thread time", dur(r.allocator_time_ns), dur(r.allocator_error_ns),
                              r.allocator_unsure ? " (unsure)" : "", format_percent(r.allocator_share, 1), dur(r.thread_time_ns))});
  fields.add_row({"", fmt::format("± bound: {}", error_method(r.error))});
  const double t = r.split.total();
  fields.add_row({"", fmt::format("fast path {}, slow but running {}, waiting {}", pct_of(r.split.fast_ns, t),
                                  pct_of(r.split.slow_ns, t), pct_of(r.split.wait_ns, t))});
  return fmt::format("allocscope report: {}\n{}", printable(r.file), fields.render());
}

std::string section(std::string_view title, const std::string& body) {
  return fmt::format("\n{}\n{}", title, body.empty() ? "  (none)\n" : body);
}

// A class's name in a table: a label too long for the column loses its parenthesized remark
// (the JSON has it whole).
std::string class_label(const ClassRow& c, bool buckets) {
  constexpr size_t kLabelWidth = 28;
  if (!c.size_known) return c.label;
  if (buckets) return c.lo == c.hi ? fmt::format("{} B", c.lo) : fmt::format("{}-{} B", c.lo, c.hi);
  const std::string label = printable(c.label);
  if (display_width(label) <= kLabelWidth) return label;
  const size_t paren = label.find(" (");
  if (paren != std::string::npos && display_width(label.substr(0, paren)) <= kLabelWidth) return label.substr(0, paren);
  return fit_text(label, kLabelWidth);
}

// A share in a table cell: "12.3%".
std::string cell_pct(double share) { return std::isfinite(share) ? fmt::format("{:.1f}%", 100 * share) : "-"; }
std::string cell_pct_of(double part, double total) { return total > 0 ? cell_pct(part / total) : "-"; }

// Bytes in a table cell: three significant digits.
std::string cell_bytes(ByteCount bytes) {
  static constexpr const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  if (bytes < 1024) return fmt::format("{} B", static_cast<uint64_t>(bytes));
  double v = static_cast<double>(bytes);
  size_t unit = 0;
  while (unit + 1 < std::size(kUnits) && v >= 1023.5) {
    v /= 1024;
    ++unit;
  }
  const int decimals = v < 9.995 ? 2 : v < 99.95 ? 1 : 0;
  return fmt::format("{:.{}f} {}", v, decimals, kUnits[unit]);
}

// An error bound in a table cell, "unsure" when it exceeds half the figure.
std::string cell_err(double ns, bool unsure) { return cell_dur(ns) + (unsure ? " unsure" : ""); }

std::string classes_section(const CostReport& r) {
  const bool buckets = r.class_table == "buckets";
  TextTable calls({{"class", Align::Left}, {"calls"}, {"calls %"}, {"bytes"}, {"p50"}, {"p90"}, {"p99"}, {"p99.9"}, {"max"}});
  TextTable time({{"class", Align::Left}, {"time"}, {"± error"}, {"time %"}, {"fast"}, {"slow"}, {"waiting"}});
  for (const ClassRow& c : r.classes) {
    const std::string label = class_label(c, buckets);
    std::vector<std::string> row{label, count(c.calls), cell_pct(c.call_share), cell_bytes(c.bytes)};
    if (c.latency) {
      for (double v : {c.latency->p50_ns, c.latency->p90_ns, c.latency->p99_ns, c.latency->p999_ns, c.latency->max_ns}) {
        row.push_back(cell_dur(v));
      }
    } else {
      row.insert(row.end(), 5, "-");
    }
    calls.add_row(std::move(row));
    const double t = c.split.total();
    time.add_row({label, cell_dur(c.time_ns), cell_err(c.error_ns, c.unsure), cell_pct(c.time_share), cell_pct_of(c.split.fast_ns, t),
                  cell_pct_of(c.split.slow_ns, t), cell_pct_of(c.split.wait_ns, t)});
  }
  const double t = r.split.total();
  time.add_row({"all", cell_dur(r.allocator_time_ns), cell_err(r.allocator_error_ns, r.allocator_unsure), r.allocator_time_ns > 0 ? cell_pct(1) : std::string("-"),
                cell_pct_of(r.split.fast_ns, t), cell_pct_of(r.split.slow_ns, t), cell_pct_of(r.split.wait_ns, t)});
  // Long labels (sizes not taken, wide class names) give way before the numbers do.
  calls.shrink_to_fit(0, kWidth, 12);
  time.shrink_to_fit(0, kWidth, 12);
  const std::string what = buckets ? "Size buckets" : "Size classes";
  return section(what + ": calls and latency of timed calls", r.classes.empty() ? "" : calls.render()) +
         section(what + ": estimated time inside the allocator (fast / slow / waiting: shares of the row)",
                 r.classes.empty() ? "" : time.render());
}

std::string threads_time_section(const CostReport& r) {
  TextTable table({{"thread"}, {"tid"}, {"lifetime"}, {"calls"}, {"time"}, {"± error"}, {"of life"}, {"fast"}, {"slow"},
                   {"waiting"}});
  for (const ThreadRow& t : r.threads_rows) {
    const double total = t.split.total();
    table.add_row({std::to_string(t.serial), std::to_string(t.tid), cell_dur(t.lifetime_ns), count(t.calls),
                   cell_dur(t.time_ns) + (t.capped ? "*" : ""), cell_err(t.error_ns, t.unsure), t.lifetime_ns > 0 ? cell_pct(t.share) : "-",
                   cell_pct_of(t.split.fast_ns, total), cell_pct_of(t.split.slow_ns, total), cell_pct_of(t.split.wait_ns, total)});
  }
  std::string body = table.empty() ? "" : table.render();
  if (r.model.capped_threads) body += "  * scaled down to the thread's lifetime\n";
  return section("Threads: estimated time inside the allocator", body);
}

std::string contention_section(const CostReport& r) {
  const Contention& c = r.contention;
  TextTable fields({{"", Align::Left}, {"", Align::Left}});
  fields.add_row({"waiting", fmt::format("{} of allocator time", format_percent(c.wait_share, 1))});
  fields.add_row({"contended time", fmt::format("{} of the time any thread is inside, 2 or more are",
                                                format_percent(c.contended_time_share, 1))});
  fields.add_row({"calls meeting others", fmt::format("{} of {} timed calls placed on the time line",
                                                      pct_of(static_cast<double>(c.contended), static_cast<double>(c.classified)),
                                                      count(c.classified))});
  fields.add_row({"threads inside", c.occupancy ? fmt::format("{:.2f} on average while any is; at most {} at once",
                                                              *c.occupancy, c.max_inside)
                                                : std::string("-")});
  const ContentionVerdict& v = c.verdict;
  std::string body = fmt::format("  verdict: {} (confidence {:.2f})\n", contention_kind_name(v.kind), v.confidence);
  body += wrap_words("why: " + contention_reason(v), 96, "    ");
  if (const std::string advice = contention_advice(v); !advice.empty()) body += wrap_words("what to do: " + advice, 96, "    ");
  body += "  evidence:\n";
  for (const EvidenceItem& e : contention_evidence(v)) {
    body += wrap_words(fmt::format("{} = {:.3g}: {}", e.kind, e.value, e.meaning), 96, "    ");
  }
  body += fields.render();
  if (!c.by_inside.empty()) {
    TextTable inside({{"inside"}, {"calls"}, {"calls %"}, {"mean"}, {"p50"}, {"p99"}, {"vs alone"}});
    for (const InsideRow& row : c.by_inside) {
      inside.add_row({row.inside == 64 ? "64+" : std::to_string(row.inside), count(row.calls),
                      cell_pct_of(static_cast<double>(row.calls), static_cast<double>(c.classified)), cell_dur(row.mean_ns),
                      cell_dur(row.p50_ns), cell_dur(row.p99_ns), row.vs_alone ? fmt::format("{:.2f}x", *row.vs_alone) : "-"});
    }
    body += "\n  Latency by threads inside at the call's start (the caller included):\n" + inside.render();
  }
  TextTable threads({{"thread"}, {"lifetime"}, {"alloc time"}, {"of life"}, {"waiting"}, {"met others"}, {"cpu"},
                     {"vcsw"}, {"ivcsw"}, {"minflt"}});
  for (const ThreadRow& t : r.threads_rows) {
    threads.add_row({std::to_string(t.serial), cell_dur(t.lifetime_ns), cell_dur(t.time_ns) + (t.capped ? "*" : ""),
                     t.lifetime_ns > 0 ? cell_pct(t.share) : "-", cell_pct_of(t.split.wait_ns, t.split.total()),
                     t.classified ? cell_pct(static_cast<double>(t.contended) / static_cast<double>(t.classified)) : "-",
                     cpu_time(t.rusage), rusage_count(t.rusage.nvcsw), rusage_count(t.rusage.nivcsw),
                     rusage_count(t.rusage.minflt)});
  }
  if (!threads.empty())
    body += fmt::format("\n  Per thread (cpu, switches and faults over {}):\n",
                        r.rusage_since_observed ? "its lifetime" : "the whole thread") + threads.render();
  return section("Contention", body);
}

std::string model_section(const CostReport& r) {
  const ModelNotes& m = r.model;
  TextTable fields({{"", Align::Left}, {"", Align::Left}});
  fields.add_row({"probe overhead", fmt::format("{} taken from every timed call", dur(m.probe_overhead_ns))});
  fields.add_row({"time line", fmt::format("{} windows; concurrency not trusted in the first {} of each",
                                           count(m.windows), dur(m.window_trim_ns))});
  fields.add_row({"events", fmt::format("{} read, {} dropped, {} late", count(m.events), count(m.events_dropped),
                                        count(m.late_events))});
  fields.add_row({"blocking evidence",
                  fmt::format("{} rusage samples, {} blocked; {} latency bins from samples", count(m.rusage_samples),
                              count(m.rusage_blocked), m.evidence_bins)});
  const auto blocked = static_cast<uint64_t>(std::llround(m.fallback_blocked_calls));
  fields.add_row({"", fmt::format("elsewhere: {} call{} of {} or more taken as blocked, from the threads'",
                                  count(blocked), blocked == 1 ? "" : "s", dur(m.block_threshold_ns))});
  fields.add_row({"", "voluntary context switches (longest calls first)"});
  fields.add_row({"blocks", fmt::format("{} made, {} given back, {} not given back at exit", count(m.blocks_made),
                                        count(m.blocks_released), count(m.unreleased_blocks))});
  fields.add_row({"", "(releases count in the classes of the blocks made; each realloc makes one)"});
  std::string body = fields.render();
  for (const auto& caveat : report_caveats(r)) body += wrap_words("note: " + caveat, kWidth, "  ");
  return section("Model (docs/analysis.md)", body);
}

std::string shapes_section(const CostReport& r, const ReportDetails& d) {
  if (!d.shapes) {
    return section("Shapes", "  This profile holds no trace: shapes need a profile recorded with `allocscope record --trace`.\n");
  }
  const ShapeReport& s = *d.shapes;
  std::string body = shapes_summary_text(s);
  if (s.missing_records) body += fmt::format("  {} calls are missing from the trace\n", count(s.missing_records));
  return section(fmt::format("Blocks (every call of the trace, {} calls)", count(s.calls)), body) +
         section(s.estimated ? (r.allocator_unsure
                                    ? "Shapes, adjacent size classes merged (time: the estimate above, unsure, apportioned over the shapes)"
                                    : "Shapes, adjacent size classes merged (time: the estimate above, apportioned over the shapes)")
                 : s.timed_calls == s.calls
                     ? "Shapes, adjacent size classes merged (exact time of the traced calls)"
                     : "Shapes, adjacent size classes merged (time of the timed calls, scaled to all)",
                 shape_groups_text(s)) +
         section("Shapes by size class, lifetime and thread", shape_rows_text(s));
}

std::string callsites_section(const ReportDetails& d) {
  return section("Call sites: the costliest per size class (whole chains: --json, or the callsites command)",
                 d.callsites ? callsites_body_text(*d.callsites, kWidth) : "");
}

}  // namespace

std::string report_text(const CostReport& r, const ReportDetails& details) {
  std::string out = header(r);
  out += section("Verdict", wrap_words(verdict_text(r), kWidth, "  "));
  if (r.by == ReportGrouping::Thread) {
    out += threads_time_section(r);
  } else if (r.by == ReportGrouping::Shape) {
    out += shapes_section(r, details);
  } else if (r.by == ReportGrouping::Callsite) {
    out += callsites_section(details);
  } else {
    out += classes_section(r);
  }
  out += contention_section(r);
  if (r.locks.recorded) out += section("Locks outside the allocator", lock_section_text(r.locks, kWidth));
  if (r.cpu.recorded) out += section("Where the CPU time went (sampled)", cpu_section_text(r.cpu));
  out += model_section(r);
  return out;
}

}  // namespace allocscope
