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

#include "model/cost_model.h"
#include "model/shapes.h"

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

// One thread of a run: its rusage against its time inside allocator calls.
struct ThreadSide {
  uint32_t serial = 0;
  uint64_t calls = 0;
  double lifetime_ns = 0, allocator_time_ns = 0;
  double cpu_ns = 0, system_ns = 0;      // rusage (user + system, system)
  double outside_cpu_ns = 0;             // cpu_ns - (allocator time - waiting), within its time outside calls
  uint64_t minor_faults = 0;
  double faults_in_calls = 0;            // its timed calls' faults scaled to its calls (faults_in_calls.h)
  double faults_outside = 0;
};

struct RunSide {
  std::string file, program, libc, allocator;
  std::vector<std::string> args;         // the program's argv
  std::optional<double> wall_ns;
  double thread_time_ns = 0;             // lifetimes of the busy threads (cost_model.h busy_thread)
  double allocator_time_ns = 0, allocator_error_ns = 0;
  TimeSplit split;
  uint64_t calls = 0;
  uint64_t minor_faults = 0;             // all threads (rusage)
  double system_ns = 0;                  // all threads' system time (rusage)
  double cpu_ns = 0;                     // CPU time (user + system) of the busy threads
  double outside_cpu_ns = 0;             // … outside allocator calls: cpu_ns - (allocator time - waiting)
  double outside_off_cpu_ns = 0;         // time outside calls off the CPU (preempted or blocked)
  uint64_t voluntary_switches = 0, involuntary_switches = 0;  // the same threads' (rusage)
  double faults_in_calls = 0;            // estimated from the timed calls (faults_in_calls.h; at most minor_faults)
  double faults_in_calls_bound = 0;      // ± its bound (faults_in_calls.h)
  double faults_outside = 0;             // minor_faults less faults_in_calls
  double fault_ns = 0;                   // calibrated cost of one minor fault
  double outside_fault_ns = 0;           // faults_outside x fault_ns
  double outside_fault_error_ns = 0;     // ± faults_in_calls_bound x fault_ns
  std::vector<ThreadSide> threads;
  ContentionVerdict contention;          // the side's contention verdict (contention_verdict.h)
  double wait_share = 0;
  // The program's own locks (record --locks; lock_report.h), over the same threads as
  // thread_time_ns: contended mutex and rwlock waits, and condition waits.
  bool locks_recorded = false;
  double lock_wait_ns = 0, cond_wait_ns = 0;
  double lock_time_ns = 0;               // lock wait + unlock (estimated): the locks' cost
  CpuParts cpu;                          // where the threads' CPU time went (cpu_parts.h), if sampled
  std::string top_lock;                  // the lock with the most lock time, by call site ("" if none)
  double top_lock_wait_ns = 0;
};

// Whether the two runs did the same work, judged by their allocator calls (docs/analysis.md,
// "Runs that did different work").
struct WorkComparison {
  uint64_t calls_base = 0, calls_other = 0;
  double ratio = 1;            // calls_other / calls_base
  bool per_call = false;       // the calls differ by more than kWorkTolerance: BASE is scaled by `ratio`
};                             // (a run of no calls: nothing compares per call, and no coverage)

// What the diff's verdict can claim: no gap to share (or no coverage), an unsure difference (no
// part is named), or the largest part of the allocator's change in the gap's direction.
// NoGap: the runs take the same thread time (or there is nothing to compare); OffCpu: most of the
// gap is time off the CPU outside allocator calls (the machine's doing as much as the allocator's):
// no share of it is claimed; Unsure: the allocator's part is unsure; Part: a share is claimed.
// Exceeds: the allocator's change exceeds the whole gap by more than its bound (the runs differ
// outside the allocator too: the program's own code got faster, or other work slowed one run).
enum class DiffVerdict : uint8_t { NoGap, OffCpu, Unsure, Exceeds, Part };

// Which of the two profiles was not recorded with --trace (shapes need both).
enum class MissingTrace : uint8_t { None, Both, Base, Other };

struct DiffReport {
  RunSide base, other;
  WorkComparison work;
  std::vector<DiffRow> rows;             // size order, then unknown sizes
  std::array<double, kOpSlots> delta_by_op{};
  double calls_delta_ns = 0;             // allocator time inside calls, OTHER - BASE (thread time)
  double calls_error_ns = 0;             // ± (2 standard errors, both runs)
  double faults_delta_ns = 0;            // page faults outside calls, OTHER - BASE (charged to the allocator)
  double faults_error_ns = 0;            // ± its bound
  bool faults_delta_held = false;        // taken as 0: against the sign of the runs' faults, within its bound
  double unattributed_ns = 0;            // measured - attributed: outside allocator calls, not attributed
  double unattributed_on_cpu_ns = 0;     // … of it, on the CPU (the program's code: cache, TLB, kernel work)
  double unattributed_off_cpu_ns = 0;    // … off the CPU outside calls (preempted by other work, or blocked)
  double cpu_delta_ns = 0;               // CPU time (user + system) of the same threads, OTHER - BASE
  double system_delta_ns = 0;            // … of it, system time
  // Either run had more calling threads than CPUs: its own threads queue for the CPUs, so a thread
  // is preempted while others run, and a second of CPU time more keeps the others waiting too.
  bool threads_queue = false;
  uint32_t cpus = 0, busy_threads = 0;   // of the run with more calling threads per CPU
  TimeSplit split_delta;
  double measured_delta_ns = 0;          // thread time, OTHER - BASE
  double attributed_delta_ns = 0;        // calls + faults
  double attributed_error_ns = 0;        // ± its bound: the calls' and the faults' bounds combined
  bool attributed_unsure = false;        // the calls' bound exceeds half their difference
  std::optional<double> coverage;        // attributed / measured (thread time)
  // With both sides recorded with --locks, the rest of the gap: the program's own locks (their
  // lock time: contended waits and unlocks), its condition waits (idle by design), and what
  // none of these explains.
  bool locks = false;
  double locks_delta_ns = 0, cond_delta_ns = 0;
  double rest_delta_ns = 0;              // measured - attributed - locks - cond
  std::optional<double> locks_share;     // locks_delta / measured
  std::optional<double> explained;       // (attributed + locks_delta) / measured
  // With both runs' CPU time sampled (cpu_parts.h): the sampled threads' CPU time, OTHER - BASE,
  // and the change inside allocator calls and inside the program's lock calls, with their bounds.
  // With more threads than CPUs, a second of CPU time more keeps the other threads queued too: the
  // share of the CPU-time gap is what each part's CPU costs the program (docs/analysis.md, "Where
  // the CPU time goes").  A share only where the CPU time differs by more than 2 % and more than
  // the parts' bound.
  bool cpu_parts = false;
  double cpu_sampled_delta_ns = 0;
  double cpu_allocator_delta_ns = 0, cpu_allocator_error_ns = 0;
  double cpu_locks_delta_ns = 0, cpu_locks_error_ns = 0;
  std::optional<double> cpu_explained;   // (allocator + locks) / sampled CPU gap
  double cpu_explained_error = 0;        // ± its bound, as a share of the gap
  bool cpu_too_few_samples = false;      // the CPU time differs by more than 2 %, but within the bound
  std::optional<double> wall_measured_delta_ns, wall_attributed_delta_ns, wall_coverage;
  DiffVerdict verdict = DiffVerdict::NoGap;  // Part: largest_part() names the allocator's change
  // Whether the verdict claims a share of the gap for the allocator: every view prints the
  // coverage as a claim only then.
  bool claims_share() const { return verdict == DiffVerdict::Part; }
  std::optional<ShapeGap> shape_gap;     // both profiles are traces
  MissingTrace missing_trace = MissingTrace::None;  // otherwise: which profile is no trace
};

// The largest component of the allocator's change in the direction of the gap (render/diff.h
// words it and names it).
enum class DiffPartKind { Waiting, Slow, Fast, Faults };
struct DiffPart {
  DiffPartKind kind;
  double ns;
};
DiffPart largest_part(const DiffReport& diff);
// The largest part beats the next by more than the attributed time's bound (calls and faults):
// otherwise which part is largest is not told (docs/analysis.md, "diff").
bool largest_part_clear(const DiffReport& diff);
// The runs take the same thread time within 2 % (per call, when they did different work).
bool same_thread_time(const DiffReport& diff);

DiffReport diff_profiles(const std::filesystem::path& base, const std::filesystem::path& other);
// The same from the two runs' reports, analyzed by bucket (the common grid); their files are read
// again for page-fault evidence.
DiffReport diff_reports(const CostReport& base, const CostReport& other);
}  // namespace allocscope
