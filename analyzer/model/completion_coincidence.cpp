// completion_coincidence.cpp — see completion_coincidence.h.
#include "model/completion_coincidence.h"

#include <algorithm>
#include <bit>
#include <cmath>

namespace allocscope {
namespace {

constexpr uint64_t kFarFrom = 32, kFarTo = 96;  // the far zone, in widths of the near zone
constexpr uint64_t kMinNearExpected = 30;       // far pairs must predict this many near ones
constexpr size_t kSliceEnds = 2048;             // a long window is measured in slices of this many ends, …
constexpr size_t kMaxSlices = 4;                // … at most this many of them

}  // namespace

uint32_t size_group(uint64_t size) { return static_cast<uint32_t>(std::bit_width(size)); }

uint32_t call_size_group(const format::Event& e) {
  return e.bucket == kBucketUnknown ? kUnknownGroup : size_group(format::event_size(e));
}

CoincidenceTally::CoincidenceTally(uint64_t step, uint64_t min_near) {
  step = std::max<uint64_t>(step, 1);
  near_ = 2 * step;
  if (near_ < min_near) near_ = step * ((min_near + step - 1) / step);
  far0_ = kFarFrom * near_;
  far1_ = kFarTo * near_;
}

void CoincidenceTally::add_window(std::vector<CallEnd>& ends, uint64_t lo, uint64_t hi) {
  if (hi <= lo || ends.size() < 2) return;
  std::erase_if(ends, [&](const CallEnd& e) { return e.tick < lo || e.tick >= hi; });
  std::sort(ends.begin(), ends.end(), [](const CallEnd& a, const CallEnd& b) { return a.tick < b.tick; });
  // A long window (every call timed) is cut into slices of kSliceEnds ends, each measured as a
  // window of its own; at most kMaxSlices of them, spread evenly over the window, bound the work.
  const size_t slices = (ends.size() + kSliceEnds - 1) / kSliceEnds;
  const size_t taken = std::min(slices, kMaxSlices);
  for (size_t k = 0; k < taken; ++k) {
    const size_t slice = k * slices / taken;
    const size_t from = slice * kSliceEnds, to = std::min(ends.size(), from + kSliceEnds);
    const uint64_t slice_lo = slice == 0 ? lo : ends[from].tick;
    const uint64_t slice_hi = to == ends.size() ? hi : ends[to].tick;
    add_slice(std::span<const CallEnd>(ends.data() + from, to - from), slice_lo, slice_hi);
  }
}

void CoincidenceTally::add_slice(std::span<const CallEnd> ends, uint64_t lo, uint64_t hi) {
  if (hi <= lo) return;
  const double w = static_cast<double>(hi - lo);
  for (size_t i = 0; i < ends.size(); ++i) {
    const CallEnd& a = ends[i];
    for (size_t j = i + 1; j < ends.size(); ++j) {
      const CallEnd& b = ends[j];
      if (b.tick >= hi) break;
      const uint64_t d = b.tick - a.tick;
      if (d >= far1_) break;
      if (b.thread == a.thread || (d >= near_ && d < far0_)) continue;
      const double weight = 1.0 / std::max(1.0, w - static_cast<double>(d));
      const bool across = sizes_apart(a.group, b.group);
      for (Sums* s : {&all_, across ? &across_ : nullptr}) {
        if (!s) continue;
        if (d < near_) {
          s->near += d == 0 ? 2 * weight : weight;
          ++s->near_pairs;
        } else {
          s->far += weight;
          ++s->far_pairs;
        }
      }
    }
  }
}

CoincidenceMeasure CoincidenceTally::measure(const Sums& s) const {
  CoincidenceMeasure m;
  m.near_pairs = s.near_pairs;
  m.far_pairs = s.far_pairs;
  if (s.far <= 0) return m;
  const double far_density = s.far / static_cast<double>(far1_ - far0_);
  const double expected_near_pairs = static_cast<double>(s.far_pairs) * static_cast<double>(near_) /
                                     static_cast<double>(far1_ - far0_);
  if (expected_near_pairs < kMinNearExpected) return m;
  const double q = s.near / static_cast<double>(near_) / far_density;
  m.value = q;
  // Poisson counts in both zones; with no near pair at all, the spread of one.
  const double near_n = std::max<double>(1, static_cast<double>(s.near_pairs));
  m.se = std::max(q, 1.0 / expected_near_pairs) * std::sqrt(1.0 / near_n + 1.0 / static_cast<double>(s.far_pairs));
  return m;
}

uint64_t clock_step_of(std::span<const uint64_t> counts, uint64_t total) {
  const double floor = 0.01 * static_cast<double>(total);
  for (size_t v = 2; v < counts.size(); ++v) {
    if (static_cast<double>(counts[v]) >= floor && counts[v] > 0) return v;
  }
  return 1;
}

}  // namespace allocscope
