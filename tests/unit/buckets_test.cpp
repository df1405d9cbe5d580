// Size buckets and latency bins (include/allocscope/buckets.h).
#include "allocscope/buckets.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <limits>
#include <random>

namespace allocscope {
namespace {

constexpr uint64_t kMax = std::numeric_limits<uint64_t>::max();

TEST(Buckets, FirstBucketsAreExactSmallValues) {
  for (unsigned v = 0; v < 8; ++v) {
    EXPECT_EQ(bucket_of(v), v);
    EXPECT_EQ(bucket_lo(v), v);
    EXPECT_EQ(bucket_hi(v), v);
  }
}

TEST(Buckets, AreContiguousAndCoverAllOfUint64) {
  EXPECT_EQ(bucket_lo(0), 0u);
  for (unsigned b = 0; b + 1 < kSizeBuckets; ++b) {
    ASSERT_LE(bucket_lo(b), bucket_hi(b)) << "bucket " << b;
    ASSERT_EQ(bucket_hi(b) + 1, bucket_lo(b + 1)) << "gap or overlap after bucket " << b;
  }
  EXPECT_EQ(bucket_hi(kSizeBuckets - 1), kMax);
  EXPECT_EQ(bucket_of(kMax), kSizeBuckets - 1);
}

TEST(Buckets, BoundsRoundTrip) {
  for (unsigned b = 0; b < kSizeBuckets; ++b) {
    ASSERT_EQ(bucket_of(bucket_lo(b)), b) << "lo of bucket " << b;
    ASSERT_EQ(bucket_of(bucket_hi(b)), b) << "hi of bucket " << b;
    if (bucket_lo(b) > 0) {
      ASSERT_EQ(bucket_of(bucket_lo(b) - 1), b - 1) << "below bucket " << b;
    }
  }
}

TEST(Buckets, FourPerPowerOfTwo) {
  for (unsigned e = 2; e < 64; ++e) {
    const uint64_t power = uint64_t{1} << e;
    const unsigned first = bucket_of(power);
    EXPECT_EQ(bucket_lo(first), power);
    EXPECT_EQ(bucket_hi(first + 3), e == 63 ? kMax : (power << 1) - 1) << "2^" << e;
    const unsigned next = e == 63 ? kSizeBuckets : bucket_of(power << 1);
    EXPECT_EQ(next - first, 4u) << "2^" << e;
    for (unsigned m = 0; m < 4; ++m) {  // equal widths within the power of two
      EXPECT_EQ(bucket_hi(first + m) - bucket_lo(first + m) + 1, power / 4) << "2^" << e << " m=" << m;
    }
  }
}

TEST(Buckets, MonotonicOverEdgesAndRandomValues) {
  std::mt19937_64 random(42);
  std::vector<uint64_t> values = {0, 1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, kMax - 1, kMax};
  for (unsigned e = 0; e < 64; ++e) {
    const uint64_t power = uint64_t{1} << e;
    values.insert(values.end(), {power - 1, power, power + 1});
  }
  for (int i = 0; i < 20000; ++i) values.push_back(random() >> (random() % 64));
  std::sort(values.begin(), values.end());
  for (size_t i = 1; i < values.size(); ++i) {
    ASSERT_LE(bucket_of(values[i - 1]), bucket_of(values[i])) << values[i - 1] << " vs " << values[i];
    ASSERT_LE(bucket_lo(bucket_of(values[i])), values[i]);
    ASSERT_GE(bucket_hi(bucket_of(values[i])), values[i]);
  }
}

TEST(LatencyBins, FollowBucketsThenSaturate) {
  for (uint64_t v : {0ull, 3ull, 100ull, 65'536ull}) EXPECT_EQ(latency_bin_of(v), bucket_of(v));
  EXPECT_EQ(latency_bin_of(bucket_lo(kLatencyBins - 1)), kLatencyBins - 1);
  EXPECT_EQ(latency_bin_of(bucket_lo(kLatencyBins)), kLatencyBins - 1);
  EXPECT_EQ(latency_bin_of(kMax), kLatencyBins - 1);
}

}  // namespace
}  // namespace allocscope
