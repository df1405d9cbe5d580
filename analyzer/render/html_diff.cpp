// The HTML page of `allocscope diff --html`: see html_report.h.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <tuple>

#include "render/diff.h"
#include "render/html_report.h"
#include "render/html_sections.h"
#include "util/units.h"

namespace allocscope {

namespace {

constexpr size_t kWaterfallRows = 14;  // size rows of the by-size waterfall; the rest are summed


std::string run_line(const RunSide& s) {
  return fmt::format("{} — {} {}, allocator {}", s.file, s.libc, s.program.substr(s.program.rfind('/') + 1), s.allocator);
}

const char* kUnexplainedTip =
    "thread time outside allocator calls that their page faults do not account for: the program's own work, what "
    "a different heap layout costs it (cache and TLB misses, which allocscope cannot see), other system effects, "
    "noise between the runs";

// Steps shared by both waterfalls: the attributed total, what is left unexplained, the measured gap.
void close_waterfall(Waterfall& w, const DiffReport& d) {
  w.steps.push_back({"attributed to the allocator", d.attributed_delta_ns, "total-bar", true, d.calls_error_ns,
                     "allocator calls and page faults outside them; ± the sampling error of the calls"});
  if (d.locks) {
    // Record --locks on both sides: the program's own locks are the next steps, then the rest.
    w.steps.push_back({"other locks (waits + unlocks)", d.locks_delta_ns, "", false, std::nullopt,
                       "the program's own mutexes and rwlocks, outside the allocator: contended waits and "
                       "unlocks (sampled)"});
    w.steps.push_back({"condition waits (idle)", d.cond_delta_ns, "", false, std::nullopt,
                       "pthread_cond_wait: waiting for work or a signal by design"});
    w.steps.push_back({"not attributed (none of the above)", d.rest_delta_ns, "rest", false, std::nullopt,
                       kUnexplainedTip});
  } else {
    w.steps.push_back({"not attributed (outside allocator calls)", d.measured_delta_ns - d.attributed_delta_ns, "rest",
                       false, std::nullopt, kUnexplainedTip});
  }
  w.steps.push_back({"measured difference (thread time)", d.measured_delta_ns, "total-bar", true, std::nullopt,
                     "OTHER − BASE, lifetimes of the busy threads (at least 1 % of the calls or of their time, or half the mean per calling thread)"});
}

std::vector<LegendEntry> waterfall_legend() {
  return {{"OTHER takes longer", "up"}, {"OTHER takes less", "down"}, {"total", "total-bar"},
          {"not attributed (outside allocator calls)", "rest"}};
}

void add_component_waterfall(HtmlPage& page, const DiffReport& d) {
  Waterfall w;
  w.label = "waterfall of the difference by component";
  w.axis = "OTHER − BASE, thread time";
  w.legend = waterfall_legend();
  w.steps.push_back({"fast path", d.split_delta.fast_ns, "", false, std::nullopt, "what the calls cost alone"});
  w.steps.push_back({"slow but running", d.split_delta.slow_ns, "", false, std::nullopt,
                     "contention, lock hand-over, faults and preemption inside calls"});
  w.steps.push_back({"waiting (blocked)", d.split_delta.wait_ns, "", false, std::nullopt, "blocked off-CPU inside calls"});
  w.steps.push_back({"page faults outside calls", d.faults_delta_ns, "", false, std::nullopt,
                     "minor faults outside allocator calls at the calibrated cost of a fault (estimate)"});
  close_waterfall(w, d);
  std::string coverage = d.coverage && d.claims_share()
                             ? fmt::format(" The allocator accounts for {} of the measured difference.", format_percent(*d.coverage))
                             : "";
  page.section("What explains the difference, by component",
               "Each bar starts where the previous one ended; totals start from zero. The grey step is the part of the "
               "measured difference that allocator calls and their page faults do not explain." + coverage,
               waterfall_svg(w));
}

void add_size_waterfall(HtmlPage& page, const DiffReport& d) {
  std::vector<const DiffRow*> rows;
  for (const auto& r : d.rows) rows.push_back(&r);
  std::stable_sort(rows.begin(), rows.end(),
                   [](const DiffRow* a, const DiffRow* b) { return std::fabs(a->delta_ns) > std::fabs(b->delta_ns); });
  double rest = 0;
  size_t rest_rows = 0;
  for (size_t i = kWaterfallRows; i < rows.size(); ++i) {
    rest += rows[i]->delta_ns;
    ++rest_rows;
  }
  if (rows.size() > kWaterfallRows) rows.resize(kWaterfallRows);
  std::sort(rows.begin(), rows.end());  // back in size order
  Waterfall w;
  w.label = "waterfall of the difference by size";
  w.axis = "OTHER − BASE, thread time";
  w.legend = waterfall_legend();
  for (const DiffRow* r : rows) {
    w.steps.push_back({r->label, r->delta_ns, "", false, std::nullopt,
                       fmt::format("calls {} → {}; more calls {}, slower calls {}; fast {}, slow {}, waiting {}",
                                   group_digits(r->calls_base), group_digits(r->calls_other), format_signed_duration_ns(r->more_calls_ns, "−"),
                                   format_signed_duration_ns(r->slower_calls_ns, "−"), format_signed_duration_ns(r->split_delta.fast_ns, "−"),
                                   format_signed_duration_ns(r->split_delta.slow_ns, "−"), format_signed_duration_ns(r->split_delta.wait_ns, "−"))});
  }
  if (rest_rows > 0) {
    w.steps.push_back({fmt::format("{} other sizes", rest_rows), rest, "", false, std::nullopt, "summed"});
    page.cut(fmt::format("{} sizes with the smallest change are summed into one step of the by-size waterfall", rest_rows));
  }
  w.steps.push_back({"page faults outside calls", d.faults_delta_ns, "", false, std::nullopt,
                     "minor faults outside allocator calls at the calibrated cost of a fault (estimate)"});
  close_waterfall(w, d);
  page.section("What explains the difference, by size",
               "The allocator's change per request size (allocscope's size buckets, the grid both runs share), then "
               "page faults, what is left unexplained and the measured difference.",
               waterfall_svg(w));
}

using RowKey = std::tuple<bool, uint64_t, uint64_t>;
RowKey key_of(const ClassRow& c) { return {!c.size_known, c.lo, c.hi}; }

void add_sides(HtmlPage& page, const DiffReport& d, const CostReport& base, const CostReport& other) {
  // The sizes with the most time in either run.
  std::map<RowKey, std::pair<const ClassRow*, const ClassRow*>> by_key;
  for (const auto& c : base.classes) by_key[key_of(c)].first = &c;
  for (const auto& c : other.classes) by_key[key_of(c)].second = &c;
  std::vector<std::pair<const ClassRow*, const ClassRow*>> pairs;
  for (const auto& [k, p] : by_key) pairs.push_back(p);
  auto weight = [](const std::pair<const ClassRow*, const ClassRow*>& p) {
    return std::max(p.first ? p.first->time_ns : 0.0, p.second ? p.second->time_ns : 0.0);
  };
  std::vector<size_t> order(pairs.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return weight(pairs[a]) > weight(pairs[b]); });
  const size_t bar_pairs = kBarRows / 2;
  if (order.size() > bar_pairs) {
    page.cut(fmt::format("{} sizes with the least time in either run are not drawn in the side-by-side bars",
                         order.size() - bar_pairs));
  }
  std::vector<size_t> shown(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(std::min(order.size(), bar_pairs)));
  std::sort(shown.begin(), shown.end());

  StackedBars bars;
  bars.label = "allocator time per size, BASE and OTHER, stacked by fast, slow and waiting";
  bars.axis = "estimated time inside the allocator";
  bars.series = split_series();
  for (const size_t i : shown) {
    const auto& [b, o] = pairs[i];
    const std::string label = b ? b->label : o->label;
    bars.rows.push_back({label + " BASE", b ? split_values(b->split) : std::vector<double>{0, 0, 0},
                         b ? format_duration_ns(b->time_ns) : "-", "", b ? std::optional(b->error_ns) : std::nullopt});
    bars.rows.push_back({label + " OTHER", o ? split_values(o->split) : std::vector<double>{0, 0, 0},
                         o ? format_duration_ns(o->time_ns) : "-", "muted",
                         o ? std::optional(o->error_ns) : std::nullopt});
  }
  // The same rows as the text (diff_text), per call when the runs did different work.
  const std::vector<std::vector<std::string>> totals = diff_totals(d);
  page.section("The two runs by size", "Estimated time inside the allocator per request size, BASE above OTHER.",
               html_table(totals) + stacked_bars_svg(bars));

  // Latency histograms, overlaid: the sizes that changed most.
  std::vector<size_t> hist;
  for (const size_t i : order) {
    const auto& [b, o] = pairs[i];
    if ((b && !b->histogram.empty()) || (o && !o->histogram.empty())) hist.push_back(i);
  }
  std::stable_sort(hist.begin(), hist.end(), [&](size_t a, size_t b) {
    auto delta = [&](size_t i) {
      return std::fabs((pairs[i].second ? pairs[i].second->time_ns : 0) - (pairs[i].first ? pairs[i].first->time_ns : 0));
    };
    return delta(a) > delta(b);
  });
  if (hist.size() > kHistogramPanels) {
    page.cut(fmt::format("latency histograms of {} sizes that changed less (the {} that changed most are drawn)",
                         hist.size() - kHistogramPanels, kHistogramPanels));
    hist.resize(kHistogramPanels);
  }
  std::sort(hist.begin(), hist.end());
  std::vector<std::vector<HistogramSeries>> panels;
  std::vector<HistogramSeries> all;
  for (const size_t i : hist) {
    std::vector<HistogramSeries> panel;
    if (pairs[i].first) panel.push_back(histogram_series(*pairs[i].first, {"BASE", "base"}));
    if (pairs[i].second) panel.push_back(histogram_series(*pairs[i].second, {"OTHER", "other"}));
    all.insert(all.end(), panel.begin(), panel.end());
    panels.push_back(std::move(panel));
  }
  if (hist.empty()) return;
  const HistogramAxes axes = histogram_axes(all);
  std::string html = "<div class=\"grid\">";
  for (size_t k = 0; k < hist.size(); ++k) {
    const auto& [b, o] = pairs[hist[k]];
    const std::string caption = fmt::format("p50 {} → {} · p99 {} → {}",
                                            b && b->latency ? format_duration_ns(b->latency->p50_ns) : "-",
                                            o && o->latency ? format_duration_ns(o->latency->p50_ns) : "-",
                                            b && b->latency ? format_duration_ns(b->latency->p99_ns) : "-",
                                            o && o->latency ? format_duration_ns(o->latency->p99_ns) : "-");
    html += histogram_svg(b ? b->label : o->label, caption, panels[k], axes);
  }
  html += "</div>";
  page.section("Latency per size, BASE and OTHER",
               "Timed calls per latency bin, as measured (probe included), BASE in blue and OTHER in teal (the page's legend); both axes "
               "are logarithmic and shared by the panels. The sizes whose time changed most.",
               html);
}

}  // namespace

std::string diff_html(const DiffReport& d, const CostReport& base, const CostReport& other) {
  HtmlPage page("allocscope diff");
  page.fact("BASE", run_line(d.base));
  page.fact("OTHER", run_line(d.other));
  page.fact("measured difference", fmt::format("{} thread time{}", format_signed_duration_ns(d.measured_delta_ns, "−"),
                                               d.wall_measured_delta_ns ? fmt::format(", {} wall", format_signed_duration_ns(*d.wall_measured_delta_ns, "−")) : ""));
  page.fact("attributed to the allocator",
            fmt::format("{} (calls {} ± {}, page faults outside calls {})", format_signed_duration_ns(d.attributed_delta_ns, "−"),
                        format_signed_duration_ns(d.calls_delta_ns, "−"), format_duration_ns(d.calls_error_ns), format_signed_duration_ns(d.faults_delta_ns, "−")));
  page.verdict(diff_verdict_text(d));
  add_component_waterfall(page, d);
  add_size_waterfall(page, d);
  add_sides(page, d, base, other);
  add_timeline_sections(page, base, "BASE");
  add_timeline_sections(page, other, "OTHER");
  return page.finish();
}

}  // namespace allocscope
