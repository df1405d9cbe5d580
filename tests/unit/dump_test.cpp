// `allocscope dump`: the JSON document is valid, has the documented shape, and its numbers add up.
#include "render/dump.h"

#include <gtest/gtest.h>

#include "allocscope/buckets.h"
#include "allocscope/ops.h"
#include "mini_json.h"
#include "temp_dir.h"
#include "test_profile_writer.h"

namespace allocscope {
namespace {

using format::kLastPart;
using test::Json;
using test::make_calibration;
using test::make_event;
using test::make_row;
using test::make_stats_header;

constexpr unsigned kMalloc = static_cast<unsigned>(Op::Malloc);
constexpr unsigned kFree = static_cast<unsigned>(Op::Free);
constexpr unsigned kRealloc = static_cast<unsigned>(Op::Realloc);

class DumpTest : public ::testing::Test {
 protected:
  void SetUp() override {
    test::TestProfileWriter w;
    format::ProcessInfo info{};
    info.pid = 77;
    info.ppid = 76;
    info.libc = static_cast<uint8_t>(format::Libc::Musl);
    info.start_mono_ns = 1'000;
    w.process(info, "/opt/odd \"name\"\n", std::string("prog\0\xff", 6), "/lib/ld-musl-x86_64.so.1", "1.2.3");
    w.calibration(make_calibration(3'000'000'000));
    w.thread_stats(make_stats_header(1, 2, kLastPart),
                   {make_row(kMalloc, 10, 100, 1300, {{40, 0, 60}, {44, 0, 40}}), make_row(kFree, 10, 40, 520),
                    make_row(kFree, kBucketUnknown, 50, 0),
                    make_row(kRealloc, 30, 3, 900, {{50, 0, 3}})});
    w.thread_stats(make_stats_header(2, 1, kLastPart, format::ThreadState::Exited),
                   {make_row(kMalloc, 10, 7, 90, {{41, 0, 7}}), make_row(kMalloc, 76, 1, 1 << 20)});
    w.events(1, 0, {make_event(kMalloc, 12, 5, 100)});
    w.note("a note with \"quotes\"");
    w.save(dir_.file("p.asp"));
    LoadOptions options;
    options.warn = [](std::string_view) {};
    profile_ = load_profile(dir_.file("p.asp"), options);
  }

  test::TempDir dir_;
  Profile profile_;
};

TEST_F(DumpTest, JsonHasTheDocumentedShape) {
  const Json doc = test::parse_json(dump_json(profile_));
  for (const char* key : {"file", "format_version", "truncated", "process", "calibration", "threads", "totals",
                          "buckets", "events", "notes"}) {
    EXPECT_TRUE(doc.has(key)) << key;
  }
  const Json& process = doc["process"];
  for (const char* key : {"pid", "ppid", "exe", "args", "libc", "libc_version", "allocator", "secure", "tick_hz",
                          "clock", "wall_ns", "complete", "threads_seen", "max_live_threads", "events_dropped",
                          "write_errors"}) {
    EXPECT_TRUE(process.has(key)) << key;
  }
  EXPECT_EQ(process["pid"].as_u64(), 77u);
  EXPECT_EQ(process["exe"].string(), "/opt/odd \"name\"\n");
  EXPECT_EQ(process["args"].array().at(1).string(), "\xef\xbf\xbd");  // invalid UTF-8 replaced
  EXPECT_EQ(process["libc"].string(), "musl");
  EXPECT_EQ(process["clock"].string(), "tsc");
  EXPECT_FALSE(process["complete"].boolean());
  EXPECT_TRUE(process["max_live_threads"].is_null());
  EXPECT_EQ(doc["calibration"]["syscall_ticks"].as_u64(), 300u);
  EXPECT_EQ(doc["calibration"]["syscall_ps"].value.index(), 2u);  // a number
  EXPECT_EQ(doc["calibration"]["minor_fault_ticks"].as_u64(), 700u);
  EXPECT_EQ(doc["threads"].array().size(), 2u);
  EXPECT_EQ(doc["threads"].array()[1]["state"].string(), "exited");
  EXPECT_EQ(doc["totals"]["malloc"]["calls"].as_u64(), 108u);
  EXPECT_FALSE(doc["totals"].has("calloc"));  // only operations that were called
  EXPECT_EQ(doc["events"]["count"].as_u64(), 1u);
  EXPECT_EQ(doc["notes"].array().at(0).string(), "a note with \"quotes\"");
}

TEST_F(DumpTest, JsonNumbersAddUp) {
  const Json doc = test::parse_json(dump_json(profile_));
  uint64_t total_calls = 0, total_bytes = 0;
  for (const auto& [op, t] : doc["totals"].object()) {
    total_calls += t["calls"].as_u64();
    total_bytes += t["bytes"].as_u64();
    uint64_t thread_calls = 0, thread_bytes = 0, thread_timed_ns = 0;
    for (const Json& thread : doc["threads"].array()) {
      if (!thread["totals"].has(op)) continue;
      thread_calls += thread["totals"][op]["calls"].as_u64();
      thread_bytes += thread["totals"][op]["bytes"].as_u64();
      thread_timed_ns += thread["totals"][op]["timed_ns"].as_u64();
    }
    EXPECT_EQ(thread_calls, t["calls"].as_u64()) << op;
    EXPECT_EQ(thread_bytes, t["bytes"].as_u64()) << op;
    EXPECT_EQ(thread_timed_ns, t["timed_ns"].as_u64()) << op;
  }
  uint64_t bucket_calls = 0, bucket_bytes = 0, previous_lo = 0;
  for (const Json& bucket : doc["buckets"].array()) {
    if (bucket["size_known"].boolean()) {
      EXPECT_GE(bucket["lo"].as_u64(), previous_lo);
      previous_lo = bucket["hi"].as_u64() + 1;
    } else {
      EXPECT_EQ(bucket["bucket"].as_u64(), kBucketUnknown);
      EXPECT_TRUE(bucket["lo"].is_null() && bucket["hi"].is_null());
      EXPECT_EQ(&bucket, &doc["buckets"].array().back());  // after every sized bucket
    }
    bucket_calls += bucket["calls"].as_u64();
    bucket_bytes += bucket["bytes"].as_u64();
    uint64_t op_calls = 0;
    for (const auto& [op, counts] : bucket["ops"].object()) op_calls += counts["calls"].as_u64();
    EXPECT_EQ(op_calls, bucket["calls"].as_u64());
  }
  EXPECT_EQ(bucket_calls, total_calls);
  EXPECT_EQ(bucket_bytes, total_bytes);
  EXPECT_EQ(total_calls, 201u);
}

TEST_F(DumpTest, TextHasEverySection) {
  const std::string text = dump_text(profile_);
  for (const char* heading : {"allocscope profile", "Process", "Calibration", "Threads", "Totals by operation",
                              "Latency by operation", "Size buckets", "Events", "Notes"}) {
    EXPECT_NE(text.find(heading), std::string::npos) << heading;
  }
  EXPECT_NE(text.find("musl 1.2.3"), std::string::npos);
  EXPECT_NE(text.find("\\x0a"), std::string::npos);  // the newline in the exe name is escaped
  EXPECT_NE(text.find("[1 MiB, 1.25 MiB)"), std::string::npos);
  EXPECT_NE(text.find("size not taken"), std::string::npos);
}

}  // namespace
}  // namespace allocscope
