// fine_histogram.h — a log-linear histogram of tick counts, fine enough for quantiles and means.
//
// Values below 1024 have a bin each (exact); above, every power of two is cut into 32 bins, so a
// bin is at most 1/32 of its value wide (about 3 %).  The latency bins of buckets.h (4 per power
// of two) are too coarse for a fast-path baseline; these are not.  Storage grows only with the
// largest value seen (about 1,700 bins for a value of 10^9 ticks), never with the count.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

namespace allocscope {

class FineHistogram {
 public:
  static constexpr unsigned kExact = 1024;
  static constexpr unsigned kExactBits = 10;
  static constexpr unsigned kSubBits = 5;  // 32 bins per power of two above kExact

  static unsigned index_of(uint64_t v) {
    if (v < kExact) return static_cast<unsigned>(v);
    const unsigned e = 63u - static_cast<unsigned>(__builtin_clzll(v));  // >= kExactBits
    const unsigned m = static_cast<unsigned>(v >> (e - kSubBits)) & ((1u << kSubBits) - 1);
    return kExact + (e - kExactBits) * (1u << kSubBits) + m;
  }
  static uint64_t lo_of(unsigned index) {
    if (index < kExact) return index;
    const unsigned e = kExactBits + (index - kExact) / (1u << kSubBits);
    const unsigned m = (index - kExact) % (1u << kSubBits);
    return (uint64_t{(1u << kSubBits) + m}) << (e - kSubBits);
  }
  static constexpr unsigned kBins = kExact + (64 - kExactBits) * (1u << kSubBits);
  static uint64_t hi_of(unsigned index) {
    if (index < kExact) return index;
    if (index + 1 >= kBins) return ~uint64_t{0};
    return lo_of(index + 1) - 1;
  }
  // The value a bin stands for: exact below kExact, else its middle.
  static double mid_of(unsigned index) {
    if (index < kExact) return static_cast<double>(index);
    return (static_cast<double>(lo_of(index)) + static_cast<double>(hi_of(index))) / 2;
  }

  void add(uint64_t v, uint64_t count = 1) {
    const unsigned i = index_of(v);
    if (i >= counts_.size()) counts_.resize(i + 1, 0);
    counts_[i] += count;
    total_ += count;
    sum_ += static_cast<double>(v) * static_cast<double>(count);
    max_ = std::max(max_, v);
  }

  void merge(const FineHistogram& other) {
    if (other.counts_.size() > counts_.size()) counts_.resize(other.counts_.size(), 0);
    for (size_t i = 0; i < other.counts_.size(); ++i) counts_[i] += other.counts_[i];
    total_ += other.total_;
    sum_ += other.sum_;
    max_ = std::max(max_, other.max_);
  }

  uint64_t total() const { return total_; }
  double sum() const { return sum_; }
  uint64_t max() const { return max_; }
  double mean() const { return total_ ? sum_ / static_cast<double>(total_) : 0.0; }
  bool empty() const { return total_ == 0; }

  // The q-quantile (0 < q <= 1): the smallest bin value with at least ceil(q * total) values at or
  // below it, given as the bin's lower edge (exact below kExact), capped at max().  0 when empty.
  uint64_t quantile(double q) const {
    const uint64_t rank = rank_of(q);
    if (rank == 0) return 0;
    uint64_t seen = 0;
    for (unsigned i = 0; i < counts_.size(); ++i) {
      seen += counts_[i];
      if (seen >= rank) return std::min(lo_of(i), max_);
    }
    return max_;
  }

  // Mean of max(0, v - offset) over the values at or below the q-quantile (the ceil(q * total)
  // smallest), each bin counted at its mid_of() value.  0 when empty.
  double trimmed_mean(double q, double offset = 0) const {
    const uint64_t rank = rank_of(q);
    if (rank == 0) return 0;
    uint64_t taken = 0;
    double sum = 0;
    for (unsigned i = 0; i < counts_.size() && taken < rank; ++i) {
      const uint64_t n = std::min(counts_[i], rank - taken);
      const double v = std::min(mid_of(i), static_cast<double>(max_)) - offset;
      sum += static_cast<double>(n) * std::max(0.0, v);
      taken += n;
    }
    return taken ? sum / static_cast<double>(taken) : 0.0;
  }

  const std::vector<uint64_t>& counts() const { return counts_; }

 private:
  uint64_t rank_of(double q) const {
    if (total_ == 0) return 0;
    const double wanted = std::ceil(std::clamp(q, 0.0, 1.0) * static_cast<double>(total_));
    return std::clamp<uint64_t>(static_cast<uint64_t>(wanted), 1, total_);
  }

  std::vector<uint64_t> counts_;
  uint64_t total_ = 0;
  double sum_ = 0;
  uint64_t max_ = 0;
};

}  // namespace allocscope
