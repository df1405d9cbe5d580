#include "render/dump.h"
#include "commands/cli.h"
#include "commands/commands.h"

#include <fmt/format.h>

#include <optional>

namespace allocscope {

namespace {

constexpr std::string_view kUsage =
    "usage: allocscope dump FILE [--json]\n"
    "\n"
    "Prints everything a profile holds: process, calibration, threads, totals per operation,\n"
    "latency per operation, size buckets, events and notes.\n"
    "\n"
    "  --json     one JSON document instead of text tables\n"
    "  -h, --help this help\n";

struct DumpOptions {
  std::string file;
  bool json = false;
};

std::optional<DumpOptions> parse(CommandArgs args) {
  DumpOptions options;
  const auto files = OptionParser("dump").flag("--json", options.json).parse(args);
  if (!files) return std::nullopt;
  if (files->empty()) throw UsageError("dump: missing FILE");
  if (files->size() > 1) throw UsageError("dump: one FILE only");
  options.file = files->front();
  return options;
}

}  // namespace

int dump_command(CommandArgs args) {
  const auto options = parse(args);
  if (!options) {
    fmt::print("{}", kUsage);
    return 0;
  }
  const Profile profile = load_profile(options->file);
  fmt::print("{}", options->json ? dump_json(profile) : dump_text(profile));
  return 0;
}

}  // namespace allocscope
