// report.h — `allocscope report FILE… [--json] [--by class|bucket|thread|shape|callsite]`: where
// the allocator's time goes, and why.
//
// report_text() renders a CostReport (cost_model.h) as aligned tables that fit in 100 columns:
// a header (program, libc, allocator, wall time, threads, calls, the estimated allocator time and
// its share of thread time), a verdict, the breakdown by size class (or bucket, or thread), the
// contention section (waiting share, serialization index, latency by threads inside, per-thread
// table) and notes on the model.  report_json() renders the same numbers as one JSON document;
// its schema is documented in docs/analysis.md.
//
// A report also shows what the cost model does not know (ReportDetails): the shapes of a trace
// (shapes.h) for every profile recorded with --trace — in JSON always, in text with --by shape —
// and with --by callsite the costliest call sites per size class (callsites.h).
#pragma once
#include <filesystem>
#include <optional>
#include <string>

#include "model/callsites.h"
#include "commands/cli.h"
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

std::string report_text(const CostReport& report, const ReportDetails& details = {});
std::string report_json(const CostReport& report, const ReportDetails& details = {});
// The contention verdict's keys (verdict, confidence, evidence, reason, advice, …) into the object
// being written: report's "contention", and each side of diff and each row of compare.
class JsonWriter;
void write_contention_verdict(JsonWriter& w, const ContentionVerdict& v);

// The subcommand: `args` are the arguments after "report".  Returns the exit status.
int report_command(CommandArgs args);

}  // namespace allocscope
