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

#include "model/compare.h"

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

// Letters, digits, '.', '_', '+' and '-': the characters of a variant's name (others become '_'
// in file names).
bool is_row_name_char(char c);

// The order of the rows in round `round` (0-based): all rows, starting at row round mod rows.
std::vector<size_t> round_order(size_t rows, unsigned round);

// The comparison up to its table: plans the rows (saying on stderr which allocators are skipped),
// runs the rounds in a directory (options.output_dir, or one removed at the end unless kept) and
// analyzes the median runs (summarize_rows).  Returns 0, or 128 + N when signal N stopped it.
int run_comparison(const CompareOptions& options, CompareResult& result);

}  // namespace allocscope
