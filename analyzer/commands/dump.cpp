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
  bool have_file = false;
  bool options_done = false;
  for (const std::string& arg : args) {
    if (!options_done && is_help_flag(arg)) return std::nullopt;
    if (!options_done && arg == "--json") {
      options.json = true;
    } else if (!options_done && arg == "--") {
      options_done = true;
    } else if (!options_done && arg.size() > 1 && arg[0] == '-') {
      throw UsageError(fmt::format("dump: unknown option '{}'", arg));
    } else if (have_file) {
      throw UsageError("dump: one FILE only");
    } else {
      options.file = arg;
      have_file = true;
    }
  }
  if (!have_file) throw UsageError("dump: missing FILE");
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
