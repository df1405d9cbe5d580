// The cost model behind `allocscope report`, on synthetic profiles whose answers are known exactly:
// the fast / slow / waiting split, the serialization index, the error bound, the apportioning of
// frees whose size was not taken, and the pieces it is built from (FineHistogram, WindowSweep).
#include "model/cost_model.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <vector>

#include "allocscope/buckets.h"
#include "allocscope/ops.h"
#include "model/diff.h"
#include "render/diff.h"
#include "util/fine_histogram.h"
#include "mini_json.h"
#include "render/report.h"
#include "temp_dir.h"
#include "test_profile_writer.h"
#include "model/window_sweep.h"

namespace allocscope {
namespace {

using format::kLastPart;

constexpr unsigned kMalloc = static_cast<unsigned>(Op::Malloc);
constexpr unsigned kFree = static_cast<unsigned>(Op::Free);

// One thread of a synthetic profile: its timed calls, plus calls that were counted but not timed.
struct SyntheticThread {
  uint32_t serial = 1;
  std::vector<format::Event> events;
  std::map<std::pair<unsigned, unsigned>, uint64_t> untimed;  // (op, bucket) -> calls
  uint64_t nvcsw = 0;
  uint64_t first_tick = 1'000;
  uint64_t last_tick = 0;  // 0: the end of its last event
};

format::Event event(unsigned op, uint64_t size, uint64_t start, uint32_t duration) {
  return test::make_event(op, size, start, duration);
}

format::Event blocked_event(unsigned op, uint64_t size, uint64_t start, uint32_t duration, uint16_t cpu_us,
                            uint8_t nvcsw = 1) {
  format::Event e = test::make_event(op, size, start, duration);
  e.flags |= format::kEvRusage;
  e.cpu_us = cpu_us;
  e.nvcsw = nvcsw;
  return e;
}

// Writes a profile at 1 GHz (1 tick = 1 ns), no probe overhead, whose thread snapshots agree with
// the events (timed calls, their durations and latency bins), and analyzes it.
class Synthetic {
 public:
  explicit Synthetic(uint32_t sample_every = 1) : sample_every_(sample_every) {}

  CostReport analyze(const std::vector<SyntheticThread>& threads, ReportGrouping by = ReportGrouping::Bucket) {
    write(threads, dir_.file("p.asp"));
    CostOptions options;
    options.by = by;
    return analyze_profile(dir_.file("p.asp"), options);
  }

  std::filesystem::path write(const std::vector<SyntheticThread>& threads, const std::filesystem::path& path) {
    test::TestProfileWriter w;
    format::ProcessInfo info{};
    info.pid = 4242;
    info.libc = static_cast<uint8_t>(format::Libc::Unknown);
    info.start_tick = 0;
    info.start_mono_ns = 0;
    w.process(info, "/bin/synthetic", std::string("synthetic\0", 10), "/lib/libsynthetic.so", "");
    format::Calibration c = test::make_calibration(1'000'000'000);
    c.sample_every = sample_every_;
    if (phased) c.mode_flags |= format::kModeWindowPhase;
    c.window_seed = window_seed;
    c.clock_read_ticks = 0;  // no probe overhead: durations are the calls' own
    c.calib_tick0 = 0;
    c.calib_mono0 = 0;
    c.calib_tick1 = 10'000'000;
    c.calib_mono1 = 10'000'000;
    w.calibration(c);
    uint64_t end = 0;
    for (const auto& t : threads) {
      for (const auto& e : t.events) end = std::max(end, e.start_tick + e.duration_ticks);
    }
    for (const auto& t : threads) {
      std::map<std::pair<unsigned, unsigned>, format::StatsRow> rows;
      std::map<std::pair<unsigned, unsigned>, std::map<uint16_t, uint32_t>> bins;
      uint64_t last = t.first_tick;
      for (const auto& e : t.events) {
        format::StatsRow& r = rows[{e.op, e.bucket}];
        r.op = e.op;
        r.bucket = e.bucket;
        ++r.calls;
        r.bytes += e.size;
        ++r.timed;
        r.timed_ticks += e.duration_ticks;
        r.max_ticks = std::max<uint64_t>(r.max_ticks, e.duration_ticks);
        ++bins[{e.op, e.bucket}][static_cast<uint16_t>(latency_bin_of(e.duration_ticks))];
        last = std::max(last, e.start_tick + e.duration_ticks);
      }
      for (const auto& [key, calls] : t.untimed) {
        format::StatsRow& r = rows[key];
        r.op = static_cast<uint8_t>(key.first);
        r.bucket = static_cast<uint8_t>(key.second);
        r.calls += calls;
        if (key.second < kSizeBuckets) r.bytes += calls * bucket_lo(key.second);
      }
      std::vector<test::Row> out;
      for (const auto& [key, row] : rows) {
        test::Row r;
        r.row = row;
        for (const auto& [bin, count] : bins[key]) r.bins.push_back(format::LatencyBin{bin, 0, count});
        out.push_back(r);
      }
      format::ThreadStatsHeader h = test::make_stats_header(t.serial, 1, kLastPart, format::ThreadState::Exited);
      h.first_tick = t.first_tick;
      h.last_tick = t.last_tick ? t.last_tick : last;
      h.snapshot_tick = end + 1'000;
      h.snapshot_mono_ns = end + 1'000;
      h.rusage = {1'000, 0, 0, 0, t.nvcsw, 0};
      h.events_written = t.events.size();
      w.thread_stats(h, out);
      // Events in chunks of 1,000, as a thread's ring would flush them.
      for (size_t i = 0; i < t.events.size(); i += 1'000) {
        const size_t n = std::min<size_t>(1'000, t.events.size() - i);
        w.events(t.serial, i, std::vector<format::Event>(t.events.begin() + i, t.events.begin() + i + n));
      }
    }
    format::ProcessEnd pe{};
    pe.end_tick = end + 2'000;
    pe.end_mono_ns = end + 2'000;
    pe.threads_seen = static_cast<uint32_t>(threads.size());
    pe.exit_kind = static_cast<uint32_t>(format::ExitKind::Exit);
    w.process_end(pe);
    w.save(path);
    return path;
  }

  test::TempDir dir_;
  bool phased = false;       // windows at the offsets of window_seed (format::kModeWindowPhase)
  uint64_t window_seed = 0;

 private:
  uint32_t sample_every_;
};

// `n` calls of `duration` ticks made alone by one thread, from `start`, one every 2 * duration.
void alone_calls(SyntheticThread& t, unsigned op, uint64_t size, uint64_t start, uint32_t duration, int n) {
  for (int i = 0; i < n; ++i) t.events.push_back(event(op, size, start + 2ull * duration * static_cast<unsigned>(i), duration));
}

const ClassRow& class_with(const CostReport& r, uint64_t size) {
  for (const ClassRow& c : r.classes) {
    if (c.size_known && c.lo <= size && size <= c.hi) return c;
  }
  throw std::runtime_error("no class holds that size");
}

// ---- the fast / slow / waiting split ----

// A thread whose calls of one size bucket number `calls`, `timed` of them timed at `ticks_each`.
ThreadProfile calling_thread(uint32_t serial, uint64_t calls, uint64_t timed, uint64_t ticks_each, uint8_t bucket = 20,
                             uint64_t lifetime = 1'000'000'000) {
  ThreadProfile t;
  t.serial = serial;
  t.snapshot_tick = lifetime;
  Counters& c = t.cells[CellKey{static_cast<uint8_t>(kMalloc), bucket}].counters;
  c.calls = calls;
  c.timed = timed;
  c.timed_ticks = timed * ticks_each;
  return t;
}

bool busy_among(const ThreadProfile& t, std::vector<ThreadProfile> others) {
  others.push_back(t);
  return busy_thread(t, busy_scale(others));
}

TEST(CostModel, BusyThreadsAreOnePercentOrHalfTheMean) {
  // A worker of 8 with an eighth of the calls, a main thread that only joins them (as fast).
  const ThreadProfile worker = calling_thread(1, 12'500, 100, 50), main = calling_thread(2, 900, 10, 50);
  std::vector<ThreadProfile> others(7, worker);
  others.push_back(main);
  EXPECT_TRUE(busy_among(worker, others));
  EXPECT_FALSE(busy_among(main, std::vector<ThreadProfile>(8, worker)));
  // 128 workers alike, each 0.78 % of the calls: busy, all of them (half the mean: 0.39 %).
  const std::vector<ThreadProfile> many(127, calling_thread(1, 78'000, 100, 50));
  EXPECT_TRUE(busy_among(calling_thread(2, 78'000, 100, 50), many));
  EXPECT_FALSE(busy_among(calling_thread(2, 30, 3, 50), many));
  EXPECT_FALSE(busy_among(calling_thread(2, 0, 0, 0), {}));
}

TEST(CostModel, ABusyThreadMayMakeFewCallsThatTakeLong) {
  // One thread asks for small blocks, 8 million calls of 100 ticks; the other for blocks of
  // megabytes, 8,600 calls of 60,000 ticks: a thousandth of the calls, and 39 % of their time.
  const ThreadProfile small = calling_thread(1, 8'000'000, 120'000, 100, 12);
  const ThreadProfile large = calling_thread(2, 8'600, 500, 60'000, 40);
  EXPECT_TRUE(busy_among(large, {small}));
  EXPECT_TRUE(busy_among(small, {large}));
  // As many calls, of 100 ticks: not busy.
  EXPECT_FALSE(busy_among(calling_thread(2, 8'600, 500, 100, 40), {small}));
  // Its calls never timed: the thread's cells have no duration to weigh, and only the count counts.
  EXPECT_FALSE(busy_among(calling_thread(2, 8'600, 0, 0, 40), {small}));
  // A main thread of 20 calls of 60,000 ticks (1.2 M) beside workers of 10 M ticks in all: 11 % of
  // all calls' time, yet a thousandth of its own life of 1,000 M ticks.  Not busy.
  const std::vector<ThreadProfile> workers(4, calling_thread(1, 25'000, 1'000, 100, 12));
  EXPECT_FALSE(busy_among(calling_thread(2, 20, 20, 60'000, 40), workers));
  EXPECT_TRUE(busy_among(calling_thread(2, 20, 20, 60'000, 40, 10'000'000), workers));
}

TEST(CostModel, SplitsKnownCallsExactly) {
  SyntheticThread t;
  // 1,000 calls made alone at 100 ticks: the uncontended cost of malloc(64) is 100.
  alone_calls(t, kMalloc, 64, 10'000, 100, 1'000);
  // A slow call that never left the CPU: 100 fast + 300 slow.
  t.events.push_back(event(kMalloc, 64, 500'000, 400));
  // A call that blocked: 5,000 ticks, of which 1 µs (1,000 ticks) on the CPU: 100 fast,
  // 900 slow, 4,000 waiting.
  t.events.push_back(blocked_event(kMalloc, 64, 600'000, 5'000, 1));
  Synthetic s;
  const CostReport r = s.analyze({t});

  EXPECT_DOUBLE_EQ(r.model.probe_overhead_ns, 0);
  EXPECT_NEAR(r.allocator_time_ns, 1'000 * 100 + 400 + 5'000, 1e-6);
  EXPECT_NEAR(r.split.fast_ns, 1'002 * 100, 1e-6);
  EXPECT_NEAR(r.split.slow_ns, 300 + 900, 1e-6);
  EXPECT_NEAR(r.split.wait_ns, 4'000, 1e-6);
  EXPECT_NEAR(r.contention.wait_share, 4'000.0 / 105'400, 1e-12);
  // Every call was timed: no sampling error.
  EXPECT_DOUBLE_EQ(r.allocator_error_ns, 0);
  ASSERT_EQ(r.classes.size(), 1u);
  EXPECT_EQ(r.classes[0].calls, 1'002u);
  EXPECT_NEAR(r.classes[0].split.wait_ns, 4'000, 1e-6);
  ASSERT_EQ(r.threads_rows.size(), 1u);
  EXPECT_NEAR(r.threads_rows[0].split.slow_ns, 1'200, 1e-6);
  EXPECT_EQ(r.verdict.kind, VerdictKind::Fast);
}

TEST(CostModel, RusageEvidenceOfALatencyBinAppliesToItsOtherCalls) {
  SyntheticThread t;
  alone_calls(t, kMalloc, 64, 10'000, 100, 3'000);
  // 20 sampled calls of 10,000 ticks, each 2 µs on the CPU and blocked: 80 % of that bin waits.
  for (int i = 0; i < 20; ++i) t.events.push_back(blocked_event(kMalloc, 64, 1'000'000 + 20'000ull * i, 10'000, 2));
  // An unsampled call of the same duration: its waiting share comes from the bin, 8,000 ticks.
  t.events.push_back(event(kMalloc, 64, 2'000'000, 10'000));
  Synthetic s;
  const CostReport r = s.analyze({t});
  EXPECT_NEAR(r.split.wait_ns, 21 * 8'000, 1e-6);
  EXPECT_NEAR(r.split.fast_ns, 3'021 * 100, 1e-6);
  EXPECT_NEAR(r.split.slow_ns, 21 * 1'900, 1e-6);
  EXPECT_GE(r.model.evidence_bins, 1u);
  EXPECT_EQ(r.model.rusage_blocked, 20u);
}

TEST(CostModel, WithoutEvidenceTheLongestCallsTakeTheThreadsVoluntarySwitches) {
  SyntheticThread t;
  alone_calls(t, kMalloc, 64, 10'000, 100, 1'000);
  // 10 unsampled calls of 100 µs; the thread switched voluntarily only 5 times: half of them
  // blocked.  A blocked call waits all but its fast part and the cost of blocking (futex wait +
  // wake + 2 syscalls = 280 + 250 + 600 ticks in the test calibration).
  for (int i = 0; i < 10; ++i) t.events.push_back(event(kMalloc, 64, 1'000'000 + 200'000ull * i, 100'000));
  t.nvcsw = 5;
  Synthetic s;
  const CostReport r = s.analyze({t});
  const double per_call_wait = 100'000 - 100 - (280 + 250 + 2 * 300);
  EXPECT_NEAR(r.split.wait_ns, 10 * 0.5 * per_call_wait, 1e-6);
  EXPECT_NEAR(r.model.fallback_blocked_calls, 5, 1e-9);
  EXPECT_NEAR(r.model.block_threshold_ns, 280 + 250 + 600, 1e-9);

  // With no voluntary switch at all, nothing waited: the long calls ran (slow).
  t.nvcsw = 0;
  Synthetic s2;
  const CostReport r2 = s2.analyze({t});
  EXPECT_DOUBLE_EQ(r2.split.wait_ns, 0);
  EXPECT_NEAR(r2.split.slow_ns, 10 * (100'000 - 100), 1e-6);
  EXPECT_EQ(r2.verdict.kind, VerdictKind::Slow);
}

TEST(CostModel, ASlowCallWhoseSwitchesWereReadWaitsOnlyIfItSlept) {
  SyntheticThread t;
  alone_calls(t, kMalloc, 64, 10'000, 100, 10'000);
  // 20 slow calls of 100 µs whose switches the shim read (kEvSwitches): 10 slept, 10 did not
  // (preempted).  One that slept waits all but its fast part and the cost of blocking; the others
  // ran.  The thread's voluntary switches, plenty, change nothing: the calls say.
  for (int i = 0; i < 20; ++i) {
    format::Event e = event(kMalloc, 64, 3'000'000 + 200'000ull * i, 100'000);
    e.flags |= format::kEvSwitches;
    (i % 2 ? e.nivcsw : e.nvcsw) = 1;
    t.events.push_back(e);
  }
  t.nvcsw = 50;
  Synthetic s;
  const CostReport r = s.analyze({t});
  const double wait = 100'000 - 100 - (280 + 250 + 2 * 300);
  EXPECT_NEAR(r.split.wait_ns, 10 * wait, 1e-6);
  EXPECT_NEAR(r.split.slow_ns, 10 * (100'000 - 100 - wait) + 10 * (100'000 - 100), 1e-6);
  // Their latency bin has evidence now: nothing is left to the thread's switch budget.
  EXPECT_NEAR(r.model.fallback_blocked_calls, 0, 1e-9);
  EXPECT_GE(r.model.evidence_bins, 1u);
}

// ---- the serialization index ----

// Threads 1 and 2 each make 100 calls alone (uncontended cost 100 ticks), at separate times.
std::vector<SyntheticThread> two_threads_with_baselines() {
  std::vector<SyntheticThread> threads(2);
  threads[0].serial = 1;
  threads[1].serial = 2;
  alone_calls(threads[0], kMalloc, 64, 10'000, 100, 100);
  alone_calls(threads[1], kMalloc, 64, 40'000, 100, 100);
  return threads;
}

TEST(CostModel, InterleavedCallsThatWaitForEachOtherHaveSerializationIndexOne) {
  auto threads = two_threads_with_baselines();
  // From P on, the threads alternate: each call waits 100 ticks while the other thread's call does
  // its work, then works 100 ticks itself; two calls are always inside, one progresses.
  const uint64_t p = 100'000;
  const int calls = 1'000;
  for (int i = 0; i < calls; ++i) {
    const uint64_t start = i == 0 ? p : p + 100ull * static_cast<unsigned>(i - 1);
    const uint32_t duration = i == 0 ? 100 : 200;
    threads[static_cast<size_t>(i % 2)].events.push_back(event(kMalloc, 64, start, duration));
  }
  Synthetic s;
  const CostReport r = s.analyze(threads);
  ASSERT_TRUE(r.contention.serialization_index.has_value());
  EXPECT_NEAR(*r.contention.serialization_index, 1.0, 1e-3);  // the last call's half alone: 1 + 1/2000
  EXPECT_EQ(r.contention.si_calls, static_cast<uint64_t>(calls));
  EXPECT_EQ(r.contention.max_inside, 2u);
  // Calls that met the other thread took twice as long as calls made alone.
  ASSERT_GE(r.contention.by_inside.size(), 2u);
  EXPECT_NEAR(r.contention.by_inside[1].vs_alone.value_or(0), 2.0, 0.01);
}

TEST(CostModel, FullyOverlappedIndependentCallsHaveSerializationIndexTwo) {
  auto threads = two_threads_with_baselines();
  // Both threads run identical calls side by side: two inside, two progressing.
  for (int i = 0; i < 500; ++i) {
    const uint64_t start = 100'000 + 200ull * static_cast<unsigned>(i);
    threads[0].events.push_back(event(kMalloc, 64, start, 100));
    threads[1].events.push_back(event(kMalloc, 64, start, 100));
  }
  Synthetic s;
  const CostReport r = s.analyze(threads);
  ASSERT_TRUE(r.contention.serialization_index.has_value());
  EXPECT_NEAR(*r.contention.serialization_index, 2.0, 1e-9);
  // Busy: 20,000 ticks with one thread inside (the calls made alone), 50,000 with two.
  EXPECT_NEAR(r.contention.occupancy.value_or(0), (20'000.0 + 2 * 50'000) / 70'000, 1e-9);
}

TEST(CostModel, WaitingBehindASleepingThreadIsNotParallelProgress) {
  auto threads = two_threads_with_baselines();
  // Thread 2 sleeps inside one long call while thread 1 makes calls at its uncontended speed:
  // two threads inside, one progressing.
  threads[1].events.push_back(event(kMalloc, 64, 100'000, 50'000));
  alone_calls(threads[0], kMalloc, 64, 100'100, 100, 200);
  Synthetic s;
  const CostReport r = s.analyze(threads);
  ASSERT_TRUE(r.contention.serialization_index.has_value());
  EXPECT_NEAR(*r.contention.serialization_index, 1.0, 0.01);
}

TEST(CostModel, NoSerializationIndexWhenThreadsNeverMeet) {
  const auto threads = two_threads_with_baselines();
  Synthetic s;
  const CostReport r = s.analyze(threads);
  EXPECT_FALSE(r.contention.serialization_index.has_value());
  EXPECT_EQ(r.contention.contended, 0u);
  EXPECT_EQ(r.contention.max_inside, 1u);
}

// ---- scaling and the error bound ----

// One thread: `timed` calls timed (alternating 100 and 300 ticks), 100,000 calls in all, spread
// over 30 ms (the thread lives long enough for all of them).
double error_with(uint64_t timed) {
  SyntheticThread t;
  const uint64_t spacing = 30'000'000 / timed;
  for (uint64_t i = 0; i < timed; ++i) t.events.push_back(event(kMalloc, 64, 10'000 + spacing * i, i % 2 ? 300 : 100));
  t.untimed[{kMalloc, bucket_of(64)}] = 100'000 - timed;
  Synthetic s(16);
  const CostReport r = s.analyze({t});
  EXPECT_NEAR(r.allocator_time_ns, 100'000 * 200.0, 1e-3);  // the mean, scaled to every call
  EXPECT_EQ(r.calls, 100'000u);
  return r.allocator_error_ns;
}

TEST(CostModel, ErrorBoundShrinksWithMoreTimedCalls) {
  const double few = error_with(100);
  const double many = error_with(10'000);
  EXPECT_GT(few, 0);
  EXPECT_GT(many, 0);
  EXPECT_LT(many, few / 5);  // about 1/sqrt(100) as large, less the finite-population correction
  // The bound is taken over timing windows (docs/analysis.md, "Error bounds"): with a few calls
  // per window it is of the order of the independent-calls formula, two standard errors of the
  // mean of 100 samples of sd 100, times 100,000 calls: 2 * 10 * 100,000 (sd from bin middles).
  const double independent = 2 * 100'000 * std::sqrt(1 - 1e-3) * 10;
  EXPECT_GT(few, 0.3 * independent);
  EXPECT_LT(few, 3 * independent);
}

// ---- frees whose size was not taken ----

TEST(CostModel, UnsizedFreesGoToTheClassesOfTimedFreesInProportion) {
  SyntheticThread t;
  for (int i = 0; i < 10; ++i) t.events.push_back(event(kFree, 32, 10'000 + 1'000ull * i, 50));
  for (int i = 0; i < 20; ++i) t.events.push_back(event(kFree, 1024, 50'000 + 1'000ull * i, 80));
  t.untimed[{kFree, kBucketUnknown}] = 300;
  Synthetic s(16);
  const CostReport r = s.analyze({t});
  const ClassRow& small = class_with(r, 32);
  const ClassRow& large = class_with(r, 1024);
  EXPECT_EQ(small.calls, 10u + 100u);
  EXPECT_EQ(large.calls, 20u + 200u);
  EXPECT_NEAR(small.time_ns, 110 * 50.0, 1e-6);
  EXPECT_NEAR(large.time_ns, 220 * 80.0, 1e-6);
  for (const ClassRow& c : r.classes) EXPECT_TRUE(c.size_known);
  EXPECT_EQ(r.calls, 330u);
}

TEST(CostModel, FreesCountInTheClassesOfTheBlocksMade) {
  // Releases follow the blocks made (release_classes.h), whatever sizes the timed frees carried.
  SyntheticThread t;
  alone_calls(t, kMalloc, 64, 10'000, 100, 100);
  t.untimed[{kFree, kBucketUnknown}] = 100;
  Synthetic s(16);
  const CostReport r = s.analyze({t});
  const ClassRow& c = class_with(r, 64);
  EXPECT_EQ(c.calls, 200u);
  for (const ClassRow& row : r.classes) EXPECT_TRUE(row.size_known || row.calls == 0) << row.label;
  EXPECT_EQ(r.model.blocks_made, 100u);
  EXPECT_EQ(r.model.blocks_released, 100u);
  EXPECT_EQ(r.model.unreleased_blocks, 0u);
}

// ---- diff: coverage is a share of a gap ----

TEST(CostModel, DiffGivesNoCoverageWhenTheRunsTakeTheSameThreadTime) {
  // The same calls in three runs whose one thread lives 1.00 ms, 1.01 ms and 1.50 ms (from its
  // first tick to its snapshot, 1,000 ticks after its last call): the first two take the same
  // thread time within 2 % (no gap to share: a coverage there would be a share of noise), the
  // third does not.
  Synthetic s;
  auto run = [&](uint64_t lifetime, const char* name) {
    SyntheticThread t;
    t.first_tick = 1'000;
    const uint64_t calls_span = 2 * 100 * 99 + 100;  // alone_calls below
    alone_calls(t, kMalloc, 64, t.first_tick + lifetime - 1'000 - calls_span, 100, 100);
    return analyze_profile(s.write({t}, s.dir_.file(name)), CostOptions{});
  };
  const CostReport a = run(1'000'000, "a.asp"), b = run(1'010'000, "b.asp"), c = run(1'500'000, "c.asp");
  const DiffReport same = diff_reports(a, b);
  EXPECT_NEAR(same.measured_delta_ns, 10'000, 1);
  EXPECT_FALSE(same.coverage.has_value());
  EXPECT_FALSE(same.wall_coverage.has_value());
  EXPECT_EQ(same.verdict, DiffVerdict::NoGap);
  EXPECT_NE(diff_verdict_text(same).find("same thread time"), std::string::npos) << diff_verdict_text(same);
  const DiffReport gap = diff_reports(a, c);
  EXPECT_NEAR(gap.measured_delta_ns, 500'000, 1);
  ASSERT_TRUE(gap.coverage.has_value());
  EXPECT_NEAR(*gap.coverage, 0, 1e-9);  // the same calls: the allocator accounts for none of it
}

TEST(CostModel, DiffGivesTheCpuTimeGapsPartsWhateverTheThreadTimeGapSays) {
  // The CPU-time sentence rests on the samples alone: it is there when the thread-time gap has no
  // share (no gap, or no coverage), and says when the samples are too few to split the gap.
  Synthetic s;
  SyntheticThread t;
  alone_calls(t, kMalloc, 64, 10'000, 100, 100);
  const CostReport a = analyze_profile(s.write({t}, s.dir_.file("a.asp")), CostOptions{});
  DiffReport d = diff_reports(a, a);
  ASSERT_FALSE(d.coverage.has_value());
  EXPECT_EQ(diff_verdict_text(d).find("CPU-time gap"), std::string::npos) << diff_verdict_text(d);
  d.cpu_parts = true;
  d.cpu_sampled_delta_ns = 5e9;
  d.cpu_locks_delta_ns = 4e9;
  d.cpu_locks_error_ns = 0.2e9;
  d.cpu_allocator_error_ns = 0.05e9;
  d.cpu_explained = 0.8;
  d.cpu_explained_error = 0.04;
  std::string text = diff_verdict_text(d);
  EXPECT_NE(text.find("together 80 % (± 4 points) of the CPU-time gap"), std::string::npos) << text;
  d.measured_delta_ns = 1e9;  // a thread-time gap without coverage
  text = diff_verdict_text(d);
  EXPECT_NE(text.find("of the CPU-time gap"), std::string::npos) << text;
  d.cpu_explained.reset();
  d.cpu_too_few_samples = true;
  text = diff_verdict_text(d);
  EXPECT_NE(text.find("the samples are too few to split it"), std::string::npos) << text;
  EXPECT_EQ(text.find("of the CPU-time gap"), std::string::npos) << text;
}

TEST(CostModel, DiffSaysThreadsQueueForTheCpusWhenTheProgramHasMoreThreadsThanCpus) {
  // Preemption outside calls rose most: with more calling threads than CPUs it is the program's
  // own queue for the CPUs (its CPU time is the figure to compare), not a busy machine.
  Synthetic s;
  SyntheticThread t;
  alone_calls(t, kMalloc, 64, 10'000, 100, 100);
  CostReport a = analyze_profile(s.write({t}, s.dir_.file("a.asp")), CostOptions{});
  CostReport b = a;
  auto judged = [](uint32_t busy_threads, uint32_t live_threads) {
    ContentionInputs in;
    in.cpus = 2;
    in.busy_threads = busy_threads;
    in.max_live_threads = live_threads;
    return judge_contention(in);
  };
  a.contention.verdict = b.contention.verdict = judged(2, 3);
  EXPECT_FALSE(diff_reports(a, b).threads_queue);  // two calling threads on two CPUs, main waiting
  b.contention.verdict = judged(9, 9);
  const DiffReport q = diff_reports(a, b);
  EXPECT_TRUE(q.threads_queue);
  EXPECT_EQ(q.busy_threads, 9u);
  EXPECT_EQ(q.cpus, 2u);

  DiffReport d = q;
  d.measured_delta_ns = 26e9;
  d.unattributed_off_cpu_ns = 20e9;
  d.verdict = DiffVerdict::OffCpu;  // (diff_reports' judgement: off the CPU > half the gap)
  d.cpu_delta_ns = 6e9;
  d.system_delta_ns = 2.5e9;
  d.base.involuntary_switches = 837;
  d.other.involuntary_switches = 2'416;
  const std::string text = diff_verdict_text(d);
  EXPECT_NE(text.find("9 calling threads on 2 CPUs"), std::string::npos) << text;
  EXPECT_NE(text.find("CPU time changed by +6 s (+2.5 s of it system time)"), std::string::npos) << text;
  EXPECT_EQ(text.find("the machine was busy"), std::string::npos) << text;
  d.threads_queue = false;
  EXPECT_NE(diff_verdict_text(d).find("the machine was busy"), std::string::npos) << diff_verdict_text(d);
}

// ---- the JSON document ----

TEST(CostModel, TheLargestPartIsNamedOnlyWhenItLeadsByMoreThanTheBound) {
  DiffReport d;
  d.measured_delta_ns = 11e9;
  d.split_delta.fast_ns = 4.86e9;
  d.split_delta.wait_ns = 4.77e9;
  d.split_delta.slow_ns = -0.01e9;
  d.attributed_error_ns = 0.5e9;  // the calls' and faults' bounds combined (diff_reports)
  EXPECT_EQ(largest_part(d).kind, DiffPartKind::Fast);
  EXPECT_FALSE(largest_part_clear(d));  // 0.09 s ahead, bound 0.5 s
  d.split_delta.wait_ns = 2e9;
  EXPECT_TRUE(largest_part_clear(d));
  // A faster OTHER: the most negative part leads.
  d.measured_delta_ns = -3e9;
  d.split_delta = {};
  d.split_delta.wait_ns = -2.5e9;
  d.split_delta.fast_ns = -0.2e9;
  EXPECT_EQ(largest_part(d).kind, DiffPartKind::Waiting);
  EXPECT_TRUE(largest_part_clear(d));
  d.attributed_error_ns = std::hypot(0.5e9, 2.5e9);  // faults with a wide bound of their own
  EXPECT_FALSE(largest_part_clear(d));
}

TEST(CostModel, ReportJsonHasTheDocumentedKeys) {
  auto threads = two_threads_with_baselines();
  Synthetic s;
  const test::Json doc = test::parse_json(report_json(s.analyze(threads)));
  for (const char* key : {"schema", "allocator_time_ns", "allocator_time_error_ns", "allocator_share", "wall_ns",
                          "thread_time_ns", "serialization_index", "wait_share", "fast_ns", "slow_ns", "wait_ns",
                          "classes", "per_thread", "contention", "verdict", "model", "calls", "threads"}) {
    EXPECT_TRUE(doc.has(key)) << key;
  }
  const auto& classes = doc["classes"].array();
  ASSERT_FALSE(classes.empty());
  for (const char* key : {"lo", "hi", "label", "calls", "bytes", "time_ns", "wait_ns", "fast_ns", "slow_ns",
                          "p50_ns", "p90_ns", "p99_ns", "p999_ns", "max_ns", "share", "time_error_ns"}) {
    EXPECT_TRUE(classes[0].has(key)) << key;
  }
  EXPECT_TRUE(doc["serialization_index"].is_null());
  EXPECT_EQ(doc["verdict"]["dominant"].string(), "fast");
}

// ---- what the plots draw ----

TEST(CostModel, LatencyHistogramHoldsEveryTimedCallOfTheClass) {
  SyntheticThread t;
  alone_calls(t, kMalloc, 64, 10'000, 100, 300);
  alone_calls(t, kMalloc, 64, 1'000'000, 5'000, 20);
  const CostReport r = Synthetic().analyze({t});
  const ClassRow& c = class_with(r, 64);
  uint64_t calls = 0;
  for (const LatencyBin& b : c.histogram) {
    calls += b.calls;
    EXPECT_LT(b.lo_ns, b.hi_ns);
    EXPECT_NEAR(b.hi_ns / std::max(b.lo_ns, 1.0), b.lo_ns > 0 ? std::exp2(0.25) : 1.0, 1e-9);
  }
  EXPECT_EQ(calls, 320u);
  ASSERT_EQ(c.histogram.size(), 2u);  // 100 ns and 5 µs, a tick being a nanosecond
  EXPECT_EQ(c.histogram[0].calls, 300u);
  EXPECT_LE(c.histogram[0].lo_ns, 100.0);
  EXPECT_GT(c.histogram[0].hi_ns, 100.0);
  EXPECT_EQ(c.histogram[1].calls, 20u);
  EXPECT_LE(c.histogram[1].lo_ns, 5'000.0);
  EXPECT_GT(c.histogram[1].hi_ns, 5'000.0);
}

TEST(CostModel, AClassLongestCallIsItsOwn) {
  // Releases are shared out over the classes in proportion (release_classes.h); the longest of
  // them is one class's call, not every class's.
  SyntheticThread t;
  alone_calls(t, kMalloc, 32, 10'000, 50, 100);
  alone_calls(t, kMalloc, 1024, 100'000, 60, 100);
  alone_calls(t, kFree, 32, 200'000, 40, 100);
  alone_calls(t, kFree, 1024, 300'000, 40, 99);
  t.events.push_back(event(kFree, 1024, 400'000, 40'000));
  const CostReport r = Synthetic().analyze({t});
  const ClassRow& small = class_with(r, 32);
  const ClassRow& large = class_with(r, 1024);
  ASSERT_TRUE(small.latency && large.latency);
  EXPECT_LT(small.latency->max_ns, 1'000.0);
  EXPECT_GE(large.latency->max_ns, 40'000.0);
  EXPECT_GE(small.latency->max_ns, small.latency->p999_ns);
}

TEST(CostModel, TimelineShowsWhoWasInsideWhen) {
  // Five periods of 2^20 ticks (every call timed): thread 1 alone in the first, thread 2 alone in
  // the third, both together in the fourth, each inside half the time; one short call ends the
  // fifth so that the process lasts exactly five periods.
  constexpr uint64_t kPeriod = uint64_t{1} << 20;
  SyntheticThread a, b;
  a.first_tick = 0;
  b.serial = 2;
  b.first_tick = 2 * kPeriod;
  alone_calls(a, kMalloc, 64, 0, 1'000, 500);
  alone_calls(b, kMalloc, 64, 2 * kPeriod, 1'000, 500);
  alone_calls(a, kMalloc, 64, 3 * kPeriod, 1'000, 500);
  alone_calls(b, kMalloc, 64, 3 * kPeriod, 1'000, 500);
  a.events.push_back(event(kMalloc, 64, 5 * kPeriod - 3'000, 1'000));
  const CostReport r = Synthetic().analyze({a, b});
  const Timeline& t = r.timeline;
  ASSERT_EQ(t.slots.size(), 5u);
  EXPECT_NEAR(t.slot_ns, static_cast<double>(kPeriod), 1e-6 * kPeriod);
  EXPECT_DOUBLE_EQ(t.timed_fraction, 1.0);
  const double half = 500'000.0 / static_cast<double>(kPeriod);
  EXPECT_NEAR(t.slots[0].mean_inside, half, 1e-9);
  EXPECT_EQ(t.slots[0].max_inside, 1u);
  EXPECT_EQ(t.slots[1].max_inside, 0u);
  EXPECT_EQ(t.slots[1].calls, 0u);
  EXPECT_NEAR(t.slots[2].mean_inside, half, 1e-9);
  EXPECT_NEAR(t.slots[3].mean_inside, 2 * half, 1e-9);
  EXPECT_EQ(t.slots[3].max_inside, 2u);
  EXPECT_EQ(t.slots[3].calls, 1'000u);
  EXPECT_EQ(t.calls_outside, 0u);

  ASSERT_EQ(t.lanes.size(), 2u);
  EXPECT_EQ(t.lanes[0].serial, 1u);  // the most timed calls first
  EXPECT_EQ(t.lanes[0].timed, 1'001u);
  EXPECT_EQ(t.lanes[1].serial, 2u);
  const std::vector<double> busy_a{half, 0, 0, half, 1'000.0 / kPeriod};
  const std::vector<double> busy_b{0, 0, half, half, 0};
  for (size_t s = 0; s < 5; ++s) {
    EXPECT_NEAR(t.lanes[0].busy[s], busy_a[s], 1e-6) << s;
    EXPECT_NEAR(t.lanes[1].busy[s], busy_b[s], 1e-6) << s;
    EXPECT_EQ(t.lanes[0].waiting[s], 0.0f);
  }
  EXPECT_EQ(t.lanes_left_out, 0u);
}

TEST(CostModel, TimelineFindsTheWindowsAtTheirOffsets) {
  // Four periods of 2^20 ticks timed 1/16 of the time, each window at its own offset: in each, one
  // call that starts 1,000 ticks before the window's end and runs 1,000 ticks past it.  Only its
  // first half was watched.  The process lasts exactly four periods.
  constexpr unsigned kShift = 20;
  constexpr uint64_t kPeriod = uint64_t{1} << kShift;
  constexpr uint64_t kLen = kPeriod / 16;
  constexpr uint64_t kTrim = 5'000;  // 5 µs at 1 GHz
  Synthetic synthetic(16);
  synthetic.phased = true;
  // A seed whose four windows all start well after their period does: a window at offset 0 would
  // tell nothing about where the analyzer looked.
  auto far_from_start = [&](uint64_t seed) {
    for (uint64_t p = 0; p < 4; ++p)
      if (window_offset(p, kLen, kPeriod, seed) < 2 * kLen) return false;
    return true;
  };
  while (!far_from_start(synthetic.window_seed)) ++synthetic.window_seed;
  SyntheticThread t;
  t.first_tick = 0;
  t.last_tick = 4 * kPeriod;
  for (uint64_t p = 0; p < 4; ++p) {
    const uint64_t start = window_start_of(p << kShift, kShift, kLen, true, synthetic.window_seed);
    t.events.push_back(event(kMalloc, 64, start + kLen - 1'000, 2'000));
  }
  const CostReport r = synthetic.analyze({t});
  const Timeline& tl = r.timeline;
  ASSERT_EQ(tl.slots.size(), 4u);
  EXPECT_DOUBLE_EQ(tl.timed_fraction, 1.0 / 16);
  ASSERT_EQ(tl.lanes.size(), 1u);
  for (size_t s = 0; s < 4; ++s) {
    EXPECT_EQ(tl.slots[s].calls, 1u) << s;
    // 1,000 ticks inside over one window's trusted part.
    EXPECT_NEAR(tl.slots[s].mean_inside, 1'000.0 / (kLen - kTrim), 1e-9) << s;
    EXPECT_EQ(tl.slots[s].max_inside, 1u) << s;
    // Half the call's 2,000 ticks over one window's 2^16.
    EXPECT_NEAR(tl.lanes[0].busy[s], 1'000.0 / kLen, 1e-6) << s;
  }
  EXPECT_EQ(r.model.windows, 4u);
}

// ---- building blocks ----

TEST(FineHistogram, ExactBelow1024AndFineAbove) {
  FineHistogram h;
  for (uint64_t v = 1; v <= 100; ++v) h.add(v);
  EXPECT_EQ(h.quantile(0.5), 50u);
  EXPECT_EQ(h.quantile(1.0), 100u);
  EXPECT_DOUBLE_EQ(h.trimmed_mean(1.0), 50.5);
  EXPECT_DOUBLE_EQ(h.trimmed_mean(0.5), 25.5);
  EXPECT_DOUBLE_EQ(h.trimmed_mean(0.5, 10), 820.0 / 50);  // max(0, v - 10) over 1..50
  for (uint64_t v : {1'000ull, 5'000ull, 1'000'000ull, 123'456'789ull}) {
    const unsigned i = FineHistogram::index_of(v);
    EXPECT_LE(FineHistogram::lo_of(i), v);
    EXPECT_GE(FineHistogram::hi_of(i), v);
    EXPECT_LE(static_cast<double>(FineHistogram::hi_of(i) - FineHistogram::lo_of(i)), static_cast<double>(v) / 32);
  }
  EXPECT_EQ(FineHistogram::hi_of(FineHistogram::index_of(~uint64_t{0})), ~uint64_t{0});
}

TEST(WindowSweep, CountsOtherThreadsInsideAndLateEvents) {
  SweepConfig config;
  config.window_shift = 10;
  config.window_len = 1024;
  config.trim = 0;
  config.horizon = 4096;
  std::vector<SweepItem> seen;
  std::vector<WindowInfo> windows;
  WindowSweep sweep(config, [&](std::span<const SweepItem> items, const WindowInfo& info) {
    seen.insert(seen.end(), items.begin(), items.end());
    windows.push_back(info);
  });
  sweep.add(1, std::vector<format::Event>{event(kMalloc, 8, 100, 50), event(kMalloc, 8, 300, 10)});
  sweep.add(2, std::vector<format::Event>{event(kMalloc, 8, 120, 10), event(kMalloc, 8, 200, 10)});
  sweep.add(1, std::vector<format::Event>{event(kMalloc, 8, 10'000, 10)});  // settles window 0
  sweep.add(2, std::vector<format::Event>{event(kMalloc, 8, 500, 10)});     // late
  sweep.finish();
  ASSERT_EQ(seen.size(), 6u);
  EXPECT_EQ(seen[0].event.start_tick, 100u);
  EXPECT_EQ(seen[0].inside, 0);
  EXPECT_EQ(seen[0].contended_ticks, 10u);  // thread 2's call ran from 120 to 130 inside it
  EXPECT_EQ(seen[1].event.start_tick, 120u);
  EXPECT_EQ(seen[1].inside, 1);
  EXPECT_EQ(seen[1].contended_ticks, 10u);
  EXPECT_EQ(seen[2].contended_ticks, 0u);
  EXPECT_EQ(seen[2].inside, 0);
  EXPECT_EQ(seen[4].event.start_tick, 500u);
  EXPECT_EQ(seen[4].inside, kUnknownInside);
  EXPECT_EQ(sweep.totals().late_events, 1u);
  EXPECT_EQ(sweep.totals().ticks_at[2], 10u);
  EXPECT_EQ(sweep.totals().busy_ticks(), 50u + 10u + 10u + 10u);
  ASSERT_EQ(windows.size(), 3u);  // window 0, the late event, window 9
  EXPECT_EQ(windows[0].start, 0u);
  EXPECT_EQ(windows[0].inside_ticks, 50u + 10u + 10u + 10u);
  EXPECT_EQ(windows[0].max_inside, 2u);
  EXPECT_EQ(windows[0].contended_ticks, 10u);
  EXPECT_TRUE(windows[1].late);
  EXPECT_EQ(windows[2].start, 9u * 1024);
  EXPECT_EQ(windows[2].max_inside, 1u);
}

TEST(WindowSweep, TrustsOnlyTheWindowAtItsOffset) {
  SweepConfig config;
  config.window_shift = 12;  // periods of 4,096 ticks
  config.window_len = 256;
  config.phased = true;
  config.window_seed = 0x5eed;
  config.trim = 16;
  config.horizon = 1u << 20;
  // A period whose window lies well inside it, away from both of its ends.
  uint64_t w = 1;
  auto offset = [&](uint64_t window) { return config.window_start(window) - (window << 12); };
  while (offset(w) < 600 || offset(w) > 4'096 - 256 - 600) ++w;
  const uint64_t period = w << 12, ws = config.window_start(w);
  EXPECT_EQ(ws, period + window_offset(w, 256, 4'096, 0x5eed));

  const auto sweep_with = [&](const SweepConfig& c, std::vector<SweepItem>& seen, std::vector<WindowInfo>& windows) {
    WindowSweep sweep(c, [&](std::span<const SweepItem> items, const WindowInfo& info) {
      seen.insert(seen.end(), items.begin(), items.end());
      windows.push_back(info);
    });
    sweep.add(1, std::vector<format::Event>{event(kMalloc, 8, ws + 20, 100), event(kMalloc, 8, ws + 200, 10)});
    sweep.add(2, std::vector<format::Event>{
                     event(kMalloc, 8, period + 20, 10),   // where an unphased window would be
                     event(kMalloc, 8, ws + 5, 10),        // in the window, but in its trim
                     event(kMalloc, 8, ws + 60, 10),       // during thread 1's first call
                     event(kMalloc, 8, ws + 256 + 8, 10),  // after the window's end
                 });
    sweep.finish();
    return sweep.totals();
  };

  std::vector<SweepItem> seen;
  std::vector<WindowInfo> windows;
  const SweepTotals totals = sweep_with(config, seen, windows);
  ASSERT_EQ(windows.size(), 1u);
  EXPECT_EQ(windows[0].start, ws);
  ASSERT_EQ(seen.size(), 6u);
  const std::vector<std::pair<uint64_t, int32_t>> expected{
      {period + 20, kUnknownInside}, {ws + 5, kUnknownInside}, {ws + 20, 0},
      {ws + 60, 1},                  {ws + 200, 0},            {ws + 264, kUnknownInside}};
  for (size_t i = 0; i < expected.size(); ++i) {
    EXPECT_EQ(seen[i].event.start_tick, expected[i].first) << i;
    EXPECT_EQ(seen[i].inside, expected[i].second) << i;
  }
  EXPECT_EQ(totals.classified, 3u);
  EXPECT_EQ(totals.trusted_ticks, 256u - 16u);
  EXPECT_EQ(totals.ticks_at[2], 10u);  // thread 2's call inside thread 1's
  EXPECT_EQ(windows[0].contended_ticks, 10u);

  // The same events read as an unphased profile: the window is the period's first 256 ticks.
  SweepConfig unphased = config;
  unphased.phased = false;
  std::vector<SweepItem> seen0;
  std::vector<WindowInfo> windows0;
  const SweepTotals totals0 = sweep_with(unphased, seen0, windows0);
  ASSERT_EQ(windows0.size(), 1u);
  EXPECT_EQ(windows0[0].start, period);
  EXPECT_EQ(totals0.classified, 1u);
  EXPECT_EQ(seen0[0].inside, 0);
  EXPECT_EQ(totals0.ticks_at[2], 0u);
}

TEST(WindowSweep, ConfigFollowsTheProfilesPhaseFlag) {
  format::Calibration c = test::make_calibration(1'000'000'000);
  c.sample_every = 64;
  c.window_shift = 20;
  c.window_seed = 0;  // a profile written before the flag: reserved, 0
  SweepConfig old = sweep_config_for(c, 1e9);
  EXPECT_FALSE(old.phased);
  EXPECT_EQ(old.window_len, (uint64_t{1} << 20) / 64);
  EXPECT_EQ(old.window_start(5), uint64_t{5} << 20);

  c.mode_flags |= format::kModeWindowPhase;
  c.window_seed = 0xfeed'beef;
  const SweepConfig phased = sweep_config_for(c, 1e9);
  EXPECT_TRUE(phased.phased);
  EXPECT_EQ(phased.window_seed, 0xfeed'beefu);
  for (uint64_t w : {0ull, 5ull, 1'000'000ull}) {
    EXPECT_EQ(phased.window_start(w), window_start_of(w << 20, 20, phased.window_len, true, 0xfeed'beef)) << w;
  }
  // Every call timed: a window is the whole period, whatever the seed.
  c.sample_every = 1;
  EXPECT_EQ(sweep_config_for(c, 1e9).window_start(5), uint64_t{5} << 20);
}

// The trusted part starts twice the shim's longest check gap into a window: 5 µs where the shim
// bounded its gap to 2.5 µs, a quarter of the window where it did not (its gap was window/8).
TEST(WindowSweep, TrimCoversTheShimsLongestCheckGap) {
  format::Calibration c = test::make_calibration(1'000'000'000);  // 1 tick = 1 ns
  c.window_shift = 20;
  c.mode_flags = format::kModeWindowPhase | format::kModeNoticeBounded;
  c.sample_every = 64;  // windows of 16 µs: a quarter is 4 µs
  EXPECT_EQ(sweep_config_for(c, 1e9).trim, (uint64_t{1} << 20) / 64 / 4);
  c.sample_every = 8;  // windows of 131 µs
  EXPECT_EQ(sweep_config_for(c, 1e9).trim, 2 * kCheckGapMaxNs);
  c.mode_flags &= ~format::kModeNoticeBounded;  // written before: checks up to 16 µs apart
  EXPECT_EQ(sweep_config_for(c, 1e9).trim, (uint64_t{1} << 20) / 8 / 4);
  c.sample_every = 16;  // … or 8 µs apart: still more than 5 µs
  EXPECT_EQ(sweep_config_for(c, 1e9).trim, (uint64_t{1} << 20) / 16 / 4);
  c.sample_every = 32;  // … or 4 µs apart: 5 µs covered them
  EXPECT_EQ(sweep_config_for(c, 1e9).trim, 2 * kCheckGapMaxNs);
  c.sample_every = 1;  // every call timed: nothing to notice
  EXPECT_EQ(sweep_config_for(c, 1e9).trim, 0u);
}

}  // namespace
}  // namespace allocscope
