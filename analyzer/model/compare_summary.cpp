// compare_summary.cpp — from the runs of `allocscope compare` to its table: medians, Δ wall, and
// the attribution of each row's median run (report and diff), as compare.h describes.
#include <algorithm>
#include <cmath>
#include <exception>

#include "model/compare.h"
#include "model/cost_model.h"
#include "model/diff.h"

namespace allocscope {

namespace {

constexpr size_t kTopClasses = 3;
constexpr double kUncertain = 0.5;  // an error bound above half the estimate (as report's verdict)

// The runs the row's statistics are taken over: those that exited 0, or all when none did.
std::vector<const CompareRun*> counted_runs(const CompareRow& row) {
  std::vector<const CompareRun*> ok, all;
  for (const auto& run : row.runs) {
    all.push_back(&run);
    if (run.status == 0) ok.push_back(&run);
  }
  return ok.empty() ? all : ok;
}

// The counted run with a profile whose wall time is nearest the median (the first of equals).
std::optional<size_t> pick_median_run(const CompareRow& row, const std::vector<const CompareRun*>& counted) {
  std::optional<size_t> best;
  double best_distance = 0;
  for (const CompareRun* run : counted) {
    if (!run->profile) continue;
    const double distance = std::fabs(run->wall_ns - row.wall_ns);
    if (!best || distance < best_distance) {
      best = static_cast<size_t>(run - row.runs.data());
      best_distance = distance;
    }
  }
  return best;
}

void measure(CompareRow& row) {
  const auto counted = counted_runs(row);
  std::vector<double> walls, rss;
  for (const CompareRun* run : counted) {
    walls.push_back(run->wall_ns);
    rss.push_back(static_cast<double>(run->maxrss_kb));
  }
  row.wall_ns = median(walls).value_or(0);
  if (!walls.empty()) row.wall_spread_ns = *std::max_element(walls.begin(), walls.end()) - *std::min_element(walls.begin(), walls.end());
  row.maxrss_kb = median(rss).value_or(0);
  row.ok_runs = static_cast<unsigned>(std::count_if(row.runs.begin(), row.runs.end(),
                                                    [](const CompareRun& run) { return run.status == 0; }));
  row.median_run = pick_median_run(row, counted);
}

const std::filesystem::path* median_profile(const CompareRow& row) {
  return row.median_run ? &*row.runs[*row.median_run].profile : nullptr;
}

void analyze(CompareRow& row) {
  const auto* profile = median_profile(row);
  if (!profile) {
    row.analysis_gap = AnalysisGap::NoProfile;
    return;
  }
  try {
    const CostReport report = analyze_profile(*profile);
    row.allocator_seen = report.allocator;
    row.calls = report.calls;
    row.timed_calls = report.timed;
    row.sparse_calls = report.sparse_calls;
    if (report.timed == 0) {
      row.analysis_gap = AnalysisGap::NoneTimed;
      return;
    }
    row.allocator_share = report.allocator_share;
    row.wait_share = report.contention.wait_share;
    if (report.allocator_time_ns > 0) row.slow_share = report.split.slow_ns / report.allocator_time_ns;
    row.contention = report.contention.verdict;
    if (report.locks.recorded) {
      row.lock_share = report.locks.time_share;
      if (!report.locks.locks.empty()) row.top_lock = report.locks.locks.front().name();
    }
    if (report.thread_time_ns > 0) row.allocator_error_share = report.allocator_error_ns / report.thread_time_ns;
    row.allocator_unsure = report.allocator_unsure;
    std::vector<const ClassRow*> classes;
    for (const auto& c : report.classes) {
      if (c.time_ns > 0) classes.push_back(&c);
    }
    std::stable_sort(classes.begin(), classes.end(),
                     [](const ClassRow* a, const ClassRow* b) { return a->time_ns > b->time_ns; });
    for (size_t i = 0; i < classes.size() && i < kTopClasses; ++i) {
      row.top_classes.push_back({classes[i]->label, classes[i]->time_ns, classes[i]->time_share});
    }
  } catch (const std::exception& error) {
    row.analysis_gap = AnalysisGap::Failed;
    row.analysis_failure = error.what();
  }
}

void attribute_gap(CompareRow& row, const CompareRow& baseline) {
  const auto* base_profile = median_profile(baseline);
  const auto* profile = median_profile(row);
  if (!base_profile) {
    row.coverage_gap = CoverageGap::BaselineNoProfile;
    return;
  }
  if (!profile) {
    row.coverage_gap = CoverageGap::NoProfile;
    return;
  }
  // Without timed calls on both sides, the allocator's part of the gap is unknown, not zero.
  if (baseline.analysis_gap != AnalysisGap::None) {
    row.coverage_gap = CoverageGap::BaselineNoAttribution;
    return;
  }
  if (row.analysis_gap != AnalysisGap::None) {
    row.coverage_gap = CoverageGap::NoAttribution;
    return;
  }
  try {
    const DiffReport diff = diff_profiles(*base_profile, *profile);
    row.coverage = diff.coverage;
    row.wall_coverage = diff.wall_coverage;
    row.explained = diff.explained;
    row.cpu_explained = diff.cpu_explained;
    if (diff.cpu_explained) row.cpu_explained_error = diff.cpu_explained_error;
    row.cpu_too_few_samples = diff.cpu_too_few_samples;
    if (diff.base.thread_time_ns > 0) row.thread_gap_share = diff.measured_delta_ns / diff.base.thread_time_ns;
    if (!row.coverage) {
      row.coverage_gap = CoverageGap::SameThreadTime;
    } else if (gap_within_spread(row, baseline)) {
      // A share of a gap the runs make among themselves is a share of noise (−546 % and 150 %
      // were printed so for threaded PHP at 1 and 2 workers, docs/results.md).
      row.coverage.reset();
      row.wall_coverage.reset();
      row.explained.reset();
      row.cpu_explained.reset();
      row.cpu_explained_error.reset();
      row.cpu_too_few_samples = false;
      row.coverage_gap = CoverageGap::WithinSpread;
    } else if (!diff.claims_share()) {
      // No share of the gap where diff claims none (one verdict, every view).
      row.coverage.reset();
      row.wall_coverage.reset();
      row.explained.reset();
      row.coverage_gap = diff.verdict == DiffVerdict::OffCpu    ? CoverageGap::OffCpu
                         : diff.verdict == DiffVerdict::Exceeds ? CoverageGap::Exceeds
                                                                : CoverageGap::Unsure;
    }
  } catch (const std::exception& error) {
    row.coverage_gap = CoverageGap::Failed;
    row.coverage_failure = error.what();
  }
}

}  // namespace

bool gap_within_spread(const CompareRow& row, const CompareRow& baseline) {
  const auto counted = [](const CompareRow& r) { return counted_runs(r).size(); };
  if (counted(row) < 2 || counted(baseline) < 2) return false;
  return std::fabs(row.wall_ns - baseline.wall_ns) <= std::max(row.wall_spread_ns, baseline.wall_spread_ns);
}

bool share_unsure(const CompareRow& row) {
  return row.allocator_share && row.allocator_error_share &&
         (row.allocator_unsure || *row.allocator_error_share > kUncertain * *row.allocator_share);
}

std::optional<double> median(std::vector<double> values) {
  if (values.empty()) return std::nullopt;
  std::sort(values.begin(), values.end());
  const size_t mid = values.size() / 2;
  return values.size() % 2 ? values[mid] : (values[mid - 1] + values[mid]) / 2;
}

void summarize_rows(CompareResult& result) {
  for (auto& row : result.rows) measure(row);
  if (result.rows.empty()) return;
  const CompareRow& baseline = result.rows.front();
  for (auto& row : result.rows) {
    row.delta_pct = (&row == &baseline || baseline.wall_ns <= 0) ? 0 : 100 * (row.wall_ns / baseline.wall_ns - 1);
    analyze(row);
  }
  result.rows.front().coverage_gap = CoverageGap::Baseline;
  for (size_t i = 1; i < result.rows.size(); ++i) attribute_gap(result.rows[i], baseline);
  for (const auto& row : result.rows) {
    for (const auto& run : row.runs) {
      if (run.status != 0 && result.exit_status == 0) result.exit_status = run.status;
    }
  }
}

}  // namespace allocscope
