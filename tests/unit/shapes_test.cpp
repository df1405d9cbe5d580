// Shapes of synthetic traces: lifetimes, cross-thread frees, realloc chains, leaks, live bytes,
// concurrency and the serialization index, all with known answers; and diff attribution.
#include "model/shapes.h"
#include "render/shapes.h"
#include "commands/commands.h"

#include <gtest/gtest.h>

#include <random>

#include "allocscope/buckets.h"
#include "allocscope/ops.h"
#include "mini_json.h"
#include "temp_dir.h"
#include "test_profile_writer.h"

namespace allocscope {
namespace {

using test::make_record;
using test::TestProfileWriter;
using test::trace_profile;

constexpr unsigned kMalloc = static_cast<unsigned>(Op::Malloc);
constexpr unsigned kFree = static_cast<unsigned>(Op::Free);
constexpr unsigned kRealloc = static_cast<unsigned>(Op::Realloc);

// Scenario A (see each record): every kind of block fate on two threads.
TestProfileWriter scenario_a(uint64_t free_b_duration = 50, bool complete = true) {
  TestProfileWriter w = trace_profile();
  w.trace(1, 0,
          {
              make_record(kMalloc, 1000, 50, 0x1000, 100),              // A
              make_record(kMalloc, 1100, 10, 0x2000, 200),              // Y
              make_record(kMalloc, 1200, 10, 0x3000, 300),              // Z (leaked)
              make_record(kFree, 1550, 20, 0x1000),                     // A: 500 ns, same thread
              make_record(kMalloc, 2000, 100, 0x4000, 2000),            // B
              make_record(kMalloc, 3000, 10, 0x5000, 16),               // C
              make_record(kRealloc, 3100, 10, 0x5000, 32, 0x5000),      // in place
              make_record(kRealloc, 3200, 10, 0x6000, 64, 0x5000),      // moved
              make_record(kRealloc, 3300, 10, 0x7000, 128, 0x6000),     // moved
              make_record(kFree, 3400, 10, 0x7000),                     // chain of 3 ends
              make_record(kMalloc, 3500, 10, 0x8000, 5000),             // L (leaked)
              make_record(kFree, 3600, 5, 0),                           // free(NULL)
              make_record(kMalloc, 3700, 5, 0, uint64_t{1} << 40, 0, 0, true),  // failed
              make_record(kFree, 3800, 5, 0x9999),                      // not ours
              make_record(kMalloc, 3900, 10, 0xa000, 48),               // R
              make_record(kRealloc, 4000, 10, 0, 0, 0xa000),            // realloc(R, 0) frees R
          },
          1000);
  w.trace(2, 0,
          {
              make_record(kFree, 52100, free_b_duration, 0x4000),       // B: 50 µs, cross thread
              make_record(kFree, 2000000, 30, 0x2000),                  // Y: ~2 ms, cross thread
          },
          52100);
  if (complete) {
    format::ProcessEnd end{};
    end.end_tick = 3000000;
    end.end_mono_ns = 3000000;
    w.process_end(end);
  }
  return w;
}

class ShapesTest : public ::testing::Test {
 protected:
  Profile load(const TestProfileWriter& w, const std::string& name = "p.asp") {
    const auto path = dir_.file(name);
    w.save(path);
    LoadOptions o;
    o.warn = [](std::string_view) {};
    return load_profile(path, o);
  }
  std::filesystem::path save(const TestProfileWriter& w, const std::string& name) {
    const auto path = dir_.file(name);
    w.save(path);
    return path;
  }
  test::TempDir dir_;
};

uint32_t bucket_class(uint64_t size) { return static_cast<uint32_t>(bucket_class_table().class_of(size)); }

TEST_F(ShapesTest, BlockFatesAreCountedExactly) {
  const Profile p = load(scenario_a());
  ASSERT_DOUBLE_EQ(p.clock.hz(), 1e9);
  const TraceAnalysis a = analyze_trace(p);
  const LifetimeResults& l = a.lifetimes;
  EXPECT_EQ(a.table, &bucket_class_table());
  EXPECT_EQ(a.merge.calls, 18u);
  EXPECT_EQ(l.calls, 18u);
  EXPECT_EQ(l.blocks, 10u);
  EXPECT_EQ(l.frees, 5u);
  EXPECT_EQ(l.same_thread_frees, 3u);
  EXPECT_EQ(l.cross_thread_frees, 2u);
  EXPECT_EQ(l.resized, 3u);
  EXPECT_EQ(l.unmatched_frees, 1u);
  EXPECT_EQ(l.null_frees, 1u);
  EXPECT_EQ(l.failed, 1u);
  EXPECT_EQ(l.reused_live, 0u);
  EXPECT_EQ(l.leaked_blocks, 2u);
  EXPECT_EQ(l.leaked_bytes, 5300u);
  EXPECT_EQ(l.live_bytes, 5300u);
  EXPECT_EQ(l.peak_live_bytes, 7548u);
  EXPECT_EQ(l.peak_tick, 3910u);
}

// A trace recorded with --sample N: records with duration 0 were not timed and hold their start
// only.  Thread 2's untimed malloc began (tick 1010) before thread 1's free of the same address
// (1030) and returned it after: visited first, it must wait for that free, and each thread must
// free its own block.  Times of untimed calls are estimated from the timed ones.
TEST_F(ShapesTest, SampledTraceKeepsOwnersAndEstimatesTimes) {
  TestProfileWriter w = trace_profile();
  w.trace(1, 0,
          {
              make_record(kMalloc, 1000, 8, 0x1000, 100),   // timed: 8 ticks
              make_record(kFree, 1030, 0, 0x1000),          // untimed
              make_record(kMalloc, 1100, 0, 0x3000, 100),   // untimed
              make_record(kFree, 1130, 4, 0x3000),          // timed: 4 ticks
          });
  w.trace(2, 0,
          {
              make_record(kMalloc, 1010, 0, 0x1000, 100),   // untimed, overlapping the free above
              make_record(kFree, 1200, 0, 0x1000),          // untimed
          });
  const Profile p = load(w);
  const TraceAnalysis a = analyze_trace(p);
  const LifetimeResults& l = a.lifetimes;
  EXPECT_EQ(l.calls, 6u);
  EXPECT_EQ(l.timed_calls, 2u);
  EXPECT_EQ(l.blocks, 3u);
  EXPECT_EQ(l.frees, 3u);
  EXPECT_EQ(l.cross_thread_frees, 0u);
  EXPECT_EQ(l.same_thread_frees, 3u);
  EXPECT_EQ(l.reused_live, 0u);
  EXPECT_EQ(l.leaked_blocks, 0u);
  // All three blocks are one shape (100 B, < 1 µs, same thread): 3 mallocs, 1 timed at 8 ticks,
  // and 3 frees, 1 timed at 4 ticks: 3 * 8 + 3 * 4.
  uint64_t ticks = 0, calls = 0, timed = 0;
  for (const auto& [key, shape] : l.shapes) {
    ticks += shape.ticks;
    calls += shape.calls;
    timed += shape.timed_calls;
  }
  EXPECT_EQ(calls, 6u);
  EXPECT_EQ(timed, 2u);
  EXPECT_EQ(ticks, 36u);
  // The concurrency figures are those of the timed calls only.
  EXPECT_EQ(a.concurrency.calls, 2u);
  EXPECT_EQ(a.concurrency.untimed_calls, 4u);
  EXPECT_EQ(a.concurrency.inside_ticks, 12u);
}

// A chain at one address: thread 3's untimed malloc began first (1000) but got the address last;
// thread 1 (untimed) and thread 4 (timed) had it in between.  Thread 3's block sits at the address
// too early; the others must wait behind it, not replace it, and every free is its owner's.
TEST_F(ShapesTest, SampledTraceKeepsOwnersBehindAnEarlyBlock) {
  TestProfileWriter w = trace_profile();
  w.trace(3, 0, {make_record(kMalloc, 1000, 0, 0x1000, 64), make_record(kFree, 1100, 0, 0x1000)});
  w.trace(1, 0, {make_record(kMalloc, 1010, 0, 0x1000, 64), make_record(kFree, 1020, 0, 0x1000)});
  w.trace(4, 0, {make_record(kMalloc, 1030, 5, 0x1000, 64), make_record(kFree, 1040, 3, 0x1000)});
  const Profile p = load(w);
  const LifetimeResults l = analyze_trace(p).lifetimes;
  EXPECT_EQ(l.blocks, 3u);
  EXPECT_EQ(l.frees, 3u);
  EXPECT_EQ(l.same_thread_frees, 3u);
  EXPECT_EQ(l.cross_thread_frees, 0u);
  EXPECT_EQ(l.reused_live, 0u);
  EXPECT_EQ(l.unmatched_frees, 0u);
  EXPECT_EQ(l.leaked_blocks, 0u);
}

TEST_F(ShapesTest, ShapesHaveTheirLifetimesThreadsAndCalls) {
  const Profile p = load(scenario_a());
  const LifetimeResults l = analyze_trace(p).lifetimes;
  auto shape = [&](uint64_t size, LifetimeBand band, bool cross) {
    const auto it = l.shapes.find(ShapeKey{bucket_class(size), band, cross});
    return it == l.shapes.end() ? ShapeCounts{} : it->second;
  };
  auto expect = [&](uint64_t size, LifetimeBand band, bool cross, uint64_t calls, uint64_t ticks) {
    const ShapeCounts s = shape(size, band, cross);
    EXPECT_EQ(s.blocks, 1u) << size;
    EXPECT_EQ(s.calls, calls) << size;
    EXPECT_EQ(s.ticks, ticks) << size;
    EXPECT_EQ(s.bytes, size) << size;
  };
  expect(100, LifetimeBand::Under1us, false, 2, 70);
  expect(2000, LifetimeBand::Under100us, true, 2, 150);
  expect(200, LifetimeBand::Under1s, true, 2, 40);
  expect(16, LifetimeBand::Under1us, false, 1, 10);   // ended by a resize: its realloc counts with the next block
  expect(32, LifetimeBand::Under1us, false, 1, 10);
  expect(64, LifetimeBand::Under1us, false, 1, 10);
  expect(128, LifetimeBand::Under1us, false, 2, 20);
  expect(48, LifetimeBand::Under1us, false, 2, 20);   // realloc(R, 0) is its free
  expect(300, LifetimeBand::Leaked, false, 1, 10);
  expect(5000, LifetimeBand::Leaked, false, 1, 10);
  EXPECT_EQ(l.shapes.size(), 10u);
  uint64_t calls = 0;
  for (const auto& [key, s] : l.shapes) calls += s.calls;
  EXPECT_EQ(calls, 18u - 3u);  // all but free(NULL), the failed malloc and the unmatched free

  const ClassLifetimes& a = l.classes[bucket_class(100)];
  EXPECT_EQ(a.freed, 1u);
  EXPECT_EQ(a.same_thread, 1u);
  EXPECT_EQ(a.allocs_between.max(), 2u);  // Y and Z came between A's malloc and its free
  EXPECT_EQ(a.lifetime_ticks.max(), 500u);
  const ClassLifetimes& b = l.classes[bucket_class(2000)];
  EXPECT_EQ(b.cross_thread, 1u);
  EXPECT_EQ(b.allocs_between.max(), 6u);  // thread 1 obtained 6 more blocks before thread 2 freed B
  EXPECT_EQ(b.lifetime_ticks.max(), 50000u);
  EXPECT_EQ(l.classes[bucket_class(5000)].leaked_bytes, 5000u);
  EXPECT_EQ(l.classes[bucket_class(5000)].bands[static_cast<unsigned>(LifetimeBand::Leaked)], 1u);
}

TEST_F(ShapesTest, ReallocGrowthChain) {
  const LifetimeResults l = analyze_trace(load(scenario_a())).lifetimes;
  const ReallocChains& c = l.chains;
  EXPECT_EQ(c.chains, 1u);
  EXPECT_EQ(c.steps, 3u);
  EXPECT_EQ(c.in_place, 1u);
  EXPECT_EQ(c.moved, 2u);
  EXPECT_EQ(c.grew, 3u);
  EXPECT_EQ(c.max_length, 3u);
  EXPECT_EQ(c.by_length, (std::map<uint32_t, uint64_t>{{3, 1}}));
  const ShapeReport r = shape_report(load(scenario_a()), analyze_trace(load(scenario_a())));
  ASSERT_TRUE(r.realloc.mean_growth);
  EXPECT_NEAR(*r.realloc.mean_growth, 8.0, 1e-9);
  EXPECT_NEAR(*r.realloc.mean_step_growth, 2.0, 1e-9);
}

TEST_F(ShapesTest, ReportKeysForReportJson) {
  const Profile p = load(scenario_a());
  const ShapeReport r = shape_report(p, analyze_trace(p));
  EXPECT_TRUE(r.trace);
  EXPECT_TRUE(r.complete);
  EXPECT_EQ(r.peak_live_at_ns, 3910u);
  std::string out;
  JsonWriter w(out);
  w.begin_object();
  write_shape_fields(w, r);
  w.end_object();
  const test::Json j = test::parse_json(out);
  EXPECT_EQ(j["cross_thread_frees"].as_u64(), 2u);
  EXPECT_EQ(j["same_thread_frees"].as_u64(), 3u);
  EXPECT_EQ(j["leaked_bytes"].as_u64(), 5300u);
  EXPECT_EQ(j["leaked_blocks"].as_u64(), 2u);
  EXPECT_EQ(j["peak_live_bytes"].as_u64(), 7548u);
  ASSERT_EQ(j["shapes"].array().size(), 10u);
  const test::Json& top = j["shapes"].array()[0];  // by time: B's shape (150 ns)
  EXPECT_EQ(top["lo"].as_u64(), bucket_lo(bucket_of(2000)));
  EXPECT_EQ(top["hi"].as_u64(), bucket_hi(bucket_of(2000)));
  EXPECT_EQ(top["lifetime"].string(), "<100us");
  EXPECT_TRUE(top["cross_thread"].boolean());
  EXPECT_EQ(top["calls"].as_u64(), 2u);
  EXPECT_EQ(top["time_ns"].as_u64(), 150u);
  const test::Json& t = j["trace"];
  EXPECT_EQ(t["unmatched_frees"].as_u64(), 1u);
  EXPECT_EQ(t["realloc_chains"]["in_place"].as_u64(), 1u);
  EXPECT_EQ(t["concurrency"]["max_inside"].as_u64(), 1u);
  EXPECT_FALSE(t["lifetimes"].array().empty());
  EXPECT_EQ(t["timeline"]["points"].array().size(), 100u);
  // The whole document and the text render too.
  EXPECT_NO_THROW(test::parse_json(shapes_json(r)));
  const std::string text = shapes_text(r);
  EXPECT_NE(text.find("leaked at exit"), std::string::npos) << text;
  EXPECT_NE(text.find("2 blocks, 5.18 KiB"), std::string::npos) << text;
}

TEST_F(ShapesTest, LiveAtTheEndOfAnUnfinishedRecordingIsNotCalledALeak) {
  const Profile p = load(scenario_a(50, false));
  const ShapeReport r = shape_report(p, analyze_trace(p));
  EXPECT_FALSE(r.complete);
  EXPECT_EQ(r.leaked_bytes, 5300u);
  EXPECT_NE(shapes_text(r).find("live at the end"), std::string::npos);
}

TEST_F(ShapesTest, ConcurrencyAndSerializationIndex) {
  TestProfileWriter w = trace_profile();
  std::vector<trace::Record> t1, t2;
  uint64_t addr = 0x100000;
  for (int k = 0; k < 30; ++k) t1.push_back(make_record(kMalloc, 1000 + 100 * k, 40, addr += 64, 64));
  for (int j = 0; j < 10; ++j) {
    const uint64_t base = 10000 + 1000 * j;
    t1.push_back(make_record(kMalloc, base, 60, addr += 64, 64));
    t2.push_back(make_record(kMalloc, base + 10, 50, addr += 64, 64));
  }
  w.trace(1, 0, t1, 1000);
  w.trace(2, 0, t2, 10010);
  const Profile p = load(w);
  const TraceAnalysis a = analyze_trace(p);
  const ConcurrencyResults& c = a.concurrency;
  EXPECT_EQ(c.calls, 50u);
  EXPECT_EQ(c.max_inside, 2u);
  EXPECT_EQ(c.alone_calls, 40u);
  EXPECT_EQ(c.contended_calls, 10u);
  EXPECT_EQ(c.busy_ticks, 1800u);
  EXPECT_EQ(c.inside_ticks, 2300u);
  EXPECT_EQ(c.span_ticks, 19060u - 1000u);
  ASSERT_EQ(c.ticks_at.size(), 3u);
  EXPECT_EQ(c.ticks_at[2], 500u);
  EXPECT_EQ(c.ticks_at[1], 1300u);
  EXPECT_EQ(c.ticks_at[0], 18060u - 1800u);
  EXPECT_EQ(c.contended_ticks, 500u);
  EXPECT_EQ(c.si_calls, 20u);
  // Baseline: mean of the 40 calls made alone = (30*40 + 10*60) / 40 = 45 ticks.  Each pair is
  // contended for 50 ticks: thread 1's call (60 ticks) at rate 45/60, thread 2's (50) at 45/50.
  ASSERT_TRUE(c.serialization_index);
  EXPECT_NEAR(*c.serialization_index, 10 * (0.75 * 50 + 0.9 * 50) / 500.0, 1e-9);
  uint32_t timeline_max = 0;
  uint64_t timeline_ticks = 0;
  for (const InsideSample& s : c.timeline) {
    timeline_max = std::max(timeline_max, s.max_inside);
    timeline_ticks += s.inside_ticks;
  }
  EXPECT_EQ(timeline_max, 2u);
  EXPECT_EQ(timeline_ticks, 2300u);
  const ShapeReport r = shape_report(p, a);
  ASSERT_TRUE(r.concurrency.mean_inside);
  EXPECT_NEAR(*r.concurrency.mean_inside, 2300.0 / 1800.0, 1e-9);
}

TEST_F(ShapesTest, AddressReusedAcrossThreadsFollowsTheFreeThatMadeRoom) {
  // Thread 2's malloc starts before thread 1's free of the same address but returns after the
  // free started: the free must be seen first, and nothing is "reused while live".
  TestProfileWriter w = trace_profile();
  w.trace(1, 0, {make_record(kMalloc, 100, 10, 0x5000, 32), make_record(kFree, 200, 50, 0x5000)}, 100);
  w.trace(2, 0, {make_record(kMalloc, 190, 30, 0x5000, 32), make_record(kFree, 400, 10, 0x5000)}, 190);
  const LifetimeResults l = analyze_trace(load(w)).lifetimes;
  EXPECT_EQ(l.reused_live, 0u);
  EXPECT_EQ(l.frees, 2u);
  EXPECT_EQ(l.same_thread_frees, 2u);
  EXPECT_EQ(l.leaked_blocks, 0u);
}

TEST_F(ShapesTest, ProfileWithoutTraceHasNoShapes) {
  TestProfileWriter w;
  w.events(1, 0, {test::make_event(kMalloc, 10, 100, 5)});
  const Profile p = load(w);
  const ShapeReport r = shape_report(p, analyze_trace(p));
  EXPECT_FALSE(r.trace);
  EXPECT_TRUE(r.shapes.empty());
  EXPECT_NE(shapes_text(r).find("no trace"), std::string::npos);
  EXPECT_EQ(test::parse_json(shapes_json(r))["has_trace"].boolean(), false);
}

TEST_F(ShapesTest, AllocatorClassTableNamesTheClasses) {
  TestProfileWriter w = trace_profile("/lib/x86_64-linux-gnu/libc.so.6", format::Libc::Glibc);
  w.trace(1, 0, {make_record(kMalloc, 100, 10, 0x5000, 20), make_record(kFree, 200, 10, 0x5000)}, 100);
  const Profile p = load(w);
  const ShapeReport r = shape_report(p, analyze_trace(p));
  EXPECT_EQ(r.class_table, "glibc");
  ASSERT_EQ(r.shapes.size(), 1u);
  const ClassTable& glibc = class_table_of(p);
  const SizeClass& cls = glibc.classes()[glibc.class_of(20)];
  EXPECT_EQ(r.shapes[0].lo, cls.lo);
  EXPECT_EQ(r.shapes[0].hi, cls.hi);
}

TEST_F(ShapesTest, GapIsAttributedToTheShapeThatGotSlower) {
  const Profile base_p = load(scenario_a(50), "a.asp");
  const Profile other_p = load(scenario_a(1050), "b.asp");
  const ShapeReport base = shape_report(base_p, analyze_trace(base_p));
  const ShapeReport other = shape_report(other_p, analyze_trace(other_p));
  const ShapeGap gap = attribute_gap(base, other, class_table_of(base_p));
  EXPECT_DOUBLE_EQ(gap.gap_ns, 1000.0);
  ASSERT_EQ(gap.rows.size(), 1u);
  EXPECT_EQ(gap.rows[0].band, LifetimeBand::Under100us);
  EXPECT_TRUE(gap.rows[0].cross_thread);
  EXPECT_DOUBLE_EQ(gap.rows[0].share, 1.0);
  EXPECT_EQ(gap.rows[0].base_ns, 150u);
  EXPECT_EQ(gap.rows[0].other_ns, 1150u);
  const std::string text = shape_gap_text(gap);
  EXPECT_NE(text.find("medium-lived (< 100 µs) cross-thread 1.75 KiB–2 KiB"), std::string::npos) << text;
  EXPECT_NE(text.find("100.0 %"), std::string::npos) << text;
}

TEST_F(ShapesTest, ShapesCommandPrintsJsonForOneOrTwoFiles) {
  const auto a = save(scenario_a(50), "a.asp");
  const auto b = save(scenario_a(1050), "b.asp");
  testing::internal::CaptureStdout();
  const std::vector<std::string> one = {a.string(), "--json"};
  EXPECT_EQ(shapes_command(one), 0);
  const test::Json j1 = test::parse_json(testing::internal::GetCapturedStdout());
  EXPECT_EQ(j1["peak_live_bytes"].as_u64(), 7548u);
  testing::internal::CaptureStdout();
  const std::vector<std::string> two = {a.string(), b.string(), "--json"};
  EXPECT_EQ(shapes_command(two), 0);
  const test::Json j2 = test::parse_json(testing::internal::GetCapturedStdout());
  EXPECT_EQ(j2["gap"]["shapes"].array().size(), 1u);
  const std::vector<std::string> bad = {"--nope"};
  EXPECT_THROW(shapes_command(bad), UsageError);
}

// Random traces, consistent or not (double frees, frees of unknown blocks, addresses handed out
// twice, realloc of anything): the accounting must still add up, and nothing may throw.
TEST_F(ShapesTest, RandomTracesKeepTheBooksBalanced) {
  std::mt19937_64 rng(12345);
  for (int round = 0; round < 30; ++round) {
    TestProfileWriter w = trace_profile();
    uint64_t records = 0, durations = 0;
    for (uint32_t thread = 1; thread <= 3; ++thread) {
      std::vector<trace::Record> list;
      uint64_t tick = 1000 + rng() % 100;
      const int n = 1 + static_cast<int>(rng() % 300);
      for (int i = 0; i < n; ++i) {
        tick += rng() % 50;
        const uint64_t d = rng() % 40;
        const uint64_t addr = 0x1000 + 16 * (rng() % 24);
        const uint64_t size = rng() % 3 == 0 ? rng() % 100000 : rng() % 200;
        switch (rng() % 7) {
          case 0:
          case 1: list.push_back(make_record(kMalloc, tick, d, addr, size)); break;
          case 2:
          case 3: list.push_back(make_record(kFree, tick, d, rng() % 8 ? addr : 0)); break;
          case 4: list.push_back(make_record(kRealloc, tick, d, rng() % 5 ? addr : 0, size, rng() % 4 ? 0x1000 + 16 * (rng() % 24) : 0)); break;
          case 5: list.push_back(make_record(kMalloc, tick, d, 0, size, 0, 0, true)); break;
          default: list.push_back(make_record(static_cast<unsigned>(Op::MallocUsableSize), tick, d, addr, size)); break;
        }
        tick += d;
        durations += d;
      }
      records += list.size();
      // Split each thread's records over two chunks, the second written first.
      const size_t half = list.size() / 2;
      std::vector<trace::Record> a(list.begin(), list.begin() + static_cast<ptrdiff_t>(half)), b(list.begin() + static_cast<ptrdiff_t>(half), list.end());
      w.trace(thread, half, b, b.empty() ? 0 : b.front().start_tick, b.empty() ? 0 : b.front().addr);
      w.trace(thread, 0, a);
    }
    const Profile p = load(w);
    const TraceAnalysis a = analyze_trace(p);
    const LifetimeResults& l = a.lifetimes;
    const ConcurrencyResults& c = a.concurrency;
    SCOPED_TRACE(round);
    EXPECT_EQ(a.merge.calls, records);
    EXPECT_EQ(l.calls, records);
    // Records with a duration of 0 are untimed (a --sample N trace): left out of the concurrency.
    EXPECT_EQ(c.calls + c.untimed_calls, records);
    EXPECT_EQ(l.timed_calls, c.calls);
    EXPECT_EQ(a.merge.missing + a.merge.repeated, 0u);
    EXPECT_EQ(l.frees + l.resized + l.leaked_blocks + l.reused_live, l.blocks);
    EXPECT_EQ(l.same_thread_frees + l.cross_thread_frees, l.frees);
    EXPECT_EQ(l.leaked_bytes, l.live_bytes);
    uint64_t shape_blocks = 0;
    for (const auto& [key, s] : l.shapes) shape_blocks += s.blocks;
    EXPECT_EQ(shape_blocks + l.reused_live, l.blocks);
    uint64_t cost_calls = 0;
    for (const auto& [key, cost] : l.stack_costs) cost_calls += cost.calls;
    EXPECT_EQ(cost_calls, records);
    EXPECT_EQ(c.inside_ticks, durations);
    uint64_t at = 0;
    for (uint64_t t : c.ticks_at) at += t;
    EXPECT_EQ(at, c.span_ticks);
    EXPECT_LE(c.contended_ticks, c.busy_ticks);
    uint64_t timeline = 0;
    for (const InsideSample& s : c.timeline) timeline += s.inside_ticks;
    EXPECT_EQ(timeline, durations);
    const ShapeReport r = shape_report(p, a);
    EXPECT_NO_THROW(test::parse_json(shapes_json(r)));
    EXPECT_FALSE(shapes_text(r).empty());
  }
}

}  // namespace
}  // namespace allocscope
