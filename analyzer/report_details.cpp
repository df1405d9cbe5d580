// What `allocscope report` shows beyond the cost model: a trace's shapes and the call sites.
#include "report.h"

#include "trace_analysis.h"

namespace allocscope {

ReportDetails report_details(const CostReport& report) {
  ReportDetails details;
  const bool callsites = report.by == ReportGrouping::Callsite;
  if (!report.trace) {
    if (callsites) details.callsites = callsite_report(load_stack_costs(report.file));
    return details;
  }
  LoadOptions quiet;  // the cost model has warned about the file already
  quiet.warn = [](std::string_view) {};
  Profile profile = load_profile(report.file, quiet);
  TraceAnalysis analysis = analyze_trace(profile);
  details.shapes = shape_report(profile, analysis);
  if (callsites) details.callsites = callsite_report(trace_stack_costs(std::move(profile), analysis));
  return details;
}

}  // namespace allocscope
