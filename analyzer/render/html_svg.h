// html_svg.h — the pieces every chart of the HTML report is drawn with: text escaping, scales
// (linear and logarithmic, with readable ticks) and an SVG element writer.
//
// Charts are generated as inline SVG, with no script: a report is one file that any browser opens
// offline, tooltips are SVG <title> elements, and the browser test can check the drawn elements.
// Coordinates are written with one decimal; text is escaped for HTML and SVG alike (bytes that
// are not valid UTF-8 become U+FFFD, control characters are dropped).
#pragma once
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace allocscope {

// `text` escaped for an HTML or SVG text node or attribute value.
std::string html_escape(std::string_view text);

// Maps data values in [lo, hi] to pixels in [px_lo, px_hi] (px_hi may be smaller: y grows down).
class Scale {
 public:
  static Scale linear(double lo, double hi, double px_lo, double px_hi);
  static Scale log(double lo, double hi, double px_lo, double px_hi);  // 0 < lo < hi

  double operator()(double v) const;  // clamped to the domain (log: values <= 0 map to lo)
  double lo() const { return lo_; }
  double hi() const { return hi_; }
  double px_lo() const { return px_lo_; }
  double px_hi() const { return px_hi_; }
  bool is_log() const { return log_; }

  // Tick values inside the domain: 1-2-5 steps (about `target` of them) on a linear scale;
  // powers of ten on a log scale, with 2 and 5 between them when the domain spans few decades.
  std::vector<double> ticks(int target = 5) const;

 private:
  Scale(double lo, double hi, double px_lo, double px_hi, bool log);
  double lo_, hi_, px_lo_, px_hi_;
  bool log_;
};

// A linear domain [0, hi'] with hi' >= hi rounded up to a 1-2-5 step (hi <= 0 gives [0, 1]).
double nice_ceiling(double hi);

// Path data ("M x y L x y … Z"), coordinates with one decimal.
class PathData {
 public:
  PathData& move(double x, double y);
  PathData& line(double x, double y);
  PathData& close();
  bool empty() const { return d_.empty(); }
  const std::string& str() const { return d_; }

 private:
  std::string d_;
};

enum class Anchor { Start, Middle, End };

// One <svg> element.  Every element takes a CSS class (the page's style sheet colours it) and an
// optional tooltip.
class Svg {
 public:
  Svg(double width, double height, std::string_view css_class, std::string_view label);

  double width() const { return width_; }
  double height() const { return height_; }

  void rect(double x, double y, double w, double h, std::string_view cls, std::string_view title = {});
  void line(double x1, double y1, double x2, double y2, std::string_view cls);
  void path(const PathData& d, std::string_view cls, std::string_view title = {});
  void text(double x, double y, std::string_view text, std::string_view cls = {}, Anchor anchor = Anchor::Start,
            std::string_view title = {});
  void open_group(std::string_view cls, std::string_view title = {});
  void close_group();

  // The finished element; the Svg is empty afterwards.
  std::string finish();

 private:
  void title(std::string_view title);

  double width_, height_;
  std::string out_;
  int open_groups_ = 0;
};

// Draws an axis along a scale: a line, ticks with labels from `format`, and a title.  A bottom
// axis is drawn at y = `at`, a left axis at x = `at`; `grid` (the far edge) draws light grid lines.
enum class AxisSide { Bottom, Left };
void draw_axis(Svg& svg, const Scale& scale, AxisSide side, double at, const std::function<std::string(double)>& format,
               std::string_view title, double grid = -1);

// A legend: coloured squares and names in a row from (x, y).
struct LegendEntry {
  std::string name, css;
};
void draw_legend(Svg& svg, double x, double y, const std::vector<LegendEntry>& entries);

// Width in pixels of `text` at the charts' 11 px font (an estimate: 6.4 px per character).
double text_width(std::string_view text);
// `text`, cut with "…" to fit in `width` pixels by that estimate.
std::string fit_text(std::string_view text, double width);

}  // namespace allocscope
