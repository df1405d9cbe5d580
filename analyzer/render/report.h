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
// A report also shows what the cost model does not know (ReportDetails, report_details.h): the
// shapes of a trace for every profile recorded with --trace — in JSON always, in text with
// --by shape — and with --by callsite the costliest call sites per size class.
#pragma once
#include <string>

#include "model/cost_model.h"
#include "model/report_details.h"

namespace allocscope {

std::string report_text(const CostReport& report, const ReportDetails& details = {});
std::string report_json(const CostReport& report, const ReportDetails& details = {});
// The contention verdict's keys (verdict, confidence, evidence, reason, advice, …) into the object
// being written: report's "contention", and each side of diff and each row of compare.
class JsonWriter;
void write_contention_verdict(JsonWriter& w, const ContentionVerdict& v);

}  // namespace allocscope
