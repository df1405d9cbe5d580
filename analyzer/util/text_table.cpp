#include "util/text_table.h"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

namespace allocscope {

size_t display_width(std::string_view text) {
  return static_cast<size_t>(std::count_if(text.begin(), text.end(), [](char c) {
    return (static_cast<unsigned char>(c) & 0xC0) != 0x80;  // skip UTF-8 continuation bytes
  }));
}

std::string fit_text(const std::string& text, size_t width) {
  if (display_width(text) <= width) return text;
  std::string out;
  size_t shown = 0;
  for (size_t i = 0; i < text.size() && shown + 1 < width; ++i) {
    out += text[i];
    if ((static_cast<unsigned char>(text[i]) & 0xC0) != 0x80) ++shown;
    while (i + 1 < text.size() && (static_cast<unsigned char>(text[i + 1]) & 0xC0) == 0x80) out += text[++i];
  }
  return out + "…";
}

void TextTable::add_row(std::vector<std::string> cells) {
  if (cells.size() > columns_.size()) throw std::logic_error("TextTable: row wider than the table");
  cells.resize(columns_.size());
  rows_.push_back(std::move(cells));
}

namespace {

void append_cell(std::string& line, std::string_view text, size_t width, TextTable::Align align,
                 bool last) {
  const size_t pad = width - std::min(width, display_width(text));
  if (align == TextTable::Align::Right) line.append(pad, ' ');
  line += text;
  if (align == TextTable::Align::Left && !last) line.append(pad, ' ');
}

}  // namespace

void TextTable::shrink_to_fit(size_t column, size_t width, size_t min_width, std::string_view indent) {
  if (column >= columns_.size()) throw std::logic_error("TextTable: no such column");
  size_t others = display_width(indent) + 2 * (columns_.size() - 1);
  for (size_t c = 0; c < columns_.size(); ++c) {
    if (c == column) continue;
    size_t w = display_width(columns_[c].title);
    for (const auto& row : rows_) w = std::max(w, display_width(row[c]));
    others += w;
  }
  const size_t budget = std::max({min_width, display_width(columns_[column].title), width > others ? width - others : 0});
  for (auto& row : rows_) row[column] = fit_text(row[column], budget);
}

std::string TextTable::render(std::string_view indent) const {
  const bool has_header = std::any_of(columns_.begin(), columns_.end(),
                                      [](const Column& c) { return !c.title.empty(); });
  std::vector<size_t> widths(columns_.size());
  for (size_t c = 0; c < columns_.size(); ++c) {
    if (has_header) widths[c] = display_width(columns_[c].title);
    for (const auto& row : rows_) widths[c] = std::max(widths[c], display_width(row[c]));
  }
  auto render_line = [&](auto cell_text) {
    std::string line(indent);
    for (size_t c = 0; c < columns_.size(); ++c) {
      if (c > 0) line += "  ";
      append_cell(line, cell_text(c), widths[c], columns_[c].align, c + 1 == columns_.size());
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    return line + '\n';
  };
  std::string out;
  if (has_header) out += render_line([&](size_t c) -> std::string_view { return columns_[c].title; });
  for (const auto& row : rows_) out += render_line([&](size_t c) -> std::string_view { return row[c]; });
  return out;
}

std::string wrap_words(std::string_view text, size_t width, std::string_view indent) {
  std::string out, line;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find(' ', pos);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view word = text.substr(pos, end - pos);
    pos = end + 1;
    if (word.empty()) continue;
    if (!line.empty() && display_width(indent) + display_width(line) + 1 + display_width(word) > width) {
      out += fmt::format("{}{}\n", indent, line);
      line.clear();
    }
    if (!line.empty()) line += ' ';
    line += word;
  }
  if (!line.empty()) out += fmt::format("{}{}\n", indent, line);
  return out;
}

}  // namespace allocscope
