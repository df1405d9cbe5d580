// compare.cpp — `allocscope compare`: the rows, the interleaved runs, the output (compare.h).
#include "run/compare.h"

#include <fmt/format.h>
#include <signal.h>
#include <stdlib.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <fstream>
#include <set>
#include <stdexcept>

#include "run/allocator_lookup.h"
#include "util/progress_bar.h"
#include "run/record.h"
#include "util/units.h"
#include "util/usage_error.h"

namespace allocscope {

namespace fs = std::filesystem;

namespace {

// A directory for the profiles: the one given (created, must be empty), or a fresh one under
// $TMPDIR that is removed when this object goes away unless it is kept.
class OutputDirectory {
 public:
  OutputDirectory(const std::optional<fs::path>& given, bool keep) : keep_(keep || given) {
    if (given) {
      std::error_code ec;
      fs::create_directories(*given, ec);
      if (ec) throw std::runtime_error(fmt::format("cannot create {}: {}", given->string(), ec.message()));
      if (!fs::is_directory(*given)) throw std::runtime_error(fmt::format("{} is not a directory", given->string()));
      if (!fs::is_empty(*given)) {
        throw std::runtime_error(fmt::format("{} is not empty; compare writes to an empty directory", given->string()));
      }
      path_ = fs::absolute(*given).lexically_normal();
      return;
    }
    std::string pattern = (fs::temp_directory_path() / "allocscope-compare-XXXXXX").string();
    if (!mkdtemp(pattern.data())) {
      throw std::runtime_error(fmt::format("cannot create a directory like {}: {}", pattern, std::strerror(errno)));
    }
    path_ = pattern;
  }
  ~OutputDirectory() {
    if (keep_) return;
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  OutputDirectory(const OutputDirectory&) = delete;
  OutputDirectory& operator=(const OutputDirectory&) = delete;

  const fs::path& path() const { return path_; }
  bool kept() const { return keep_; }

 private:
  fs::path path_;
  bool keep_;
};

// The rows to run: the allocators that are installed, then the variants.
std::vector<CompareRowSpec> plan_rows(const CompareOptions& options, std::vector<SkippedAllocator>& skipped) {
  std::vector<CompareRowSpec> rows;
  const fs::path program = observable_program(options.command.front());
  for (const auto& name : options.allocators) {
    CompareRowSpec row;
    row.name = name.find('/') == std::string::npos ? name : fs::path(name).filename().string();
    row.program = program;
    row.argv = options.command;
    try {
      row.allocator = find_allocator(name).library;
    } catch (const UnknownAllocatorName& error) {
      throw UsageError(fmt::format("compare: {}", error.what()));
    } catch (const AllocatorLookupError& error) {
      skipped.push_back({row.name, error.what()});
      continue;
    }
    rows.push_back(std::move(row));
  }
  for (const auto& variant : options.variants) {
    CompareRowSpec row;
    row.name = variant.name;
    row.variant = true;
    row.program = observable_program(variant.program);
    row.argv = options.command;
    row.argv.front() = variant.program;
    rows.push_back(std::move(row));
  }
  std::set<std::string> names;
  for (const auto& row : rows) {
    if (!names.insert(row.name).second) throw UsageError(fmt::format("compare: row '{}' appears twice", row.name));
  }
  return rows;
}

// The row's name made safe for a file name.
std::string file_stem(const std::string& name) {
  std::string stem = name;
  for (char& c : stem) {
    if (!is_row_name_char(c)) c = '_';
  }
  return stem;
}

// The last line the run printed (without trailing blanks), for notes about a failed run.
std::string status_text(int status) {
  if (status > 128 && status < 128 + 65) {
    return fmt::format("killed by signal {} ({})", status - 128, strsignal(status - 128));
  }
  return fmt::format("exit {}", status);
}

CompareRun run_once(const CompareRowSpec& row, unsigned round, const std::optional<uint32_t>& sample_every,
                    bool locks, const fs::path& dir) {
  const std::string stem = fmt::format("{}.{}", file_stem(row.name), round + 1);
  RecordOptions record;
  record.output = dir / (stem + ".asp");
  if (row.allocator) record.allocator = row.allocator->string();
  record.program = row.program;
  record.sample_every = sample_every;
  record.locks = locks;
  record.command = row.argv;
  record.command_output = dir / (stem + ".log");
  const RecordedRun recorded = record_program(record);
  if (recorded.child.exec_errno != 0) {
    throw std::runtime_error(
        fmt::format("cannot execute {}: {}", row.argv.front(), std::strerror(recorded.child.exec_errno)));
  }
  CompareRun run;
  run.round = round;
  run.wall_ns = recorded.child.wall_ns;
  run.maxrss_kb = recorded.child.usage.ru_maxrss;
  run.status = recorded.child.status;
  if (recorded.profile_written) run.profile = recorded.profile;
  if (run.status != 0) run.last_output = last_output_line(*record.command_output);
  return run;
}

// SIGINT, SIGTERM and SIGHUP between two runs: remembered, so that the comparison stops after the
// run (run_child forwards them to the workload while it runs) and the output directory is removed.
volatile sig_atomic_t g_stop_signal = 0;

void remember_signal(int signal) { g_stop_signal = signal; }

class StopSignals {
 public:
  StopSignals() {
    g_stop_signal = 0;
    for (size_t i = 0; i < kSignals.size(); ++i) {
      sigaction(kSignals[i], nullptr, &saved_[i]);
      if (saved_[i].sa_handler == SIG_IGN) continue;
      struct sigaction action {};
      action.sa_handler = remember_signal;
      sigemptyset(&action.sa_mask);
      sigaction(kSignals[i], &action, nullptr);
    }
  }
  ~StopSignals() {
    for (size_t i = 0; i < kSignals.size(); ++i) sigaction(kSignals[i], &saved_[i], nullptr);
  }
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;

 private:
  static constexpr std::array<int, 3> kSignals = {SIGINT, SIGTERM, SIGHUP};
  std::array<struct sigaction, 3> saved_{};
};

// The comparison was stopped by a signal: compare exits with 128 + it.
struct Stopped {
  int signal;
};

// Every row once per round, each round starting one row further.  Stops after a run killed by a
// stop signal (^C reaches the workload; run_child forwards the others) or when one arrived between
// two runs.
void run_rounds(CompareResult& result, const std::vector<CompareRowSpec>& specs, unsigned runs,
                const std::optional<uint32_t>& sample_every, bool locks, const fs::path& dir) {
  for (const auto& spec : specs) {
    CompareRow row;
    row.spec = spec;
    result.rows.push_back(std::move(row));
  }
  ProgressBar progress(specs.size() * runs);
  for (unsigned round = 0; round < runs; ++round) {
    for (const size_t index : round_order(specs.size(), round)) {
      CompareRow& row = result.rows[index];
      if (g_stop_signal != 0) throw Stopped{g_stop_signal};
      progress.begin_step(fmt::format("{} (run {}/{})", row.spec.name, round + 1, runs));
      CompareRun run = run_once(row.spec, round, sample_every, locks, dir);
      progress.end_step(fmt::format("{} run {}/{}: {:.3f} s, max RSS {}, {}", row.spec.name, round + 1, runs,
                                    run.wall_ns / 1e9, format_bytes(static_cast<ByteCount>(run.maxrss_kb) * 1024),
                                    status_text(run.status)));
      for (const int signal : {SIGINT, SIGTERM, SIGHUP}) {  // ^C reached the workload, or run_child passed it on
        if (run.status == 128 + signal && g_stop_signal == 0) g_stop_signal = signal;
      }
      row.runs.push_back(std::move(run));
      if (g_stop_signal != 0) throw Stopped{g_stop_signal};
    }
  }
}

}  // namespace

bool is_row_name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
         c == '+' || c == '-';
}

std::vector<size_t> round_order(size_t rows, unsigned round) {
  std::vector<size_t> order;
  for (size_t k = 0; k < rows; ++k) order.push_back((round + k) % rows);
  return order;
}

int run_comparison(const CompareOptions& options, CompareResult& result) {
  result.command = options.command;
  result.runs_per_row = options.runs;
  result.sample_every = options.sample_every;
  result.locks = options.locks;

  const std::vector<CompareRowSpec> specs = plan_rows(options, result.skipped);
  for (const auto& skipped : result.skipped) {
    fmt::print(stderr, "allocscope: compare: skipping {}: {}\n", skipped.name, skipped.reason);
  }
  if (specs.empty()) throw std::runtime_error("compare: none of the allocators is installed; nothing to compare");

  StopSignals stop_signals;  // from here on, a stop signal ends the comparison with the directory removed
  OutputDirectory dir(options.output_dir, options.keep);
  try {
    run_rounds(result, specs, options.runs, options.sample_every, options.locks, dir.path());
  } catch (const Stopped& stopped) {
    size_t done = 0;
    for (const auto& row : result.rows) done += row.runs.size();
    fmt::print(stderr, "allocscope: compare: stopped by signal {} ({}) after {} of {} runs\n", stopped.signal,
               strsignal(stopped.signal), done, specs.size() * options.runs);
    return 128 + stopped.signal;  // the default directory goes with `dir`
  }
  if (dir.kept()) result.output_dir = dir.path();
  fmt::print(stderr, "allocscope: compare: analyzing the median runs\n");
  summarize_rows(result);
  if (g_stop_signal != 0) return 128 + g_stop_signal;  // while analyzing
  if (!dir.kept()) {
    for (auto& row : result.rows) {
      for (auto& run : row.runs) run.profile.reset();  // removed with the directory
    }
  }
  return 0;
}

}  // namespace allocscope
