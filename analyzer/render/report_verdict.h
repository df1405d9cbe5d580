// report_verdict.h — the report's verdict (model/cost_model.h Verdict) in words: where the
// allocator's time goes, the contention verdict's sentence, and what to record when a figure is
// unsure.  The text and JSON reports and the HTML page print the same paragraph.
#pragma once
#include <string>

#include "model/cost_model.h"

namespace allocscope {

std::string verdict_text(const CostReport& report);

// The verdict's name in the JSON report: "fast", "slow", "waiting", "unsure" or "none".
const char* verdict_name(VerdictKind kind);

}  // namespace allocscope
