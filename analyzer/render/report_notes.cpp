// report_notes.cpp — see report_notes.h.
#include "render/report_notes.h"

#include <fmt/format.h>

namespace allocscope {

std::vector<std::string> report_caveats(const CostReport& r) {
  const ModelNotes& notes = r.model;
  std::vector<std::string> caveats;
  if (!r.complete) caveats.push_back("the profile has no end record: the program crashed, was killed or is still running");
  if (notes.truncated) caveats.push_back("the profile is cut short; its last chunks are missing");
  if (notes.events_dropped) {
    caveats.push_back(fmt::format("{} timed-call events were dropped; latency counts still include them",
                                  notes.events_dropped));
  }
  if (notes.late_events) {
    caveats.push_back(fmt::format("{} events arrived too late to place on the time line; their concurrency is unknown",
                                  notes.late_events));
  }
  if (notes.capped_threads) {
    caveats.push_back(fmt::format("{} thread(s) had an estimate longer than their lifetime (rare very long calls); "
                                  "scaled down to it", notes.capped_threads));
  }
  if (r.sample_every == 0 && r.calls) caveats.push_back("calls were counted but none timed (--sample 0)");
  caveats.insert(caveats.end(), notes.shim_notes.begin(), notes.shim_notes.end());
  return caveats;
}

std::string error_method(const ErrorNotes& error) {
  return error.sampled_fraction >= 1 ? "every call timed: the times are measured, not estimated"
                                     : "2 standard errors over the timing windows (docs/analysis.md)";
}

}  // namespace allocscope
