#include "export/export.h"
#include "commands/cli.h"
#include "commands/commands.h"

#include <fmt/format.h>

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <algorithm>
#include <optional>
#include <vector>

#include "model/cost_model.h"
#include "profile/peek.h"
#include <stdexcept>

namespace allocscope {

namespace {

constexpr std::string_view kUsage =
    "usage: allocscope export FILE --format folded|pprof|chrome -o OUT [--force]\n"
    "                         [--weight time|calls] [--unscaled] [--no-lines]\n"
    "                         [--from T] [--to T] [--threads TID,...]\n"
    "\n"
    "Writes a profile's calls for other tools:\n"
    "  folded   folded stacks, outermost frame first (flamegraph.pl, speedscope, inferno):\n"
    "           flamegraph.pl --countname ns OUT > flame.svg  (--countname calls with --weight calls)\n"
    "  pprof    gzipped profile.proto (go tool pprof, speedscope)\n"
    "  chrome   Chrome trace-event JSON: a track per thread, a counter of threads inside the\n"
    "           allocator (Perfetto UI, chrome://tracing)\n"
    "\n"
    "  -o, --output OUT   where to write ('-' for standard output)\n"
    "  --force            overwrite OUT if it exists (without it, an existing OUT is an error)\n"
    "  --weight W         folded and pprof: weigh stacks by allocator time (default) or calls\n"
    "  --unscaled         folded: weigh each stack by the calls that carry it alone (by default\n"
    "                     a sampled stack stands for the calls it represents: docs/shapes.md)\n"
    "  --no-lines         do not run addr2line (symbols only)\n"
    "  --from T, --to T   chrome: the calls that start in [T, T'): seconds from the process start\n"
    "                     (1.5, 1.5s, 250ms, 40us, 100ns) or ticks of the profile's clock (123456t)\n"
    "  --threads LIST     chrome: only these threads (comma-separated thread ids, as `dump` shows)\n"
    "  -h, --help         this help\n";

// Parses "1.5", "1.5s", "250ms", "40us", "100ns" (from the process start) or "123456t" (a tick).
// Throws UsageError naming `option`.
TimeBound parse_time_bound(std::string_view option, const std::string& text) {
  auto bad = [&] {
    return UsageError(fmt::format("export: {} takes seconds from the process start (1.5, 1.5s, 250ms, 40us, "
                                  "100ns) or a tick of the profile's clock (123456t), not '{}'",
                                  option, text));
  };
  if (text.empty()) throw bad();
  TimeBound b;
  if (text.back() == 't') {
    const std::string digits = text.substr(0, text.size() - 1);
    if (digits.empty() || digits.find_first_not_of("0123456789") != std::string::npos) throw bad();
    errno = 0;
    b.tick = std::strtoull(digits.c_str(), nullptr, 10);
    if (errno != 0) throw bad();
    return b;
  }
  static constexpr std::pair<std::string_view, double> kUnits[] = {{"ns", 1e-9}, {"us", 1e-6}, {"ms", 1e-3}, {"s", 1}};
  double scale = 1;
  std::string number = text;
  for (const auto& [suffix, factor] : kUnits) {
    if (text.size() > suffix.size() && text.ends_with(suffix)) {
      number = text.substr(0, text.size() - suffix.size());
      scale = factor;
      break;
    }
  }
  char* end = nullptr;
  const double value = std::strtod(number.c_str(), &end);
  if (number.empty() || *end != '\0' || !std::isfinite(value) || value < 0 || number[0] == '+' || number[0] == '-') {
    throw bad();
  }
  b.seconds = value * scale;
  return b;
}

ExportWeight parse_weight(const std::string& w) {
  if (w == "time") return ExportWeight::Time;
  if (w == "calls") return ExportWeight::Calls;
  throw UsageError(fmt::format("export: --weight is time or calls, not '{}'", w));
}

// --threads LIST: comma-separated thread ids.
std::vector<uint64_t> parse_threads(const std::string& list) {
  std::vector<uint64_t> threads;
  size_t start = 0;
  while (start <= list.size()) {
    const size_t comma = std::min(list.find(',', start), list.size());
    const std::string item = list.substr(start, comma - start);
    if (item.empty() || item.find_first_not_of("0123456789") != std::string::npos || item.size() > 18) {
      throw UsageError(fmt::format("export: --threads takes comma-separated thread ids, not '{}'", list));
    }
    threads.push_back(std::stoull(item));
    start = comma + 1;
  }
  return threads;
}

}  // namespace

int export_command(CommandArgs args) {
  std::string format, output;
  ExportOptions options;
  bool force = false, unscaled = false;
  const auto files =
      OptionParser("export")
          .value("--format", [&](const std::string& v) { format = v; })
          .value("--output", "-o", [&](const std::string& v) { output = v; })
          .value("--weight", [&](const std::string& v) { options.weight = parse_weight(v); })
          .flag("--force", force)
          .value("--from", [&](const std::string& v) { options.from = parse_time_bound("--from", v); })
          .value("--to", [&](const std::string& v) { options.to = parse_time_bound("--to", v); })
          .value("--threads", [&](const std::string& v) {
            for (const uint64_t tid : parse_threads(v)) options.threads.push_back(tid);
          })
          .flag("--unscaled", unscaled)
          .flag("--no-lines", [&] { options.source_lines = false; })
          .parse(args);
  if (!files) {
    fmt::print("{}", kUsage);
    return 0;
  }
  if (files->size() > 1) throw UsageError("export: one FILE only");
  const std::string file = files->empty() ? "" : files->front();
  if (file.empty()) throw UsageError("export: missing FILE");
  if (format.empty()) throw UsageError("export: missing --format folded|pprof|chrome");
  if (format != "folded" && format != "pprof" && format != "chrome") {
    throw UsageError(fmt::format("export: unknown format '{}' (folded, pprof or chrome)", format));
  }
  if (output.empty()) throw UsageError("export: missing -o OUT");
  if (format != "chrome" && (options.from || options.to || !options.threads.empty())) {
    throw UsageError("export: --from, --to and --threads go with --format chrome");
  }
  if (unscaled && format != "folded") throw UsageError("export: --unscaled goes with --format folded");

  refuse_overwrite(output, force);  // before the analysis

  const auto nothing_to_export = [&file] {
    return std::runtime_error(fmt::format(
        "{}: nothing to export: the profile holds no trace and no timed calls (record it with --trace, or "
        "without --sample 0)",
        file));
  };
  std::string data;
  std::optional<Profile> profile;
  if (format == "chrome") {
    profile = load_profile(file);
    if (profile->trace_chunks.empty() && profile->events_read == 0) throw nothing_to_export();
    if (!options.threads.empty()) {
      std::string known;
      bool any = false;
      for (const ThreadProfile& t : profile->threads) {
        known += (known.empty() ? "" : ",") + std::to_string(t.tid);
        any = any || std::find(options.threads.begin(), options.threads.end(), t.tid) != options.threads.end();
      }
      if (!any) throw std::runtime_error(fmt::format("{}: no thread of --threads in the profile (its threads: {})", file, known));
    }
  } else {
    // Folded: the calls that carry a stack are a sample, gathered in the same pass.
    const auto cal = read_calibration(file);
    std::optional<StackSample> sample;
    if (format == "folded" && !unscaled && cal && (cal->mode_flags & format::kModeStacks)) {
      sample.emplace(cal->stack_slow_ticks);
    }
    std::vector<TraceVisitor*> extra;
    EventSink on_events;
    if (sample) {
      extra.push_back(&*sample);
      on_events = [&sample](const format::EventsHeader& h, std::span<const format::Event> e) { sample->events(h, e); };
    }
    // Times are the cost model's estimate, apportioned over the stacks (trace_analysis.h).
    StackCostSource src = load_stack_costs(file, extra, on_events);
    apply_estimate(src, analyze_profile(file));
    if (src.costs.empty()) throw nothing_to_export();
    data = format == "folded" ? export_folded(src, options, sample ? &*sample : nullptr) : export_pprof(src, options);
    if (format == "folded") {
      const FoldedWeights w = folded_weights(src, options, sample ? &*sample : nullptr);
      if (w.sampled_calls == 0) {
        fmt::print(stderr, "allocscope: export: none of the {} calls carries a stack: every line is [no stack] "
                   "(record with --stacks)\n", w.calls);
      } else {
        fmt::print(stderr, "allocscope: export: {} of {} calls carry a stack; {}: {:.0f} % of the weight is under "
                   "stacks\n", w.sampled_calls, w.calls,
                   sample ? "each stands for the calls it represents (--unscaled: for itself alone)"
                          : "each weighs the calls that carry it",
                   w.total ? 100.0 * static_cast<double>(w.under_stacks) / static_cast<double>(w.total) : 0.0);
      }
    }
  }

  std::unique_ptr<std::FILE, OutputFileCloser> out(open_output_file(output, force));
  try {
    if (format == "chrome") {
      if (export_chrome(*profile, out.get(), options) == 0) {
        throw std::runtime_error(fmt::format("{}: nothing to export: no call of the chosen threads starts in the "
                                             "chosen time range", file));
      }
    } else {
      std::fwrite(data.data(), 1, data.size(), out.get());
    }
    if (std::fflush(out.get()) != 0 || std::ferror(out.get())) {
      throw std::runtime_error(fmt::format("cannot write {}: {}", output, std::strerror(errno)));
    }
  } catch (...) {
    if (output != "-") {  // no half-written export is left behind
      out.reset();
      std::error_code ec;
      std::filesystem::remove(output, ec);
    }
    throw;
  }
  return 0;
}

}  // namespace allocscope
