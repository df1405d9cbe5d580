// The profile model: snapshot rules, events, clock conversion, totals and their invariants.
#include "profile/profile.h"

#include <gtest/gtest.h>

#include "allocscope/ops.h"
#include "temp_dir.h"
#include "test_profile_writer.h"

namespace allocscope {
namespace {

using format::kLastPart;
using test::make_calibration;
using test::make_event;
using test::make_row;
using test::make_stats_header;
using test::TestProfileWriter;

constexpr unsigned kMalloc = static_cast<unsigned>(Op::Malloc);
constexpr unsigned kFree = static_cast<unsigned>(Op::Free);
constexpr unsigned kCalloc = static_cast<unsigned>(Op::Calloc);

class ProfileTest : public ::testing::Test {
 protected:
  Profile load(const TestProfileWriter& writer, const LoadOptions& options = quiet()) {
    writer.save(path_);
    return load_profile(path_, options);
  }
  static LoadOptions quiet() {
    LoadOptions options;
    options.warn = [](std::string_view) {};
    return options;
  }
  static format::ProcessInfo process_info(uint64_t start_tick, uint64_t start_mono_ns) {
    format::ProcessInfo info{};
    info.pid = 10;
    info.start_tick = start_tick;
    info.start_mono_ns = start_mono_ns;
    return info;
  }

  test::TempDir dir_;
  std::filesystem::path path_ = dir_.file("p.asp");
};

TEST_F(ProfileTest, LaterSnapshotReplacesEarlierOne) {
  TestProfileWriter w;
  w.thread_stats(make_stats_header(1, 1, kLastPart), {make_row(kMalloc, 8, 10, 80)});
  w.thread_stats(make_stats_header(1, 2, kLastPart), {make_row(kMalloc, 8, 25, 200)});
  const Profile p = load(w);
  ASSERT_EQ(p.threads.size(), 1u);
  EXPECT_EQ(p.threads[0].seq, 2u);
  EXPECT_EQ(p.totals_by_op()[kMalloc].counters.calls, 25u);  // replaced, not added
}

TEST_F(ProfileTest, StaleSnapshotIsIgnored) {
  TestProfileWriter w;
  w.thread_stats(make_stats_header(1, 5, kLastPart), {make_row(kMalloc, 8, 50, 400)});
  w.thread_stats(make_stats_header(1, 4, kLastPart), {make_row(kMalloc, 8, 40, 320)});
  const Profile p = load(w);
  EXPECT_EQ(p.threads.at(0).seq, 5u);
  EXPECT_EQ(p.totals_by_op()[kMalloc].counters.calls, 50u);
  EXPECT_EQ(p.stale_snapshots, 1u);
}

TEST_F(ProfileTest, SnapshotsOfDifferentThreadsAreKeptApart) {
  TestProfileWriter w;
  w.thread_stats(make_stats_header(2, 1, kLastPart), {make_row(kMalloc, 8, 7, 56)});
  w.thread_stats(make_stats_header(1, 1, kLastPart), {make_row(kMalloc, 8, 3, 24)});
  const Profile p = load(w);
  ASSERT_EQ(p.threads.size(), 2u);
  EXPECT_EQ(p.threads[0].serial, 1u);  // ordered by serial
  EXPECT_EQ(p.find_thread(2)->total().calls, 7u);
  EXPECT_EQ(p.find_thread(3), nullptr);
  EXPECT_EQ(p.totals_by_op()[kMalloc].counters.calls, 10u);
}

TEST_F(ProfileTest, PartsOfASnapshotAreSummedAndTheLastPartGivesThreadFields) {
  TestProfileWriter w;
  auto part0 = make_stats_header(1, 3, 0);
  part0.events_written = 1;
  auto part1 = make_stats_header(1, 3, 1);
  auto part2 = make_stats_header(1, 3, 2 | kLastPart, format::ThreadState::Exited);
  part2.events_written = 99;
  w.thread_stats(part0, {make_row(kMalloc, 8, 1, 8, {{5, 0, 1}})});
  w.thread_stats(part1, {make_row(kMalloc, 8, 2, 16, {{5, 0, 2}}), make_row(kFree, 8, 3, 24)});
  w.thread_stats(part2, {make_row(kCalloc, 9, 4, 40)});
  const Profile p = load(w);
  ASSERT_EQ(p.threads.size(), 1u);
  const ThreadProfile& t = p.threads[0];
  EXPECT_EQ(t.state, format::ThreadState::Exited);
  EXPECT_EQ(t.events_written, 99u);
  const Cell& malloc_cell = t.cells.at(CellKey{kMalloc, 8});
  EXPECT_EQ(malloc_cell.counters.calls, 3u);
  EXPECT_EQ(malloc_cell.counters.bytes, 24u);
  EXPECT_EQ(malloc_cell.latency.at(5), 3u);
  EXPECT_EQ(t.total().calls, 10u);
  EXPECT_EQ(p.incomplete_snapshots, 0u);
}

TEST_F(ProfileTest, IncompleteFinalSnapshotLeavesThePreviousOne) {
  TestProfileWriter w;
  w.thread_stats(make_stats_header(1, 1, kLastPart), {make_row(kMalloc, 8, 10, 80)});
  w.thread_stats(make_stats_header(1, 2, 0), {make_row(kMalloc, 8, 30, 240)});  // no last part
  const Profile p = load(w);
  EXPECT_EQ(p.threads.at(0).seq, 1u);
  EXPECT_EQ(p.totals_by_op()[kMalloc].counters.calls, 10u);
  EXPECT_EQ(p.incomplete_snapshots, 1u);
}

TEST_F(ProfileTest, ThreadWithOnlyAnIncompleteSnapshotIsAbsent) {
  TestProfileWriter w;
  w.thread_stats(make_stats_header(4, 1, 0), {make_row(kMalloc, 8, 10, 80)});
  EXPECT_TRUE(load(w).threads.empty());
}

TEST_F(ProfileTest, PartsOutOfSequenceAbandonTheSnapshot) {
  TestProfileWriter w;
  w.thread_stats(make_stats_header(1, 1, kLastPart), {make_row(kMalloc, 8, 1, 8)});
  w.thread_stats(make_stats_header(1, 2, 0), {make_row(kMalloc, 8, 5, 40)});
  w.thread_stats(make_stats_header(1, 2, 2 | kLastPart), {make_row(kMalloc, 8, 5, 40)});  // part 1 lost
  const Profile p = load(w);
  EXPECT_EQ(p.threads.at(0).seq, 1u);
  EXPECT_EQ(p.incomplete_snapshots, 2u);  // the abandoned one, and the orphan last part
}

TEST_F(ProfileTest, NewSnapshotStartingAbandonsTheUnfinishedOne) {
  TestProfileWriter w;
  w.thread_stats(make_stats_header(1, 1, 0), {make_row(kMalloc, 8, 5, 40)});
  w.thread_stats(make_stats_header(1, 2, 0 | kLastPart), {make_row(kMalloc, 8, 9, 72)});
  const Profile p = load(w);
  EXPECT_EQ(p.threads.at(0).seq, 2u);
  EXPECT_EQ(p.totals_by_op()[kMalloc].counters.calls, 9u);
  EXPECT_EQ(p.incomplete_snapshots, 1u);
}

TEST_F(ProfileTest, EventsStreamThroughTheCallbackAndAreCountedPerThread) {
  TestProfileWriter w;
  w.thread_stats(make_stats_header(1, 1, kLastPart), {make_row(kMalloc, 8, 3, 24)});
  w.events(1, 0, {make_event(kMalloc, 8, 10, 5), make_event(kMalloc, 8, 20, 6)});
  w.events(2, 0, {make_event(kFree, 8, 30, 7)});
  w.events(1, 2, {make_event(kMalloc, 8, 40, 8)});
  std::vector<uint32_t> durations;
  std::vector<uint64_t> first_indices;
  LoadOptions options = quiet();
  options.on_events = [&](const format::EventsHeader& header, std::span<const format::Event> events) {
    first_indices.push_back(header.first_index);
    for (const auto& e : events) durations.push_back(e.duration_ticks);
  };
  const Profile p = load(w, options);
  EXPECT_EQ(durations, (std::vector<uint32_t>{5, 6, 7, 8}));
  EXPECT_EQ(first_indices, (std::vector<uint64_t>{0, 0, 2}));
  EXPECT_EQ(p.events_read, 4u);
  EXPECT_EQ(p.events_by_thread.at(1), 3u);
  EXPECT_EQ(p.events_by_thread.at(2), 1u);
  EXPECT_EQ(p.threads.at(0).events_read, 3u);
}

TEST_F(ProfileTest, KeepsProcessCalibrationEndAndNotes) {
  TestProfileWriter w;
  w.process(process_info(0, 0), "/bin/x", "x", "", "2.36");
  w.calibration(make_calibration(2'000'000'000));
  w.note("one");
  format::ProcessEnd end{};
  end.threads_seen = 3;
  end.events_dropped = 12;
  w.process_end(end);
  w.note("two");
  const Profile p = load(w);
  ASSERT_TRUE(p.process && p.calibration && p.end);
  EXPECT_EQ(p.process->exe, "/bin/x");
  EXPECT_TRUE(p.complete());
  EXPECT_EQ(p.threads_seen(), 3u);
  EXPECT_EQ(p.events_dropped(), 12u);
  EXPECT_EQ(p.notes, (std::vector<std::string>{"one", "two"}));
}

// A PeerWaits chunk of thread `observer` holding `waits`.
uint64_t peer_waits(TestProfileWriter& w, uint32_t observer, const std::vector<format::PeerWait>& waits) {
  format::PeerWaitsHeader h{};
  h.thread_serial = observer;
  h.count = static_cast<uint32_t>(waits.size());
  std::string payload(reinterpret_cast<const char*>(&h), sizeof h);
  payload.append(reinterpret_cast<const char*>(waits.data()), waits.size() * sizeof(format::PeerWait));
  return w.chunk(static_cast<uint16_t>(format::ChunkType::PeerWaits), payload);
}

format::PeerWait probe_without_a_look(uint32_t observer) {
  format::PeerWait p{};
  p.tick = 100;
  p.peer_serial = observer;
  p.syscall = format::kPeerNoLook;
  p.peer_start_tick = format::kPeerUntimed | format::peer_probe(kMalloc, 20, 30, false, format::kNoProbePeers);
  return p;
}

TEST_F(ProfileTest, ProbesWithoutALookAreKeptAndMustCarryTheirProbe) {
  TestProfileWriter w;
  w.process(process_info(0, 0), "/bin/x", "x", "", "");
  peer_waits(w, 1, {probe_without_a_look(1)});
  const Profile p = load(w);
  ASSERT_EQ(p.peer_waits.size(), 1u);
  EXPECT_EQ(p.peer_waits[0].wait.syscall, format::kPeerNoLook);
  EXPECT_EQ(p.peer_waits[0].observer, 1u);
  const Profile::PeerLookCounts counts = p.peer_look_counts();
  EXPECT_EQ(counts.looks, 0u);  // a probe alone is no look
  EXPECT_EQ(counts.alone, 1u);
  EXPECT_EQ(counts.alone_slept, 0u);

  // A record that says "no look" or "hold" but holds no probe, or a look of unknown state, names
  // its offset.
  for (const int32_t state : {format::kPeerNoLook, format::kPeerHold, format::kPeerHold - 1}) {
    TestProfileWriter bad;
    bad.process(process_info(0, 0), "/bin/x", "x", "", "");
    format::PeerWait wrong = probe_without_a_look(1);
    if (state != format::kPeerHold - 1) wrong.peer_start_tick = format::kPeerUntimed;
    wrong.syscall = state;
    const uint64_t at = peer_waits(bad, 1, {probe_without_a_look(1), wrong});
    try {
      load(bad);
      FAIL() << "accepted state " << state;
    } catch (const ProfileError& error) {
      EXPECT_EQ(error.offset(), at + sizeof(format::ChunkHeader) + sizeof(format::PeerWaitsHeader) + sizeof(format::PeerWait))
          << error.what();
    }
  }
}

TEST_F(ProfileTest, HoldsAreKeptApartFromLooksAndProbes) {
  TestProfileWriter w;
  w.process(process_info(0, 0), "/bin/x", "x", "", "");
  format::PeerWait released = probe_without_a_look(1);
  released.syscall = format::kPeerHold;
  released.peer_serial = 2;  // the releaser
  released.arg0 = 5000;
  released.arg1 = format::hold_outcome(format::HoldOutcome{true, 700, kMalloc, 40, 1, false, 1});
  format::PeerWait through = released;
  through.peer_serial = 1;  // nobody released it: the observer's own serial
  through.arg1 = format::hold_outcome(format::HoldOutcome{false, 0, 0, 0, 1, false, 0});
  peer_waits(w, 1, {released, through, probe_without_a_look(1)});
  const Profile p = load(w);
  ASSERT_EQ(p.peer_waits.size(), 3u);
  const format::HoldOutcome h = format::hold_outcome_of(p.peer_waits[0].wait.arg1);
  EXPECT_TRUE(h.released);
  EXPECT_EQ(h.after_ticks, 700u);
  EXPECT_EQ(h.bucket, 40u);
  EXPECT_EQ(h.ended_inside, 1u);
  const Profile::PeerLookCounts counts = p.peer_look_counts();
  EXPECT_EQ(counts.holds, 2u);
  EXPECT_EQ(counts.holds_released, 1u);
  EXPECT_EQ(counts.alone, 1u);
  EXPECT_EQ(counts.looks, 0u);
}

// A CpuSamples chunk.
uint64_t cpu_samples(TestProfileWriter& w, const format::CpuSamples& c) {
  return w.chunk(static_cast<uint16_t>(format::ChunkType::CpuSamples), std::string(reinterpret_cast<const char*>(&c), sizeof c));
}

TEST_F(ProfileTest, CpuSamplesOfTheHighestSeqCountAndPartsBeyondTheTotalAreAnError) {
  TestProfileWriter w;
  w.process(process_info(0, 0), "/bin/x", "x", "", "");
  format::CpuSamples c{};
  c.thread_serial = 3;
  c.seq = 2;
  c.samples = 10;
  c.in_locks = 4;
  c.in_allocator = 1;
  cpu_samples(w, c);
  format::CpuSamples older = c;
  older.seq = 1;
  older.samples = 5;
  cpu_samples(w, older);  // written later, yet older: ignored
  const Profile p = load(w);
  ASSERT_EQ(p.cpu_samples.count(3), 1u);
  EXPECT_EQ(p.cpu_samples.at(3).samples, 10u);
  EXPECT_EQ(p.cpu_samples.at(3).in_locks, 4u);

  TestProfileWriter bad;
  bad.process(process_info(0, 0), "/bin/x", "x", "", "");
  format::CpuSamples wrong = c;
  wrong.in_shim = 6;  // 4 + 1 + 6 of 10
  const uint64_t at = cpu_samples(bad, wrong);
  try {
    load(bad);
    FAIL() << "accepted parts beyond the total";
  } catch (const ProfileError& error) {
    EXPECT_EQ(error.offset(), at + sizeof(format::ChunkHeader)) << error.what();
    EXPECT_NE(std::string(error.what()).find("CpuSamples"), std::string::npos) << error.what();
  }
}

uint64_t lock_test_chunk(TestProfileWriter& w, format::LockTest t, std::string_view detail) {
  t.detail_len = static_cast<uint32_t>(detail.size());
  std::string payload(test::as_bytes(t));
  payload += detail;
  return w.chunk(static_cast<uint16_t>(format::ChunkType::LockTest), payload);
}

TEST_F(ProfileTest, TheLockTestIsKeptAndAnUnknownStatusOrAShortDetailIsAnError) {
  TestProfileWriter w;
  w.process(process_info(0, 0), "/bin/x", "x", "", "");
  format::LockTest t{};
  t.status = static_cast<uint8_t>(format::LockTestStatus::Ran);
  t.counts[format::kLockTestApart][format::kHeldInMalloc][format::kWatchedStopped] = 7;
  lock_test_chunk(w, t, "allocscope-lockprobe-glibc with libx.so");
  const Profile p = load(w);
  ASSERT_TRUE(p.lock_test);
  EXPECT_EQ(p.lock_test->detail, "allocscope-lockprobe-glibc with libx.so");
  EXPECT_EQ(p.lock_test->test.counts[format::kLockTestApart][format::kHeldInMalloc][format::kWatchedStopped], 7u);

  TestProfileWriter bad;
  bad.process(process_info(0, 0), "/bin/x", "x", "", "");
  format::LockTest wrong = t;
  wrong.status = 9;
  const uint64_t at = lock_test_chunk(bad, wrong, "x");
  try {
    load(bad);
    FAIL() << "accepted an unknown status";
  } catch (const ProfileError& error) {
    EXPECT_EQ(error.offset(), at + sizeof(format::ChunkHeader)) << error.what();
    EXPECT_NE(std::string(error.what()).find("LockTest"), std::string::npos) << error.what();
  }

  TestProfileWriter shorter;
  shorter.process(process_info(0, 0), "/bin/x", "x", "", "");
  format::LockTest longer = t;
  longer.detail_len = 100;  // more than the payload holds
  std::string payload(test::as_bytes(longer));
  payload += "abc";
  shorter.chunk(static_cast<uint16_t>(format::ChunkType::LockTest), payload);
  EXPECT_THROW(load(shorter), ProfileError);
}

TEST_F(ProfileTest, ASecondProcessChunkIsAnError) {
  TestProfileWriter w;
  w.process(process_info(0, 0), "/bin/x", "x", "", "");
  const uint64_t second = w.process(process_info(0, 0), "/bin/y", "y", "", "");
  try {
    load(w);
    FAIL() << "accepted two Process chunks";
  } catch (const ProfileError& error) {
    EXPECT_EQ(error.offset(), second);
  }
}

TEST_F(ProfileTest, ALaterProcessEndSupersedesAnEarlierOne) {
  TestProfileWriter w;
  format::ProcessEnd exec_end{};
  exec_end.exit_kind = static_cast<uint32_t>(format::ExitKind::Exec);
  exec_end.end_mono_ns = 100;
  format::ProcessEnd exit_end{};
  exit_end.exit_kind = static_cast<uint32_t>(format::ExitKind::Exit);
  exit_end.end_mono_ns = 200;
  w.process_end(exec_end);
  w.process_end(exit_end);  // the exec failed and the program went on
  const Profile p = load(w);
  ASSERT_TRUE(p.end);
  EXPECT_EQ(p.end->exit_kind, static_cast<uint32_t>(format::ExitKind::Exit));
  EXPECT_EQ(p.end->end_mono_ns, 200u);
}

TEST_F(ProfileTest, CallsOfUnknownSizeFormTheLastBucket) {
  TestProfileWriter w;
  w.thread_stats(make_stats_header(1, 1, kLastPart),
                 {make_row(kFree, kBucketUnknown, 40, 0), make_row(kFree, 12, 2, 28), make_row(kMalloc, 12, 42, 600)});
  const Profile p = load(w);
  const auto buckets = p.totals_by_bucket();
  ASSERT_EQ(buckets.size(), 2u);
  EXPECT_EQ(buckets[0].bucket, 12u);
  EXPECT_EQ(buckets[1].bucket, kBucketUnknown);
  EXPECT_EQ(buckets[1].by_op[kFree].calls, 40u);
  EXPECT_EQ(buckets[0].total.calls + buckets[1].total.calls, p.threads.at(0).total().calls);
}

TEST_F(ProfileTest, TruncatedFileKeepsDataUpToTheLastWholeChunk) {
  TestProfileWriter w;
  w.thread_stats(make_stats_header(1, 1, kLastPart), {make_row(kMalloc, 8, 10, 80)});
  const uint64_t cut = w.thread_stats(make_stats_header(1, 2, kLastPart), {make_row(kMalloc, 8, 20, 160)});
  w.bytes().resize(w.size() - 1);
  int warnings = 0;
  LoadOptions options;
  options.warn = [&](std::string_view) { ++warnings; };
  const Profile p = load(w, options);
  EXPECT_TRUE(p.truncated());
  EXPECT_EQ(p.truncated_at, cut);
  EXPECT_EQ(warnings, 1);
  EXPECT_EQ(p.totals_by_op()[kMalloc].counters.calls, 10u);
  EXPECT_FALSE(p.complete());
}

TEST_F(ProfileTest, TicksConvertWithTheCalibratedRate) {
  TestProfileWriter w;
  w.calibration(make_calibration(2'000'000'000));
  const Profile p = load(w);
  EXPECT_EQ(p.clock.source(), TickRateSource::Calibration);
  EXPECT_EQ(p.ticks_to_ns(2'000), 1'000u);
  EXPECT_EQ(p.ticks_to_ns(3), 2u);  // 1.5 rounds up
  EXPECT_EQ(p.ticks_to_ns(2'000'000'000'000), 1'000'000'000'000u);
}

TEST_F(ProfileTest, RateIsRefinedOverTheWidestSpan) {
  auto calibration = make_calibration(3'000'000'000);  // start pair: tick 1e6 at mono 5e6 ns
  TestProfileWriter w;
  w.calibration(calibration);
  // 10 s later the clock has really run at 3.0003 GHz.
  auto early = make_stats_header(1, 1, kLastPart);
  early.snapshot_mono_ns = calibration.calib_mono0 + 1'000'000'000;
  early.snapshot_tick = calibration.calib_tick0 + 3'000'300'000;
  format::ProcessEnd end{};
  end.end_mono_ns = calibration.calib_mono0 + 10'000'000'000;
  end.end_tick = calibration.calib_tick0 + 30'003'000'000;
  w.thread_stats(early, {});
  w.process_end(end);
  const Profile p = load(w);
  EXPECT_EQ(p.clock.source(), TickRateSource::Refined);
  EXPECT_NEAR(p.clock.hz(), 3'000'300'000.0, 1.0);
}

TEST_F(ProfileTest, ImplausibleRefinementIsNotUsed) {
  auto calibration = make_calibration(3'000'000'000);
  TestProfileWriter w;
  w.calibration(calibration);
  format::ProcessEnd end{};
  end.end_mono_ns = calibration.calib_mono0 + 1'000'000'000;
  end.end_tick = calibration.calib_tick0 + 6'000'000'000;  // twice the rate: a bad pair
  w.process_end(end);
  const Profile p = load(w);
  EXPECT_EQ(p.clock.source(), TickRateSource::Calibration);
  EXPECT_EQ(p.clock.hz(), 3e9);
}

TEST_F(ProfileTest, MonotonicTicksAreNotRefined) {
  TestProfileWriter w;
  w.calibration(make_calibration(1'000'000'000, format::Clock::Monotonic));
  format::ProcessEnd end{};
  end.end_mono_ns = 9'000'000'000;
  end.end_tick = 9'000'000'001;
  w.process_end(end);
  const Profile p = load(w);
  EXPECT_EQ(p.clock.source(), TickRateSource::Calibration);
  EXPECT_EQ(p.ticks_to_ns(12345), 12345u);
}

TEST_F(ProfileTest, WithoutCalibrationTheRateIsEstimatedOrAssumed) {
  TestProfileWriter estimated;
  estimated.process(process_info(1000, 1'000'000), "", "", "", "");
  auto snapshot = make_stats_header(1, 1, kLastPart);
  snapshot.snapshot_tick = 1000 + 2'000'000'000;
  snapshot.snapshot_mono_ns = 1'000'000 + 1'000'000'000;
  estimated.thread_stats(snapshot, {});
  const Profile p = load(estimated);
  EXPECT_EQ(p.clock.source(), TickRateSource::Estimated);
  EXPECT_NEAR(p.clock.hz(), 2e9, 1.0);

  const Profile bare = load(TestProfileWriter{});
  EXPECT_EQ(bare.clock.source(), TickRateSource::Assumed);
  EXPECT_EQ(bare.ticks_to_ns(77), 77u);
}

TEST_F(ProfileTest, WallTimeComesFromProcessEndElseTheLatestSnapshot) {
  TestProfileWriter w;
  w.process(process_info(0, 1'000), "", "", "", "");
  auto snapshot = make_stats_header(1, 1, kLastPart);
  snapshot.snapshot_mono_ns = 501'000;
  w.thread_stats(snapshot, {});
  EXPECT_EQ(load(w).wall_ns(), 500'000u);
  format::ProcessEnd end{};
  end.end_mono_ns = 2'001'000;
  w.process_end(end);
  EXPECT_EQ(load(w).wall_ns(), 2'000'000u);
  EXPECT_FALSE(load(TestProfileWriter{}).wall_ns());
}

TEST_F(ProfileTest, BucketAndThreadTotalsAddUpToOperationTotals) {
  TestProfileWriter w;
  w.thread_stats(make_stats_header(1, 1, kLastPart),
                 {make_row(kMalloc, 8, 10, 85, {{6, 0, 10}}), make_row(kMalloc, 40, 2, 9000),
                  make_row(kFree, 8, 9, 80)});
  w.thread_stats(make_stats_header(2, 1, kLastPart),
                 {make_row(kMalloc, 8, 1, 8, {{9, 0, 1}}), make_row(kCalloc, 20, 4, 400)});
  const Profile p = load(w);
  const OpTable totals = p.totals_by_op();

  Counters by_op, by_bucket, by_thread;
  for (const auto& s : totals) by_op.add(s.counters);
  for (const auto& b : p.totals_by_bucket()) {
    by_bucket.add(b.total);
    Counters ops;
    for (const auto& c : b.by_op) ops.add(c);
    EXPECT_EQ(ops, b.total) << "bucket " << b.bucket;
  }
  for (const auto& t : p.threads) by_thread.add(t.total());
  EXPECT_EQ(by_op.calls, 26u);
  EXPECT_EQ(by_op.bytes, 9573u);
  EXPECT_EQ(by_bucket, by_op);
  EXPECT_EQ(by_thread, by_op);
  EXPECT_EQ(totals[kMalloc].counters.calls, 13u);
  EXPECT_EQ(totals[kMalloc].latency[6], 10u);
  EXPECT_EQ(totals[kMalloc].latency[9], 1u);

  const auto buckets = p.totals_by_bucket();
  ASSERT_EQ(buckets.size(), 3u);
  EXPECT_EQ(buckets[0].bucket, 8u);
  EXPECT_EQ(buckets[0].by_op[kMalloc].calls, 11u);
  EXPECT_EQ(buckets[0].by_op[kFree].calls, 9u);
}

TEST_F(ProfileTest, ByteSumsBeyond64BitsStayExact) {
  constexpr uint64_t kHuge = ~uint64_t{0};  // e.g. a failed reallocarray whose size saturated
  TestProfileWriter w;
  w.thread_stats(make_stats_header(1, 1, kLastPart),
                 {make_row(kMalloc, kSizeBuckets - 1, 1, kHuge), make_row(kMalloc, kSizeBuckets - 2, 1, kHuge / 2)});
  w.thread_stats(make_stats_header(2, 1, kLastPart), {make_row(kMalloc, kSizeBuckets - 1, 1, kHuge)});
  const Profile p = load(w);
  const ByteCount expected = ByteCount{kHuge} * 2 + kHuge / 2;
  EXPECT_TRUE(p.totals_by_op()[kMalloc].counters.bytes == expected);
  ByteCount by_bucket = 0;
  for (const auto& b : p.totals_by_bucket()) by_bucket += b.total.bytes;
  EXPECT_TRUE(by_bucket == expected);
}

TEST(LatencyQuantile, ReturnsTheTopOfTheBinCappedAtTheMaximum) {
  LatencyHistogram h{};
  h[bucket_of(100)] = 90;
  h[bucket_of(5000)] = 10;
  EXPECT_EQ(latency_quantile_ticks(h, 0.5, 6000), bucket_hi(bucket_of(100)));
  EXPECT_EQ(latency_quantile_ticks(h, 0.9, 6000), bucket_hi(bucket_of(100)));
  EXPECT_EQ(latency_quantile_ticks(h, 0.91, 6000), bucket_hi(bucket_of(5000)));
  EXPECT_EQ(latency_quantile_ticks(h, 1.0, 5001), 5001u);
  EXPECT_EQ(latency_quantile_ticks(LatencyHistogram{}, 0.5, 0), 0u);
}

}  // namespace
}  // namespace allocscope
