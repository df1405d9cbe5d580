// The frame of the HTML reports: see html_page.h.
#include "html_page.h"

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <stdexcept>

#include "html_svg.h"

namespace allocscope {

namespace {

// Colours: fast path green, slow-but-running orange, waiting red, faults purple, what the
// allocator does not explain grey; BASE blue, OTHER amber.
constexpr std::string_view kStyle = R"css(
:root { color-scheme: light; }
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", "DejaVu Sans", sans-serif; color: #1d2430;
       margin: 0 auto; padding: 18px 24px 40px; max-width: 920px; background: #fff; }
h1 { font-size: 21px; margin: 4px 0 10px; }
h2 { font-size: 16px; margin: 28px 0 6px; border-bottom: 1px solid #dde2ea; padding-bottom: 3px; }
p.explain { color: #4a5566; margin: 4px 0 8px; font-size: 13px; }
dl.facts { display: grid; grid-template-columns: max-content 1fr; gap: 1px 14px; margin: 0 0 12px; font-size: 13px; }
dl.facts dt { color: #5b6678; } dl.facts dd { margin: 0; overflow-wrap: anywhere; }
.verdict { background: #f3f6fb; border-left: 4px solid #3a6fd8; padding: 10px 14px; margin: 10px 0; font-size: 15px; }
.cuts { background: #fff8e6; border-left: 4px solid #d99a00; padding: 6px 14px; margin: 10px 0; font-size: 13px; }
.cuts ul { margin: 4px 0; padding-left: 18px; }
.grid { display: flex; flex-wrap: wrap; gap: 8px 6px; }
table.data { border-collapse: collapse; font-size: 12.5px; margin: 6px 0; }
table.data th, table.data td { padding: 2px 9px; border-bottom: 1px solid #e6e9ef; text-align: right; white-space: nowrap; }
table.data th:first-child, table.data td:first-child { text-align: left; }
table.data th { color: #4a5566; font-weight: 600; }
svg.chart { display: block; font: 11px system-ui, "DejaVu Sans", sans-serif; overflow: visible; }
svg .domain, svg .tick { stroke: #7a8496; stroke-width: 1; }
svg .grid { stroke: #edf0f4; stroke-width: 1; }
svg .tick-label, svg .aside, svg .legend-label { fill: #3b4454; }
svg .axis-title { fill: #5b6678; font-size: 11px; }
svg .panel-title { fill: #1d2430; font-weight: 600; font-size: 11.5px; }
svg .panel-caption { fill: #4a5566; font-size: 11px; }
svg .row-label { fill: #1d2430; } svg .row-label.muted { fill: #7a8496; } svg .row-label.total { font-weight: 600; }
svg .hit { fill: transparent; } svg .hit:hover { fill: rgba(40, 60, 90, 0.08); }
svg .seg:hover, svg .step:hover { opacity: 0.8; }
svg .fast { fill: #3f9b5c; } svg .slow { fill: #e8912d; } svg .wait { fill: #d04a4a; }
svg .faults { fill: #8a63c9; } svg .rest { fill: #a9b0bc; } svg .other-time { fill: #dde2ea; }
svg .base { fill: #3a6fd8; } svg .other { fill: #e0a100; }
svg .up { fill: #d04a4a; } svg .down { fill: #3f9b5c; }
svg .total-bar { fill: #4a5566; }
svg .step.rest, svg .swatch.rest { fill: #c9ced6; stroke: #6d7584; stroke-dasharray: 3 2; }
svg .zero { stroke: #4a5566; stroke-width: 1; }
svg .connector { stroke: #9aa3b2; stroke-dasharray: 2 2; }
svg .whisker { stroke: #1d2430; stroke-width: 1.2; }
svg path.hist { fill-opacity: 0.28; stroke-width: 1.3; }
svg path.hist.base { stroke: #3a6fd8; } svg path.hist.other { stroke: #b07e00; }
svg path.hist.fast { stroke: #2d7444; }
svg path.area { stroke: none; fill-opacity: 0.75; }
svg path.step { fill: none; stroke-width: 1.4; }
svg path.step.max { stroke: #1d2430; } svg path.area.mean { fill: #3a6fd8; fill-opacity: 0.55; }
svg path.step.base { stroke: #3a6fd8; fill: none; } svg path.step.other { stroke: #b07e00; fill: none; }
svg .swatch.max { fill: #1d2430; } svg .swatch.mean { fill: #3a6fd8; }
svg .lane-bg { fill: #f5f7fa; } svg path.area.busy { fill: #e8912d; fill-opacity: 0.9; }
svg path.area.wait { fill: #d04a4a; fill-opacity: 1; } svg .swatch.busy { fill: #e8912d; }
footer { margin-top: 30px; color: #7a8496; font-size: 12px; }
)css";

}  // namespace

HtmlPage::HtmlPage(std::string title, size_t budget) : title_(std::move(title)), budget_(budget) {}

void HtmlPage::fact(std::string_view label, std::string_view value) { facts_.emplace_back(label, value); }

void HtmlPage::verdict(std::string_view text) { verdict_ = text; }

bool HtmlPage::section(std::string_view heading, std::string_view explanation, std::string_view html) {
  std::string s = fmt::format("<section><h2>{}</h2>\n", html_escape(heading));
  if (!explanation.empty()) s += fmt::format("<p class=\"explain\">{}</p>\n", html_escape(explanation));
  s += html;
  s += "\n</section>\n";
  if (kStyle.size() + body_.size() + s.size() > budget_) {
    cut(fmt::format("the section “{}” ({} KiB): the page reached its size cap of {} KiB", heading,
                    (s.size() + 1023) / 1024, budget_ / 1024));
    return false;
  }
  body_ += s;
  return true;
}

void HtmlPage::cut(std::string text) { cuts_.push_back(std::move(text)); }

std::string HtmlPage::finish() const {
  std::string out;
  out += "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n";
  out += "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">\n";
  out += "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n";
  out += fmt::format("<title>{}</title>\n<style>{}</style>\n</head>\n<body>\n", html_escape(title_), kStyle);
  out += fmt::format("<h1>{}</h1>\n", html_escape(title_));
  if (!facts_.empty()) {
    out += "<dl class=\"facts\">\n";
    for (const auto& [label, value] : facts_) {
      out += fmt::format("<dt>{}</dt><dd>{}</dd>\n", html_escape(label), html_escape(value));
    }
    out += "</dl>\n";
  }
  if (!verdict_.empty()) out += fmt::format("<p class=\"verdict\" id=\"verdict\">{}</p>\n", html_escape(verdict_));
  if (!cuts_.empty()) {
    out += "<div class=\"cuts\" id=\"cuts\">Left out of this page, to keep it small and quick to draw:<ul>\n";
    for (const auto& c : cuts_) out += fmt::format("<li>{}</li>\n", html_escape(c));
    out += "</ul></div>\n";
  }
  out += body_;
  out += "<footer>Generated by allocscope. Definitions: docs/analysis.md.</footer>\n</body>\n</html>\n";
  return out;
}

std::string html_table(const std::vector<std::vector<std::string>>& rows) {
  std::string out = "<table class=\"data\">\n";
  for (size_t r = 0; r < rows.size(); ++r) {
    out += "<tr>";
    for (const auto& cell : rows[r]) {
      const char* tag = r == 0 ? "th" : "td";
      out += fmt::format("<{}>{}</{}>", tag, html_escape(cell), tag);
    }
    out += "</tr>\n";
  }
  out += "</table>\n";
  return out;
}

void write_html_file(const std::filesystem::path& path, std::string_view html) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) throw std::runtime_error(fmt::format("cannot write {}: {}", path.string(), std::strerror(errno)));
  out.write(html.data(), static_cast<std::streamsize>(html.size()));
  out.close();
  if (!out) throw std::runtime_error(fmt::format("cannot write {}: {}", path.string(), std::strerror(errno)));
}

}  // namespace allocscope
