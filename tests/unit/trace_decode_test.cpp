// Trace, Stacks and Modules chunks: decoding, validation of every varint, and the merged order.
#include "profile/trace_decode.h"

#include <gtest/gtest.h>

#include <string>
#include <tuple>
#include <vector>

#include "allocscope/buckets.h"
#include "allocscope/ops.h"
#include "profile/profile.h"
#include "temp_dir.h"
#include "test_profile_writer.h"

namespace allocscope {
namespace {

using test::make_record;
using test::TestProfileWriter;

constexpr unsigned kMalloc = static_cast<unsigned>(Op::Malloc);
constexpr unsigned kFree = static_cast<unsigned>(Op::Free);
constexpr unsigned kRealloc = static_cast<unsigned>(Op::Realloc);
constexpr uint16_t kTrace = static_cast<uint16_t>(format::ChunkType::TraceEvents);
constexpr uint16_t kStacks = static_cast<uint16_t>(format::ChunkType::Stacks);
constexpr uint16_t kModules = static_cast<uint16_t>(format::ChunkType::Modules);
constexpr uint64_t kPayload = sizeof(format::ChunkHeader);
constexpr uint64_t kRecords = kPayload + sizeof(format::TraceHeader);

class TraceDecodeTest : public ::testing::Test {
 protected:
  std::vector<Chunk> read_all(const TestProfileWriter& w) {
    w.save(path_);
    ProfileReader reader(path_, [](std::string_view) {});
    std::vector<Chunk> chunks;
    for (Chunk c; reader.next(c);) chunks.push_back(c);
    return chunks;
  }

  ProfileError error_of(const TestProfileWriter& w) {
    try {
      read_all(w);
    } catch (const ProfileError& e) {
      return e;
    }
    ADD_FAILURE() << "no ProfileError";
    return ProfileError("", std::nullopt, "");
  }

  // A TraceEvents chunk with the given header fields and raw record bytes.
  static uint64_t raw_trace(TestProfileWriter& w, uint32_t count, const std::string& body,
                            std::optional<uint32_t> bytes = std::nullopt) {
    format::TraceHeader h{};
    h.thread_serial = 1;
    h.count = count;
    h.bytes = bytes.value_or(static_cast<uint32_t>(body.size()));
    std::string payload(test::as_bytes(h));
    payload += body;
    return w.chunk(kTrace, payload);
  }

  Profile load(const TestProfileWriter& w) {
    w.save(path_);
    LoadOptions o;
    o.warn = [](std::string_view) {};
    return load_profile(path_, o);
  }

  test::TempDir dir_;
  std::filesystem::path path_ = dir_.file("t.asp");
};

TEST_F(TraceDecodeTest, RecordsRoundTrip) {
  TestProfileWriter w;
  const std::vector<trace::Record> records = {
      make_record(kMalloc, 1000, 40, 0x7f0000001000, 24),
      make_record(kRealloc, 1100, 70, 0x7f0000002000, 4096, 0x7f0000001000, 3),
      make_record(kFree, 1300, 20, 0x7f0000002000),
      make_record(kMalloc, 1400, 90, 0, uint64_t{1} << 62, 0, 0, true),
  };
  w.trace(7, 100, records, 900, 0x7f0000000000);
  const auto chunks = read_all(w);
  ASSERT_EQ(chunks.size(), 1u);
  const auto& t = std::get<TraceEventsRecord>(chunks[0].body);
  EXPECT_EQ(t.header.thread_serial, 7u);
  EXPECT_EQ(t.header.first_index, 100u);
  EXPECT_EQ(t.last_tick, 1400u);
  EXPECT_EQ(t.bytes_offset, sizeof(format::FileHeader) + kRecords);
  TraceCursor cursor(t);
  std::vector<trace::Record> got;
  for (trace::Record r; cursor.next(r);) got.push_back(r);
  ASSERT_EQ(got.size(), records.size());
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(got[i].op, records[i].op) << i;
    EXPECT_EQ(got[i].start_tick, records[i].start_tick) << i;
    EXPECT_EQ(got[i].duration, records[i].duration) << i;
    EXPECT_EQ(got[i].addr, records[i].addr) << i;
    EXPECT_EQ(got[i].failed, records[i].failed) << i;
    EXPECT_EQ(got[i].stack_id, records[i].stack_id) << i;
  }
  EXPECT_EQ(got[0].size, 24u);
  EXPECT_EQ(got[1].old_addr, 0x7f0000001000u);
  EXPECT_EQ(got[3].size, uint64_t{1} << 62);
}

TEST_F(TraceDecodeTest, RecordsAsEventsForTheCostModel) {
  TestProfileWriter w;
  w.trace(3, 5, {make_record(kMalloc, 100, 40, 0x10, 24, 0, 2), make_record(kFree, 200, uint64_t{1} << 33, 0x10),
                 make_record(kMalloc, 300, 9, 0, uint64_t{1} << 40, 0, 0, true)});
  const auto chunks = read_all(w);
  const auto& t = std::get<TraceEventsRecord>(chunks.at(0).body);
  const auto events = trace_chunk_as_events(t);
  ASSERT_EQ(events.size(), 3u);
  EXPECT_EQ(trace_chunk_events_header(t).thread_serial, 3u);
  EXPECT_EQ(trace_chunk_events_header(t).first_index, 5u);
  EXPECT_EQ(events[0].start_tick, 100u);
  EXPECT_EQ(events[0].duration_ticks, 40u);
  EXPECT_EQ(events[0].size, 24u);
  EXPECT_EQ(events[0].bucket, bucket_of(24));
  EXPECT_EQ(events[0].stack_id, 2u);
  EXPECT_EQ(events[1].bucket, kBucketUnknown);
  EXPECT_EQ(events[1].duration_ticks, 0xffffffffu);
  EXPECT_TRUE(events[1].flags & format::kEvClamped);
  EXPECT_EQ(events[2].size, 0xffffffffu);
  EXPECT_EQ(events[2].bucket, bucket_of(uint64_t{1} << 40));
  EXPECT_TRUE(events[2].flags & format::kEvFailed);
}

TEST_F(TraceDecodeTest, VarintRunningPastTheChunkIsAnError) {
  TestProfileWriter w;
  std::string body = test::encode_trace({make_record(kMalloc, 10, 5, 0x1000, 16)});
  body += std::string("\x00\x00\x85\x80", 4);  // a malloc starting at +0, its duration cut short
  const uint64_t at = raw_trace(w, 2, body);
  const ProfileError e = error_of(w);
  const uint64_t varint_at = at + kRecords + body.size() - 2;  // the duration varint
  EXPECT_EQ(e.offset(), varint_at) << e.what();
  EXPECT_NE(e.reason().find("record 1 (malloc): duration varint runs past the end"), std::string::npos) << e.what();
}

TEST_F(TraceDecodeTest, OverlongVarintIsAnError) {
  TestProfileWriter w;
  std::string body(1, static_cast<char>(kFree));
  body += std::string(10, '\x80') + '\x01';  // 11 bytes: more than 64 bits
  body += std::string(3, '\x00');
  const uint64_t at = raw_trace(w, 1, body);
  const ProfileError e = error_of(w);
  EXPECT_EQ(e.offset(), at + kRecords + 1) << e.what();
  EXPECT_NE(e.reason().find("start tick varint is longer than 64 bits"), std::string::npos) << e.what();
}

TEST_F(TraceDecodeTest, TenthVarintByteAboveOneIsAnError) {
  TestProfileWriter w;
  std::string body(1, static_cast<char>(kFree));
  body += std::string(9, '\xff') + '\x02';
  body += std::string(2, '\x00');
  raw_trace(w, 1, body);
  EXPECT_NE(error_of(w).reason().find("longer than 64 bits"), std::string::npos);
}

TEST_F(TraceDecodeTest, UnknownOperationAndReservedBitsAreErrors) {
  {
    TestProfileWriter w;
    const uint64_t at = raw_trace(w, 1, std::string("\x0f\x00\x00\x00\x00", 5));  // kOps = 15
    const ProfileError e = error_of(w);
    EXPECT_EQ(e.offset(), at + kRecords);
    EXPECT_NE(e.reason().find("unknown operation 15"), std::string::npos) << e.what();
  }
  {
    TestProfileWriter w;
    raw_trace(w, 1, std::string("\x41\x00\x00\x00", 4));
    EXPECT_NE(error_of(w).reason().find("reserved bits"), std::string::npos);
  }
}

TEST_F(TraceDecodeTest, StackIdZeroIsAnError) {
  TestProfileWriter w;
  const char body[] = {static_cast<char>(kFree | format::kTraceStack), 0, 0, 0, 0};
  raw_trace(w, 1, std::string(body, sizeof body));
  EXPECT_NE(error_of(w).reason().find("stack id 0 out of range"), std::string::npos);
}

TEST_F(TraceDecodeTest, CountsAndLengthsMustMatch) {
  const std::string two = test::encode_trace(
      {make_record(kFree, 1000000, 1000000, 0x100000), make_record(kFree, 2000000, 1000000, 0x200000)});
  {
    TestProfileWriter w;  // fewer records than the bytes hold
    raw_trace(w, 1, two);
    EXPECT_NE(error_of(w).reason().find("bytes after the last of 1 records"), std::string::npos);
  }
  {
    TestProfileWriter w;  // more records than the bytes hold
    raw_trace(w, 3, two);
    EXPECT_NE(error_of(w).reason().find("record 2: the encoded bytes end before it"), std::string::npos)
        << error_of(w).what();
  }
  {
    TestProfileWriter w;  // header's byte count disagrees with the payload
    raw_trace(w, 2, two, static_cast<uint32_t>(two.size() + 1));
    EXPECT_NE(error_of(w).reason().find("encoded bytes but"), std::string::npos);
  }
  {
    TestProfileWriter w;  // an impossible count is refused before anything is reserved
    raw_trace(w, 0xffffffffu, two);
    EXPECT_NE(error_of(w).reason().find("cannot fit"), std::string::npos);
  }
}

TEST_F(TraceDecodeTest, TicksThatWrapAreAnError) {
  TestProfileWriter w;
  w.trace(1, 0, {make_record(kFree, ~uint64_t{0} - 5, 100, 8)});
  EXPECT_NE(error_of(w).reason().find("overflows 64 bits"), std::string::npos);
}

TEST_F(TraceDecodeTest, StacksAndModulesRoundTrip) {
  TestProfileWriter w;
  w.stacks(2, {{1, {0x401000, 0x402000}}, {2, {0x403000}}});
  w.modules({{0x400000, 0x400000, 0x40ffff, "/usr/bin/prog"}, {0x7f00000000, 0x7f00001000, 0x7f0000ffff, ""}});
  const auto chunks = read_all(w);
  ASSERT_EQ(chunks.size(), 2u);
  const auto& s = std::get<StacksRecord>(chunks[0].body);
  EXPECT_EQ(s.header.thread_serial, 2u);
  ASSERT_EQ(s.stacks.size(), 2u);
  EXPECT_EQ(s.stacks[0].frames, (std::vector<uint64_t>{0x401000, 0x402000}));
  EXPECT_EQ(s.stacks[1].record.stack_id, 2u);
  const auto& m = std::get<ModulesRecord>(chunks[1].body);
  ASSERT_EQ(m.modules.size(), 2u);
  EXPECT_EQ(m.modules[0].path, "/usr/bin/prog");
  EXPECT_EQ(m.modules[1].record.start, 0x7f00001000u);
  EXPECT_EQ(m.modules[1].path, "");
}

TEST_F(TraceDecodeTest, DamagedStacksAndModulesAreErrors) {
  {
    TestProfileWriter w;  // depth beyond the payload
    format::StacksHeader h{1, 1};
    format::StackRecord r{5, 1000, 0, 0};
    std::string payload(test::as_bytes(h));
    payload += test::as_bytes(r);
    payload += std::string(16, '\0');
    w.chunk(kStacks, payload);
    EXPECT_NE(error_of(w).reason().find("stack 0 frames: 1000 entries of 8 bytes do not fit"), std::string::npos)
        << error_of(w).what();
  }
  {
    TestProfileWriter w;
    w.stacks(1, {{0, {1}}});
    EXPECT_NE(error_of(w).reason().find("id 0 is reserved"), std::string::npos);
  }
  {
    TestProfileWriter w;  // path longer than what is left
    format::ModulesHeader h{1, 0};
    format::ModuleRecord r{0, 0, 10, 500, 0};
    std::string payload(test::as_bytes(h));
    payload += test::as_bytes(r);
    payload += "abc";
    w.chunk(kModules, payload);
    EXPECT_NE(error_of(w).reason().find("module 0 path: needs 500 bytes"), std::string::npos) << error_of(w).what();
  }
  {
    TestProfileWriter w;
    w.modules({{0, 100, 50, "x"}});
    EXPECT_NE(error_of(w).reason().find("below start"), std::string::npos);
  }
  {
    TestProfileWriter w;  // a count that cannot fit
    format::ModulesHeader h{0x10000000, 0};
    w.chunk(kModules, test::as_bytes(h));
    EXPECT_NE(error_of(w).reason().find("cannot fit"), std::string::npos);
  }
}

TEST_F(TraceDecodeTest, ProfileIndexesTraceChunksAndSharesEqualStacks) {
  TestProfileWriter w;
  w.trace(1, 0, {make_record(kMalloc, 10, 5, 0x1000, 16), make_record(kFree, 30, 5, 0x1000)}, 10);
  w.stacks(1, {{1, {0xa, 0xb}}});
  w.stacks(2, {{1, {0xc}}, {2, {0xa, 0xb}}});
  w.modules({{0, 0, 0xfff, "/a"}});
  w.modules({{0, 0, 0xfff, "/a"}, {0, 0x1000, 0x1fff, "/b"}});
  const Profile p = load(w);
  ASSERT_EQ(p.trace_chunks.size(), 1u);
  EXPECT_EQ(p.trace_chunks.at(1).at(0).count, 2u);
  EXPECT_EQ(p.trace_chunks.at(1).at(0).last_tick, 30u);
  EXPECT_EQ(p.trace_records_read, 2u);
  EXPECT_TRUE(p.trace_mode());
  EXPECT_EQ(p.stacks.stacks().size(), 2u);
  EXPECT_EQ(p.stacks.find(1, 1), p.stacks.find(2, 2));
  EXPECT_NE(p.stacks.find(2, 1), p.stacks.find(2, 2));
  EXPECT_EQ(p.stacks.find(1, 2), kNoStack);
  EXPECT_EQ(p.stacks.find(1, 0), kNoStack);
  EXPECT_EQ(p.modules.modules().size(), 2u);
  EXPECT_EQ(p.modules.find(0x1800), 1);
  EXPECT_EQ(p.modules.find(0x2000), -1);
}

// Records every step as (phase, thread, index, tick).
struct StepLog : TraceVisitor {
  std::vector<std::tuple<char, uint32_t, uint64_t, uint64_t>> steps;
  void enter(const TraceCall& c) override { steps.emplace_back('E', c.thread, c.index, c.enter_tick); }
  void exit(const TraceCall& c) override { steps.emplace_back('X', c.thread, c.index, c.exit_tick); }
};

TEST_F(TraceDecodeTest, MergeVisitsStepsInTickOrderAcrossChunksAndThreads) {
  TestProfileWriter w;
  // Thread 2's later chunk comes first in the file; thread 1's chunks are split.
  w.trace(2, 2, {make_record(kFree, 400, 10, 0x10)}, 0);
  w.trace(1, 0, {make_record(kMalloc, 100, 50, 0x10, 8)}, 0);
  w.trace(2, 0, {make_record(kMalloc, 120, 10, 0x20, 8), make_record(kFree, 150, 0, 0x20)}, 0);
  w.trace(1, 1, {make_record(kMalloc, 150, 100, 0x30, 8)}, 0);
  const Profile p = load(w);
  StepLog log;
  TraceVisitor* visitors[] = {&log};
  const TraceMergeStats stats = merge_trace(p, visitors);
  using S = std::tuple<char, uint32_t, uint64_t, uint64_t>;
  const std::vector<S> expected = {
      S{'E', 1, 0, 100}, S{'E', 2, 0, 120}, S{'X', 2, 0, 130},
      // At tick 150 enters come before exits, then lower serials; each thread keeps its order.
      S{'E', 2, 1, 150}, S{'X', 1, 0, 150}, S{'E', 1, 1, 150}, S{'X', 2, 1, 150},
      S{'X', 1, 1, 250}, S{'E', 2, 2, 400}, S{'X', 2, 2, 410}};
  EXPECT_EQ(log.steps, expected);
  EXPECT_EQ(stats.calls, 5u);
  EXPECT_EQ(stats.threads, 2u);
  EXPECT_EQ(stats.first_tick, 100u);
  EXPECT_EQ(stats.last_tick, 410u);
  EXPECT_EQ(stats.missing, 0u);
}

TEST_F(TraceDecodeTest, MergeCountsGapsRepeatsAndClockSteps) {
  TestProfileWriter w;
  w.trace(1, 0, {make_record(kMalloc, 100, 50, 0x10, 8), make_record(kMalloc, 200, 10, 0x20, 8)});
  w.trace(1, 1, {make_record(kMalloc, 200, 10, 0x20, 8)});   // repeats index 1
  w.trace(1, 5, {make_record(kMalloc, 300, 10, 0x30, 8)});   // indices 2..4 lost
  w.trace(2, 0, {make_record(kMalloc, 500, 10, 0x40, 8)}, 0);
  w.trace(2, 1, {make_record(kMalloc, 450, 10, 0x50, 8)}, 0);  // before its predecessor's exit
  const Profile p = load(w);
  StepLog log;
  TraceVisitor* visitors[] = {&log};
  const TraceMergeStats stats = merge_trace(p, visitors);
  EXPECT_EQ(stats.calls, 5u);
  EXPECT_EQ(stats.repeated, 1u);
  EXPECT_EQ(stats.missing, 3u);
  EXPECT_EQ(stats.reordered, 1u);
  EXPECT_EQ(log.steps.back(), (std::tuple<char, uint32_t, uint64_t, uint64_t>{'X', 2, 1, 520}));
}

}  // namespace
}  // namespace allocscope
