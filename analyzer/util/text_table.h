// text_table.h — plain-text tables with aligned columns, for terminal output.
//
// Columns have a title and an alignment; widths adapt to the widest cell (in characters, so UTF-8
// such as "µs" lines up).  A table whose titles are all empty renders without a header line, which
// suits "name  value" field lists.
#pragma once
#include <string>
#include <string_view>
#include <vector>

namespace allocscope {

class TextTable {
 public:
  enum class Align { Left, Right };
  struct Column {
    std::string title;
    Align align = Align::Right;
  };

  explicit TextTable(std::vector<Column> columns) : columns_(std::move(columns)) {}

  // A row has at most as many cells as there are columns; missing cells are blank.
  void add_row(std::vector<std::string> cells);
  bool empty() const { return rows_.empty(); }

  // Every line starts with `indent`; columns are separated by two spaces; lines end with '\n'.
  std::string render(std::string_view indent = "  ") const;

  // Cuts the cells of `column` (fit_text) so that render(indent) fits in `width` characters,
  // keeping at least `min_width` of that column.
  void shrink_to_fit(size_t column, size_t width, size_t min_width, std::string_view indent = "  ");

 private:
  std::vector<Column> columns_;
  std::vector<std::vector<std::string>> rows_;
};

// Display width of UTF-8 text (code points; no wide-character handling).
size_t display_width(std::string_view text);

// Words wrapped to `width` columns, every line indented by `indent` and ended by '\n'.
std::string wrap_words(std::string_view text, size_t width, std::string_view indent);

// At most `width` characters of `text`, "…" marking a cut.
std::string fit_text(const std::string& text, size_t width);

}  // namespace allocscope
