// report_details.h — what `allocscope report` shows beyond the cost model: the shapes of a trace
// (shapes.h) for every profile recorded with --trace, and with --by callsite the costliest call
// sites per size class (callsites.h).
#pragma once
#include <filesystem>
#include <optional>

#include "model/callsites.h"
#include "model/cost_model.h"
#include "model/shapes.h"

namespace allocscope {

struct ReportDetails {
  std::optional<ShapeReport> shapes;        // the profile holds a trace
  std::optional<CallSiteReport> callsites;  // --by callsite (made by apply_estimate)
  std::optional<StackCostSource> stack_costs;  // --by callsite, until apply_estimate
};

// Reads what `report` needs beyond the cost model: a trace's shapes (one pass over the trace), and
// for --by callsite the call sites (from that same pass for a trace), their times the cost
// model's estimate apportioned over them (apportion.h).  Throws ProfileError.
ReportDetails report_details(const CostReport& report);
// The same before the cost model has run: `trace` as CostReport::trace will say; the times are
// the traced ones until apply_estimate() gives them their parts of the report's estimate.
ReportDetails report_details(const std::filesystem::path& file, ReportGrouping by, bool trace);
void apply_estimate(ReportDetails& details, const CostReport& report);

}  // namespace allocscope
