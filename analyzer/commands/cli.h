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

// The one option parser of the subcommands.  A command declares its options once — flags,
// options with a value, options with an optional value — and parses its arguments:
//
//   --name              a flag
//   --name VALUE        an option with a value, also --name=VALUE; a short name "-x" also takes
//   -x VALUE, -xVALUE   "-x VALUE" and "-xVALUE"
//   --name[=VALUE]      an option whose value is optional (only as --name=VALUE)
//   -h, --help          parse() returns nullopt: the command prints its usage
//   --                  ends the options
//
// Every bad option is reported the same way, as UsageError: "<command>: unknown option 'ARG'",
// "<command>: ARG needs a value" (or the option's own words for it); main() adds "Try
// 'allocscope <command> --help'."  An argument that does not start with '-' (and "-" alone) is
// an operand: operands mix with options (FILE… of report, diff, dump, shapes, callsites, export),
// or, in Operands::EndOptions mode, the first one ends the options (CMD ARGS… of record, compare).
class OptionParser {
 public:
  enum class Operands { Mixed, EndOptions };
  using OnValue = std::function<void(const std::string& value)>;

  explicit OptionParser(std::string_view command) : command_(command) {}

  OptionParser& flag(std::string_view name, bool& set);
  OptionParser& flag(std::string_view name, std::function<void()> on);
  // `missing`: the error when the value is missing (default "<command>: ARG needs a value").
  OptionParser& value(std::string_view name, std::string_view short_name, OnValue on, std::string missing = {});
  OptionParser& value(std::string_view name, OnValue on, std::string missing = {}) {
    return value(name, "", std::move(on), std::move(missing));
  }
  OptionParser& optional_value(std::string_view name, std::function<void(const std::optional<std::string>&)> on);

  // The operands, in order; nullopt for -h / --help.  Throws UsageError.
  std::optional<std::vector<std::string>> parse(CommandArgs args, Operands mode = Operands::Mixed) const;

 private:
  enum class Kind { Flag, Value, OptionalValue };
  struct Option {
    std::string name, short_name;
    Kind kind;
    std::function<void()> on_flag;
    OnValue on_value;
    std::function<void(const std::optional<std::string>&)> on_optional;
    std::string missing;
  };
  // The option at args[i] (leaving i on the last argument it used); throws UsageError.
  void take(CommandArgs args, size_t& i) const;

  std::string command_;
  std::vector<Option> options_;
};

}  // namespace allocscope
