// allocscope — the command-line front end: dispatches to the subcommands in kSubcommands.
#include <fmt/format.h>

#include <array>
#include <exception>
#include <string>
#include <vector>

#include "allocscope/format.h"
#include "commands/cli.h"
#include "commands/commands.h"

namespace allocscope {
namespace {

constexpr std::array kSubcommands = {
    Subcommand{"record", "run a program with the shim preloaded and write its profile", record_command},
    Subcommand{"dump", "print everything a profile holds, as text or JSON", dump_command},
    Subcommand{"shapes", "lifetimes, cross-thread frees, leaks, live bytes of a trace", shapes_command},
    Subcommand{"callsites", "the costliest call sites per size class", callsites_command},
    Subcommand{"export", "write folded stacks, pprof or Chrome trace JSON", export_command},
    Subcommand{"report", "where the allocator's time goes: cost model, contention, verdict", report_command},
    Subcommand{"diff", "how much of the gap between two runs the allocator explains, and where", diff_command},
    Subcommand{"compare", "one workload under several allocators: the table, with the attribution", compare_command},
};

std::string usage() {
  std::string text =
      "usage: allocscope COMMAND [ARGS...]\n"
      "       allocscope --help | --version\n"
      "\n"
      "Commands:\n";
  for (const auto& command : kSubcommands) text += fmt::format("  {:<9}  {}\n", command.name, command.summary);
  text += "\n'allocscope COMMAND --help' describes a command.\n";
  return text;
}

const Subcommand* find_subcommand(std::string_view name) {
  for (const auto& command : kSubcommands) {
    if (command.name == name) return &command;
  }
  return nullptr;
}

int run(const std::vector<std::string>& args) {
  if (args.empty()) {
    fmt::print(stderr, "{}", usage());
    return kExitError;
  }
  const std::string& name = args.front();
  if (is_help_flag(name) || name == "help") {
    fmt::print("{}", usage());
    return 0;
  }
  if (name == "--version") {
    fmt::print("allocscope {}\nprofile format version {} (the one it reads and writes)\n", ALLOCSCOPE_VERSION,
               format::kVersion);
    return 0;
  }
  const Subcommand* command = find_subcommand(name);
  if (!command) {
    fmt::print(stderr, "allocscope: unknown command '{}'\n\n{}", name, usage());
    return kExitError;
  }
  try {
    return command->run(CommandArgs(args).subspan(1));
  } catch (const UsageError& error) {
    fmt::print(stderr, "allocscope: {}\nTry 'allocscope {} --help'.\n", error.what(), command->name);
  } catch (const std::exception& error) {
    fmt::print(stderr, "allocscope: {}\n", error.what());
  }
  return kExitError;
}

}  // namespace
}  // namespace allocscope

int main(int argc, char** argv) {
  try {
    return allocscope::run(std::vector<std::string>(argv + 1, argv + argc));
  } catch (const std::exception& error) {  // e.g. stdout closed while printing the usage
    fmt::print(stderr, "allocscope: {}\n", error.what());
    return allocscope::kExitError;
  }
}
