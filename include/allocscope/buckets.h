// allocscope/buckets.h — log-linear buckets shared by the shim and the analyzer.
//
// One mapping serves two purposes:
//  * request sizes (bytes): 4 buckets per power of two, from 0 B to 2^64-1 B;
//  * latencies (ticks): the same scheme, clamped to kLatencyBins bins.
//
// Bucket b covers the closed range [bucket_lo(b), bucket_hi(b)]:
//   b = 0..3      exactly the values 0, 1, 2, 3
//   b >= 4        e = 2 + (b-4)/4, m = (b-4)%4: values [ (4+m) << (e-2), ((5+m) << (e-2)) - 1 ]
// Invariants (tested): buckets are contiguous, non-overlapping, cover all of uint64_t, and
// bucket_of(v) is monotonic.  Header-only, allocation-free, usable inside the shim.
#pragma once
#include <cstdint>

namespace allocscope {

constexpr unsigned kSizeBuckets = 252;   // 4 + 62*4: every uint64_t value has a bucket
constexpr unsigned kLatencyBins = 160;   // bins past 159 are folded into 159 (≈2^40 ticks)

// Bucket index for calls whose size was not taken (free outside timed calls: asking the allocator
// for the block's size costs as much as the free itself).  Not a range: no lo/hi.
constexpr unsigned kBucketUnknown = 255;

constexpr unsigned bucket_of(uint64_t v) {
  if (v < 4) return static_cast<unsigned>(v);
  const unsigned e = 63u - static_cast<unsigned>(__builtin_clzll(v));  // floor(log2 v), >= 2
  const unsigned m = static_cast<unsigned>(v >> (e - 2)) & 3u;
  return 4u + (e - 2u) * 4u + m;
}

constexpr uint64_t bucket_lo(unsigned b) {
  if (b < 4) return b;
  const unsigned e = 2 + (b - 4) / 4, m = (b - 4) % 4;
  return static_cast<uint64_t>(4 + m) << (e - 2);
}

constexpr uint64_t bucket_hi(unsigned b) {
  if (b < 4) return b;
  if (b + 1 >= kSizeBuckets) return ~uint64_t{0};
  return bucket_lo(b + 1) - 1;
}

constexpr unsigned latency_bin_of(uint64_t ticks) {
  const unsigned b = bucket_of(ticks);
  return b < kLatencyBins ? b : kLatencyBins - 1;
}

static_assert(bucket_of(0) == 0 && bucket_of(3) == 3 && bucket_of(4) == 4 && bucket_of(7) == 7);
static_assert(bucket_of(8) == 8 && bucket_of(9) == 8 && bucket_of(10) == 9);
static_assert(bucket_of(~uint64_t{0}) == kSizeBuckets - 1);
static_assert(bucket_lo(kSizeBuckets - 1) <= ~uint64_t{0} && bucket_hi(kSizeBuckets - 1) == ~uint64_t{0});

}  // namespace allocscope
