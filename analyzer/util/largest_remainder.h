// largest_remainder.h — splitting a count in proportion to integer weights, exactly.
#pragma once
#include <algorithm>
#include <cstdint>
#include <numeric>
#include <utility>
#include <vector>

namespace allocscope {

// Splits `total` into parts proportional to `weights` by largest remainder: the parts add up to
// `total` exactly (unless every weight is 0: then all parts are 0); ties go to the lower index;
// a zero weight gets nothing; each part is at most its weight when total ≤ Σ weights.
inline std::vector<uint64_t> largest_remainder(uint64_t total, const std::vector<uint64_t>& weights) {
  std::vector<uint64_t> parts(weights.size(), 0);
  const unsigned __int128 sum = std::accumulate(weights.begin(), weights.end(), static_cast<unsigned __int128>(0));
  if (sum == 0 || total == 0) return parts;
  std::vector<std::pair<unsigned __int128, size_t>> remainders;
  uint64_t given = 0;
  for (size_t i = 0; i < weights.size(); ++i) {
    const unsigned __int128 scaled = static_cast<unsigned __int128>(total) * weights[i];
    parts[i] = static_cast<uint64_t>(scaled / sum);
    given += parts[i];
    if (weights[i]) remainders.emplace_back(scaled % sum, i);
  }
  std::stable_sort(remainders.begin(), remainders.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  for (size_t i = 0; given < total; ++i, ++given) parts[remainders[i % remainders.size()].second] += 1;
  return parts;
}

}  // namespace allocscope
