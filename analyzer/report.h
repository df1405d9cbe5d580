// report.h — `allocscope report FILE… [--json] [--by class|bucket|thread]`: where the allocator's
// time goes, and why.
//
// report_text() renders a CostReport (cost_model.h) as aligned tables that fit in 100 columns:
// a header (program, libc, allocator, wall time, threads, calls, the estimated allocator time and
// its share of thread time), a verdict, the breakdown by size class (or bucket, or thread), the
// contention section (waiting share, serialization index, latency by threads inside, per-thread
// table) and notes on the model.  report_json() renders the same numbers as one JSON document;
// its schema is documented in docs/analysis.md.
#pragma once
#include <string>

#include "cli.h"
#include "cost_model.h"

namespace allocscope {

std::string report_text(const CostReport& report);
std::string report_json(const CostReport& report);

// The subcommand: `args` are the arguments after "report".  Returns the exit status.
int report_command(CommandArgs args);

}  // namespace allocscope
