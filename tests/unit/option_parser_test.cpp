// The subcommands' one option parser (analyzer/commands/cli.h).
#include "commands/cli.h"

#include <gtest/gtest.h>

namespace allocscope {
namespace {

struct Seen {
  bool json = false;
  std::vector<std::string> outputs;
  std::vector<std::string> stacks;  // "-" for the option without a value
};

OptionParser parser(Seen& seen) {
  OptionParser p("cmd");
  p.flag("--json", seen.json)
      .value("--output", "-o", [&](const std::string& v) { seen.outputs.push_back(v); })
      .value("--top", [](const std::string&) {}, "cmd: --top needs a number")
      .optional_value("--stacks", [&](const std::optional<std::string>& v) { seen.stacks.push_back(v.value_or("-")); });
  return p;
}

std::string usage_error(const OptionParser& p, std::vector<std::string> args) {
  try {
    p.parse(args);
  } catch (const UsageError& e) {
    return e.what();
  }
  return "";
}

TEST(OptionParser, OperandsMixWithOptionsAndEveryFormOfAValue) {
  Seen seen;
  const auto operands = parser(seen).parse(std::vector<std::string>{
      "a", "--json", "-o", "x", "b", "--output=y", "-oz", "--output", "w", "-", "--stacks", "--stacks=8", "--", "--json"});
  ASSERT_TRUE(operands);
  EXPECT_TRUE(seen.json);
  EXPECT_EQ(seen.outputs, (std::vector<std::string>{"x", "y", "z", "w"}));
  EXPECT_EQ(seen.stacks, (std::vector<std::string>{"-", "8"}));
  EXPECT_EQ(*operands, (std::vector<std::string>{"a", "b", "-", "--json"}));
}

TEST(OptionParser, TheFirstOperandEndsTheOptionsOfACommandThatRunsOne) {
  Seen seen;
  const auto command = parser(seen).parse(std::vector<std::string>{"--json", "ls", "-o", "x"},
                                          OptionParser::Operands::EndOptions);
  ASSERT_TRUE(command);
  EXPECT_EQ(*command, (std::vector<std::string>{"ls", "-o", "x"}));
  EXPECT_TRUE(seen.outputs.empty());
}

TEST(OptionParser, HelpBeforeTheEndOfOptions) {
  Seen seen;
  EXPECT_FALSE(parser(seen).parse(std::vector<std::string>{"a", "--help"}));
  EXPECT_FALSE(parser(seen).parse(std::vector<std::string>{"-h"}));
  const auto operands = parser(seen).parse(std::vector<std::string>{"--", "-h"});
  ASSERT_TRUE(operands);
  EXPECT_EQ(*operands, std::vector<std::string>{"-h"});
}

TEST(OptionParser, EveryBadOptionIsAUsageErrorNamingTheCommand) {
  Seen seen;
  const OptionParser p = parser(seen);
  EXPECT_EQ(usage_error(p, {"--bogus"}), "cmd: unknown option '--bogus'");
  EXPECT_EQ(usage_error(p, {"--json=1"}), "cmd: unknown option '--json=1'");
  EXPECT_EQ(usage_error(p, {"--outputs"}), "cmd: unknown option '--outputs'");
  EXPECT_EQ(usage_error(p, {"-o"}), "cmd: -o needs a value");
  EXPECT_EQ(usage_error(p, {"a", "--output"}), "cmd: --output needs a value");
  EXPECT_EQ(usage_error(p, {"--top"}), "cmd: --top needs a number");
}

}  // namespace
}  // namespace allocscope
