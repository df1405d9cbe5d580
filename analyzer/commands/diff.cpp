// diff.cpp — `allocscope diff`: how much of the gap between two runs the allocator explains.
#include <fmt/format.h>

#include <string>
#include <vector>

#include "commands/cli.h"
#include "commands/commands.h"
#include "model/cost_model.h"
#include "model/diff.h"
#include "render/diff.h"
#include "render/html_page.h"
#include "render/html_report.h"
#include "util/side_by_side.h"

namespace allocscope {

namespace {

constexpr std::string_view kUsage =
    "usage: allocscope diff BASE OTHER [--json | --html OUT.html [--force]]\n"
    "\n"
    "Compares two profiles of the same workload (say glibc's malloc and musl's): how much of the\n"
    "difference in run time the allocator explains, split into more calls / slower calls and\n"
    "fast / slow / waiting, per size bucket and operation.  When both profiles were recorded\n"
    "with --trace, also which shapes (size × lifetime × same/cross-thread free) the difference\n"
    "comes from.\n"
    "\n"
    "  --json        one JSON document\n"
    "  --html OUT    write a self-contained HTML page with plots to OUT instead\n"
    "  --force       overwrite OUT if it exists (without it, an existing OUT is an error)\n"
    "  -h, --help    this help\n";

}  // namespace

int diff_command(CommandArgs args) {
  bool json = false, force = false;
  std::string html;
  const auto operands = OptionParser("diff")
                            .flag("--json", json)
                            .value("--html", [&](const std::string& v) { html = v; }, "diff: --html needs an output file")
                            .flag("--force", force)
                            .parse(args);
  if (!operands) {
    fmt::print("{}", kUsage);
    return 0;
  }
  const std::vector<std::string>& files = *operands;
  if (files.size() != 2) throw UsageError("diff: needs two profiles, BASE and OTHER");
  if (json && !html.empty()) throw UsageError("diff: --json and --html do not go together");
  if (force && html.empty()) throw UsageError("diff: --force goes with --html");
  if (!html.empty()) {
    refuse_overwrite(html, force);  // before the analysis
    CostOptions options;
    options.by = ReportGrouping::Bucket;
    const auto [base, other] = side_by_side([&] { return analyze_profile(files[0], options); },
                                            [&] { return analyze_profile(files[1], options); });
    const DiffReport d = diff_reports(base, other);
    for (const auto& warning : workload_warnings(d)) fmt::print(stderr, "allocscope: warning: {}\n", warning);
    const std::string page = diff_html(d, base, other);
    write_html_file(html, page, force);
    fmt::print(stderr, "allocscope: wrote {} ({} KiB)\n", html, (page.size() + 1023) / 1024);
    return 0;
  }
  const DiffReport d = diff_profiles(files[0], files[1]);
  for (const auto& warning : workload_warnings(d)) fmt::print(stderr, "allocscope: warning: {}\n", warning);
  fmt::print("{}", json ? diff_json(d) : diff_text(d));
  return 0;
}

}  // namespace allocscope
