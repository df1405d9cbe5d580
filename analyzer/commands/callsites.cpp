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

// --top N: call sites per size class, 0 = all.
size_t parse_top(const std::string& value) {
  char* end = nullptr;
  const unsigned long long n = std::strtoull(value.c_str(), &end, 10);
  if (value.empty() || *end || value[0] == '-') throw UsageError(fmt::format("callsites: --top needs a number, not '{}'", value));
  return static_cast<size_t>(n);
}

}  // namespace

int callsites_command(CommandArgs args) {
  bool json = false;
  CallSiteOptions options;
  const auto files = OptionParser("callsites")
                         .flag("--json", json)
                         .flag("--no-lines", [&] { options.source_lines = false; })
                         .value("--top", [&](const std::string& v) { options.top = parse_top(v); },
                                "callsites: --top needs a number, not ''")
                         .parse(args);
  if (!files) {
    fmt::print("{}", kUsage);
    return 0;
  }
  if (files->empty()) throw UsageError("callsites: missing FILE");
  if (files->size() > 1) throw UsageError("callsites: one FILE only");
  const std::string& file = files->front();
  if (file.empty()) throw UsageError("callsites: missing FILE");
  const CallSiteReport report = analyze_callsites(file, options);
  fmt::print("{}", json ? callsites_json(report) : callsites_text(report));
  return 0;
}

}  // namespace allocscope
