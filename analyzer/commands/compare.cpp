// compare.cpp — `allocscope compare`: its options, the comparison (run/compare.h), its table.
#include <fmt/format.h>

#include <string>

#include "commands/cli.h"
#include "commands/commands.h"
#include "render/compare.h"
#include "render/html_page.h"
#include "run/compare.h"

namespace allocscope {

namespace {

constexpr std::string_view kUsage =
    "usage: allocscope compare [--allocators LIST] [--runs N] [--variant NAME=PROGRAM]...\n"
    "                          [--sample N] [--locks] [--json | --markdown | --html OUT [--force]]\n"
    "                          [-o DIR] [--keep]\n"
    "                          [--] CMD [ARGS...]\n"
    "\n"
    "Runs CMD under each allocator, and PROGRAM ARGS... for each variant, N times each, interleaved,\n"
    "every run recorded with the shim; prints median wall time, median peak RSS and the change of\n"
    "wall time against the first row, with allocscope's attribution per row: the allocator's share\n"
    "of thread time, its waiting share, its costliest size classes, and the share of the gap to the\n"
    "first row that the allocator explains (allocscope diff of the median runs).\n"
    "\n"
    "  --allocators LIST   comma-separated names or library paths; the first is the baseline\n"
    "                      (default: glibc,jemalloc,tcmalloc,mimalloc,scudo; one that is not\n"
    "                      installed is skipped with a note)\n"
    "  --runs N            runs per row (default 3)\n"
    "  --sample N          as record's --sample, in every row: short runs need a small N\n"
    "  --locks             as record's --locks, in every row: adds the columns 'other locks' (the\n"
    "                      program's own lock time, waits and unlocks, over thread time) and 'alloc+locks'\n"
    "                      (the part of the gap that the allocator and those waits explain), and\n"
    "                      'of CPU' (the part of the CPU-time gap inside allocator and lock calls)\n"
    "                      for enough timed calls (default: the shim's)\n"
    "  --variant NAME=PROGRAM\n"
    "                      one more row: PROGRAM run with the same ARGS under its own malloc\n"
    "                      (say, a musl build of the same workload); repeatable\n"
    "  --json              the table as JSON (schema in docs/compare.md)\n"
    "  --markdown          the table as Markdown\n"
    "  --html OUT          a self-contained HTML page (bars and the table) to OUT instead\n"
    "  --force             overwrite OUT if it exists (without it, an existing OUT is an error)\n"
    "  -o, --output DIR    write the profiles and each run's output there (created; must be\n"
    "                      empty); default: a new directory under $TMPDIR, removed at the end\n"
    "  --keep              keep the default directory and say where it is\n"
    "  -h, --help          this help\n"
    "\n"
    "Exit status: 0 when every run exited 0; else the first non-zero status of a run;\n"
    "2 when the comparison could not be made (bad arguments, CMD cannot be started);\n"
    "128+N when signal N (SIGINT, SIGTERM, SIGHUP) stopped it.\n";

}  // namespace

int compare_command(CommandArgs args) {
  const auto parsed = parse_compare_options(args);
  if (!parsed) {
    fmt::print("{}", kUsage);
    return 0;
  }
  const CompareOptions& options = *parsed;
  if (!options.html.empty()) refuse_overwrite(options.html, options.force);  // before the runs
  CompareResult result;
  if (const int stopped = run_comparison(options, result); stopped != 0) return stopped;

  std::string out;
  switch (options.format) {
    case CompareFormat::Text: out = compare_text(result); break;
    case CompareFormat::Json: out = compare_json(result); break;
    case CompareFormat::Markdown: out = compare_markdown(result); break;
    case CompareFormat::Html: {
      const std::string page = compare_html(result);
      write_html_file(options.html, page, options.force);
      fmt::print(stderr, "allocscope: compare: wrote {} ({} KiB)\n", options.html.string(), page.size() / 1024);
      break;
    }
  }
  fmt::print("{}", out);
  if (result.output_dir && !options.output_dir) {
    fmt::print(stderr, "allocscope: compare: profiles kept in {}\n", result.output_dir->string());
  }
  return result.exit_status;
}

}  // namespace allocscope
