// largest_remainder.h — splitting a count in proportion to weights, exactly.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <type_traits>
#include <utility>
#include <vector>

namespace allocscope {

// Splits `total` into parts proportional to `weights` by largest remainder: each part is the
// floor of its exact share, and the units left go one each to the largest remainders (ties to
// the lower index); a zero weight gets nothing.  The parts add up to `total` exactly, unless
// every weight is 0: then all parts are 0.  Each part is at most its weight when total ≤ Σ
// weights.
//
// Integer weights are split in exact integer arithmetic.  Floating-point weights (sums too large
// for integers, as the bytes of a size range) in long double: a part never overshoots what is
// left, and when rounding leaves more units than there are weights, the heaviest takes the rest.
template <typename T, typename W>
std::vector<T> largest_remainder(T total, const std::vector<W>& weights) {
  std::vector<T> parts(weights.size(), T{0});
  if (weights.empty() || total == T{0}) return parts;
  std::vector<std::pair<std::conditional_t<std::is_floating_point_v<W>, long double, unsigned __int128>, size_t>>
      remainders;
  T given{0};
  if constexpr (std::is_floating_point_v<W>) {
    long double sum = 0;
    for (const W w : weights) sum += static_cast<long double>(w);
    if (!(sum > 0)) return parts;
    const long double total_f = static_cast<long double>(total);
    for (size_t i = 0; i < weights.size(); ++i) {
      const long double exact = total_f * (static_cast<long double>(weights[i]) / sum);
      const long double whole = std::max(std::floor(exact), 0.0L);
      const T part = std::min(static_cast<T>(whole), static_cast<T>(total - given));  // never overshoots
      parts[i] = part;
      given += part;
      if (weights[i] > 0) remainders.emplace_back(exact - whole, i);
    }
  } else {
    const unsigned __int128 sum = std::accumulate(weights.begin(), weights.end(), static_cast<unsigned __int128>(0));
    if (sum == 0) return parts;
    for (size_t i = 0; i < weights.size(); ++i) {
      const unsigned __int128 scaled = static_cast<unsigned __int128>(total) * weights[i];
      parts[i] = static_cast<T>(scaled / sum);
      given += parts[i];
      if (weights[i]) remainders.emplace_back(scaled % sum, i);
    }
  }
  std::stable_sort(remainders.begin(), remainders.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  for (size_t k = 0; given < total && k < remainders.size(); ++k, ++given) parts[remainders[k].second] += 1;
  if (given < total) {  // (floating point only) rounding lost more than one unit per part
    const size_t heaviest = static_cast<size_t>(std::max_element(weights.begin(), weights.end()) - weights.begin());
    parts[heaviest] += total - given;
  }
  return parts;
}

}  // namespace allocscope
