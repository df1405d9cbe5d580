// The charts of the HTML report: see html_charts.h.
#include "render/html_charts.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "util/units.h"

namespace allocscope {

namespace {

constexpr double kWidth = 880;     // wide charts
constexpr double kRow = 18;        // a bar row
constexpr double kBar = 12;        // a bar's thickness
constexpr double kLegendY = 16;    // legend baseline
constexpr double kTop = 30;        // first row
constexpr double kAxisSpace = 40;  // below a bottom axis

std::string compact_count(double v) {
  if (v < 1e3) return fmt::format("{:.0f}", v);
  if (v < 1e6) return fmt::format("{:g}k", v / 1e3);
  if (v < 1e9) return fmt::format("{:g}M", v / 1e6);
  return fmt::format("{:g}G", v / 1e9);
}

std::string axis_duration(double ns) { return ns == 0 ? std::string("0") : format_duration_ns(ns); }

std::string axis_signed_duration(double ns) { return ns == 0 ? std::string("0") : format_signed_duration_ns(ns, "−"); }

std::string axis_label(double v, ValueKind kind) {
  switch (kind) {
    case ValueKind::Duration: return axis_duration(v);
    case ValueKind::SignedDuration: return axis_signed_duration(v);
    case ValueKind::Share: return fmt::format("{:g} %", 100 * v);
    case ValueKind::Count: return compact_count(v);
  }
  return "";
}

double label_column(const std::vector<std::string>& labels, double lo, double hi) {
  double w = 0;
  for (const auto& l : labels) w = std::max(w, text_width(l));
  return std::clamp(w + 12, lo, hi);
}

}  // namespace

std::string format_value(double v, ValueKind kind) {
  switch (kind) {
    case ValueKind::Duration: return format_duration_ns(std::max(0.0, v));
    case ValueKind::SignedDuration: return format_signed_duration_ns(v, "−");
    case ValueKind::Share: return format_percent(v, 1);
    case ValueKind::Count: return group_digits(static_cast<uint64_t>(std::llround(std::max(0.0, v))));
  }
  return "";
}

// ---- stacked bars ----

std::string stacked_bars_svg(const StackedBars& chart) {
  std::vector<std::string> labels, asides;
  double max_total = 0;
  for (const auto& row : chart.rows) {
    labels.push_back(row.label);
    asides.push_back(row.aside);
    double total = 0;
    for (const double v : row.values) total += std::max(0.0, v);
    max_total = std::max(max_total, total + row.error.value_or(0.0));
  }
  const double left = label_column(labels, 60, 300);
  const double aside = label_column(asides, 12, 280);
  const double height = kTop + kRow * static_cast<double>(chart.rows.size()) + 4 + kAxisSpace;
  Svg svg(kWidth, height, "chart bars", chart.label);
  std::vector<LegendEntry> legend;
  for (const auto& s : chart.series) legend.push_back({s.name, s.css});
  draw_legend(svg, left, kLegendY, legend);
  const Scale x = Scale::linear(0, nice_ceiling(max_total), left, kWidth - aside - 8);
  const double axis_y = kTop + kRow * static_cast<double>(chart.rows.size()) + 4;
  draw_axis(svg, x, AxisSide::Bottom, axis_y, [&](double v) { return axis_label(v, chart.kind); }, chart.axis, kTop - 4);
  for (size_t r = 0; r < chart.rows.size(); ++r) {
    const auto& row = chart.rows[r];
    const double y = kTop + kRow * static_cast<double>(r);
    svg.text(left - 6, y + kBar - 2, row.label, "row-label " + row.css, Anchor::End);
    double total = 0;
    for (const double v : row.values) total += std::max(0.0, v);
    double at = 0;
    svg.open_group("bar");
    for (size_t s = 0; s < row.values.size() && s < chart.series.size(); ++s) {
      const double v = std::max(0.0, row.values[s]);
      if (v <= 0) continue;
      // A segment under half a pixel is drawn half a pixel wide (something to point at), reaching
      // back from its end, so that the bar still ends where its total does.
      const double x1 = x(at + v), x0 = std::max(x(0), std::min(x(at), x1 - 0.5));
      const std::string tip = fmt::format("{}: {} {}{}", row.label, chart.series[s].name, format_value(v, chart.kind),
                                          total > 0 ? fmt::format(" ({:.1f} % of the row)", 100 * v / total) : "");
      svg.rect(x0, y, std::max(x1 - x0, 0.5), kBar, "seg " + chart.series[s].css, tip);
      at += v;
    }
    svg.close_group();
    if (row.error && *row.error > 0) {  // the bound: total ± error, with caps
      const double mid = y + kBar / 2, lo = x(std::max(0.0, total - *row.error)), hi = x(total + *row.error);
      svg.open_group("error-bar");
      svg.line(lo, mid, hi, mid, "whisker");
      svg.line(lo, mid - 3.5, lo, mid + 3.5, "whisker");
      svg.line(hi, mid - 3.5, hi, mid + 3.5, "whisker");
      svg.close_group();
    }
    if (!row.aside.empty()) svg.text(kWidth - aside + 4, y + kBar - 2, row.aside, "aside");
  }
  return svg.finish();
}

// ---- histograms ----

HistogramAxes histogram_axes(const std::vector<HistogramSeries>& all) {
  double lo = INFINITY, hi = 0, top = 0;
  HistogramAxes axes;
  for (const auto& s : all) {
    for (const auto& b : s.bins) {
      if (b.count <= 0) continue;
      if (b.lo > 0) {
        lo = std::min(lo, b.lo);
      } else {
        axes.zero_bin = true;
        lo = std::min(lo, b.hi);  // the log axis starts where the zero bin ends
      }
      hi = std::max(hi, b.hi);
      top = std::max(top, b.count);
    }
    hi = std::max(hi, s.max_ns);
  }
  if (hi > 0) {
    axes.x_lo = std::pow(10.0, std::floor(std::log10(lo)));
    axes.x_hi = std::pow(10.0, std::ceil(std::log10(hi)));
    if (axes.x_hi <= axes.x_lo) axes.x_hi = axes.x_lo * 10;
    axes.y_max = std::pow(10.0, std::ceil(std::log10(top * 1.5)));
  }
  return axes;
}

std::string histogram_svg(std::string_view title, std::string_view caption, const std::vector<HistogramSeries>& series,
                          const HistogramAxes& axes) {
  constexpr double kW = 286, kH = 196, kLeft = 44, kRight = 10, kTopH = 40, kBottom = 36;
  Svg svg(kW, kH, "chart histogram", fmt::format("latency histogram: {}", title));
  const std::string whole = fmt::format("{} — {}", title, caption);
  svg.text(4, 13, fit_text(title, kW - 8), "panel-title", Anchor::Start, whole);
  svg.text(4, 27, fit_text(caption, kW - 8), "panel-caption", Anchor::Start, whole);
  // The zero bin, when there is one: its own column left of the log axis.
  constexpr double kZeroW = 14, kZeroGap = 18;  // room for the first log label beside "0"
  const double log_left = axes.zero_bin ? kLeft + kZeroW + kZeroGap : kLeft;
  const Scale x = Scale::log(axes.x_lo, axes.x_hi, log_left, kW - kRight);
  const Scale y = Scale::log(0.7, axes.y_max, kH - kBottom, kTopH);
  const double base = kH - kBottom;
  draw_axis(svg, x, AxisSide::Bottom, base, axis_duration, "latency (log)", kTopH);
  draw_axis(svg, y, AxisSide::Left, kLeft, compact_count, "", kW - kRight);
  if (axes.zero_bin) {
    svg.open_group("axis zero-axis");
    svg.line(kLeft, base, kLeft + kZeroW, base, "domain");
    svg.line(kLeft + kZeroW / 2, base, kLeft + kZeroW / 2, base + 4, "tick");
    svg.text(kLeft + kZeroW / 2, base + 15, "0", "tick-label", Anchor::Middle);
    svg.line(log_left - kZeroGap / 2, kTopH, log_left - kZeroGap / 2, base, "zero-bin");
    svg.close_group();
  }
  // x of a bin: the zero bin is its column; the others on the log axis.
  auto bin_x = [&](const HistogramBin& b) {
    return b.lo > 0 ? std::pair(x(b.lo), x(b.hi)) : std::pair(kLeft + 1.0, kLeft + kZeroW - 1.0);
  };
  for (const auto& s : series) {
    PathData d;
    double run_end = -1;  // x of the end of the current run of adjacent bins
    for (const auto& b : s.bins) {
      if (b.count <= 0) continue;
      const auto [x0, x1] = bin_x(b);
      const double y1 = y(b.count);
      if (run_end < 0 || std::fabs(x0 - run_end) > 0.05) {
        if (run_end >= 0) d.line(run_end, base).close();
        d.move(x0, base);
      }
      d.line(x0, y1).line(x1, y1);
      run_end = x1;
    }
    if (run_end >= 0) d.line(run_end, base).close();
    svg.path(d, "hist " + s.series.css, s.series.name);
    if (s.max_ns > 0) {  // the slowest call, which a bin of one call may not show at this height
      const double xm = x(s.max_ns);
      svg.rect(xm - 0.75, kTopH, 1.5, base - kTopH, "max-mark " + s.series.css,
               fmt::format("{}{}slowest call: {}", s.series.name, s.series.name.empty() ? "" : " ",
                           format_duration_ns(s.max_ns)));
    }
  }
  // Tooltips: one transparent column per bin and series.
  svg.open_group("hits");
  for (const auto& s : series) {
    for (const auto& b : s.bins) {
      if (b.count <= 0) continue;
      const auto [x0, x1] = bin_x(b);
      const std::string range = b.lo > 0 ? fmt::format("{} – {}", format_duration_ns(b.lo), format_duration_ns(b.hi))
                                         : fmt::format("0 (under {})", format_duration_ns(b.hi));
      svg.rect(x0, y(b.count), x1 - x0, base - y(b.count), "hit",
               fmt::format("{}{}{}: {} calls", s.series.name, s.series.name.empty() ? "" : " ", range,
                           group_digits(static_cast<uint64_t>(b.count))));
    }
  }
  svg.close_group();
  return svg.finish();
}

// ---- step charts over time ----

std::string step_chart_svg(const StepChart& chart) {
  constexpr double kH = 230, kLeft = 52, kRight = 12, kBottom = 42;
  size_t slots = 0;
  double top = 0;
  for (const auto& s : chart.series) {
    slots = std::max(slots, s.values.size());
    for (const double v : s.values) top = std::max(top, v);
  }
  Svg svg(kWidth, kH, "chart timeline", chart.label);
  std::vector<LegendEntry> legend;
  for (const auto& s : chart.series) legend.push_back({s.series.name, s.series.css});
  const double span = chart.slot_ns * static_cast<double>(std::max<size_t>(slots, 1));
  const Scale x = Scale::linear(0, span, kLeft, kWidth - kRight);
  const Scale y = Scale::linear(0, nice_ceiling(top), kH - kBottom, kTop);
  const double base = kH - kBottom;
  draw_legend(svg, kLeft + text_width(chart.y_axis) + 24, kLegendY, legend);
  draw_axis(svg, x, AxisSide::Bottom, base, axis_duration, "time since the process started", kTop);
  draw_axis(svg, y, AxisSide::Left, kLeft, [](double v) { return fmt::format("{:g}", v); }, chart.y_axis, kWidth - kRight);
  auto sx = [&](size_t slot) { return x(chart.slot_ns * static_cast<double>(slot)); };
  for (const auto& s : chart.series) {
    PathData d;
    if (s.area) d.move(sx(0), base);
    for (size_t i = 0; i < s.values.size(); ++i) {
      const double yv = y(s.values[i]);
      if (i == 0 && !s.area) {
        d.move(sx(0), yv);
      } else {
        d.line(sx(i), yv);
      }
      d.line(sx(i + 1), yv);
    }
    if (s.area) d.line(sx(s.values.size()), base).close();
    svg.path(d, std::string(s.area ? "area " : "step ") + s.series.css, s.series.name);
  }
  svg.open_group("hits");
  for (size_t i = 0; i < slots; ++i) {
    std::string tip = fmt::format("{} – {}:", axis_duration(chart.slot_ns * static_cast<double>(i)),
                                  axis_duration(chart.slot_ns * static_cast<double>(i + 1)));
    for (const auto& s : chart.series) {
      if (i < s.values.size()) tip += fmt::format(" {} {:.2f}{}{};", s.series.name, s.values[i], chart.tooltip_unit.empty() ? "" : " ", chart.tooltip_unit);
    }
    tip.pop_back();
    svg.rect(sx(i), kTop, sx(i + 1) - sx(i), base - kTop, "hit", tip);
  }
  svg.close_group();
  return svg.finish();
}

// ---- lanes ----

std::string lanes_svg(const Lanes& chart) {
  constexpr double kLane = 16, kGap = 4, kRight = 12;
  std::vector<std::string> labels;
  size_t slots = 0;
  for (const auto& l : chart.lanes) {
    labels.push_back(l.label);
    slots = std::max(slots, l.busy.size());
  }
  const double left = label_column(labels, 52, 200);
  const double axis_y = kTop + (kLane + kGap) * static_cast<double>(chart.lanes.size());
  Svg svg(kWidth, axis_y + kAxisSpace, "chart lanes", chart.label);
  draw_legend(svg, left, kLegendY, {{chart.busy.name, chart.busy.css}, {chart.waiting.name, chart.waiting.css}});
  const double span = chart.slot_ns * static_cast<double>(std::max<size_t>(slots, 1));
  const Scale x = Scale::linear(0, span, left, kWidth - kRight);
  draw_axis(svg, x, AxisSide::Bottom, axis_y, axis_duration, "time since the process started", kTop - 2);
  auto sx = [&](size_t slot) { return x(chart.slot_ns * static_cast<double>(slot)); };
  const double full = chart.full_scale > 0 ? chart.full_scale : 1;
  for (size_t li = 0; li < chart.lanes.size(); ++li) {
    const Lane& lane = chart.lanes[li];
    const double top = kTop + (kLane + kGap) * static_cast<double>(li);
    const double bottom = top + kLane;
    svg.text(left - 6, bottom - 4, lane.label, "row-label", Anchor::End);
    svg.open_group("lane", lane.tooltip);
    svg.rect(left, top, kWidth - kRight - left, kLane, "lane-bg");
    auto area = [&](const std::vector<float>& values, std::string_view cls) {
      bool any = false;
      PathData d;
      d.move(sx(0), bottom);
      for (size_t i = 0; i < values.size(); ++i) {
        const double h = std::clamp(static_cast<double>(values[i]) / full, 0.0, 1.0) * kLane;
        any = any || h > 0;
        d.line(sx(i), bottom - h).line(sx(i + 1), bottom - h);
      }
      d.line(sx(values.size()), bottom).close();
      if (any) svg.path(d, cls);
    };
    area(lane.busy, "area " + chart.busy.css);
    area(lane.waiting, "area " + chart.waiting.css);
    svg.close_group();
  }
  return svg.finish();
}

// ---- waterfall ----

std::string waterfall_svg(const Waterfall& chart) {
  std::vector<std::string> labels, asides;
  double lo = 0, hi = 0, run = 0;
  for (const auto& s : chart.steps) {
    labels.push_back(s.label);
    asides.push_back(format_value(s.value, ValueKind::SignedDuration) +
                     (s.error ? " ± " + format_value(*s.error, ValueKind::Duration) : ""));
    const double from = s.total ? 0 : run;
    const double to = s.total ? s.value : run + s.value;
    run = to;
    const double e = s.error.value_or(0);
    lo = std::min({lo, from, to - e});
    hi = std::max({hi, from, to + e});
  }
  const double left = label_column(labels, 60, 300);
  const double aside = label_column(asides, 12, 200);
  const double axis_y = kTop + kRow * static_cast<double>(chart.steps.size()) + 4;
  Svg svg(kWidth, axis_y + kAxisSpace, "chart waterfall", chart.label);
  draw_legend(svg, left, kLegendY, chart.legend);
  // A symmetric-looking domain with 1-2-5 ends on each side of zero.
  const double span = std::max(hi, -lo);
  const double lo_d = lo < 0 ? -nice_ceiling(-lo) : 0, hi_d = hi > 0 ? nice_ceiling(hi) : 0;
  const Scale x = Scale::linear(lo_d, hi_d > lo_d ? hi_d : lo_d + (span > 0 ? span : 1), left, kWidth - aside - 8);
  draw_axis(svg, x, AxisSide::Bottom, axis_y, axis_signed_duration, chart.axis, kTop - 4);
  svg.line(x(0), kTop - 4, x(0), axis_y, "zero");
  run = 0;
  for (size_t i = 0; i < chart.steps.size(); ++i) {
    const auto& s = chart.steps[i];
    const double y = kTop + kRow * static_cast<double>(i);
    const double from = s.total ? 0 : run;
    const double to = s.total ? s.value : run + s.value;
    svg.text(left - 6, y + kBar - 2, s.label, s.total ? "row-label total" : "row-label", Anchor::End);
    const std::string css = !s.css.empty() ? s.css : s.value >= 0 ? "up" : "down";
    std::string tip = fmt::format("{}: {}", s.label, format_value(s.value, ValueKind::SignedDuration));
    if (s.error) tip += fmt::format(" ± {}", format_duration_ns(*s.error));
    if (!s.tooltip.empty()) tip += " — " + s.tooltip;
    const double x0 = x(std::min(from, to)), x1 = x(std::max(from, to));
    svg.rect(x0, y, std::max(x1 - x0, 1.0), kBar, "step " + css, tip);
    if (s.error && *s.error > 0) {
      const double ym = y + kBar / 2;
      svg.line(x(to - *s.error), ym, x(to + *s.error), ym, "whisker");
      svg.line(x(to - *s.error), ym - 4, x(to - *s.error), ym + 4, "whisker");
      svg.line(x(to + *s.error), ym - 4, x(to + *s.error), ym + 4, "whisker");
    }
    if (i + 1 < chart.steps.size() && !chart.steps[i + 1].total) {
      svg.line(x(to), y + kBar, x(to), y + kRow, "connector");
    }
    svg.text(kWidth - aside + 4, y + kBar - 2, asides[i], "aside");
    run = to;
  }
  return svg.finish();
}

}  // namespace allocscope
