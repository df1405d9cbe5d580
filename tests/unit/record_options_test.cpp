// `allocscope record` command line and LD_PRELOAD composition (analyzer/run/record.h).
#include "commands/commands.h"
#include "run/record.h"

#include <gtest/gtest.h>

namespace allocscope {
namespace {

std::optional<RecordOptions> parse(std::vector<std::string> args) { return parse_record_options(args); }

TEST(RecordOptions, CommandStartsAtTheFirstNonOption) {
  const auto options = parse({"-o", "out.asp", "--sample", "8", "ls", "-l", "--", "-o"});
  ASSERT_TRUE(options);
  EXPECT_EQ(options->output, "out.asp");
  EXPECT_EQ(options->sample_every, 8u);
  EXPECT_FALSE(options->allocator);
  EXPECT_EQ(options->command, (std::vector<std::string>{"ls", "-l", "--", "-o"}));
}

TEST(RecordOptions, AcceptsJoinedForms) {
  const auto options = parse({"-oout.asp", "--allocator=jemalloc", "--sample=3", "--", "-weird-cmd"});
  ASSERT_TRUE(options);
  EXPECT_EQ(options->output, "out.asp");
  EXPECT_EQ(options->allocator, "jemalloc");
  EXPECT_EQ(options->sample_every, 3u);
  EXPECT_EQ(options->command, std::vector<std::string>{"-weird-cmd"});
}

TEST(RecordOptions, SampleZeroMeansCountOnly) { EXPECT_EQ(parse({"--sample", "0", "ls"})->sample_every, 0u); }

TEST(RecordOptions, HelpReturnsNothing) { EXPECT_FALSE(parse({"--help"})); }

TEST(RecordOptions, RejectsBadCommandLines) {
  EXPECT_THROW(parse({}), UsageError);
  EXPECT_THROW(parse({"-o", "x.asp"}), UsageError);
  EXPECT_THROW(parse({"-o"}), UsageError);
  EXPECT_THROW(parse({"--sample", "-1", "ls"}), UsageError);
  EXPECT_THROW(parse({"--sample", "", "ls"}), UsageError);
  EXPECT_THROW(parse({"--sample", "3x", "ls"}), UsageError);
  EXPECT_THROW(parse({"--sample", "99999999999", "ls"}), UsageError);
  EXPECT_THROW(parse({"--frobnicate", "ls"}), UsageError);
}

TEST(PreloadList, ShimFirstThenAllocatorThenPrevious) {
  EXPECT_EQ(preload_list("/s/libshim.so", std::nullopt, nullptr), "/s/libshim.so");
  EXPECT_EQ(preload_list("/s/libshim.so", std::filesystem::path("/l/libjemalloc.so.2"), ""),
            "/s/libshim.so:/l/libjemalloc.so.2");
  EXPECT_EQ(preload_list("/s/libshim.so", std::filesystem::path("/l/libjemalloc.so.2"), "/x/libold.so"),
            "/s/libshim.so:/l/libjemalloc.so.2:/x/libold.so");
}

TEST(PreloadList, RefusesPathsLdPreloadCannotExpress) {
  EXPECT_THROW(preload_list("/my dir/libshim.so", std::nullopt, nullptr), std::runtime_error);
  EXPECT_THROW(preload_list("/s/libshim.so", std::filesystem::path("/a:b/lib.so"), nullptr), std::runtime_error);
}

}  // namespace
}  // namespace allocscope
