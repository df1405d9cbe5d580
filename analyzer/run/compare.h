// compare.h — `allocscope compare [--allocators LIST] [--runs N] [--variant NAME=PROGRAM …]
//              [--sample N] [--json | --markdown | --html OUT] [-o DIR] [--keep] -- CMD ARGS…`
//
// Runs one workload under several allocators — and, per variant, another build of it (PROGRAM with
// the same ARGS, under its own malloc) — N times each, and prints the table of the published
// allocator study with allocscope's attribution beside every row.
//
//   rows      one per allocator found (a missing one is skipped with a note), then one per variant;
//             the first row is the baseline
//   runs      interleaved: round r runs every row once, starting at row r mod rows, so that a
//             machine that slows down over time does not favour the rows that ran first
//   measures  per run, with the shim preloaded in every row (record_program): the wall time from
//             fork to wait and the child's peak resident set (wait4's rusage); per row, their
//             medians over the runs that exited 0 (over all runs when none did)
//   analysis  the row's median run through the cost model (report: the allocator's share of thread
//             time, its waiting share, the costliest size classes) and through diff against the
//             baseline's median run (coverage: the part of the thread-time gap that is the allocator)
//
// Profiles and the workload's output go to -o DIR, or to a fresh directory under $TMPDIR that is
// removed at the end unless --keep.  The exit status is 0 when every run exited 0, else the first
// non-zero status of a run (rows in order); 2 for a bad command line or a workload that cannot be
// started; 128 + N when signal N (SIGINT, SIGTERM, SIGHUP) stopped the comparison.
#pragma once
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "model/contention_verdict.h"

#include "commands/cli.h"

namespace allocscope {

enum class CompareFormat { Text, Json, Markdown, Html };

struct CompareVariant {
  std::string name;
  std::string program;
};

struct CompareOptions {
  std::vector<std::string> allocators;  // names or library paths; the baseline first
  unsigned runs = 3;
  std::optional<uint32_t> sample_every;  // --sample, as record's (every row the same)
  bool locks = false;                    // --locks: record's, and the other-lock columns
  std::vector<CompareVariant> variants;
  CompareFormat format = CompareFormat::Text;
  std::optional<std::filesystem::path> output_dir;  // -o
  bool keep = false;                                // keep the default directory
  std::vector<std::string> command;                 // CMD ARGS…
  std::filesystem::path html;                       // --html OUT: the page, instead of the text
  bool force = false;                               // --force: --html may overwrite OUT
};

// The allocators compared when --allocators is not given.
std::vector<std::string> default_compare_allocators();

// Parses the arguments after "compare"; nullopt for --help.  Throws UsageError.
std::optional<CompareOptions> parse_compare_options(CommandArgs args);

// Letters, digits, '.', '_', '+' and '-': the characters of a variant's name (others become '_'
// in file names).
bool is_row_name_char(char c);

// The order of the rows in round `round` (0-based): all rows, starting at row round mod rows.
std::vector<size_t> round_order(size_t rows, unsigned round);

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

struct CompareRow {
  CompareRowSpec spec;
  std::vector<CompareRun> runs;
  unsigned ok_runs = 0;                    // runs that exited 0
  double wall_ns = 0;                      // median
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
  uint64_t timed_calls = 0;                // of the median run
  std::vector<ClassCost> top_classes;      // costliest first, at most 3
  std::string analysis_error;              // why allocator_share is missing
  std::optional<double> coverage;          // diff against the baseline: thread time
  std::optional<double> wall_coverage;     // … wall time
  std::optional<double> thread_gap_share;  // measured thread-time gap over the baseline's thread time
  std::string coverage_reason;             // why coverage is missing
  // With --locks (lock_report.h, diff.h): the program's own contended lock waits over thread time,
  // the lock with the most wait, and the part of the gap that the allocator and those locks explain.
  std::optional<double> lock_share;
  std::string top_lock;
  std::optional<double> explained;
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
  std::vector<std::string> notes;          // failing runs and the like, one line each
  std::optional<std::filesystem::path> output_dir;  // kept: the profiles are there
  int exit_status = 0;
};

// The statistics of every row (medians, Δ wall) from its runs, then the analysis of the median
// runs (report and diff).  Adds notes for failed runs and analyses.
void summarize_rows(CompareResult& result);

std::string compare_text(const CompareResult& result);
std::string compare_markdown(const CompareResult& result);
std::string compare_json(const CompareResult& result);
// A self-contained page: the rows as bars of their wall time with the allocator's share, the table.
std::string compare_html(const CompareResult& result);

int compare_command(CommandArgs args);

}  // namespace allocscope
