// shapes.h — the shapes of a trace: how long blocks live, who frees them, what is left, how
// many threads meet inside the allocator; and which shapes make two runs differ.
//
// shape_report() turns a TraceAnalysis (trace_analysis.h) into numbers in ns and bytes:
//   shapes          (size class, lifetime band, same/cross thread): blocks, calls, time, bytes
//   classes         per size class: blocks, frees (same / cross thread), leaks, blocks per
//                   lifetime band, lifetime quantiles, and the allocations the allocating thread
//                   made in between (quantiles)
//   realloc         growth chains: count, length distribution, in place vs moved, growth
//   live bytes      peak (and when), at the end, and a timeline
//   concurrency     threads inside the allocator over time, busy time, serialization index
// The definitions are those of lifetimes.h and concurrency.h; docs/shapes.md explains them.
//
// render/shapes.h prints them as text and JSON.  For `report` and `diff`:
//   attribute_gap()       splits the difference in allocator time between two traces over the
//       shapes (size range of the *base* profile's classes × lifetime band × thread pattern), and
//       over the merged shapes, so that a diff can say "short-lived same-thread 16–1039 B: 91 % of
//       the gap".
#pragma once
#include <array>
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "model/lifetimes.h"
#include "model/shape_groups.h"
#include "model/trace_analysis.h"

namespace allocscope {

struct ShapeRow {
  uint32_t cls = 0;
  uint64_t lo = 0, hi = 0;
  std::string label;         // the class's label in its table
  LifetimeBand band = LifetimeBand::Under1us;
  bool cross_thread = false;
  uint64_t blocks = 0, calls = 0;
  uint64_t time_ns = 0;
  ByteCount bytes = 0;
  uint64_t min_size = 0, max_size = 0;  // smallest and largest request of its blocks
  std::array<TimedCalls, kOpSlots> by_op{};  // its calls per operation, as traced (raw ticks)
};

// Fine shapes merged across adjacent size classes (shape_groups.h).
struct ShapeGroupRow {
  ShapeGroupKey key;
  uint64_t lo = 0, hi = 0;   // smallest and largest request of its blocks
  uint32_t classes = 0;      // size classes merged
  uint64_t blocks = 0, calls = 0;
  uint64_t time_ns = 0;
  ByteCount bytes = 0;
};

// The calls and time of all shape groups: what their shares are of.
struct GroupTotals {
  uint64_t calls = 0, time_ns = 0;
};
GroupTotals group_totals(const std::vector<ShapeGroupRow>& groups);

struct ClassLifetimeRow {
  uint64_t lo = 0, hi = 0;
  std::string label;
  uint64_t blocks = 0;
  ByteCount bytes = 0;
  uint64_t freed = 0, same_thread = 0, cross_thread = 0;  // ended by free or realloc
  uint64_t leaked = 0;
  ByteCount leaked_bytes = 0;
  std::array<uint64_t, kLifetimeBands> bands{};
  std::optional<uint64_t> p50_ns, p90_ns, p99_ns, max_ns;          // lifetimes of freed blocks
  std::optional<uint64_t> between_p50, between_p90, between_p99;   // allocations in between
  std::optional<double> between_mean;
};

struct ChainSummary {
  uint64_t chains = 0, steps = 0, in_place = 0, moved = 0, grew = 0, shrank = 0, same = 0;
  uint32_t max_length = 0;
  std::map<uint32_t, uint64_t> by_length;
  std::optional<double> mean_growth;       // geometric mean of final/first size per chain
  std::optional<double> mean_step_growth;  // geometric mean of new/old size per realloc
};

struct TimelinePoint {
  uint64_t t_ns = 0;          // slot start, from the process start
  uint64_t max_live_bytes = 0;
  uint64_t live_bytes = 0;    // at the slot's end
  uint32_t max_inside = 0;
  double mean_inside = 0;     // threads inside, averaged over the slot
};

struct ConcurrencySummary {
  uint32_t max_inside = 0;
  uint64_t span_ns = 0, busy_ns = 0, contended_ns = 0;
  std::optional<double> mean_inside;               // while at least one thread is inside
  std::vector<uint64_t> time_at_ns;                // [k]: time with exactly k threads inside
  std::optional<double> serialization_index;  // docs/analysis.md, exact over the trace
  uint64_t si_calls = 0;                        // calls that met another thread inside
  uint64_t alone_calls = 0, contended_calls = 0;  // by the threads inside at their start
  double overhead_ns = 0;
  uint64_t untimed_calls = 0;  // calls without a duration, left out of the above (--sample N > 1)
};

struct ShapeReport {
  std::string file, program;
  std::string class_table, class_table_source;
  bool trace = false;        // false: the profile holds no trace; everything below is empty
  bool complete = false;     // ProcessEnd present: blocks live at the end were leaked at exit
  uint64_t calls = 0;
  uint64_t timed_calls = 0;  // with a duration: all of them unless recorded with --sample N > 1
  uint32_t threads = 0;
  uint64_t missing_records = 0, repeated_records = 0, reordered_steps = 0;

  uint64_t blocks = 0, frees = 0, same_thread_frees = 0, cross_thread_frees = 0, resized = 0;
  uint64_t unmatched_frees = 0, unmatched_reallocs = 0, null_frees = 0, failed = 0, reused_live = 0;
  uint64_t leaked_blocks = 0;
  ByteCount leaked_bytes = 0;
  uint64_t peak_live_bytes = 0, peak_live_at_ns = 0, end_live_bytes = 0;

  // Times: the cost model's estimate apportioned over the shapes (apply_estimate); before
  // that, the traced calls' own times (estimated per operation when not all were timed).
  bool estimated = false;      // apply_estimate() ran: the times add up to allocator_time_ns
  double allocator_time_ns = 0;   // the report's allocator time (estimated only)
  double outside_shapes_ns = 0;   // of it, calls in no shape (free(NULL), failed or unmatched calls, …)
  std::vector<ShapeRow> shapes;            // by time, most first
  std::vector<ShapeRow> bucket_shapes;     // the same by size bucket (for comparisons)
  std::vector<ShapeGroupRow> groups;       // shapes merged across adjacent classes, by time
  std::vector<ClassLifetimeRow> classes;   // non-empty classes in size order
  ChainSummary realloc;
  uint64_t slot_ns = 0;
  std::vector<TimelinePoint> timeline;
  ConcurrencySummary concurrency;
};

ShapeReport shape_report(const Profile& profile, const TraceAnalysis& analysis);
// Replaces the shapes' times by their parts of the cost model's estimate of the same profile
// (apportion.h), so that they add up to the report's allocator time; regroups the merged shapes.
// Without an estimate (no thread left counts) the traced times stay.
struct CostReport;
void apply_estimate(ShapeReport& shapes, const CostReport& estimate);
// Loads and analyzes `path` (report.trace is false when it holds no trace), its times those of the
// cost model's estimate.  Throws ProfileError.
ShapeReport analyze_shapes(const std::filesystem::path& path, const TraceOptions& options = {});

struct ShapeGapRow {
  uint32_t cls = 0;          // in the base profile's table
  uint64_t lo = 0, hi = 0;   // the size range (a class of the base profile's table)
  uint64_t min_size = 0, max_size = 0;  // requests seen in either profile
  LifetimeBand band = LifetimeBand::Under1us;
  bool cross_thread = false;
  uint64_t base_calls = 0, other_calls = 0;
  uint64_t base_ns = 0, other_ns = 0;
  double delta_ns = 0;       // other - base
  double share = 0;          // delta / the total gap (signed; the shares add up to 1)
};

// The same merged across adjacent classes (shape_groups.h).
struct ShapeGapGroup {
  ShapeGroupKey key;
  uint64_t lo = 0, hi = 0;   // smallest and largest request seen in either profile
  uint32_t classes = 0;
  uint64_t base_calls = 0, other_calls = 0;
  uint64_t base_ns = 0, other_ns = 0;
  double delta_ns = 0;
  double share = 0;
};

struct ShapeGap {
  uint64_t base_ns = 0, other_ns = 0;  // time in all shapes and in calls of no shape: each run's total
  double base_outside_ns = 0, other_outside_ns = 0;  // of it, calls of no shape
  double gap_ns = 0;                   // other - base
  std::vector<ShapeGapRow> rows;       // by |delta|, largest first; zero rows left out
  std::vector<ShapeGapGroup> groups;   // likewise
};

// Time of `other` minus time of `base`, shape by shape (each regrouped from size buckets into
// the base profile's classes, so that profiles of different allocators compare).
ShapeGap attribute_gap(const ShapeReport& base, const ShapeReport& other, const ClassTable& table);
}  // namespace allocscope
