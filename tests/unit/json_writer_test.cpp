// The JSON string escaper and writer (analyzer/util/json_writer.h).
#include "util/json_writer.h"

#include <gtest/gtest.h>

#include <optional>

#include "mini_json.h"

namespace allocscope {
namespace {

TEST(JsonEscape, PlainTextIsQuoted) { EXPECT_EQ(json_quote("malloc"), R"("malloc")"); }

TEST(JsonEscape, QuotesAndBackslashesAreEscaped) {
  EXPECT_EQ(json_quote(R"(say "hi" \ bye)"), R"("say \"hi\" \\ bye")");
}

TEST(JsonEscape, ControlCharactersAreEscaped) {
  EXPECT_EQ(json_quote("a\nb\tc\rd\be\ff"), R"("a\nb\tc\rd\be\ff")");
  EXPECT_EQ(json_quote(std::string("\x01\x1f", 2)), R"("\u0001\u001f")");
  EXPECT_EQ(json_quote(std::string("nul\0here", 8)), R"("nul\u0000here")");
  EXPECT_EQ(json_quote("\x7f"), "\"\x7f\"");  // DEL needs no escape in JSON
}

TEST(JsonEscape, ValidUtf8PassesThrough) {
  EXPECT_EQ(json_quote("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80"), "\"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80\"");
}

TEST(JsonEscape, InvalidUtf8BecomesReplacementCharacters) {
  EXPECT_EQ(json_quote("\xff"), R"("\ufffd")");
  EXPECT_EQ(json_quote("a\xc3"), R"("a\ufffd")");              // sequence cut at the end
  EXPECT_EQ(json_quote("\xc0\xaf"), R"("\ufffd\ufffd")");      // overlong '/'
  EXPECT_EQ(json_quote("\xed\xa0\x80"), R"("\ufffd\ufffd\ufffd")");  // a UTF-16 surrogate
  EXPECT_EQ(json_quote("\xf4\x90\x80\x80"), R"("\ufffd\ufffd\ufffd\ufffd")");  // above U+10FFFF
}

TEST(JsonEscape, EveryByteStringRoundTripsThroughAParser) {
  std::string all;
  for (int c = 1; c < 128; ++c) all += static_cast<char>(c);
  EXPECT_EQ(test::parse_json(json_quote(all)).string(), all);
}

TEST(JsonWriter, WritesNestedStructuresWithCommas) {
  std::string out;
  JsonWriter w(out, 0);
  w.begin_object();
  w.field("n", 1).field("big", ~uint64_t{0}).field("neg", -5).field("yes", true).field("s", "x");
  w.key("list").begin_array().value(1).value("two").null().begin_object().end_object().end_array();
  w.field("none", std::optional<int>{}).field("some", std::optional<int>{7});
  w.field("half", 0.5).field("inf", 1.0 / 0.0);
  w.key("empty").begin_array().end_array();
  w.end_object();
  EXPECT_TRUE(w.done());
  EXPECT_EQ(out,
            R"({"n":1,"big":18446744073709551615,"neg":-5,"yes":true,"s":"x",)"
            R"("list":[1,"two",null,{}],"none":null,"some":7,"half":0.5,"inf":null,"empty":[]})");
}

TEST(JsonWriter, WritesIntegersBeyond64Bits) {
  std::string out;
  JsonWriter w(out, 0);
  w.value(static_cast<unsigned __int128>(~uint64_t{0}) * 3);
  EXPECT_EQ(out, "55340232221128654845");
}

TEST(JsonWriter, IndentedOutputParses) {
  std::string out;
  JsonWriter w(out, 2);
  w.begin_object().field("a", 1).key("b").begin_array().value(2).value(3).end_array().end_object();
  EXPECT_EQ(out, "{\n  \"a\": 1,\n  \"b\": [\n    2,\n    3\n  ]\n}");
  EXPECT_EQ(test::parse_json(out)["b"].array().size(), 2u);
}

TEST(JsonWriter, RejectsMisuse) {
  std::string out;
  JsonWriter object(out);
  object.begin_object();
  EXPECT_THROW(object.value(1), std::logic_error);     // a member needs a key
  EXPECT_THROW(object.end_array(), std::logic_error);  // wrong closer
  JsonWriter array(out);
  array.begin_array();
  EXPECT_THROW(array.key("k"), std::logic_error);
}

}  // namespace
}  // namespace allocscope
