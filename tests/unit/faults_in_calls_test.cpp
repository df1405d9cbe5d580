// faults_in_calls_test.cpp — how many faults a thread took inside allocator calls
// (model/faults_in_calls.h), from timed calls with known answers.
#include "model/faults_in_calls.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "allocscope/buckets.h"
#include "allocscope/ops.h"
#include "test_profile_writer.h"

namespace allocscope {
namespace {

constexpr uint64_t kHz = 1000000000;  // ticks are nanoseconds
constexpr uint8_t kMalloc = static_cast<uint8_t>(Op::Malloc), kFree = static_cast<uint8_t>(Op::Free);

format::Calibration calibration(uint64_t mode_flags, uint64_t fault_ns = 10000) {
  format::Calibration c = test::make_calibration(kHz);
  c.minor_fault_ticks = fault_ns;
  c.mode_flags = mode_flags;
  return c;
}

format::Event timed(uint8_t op, uint8_t bucket, uint32_t ns, uint16_t flags = 0, uint16_t faults = 0) {
  format::Event e = test::make_event(op, bucket_lo(bucket), 0, ns);
  e.flags = flags;
  e.minflt = faults;
  return e;
}

void feed(FaultSample& s, uint32_t thread, const std::vector<format::Event>& events) {
  format::EventsHeader h{};
  h.thread_serial = thread;
  h.count = static_cast<uint32_t>(events.size());
  s.add(h, events);
}

CellMap cells(std::initializer_list<std::pair<CellKey, uint64_t>> calls) {
  CellMap m;
  for (const auto& [key, n] : calls) m[key].counters.calls = n;
  return m;
}

TEST(FaultsInCalls, ShortCallsTookNoneAndSlowCallsCarryTheirOwn) {
  FaultSample s(calibration(format::kModeFaults));
  // The threshold: half a fault's cost (5 µs), capped at the switches' 2 µs.
  EXPECT_EQ(s.short_ticks, 2000u);
  std::vector<format::Event> events;
  for (int i = 0; i < 98; i++) events.push_back(timed(kMalloc, 10, 300));  // short: none
  events.push_back(timed(kMalloc, 10, 40000, format::kEvFaults, 3));       // slow, read: 3
  events.push_back(timed(kMalloc, 10, 40000, format::kEvSwitches));        // slow, unread
  feed(s, 1, events);
  const CellFaultSample& c = s.threads.at(1).cells.at(CellKey{kMalloc, 10});
  EXPECT_EQ(c.timed, 100u);
  EXPECT_EQ(c.read, 99u);
  EXPECT_EQ(c.slow_read, 1u);
  EXPECT_EQ(c.slow_unread, 1u);
  EXPECT_EQ(c.faults_read, 3u);
  // 100 timed calls stand for 10,000: 3 faults read, 3 more for the unread slow call.
  const FaultEstimate e = thread_faults_in_calls(s.threads.at(1), cells({{CellKey{kMalloc, 10}, 10000}}), 1000);
  EXPECT_NEAR(e.faults, 600, 1e-6);
  EXPECT_GT(e.bound, 0);
  EXPECT_LE(e.bound, 1000);
}

TEST(FaultsInCalls, WithoutFaultReadsOnlyTheRusageProbesCount) {
  FaultSample s(calibration(0));
  feed(s, 1, {timed(kMalloc, 10, 300), timed(kMalloc, 10, 40000, format::kEvFaults, 3),
              timed(kMalloc, 10, 300, format::kEvRusage, 0), timed(kMalloc, 10, 30000, format::kEvRusage, 2)});
  const CellFaultSample& c = s.threads.at(1).cells.at(CellKey{kMalloc, 10});
  EXPECT_EQ(c.timed, 2u);
  EXPECT_EQ(c.read, 2u);
  EXPECT_EQ(c.faults_read, 2u);
  const FaultEstimate e = thread_faults_in_calls(s.threads.at(1), cells({{CellKey{kMalloc, 10}, 100}}), 500);
  EXPECT_NEAR(e.faults, 100, 1e-6);  // 1 per call
}

TEST(FaultsInCalls, ReleasesWithoutASizeFaultAsTheTimedReleasesDid) {
  // Untimed frees are counted without a size (kBucketUnknown); the timed ones in their bucket.
  FaultSample s(calibration(format::kModeFaults));
  std::vector<format::Event> events;
  for (int i = 0; i < 9; i++) events.push_back(timed(kFree, 20, 200));
  events.push_back(timed(kFree, 30, 50000, format::kEvFaults, 5));
  for (int i = 0; i < 10; i++) events.push_back(timed(kMalloc, 20, 200));
  feed(s, 1, events);
  const CellMap calls = cells({{CellKey{kFree, 20}, 9}, {CellKey{kFree, 30}, 1},
                               {CellKey{kFree, static_cast<uint8_t>(kBucketUnknown)}, 990}, {CellKey{kMalloc, 20}, 1000}});
  const FaultEstimate e = thread_faults_in_calls(s.threads.at(1), calls, 100000);
  // The sized cells as they were (5), and the 990 others at the frees' 5 faults per 10 calls.
  EXPECT_NEAR(e.faults, 5 + 990 * 0.5, 1e-6);
}

TEST(FaultsInCalls, TheBoundTakesTheWindowsAsItsSamplingUnits) {
  // 20 windows of 50 read calls each (slow, read): in 10 of them every call faulted once, in the
  // other 10 none.  Over single calls the mean 0.5 has a standard error of 0.016; over the windows,
  // whose calls fault together, 0.115: the bound is the windows'.
  format::Calibration c = calibration(format::kModeFaults);
  c.window_shift = 10;
  FaultSample s(c);
  std::vector<format::Event> events;
  for (uint64_t w = 0; w < 20; w++) {
    for (int i = 0; i < 50; i++) {
      format::Event e = timed(kMalloc, 10, 40000, format::kEvFaults, w % 2 ? 1 : 0);
      e.start_tick = (w << 10) + static_cast<uint64_t>(i);
      events.push_back(e);
    }
  }
  feed(s, 1, events);
  const double calls = 100000;
  const FaultEstimate e = thread_faults_in_calls(s.threads.at(1), cells({{CellKey{kMalloc, 10}, 100000}}), 100000);
  EXPECT_NEAR(e.faults, 50000, 1e-6);
  const double per_call_se = std::sqrt(0.25 * 1000.0 / 999.0 / 1000.0) * calls;  // 1,582 faults
  EXPECT_GT(e.bound, 3 * per_call_se * 5);
  // z_w = 100 · (50 or 0 − 25) = ±2,500 in each of 20 windows: √(20/19 · 20 · 2,500²) = 11,471,
  // plus the windows' pace, 6 % of the estimate.
  EXPECT_NEAR(e.bound, 3 * std::sqrt(20.0 / 19.0 * 20 * 2500.0 * 2500.0) + kWindowPaceShare * 50000, 1);
}

TEST(FaultsInCalls, NothingReadBoundsAtEveryFault) {
  FaultSample s(calibration(format::kModeFaults));
  feed(s, 1, {timed(kMalloc, 10, 40000), timed(kMalloc, 10, 50000)});  // slow, none read
  const FaultEstimate unread = thread_faults_in_calls(s.threads.at(1), cells({{CellKey{kMalloc, 10}, 1000}}), 700);
  EXPECT_EQ(unread.bound, 700);
  const FaultEstimate none = thread_faults_in_calls(ThreadFaultSample{}, cells({{CellKey{kMalloc, 10}, 1000}}), 700);
  EXPECT_EQ(none.faults, 0);
  EXPECT_EQ(none.bound, 700);
}

TEST(FaultsInCalls, AnUnreadSlowCallWidensTheBoundByWhatItsLengthAllows) {
  // 99 short calls and one slow call left unread (its reading was not good): no slow call was read,
  // so it is estimated at 0, and bounded by the faults that fit in it — 40 µs at 4 µs or more each.
  FaultSample s(calibration(format::kModeFaults));
  std::vector<format::Event> events(99, timed(kMalloc, 10, 300));
  events.push_back(timed(kMalloc, 10, 40000));
  feed(s, 1, events);
  const FaultEstimate e = thread_faults_in_calls(s.threads.at(1), cells({{CellKey{kMalloc, 10}, 1000}}), 5000);
  EXPECT_EQ(e.faults, 0);
  EXPECT_NEAR(e.bound, 3.0 / 99 * 1000 + 11 * 10, 1e-6);  // the rule of three, and 11 faults × 10 calls
}

TEST(FaultsInCalls, AnUnreadSlowCallWithAnEarlierReadingIsBoundedByItsFaultsSince) {
  // The same slow call, its reading taken too long before it: the faults since then (here none,
  // a preemption) bound it, not its length.
  FaultSample s(calibration(format::kModeFaults));
  std::vector<format::Event> events(99, timed(kMalloc, 10, 300));
  events.push_back(timed(kMalloc, 10, 4000000, format::kEvFaultsAtMost, 0));
  feed(s, 1, events);
  const CellFaultSample& c = s.threads.at(1).cells.at(CellKey{kMalloc, 10});
  EXPECT_EQ(c.slow_unread, 1u);
  EXPECT_EQ(c.unread_most, 0u);
  const FaultEstimate e = thread_faults_in_calls(s.threads.at(1), cells({{CellKey{kMalloc, 10}, 1000}}), 5000);
  EXPECT_NEAR(e.bound, 3.0 / 99 * 1000, 1e-6);
}

TEST(FaultsInCalls, NeverMoreThanTheThreadsFaultsAndNeverAZeroBound) {
  FaultSample s(calibration(format::kModeFaults));
  std::vector<format::Event> events(1000, timed(kMalloc, 10, 300));  // all short: no fault seen
  feed(s, 1, events);
  const FaultEstimate e = thread_faults_in_calls(s.threads.at(1), cells({{CellKey{kMalloc, 10}, 100000}}), 10000);
  EXPECT_EQ(e.faults, 0);
  EXPECT_NEAR(e.bound, 3.0 / 1000 * 100000, 1e-6);  // the rule of three
  FaultSample many(calibration(format::kModeFaults));
  feed(many, 1, {timed(kMalloc, 10, 90000, format::kEvFaults, 9)});
  EXPECT_EQ(thread_faults_in_calls(many.threads.at(1), cells({{CellKey{kMalloc, 10}, 1000}}), 50).faults, 50);
}

}  // namespace
}  // namespace allocscope
