#include "render/report.h"
#include "commands/cli.h"
#include "commands/commands.h"

#include <future>

#include <fmt/format.h>

#include <optional>
#include <vector>

#include "profile/peek.h"
#include "render/html_page.h"
#include "render/html_report.h"

namespace allocscope {

namespace {

constexpr std::string_view kUsage =
    "usage: allocscope report FILE... [--json | --html OUT.html [--force]]\n"
    "                         [--by class|bucket|thread|shape|callsite]\n"
    "\n"
    "Where the allocator's time goes: the estimated time inside the allocator and its share of\n"
    "the threads' time, split into fast path, slow-but-running and waiting; per size class; how\n"
    "much the threads serialize inside the allocator; and a short verdict.\n"
    "\n"
    "  --json          one JSON document per FILE (an array of them for several FILEs)\n"
    "  --html OUT      write a self-contained HTML page with plots to OUT instead (one FILE)\n"
    "  --force         overwrite OUT if it exists (without it, an existing OUT is an error)\n"
    "  --by class      break the time down by the allocator's size classes (the default; size\n"
    "                  buckets when the allocator is not known)\n"
    "  --by bucket     … by allocscope's log-linear size buckets\n"
    "  --by thread     … by thread\n"
    "  --by shape      … by shape: size × lifetime × same/cross-thread free (needs a profile\n"
    "                  recorded with --trace)\n"
    "  --by callsite   … by call site: the costliest per size class (needs --stacks)\n"
    "  -h, --help      this help\n"
    "\n"
    "The definitions are in docs/analysis.md and docs/shapes.md.\n";

struct ReportOptions {
  std::vector<std::string> files;
  bool json = false;
  std::string html;  // output path, or empty
  bool force = false;  // --html may overwrite
  ReportGrouping by = ReportGrouping::Class;
};

ReportGrouping parse_grouping(const std::string& value) {
  if (value == "class") return ReportGrouping::Class;
  if (value == "bucket") return ReportGrouping::Bucket;
  if (value == "thread") return ReportGrouping::Thread;
  if (value == "shape") return ReportGrouping::Shape;
  if (value == "callsite") return ReportGrouping::Callsite;
  throw UsageError(fmt::format("report: --by takes class, bucket, thread, shape or callsite, not '{}'", value));
}

std::optional<ReportOptions> parse(CommandArgs args) {
  ReportOptions options;
  const auto files = OptionParser("report")
                         .flag("--json", options.json)
                         .value("--html", [&](const std::string& v) { options.html = v; },
                                "report: --html needs an output file")
                         .flag("--force", options.force)
                         .value("--by", [&](const std::string& v) { options.by = parse_grouping(v); },
                                "report: --by needs a value (class, bucket, thread, shape or callsite)")
                         .parse(args);
  if (!files) return std::nullopt;
  options.files = *files;
  if (options.files.empty()) throw UsageError("report: missing FILE");
  if (!options.html.empty() && options.json) throw UsageError("report: --json and --html do not go together");
  if (!options.html.empty() && options.files.size() > 1) throw UsageError("report: --html takes one FILE");
  if (options.force && options.html.empty()) throw UsageError("report: --force goes with --html");
  return options;
}

}  // namespace

int report_command(CommandArgs args) {
  const auto options = parse(args);
  if (!options) {
    fmt::print("{}", kUsage);
    return 0;
  }
  CostOptions cost;
  cost.by = options->by;
  if (!options->html.empty()) {
    refuse_overwrite(options->html, options->force);  // before the analysis
    const std::string page = report_html(analyze_profile(options->files[0], cost));
    write_html_file(options->html, page, options->force);
    fmt::print(stderr, "allocscope: wrote {} ({} KiB)\n", options->html, (page.size() + 1023) / 1024);
    return 0;
  }
  std::string out;
  const bool many = options->files.size() > 1;
  if (options->json && many) out += "[\n";
  for (size_t i = 0; i < options->files.size(); ++i) {
    const auto& file = options->files[i];
    // A trace's shapes take a pass of their own that needs nothing from the cost model's two:
    // on a second core it runs meanwhile (a trace's report then takes about half the wall time).
    std::future<ReportDetails> early;
    if (const auto cal = read_calibration(file); cal && (cal->mode_flags & format::kModeTrace)) {
      early = std::async(std::launch::async, [&file, by = cost.by] { return report_details(file, by, true); });
    }
    const CostReport report = analyze_profile(file, cost);
    // The early pass stands when the cost model agrees the file holds a trace (it also checks
    // that the trace has chunks); otherwise its result is dropped.
    ReportDetails details;
    if (early.valid() && report.trace) {
      details = early.get();
      apply_estimate(details, report);
    } else {
      details = report_details(report);
    }
    if (options->json) {
      std::string doc = report_json(report, details);
      if (many) {
        while (!doc.empty() && doc.back() == '\n') doc.pop_back();
        doc += i + 1 < options->files.size() ? ",\n" : "\n";
      }
      out += doc;
    } else {
      if (i > 0) out += "\n";
      out += report_text(report, details);
    }
  }
  if (options->json && many) out += "]\n";
  fmt::print("{}", out);
  return 0;
}

}  // namespace allocscope
