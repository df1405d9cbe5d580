// compare.h — the table of `allocscope compare` (model/compare.h) as text, Markdown, JSON and HTML.
#pragma once
#include <string>
#include <vector>

#include "model/compare.h"

namespace allocscope {

std::string compare_text(const CompareResult& result);
// Why a row has no attribution, or no coverage ("" when it has one), in words.
std::string compare_analysis_error(const CompareRow& row);
std::string compare_coverage_reason(const CompareRow& row);
// The notes on failed runs, failed analyses and unsure shares, one line each.
std::vector<std::string> compare_run_notes(const CompareResult& result);
std::string compare_markdown(const CompareResult& result);
std::string compare_json(const CompareResult& result);
// A self-contained page: the rows as bars of their wall time with the allocator's share, the table.
std::string compare_html(const CompareResult& result);

}  // namespace allocscope
