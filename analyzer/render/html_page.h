// html_page.h — one self-contained HTML page: the frame every HTML report is written into.
//
// The page holds its style sheet inline and no script, and its Content-Security-Policy forbids
// loading anything (default-src 'none'), so opening it never touches the network.  Sections are
// appended in order; the page keeps to a byte budget: a section that would take it past the
// budget is left out, and the page says so in its list of what was cut, which sits right under
// the verdict together with any other cut the report notes (classes or threads not drawn, …).
#pragma once
#include <cstddef>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace allocscope {

constexpr size_t kHtmlBudgetBytes = 4u << 20;

class HtmlPage {
 public:
  explicit HtmlPage(std::string title, size_t budget = kHtmlBudgetBytes);

  // Every page shows, under its verdict, the same legend: each colour of the charts and its one
// meaning (html_page.cpp kMeanings).
// The heading lines under the title: label / value pairs (escaped).
  void fact(std::string_view label, std::string_view value);
  // The verdict, first thing after the facts (escaped).
  void verdict(std::string_view text);
  // A section: a heading, an optional explanation (escaped) and `html` (trusted markup: charts
  // and tables built by the report).  Returns false when the budget left it out.
  bool section(std::string_view heading, std::string_view explanation, std::string_view html);
  // Notes what the report left out, for the page's list of cuts (escaped).
  void cut(std::string text);

  std::string finish() const;

 private:
  std::string title_;
  size_t budget_;
  std::vector<std::pair<std::string, std::string>> facts_;
  std::string verdict_;
  std::string body_;
  std::vector<std::string> cuts_;
};

// An HTML table of text cells (escaped); the first row is the header.  Columns after the first
// are right-aligned; cells do not wrap, except the last column's with `wrap_last` (long text).
// A table wider than the page scrolls inside its own box, never the page.
std::string html_table(const std::vector<std::vector<std::string>>& rows, bool wrap_last = false);

// Writes `html` to `path` (an existing file only with `force`: cli.h); throws std::runtime_error
// on failure.
void write_html_file(const std::filesystem::path& path, std::string_view html, bool force);

}  // namespace allocscope
