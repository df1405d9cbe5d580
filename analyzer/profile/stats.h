// stats.h — value types of allocator statistics, shared by the profile model and its reports.
//
//   Counters          calls/bytes/failed/timed/time of some set of calls (StatsRow's numbers).
//   LatencyHistogram  timed calls per latency bin (buckets.h latency_bin_of), in ticks.
//   Cell              the statistics of one (operation, size bucket) of one thread.
//   OpSummary/OpTable totals per operation, indexed by Op value (kOpSlots entries).
//   BucketSummary     totals of one size bucket, overall and per operation.
// Size buckets are those of buckets.h plus kBucketUnknown: calls whose size was not taken (free
// outside timed calls).  It has no size range and sorts after every real bucket.
#pragma once
#include <array>
#include <compare>
#include <cstdint>
#include <map>
#include <string>

#include "allocscope/buckets.h"
#include "allocscope/format.h"
#include "allocscope/ops.h"
#include "util/units.h"  // ByteCount

namespace allocscope {

struct Counters {
  uint64_t calls = 0;
  ByteCount bytes = 0;
  uint64_t failed = 0;
  uint64_t timed = 0;        // calls whose duration was measured
  uint64_t timed_ticks = 0;  // sum of the measured durations
  uint64_t max_ticks = 0;    // longest measured duration

  void add(const Counters& other);
  void add(const format::StatsRow& row);
  bool operator==(const Counters&) const = default;
};

using LatencyHistogram = std::array<uint64_t, kLatencyBins>;

struct CellKey {
  uint8_t op = 0;
  uint8_t bucket = 0;
  auto operator<=>(const CellKey&) const = default;
};

struct Cell {
  Counters counters;
  std::map<uint16_t, uint64_t> latency;  // latency bin -> timed calls (only non-zero bins)
};

using CellMap = std::map<CellKey, Cell>;

struct OpSummary {
  Counters counters;
  LatencyHistogram latency{};
};

using OpTable = std::array<OpSummary, kOpSlots>;

struct BucketSummary {
  unsigned bucket = 0;
  Counters total;
  std::array<Counters, kOpSlots> by_op{};
};

// A bucket index a profile may contain: a size bucket, or kBucketUnknown.
constexpr bool is_bucket_index(unsigned bucket) { return bucket < kSizeBuckets || bucket == kBucketUnknown; }

// op_name(op) for operations this analyzer knows, "op<N>" for later ones (unique per value).
std::string op_label(unsigned op);

// Adds every cell of `cells` into the per-operation table.
void add_cells_to(OpTable& table, const CellMap& cells);

uint64_t histogram_total(const LatencyHistogram& histogram);

// Upper bound, in ticks, of the q-quantile (0 < q <= 1) of `histogram`: the top of the bin that
// holds it, capped at `max_ticks` (the last bin is open-ended).  0 for an empty histogram.
uint64_t latency_quantile_ticks(const LatencyHistogram& histogram, double q, uint64_t max_ticks);

}  // namespace allocscope
