// html_charts.h — the charts of the HTML report, as inline SVG (html_svg.h): stacked bars,
// latency histograms on log scales, step charts over time, per-thread lanes and waterfalls.
//
// Each chart takes plain data — labels, numbers, CSS classes that the page's style sheet colours
// — and knows nothing of profiles, so that every report (report, diff, compare) draws with the
// same few functions.  Every drawn mark has a tooltip (<title>) with its exact value.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "render/html_svg.h"

namespace allocscope {

enum class ValueKind { Duration, SignedDuration, Share, Count };
std::string format_value(double v, ValueKind kind);

struct ChartSeries {
  std::string name, css;
};

// Horizontal bars, one per row, each the sum of its parts (no negative parts), with a legend.
// `aside` is printed right of the bar (say, the total and a share).
struct StackedBars {
  std::string label;  // what the chart shows, for screen readers and the tests
  std::string axis;   // the value axis' title
  ValueKind kind = ValueKind::Duration;
  std::vector<ChartSeries> series;
  struct Row {
    std::string label;
    std::vector<double> values;  // one per series
    std::string aside;
    std::string css;             // extra class of the row's label (e.g. "muted")
    std::optional<double> error = std::nullopt;  // ± bound of the row's total, drawn as an error bar when known
  };
  std::vector<Row> rows;
};
std::string stacked_bars_svg(const StackedBars& chart);

// A histogram on log-log axes: each series a step outline over its bins, filled lightly.
struct HistogramBin {
  double lo = 0, hi = 0;  // lo = 0: from the axis' left edge
  double count = 0;
};
struct HistogramSeries {
  ChartSeries series;
  std::vector<HistogramBin> bins;
  double max_ns = 0;  // the slowest call of the data (0: the bins' end), marked and inside the axis
};
// Shared by small multiples, so that they compare at a glance.  The log axis spans the data: from
// the decade below the fastest bin that starts above 0 to the decade above the slowest call; the
// bin from 0 (calls under 1 ns: 0 ticks on a coarse clock) is drawn apart, left of the log axis,
// as its own "0" bin.
struct HistogramAxes {
  double x_lo = 1, x_hi = 1e6;  // ns
  double y_max = 10;            // calls
  bool zero_bin = false;        // some series has calls under 1 ns
};
HistogramAxes histogram_axes(const std::vector<HistogramSeries>& all);
// A small panel: `title` and `caption` on two lines above the plot (cut to fit, whole in tooltips).
std::string histogram_svg(std::string_view title, std::string_view caption, const std::vector<HistogramSeries>& series,
                          const HistogramAxes& axes);

// Values over time in equal slots, drawn as steps: area series filled, the others as lines.
struct StepSeries {
  ChartSeries series;
  std::vector<double> values;  // one per slot
  bool area = false;
};
struct StepChart {
  std::string label, y_axis;
  double slot_ns = 0;
  std::vector<StepSeries> series;
  std::string tooltip_unit;  // appended to values in tooltips ("threads")
};
std::string step_chart_svg(const StepChart& chart);

// One lane per thread over the same slots: the share of time busy and, within it, waiting.
struct Lane {
  std::string label, tooltip;
  std::vector<float> busy, waiting;  // [0, 1] per slot
};
struct Lanes {
  std::string label;
  double slot_ns = 0;
  double full_scale = 1;  // the share drawn at a lane's full height
  ChartSeries busy, waiting;
  std::vector<Lane> lanes;
};
std::string lanes_svg(const Lanes& chart);

// A horizontal waterfall: each step runs from the running total to running total + value; a
// total step is drawn from zero (and sets the running total).  An error bound draws a whisker.
struct WaterfallStep {
  std::string label;
  double value = 0;
  std::string css;
  bool total = false;
  std::optional<double> error;
  std::string tooltip;  // extra text after the value
};
struct Waterfall {
  std::string label, axis;
  std::vector<WaterfallStep> steps;
  std::vector<LegendEntry> legend;
};
std::string waterfall_svg(const Waterfall& chart);

}  // namespace allocscope
