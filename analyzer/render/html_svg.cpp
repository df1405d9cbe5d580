// SVG primitives of the HTML report: see html_svg.h.
#include "render/html_svg.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <utility>

#include "util/json_writer.h"

namespace allocscope {

std::string html_escape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    const auto byte = static_cast<unsigned char>(text[i]);
    if (byte < 0x80) {
      switch (text[i]) {
        case '&': out += "&amp;"; break;
        case '<': out += "&lt;"; break;
        case '>': out += "&gt;"; break;
        case '"': out += "&quot;"; break;
        case '\'': out += "&#39;"; break;
        case '\n':
        case '\t': out += text[i]; break;
        default:
          if (byte >= 0x20 && byte != 0x7f) out += text[i];
          break;
      }
      ++i;
    } else if (const size_t n = utf8_sequence_length(text, i)) {
      out.append(text.substr(i, n));
      i += n;
    } else {
      out += "\xEF\xBF\xBD";  // U+FFFD
      ++i;
    }
  }
  return out;
}

// ---- scales ----

Scale::Scale(double lo, double hi, double px_lo, double px_hi, bool log)
    : lo_(lo), hi_(hi), px_lo_(px_lo), px_hi_(px_hi), log_(log) {}

Scale Scale::linear(double lo, double hi, double px_lo, double px_hi) {
  if (!(hi > lo)) hi = lo + 1;
  return Scale(lo, hi, px_lo, px_hi, false);
}

Scale Scale::log(double lo, double hi, double px_lo, double px_hi) {
  if (!(lo > 0)) lo = 1;
  if (!(hi > lo)) hi = lo * 10;
  return Scale(lo, hi, px_lo, px_hi, true);
}

double Scale::operator()(double v) const {
  double f;
  if (log_) {
    const double c = std::clamp(v > 0 ? v : lo_, lo_, hi_);
    f = (std::log(c) - std::log(lo_)) / (std::log(hi_) - std::log(lo_));
  } else {
    const double c = std::isfinite(v) ? std::clamp(v, lo_, hi_) : lo_;
    f = (c - lo_) / (hi_ - lo_);
  }
  return px_lo_ + f * (px_hi_ - px_lo_);
}

namespace {

double nice_step(double span, int target) {
  const double raw = span / std::max(1, target);
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0}) {
    if (m * mag >= raw) return m * mag;
  }
  return 10 * mag;
}

std::string coord(double v) { return fmt::format("{:.1f}", v); }

}  // namespace

double nice_ceiling(double hi) {
  if (!(hi > 0) || !std::isfinite(hi)) return 1;
  const double mag = std::pow(10.0, std::floor(std::log10(hi)));
  for (double m : {1.0, 1.2, 1.5, 2.0, 2.5, 3.0, 4.0, 5.0, 6.0, 8.0, 10.0}) {
    if (m * mag >= hi * (1 - 1e-9)) return m * mag;
  }
  return 10 * mag;
}

std::vector<double> Scale::ticks(int target) const {
  std::vector<double> out;
  if (log_) {
    const int first = static_cast<int>(std::ceil(std::log10(lo_) - 1e-9));
    const int last = static_cast<int>(std::floor(std::log10(hi_) + 1e-9));
    const bool fine = last - first < 2;
    for (int e = first - 1; e <= last; ++e) {
      const double p = std::pow(10.0, e);
      for (double m : fine ? std::vector<double>{1, 2, 5} : std::vector<double>{1}) {
        const double v = m * p;
        if (v >= lo_ * (1 - 1e-9) && v <= hi_ * (1 + 1e-9)) out.push_back(v);
      }
    }
    return out;
  }
  const double step = nice_step(hi_ - lo_, target);
  for (double v = std::ceil(lo_ / step - 1e-9) * step; v <= hi_ + step * 1e-9; v += step) {
    out.push_back(std::fabs(v) < step * 1e-9 ? 0.0 : v);
  }
  return out;
}

// ---- path data ----

PathData& PathData::move(double x, double y) {
  d_ += fmt::format("{}M{} {}", d_.empty() ? "" : " ", coord(x), coord(y));
  return *this;
}

PathData& PathData::line(double x, double y) {
  d_ += fmt::format("L{} {}", coord(x), coord(y));
  return *this;
}

PathData& PathData::close() {
  d_ += "Z";
  return *this;
}

// ---- svg ----

Svg::Svg(double width, double height, std::string_view css_class, std::string_view label)
    : width_(width), height_(height) {
  out_ = fmt::format(
      "<svg class=\"{}\" width=\"{}\" height=\"{}\" viewBox=\"0 0 {} {}\" "
      "role=\"img\" aria-label=\"{}\">",
      html_escape(css_class), coord(width), coord(height), coord(width), coord(height), html_escape(label));
}

void Svg::title(std::string_view title) {
  if (!title.empty()) out_ += fmt::format("<title>{}</title>", html_escape(title));
}

void Svg::rect(double x, double y, double w, double h, std::string_view cls, std::string_view tip) {
  if (w < 0) {
    x += w;
    w = -w;
  }
  if (h < 0) {
    y += h;
    h = -h;
  }
  out_ += fmt::format("<rect class=\"{}\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\"", html_escape(cls), coord(x),
                      coord(y), coord(w), coord(h));
  if (tip.empty()) {
    out_ += "/>";
  } else {
    out_ += ">";
    title(tip);
    out_ += "</rect>";
  }
}

void Svg::line(double x1, double y1, double x2, double y2, std::string_view cls) {
  out_ += fmt::format("<line class=\"{}\" x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\"/>", html_escape(cls), coord(x1),
                      coord(y1), coord(x2), coord(y2));
}

void Svg::path(const PathData& d, std::string_view cls, std::string_view tip) {
  if (d.empty()) return;
  out_ += fmt::format("<path class=\"{}\" d=\"{}\"", html_escape(cls), d.str());
  if (tip.empty()) {
    out_ += "/>";
  } else {
    out_ += ">";
    title(tip);
    out_ += "</path>";
  }
}

void Svg::text(double x, double y, std::string_view text, std::string_view cls, Anchor anchor, std::string_view tip) {
  const char* a = anchor == Anchor::Start ? "start" : anchor == Anchor::Middle ? "middle" : "end";
  out_ += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"{}\"", coord(x), coord(y), a);
  if (!cls.empty()) out_ += fmt::format(" class=\"{}\"", html_escape(cls));
  out_ += ">";
  title(tip);
  out_ += html_escape(text);
  out_ += "</text>";
}

void Svg::open_group(std::string_view cls, std::string_view tip) {
  out_ += fmt::format("<g class=\"{}\">", html_escape(cls));
  title(tip);
  ++open_groups_;
}

void Svg::close_group() {
  if (open_groups_ == 0) return;
  out_ += "</g>";
  --open_groups_;
}

std::string Svg::finish() {
  while (open_groups_ > 0) close_group();
  out_ += "</svg>";
  return std::exchange(out_, std::string());
}

// ---- axes and legends ----

void draw_axis(Svg& svg, const Scale& scale, AxisSide side, double at, const std::function<std::string(double)>& format,
               std::string_view title, double grid) {
  svg.open_group(side == AxisSide::Bottom ? "axis x-axis" : "axis y-axis");
  const double a = scale.px_lo(), b = scale.px_hi();
  if (side == AxisSide::Bottom) {
    svg.line(std::min(a, b), at, std::max(a, b), at, "domain");
  } else {
    svg.line(at, std::min(a, b), at, std::max(a, b), "domain");
  }
  // A label that would overlap the last one drawn is left out (its tick stays): on a narrow log
  // axis every other decade is labelled rather than all of them run together.
  constexpr double kLabelGap = 5, kLabelHeight = 11;
  double last_end = -INFINITY;
  for (const double v : scale.ticks()) {
    const double p = scale(v);
    const std::string label = format(v);
    if (side == AxisSide::Bottom) {
      if (grid >= 0) svg.line(p, grid, p, at, "grid");
      svg.line(p, at, p, at + 4, "tick");
      const double half = text_width(label) / 2;
      if (p - half >= last_end + kLabelGap) {
        svg.text(p, at + 15, label, "tick-label", Anchor::Middle);
        last_end = p + half;
      }
    } else {
      if (grid >= 0) svg.line(at, p, grid, p, "grid");
      svg.line(at - 4, p, at, p, "tick");
      const double top = -p;  // labels go up the axis: compare heights in the upward direction
      if (top >= last_end + 2) {
        svg.text(at - 6, p + 3.5, label, "tick-label", Anchor::End);
        last_end = top + kLabelHeight;
      }
    }
  }
  if (!title.empty()) {
    if (side == AxisSide::Bottom) {
      svg.text((a + b) / 2, at + 30, title, "axis-title", Anchor::Middle);
    } else {
      svg.text(4, std::min(a, b) - 8, title, "axis-title", Anchor::Start);
    }
  }
  svg.close_group();
}

void draw_legend(Svg& svg, double x, double y, const std::vector<LegendEntry>& entries) {
  svg.open_group("legend");
  for (const auto& e : entries) {
    svg.rect(x, y - 9, 10, 10, "swatch " + e.css);
    svg.text(x + 14, y, e.name, "legend-label");
    x += 14 + text_width(e.name) + 16;
  }
  svg.close_group();
}

std::string fit_text(std::string_view text, double width) {
  if (text_width(text) <= width) return std::string(text);
  const auto keep = static_cast<size_t>(std::max(0.0, width / 6.4 - 1));
  std::string out;
  size_t chars = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    const bool lead = (static_cast<unsigned char>(text[i]) & 0xC0) != 0x80;
    if (lead && chars++ == keep) break;
    out += text[i];
  }
  return out + "…";
}

double text_width(std::string_view text) {
  size_t chars = 0;
  for (const char c : text) chars += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  return 6.4 * static_cast<double>(chars);
}

}  // namespace allocscope
