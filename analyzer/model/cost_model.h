// cost_model.h — where an allocator's time goes: the model behind `allocscope report`.
//
// analyze_profile() reads a profile twice, streaming its events both times (memory does not grow
// with the file):
//   pass 1  loads the profile (process, calibration, thread snapshots), puts the timed calls of all
//           threads back on one time line window by window (window_sweep.h) and learns from them:
//           the probe overhead, each (operation, size bucket)'s uncontended cost (from calls that
//           started while no other thread was inside), the off-CPU evidence of rusage-sampled
//           calls, and the exact sizes of timed calls (to split buckets into size classes);
//   pass 2  splits every timed call into fast / slow-but-running / waiting, finds how many other
//           threads were inside at its start, and sums per (thread, operation, size class);
//           it also gathers what the plots draw: each class's latency histogram and the timeline
//           of threads inside the allocator and of each busy thread's calls and waits (timeline.h).
// Per-thread, per-class and process totals are then scaled from timed calls to all calls.  The
// definitions are those of docs/analysis.md; every duration in the result is in nanoseconds;
// estimated times have the probe overhead taken out, latencies are as measured.
#pragma once
#include <array>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "allocscope/format.h"
#include "allocscope/ops.h"
#include "model/contention_verdict.h"
#include "model/cpu_parts.h"
#include "model/lock_report.h"
#include "profile/stats.h"
#include "model/timeline.h"

namespace allocscope {

class ClassTable;

// How `report` breaks the time down.  Shape (a trace's shapes) and Callsite (call sites per class)
// come from the trace and the stacks, not from the cost model (report.h).
enum class ReportGrouping { Class, Bucket, Thread, Shape, Callsite };

struct CostOptions {
  ReportGrouping by = ReportGrouping::Class;  // all but Bucket use the allocator's class table
};

struct TimeSplit {
  double fast_ns = 0;  // the calls' uncontended cost
  double slow_ns = 0;  // on-CPU time beyond it: contention (spinning, lock hand-over), faults, preemption
  double wait_ns = 0;  // blocked off-CPU (a voluntary context switch inside the call)
  double total() const { return fast_ns + slow_ns + wait_ns; }
  void add(const TimeSplit& other) {
    fast_ns += other.fast_ns;
    slow_ns += other.slow_ns;
    wait_ns += other.wait_ns;
  }
};

// A figure is *unsure* when its ± bound exceeds half its value (docs/analysis.md, "Error bounds").
inline bool is_unsure(double value, double error) { return error > 0.5 * std::fabs(value); }

struct LatencySummary {  // of timed calls, as measured (the probe included)
  double p50_ns = 0, p90_ns = 0, p99_ns = 0, p999_ns = 0, max_ns = 0;
};

// One bin of a latency histogram: timed calls whose measured duration (the probe included) was in
// [lo_ns, hi_ns).  Bins are a quarter of a power of two of nanoseconds wide; the first one, from 0,
// holds every call under 1 ns (a call measured at 0 ticks on a coarse clock).
struct LatencyBin {
  double lo_ns = 0, hi_ns = 0;
  uint64_t calls = 0;
};

struct ClassRow {
  uint64_t lo = 0, hi = 0;       // request sizes of the class (size_known only)
  std::string label;
  bool size_known = true;        // false: frees whose size was not taken and could not be apportioned
  uint64_t calls = 0;            // all operations, unknown-size frees apportioned
  ByteCount bytes = 0;           // bytes requested by allocating calls (free and malloc_usable_size excluded)
  uint64_t timed = 0;
  double call_share = 0;
  std::optional<LatencySummary> latency;  // from this class's timed-call events
  std::vector<LatencyBin> histogram;      // the same events, non-empty bins in order
  double time_ns = 0;            // estimated time inside the allocator
  double error_ns = 0;           // ± bound (2 standard errors of the sampling, over timing windows)
  bool unsure = false;           // is_unsure(time_ns, error_ns)
  double time_share = 0;         // of the allocator time
  TimeSplit split;
  std::array<uint64_t, kOpSlots> calls_by_op{};
  std::array<double, kOpSlots> time_by_op{};
};

struct ThreadRow {
  uint32_t serial = 0, tid = 0;
  format::ThreadState state = format::ThreadState::Running;
  double lifetime_ns = 0;        // first observed moment to the last snapshot (exit): active_ticks()
  uint64_t calls = 0, timed = 0;
  bool busy = false;             // busy_thread() below: the threads a verdict counts and a diff measures
  double time_ns = 0, error_ns = 0;
  bool unsure = false;           // is_unsure(time_ns, error_ns)
  double share = 0;              // of the thread's lifetime
  TimeSplit split;
  bool capped = false;           // the estimate exceeded the lifetime and was scaled down to it
  uint64_t classified = 0;       // timed calls whose concurrency is known
  uint64_t contended = 0;        // … that started with another thread inside
  format::Rusage rusage{};       // kRusageUnavailable fields when unknown
};

struct InsideRow {
  uint32_t inside = 0;           // threads inside at the call's start, the caller included
  uint64_t calls = 0;            // timed calls
  double mean_ns = 0, p50_ns = 0, p99_ns = 0;
  std::optional<double> vs_alone;  // mean over the mean of calls made alone
};

struct Contention {
  double wait_share = 0;                       // waiting / allocator time
  std::optional<double> serialization_index;   // null: too few calls met another thread inside
  uint64_t si_calls = 0;                       // calls inside together with another thread
  uint64_t si_excluded_windows = 0;            // left out: a call in them was descheduled
  double contended_time_share = 0;             // of the time with >= 1 inside, the time with >= 2
  uint64_t classified = 0, contended = 0;      // timed calls placed on the time line; … started with others inside
  double contended_share = 0;
  std::optional<double> occupancy;             // mean threads inside while at least one is
  uint32_t max_inside = 0;
  uint32_t busy_threads = 0;                   // busy_thread() below
  std::vector<InsideRow> by_inside;
  ContentionVerdict verdict;                   // contention_verdict.h: the evidence and what it shows
};

struct ModelNotes {
  double probe_overhead_ns = 0;      // taken from every timed duration
  double window_trim_ns = 0;
  double block_threshold_ns = 0;     // shortest call that can hold a blocking wait
  uint64_t events = 0, events_dropped = 0, late_events = 0;
  uint64_t rusage_samples = 0, rusage_blocked = 0;
  uint32_t evidence_bins = 0;        // latency bins whose waiting share came from rusage samples
  double fallback_blocked_calls = 0; // calls taken as blocked from the threads' switch counts
  uint64_t windows = 0;
  uint32_t capped_threads = 0;
  // Blocks made (successful allocating calls, each realloc one), releases (free, delete, delete[])
  // and blocks not given back: what the releases' classes rest on (release_classes.h).
  uint64_t blocks_made = 0, blocks_released = 0, unreleased_blocks = 0;
  bool truncated = false;            // the profile is cut short: its last chunks are missing
  std::vector<std::string> shim_notes;  // what the shim said about calls it could not see, one line each
};

// The model's estimate for one (size class of the allocator's own table, operation): the one
// place allocator time comes from.  The allocator's table is class_table_of() of the profile
// (trace_analysis.h) whatever `--by` says; report --by bucket, shapes, call sites, the exports
// and diff apportion these cells (apportion.h), so that every view adds up to the same total.
constexpr uint32_t kEstimateNoClass = ~uint32_t{0};  // frees of no known size (kNoClass)
struct EstimateCell {
  uint32_t cls = 0;              // index in the allocator's table, or kEstimateNoClass
  uint8_t op = 0;
  uint64_t calls = 0, timed = 0;
  double time_ns = 0;            // after the lifetime cap
  TimeSplit split;
};

struct ErrorNotes {
  uint64_t windows = 0;          // timing windows the timed calls fell in (the sampling units)
  uint64_t clusters = 0;         // … grouped into this many clusters (neighbouring windows merged)
  double sampled_fraction = 0;   // timed calls / calls
  // ± bounds of the waiting and fast shares of allocator time (fractions), the same way; null
  // when they cannot be bounded (too few windows).
  std::optional<double> wait_share_bound, fast_share_bound;
};

// Which of the report's verdicts applies (render/report_verdict.h words it).
enum class VerdictKind {
  NoCalls,       // no allocator calls were recorded
  NotSampling,   // recorded with --sample 0: nothing timed
  NoneTimed,     // sampling, but no call fell in a timing window
  NoCallTimed,   // calls, none timed, with sampling on: too short a run
  SharesUnsure,  // fast, slow and waiting are within their bounds of each other
  Waiting,       // waiting has the largest share of allocator time
  Slow,          // slow but running has
  Fast,          // the fast path has
};

struct Verdict {
  VerdictKind kind = VerdictKind::NoCalls;
  // Mean duration of the calls that met another thread inside over that of the calls made alone
  // (with enough contended calls).
  std::optional<double> slowdown;
};

struct CostReport {
  std::string file;
  std::string program;               // exe path
  std::vector<std::string> args;
  uint32_t pid = 0;
  std::string libc, libc_version, allocator;
  std::string class_table, class_table_source;
  ReportGrouping by = ReportGrouping::Class;
  bool complete = false;
  bool trace = false;                // the profile holds a trace (record --trace)
  // The threads' rusage counts from when the shim began to observe them (format.h
  // kModeRusageSinceObserved); false: from the threads' own start (profiles written before).
  bool rusage_since_observed = false;
  std::optional<double> wall_ns;
  uint32_t threads = 0;
  uint64_t calls = 0, timed = 0;
  uint32_t sample_every = 0;
  // The run spanned so many sampling periods (one timing window each) that, when no call was
  // timed, its calls were too few for the windows, not the run too short (sparse_calls below).
  bool sparse_calls = false;
  double thread_time_ns = 0;         // sum of the threads' lifetimes
  double allocator_time_ns = 0;
  double allocator_error_ns = 0;
  bool allocator_unsure = false;     // is_unsure(allocator_time_ns, allocator_error_ns)
  double allocator_share = 0;        // of thread time
  std::string estimate_table;        // name of the table `cells` refer to
  std::vector<EstimateCell> cells;   // the estimate per (class, op) that every view apportions
  ErrorNotes error;
  TimeSplit split;
  Contention contention;
  std::vector<ClassRow> classes;     // non-empty classes in size order, then unknown sizes
  std::vector<ThreadRow> threads_rows;
  Timeline timeline;
  ModelNotes model;
  Verdict verdict;
  LockReport locks;                  // the program's own lock waits (record --locks): lock_report.h
  CpuParts cpu;                      // where the threads' CPU time went (record --locks): cpu_parts.h
};

// How long a thread's calls took, roughly: in each of its cells (operation and size bucket), the
// calls times the mean of the timed ones (a cell with none timed, the thread's mean) — before the
// cost model's estimate, which needs the busy threads first.
double thread_call_ticks(const ThreadProfile& t);
// The whole process's calls and thread_call_ticks, and how many threads made calls.
struct BusyScale {
  uint64_t calls = 0;
  double call_ticks = 0;
  size_t calling_threads = 0;
};
BusyScale busy_scale(const std::vector<ThreadProfile>& threads);
// A busy thread: one that made at least 1 % of the process's calls, or at least half as many as
// the mean of the threads that made calls (with more than 50 threads alike, each makes less than
// 2 % of them) — or whose calls took as large a share of the time all calls took
// (thread_call_ticks), and a tenth of its own lifetime or more: a thread that asks for a few large
// blocks at a time may spend its life inside the allocator with a thousandth of the calls.  A
// thread that only waits for its workers is not busy.  The one definition of the threads a
// verdict counts and a diff measures its gap over.
bool busy_thread(const ThreadProfile& t, const BusyScale& all);

// Reads and analyzes one profile file; throws ProfileError.
CostReport analyze_profile(const std::filesystem::path& path, const CostOptions& options = {});

const char* grouping_name(ReportGrouping by);  // "class", "bucket", "thread", "shape", "callsite"

}  // namespace allocscope
