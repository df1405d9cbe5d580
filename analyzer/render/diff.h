// diff.h — `allocscope diff` in words: its warnings, its totals, its text and its JSON
// (the numbers come from model/diff.h; the HTML page is render/html_report.h's).
#pragma once
#include <string>
#include <vector>

#include "model/diff.h"

namespace allocscope {

// Why the two runs may not be the same workload: their arguments differ, or their programs do
// while their C libraries are the same (a program built once per libc is expected to differ).
std::vector<std::string> workload_warnings(const DiffReport& diff);
// The verdict: the gap, the allocator's part of it and what it mostly is, or why none is claimed.
std::string diff_verdict_text(const DiffReport& diff);
std::string diff_text(const DiffReport& diff);
// The totals table of diff_text and the HTML page: a heading row, then one row per figure
// (label, BASE, OTHER, OTHER - BASE).
std::vector<std::vector<std::string>> diff_totals(const DiffReport& diff);
std::string diff_json(const DiffReport& diff);

}  // namespace allocscope
