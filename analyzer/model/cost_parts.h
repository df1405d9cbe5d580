// cost_parts.h — the pieces of the cost model (cost_model.h) that its files share: what pass 1
// learns, what pass 2 sums, the estimate's cells and its error bounds.  Private to model/.
//
//   cost_pass1.cpp   pass 1 and the model's parameters learned from it (probe overhead,
//                    uncontended costs, waiting shares)
//   cost_model.cpp   pass 2, the contention measures, and analyze_profile() that runs them all
//   cost_cells.cpp   the estimate per thread and (class, op) cell
//   cost_errors.cpp  its error bounds over the timing windows
//   cost_rows.cpp    the report's rows: threads, display classes, estimate cells and totals
//   cost_notes.cpp   what the report notes about the data, and its verdict
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <span>
#include <vector>

#include "allocscope/format.h"
#include "allocscope/ops.h"
#include "model/class_tables.h"
#include "model/completion_coincidence.h"
#include "model/cost_constants.h"
#include "model/contention_verdict.h"
#include "model/cost_model.h"
#include "model/release_classes.h"
#include "model/peer_waits.h"
#include "model/sleep_pairs.h"
#include "model/timeline.h"
#include "model/window_clusters.h"
#include "model/window_sweep.h"
#include "profile/profile.h"
#include "profile/stats.h"
#include "profile/thread_profile.h"
#include "util/fine_histogram.h"

namespace allocscope::cost {

constexpr unsigned kBucketSlots = 256;        // size buckets and kBucketUnknown
constexpr unsigned kInsideRows = 64;          // by_inside rows; more threads inside are folded into the last
constexpr uint64_t kMinTimedForBound = 5;     // timed calls a cell needs before its spread bounds anything

inline size_t cell_index(unsigned op, unsigned bucket) { return op * kBucketSlots + bucket; }

// ---- pass 1 and the model's parameters (cost_pass1.cpp) ----

struct EvidenceBin {
  uint64_t samples = 0;   // rusage-sampled calls in this latency bin
  uint64_t blocked = 0;   // … with a voluntary context switch
  double ticks = 0;       // their durations
  double wait_ticks = 0;  // their off-CPU time, blocked calls only
};

struct Pass1 {
  std::vector<FineHistogram> alone = std::vector<FineHistogram>(kOpSlots * kBucketSlots);
  std::vector<FineHistogram> all = std::vector<FineHistogram>(kOpSlots * kBucketSlots);
  FineHistogram raw;
  std::array<EvidenceBin, kLatencyBins> evidence{};
  EventSizes sizes;
  uint64_t event_chunks = 0;
  SweepTotals sweep;
};

struct Model {
  double overhead = 0;                      // ticks taken from every duration
  std::vector<double> baseline;             // per cell_index: uncontended cost, corrected ticks
  std::vector<uint8_t> baseline_alone;      // 1: from calls made alone
  std::array<double, kLatencyBins> wait_share{};    // < 0: no evidence for that bin
  std::array<double, kLatencyBins> blocked_share{};
  double block_threshold = 0;               // corrected ticks
  double ticks_per_us = 1000;
};

// A raw duration less the probe overhead, never below 0.
inline double shifted(uint64_t raw, double overhead) {
  const double d = static_cast<double>(raw) - overhead;
  return d > 0 ? d : 0;
}

// Reads the profile; its timed calls, window by window, fill `p1`.
Profile pass1(const std::filesystem::path& path, const SweepConfig& sweep_config, double ticks_per_us0,
              double block_ticks0, Pass1& p1);
Model learn(const Pass1& p1, const Profile& profile, const std::optional<format::Calibration>& cal);

// What a blocking wait costs at least, in ticks: a FUTEX_WAIT, the wake-up and two context
// switches (the probe costs of the calibration; 1 µs without one).
double block_threshold_ticks(const std::optional<format::Calibration>& cal, double ticks_per_us);

// The wait of a call whose context switches are known, in ticks (null: not known).  One that did
// not sleep (no voluntary switch) waited 0.  One of the rusage probe's that slept waited its
// off-CPU time; a slow one whose switches the shim read (kEvSwitches, no CPU time) waited beyond
// its uncontended cost `base` and the cost of blocking itself `block`.
std::optional<double> known_wait(const format::Event& e, double duration, double base, double ticks_per_us,
                                 double block);
// A slow call whose context switches are known: one the shim read them for (kEvSwitches), or one
// of the rusage probe's that lasted kSwitchSlowNs or longer.
bool switches_known_slow(const format::Event& e, uint64_t slow_ticks);
// Per thread and latency bin: the share of calls without rusage evidence taken as blocked.  A
// thread can't have blocked more often than its voluntary context switches; those are given to
// its longest calls first (a blocking wait is a sleep until a wake-up), down to the threshold.
std::vector<double> fallback_blocked(const ThreadProfile& t, const Model& m, double& blocked_calls);

// ---- pass 2 (cost_model.cpp) ----

struct RowAcc {
  uint64_t n = 0;
  double d = 0, wait = 0, base = 0;  // corrected ticks
  void add(const RowAcc& o) {
    n += o.n;
    d += o.d;
    wait += o.wait;
    base += o.base;
  }
};

struct ThreadAcc {
  std::vector<RowAcc> rows;  // [class * kOpSlots + op]
  uint64_t classified = 0, contended = 0;
  RowAcc& row(size_t cls, unsigned op) {
    const size_t i = cls * kOpSlots + op;
    if (i >= rows.size()) rows.resize(i + 1);
    return rows[i];
  }
};

struct Pass2 {
  std::vector<ThreadAcc> threads;
  WindowClusters clusters;              // by (class, op) of the allocator's table
  std::vector<FineHistogram> by_class;  // corrected ticks
  std::array<FineHistogram, kInsideRows> by_inside;
  double si_progress = 0;      // raw ticks of progress made while 2+ threads were inside
  double si_time = 0;          // raw ticks with 2+ threads inside (windows counted for the index)
  uint64_t si_calls = 0;       // calls that were inside with another thread at some point
  uint64_t si_excluded_windows = 0;  // contended windows left out: a call in them was descheduled
  uint64_t contended = 0, classified = 0;
  ExclusionTally exclusion;    // timed durations by class, met or alone at their start
  uint64_t rusage_samples = 0, rusage_blocked = 0, rusage_preempted = 0;
  uint64_t slow_switched = 0, slow_slept = 0, slow_preempted = 0;  // slow calls with known switches
  uint64_t slow_alone_switched = 0, slow_alone_slept = 0;  // … of them made alone (nobody else inside)
  uint64_t slow_allocating_switched = 0, slow_allocating_slept = 0;  // … of them allocating calls
  SleepPairsMeasure sleep_pairs;  // whom the calls that slept waited behind (sleep_pairs.h)
  PeerWaitTally peers;            // where calls asleep inside waited (peer_waits.h)
  SweepTotals sweep;
};

// ---- the estimate (cost_cells.cpp) ----

struct ClassKeyOp {
  uint32_t cls;
  unsigned op;
  auto operator<=>(const ClassKeyOp&) const = default;
};

struct ThreadCell {
  Counters counters;
  std::map<uint16_t, uint64_t> latency;
};

// Shares of a call's time: fast path, slow but running, waiting.
struct Fractions {
  double fast = 1, slow = 0, wait = 0;
};

struct PooledCell {
  Counters counters;
  std::map<uint16_t, uint64_t> latency;
  RowAcc acc;
  double mean = 0;  // corrected ticks per call
  double var = 0;   // of a call's duration
  double se2 = 0;   // of the mean
  Fractions fractions;
};

struct ThreadEst {
  double time = 0, err2 = 0;
  Fractions fractions;
};

// Mean and variance of corrected durations from a latency histogram (bin middles).
struct Moments {
  double n = 0, mean = 0, var = 0;
};
Moments histogram_moments(const std::map<uint16_t, uint64_t>& latency, uint64_t max_ticks, double overhead);

// From the corrected sums of a set of timed calls: waiting as measured; fast is the calls'
// uncontended cost, up to what they spent running; slow is the rest of the running time.
Fractions fractions_of(const RowAcc& acc);
Fractions blend(const Fractions& own, const Fractions& pooled, double w);
// Variance of the mean of `timed` calls drawn from `calls` (finite population: 0 when all timed).
double sampling_variance(double var, uint64_t timed, uint64_t calls);

using ThreadCells = std::vector<std::map<ClassKeyOp, ThreadCell>>;     // per thread
using PooledCells = std::map<ClassKeyOp, PooledCell>;
using ThreadEstimates = std::vector<std::map<ClassKeyOp, ThreadEst>>;  // per thread

// Each thread's (class, op) cells.  Releases (free, delete, delete[]) count in the classes of
// the blocks they give back (release_classes.h); only in a profile without any allocating call
// are frees whose size was not taken apportioned to the classes of the thread's timed frees
// (else the process's), in proportion.
ThreadCells thread_class_cells(const Profile& profile, const ClassTable& table, const EventSizes& sizes,
                               ReleaseTotals& release_totals);
// Pooled cells: the process-wide estimate of each (class, op), from every thread's cells and its
// timed calls (p2).
PooledCells pooled_cells(const ThreadCells& cells, const Pass2& p2, const Model& model);
// Per thread: its own mean where its sample says more than the spread between threads, else the
// process's (shrinkage); then every cell is scaled so that the threads add up to the process.
ThreadEstimates thread_estimates(const ThreadCells& cells, const PooledCells& cells_all, const Pass2& p2,
                                 const Model& model);

// ---- the report's rows (cost_rows.cpp) ----

// The classes the estimate is made on (the allocator's own, whatever the grouping, so that every
// view of a profile rests on one estimate), and those the report shows: `--by bucket` shows the
// estimate apportioned to allocscope's buckets.
struct ClassGrid {
  ClassGrid(const ClassTable& estimate, const ClassTable& display)
      : table(&estimate), disp_table(&display), regrid(&display != &estimate), classes(estimate.classes()),
        disp_classes(display.classes()), class_of(estimate), disp_class_of(display) {}
  const ClassTable* table;
  const ClassTable* disp_table;
  bool regrid;
  std::span<const SizeClass> classes, disp_classes;
  ClassLookup class_of, disp_class_of;
};
ClassGrid class_grid(const Profile& profile, ReportGrouping by);

// The report's process fields: program, allocator, table, grouping, clock span.
CostReport describe_profile(const Profile& profile, const ClassGrid& grid, ReportGrouping by);

// The estimate of every call, from the passes: the thread rows, the display class rows, the
// estimate cells, the totals and their error bounds in `r`; each thread's cells and the releases'
// totals in `release_totals`.  Threads whose estimate was capped to their lifetime are counted in
// `notes`.
void estimate_calls(CostReport& r, ModelNotes& notes, ReleaseTotals& release_totals, const Profile& profile,
                    const ClassGrid& grid, const Pass1& p1, const Pass2& p2, const Model& model);

// ---- error bounds (cost_errors.cpp) ----

// Error bounds over the timing windows (docs/analysis.md, "Error bounds"), before the lifetime
// cap: of the total, of each class and cell, and of the waiting and fast shares.
struct ShareBounds {
  double wait = 0, fast = 0;
  bool known = false;
};

struct WindowErrors {
  double sampled = 1;      // timed calls / calls
  size_t n_clusters = 0;   // timing windows, or clusters of them
  std::map<uint32_t, size_t> cell_clusters;  // cell -> clusters holding timed calls of it
  double total_err2 = 0;
  ShareBounds share_bounds;
  std::vector<double> class_err2;  // per class slot
  std::map<ClassKeyOp, double> cell_err2;
};

WindowErrors window_errors(const Pass2& p2, const PooledCells& cells_all, size_t n_class_slots);
// The bounds of `we` scaled down as the lifetime cap scaled the estimate (uncapped_ticks: before
// it), and the bounds of the cells whose timed calls bound nothing added.
void bound_cells(WindowErrors& we, const std::map<ClassKeyOp, EstimateCell>& est_cells, double uncapped_ticks,
                 const PooledCells& cells_all);

// ---- notes and verdict (cost_notes.cpp) ----

// What the report says about the model and the data: its constants, what was read, and what the
// shim noted.
void note_model(ModelNotes& notes, const Profile& profile, const Pass1& p1, const Pass2& p2,
                const Model& model, const ReleaseTotals& release_totals, const SweepConfig& sweep_config);
Verdict make_verdict(const CostReport& r);

}  // namespace allocscope::cost
