// `allocscope compare`: its command line, the order of the runs, medians (analyzer/run/compare.h).
#include "commands/commands.h"
#include "render/compare.h"
#include "run/compare.h"

#include <gtest/gtest.h>

namespace allocscope {
namespace {

std::optional<CompareOptions> parse(std::vector<std::string> args) { return parse_compare_options(args); }

TEST(CompareOptions, DefaultsAndCommand) {
  const auto options = parse({"--", "prog", "-x", "--runs", "9"});
  ASSERT_TRUE(options);
  EXPECT_EQ(options->allocators, default_compare_allocators());
  EXPECT_EQ(options->allocators.front(), "glibc");
  EXPECT_EQ(options->runs, 3u);
  EXPECT_FALSE(options->sample_every);
  EXPECT_EQ(options->format, CompareFormat::Text);
  EXPECT_FALSE(options->output_dir);
  EXPECT_FALSE(options->keep);
  EXPECT_EQ(options->command, (std::vector<std::string>{"prog", "-x", "--runs", "9"}));
}

TEST(CompareOptions, AllOptions) {
  const auto options = parse({"--allocators", "glibc,/opt/lib/libx.so", "--runs=5", "--sample", "0",
                              "--variant", "musl=./h-musl",
                              "--variant=other=prog2", "--markdown", "-o", "out", "--keep", "prog", "2"});
  ASSERT_TRUE(options);
  EXPECT_EQ(options->allocators, (std::vector<std::string>{"glibc", "/opt/lib/libx.so"}));
  EXPECT_EQ(options->runs, 5u);
  EXPECT_EQ(options->sample_every, 0u);
  ASSERT_EQ(options->variants.size(), 2u);
  EXPECT_EQ(options->variants[0].name, "musl");
  EXPECT_EQ(options->variants[0].program, "./h-musl");
  EXPECT_EQ(options->variants[1].name, "other");
  EXPECT_EQ(options->variants[1].program, "prog2");
  EXPECT_EQ(options->format, CompareFormat::Markdown);
  EXPECT_EQ(options->output_dir, "out");
  EXPECT_TRUE(options->keep);
  EXPECT_EQ(options->command, (std::vector<std::string>{"prog", "2"}));
  EXPECT_EQ(parse({"--json", "prog"})->format, CompareFormat::Json);
}

TEST(CompareOptions, HelpReturnsNothing) { EXPECT_FALSE(parse({"--help"})); }

TEST(CompareOptions, RejectsBadCommandLines) {
  const std::vector<std::vector<std::string>> bad = {
      {},
      {"--runs", "3"},
      {"--runs", "0", "prog"},
      {"--runs", "-1", "prog"},
      {"--runs", "two", "prog"},
      {"--runs", "1001", "prog"},
      {"--runs"},
      {"--allocators", "", "prog"},
      {"--allocators", "glibc,,jemalloc", "prog"},
      {"--allocators", "glibc,", "prog"},
      {"--variant", "musl", "prog"},
      {"--variant", "=prog2", "prog"},
      {"--variant", "musl=", "prog"},
      {"--variant", "a b=prog2", "prog"},
      {"--variant", "a/b=prog2", "prog"},
      {"--json", "--markdown", "prog"},
      {"--bogus", "prog"},
      {"-o", "", "prog"},
      {"--sample", "-1", "prog"},
      {"--sample", "x", "prog"},
  };
  for (const auto& args : bad) {
    std::string joined;
    for (const auto& a : args) joined += "'" + a + "' ";
    EXPECT_THROW(parse(args), UsageError) << joined;
  }
}

TEST(CompareRounds, EveryRoundRunsEveryRowOnceStartingOneFurther) {
  EXPECT_EQ(round_order(3, 0), (std::vector<size_t>{0, 1, 2}));
  EXPECT_EQ(round_order(3, 1), (std::vector<size_t>{1, 2, 0}));
  EXPECT_EQ(round_order(3, 2), (std::vector<size_t>{2, 0, 1}));
  EXPECT_EQ(round_order(3, 3), (std::vector<size_t>{0, 1, 2}));
  EXPECT_EQ(round_order(1, 7), (std::vector<size_t>{0}));
  // Over rows rounds, every row runs once at every position.
  for (size_t rows = 1; rows <= 6; ++rows) {
    std::vector<std::vector<int>> seen(rows, std::vector<int>(rows, 0));
    for (unsigned round = 0; round < rows; ++round) {
      const auto order = round_order(rows, round);
      ASSERT_EQ(order.size(), rows);
      for (size_t position = 0; position < rows; ++position) seen[order[position]][position]++;
    }
    for (const auto& row : seen) {
      for (int count : row) EXPECT_EQ(count, 1);
    }
  }
}

TEST(CompareMedian, OddEvenAndEmpty) {
  EXPECT_FALSE(median({}));
  EXPECT_EQ(median({4}), 4);
  EXPECT_EQ(median({9, 1, 5}), 5);
  EXPECT_EQ(median({9, 1, 5, 3}), 4);
}

CompareRun run(unsigned round, double wall_s, long rss_kb, int status) {
  CompareRun r;
  r.round = round;
  r.wall_ns = wall_s * 1e9;
  r.maxrss_kb = rss_kb;
  r.status = status;
  if (status != 0) r.last_output = "boom";
  return r;
}

CompareRow row(const std::string& name, std::vector<CompareRun> runs) {
  CompareRow r;
  r.spec.name = name;
  r.runs = std::move(runs);
  return r;
}

TEST(CompareSummary, MediansOfTheRunsThatExitedZeroAndTheFirstFailureStatus) {
  CompareResult result;
  result.runs_per_row = 3;
  result.rows.push_back(row("base", {run(0, 3, 300, 0), run(1, 1, 100, 0), run(2, 2, 200, 0)}));
  result.rows.push_back(row("other", {run(0, 4, 400, 0), run(1, 10, 1000, 3), run(2, 4, 500, 0)}));
  result.rows.push_back(row("broken", {run(0, 1, 10, 5), run(1, 3, 30, 5), run(2, 2, 20, 7)}));
  summarize_rows(result);
  const auto& base = result.rows[0];
  const auto& other = result.rows[1];
  const auto& broken = result.rows[2];
  EXPECT_DOUBLE_EQ(base.wall_ns, 2e9);
  EXPECT_DOUBLE_EQ(base.maxrss_kb, 200);
  EXPECT_EQ(base.delta_pct, 0);
  EXPECT_EQ(base.ok_runs, 3u);
  EXPECT_DOUBLE_EQ(other.wall_ns, 4e9);  // the failed 10 s run is left out
  EXPECT_DOUBLE_EQ(other.maxrss_kb, 450);
  EXPECT_DOUBLE_EQ(other.delta_pct, 100);
  EXPECT_EQ(other.ok_runs, 2u);
  EXPECT_DOUBLE_EQ(broken.wall_ns, 2e9);  // no run exited 0: all of them count
  EXPECT_EQ(broken.ok_runs, 0u);
  EXPECT_EQ(result.exit_status, 3);
  // No profiles: no attribution, and each row says why.
  EXPECT_FALSE(base.allocator_share);
  EXPECT_EQ(compare_analysis_error(base), "no run wrote a profile");
  EXPECT_FALSE(other.coverage);
  EXPECT_EQ(compare_coverage_reason(other), "the baseline has no profile");
  std::string notes;
  for (const auto& note : compare_run_notes(result)) notes += note + "\n";
  EXPECT_NE(notes.find("other: the workload exited with status 3 in 1 of 3 runs"), std::string::npos) << notes;
  EXPECT_NE(notes.find("broken: the workload exited with status 5, 7 in 3 of 3 runs"), std::string::npos) << notes;
  EXPECT_NE(notes.find("boom"), std::string::npos) << notes;
  EXPECT_EQ(notes.find("base: the workload"), std::string::npos) << notes;
}

TEST(CompareSummary, AGapNoWiderThanTheRunsOwnSpreadIsNoGap) {
  CompareResult result;
  result.rows.push_back(row("base", {run(0, 1.0, 1, 0), run(1, 1.3, 1, 0), run(2, 1.1, 1, 0)}));     // spread 0.3 s
  result.rows.push_back(row("near", {run(0, 1.3, 1, 0), run(1, 1.35, 1, 0), run(2, 1.4, 1, 0)}));   // +0.25 s
  result.rows.push_back(row("far", {run(0, 2.0, 1, 0), run(1, 2.1, 1, 0), run(2, 2.05, 1, 0)}));    // +0.95 s
  result.rows.push_back(row("once", {run(0, 1.2, 1, 0), run(1, 9, 1, 4), run(2, 9, 1, 4)}));        // one run counted
  summarize_rows(result);
  const CompareRow& base = result.rows[0];
  EXPECT_NEAR(base.wall_spread_ns, 0.3e9, 1);
  EXPECT_NEAR(result.rows[1].wall_spread_ns, 0.1e9, 1);
  EXPECT_TRUE(gap_within_spread(result.rows[1], base));
  EXPECT_FALSE(gap_within_spread(result.rows[2], base));
  EXPECT_FALSE(gap_within_spread(result.rows[3], base));  // a single run has no spread to judge by
  CompareRow spread = result.rows[1];
  spread.coverage_gap = CoverageGap::WithinSpread;
  EXPECT_NE(compare_coverage_reason(spread).find("no more than the runs of one row differ"), std::string::npos);
}

}  // namespace
}  // namespace allocscope
