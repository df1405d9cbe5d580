// record.cpp — `allocscope record`: its options, then the run (run/record.h).
#include <fmt/format.h>

#include <cerrno>
#include <cstdint>
#include <cstdlib>

#include "commands/cli.h"
#include "commands/commands.h"
#include "run/record.h"

namespace allocscope {

namespace {

constexpr std::string_view kUsage =
    "usage: allocscope record [-o FILE [--force]] [--allocator NAME|PATH] [--sample N] [--trace]\n"
    "                         [--stacks[=N]] [--locks] [--no-lock-test] [--] CMD [ARGS...]\n"
    "\n"
    "Runs CMD with the allocscope shim preloaded and writes its allocator profile.\n"
    "\n"
    "  -o, --output FILE   profile of CMD's process (default: allocscope.<CMD>.<pid>.asp);\n"
    "                      other processes it starts write FILE.<pid>\n"
    "  --force             replace FILE if it exists (without it, an existing FILE is an\n"
    "                      error); the profiles of other processes never replace a file\n"
    "  --allocator NAME    run CMD on another malloc: glibc/system/musl (its own), jemalloc,\n"
    "                      tcmalloc, mimalloc, scudo, or the path of a shared library\n"
    "  --sample N          time calls during 1/N of the time; 1 times every call, 0 counts\n"
    "                      calls without timing any (default: the shim's, 64)\n"
    "  --trace             record every call (address, size, start), compactly, and the\n"
    "                      durations of the timed ones (every call's with --sample 1)\n"
    "  --stacks[=N]        record the call stack of 1 timed call in N (default 64) and of\n"
    "                      every unusually slow call\n"
    "  --locks             also record the program's own contended lock waits (pthread and C11\n"
    "                      mutexes, rwlocks, spin locks, condition variables) per lock and call\n"
    "                      site, and sample each thread's CPU time: inside allocator calls, lock\n"
    "                      calls, or elsewhere\n"
    "  --no-lock-test      skip the lock test run after a program of two threads or more: a\n"
    "                      process of its own that holds a thread inside the same allocator\n"
    "                      and watches whether another one goes on (0.1-0.5 s, up to 2 s\n"
    "                      on a busy machine, 4 s at most)\n"
    "  -h, --help          this help\n"
    "\n"
    "Exit status: CMD's (128+N if a signal N killed it, 127 if it could not be run);\n"
    "2 if allocscope itself could not start it.\n";

}  // namespace

uint32_t parse_sample_rate(std::string_view command, std::string_view option, const std::string& text) {
  char* end = nullptr;
  errno = 0;
  const unsigned long long value = std::strtoull(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || errno != 0 || value > UINT32_MAX || text[0] == '-' || text[0] == '+') {
    throw UsageError(
        fmt::format("{}: {} needs a whole number from 0 to {}, not '{}'", command, option, UINT32_MAX, text));
  }
  return static_cast<uint32_t>(value);
}

std::optional<RecordOptions> parse_record_options(CommandArgs args) {
  RecordOptions options;
  const auto command =
      OptionParser("record")
          .value("--output", "-o", [&](const std::string& v) {
            if (v.empty()) throw UsageError("record: -o needs a file name");
            options.output = v;
          })
          .value("--allocator", [&](const std::string& v) { options.allocator = v; })
          .value("--sample", [&](const std::string& v) { options.sample_every = parse_sample_rate("record", "--sample", v); })
          .flag("--force", options.force)
          .flag("--trace", options.trace)
          .flag("--locks", options.locks)
          .flag("--no-lock-test", options.no_lock_test)
          .optional_value("--stacks", [&](const std::optional<std::string>& v) {
            options.stacks_every = v ? parse_sample_rate("record", "--stacks", *v) : 64;
          })
          .parse(args, OptionParser::Operands::EndOptions);
  if (!command) return std::nullopt;
  options.command = *command;
  if (options.command.empty()) throw UsageError("record: missing CMD");
  if (options.force && !options.output) throw UsageError("record: --force goes with -o FILE");
  return options;
}

int record_command(CommandArgs args) {
  const auto parsed = parse_record_options(args);
  if (!parsed) {
    fmt::print("{}", kUsage);
    return 0;
  }
  return record_and_report(*parsed);
}

}  // namespace allocscope
