// compare.h — the table of `allocscope compare` (run/compare.h runs it): per row its runs, their
// medians and the attribution of its median run.
#pragma once
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "model/contention_verdict.h"

namespace allocscope {

// Median of the values (the mean of the middle two for an even count); nullopt when empty.
std::optional<double> median(std::vector<double> values);

struct CompareRowSpec {
  std::string name;
  bool variant = false;
  std::optional<std::filesystem::path> allocator;  // preloaded library; none: the program's own malloc
  std::filesystem::path program;                   // what is executed
  std::vector<std::string> argv;                   // argv[0] as the user wrote it
};

struct CompareRun {
  unsigned round = 0;
  double wall_ns = 0;
  long maxrss_kb = 0;
  int status = 0;
  std::optional<std::filesystem::path> profile;  // when the run wrote one
  std::string last_output;                       // a failed run's last line of output
};

struct ClassCost {
  std::string label;
  double time_ns = 0;
  double share = 0;  // of the allocator time
};

// Why a row has no attribution (allocator_share).
enum class AnalysisGap : uint8_t {
  None,
  NoProfile,  // no run wrote a profile
  NoneTimed,  // none of the median run's calls was timed (a run too short for the sampling)
  Failed,     // the analysis failed: analysis_failure
};

// Why a row has no coverage.
enum class CoverageGap : uint8_t {
  None,
  Baseline,               // the baseline row itself
  BaselineNoProfile,      // the baseline has no profile
  NoProfile,              // no run of this row wrote a profile
  BaselineNoAttribution,  // the baseline has no attribution
  NoAttribution,          // this row has no attribution
  SameThreadTime,         // the two median runs take the same thread time within 2 %: no gap
  WithinSpread,           // the median walls differ by no more than either row's runs do among themselves
  Exceeds,                // diff: the allocator's change exceeds the whole gap by more than its bound
  OffCpu,                 // most of the gap is time off the CPU outside calls (diff: DiffVerdict::OffCpu)
  Unsure,                 // the allocator's part is unsure (diff: attributed_unsure): no share is claimed
  Failed,                 // the diff failed: coverage_failure
};

struct CompareRow {
  CompareRowSpec spec;
  std::vector<CompareRun> runs;
  unsigned ok_runs = 0;                    // runs that exited 0
  double wall_ns = 0;                      // median
  double wall_spread_ns = 0;               // max - min of the counted runs' walls (0 with one run)
  double maxrss_kb = 0;                    // median
  double delta_pct = 0;                    // median wall against the baseline's
  std::optional<size_t> median_run;        // index in runs of the run analyzed
  std::string allocator_seen;              // what the profile says provided malloc
  std::optional<double> allocator_share;   // of thread time
  std::optional<double> wait_share;        // of the allocator time
  std::optional<double> slow_share;        // of the allocator time: slow but running
  std::optional<ContentionVerdict> contention;  // of the median run (contention_verdict.h)
  std::optional<double> allocator_error_share;  // the ± bound of allocator_share
  bool allocator_unsure = false;           // the report's allocator time is unsure (bound > half of it)
  uint64_t calls = 0, timed_calls = 0;     // of the median run
  bool sparse_calls = false;               // … none timed for too few calls, not too short a run (CostReport)
  std::vector<ClassCost> top_classes;      // costliest first, at most 3
  AnalysisGap analysis_gap = AnalysisGap::None;  // why allocator_share is missing
  std::string analysis_failure;            // the error of a failed analysis
  std::optional<double> coverage;          // diff against the baseline: thread time
  std::optional<double> wall_coverage;     // … wall time
  std::optional<double> thread_gap_share;  // measured thread-time gap over the baseline's thread time
  CoverageGap coverage_gap = CoverageGap::None;  // why coverage is missing
  std::string coverage_failure;            // the error of a failed diff
  // With --locks (lock_report.h, diff.h): the program's own contended lock waits over thread time,
  // the lock with the most wait, and the part of the gap that the allocator and those locks explain.
  std::optional<double> lock_share;
  std::string top_lock;
  std::optional<double> explained;
  // … and the part of the CPU-time gap inside allocator and lock calls (diff.h cpu_explained).
  std::optional<double> cpu_explained;
  std::optional<double> cpu_explained_error;  // ± its bound (diff.h cpu_explained_error)
  bool cpu_too_few_samples = false;  // a CPU-time gap the samples are too few to split (diff.h)
};

struct SkippedAllocator {
  std::string name;
  std::string reason;
};

struct CompareResult {
  std::vector<std::string> command;
  unsigned runs_per_row = 0;
  std::optional<uint32_t> sample_every;    // as given; none: the shim's default
  bool locks = false;                      // --locks: every row recorded the program's lock waits
  std::vector<CompareRow> rows;            // the baseline first
  std::vector<SkippedAllocator> skipped;
  std::optional<std::filesystem::path> output_dir;  // kept: the profiles are there
  int exit_status = 0;
};

// Whether the row's median wall differs from the baseline's by no more than the spread of either
// row's own runs (two runs or more each): a gap the runs themselves make, whose shares mean nothing.
bool gap_within_spread(const CompareRow& row, const CompareRow& baseline);

// The statistics of every row (medians, Δ wall) from its runs, then the analysis of the median
// runs (report and diff); the exit status is the first failed run's.
void summarize_rows(CompareResult& result);

// The row's allocator share is unsure: the report says so, or its bound exceeds half of it.
bool share_unsure(const CompareRow& row);

}  // namespace allocscope
