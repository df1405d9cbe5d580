// callsites.cpp — `allocscope callsites`: the costliest call sites per size class.
#include <fmt/format.h>

#include <cstdlib>
#include <string>

#include "commands/cli.h"
#include "commands/commands.h"
#include "model/callsites.h"
#include "render/callsites.h"

namespace allocscope {

namespace {

constexpr std::string_view kUsage =
    "usage: allocscope callsites FILE [--json] [--top N] [--no-lines]\n"
    "\n"
    "The costliest call sites of the program, per size class: calls, allocator time and bytes of\n"
    "the calls that carry a call stack, and (traces) the blocks allocated there and never freed.\n"
    "Symbols come from the recorded objects' ELF symbol tables; file:line from addr2line when\n"
    "the objects have debug information.\n"
    "\n"
    "  --json       one JSON document instead of text\n"
    "  --top N      call sites per size class (default 10, 0 = all)\n"
    "  --no-lines   do not run addr2line (symbols only)\n"
    "  -h, --help   this help\n";

}  // namespace

int callsites_command(CommandArgs args) {
  std::string file;
  bool json = false, options_done = false;
  CallSiteOptions options;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (!options_done && is_help_flag(arg)) {
      fmt::print("{}", kUsage);
      return 0;
    }
    if (!options_done && arg == "--json") {
      json = true;
    } else if (!options_done && arg == "--no-lines") {
      options.source_lines = false;
    } else if (!options_done && (arg == "--top" || arg.starts_with("--top="))) {
      std::string value = arg == "--top" ? (i + 1 < args.size() ? args[++i] : "") : arg.substr(6);
      char* end = nullptr;
      const unsigned long long n = std::strtoull(value.c_str(), &end, 10);
      if (value.empty() || *end || value[0] == '-') throw UsageError(fmt::format("callsites: --top needs a number, not '{}'", value));
      options.top = static_cast<size_t>(n);
    } else if (!options_done && arg == "--") {
      options_done = true;
    } else if (!options_done && arg.size() > 1 && arg[0] == '-') {
      throw UsageError(fmt::format("callsites: unknown option '{}'", arg));
    } else if (!file.empty()) {
      throw UsageError("callsites: one FILE only");
    } else {
      file = arg;
    }
  }
  if (file.empty()) throw UsageError("callsites: missing FILE");
  const CallSiteReport report = analyze_callsites(file, options);
  fmt::print("{}", json ? callsites_json(report) : callsites_text(report));
  return 0;
}

}  // namespace allocscope
