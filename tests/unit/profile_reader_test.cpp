// ProfileReader: chunk framing, checksums, payload validation, truncation.
#include "profile/profile_reader.h"

#include <gtest/gtest.h>

#include <cstring>

#include "allocscope/buckets.h"
#include "allocscope/ops.h"
#include "temp_dir.h"
#include "test_profile_writer.h"

namespace allocscope {
namespace {

using test::make_calibration;
using test::make_event;
using test::make_row;
using test::make_stats_header;
using test::TestProfileWriter;

constexpr uint16_t kThreadStats = static_cast<uint16_t>(format::ChunkType::ThreadStats);
constexpr uint16_t kEvents = static_cast<uint16_t>(format::ChunkType::Events);
constexpr uint16_t kProcess = static_cast<uint16_t>(format::ChunkType::Process);
constexpr uint64_t kFirstChunk = sizeof(format::FileHeader);

class ProfileReaderTest : public ::testing::Test {
 protected:
  // Saves `writer` and reads every chunk; warnings are collected in `warnings`.
  std::vector<Chunk> read_all(const TestProfileWriter& writer) {
    writer.save(path_);
    ProfileReader reader(path_, collect());
    std::vector<Chunk> chunks;
    for (Chunk chunk; reader.next(chunk);) chunks.push_back(chunk);
    truncated_at_ = reader.truncated_at();
    skipped_ = reader.skipped_chunks();
    return chunks;
  }

  // Reads `writer`'s file and returns the ProfileError it must raise.
  ProfileError read_error(const TestProfileWriter& writer) {
    try {
      read_all(writer);
    } catch (const ProfileError& error) {
      return error;
    }
    ADD_FAILURE() << "no ProfileError";
    return ProfileError("", std::nullopt, "");
  }

  ProfileError read_error_of_bytes(const std::string& bytes) {
    save_bytes(bytes);
    try {
      ProfileReader reader(path_, collect());
      for (Chunk chunk; reader.next(chunk);) {
      }
    } catch (const ProfileError& error) {
      return error;
    }
    ADD_FAILURE() << "no ProfileError";
    return ProfileError("", std::nullopt, "");
  }

  void save_bytes(const std::string& bytes) {
    TestProfileWriter writer;
    writer.bytes() = bytes;
    writer.save(path_);
  }

  WarningSink collect() {
    return [this](std::string_view message) { warnings_.emplace_back(message); };
  }

  // A profile with one chunk of each kind.
  static TestProfileWriter complete_profile() {
    TestProfileWriter w;
    format::ProcessInfo info{};
    info.pid = 4242;
    info.ppid = 1;
    info.libc = static_cast<uint8_t>(format::Libc::Glibc);
    w.process(info, "/usr/bin/prog", std::string("prog\0--flag\0x y", 15), "/lib/libc.so.6", "2.36");
    w.calibration(make_calibration(3'000'000'000));
    w.thread_stats(make_stats_header(1, 1, format::kLastPart),
                   {make_row(0, 10, 5, 60, {{7, 0, 3}, {9, 0, 2}}), make_row(1, 10, 4, 48)});
    w.events(1, 0, {make_event(0, 12, 100, 30), make_event(1, 12, 200, 40)});
    format::ProcessEnd end{};
    end.threads_seen = 1;
    end.end_mono_ns = 99;
    w.process_end(end);
    w.note("shim says hi");
    return w;
  }

  test::TempDir dir_;
  std::filesystem::path path_ = dir_.file("profile.asp");
  std::vector<std::string> warnings_;
  std::optional<uint64_t> truncated_at_;
  uint64_t skipped_ = 0;
};

TEST_F(ProfileReaderTest, RoundTripsEveryChunkType) {
  const auto chunks = read_all(complete_profile());
  ASSERT_EQ(chunks.size(), 6u);
  EXPECT_EQ(chunks[0].offset, kFirstChunk);

  const auto& process = std::get<ProcessRecord>(chunks[0].body);
  EXPECT_EQ(process.info.pid, 4242u);
  EXPECT_EQ(process.exe, "/usr/bin/prog");
  EXPECT_EQ(process.args, (std::vector<std::string>{"prog", "--flag", "x y"}));
  EXPECT_EQ(process.allocator, "/lib/libc.so.6");
  EXPECT_EQ(process.libc_version, "2.36");

  EXPECT_EQ(std::get<format::Calibration>(chunks[1].body).tick_hz, 3'000'000'000u);

  const auto& stats = std::get<ThreadStatsRecord>(chunks[2].body);
  EXPECT_EQ(stats.header.thread_serial, 1u);
  ASSERT_EQ(stats.rows.size(), 2u);
  EXPECT_EQ(stats.rows[0].row.calls, 5u);
  ASSERT_EQ(stats.rows[0].bins.size(), 2u);
  EXPECT_EQ(stats.rows[0].bins[1].bin, 9u);
  EXPECT_EQ(stats.rows[0].bins[1].count, 2u);
  EXPECT_TRUE(stats.rows[1].bins.empty());

  const auto& events = std::get<EventsRecord>(chunks[3].body);
  ASSERT_EQ(events.events.size(), 2u);
  EXPECT_EQ(events.events[1].duration_ticks, 40u);

  EXPECT_EQ(std::get<format::ProcessEnd>(chunks[4].body).end_mono_ns, 99u);
  EXPECT_EQ(std::get<NoteRecord>(chunks[5].body).text, "shim says hi");
  EXPECT_FALSE(truncated_at_);
  EXPECT_TRUE(warnings_.empty());
}

TEST_F(ProfileReaderTest, ArgsWithATrailingNulAreTheSame) {
  TestProfileWriter w;
  w.process({}, "", std::string("a\0b\0", 4), "", "");
  const auto chunks = read_all(w);
  EXPECT_EQ(std::get<ProcessRecord>(chunks.at(0).body).args, (std::vector<std::string>{"a", "b"}));
}

TEST_F(ProfileReaderTest, SkipsUnknownChunkTypesWithAGoodChecksum) {
  TestProfileWriter w;
  w.chunk(77, "from a newer writer");
  w.note("after");
  const auto chunks = read_all(w);
  ASSERT_EQ(chunks.size(), 1u);
  EXPECT_EQ(std::get<NoteRecord>(chunks[0].body).text, "after");
  EXPECT_EQ(skipped_, 1u);
}

TEST_F(ProfileReaderTest, UnknownChunkTypeWithABadChecksumIsAnError) {
  TestProfileWriter w;
  format::ChunkHeader h{format::kChunkMagic, 77, 0, 5, 0, test::checksum("hello") ^ 1};
  const uint64_t at = w.raw_chunk(test::sealed(h), "hello");
  const ProfileError error = read_error(w);
  EXPECT_EQ(error.offset(), at);
  EXPECT_NE(error.reason().find("checksum"), std::string::npos);
}

TEST_F(ProfileReaderTest, BitFlipInAPayloadNamesTheChunkOffset) {
  TestProfileWriter w = complete_profile();
  const auto chunks = read_all(w);
  const uint64_t events_at = chunks[3].offset;
  w.bytes()[events_at + sizeof(format::ChunkHeader) + 20] ^= 0x10;
  const ProfileError error = read_error(w);
  EXPECT_EQ(error.offset(), events_at);
  EXPECT_EQ(error.file(), path_.string());
  EXPECT_NE(error.reason().find("Events chunk: checksum mismatch"), std::string::npos) << error.what();
  EXPECT_EQ(std::string(error.what()),
            path_.string() + ": offset " + std::to_string(events_at) + ": " + error.reason());
}

TEST_F(ProfileReaderTest, CutInsideAPayloadKeepsEveryWholeChunk) {
  TestProfileWriter w = complete_profile();
  const auto chunks = read_all(w);
  const uint64_t note_at = chunks.back().offset;
  w.bytes().resize(w.size() - 3);  // the Note's payload is incomplete
  const auto kept = read_all(w);
  EXPECT_EQ(kept.size(), chunks.size() - 1);
  EXPECT_EQ(truncated_at_, note_at);
  ASSERT_EQ(warnings_.size(), 1u);
  EXPECT_NE(warnings_[0].find("offset " + std::to_string(note_at)), std::string::npos) << warnings_[0];
}

TEST_F(ProfileReaderTest, CutInsideAChunkHeaderKeepsEveryWholeChunk) {
  TestProfileWriter w = complete_profile();
  const uint64_t whole = w.size();
  w.note("lost");
  w.bytes().resize(whole + 10);
  const auto kept = read_all(w);
  EXPECT_EQ(kept.size(), 6u);
  EXPECT_EQ(truncated_at_, whole);
  EXPECT_EQ(warnings_.size(), 1u);
}

TEST_F(ProfileReaderTest, ZeroFilledTailIsACutNotDamage) {
  TestProfileWriter w = complete_profile();
  const uint64_t whole = w.size();
  w.bytes().append(100, '\0');
  EXPECT_EQ(read_all(w).size(), 6u);
  EXPECT_EQ(truncated_at_, whole);
}

TEST_F(ProfileReaderTest, HeaderOnlyFileIsAnEmptyProfile) {
  EXPECT_TRUE(read_all(TestProfileWriter{}).empty());
  EXPECT_FALSE(truncated_at_);
}

TEST_F(ProfileReaderTest, BadChunkMagicIsAnError) {
  TestProfileWriter w = complete_profile();
  const uint64_t at = w.size();
  w.bytes().append("garbage that is long enough for a chunk header");
  const ProfileError error = read_error(w);
  EXPECT_EQ(error.offset(), at);
  EXPECT_NE(error.reason().find("bad chunk magic"), std::string::npos);
}

TEST_F(ProfileReaderTest, EmptyFileIsNotAProfile) {
  const ProfileError error = read_error_of_bytes("");
  EXPECT_FALSE(error.offset());
  EXPECT_NE(error.reason().find("not an allocscope profile"), std::string::npos);
}

TEST_F(ProfileReaderTest, ForeignFileIsNotAProfile) {
  const ProfileError text = read_error_of_bytes("#!/bin/sh\necho this is a shell script, not a profile\n");
  EXPECT_NE(text.reason().find("not an allocscope profile"), std::string::npos);
  const ProfileError tiny = read_error_of_bytes("ALC");
  EXPECT_NE(tiny.reason().find("not an allocscope profile"), std::string::npos);
}

TEST_F(ProfileReaderTest, WrongMagicIsNotAProfile) {
  TestProfileWriter w = complete_profile();
  w.bytes()[0] = 'X';
  EXPECT_NE(read_error(w).reason().find("not an allocscope profile"), std::string::npos);
}

TEST_F(ProfileReaderTest, OtherVersionIsRefused) {
  const ProfileError error = read_error(TestProfileWriter(format::kVersion + 1));
  EXPECT_EQ(error.offset(), offsetof(format::FileHeader, version));
  EXPECT_NE(error.reason().find("unsupported format version 2"), std::string::npos) << error.what();
}

TEST_F(ProfileReaderTest, FileHeaderCutShortIsAnError) {
  TestProfileWriter w;
  w.bytes().resize(20);
  EXPECT_NE(read_error(w).reason().find("file header cut short"), std::string::npos);
}

TEST_F(ProfileReaderTest, LongerHeaderOfANewerWriterIsSkipped) {
  TestProfileWriter w;
  format::FileHeader header;
  std::memcpy(&header, w.bytes().data(), sizeof header);
  header.header_size = sizeof header + 16;
  w.bytes().assign(test::as_bytes(header));
  w.bytes().append(16, '\x7f');
  w.note("after a long header");
  const auto chunks = read_all(w);
  ASSERT_EQ(chunks.size(), 1u);
  EXPECT_EQ(chunks[0].offset, sizeof header + 16);
}

TEST_F(ProfileReaderTest, HugePayloadSizeIsDamageEvenAtTheEnd) {
  TestProfileWriter w;
  format::ChunkHeader h{format::kChunkMagic, kThreadStats, 0, format::kMaxChunkPayload + 1, 0, 0};
  w.raw_chunk(test::sealed(h), "");
  const ProfileError error = read_error(w);
  EXPECT_EQ(error.offset(), kFirstChunk);
  EXPECT_NE(error.reason().find("exceeds"), std::string::npos);
}

TEST_F(ProfileReaderTest, RowCountBeyondThePayloadIsAnErrorNotAnAllocation) {
  auto header = make_stats_header(1, 1, format::kLastPart);
  header.n_rows = 0xFFFFFFFF;
  TestProfileWriter w;
  w.chunk(kThreadStats, test::as_bytes(header));  // valid checksum, impossible count
  const ProfileError error = read_error(w);       // a bad_alloc would escape this
  EXPECT_EQ(error.offset(), kFirstChunk + sizeof(format::ChunkHeader));
  EXPECT_NE(error.reason().find("4294967295 rows cannot fit"), std::string::npos) << error.what();
}

TEST_F(ProfileReaderTest, BinCountBeyondThePayloadIsAnError) {
  auto header = make_stats_header(1, 1, format::kLastPart);
  header.n_rows = 1;
  format::StatsRow row{};
  row.n_bins = 60000;
  std::string payload(test::as_bytes(header));
  payload.append(test::as_bytes(row));
  TestProfileWriter w;
  w.chunk(kThreadStats, payload);
  EXPECT_NE(read_error(w).reason().find("latency bins"), std::string::npos);
}

TEST_F(ProfileReaderTest, BytesAfterTheLastRowAreAnError) {
  auto header = make_stats_header(1, 1, format::kLastPart);
  std::string payload(test::as_bytes(header));
  payload.append(8, '\0');
  TestProfileWriter w;
  w.chunk(kThreadStats, payload);
  EXPECT_NE(read_error(w).reason().find("unexpected bytes"), std::string::npos);
}

TEST_F(ProfileReaderTest, EventCountMustMatchThePayload) {
  format::EventsHeader header{1, 1000000, 0};
  std::string payload(test::as_bytes(header));
  payload.append(test::as_bytes(make_event(0, 8, 1, 1)));
  TestProfileWriter w;
  w.chunk(kEvents, payload);
  EXPECT_NE(read_error(w).reason().find("1000000 events need"), std::string::npos);
}

TEST_F(ProfileReaderTest, StringLengthsMustMatchThePayload) {
  format::ProcessInfo info{};
  info.exe_len = 0x7FFFFFFF;
  TestProfileWriter w;
  w.chunk(kProcess, std::string(test::as_bytes(info)) + "/bin/true");
  EXPECT_NE(read_error(w).reason().find("string lengths"), std::string::npos);
}

TEST_F(ProfileReaderTest, FixedPayloadsMustHaveTheirExactSize) {
  TestProfileWriter w;
  w.chunk(static_cast<uint16_t>(format::ChunkType::ProcessEnd), std::string(sizeof(format::ProcessEnd) + 1, '\0'));
  EXPECT_NE(read_error(w).reason().find("ProcessEnd"), std::string::npos);
}

TEST_F(ProfileReaderTest, OutOfRangeIndicesAreErrors) {
  TestProfileWriter bucket;
  bucket.thread_stats(make_stats_header(1, 1, format::kLastPart), {make_row(0, kSizeBuckets, 1, 1)});
  EXPECT_NE(read_error(bucket).reason().find("size bucket 252 out of range"), std::string::npos);

  TestProfileWriter op;
  op.thread_stats(make_stats_header(1, 1, format::kLastPart), {make_row(kOpSlots, 1, 1, 1)});
  EXPECT_NE(read_error(op).reason().find("operation 16 out of range"), std::string::npos);

  TestProfileWriter bin;
  bin.thread_stats(make_stats_header(1, 1, format::kLastPart), {make_row(0, 1, 1, 1, {{kLatencyBins, 0, 1}})});
  EXPECT_NE(read_error(bin).reason().find("latency bin 160 out of range"), std::string::npos);

  TestProfileWriter clock;
  auto calibration = make_calibration(1'000'000'000);
  calibration.clock = 9;
  clock.calibration(calibration);
  EXPECT_NE(read_error(clock).reason().find("unknown clock"), std::string::npos);

  TestProfileWriter zero_hz;
  zero_hz.calibration(make_calibration(0));
  EXPECT_NE(read_error(zero_hz).reason().find("tick_hz is 0"), std::string::npos);
}

TEST_F(ProfileReaderTest, TheUnknownSizeBucketIsValid) {
  TestProfileWriter w;
  w.thread_stats(make_stats_header(1, 1, format::kLastPart), {make_row(1, kBucketUnknown, 5, 0)});
  const auto chunks = read_all(w);
  EXPECT_EQ(std::get<ThreadStatsRecord>(chunks.at(0).body).rows.at(0).row.bucket, kBucketUnknown);
  for (unsigned unused : {kSizeBuckets, kBucketUnknown - 1}) {
    TestProfileWriter bad;
    bad.thread_stats(make_stats_header(1, 1, format::kLastPart), {make_row(1, unused, 5, 0)});
    EXPECT_NE(read_error(bad).reason().find("out of range"), std::string::npos) << unused;
  }
}

TEST_F(ProfileReaderTest, MissingFileIsAProfileError) {
  try {
    ProfileReader reader(dir_.file("absent.asp"));
    FAIL() << "opened a missing file";
  } catch (const ProfileError& error) {
    EXPECT_NE(error.reason().find("cannot open"), std::string::npos);
  }
}

TEST_F(ProfileReaderTest, DamagedChunkHeaderIsAnErrorNotACutShortFile) {
  TestProfileWriter w = complete_profile();
  const auto chunks = read_all(w);
  const uint64_t last = chunks.back().offset;
  w.bytes()[last + 8] ^= 0x01;  // payload_size of the last chunk: would look like a file cut short
  const ProfileError error = read_error(w);
  EXPECT_EQ(error.offset(), last);
  EXPECT_NE(error.reason().find("header is damaged"), std::string::npos) << error.what();
}

}  // namespace
}  // namespace allocscope
