#include "commands/cli.h"

#include <fmt/format.h>

namespace allocscope {

bool is_help_flag(std::string_view arg) { return arg == "-h" || arg == "--help"; }

bool take_option_value(std::string_view command, CommandArgs args, size_t& i, std::string_view long_name,
                       std::string_view short_name, std::string& value) {
  const std::string& arg = args[i];
  if (arg == long_name || (!short_name.empty() && arg == short_name)) {
    if (i + 1 >= args.size()) throw UsageError(fmt::format("{}: {} needs a value", command, arg));
    value = args[++i];
    return true;
  }
  if (arg.size() > long_name.size() && arg.starts_with(long_name) && arg[long_name.size()] == '=') {
    value = arg.substr(long_name.size() + 1);
    return true;
  }
  if (!short_name.empty() && arg.starts_with(short_name) && arg.size() > short_name.size()) {
    value = arg.substr(short_name.size());
    return true;
  }
  return false;
}

std::optional<std::vector<std::string>> options_then_command(CommandArgs args,
                                                             const std::function<void(size_t& i)>& option) {
  size_t i = 0;
  for (; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg == "--") {
      ++i;
      break;
    }
    if (is_help_flag(arg)) return std::nullopt;
    if (arg.empty() || arg[0] != '-' || arg == "-") break;  // CMD
    option(i);
  }
  return std::vector<std::string>(args.begin() + static_cast<std::ptrdiff_t>(i), args.end());
}

}  // namespace allocscope
