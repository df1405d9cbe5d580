// html_report.h — the HTML pages of `report --html` and `diff --html`, and the bars `compare`
// draws its allocator table with.
//
// A page is one self-contained file (html_page.h): the verdict at the top, then charts generated
// as inline SVG (html_charts.h) from the numbers the text and JSON reports print — nothing is
// computed here that the cost model (cost_model.h) or the diff (diff.h) did not already compute.
//   report: cost per size class stacked by fast / slow / waiting, latency histograms per class
//           (log scales), threads inside the allocator over time, per-thread lanes of timed calls
//           and waits, allocator time per thread, latency by threads inside, notes;
//   diff:   waterfalls of the attributed difference (by component and by size) ending in the
//           measured difference, with what the allocator does not explain as its own step; both
//           runs' costs by size, overlaid latency histograms, and both runs' timelines.
// What does not fit (classes, threads, size caps) is summed or left out, and the page lists it.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "model/cost_model.h"
#include "model/diff.h"

namespace allocscope {

std::string report_html(const CostReport& report);
std::string diff_html(const DiffReport& diff, const CostReport& base, const CostReport& other);

// `compare`'s table as bars: one bar per row, as long as its wall time, split into the shares
// (each a fraction of the wall time; what they leave is drawn as "rest of the run"), with the
// shares written beside it.  Returns SVG markup for HtmlPage::section().
struct CompareBarRow {
  std::string name;
  std::optional<double> wall_ns;
  std::vector<double> shares;  // one per CompareBarTable::share_names
};
struct CompareBarTable {
  std::string label;                     // what the chart shows
  std::vector<std::string> share_names;  // e.g. "fast path", "slow but running", "waiting"
  std::vector<CompareBarRow> rows;
};
std::string compare_bars_html(const CompareBarTable& table);

}  // namespace allocscope
