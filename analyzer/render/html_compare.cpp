// The bars `compare` draws its allocator table with: see html_report.h.
#include <fmt/format.h>

#include <algorithm>

#include "render/html_charts.h"
#include "render/html_report.h"
#include "util/units.h"

namespace allocscope {

std::string compare_bars_html(const CompareBarTable& table) {
  static constexpr const char* kCss[] = {"fast", "slow", "wait", "faults", "base", "other"};
  StackedBars bars;
  bars.label = table.label;
  bars.axis = "wall time";
  for (size_t i = 0; i < table.share_names.size(); ++i) {
    bars.series.push_back({table.share_names[i], kCss[i % std::size(kCss)]});
  }
  bars.series.push_back({"rest of the run", "other-time"});
  for (const auto& row : table.rows) {
    StackedBars::Row r;
    r.label = row.name;
    if (!row.wall_ns) {
      r.values.assign(bars.series.size(), 0.0);
      r.aside = "no wall time";
      r.css = "muted";
      bars.rows.push_back(std::move(r));
      continue;
    }
    double left = 1;
    std::string shares;
    for (size_t i = 0; i < table.share_names.size(); ++i) {
      const double share = i < row.shares.size() ? std::clamp(row.shares[i], 0.0, 1.0) : 0.0;
      const double taken = std::min(share, std::max(0.0, left));
      r.values.push_back(taken * *row.wall_ns);
      left -= taken;
      shares += fmt::format("{}{:.0f} %", shares.empty() ? "" : " / ", 100 * share);
    }
    r.values.push_back(std::max(0.0, left) * *row.wall_ns);
    r.aside = fmt::format("{} · {}", format_duration_ns(*row.wall_ns), shares);
    bars.rows.push_back(std::move(r));
  }
  return stacked_bars_svg(bars);
}

}  // namespace allocscope
