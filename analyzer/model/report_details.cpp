// What `allocscope report` shows beyond the cost model: a trace's shapes and the call sites.
#include "model/report_details.h"

#include "model/trace_analysis.h"

namespace allocscope {

ReportDetails report_details(const CostReport& report) {
  ReportDetails details = report_details(report.file, report.by, report.trace);
  apply_estimate(details, report);
  return details;
}

void apply_estimate(ReportDetails& details, const CostReport& report) {
  if (details.shapes) apply_estimate(*details.shapes, report);
  if (details.stack_costs) {
    apply_estimate(*details.stack_costs, report);
    details.callsites = callsite_report(*details.stack_costs);
    details.stack_costs.reset();
  }
}

ReportDetails report_details(const std::filesystem::path& file, ReportGrouping by, bool trace) {
  ReportDetails details;
  const bool callsites = by == ReportGrouping::Callsite;
  if (!trace) {
    if (callsites) details.stack_costs = load_stack_costs(file);
    return details;
  }
  LoadOptions quiet;  // the cost model warns about the file
  quiet.warn = [](std::string_view) {};
  Profile profile = load_profile(file, quiet);
  TraceAnalysis analysis = analyze_trace(profile);
  details.shapes = shape_report(profile, analysis);
  if (callsites) details.stack_costs = trace_stack_costs(std::move(profile), analysis);
  return details;
}

}  // namespace allocscope
