// Parts of the HTML pages drawn from one CostReport: see html_sections.h.
#include "render/html_sections.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "util/units.h"

namespace allocscope {

std::vector<const ClassRow*> busiest_classes(const CostReport& r, size_t n) {
  std::vector<const ClassRow*> rows;
  for (const auto& c : r.classes) rows.push_back(&c);
  std::stable_sort(rows.begin(), rows.end(), [](const ClassRow* a, const ClassRow* b) { return a->time_ns > b->time_ns; });
  if (rows.size() > n) rows.resize(n);
  // Back in the report's order (size order, unknown sizes last).
  std::sort(rows.begin(), rows.end());
  return rows;
}

HistogramSeries histogram_series(const ClassRow& c, ChartSeries series) {
  HistogramSeries h;
  h.series = std::move(series);
  for (const auto& b : c.histogram) h.bins.push_back({b.lo_ns, b.hi_ns, static_cast<double>(b.calls)});
  if (c.latency) h.max_ns = c.latency->max_ns;
  return h;
}

std::string latency_caption(const ClassRow& c) {
  if (!c.latency) return fmt::format("{} timed", group_digits(c.timed));
  return fmt::format("p50 {} · p99 {} · max {}", format_duration_ns(c.latency->p50_ns),
                     format_duration_ns(c.latency->p99_ns), format_duration_ns(c.latency->max_ns));
}

std::vector<ChartSeries> split_series() {
  return {{"fast path", "fast"}, {"slow but running", "slow"}, {"waiting (blocked)", "wait"}};
}

std::vector<double> split_values(const TimeSplit& s) { return {s.fast_ns, s.slow_ns, s.wait_ns}; }

std::string optional_duration(const std::optional<double>& ns) { return ns ? format_duration_ns(*ns) : "-"; }

void add_timeline_sections(HtmlPage& page, const CostReport& r, std::string_view run) {
  const Timeline& t = r.timeline;
  const std::string suffix = run.empty() ? "" : fmt::format(" — {}", run);
  if (t.slots.empty() || r.timed == 0) {
    page.section(fmt::format("Threads inside the allocator over time{}", suffix), "No timed calls: nothing to draw.", "");
    return;
  }
  StepChart chart;
  chart.label = fmt::format("threads inside the allocator over time{}", suffix);
  chart.y_axis = "threads inside";
  chart.slot_ns = t.slot_ns;
  chart.tooltip_unit = "threads";
  StepSeries mean{{"mean threads inside", "mean"}, {}, true};
  StepSeries most{{"most at once", "max"}, {}, false};
  for (const auto& s : t.slots) {
    mean.values.push_back(s.mean_inside);
    most.values.push_back(s.max_inside);
  }
  chart.series = {std::move(mean), std::move(most)};
  const std::string sampling =
      t.timed_fraction < 1 ? fmt::format("Calls are timed in windows that cover {:.2g} % of the time; each of the {} "
                                         "slots of {} averages the windows that start in it. ",
                                         100 * t.timed_fraction, t.slots.size(), format_duration_ns(t.slot_ns))
                           : fmt::format("Every call is timed; each of the {} slots lasts {}. ", t.slots.size(),
                                         format_duration_ns(t.slot_ns));
  page.section(fmt::format("Threads inside the allocator over time{}", suffix),
               sampling + "Mean and most threads inside an allocator call at once (the first microseconds of each "
                          "window are left out, as for the contention measures).",
               step_chart_svg(chart));

  Lanes lanes;
  lanes.label = fmt::format("per-thread time inside the allocator{}", suffix);
  lanes.slot_ns = t.slot_ns;
  lanes.busy = {"inside allocator calls (running)", "busy"};
  lanes.waiting = {"of which waiting (blocked)", "wait"};
  const ThreadRow* row_of = nullptr;
  for (const auto& l : t.lanes) {
    Lane lane;
    lane.label = fmt::format("thread {}", l.serial);
    double busy = 0, wait = 0;
    for (size_t i = 0; i < l.busy.size(); ++i) {
      busy += l.busy[i];
      wait += l.waiting[i];
    }
    const double n = static_cast<double>(std::max<size_t>(l.busy.size(), 1));
    row_of = nullptr;
    for (const auto& tr : r.threads_rows) {
      if (tr.serial == l.serial) row_of = &tr;
    }
    lane.tooltip = fmt::format("thread {} (tid {}): {} timed calls; inside the allocator {:.1f} % of the timed "
                               "windows, waiting {:.1f} %{}",
                               l.serial, l.tid, group_digits(l.timed), 100 * busy / n, 100 * wait / n,
                               row_of ? fmt::format("; estimated allocator time {} ({:.1f} % of its life)",
                                                    format_duration_ns(row_of->time_ns), 100 * row_of->share)
                                      : "");
    lane.busy = l.busy;
    lane.waiting = l.waiting;
    lanes.lanes.push_back(std::move(lane));
  }
  float top = 0;
  for (const auto& l : t.lanes) {
    for (const float v : l.busy) top = std::max(top, v);
  }
  lanes.full_scale = std::min(1.0, nice_ceiling(top));
  if (t.lanes_left_out > 0) {
    page.cut(fmt::format("{}lanes of {} thread(s) with fewer timed calls (the {} busiest are drawn)",
                         run.empty() ? "" : fmt::format("{}: ", run), t.lanes_left_out, t.lanes.size()));
  }
  page.section(fmt::format("Per thread over time: timed calls and waits{}", suffix),
               fmt::format("Each lane is a thread, the busiest first: the height is the share of the timed windows the "
                           "thread spent inside allocator calls (probe overhead taken out; a full lane is {:g} %), red "
                           "the part of it spent blocked off-CPU.",
                           100 * lanes.full_scale),
               lanes_svg(lanes));
}

}  // namespace allocscope
