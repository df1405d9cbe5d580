// The frame of the HTML reports: see html_page.h.
#include "render/html_page.h"

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <stdexcept>

#include "util/output_file.h"
#include "render/html_svg.h"

namespace allocscope {

namespace {

// One colour per meaning, on every page (report, diff, compare): the SVG marks of a meaning and
// its swatch in the page's legend take their colour from this one table.
struct Meaning {
  std::string_view css;     // the class of the marks that stand for it
  std::string_view colour;
  std::string_view name;    // in the legend
};
constexpr Meaning kMeanings[] = {
    {"fast", "#3f9b5c", "fast path"},
    {"slow", "#e8912d", "slow but running"},
    {"wait", "#d04a4a", "waiting (blocked)"},
    {"faults", "#7b5cc4", "page faults outside calls"},
    {"rest", "#c9ced6", "not attributed (outside allocator calls)"},
    {"other-time", "#dde2ea", "rest of the run (not in the allocator)"},
    {"base", "#3a6fd8", "BASE (diff: the first profile)"},
    {"other", "#16a0a8", "OTHER (diff: the second profile)"},
    {"up", "#8c5a2b", "OTHER takes longer"},
    {"down", "#7a9a01", "OTHER takes less"},
    {"total-bar", "#4a5566", "a total"},
    {"mean", "#c678b5", "mean threads inside the allocator"},
    {"max", "#1d2430", "most threads inside at once"},
    {"busy", "#d8b814", "a thread inside allocator calls (lanes)"},
};

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
.legend { display: flex; flex-wrap: wrap; gap: 2px 14px; margin: 6px 0 10px; font-size: 12px; color: #3b4454; }
.legend .key { white-space: nowrap; } .legend .sw { display: inline-block; width: 10px; height: 10px; margin-right: 5px; vertical-align: -1px; }
.legend .sw.rest { outline: 1px dashed #6d7584; outline-offset: -1px; }
.table-wrap { max-width: 100%; overflow-x: auto; }
table.data { border-collapse: collapse; font-size: 12.5px; margin: 6px 0; }
table.data th, table.data td { padding: 2px 9px; border-bottom: 1px solid #e6e9ef; text-align: right; white-space: nowrap; }
table.data th:first-child, table.data td:first-child { text-align: left; }
table.data th { color: #4a5566; font-weight: 600; }
table.data.wrap-last td:last-child, table.data.wrap-last th:last-child { white-space: normal; text-align: left; min-width: 12em; }
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
svg .step.rest, svg .swatch.rest { stroke: #6d7584; stroke-dasharray: 3 2; }
svg .zero { stroke: #4a5566; stroke-width: 1; }
svg .connector { stroke: #9aa3b2; stroke-dasharray: 2 2; }
svg .whisker { stroke: #1d2430; stroke-width: 1.2; }
svg path.hist { fill-opacity: 0.28; stroke-width: 1.3; }
svg path.hist.base { stroke: #3a6fd8; } svg path.hist.other { stroke: #0e7c83; }
svg path.hist.fast { stroke: #2d7444; }
svg path.area { stroke: none; fill-opacity: 0.75; }
svg path.step { fill: none; stroke-width: 1.4; }
svg path.step.max { stroke: #1d2430; } svg path.area.mean { fill-opacity: 0.55; }
svg path.step.base { stroke: #3a6fd8; fill: none; } svg path.step.other { stroke: #0e7c83; fill: none; }
svg .lane-bg { fill: #f5f7fa; } svg path.area.busy { fill-opacity: 0.9; }
svg path.area.wait { fill-opacity: 1; }
svg .zero-bin { stroke: #7a8496; stroke-dasharray: 2 2; } svg rect.max-mark { opacity: 0.85; }
footer { margin-top: 30px; color: #7a8496; font-size: 12px; }
)css";

// The colour rules of kMeanings: SVG fills, and the legend's swatches.
std::string meaning_rules() {
  std::string css;
  for (const Meaning& m : kMeanings) {
    css += fmt::format("svg .{0} {{ fill: {1}; }} .legend .sw.{0} {{ background: {1}; }}\n", m.css, m.colour);
  }
  return css;
}

// The legend shared by every page: each colour and what it means.
std::string legend_html() {
  std::string html = "<div class=\"legend\" id=\"legend\" aria-label=\"colours\">";
  for (const Meaning& m : kMeanings) {
    html += fmt::format("<span class=\"key\"><i class=\"sw {}\"></i>{}</span>", m.css, html_escape(m.name));
  }
  return html + "</div>\n";
}

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
  out += fmt::format("<title>{}</title>\n<style>{}{}</style>\n</head>\n<body>\n", html_escape(title_), kStyle,
                     meaning_rules());
  out += fmt::format("<h1>{}</h1>\n", html_escape(title_));
  if (!facts_.empty()) {
    out += "<dl class=\"facts\">\n";
    for (const auto& [label, value] : facts_) {
      out += fmt::format("<dt>{}</dt><dd>{}</dd>\n", html_escape(label), html_escape(value));
    }
    out += "</dl>\n";
  }
  if (!verdict_.empty()) out += fmt::format("<p class=\"verdict\" id=\"verdict\">{}</p>\n", html_escape(verdict_));
  out += legend_html();
  if (!cuts_.empty()) {
    out += "<div class=\"cuts\" id=\"cuts\">Left out of this page, to keep it small and quick to draw:<ul>\n";
    for (const auto& c : cuts_) out += fmt::format("<li>{}</li>\n", html_escape(c));
    out += "</ul></div>\n";
  }
  out += body_;
  out += "<footer>Generated by allocscope. Definitions: docs/analysis.md.</footer>\n</body>\n</html>\n";
  return out;
}

std::string html_table(const std::vector<std::vector<std::string>>& rows, bool wrap_last) {
  std::string out = wrap_last ? "<div class=\"table-wrap\"><table class=\"data wrap-last\">\n"
                              : "<div class=\"table-wrap\"><table class=\"data\">\n";
  for (size_t r = 0; r < rows.size(); ++r) {
    out += "<tr>";
    for (const auto& cell : rows[r]) {
      const char* tag = r == 0 ? "th" : "td";
      out += fmt::format("<{}>{}</{}>", tag, html_escape(cell), tag);
    }
    out += "</tr>\n";
  }
  out += "</table></div>\n";
  return out;
}

void write_html_file(const std::filesystem::path& path, std::string_view html, bool force) {
  std::unique_ptr<std::FILE, OutputFileCloser> out(open_output_file(path, force));
  std::fwrite(html.data(), 1, html.size(), out.get());
  if (std::fflush(out.get()) != 0 || std::ferror(out.get())) {
    throw std::runtime_error(fmt::format("cannot write {}: {}", path.string(), std::strerror(errno)));
  }
}

}  // namespace allocscope
