// cli.h — conventions shared by the subcommands of the `allocscope` executable.
//
// A subcommand is a function from its arguments (those after its name) to an exit status.  It
// reports a bad command line by throwing UsageError and any other failure by throwing an
// exception derived from std::exception (ProfileError, …); main() turns both into one line on
// stderr and exit status kExitError.  Subcommands that run a program return its status instead.
#pragma once
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "util/output_file.h"
#include "util/usage_error.h"

namespace allocscope {

constexpr int kExitError = 2;

using CommandArgs = std::span<const std::string>;

struct Subcommand {
  std::string_view name;
  std::string_view summary;  // one line, for `allocscope --help`
  int (*run)(CommandArgs args);
};

// True for "-h" and "--help".
bool is_help_flag(std::string_view arg);

// An option with a value at args[i]: "--name VALUE", "--name=VALUE", and for a short option also
// "-x VALUE" and "-xVALUE".  On a match stores the value, leaves i on the last argument used and
// returns true.  Throws UsageError ("<command>: --name needs a value") when the value is missing.
bool take_option_value(std::string_view command, CommandArgs args, size_t& i, std::string_view long_name,
                       std::string_view short_name, std::string& value);

// The options of a command that runs one (record, compare), then CMD ARGS…: each argument that
// starts with '-' (but "-" alone) goes to `option`, which may take the next ones as its value
// (leaving i on the last it used); "--" ends the options, and so does CMD's name.  Returns CMD
// ARGS… (possibly none), or nullopt for -h / --help.
std::optional<std::vector<std::string>> options_then_command(CommandArgs args,
                                                             const std::function<void(size_t& i)>& option);

}  // namespace allocscope
