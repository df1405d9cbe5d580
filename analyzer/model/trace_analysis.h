// trace_analysis.h — one pass over a profile's calls that feeds shapes, call sites and exports.
//
// analyze_trace() merges a trace-mode profile's calls (trace_decode.h) through a LifetimeTracker
// (lifetimes.h), a ConcurrencyTracker (concurrency.h) and any extra visitors, in one read of the
// TraceEvents chunks.  load_stack_costs() gives the cost per (stack, operation, class) of any
// profile: from that pass for a trace, else from the sampled timed-call Events that carry a stack
// id (only those calls: stack_every and stack_slow_ticks of the Calibration say which).
#pragma once
#include <cstdint>
#include <filesystem>
#include <span>

#include "model/class_tables.h"
#include "model/concurrency.h"
#include "model/lifetimes.h"
#include "profile/profile.h"
#include "profile/trace_decode.h"

namespace allocscope {

struct TraceOptions {
  unsigned timeline_slots = 100;  // live bytes and threads inside, over the run
};

struct TraceAnalysis {
  const ClassTable* table = nullptr;
  uint64_t t0 = 0, t1 = 0;  // ticks covered by the timeline (first record to the last record's start)
  TraceMergeStats merge;
  LifetimeResults lifetimes;
  ConcurrencyResults concurrency;
};

// The allocator's class table (class_tables.h), or the bucket table for an unknown allocator.
const ClassTable& class_table_of(const Profile& profile);

// Runs the pass over a loaded profile (no calls when it holds no trace).  Throws ProfileError.
TraceAnalysis analyze_trace(const Profile& profile, const TraceOptions& options = {},
                            std::span<TraceVisitor* const> extra = {});

struct StackCostSource {
  Profile profile;
  const ClassTable* table = nullptr;
  StackCosts costs;
  bool trace = false;
  uint64_t calls = 0;  // calls the costs were taken from (all of a trace, or the timed events)
  bool estimated = false;         // apply_estimate() ran: the times add up to allocator_time_ns
  double allocator_time_ns = 0;
};

// Replaces the costs' times by their parts of the cost model's estimate of the same profile
// (apportion.h): the call sites and exports then add up to the report's allocator time.  The
// estimate that no stack cost can take (calls of an operation without any) goes to "[no stack]".
struct CostReport;
void apply_estimate(StackCostSource& src, const CostReport& estimate);
// The time of one cost in ns: its estimate when apply_estimate() ran, else its traced time.
double cost_ns(const StackCostSource& src, const StackCost& cost);
// load_stack_costs() with apply_estimate() of the profile's cost model (run beside it).
StackCostSource load_estimated_stack_costs(const std::filesystem::path& path);

// The costs per stack of a trace already analyzed: takes the profile and the analysis's stack
// costs (analysis.lifetimes.stack_costs is left empty).
StackCostSource trace_stack_costs(Profile profile, TraceAnalysis& analysis);

// Loads `path` and the costs per stack.  `extra` visit a trace's calls; `on_events` sees the
// Events of a sampled profile while it loads.
StackCostSource load_stack_costs(const std::filesystem::path& path, std::span<TraceVisitor* const> extra = {},
                                 const EventSink& on_events = {});

}  // namespace allocscope
