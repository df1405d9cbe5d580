// html_sections.h — the parts of an HTML page drawn from one CostReport (cost_model.h), shared
// by the report page and the diff page (html_report.h): what they draw and what they leave out.
#pragma once
#include <string>
#include <string_view>
#include <vector>

#include "model/cost_model.h"
#include "render/html_charts.h"
#include "render/html_page.h"

namespace allocscope {

constexpr size_t kBarRows = 40;         // size classes drawn as bars; the rest are summed
constexpr size_t kHistogramPanels = 12; // size classes given a latency histogram

// The classes with the most allocator time, at most `n`, in size order.
std::vector<const ClassRow*> busiest_classes(const CostReport& r, size_t n);

// A class's latency histogram as a chart series.
HistogramSeries histogram_series(const ClassRow& c, ChartSeries series);

// "p50 80 ns · p99 1.2 µs · 12,345 timed" for a panel title.
std::string latency_caption(const ClassRow& c);

// The fast / slow / waiting series of stacked bars.
std::vector<ChartSeries> split_series();
std::vector<double> split_values(const TimeSplit& s);

// Sections: threads inside the allocator over time, and the per-thread lanes of timed calls and
// waits.  `run` names the run in headings ("" for a single report).
void add_timeline_sections(HtmlPage& page, const CostReport& r, std::string_view run);

// "1.23 ms", "-" for a missing value.
std::string optional_duration(const std::optional<double>& ns);

}  // namespace allocscope
