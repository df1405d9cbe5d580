// compare.h — the table of `allocscope compare` (model/compare.h) as text, Markdown, JSON and HTML.
#pragma once
#include <string>

#include "model/compare.h"

namespace allocscope {

std::string compare_text(const CompareResult& result);
std::string compare_markdown(const CompareResult& result);
std::string compare_json(const CompareResult& result);
// A self-contained page: the rows as bars of their wall time with the allocator's share, the table.
std::string compare_html(const CompareResult& result);

}  // namespace allocscope
