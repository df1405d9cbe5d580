// The HTML page of `allocscope report --html`: see html_report.h.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "render/cpu_parts.h"
#include "render/html_report.h"
#include "render/html_sections.h"
#include "render/report_notes.h"
#include "render/report_verdict.h"
#include "util/units.h"

namespace allocscope {

namespace {

std::string command_line(const CostReport& r) {
  std::string line;
  for (const auto& arg : r.args) line += (line.empty() ? "" : " ") + arg;
  return line.empty() ? r.program : line;
}

void add_facts(HtmlPage& page, const CostReport& r) {
  page.fact("program", r.program.empty() ? "-" : fmt::format("{} (pid {})", r.program, r.pid));
  if (!r.args.empty()) page.fact("command", command_line(r));
  page.fact("libc", r.libc.empty() ? "-" : (r.libc_version.empty() ? r.libc : r.libc + " " + r.libc_version));
  page.fact("allocator", r.allocator.empty() ? "-" : r.allocator);
  page.fact("size classes", r.class_table == "buckets" ? std::string("allocscope size buckets")
                                                        : fmt::format("{} ({})", r.class_table, r.class_table_source));
  page.fact("wall time", r.wall_ns ? format_duration_ns(*r.wall_ns) + (r.complete ? "" : " (no end record)") : "-");
  page.fact("threads", fmt::format("{} ({} busy: at least 1 % of the calls or of their time, or half the mean per calling thread)", r.threads, r.contention.busy_threads));
  page.fact("calls", fmt::format("{} ({} timed)", group_digits(r.calls), group_digits(r.timed)));
  const double t = r.split.total();
  page.fact("allocator time",
            fmt::format("{} ± {}{} = {} of {} thread time; fast path {}, slow but running {}, waiting {}",
                        format_duration_ns(r.allocator_time_ns), format_duration_ns(r.allocator_error_ns),
                        r.allocator_unsure ? " (unsure)" : "",
                        format_percent(r.allocator_share, 1), format_duration_ns(r.thread_time_ns), format_percent(t > 0 ? r.split.fast_ns / t : 0, 1),
                        format_percent(t > 0 ? r.split.slow_ns / t : 0, 1), format_percent(t > 0 ? r.split.wait_ns / t : 0, 1)));
}

void add_class_costs(HtmlPage& page, const CostReport& r) {
  const auto shown = busiest_classes(r, kBarRows);
  StackedBars bars;
  bars.label = "allocator time per size class, stacked by fast, slow and waiting";
  bars.axis = "estimated time inside the allocator";
  bars.series = split_series();
  TimeSplit rest;
  size_t rest_rows = 0;
  for (const auto& c : r.classes) {
    if (std::find(shown.begin(), shown.end(), &c) == shown.end()) {
      rest.add(c.split);
      ++rest_rows;
      continue;
    }
    bars.rows.push_back({c.label, split_values(c.split),
                         fmt::format("{} ± {} · {}", format_duration_ns(c.time_ns), format_duration_ns(c.error_ns),
                                     format_percent(c.time_share, 1)),
                         "", c.error_ns});
  }
  if (rest_rows > 0) {
    bars.rows.push_back({fmt::format("{} other classes", rest_rows), split_values(rest),
                         fmt::format("{} · {}", format_duration_ns(rest.total()),
                                     format_percent(r.allocator_time_ns > 0 ? rest.total() / r.allocator_time_ns : 0, 1)),
                         "muted"});
    page.cut(fmt::format("{} size classes with the least time are summed into one bar", rest_rows));
  }
  std::vector<std::vector<std::string>> table{{"size class", "calls", "calls %", "bytes", "p50", "p99", "max",
                                               "time", "±", "time %"}};
  for (const auto* c : shown) {
    table.push_back({c->label, group_digits(c->calls), format_percent(c->call_share, 1), format_bytes(c->bytes),
                     c->latency ? format_duration_ns(c->latency->p50_ns) : "-",
                     c->latency ? format_duration_ns(c->latency->p99_ns) : "-",
                     c->latency ? format_duration_ns(c->latency->max_ns) : "-", format_duration_ns(c->time_ns),
                     format_duration_ns(c->error_ns), format_percent(c->time_share, 1)});
  }
  page.section("Where the allocator's time goes, by size class",
               "Estimated time inside the allocator per size class, split into the fast path (what the calls cost "
               "alone), slow but running (contention, faults, preemption) and waiting (blocked off-CPU); the "
               "error bar is the estimate's ± bound (2 standard errors of the sampling).",
               stacked_bars_svg(bars) + html_table(table));
}

void add_histograms(HtmlPage& page, const CostReport& r) {
  std::vector<const ClassRow*> with_events;
  for (const auto& c : r.classes) {
    if (!c.histogram.empty()) with_events.push_back(&c);
  }
  std::stable_sort(with_events.begin(), with_events.end(),
                   [](const ClassRow* a, const ClassRow* b) { return a->time_ns > b->time_ns; });
  if (with_events.size() > kHistogramPanels) {
    page.cut(fmt::format("latency histograms of {} size classes with less time (the {} with the most are drawn)",
                         with_events.size() - kHistogramPanels, kHistogramPanels));
    with_events.resize(kHistogramPanels);
  }
  std::sort(with_events.begin(), with_events.end());
  if (with_events.empty()) {
    page.section("Latency per size class", "No timed calls: nothing to draw.", "");
    return;
  }
  std::vector<HistogramSeries> all;
  for (const auto* c : with_events) all.push_back(histogram_series(*c, {"", "fast"}));
  const HistogramAxes axes = histogram_axes(all);
  std::string html = "<div class=\"grid\">";
  for (size_t i = 0; i < with_events.size(); ++i) {
    const ClassRow& c = *with_events[i];
    html += histogram_svg(c.label, latency_caption(c), {all[i]}, axes);
  }
  html += "</div>";
  page.section("Latency per size class",
               "Timed calls per latency bin (a quarter of a power of two wide), as measured, probe included; both "
               "axes are logarithmic and shared by the panels.",
               html);
}

void add_threads(HtmlPage& page, const CostReport& r) {
  std::vector<const ThreadRow*> rows;
  for (const auto& t : r.threads_rows) {
    if (t.calls > 0) rows.push_back(&t);
  }
  std::stable_sort(rows.begin(), rows.end(), [](const ThreadRow* a, const ThreadRow* b) { return a->time_ns > b->time_ns; });
  if (rows.size() > kBarRows) {
    page.cut(fmt::format("{} threads with the least allocator time are not drawn per thread", rows.size() - kBarRows));
    rows.resize(kBarRows);
  }
  std::sort(rows.begin(), rows.end(), [](const ThreadRow* a, const ThreadRow* b) { return a->serial < b->serial; });
  StackedBars bars;
  bars.label = "allocator time per thread, stacked by fast, slow and waiting";
  bars.axis = "estimated time inside the allocator";
  bars.series = split_series();
  for (const auto* t : rows) {
    bars.rows.push_back({fmt::format("thread {}", t->serial), split_values(t->split),
                         fmt::format("{} · {} of its life", format_duration_ns(t->time_ns), format_percent(t->share, 1)), "",
                         t->error_ns});
  }
  std::vector<std::vector<std::string>> inside{{"threads inside", "timed calls", "mean", "p50", "p99", "vs alone"}};
  for (const auto& row : r.contention.by_inside) {
    inside.push_back({std::to_string(row.inside), group_digits(row.calls), format_duration_ns(row.mean_ns),
                      format_duration_ns(row.p50_ns), format_duration_ns(row.p99_ns),
                      row.vs_alone ? fmt::format("{:.2f}×", *row.vs_alone) : "-"});
  }
  const Contention& c = r.contention;
  const std::string summary = fmt::format(
      "Waiting share {}; serialization index {}; threads inside while busy {} on average, {} at most; {} of timed "
      "calls started with another thread inside.",
      format_percent(c.wait_share, 1), c.serialization_index ? fmt::format("{:.2f}", *c.serialization_index) : "-",
      c.occupancy ? fmt::format("{:.2f}", *c.occupancy) : "-", c.max_inside, format_percent(c.contended_share, 1));
  page.section("Allocator time per thread, and latency by threads inside", summary,
               (rows.empty() ? std::string() : stacked_bars_svg(bars)) + html_table(inside));
}

// The program's own contended locks (record --locks): totals, then the top locks by wait.
void add_locks(HtmlPage& page, const CostReport& r) {
  const LockReport& l = r.locks;
  if (!l.recorded) return;
  const std::string summary = fmt::format(
      "Contended waits on the program's own mutexes and rwlocks: {} in {} waits, {} of thread time; unlocking "
      "(sampled, estimated): {}; lock time {}, {} of thread time. Condition waits (waiting for work by design, "
      "not contention): {} in {} waits. The allocator's own locks are not in these figures.",
      format_duration_ns(l.wait_ns), group_digits(l.waits), format_percent(l.share, 1), format_duration_ns(l.unlock_ns),
      format_duration_ns(l.time_ns), format_percent(l.time_share, 1), format_duration_ns(l.cond_wait_ns), group_digits(l.cond_waits));
  std::vector<std::vector<std::string>> rows{{"lock", "kind", "waits", "wait", "share of thread time", "longest",
                                              "threads", "call site"}};
  auto add = [&](const LockRow& row) {
    for (size_t i = 0; i < row.sites.size(); ++i) {
      const LockSite& s = row.sites[i];
      std::string chain;
      for (size_t k = 0; k < s.chain.size(); ++k) chain += (k ? " ← " : "") + s.chain[k];
      if (!s.location.empty()) chain += " (" + s.location + ")";
      if (i == 0) {
        rows.push_back({fmt::format("{:#x}", row.address), row.kind, group_digits(row.waits),
                        format_duration_ns(row.wait_ns), format_percent(row.share, 1), format_duration_ns(row.max_ns),
                        std::to_string(row.threads), chain});
      } else {
        rows.push_back({"", "", group_digits(s.waits), format_duration_ns(s.wait_ns), "", format_duration_ns(s.max_ns),
                        "", chain});
      }
    }
  };
  for (const LockRow& row : l.locks) add(row);
  for (const LockRow& row : l.conditions) add(row);
  page.section("Locks outside the allocator", summary, rows.size() > 1 ? html_table(rows) : "");
}

// Where the threads' CPU time went (record --locks: the CPU samples), the figures of the text section.
void add_cpu(HtmlPage& page, const CostReport& r) {
  const CpuParts& c = r.cpu;
  if (!c.recorded) return;
  const std::string summary =
      fmt::format("{} of CPU time (user + system) of {} thread(s), shared out by {} samples of each thread's CPU clock.",
                  format_duration_ns(c.cpu_ns), c.threads, group_digits(c.samples));
  std::vector<std::vector<std::string>> rows{{"where", "share", "CPU time", "± bound", "samples"}};
  for (const NamedCpuPart& p : named_cpu_parts(c))
    rows.push_back({p.label, format_percent(p.part->share, 1), format_duration_ns(p.part->ns),
                    format_duration_ns(p.part->error_ns), group_digits(p.part->samples)});
  page.section("Where the CPU time went (sampled)", summary, html_table(rows));
}

void add_notes(HtmlPage& page, const CostReport& r) {
  const ModelNotes& m = r.model;
  std::string html = "<ul>";
  auto item = [&](const std::string& text) { html += "<li>" + html_escape(text) + "</li>"; };
  item(fmt::format("probe overhead taken out of every duration: {}; window trim: {}; shortest call that can block: {}",
                   format_duration_ns(m.probe_overhead_ns), format_duration_ns(m.window_trim_ns),
                   format_duration_ns(m.block_threshold_ns)));
  // A trace's timed calls are in its records, not in events: say where the durations come from.
  item(r.trace ? fmt::format("{} timed calls of {}, their durations from the trace; {} rusage samples, {} of them "
                             "blocked",
                             group_digits(r.timed), group_digits(r.calls), group_digits(m.rusage_samples),
                             group_digits(m.rusage_blocked))
               : fmt::format("{} timed calls of {}: {} timed-call events read ({} dropped, {} late) in {} windows; {} "
                             "rusage samples, {} of them blocked",
                             group_digits(r.timed), group_digits(r.calls), group_digits(m.events),
                             group_digits(m.events_dropped), group_digits(m.late_events), group_digits(m.windows),
                             group_digits(m.rusage_samples), group_digits(m.rusage_blocked)));
  for (const auto& c : report_caveats(r)) item(c);
  html += "</ul>";
  page.section("Notes on the model and the data", "", html);
}

}  // namespace

std::string report_html(const CostReport& r) {
  HtmlPage page(fmt::format("allocscope report: {}", r.file));
  add_facts(page, r);
  page.verdict(verdict_text(r));
  add_class_costs(page, r);
  add_histograms(page, r);
  add_timeline_sections(page, r, "");
  add_threads(page, r);
  add_locks(page, r);
  add_cpu(page, r);
  add_notes(page, r);
  return page.finish();
}

}  // namespace allocscope
