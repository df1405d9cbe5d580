#include "commands/cli.h"

#include <fmt/format.h>

namespace allocscope {

bool is_help_flag(std::string_view arg) { return arg == "-h" || arg == "--help"; }

OptionParser& OptionParser::flag(std::string_view name, bool& set) {
  return flag(name, [&set] { set = true; });
}

OptionParser& OptionParser::flag(std::string_view name, std::function<void()> on) {
  options_.push_back(Option{std::string(name), "", Kind::Flag, std::move(on), {}, {}, {}});
  return *this;
}

OptionParser& OptionParser::value(std::string_view name, std::string_view short_name, OnValue on, std::string missing) {
  options_.push_back(Option{std::string(name), std::string(short_name), Kind::Value, {}, std::move(on), {},
                            std::move(missing)});
  return *this;
}

OptionParser& OptionParser::optional_value(std::string_view name,
                                           std::function<void(const std::optional<std::string>&)> on) {
  options_.push_back(Option{std::string(name), "", Kind::OptionalValue, {}, {}, std::move(on), {}});
  return *this;
}

void OptionParser::take(CommandArgs args, size_t& i) const {
  const std::string& arg = args[i];
  for (const Option& o : options_) {
    const bool named = arg == o.name || (!o.short_name.empty() && arg == o.short_name);
    const bool inline_value = arg.size() > o.name.size() && arg.starts_with(o.name) && arg[o.name.size()] == '=';
    switch (o.kind) {
      case Kind::Flag:
        if (!named) continue;
        o.on_flag();
        return;
      case Kind::OptionalValue:
        if (named) {
          o.on_optional(std::nullopt);
        } else if (inline_value) {
          o.on_optional(arg.substr(o.name.size() + 1));
        } else {
          continue;
        }
        return;
      case Kind::Value:
        if (named) {
          if (i + 1 >= args.size()) {
            throw UsageError(o.missing.empty() ? fmt::format("{}: {} needs a value", command_, arg) : o.missing);
          }
          o.on_value(args[++i]);
        } else if (inline_value) {
          o.on_value(arg.substr(o.name.size() + 1));
        } else if (!o.short_name.empty() && arg.starts_with(o.short_name) && arg.size() > o.short_name.size()) {
          o.on_value(arg.substr(o.short_name.size()));
        } else {
          continue;
        }
        return;
    }
  }
  throw UsageError(fmt::format("{}: unknown option '{}'", command_, arg));
}

std::optional<std::vector<std::string>> OptionParser::parse(CommandArgs args, Operands mode) const {
  std::vector<std::string> operands;
  size_t i = 0;
  for (; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg == "--") {
      ++i;
      break;
    }
    if (is_help_flag(arg)) return std::nullopt;
    if (arg.size() > 1 && arg[0] == '-') {
      take(args, i);
    } else if (mode == Operands::EndOptions) {
      break;  // CMD
    } else {
      operands.push_back(arg);
    }
  }
  operands.insert(operands.end(), args.begin() + static_cast<std::ptrdiff_t>(i), args.end());
  return operands;
}

}  // namespace allocscope
