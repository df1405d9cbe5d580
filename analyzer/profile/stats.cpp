#include "profile/stats.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace allocscope {

void Counters::add(const Counters& other) {
  calls += other.calls;
  bytes += other.bytes;
  failed += other.failed;
  timed += other.timed;
  timed_ticks += other.timed_ticks;
  max_ticks = std::max(max_ticks, other.max_ticks);
}

void Counters::add(const format::StatsRow& row) {
  add(Counters{row.calls, row.bytes, row.failed, row.timed, row.timed_ticks, row.max_ticks});
}

std::string op_label(unsigned op) { return op < kOps ? op_name(op) : fmt::format("op{}", op); }

void add_cells_to(OpTable& table, const CellMap& cells) {
  for (const auto& [key, cell] : cells) {
    OpSummary& summary = table[key.op];
    summary.counters.add(cell.counters);
    for (const auto& [bin, count] : cell.latency) summary.latency[bin] += count;
  }
}

uint64_t histogram_total(const LatencyHistogram& histogram) {
  uint64_t total = 0;
  for (uint64_t count : histogram) total += count;
  return total;
}

uint64_t latency_quantile_ticks(const LatencyHistogram& histogram, double q, uint64_t max_ticks) {
  const uint64_t total = histogram_total(histogram);
  if (total == 0) return 0;
  const double wanted = std::ceil(std::clamp(q, 0.0, 1.0) * static_cast<double>(total));
  const uint64_t rank = std::max<uint64_t>(1, static_cast<uint64_t>(wanted));
  uint64_t seen = 0;
  for (unsigned bin = 0; bin < kLatencyBins; ++bin) {
    seen += histogram[bin];
    if (seen >= rank) {
      const uint64_t top = bin + 1 == kLatencyBins ? ~uint64_t{0} : bucket_hi(bin);
      return max_ticks > 0 ? std::min(top, max_ticks) : top;
    }
  }
  return max_ticks;
}

}  // namespace allocscope
