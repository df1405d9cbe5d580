// The CPU samples' parts (model/cpu_parts.h): each thread's CPU time shared out by its samples.
#include "model/cpu_parts.h"

#include <gtest/gtest.h>

#include <cmath>

#include "model/cost_model.h"
#include "profile/profile.h"
#include "test_profile_writer.h"

namespace allocscope {
namespace {

ThreadRow thread(uint32_t serial, uint64_t utime_us, uint64_t stime_us) {
  ThreadRow t;
  t.serial = serial;
  t.rusage.utime_us = utime_us;
  t.rusage.stime_us = stime_us;
  return t;
}

format::CpuSamples samples(uint32_t serial, uint64_t n, uint64_t allocator, uint64_t locks) {
  format::CpuSamples c{};
  c.thread_serial = serial;
  c.samples = n;
  c.in_allocator = allocator;
  c.in_locks = locks;
  return c;
}

TEST(CpuParts, EachThreadsCpuTimeIsSharedByItsOwnSamples) {
  Profile p;
  p.calibration = test::make_calibration(1'000'000'000);
  p.calibration->mode_flags |= format::kModeCpuSamples;
  // Thread 1: 1 s of CPU, half of its 100 samples in lock calls; thread 2: 3 s, a tenth of its 50
  // in allocator calls; thread 3: 0.2 s and no sample; thread 4: no known CPU time.
  p.cpu_samples[1] = samples(1, 100, 0, 50);
  p.cpu_samples[2] = samples(2, 50, 5, 0);
  ThreadRow unknown;
  unknown.serial = 4;
  unknown.rusage.utime_us = unknown.rusage.stime_us = ~uint64_t{0};
  p.cpu_samples[4] = samples(4, 10, 10, 0);
  const CpuParts c = cpu_parts(p, {thread(1, 600'000, 400'000), thread(2, 3'000'000, 0), thread(3, 200'000, 0), unknown});
  ASSERT_TRUE(c.recorded);
  EXPECT_EQ(c.threads, 2u);
  EXPECT_EQ(c.samples, 150u);
  EXPECT_DOUBLE_EQ(c.cpu_ns, 4.2e9);
  EXPECT_DOUBLE_EQ(c.unsampled_ns, 0.2e9);
  EXPECT_DOUBLE_EQ(c.locks.ns, 0.5e9);
  EXPECT_DOUBLE_EQ(c.allocator.ns, 0.3e9);
  EXPECT_DOUBLE_EQ(c.elsewhere.ns, 0.5e9 + 2.7e9);
  EXPECT_NEAR(c.locks.share, 0.5 / 4.2, 1e-12);
  // 2 standard errors of a binomial share of each thread's samples, in quadrature over threads.
  EXPECT_NEAR(c.locks.error_ns, 2 * std::sqrt(1e18 * 0.25 / 100 + 9e18 / 50 / 50), 1);
  EXPECT_NEAR(c.allocator.error_ns, 2 * std::sqrt(1e18 / 100 / 100 + 9e18 * 0.09 / 50), 1);
  EXPECT_DOUBLE_EQ(c.allocator.ns + c.shim.ns + c.locks.ns + c.cond.ns + c.elsewhere.ns + c.unsampled_ns, c.cpu_ns);
}

TEST(CpuParts, NothingWithoutTheFlag) {
  Profile p;
  p.calibration = test::make_calibration(1'000'000'000);
  p.cpu_samples[1] = samples(1, 100, 0, 50);
  const CpuParts c = cpu_parts(p, {thread(1, 1'000'000, 0)});
  EXPECT_FALSE(c.recorded);
  EXPECT_EQ(c.samples, 0u);
  EXPECT_EQ(c.cpu_ns, 0);
}

}  // namespace
}  // namespace allocscope
