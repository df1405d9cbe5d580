// The HTML report's building blocks: escaping, scales, the charts' geometry, the page's budget and
// the bars `compare` draws.  (The pages themselves are checked in a real browser by
// tests/e2e/test_html.py.)
#include <gtest/gtest.h>

#include <cmath>
#include <regex>
#include <string>
#include <vector>

#include "render/html_charts.h"
#include "render/html_page.h"
#include "render/html_report.h"
#include "render/html_svg.h"

namespace allocscope {
namespace {

struct Box {
  std::string cls;
  double x, y, w, h;
  std::string title;
};

// Every <rect> whose class starts with `prefix`, in document order.
std::vector<Box> rects(const std::string& svg, const std::string& prefix) {
  static const std::regex re(
      R"re(<rect class="([^"]*)" x="([-0-9.]+)" y="([-0-9.]+)" width="([-0-9.]+)" height="([-0-9.]+)"(?:/>|><title>([^<]*)</title>))re");
  std::vector<Box> out;
  for (auto it = std::sregex_iterator(svg.begin(), svg.end(), re); it != std::sregex_iterator(); ++it) {
    const auto& m = *it;
    if (m[1].str().rfind(prefix, 0) != 0) continue;
    out.push_back({m[1], std::stod(m[2]), std::stod(m[3]), std::stod(m[4]), std::stod(m[5]), m[6]});
  }
  return out;
}

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

TEST(HtmlEscape, EscapesMarkupAndRepairsBytes) {
  EXPECT_EQ(html_escape("a<b>&\"c'"), "a&lt;b&gt;&amp;&quot;c&#39;");
  EXPECT_EQ(html_escape("µs"), "µs");
  EXPECT_EQ(html_escape(std::string("x\xff" "y\x01z", 5)), "x\xEF\xBF\xBDyz");
}

TEST(Scale, LinearAndLogMapTheirDomains) {
  const Scale lin = Scale::linear(0, 10, 100, 200);
  EXPECT_DOUBLE_EQ(lin(5), 150);
  EXPECT_DOUBLE_EQ(lin(20), 200);  // clamped
  EXPECT_EQ(lin.ticks(), (std::vector<double>{0, 2, 4, 6, 8, 10}));
  const Scale log = Scale::log(1, 1e4, 0, 400);
  EXPECT_NEAR(log(10), 100, 1e-9);
  EXPECT_NEAR(log(1000), 300, 1e-9);
  EXPECT_DOUBLE_EQ(log(0), 0);  // nothing below the domain
  EXPECT_EQ(log.ticks(), (std::vector<double>{1, 10, 100, 1000, 10000}));
  EXPECT_EQ(Scale::log(1, 10, 0, 1).ticks(), (std::vector<double>{1, 2, 5, 10}));
  EXPECT_DOUBLE_EQ(nice_ceiling(7.3), 8);
  EXPECT_DOUBLE_EQ(nice_ceiling(0), 1);
}

TEST(StackedBars, SegmentsAreProportionalToTheirValues) {
  StackedBars chart;
  chart.label = "test bars";
  chart.series = {{"fast path", "fast"}, {"waiting", "wait"}};
  chart.rows = {{"small", {10, 30}, "", ""}, {"large", {20, 0}, "", ""}};
  const std::string svg = stacked_bars_svg(chart);
  const auto segs = rects(svg, "seg");
  ASSERT_EQ(segs.size(), 3u);  // a zero part draws nothing
  EXPECT_NEAR(segs[1].w / segs[0].w, 3.0, 0.05);
  EXPECT_NEAR(segs[2].w / segs[0].w, 2.0, 0.05);
  EXPECT_NEAR(segs[1].x, segs[0].x + segs[0].w, 0.11);  // stacked end to end
  EXPECT_EQ(segs[0].cls, "seg fast");
  EXPECT_NE(segs[1].title.find("small: waiting 30 ns (75.0 % of the row)"), std::string::npos);
  EXPECT_EQ(count(svg, "class=\"axis x-axis\""), 1u);
  EXPECT_NE(svg.find("aria-label=\"test bars\""), std::string::npos);
}

TEST(Waterfall, StepsRunFromTheRunningTotalAndTotalsFromZero) {
  Waterfall w;
  w.label = "test waterfall";
  w.steps = {{"a", 100, "", false, std::nullopt, ""},
             {"b", -40, "", false, std::nullopt, ""},
             {"explained", 60, "total-bar", true, 10.0, ""},
             {"not explained", 140, "rest", false, std::nullopt, ""},
             {"measured", 200, "total-bar", true, std::nullopt, ""}};
  const std::string svg = waterfall_svg(w);
  const auto steps = rects(svg, "step");
  ASSERT_EQ(steps.size(), 5u);
  const double unit = steps[0].w / 100;  // pixels per ns
  const double zero = steps[0].x;
  EXPECT_EQ(steps[0].cls, "step up");
  EXPECT_EQ(steps[1].cls, "step down");
  EXPECT_NEAR(steps[1].x, zero + 60 * unit, 0.2);   // from 100 back to 60
  EXPECT_NEAR(steps[1].w, 40 * unit, 0.2);
  EXPECT_NEAR(steps[2].x, zero, 0.2);               // a total starts at zero
  EXPECT_NEAR(steps[2].w, 60 * unit, 0.2);
  EXPECT_EQ(steps[3].cls, "step rest");
  EXPECT_NEAR(steps[3].x, zero + 60 * unit, 0.2);   // the remainder starts where the total ends
  EXPECT_NEAR(steps[4].w, 200 * unit, 0.2);
  EXPECT_EQ(count(svg, "class=\"whisker\""), 3u);   // the error bound of the total
}

TEST(Histogram, StepOutlineCoversItsBinsOnLogAxes) {
  HistogramSeries s{{"BASE", "base"}, {{10, 20, 100}, {20, 40, 1}, {1000, 2000, 10}}};
  const HistogramAxes axes = histogram_axes({s});
  EXPECT_DOUBLE_EQ(axes.x_lo, 10);
  EXPECT_DOUBLE_EQ(axes.x_hi, 10000);
  EXPECT_DOUBLE_EQ(axes.y_max, 1000);
  const std::string svg = histogram_svg("64 B", "p50 10 ns", {s}, axes);
  std::smatch path;
  ASSERT_TRUE(std::regex_search(svg, path, std::regex(R"re(<path class="hist base" d="([^"]*)")re")));
  EXPECT_EQ(count(path[1].str(), "M"), 2u);  // two runs of adjacent bins
  EXPECT_EQ(count(path[1].str(), "Z"), 2u);
  EXPECT_EQ(rects(svg, "hit").size(), 3u);
  EXPECT_EQ(count(svg, "<g class=\"axis "), 2u);
}

TEST(HtmlPage, KeepsToItsBudgetAndSaysWhatItCut) {
  HtmlPage page("a <title>", 40'000);
  page.verdict("It is \"fast\".");
  EXPECT_TRUE(page.section("small", "", "<p>small</p>"));
  EXPECT_FALSE(page.section("huge", "", std::string(50'000, 'x')));
  page.cut("the tail");
  const std::string html = page.finish();
  EXPECT_NE(html.find("<title>a &lt;title&gt;</title>"), std::string::npos);
  EXPECT_NE(html.find("It is &quot;fast&quot;."), std::string::npos);
  EXPECT_NE(html.find("<p>small</p>"), std::string::npos);
  EXPECT_EQ(html.find("xxxxxxxx"), std::string::npos);
  EXPECT_NE(html.find("the section “huge”"), std::string::npos);
  EXPECT_NE(html.find("<li>the tail</li>"), std::string::npos);
  EXPECT_NE(html.find("default-src 'none'"), std::string::npos);
  EXPECT_EQ(html.find("http:"), std::string::npos);
  EXPECT_EQ(html.find("https:"), std::string::npos);
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_LT(html.size(), 40'000u);
}

TEST(CompareBars, BarsAreAsLongAsTheWallTimeAndSplitByShares) {
  CompareBarTable table;
  table.label = "allocators";
  table.share_names = {"fast path", "waiting"};
  table.rows = {{"glibc", 1e9, {0.1, 0.2}}, {"musl", 2e9, {0.1, 0.5}}, {"broken", std::nullopt, {}}};
  const std::string svg = compare_bars_html(table);
  const auto segs = rects(svg, "seg");
  ASSERT_EQ(segs.size(), 6u);  // three parts (the rest included) per row with a wall time
  const double glibc = segs[0].w + segs[1].w + segs[2].w;
  const double musl = segs[3].w + segs[4].w + segs[5].w;
  EXPECT_NEAR(musl / glibc, 2.0, 0.01);
  EXPECT_NEAR(segs[4].w / musl, 0.5, 0.01);
  EXPECT_EQ(segs[5].cls, "seg other-time");
  EXPECT_NE(svg.find("no wall time"), std::string::npos);
  EXPECT_NE(svg.find("10 % / 50 %"), std::string::npos);
}

}  // namespace
}  // namespace allocscope
