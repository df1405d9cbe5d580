// diff.h — `allocscope diff BASE OTHER [--json]`: how much of the difference between two runs of
// the same workload the allocator explains, and where.
//
// Both profiles go through the cost model (cost_model.h) on the common grid of size buckets.  Per
// bucket and per operation, the time difference is split two ways: into *more calls* (the change
// in calls at BASE's mean cost) and *slower calls* (the rest), and into fast / slow-but-running /
// waiting.  Page faults outside allocator calls (minor faults of the threads, less those taken
// inside sampled calls, at the calibrated cost of a fault) are their own line, never folded in.
// Attributed and measured differences are compared in the same units: thread time (the sum of the
// lifetimes of the threads that allocate) against the allocator's thread time, and wall time against the allocator's
// share of it — so eight threads waiting at once are not counted eight times against the wall.
// coverage = attributed / measured.  Definitions: docs/analysis.md.
// When both profiles are traces (record --trace), the difference in allocator time is also split
// over shapes (shapes.h attribute_gap: size × lifetime × same/cross-thread); otherwise the report
// says once that shape attribution needs traces.
#pragma once
#include <array>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "cli.h"
#include "cost_model.h"
#include "shapes.h"

namespace allocscope {

struct DiffRow {
  uint64_t lo = 0, hi = 0;
  bool size_known = true;
  std::string label;
  uint64_t calls_base = 0, calls_other = 0;
  double time_base_ns = 0, time_other_ns = 0;
  double delta_ns = 0;
  double more_calls_ns = 0;   // (calls_other - calls_base) x BASE's mean
  double slower_calls_ns = 0; // delta - more_calls
  TimeSplit split_delta;      // fast / slow / wait, OTHER - BASE
  std::array<double, kOpSlots> delta_by_op{};
};

struct RunSide {
  std::string file, program, libc, allocator;
  std::optional<double> wall_ns;
  double thread_time_ns = 0;             // lifetimes of the threads with >= 1 % of the calls
  double allocator_time_ns = 0, allocator_error_ns = 0;
  TimeSplit split;
  uint64_t calls = 0;
  uint64_t minor_faults = 0;             // all threads (rusage)
  double faults_in_calls = 0;            // estimated from rusage-sampled calls
  double fault_ns = 0;                   // calibrated cost of one minor fault
  double outside_fault_ns = 0;           // faults outside calls x fault_ns
  ContentionVerdict contention;          // the side's contention verdict (contention_verdict.h)
  double wait_share = 0;
  // The program's own locks (record --locks; lock_report.h), over the same threads as
  // thread_time_ns: contended mutex and rwlock waits, and condition waits.
  bool locks_recorded = false;
  double lock_wait_ns = 0, cond_wait_ns = 0;
  double lock_time_ns = 0;               // lock wait + unlock (estimated): the locks' cost
  std::string top_lock;                  // the lock with the most wait, by call site ("" if none)
  double top_lock_wait_ns = 0;
};

struct DiffReport {
  RunSide base, other;
  std::vector<DiffRow> rows;             // size order, then unknown sizes
  std::array<double, kOpSlots> delta_by_op{};
  double calls_delta_ns = 0;             // allocator time inside calls, OTHER - BASE (thread time)
  double calls_error_ns = 0;             // ± (2 standard errors, both runs)
  double faults_delta_ns = 0;            // page faults outside calls, OTHER - BASE
  TimeSplit split_delta;
  double measured_delta_ns = 0;          // thread time, OTHER - BASE
  double attributed_delta_ns = 0;        // calls + faults
  std::optional<double> coverage;        // attributed / measured (thread time)
  // With both sides recorded with --locks, the rest of the gap: the program's own locks (their
  // lock time: contended waits and unlocks), its condition waits (idle by design), and what
  // none of these explains.
  bool locks = false;
  double locks_delta_ns = 0, cond_delta_ns = 0;
  double rest_delta_ns = 0;              // measured - attributed - locks - cond
  std::optional<double> locks_share;     // locks_delta / measured
  std::optional<double> explained;       // (attributed + locks_delta) / measured
  std::optional<double> wall_measured_delta_ns, wall_attributed_delta_ns, wall_coverage;
  std::string verdict;
  std::optional<ShapeGap> shape_gap;     // both profiles are traces
  std::string shape_note;                // otherwise: why there is no attribution to shapes
};

DiffReport diff_profiles(const std::filesystem::path& base, const std::filesystem::path& other);
// The same from the two runs' reports, analyzed by bucket (the common grid); their files are read
// again for page-fault evidence.
DiffReport diff_reports(const CostReport& base, const CostReport& other);
std::string diff_text(const DiffReport& diff);
std::string diff_json(const DiffReport& diff);

int diff_command(CommandArgs args);

}  // namespace allocscope
