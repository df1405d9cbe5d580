// completion_coincidence.cpp — see completion_coincidence.h.
#include "model/completion_coincidence.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <iterator>

namespace allocscope {
namespace {

constexpr uint64_t kFarFrom = 32, kFarTo = 96;  // the far zone, in widths of the near zone
constexpr uint64_t kMinNearExpected = 30;       // far pairs must predict this many near ones
constexpr size_t kSliceEnds = 2048;             // a long window is measured in slices of this many ends, …
constexpr size_t kMaxSlices = 4;                // … at most this many of them
constexpr double kMinWindows = 10;              // the far pairs' effective number of windows Q needs

// Student's t at 97.5 % for `df` degrees of freedom over 2, the factor that widens a spread read
// from few windows to what 2σ bounds mean (1 from 30 on).
double t_widening(double df) {
  static constexpr double kT975[] = {12.71, 4.30, 3.18, 2.78, 2.57, 2.45, 2.36, 2.31, 2.26, 2.23,
                                     2.20,  2.18, 2.16, 2.14, 2.13, 2.12, 2.11, 2.10, 2.09, 2.09,
                                     2.08,  2.07, 2.07, 2.06, 2.06, 2.06, 2.05, 2.05, 2.05};
  const size_t i = static_cast<size_t>(std::max(1.0, std::floor(df)));
  return i <= std::size(kT975) ? kT975[i - 1] / 2 : 1.0;
}

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
  Unit unit;
  for (size_t k = 0; k < taken; ++k) {
    const size_t slice = k * slices / taken;
    const size_t from = slice * kSliceEnds, to = std::min(ends.size(), from + kSliceEnds);
    const uint64_t slice_lo = slice == 0 ? lo : ends[from].tick;
    const uint64_t slice_hi = to == ends.size() ? hi : ends[to].tick;
    add_slice(std::span<const CallEnd>(ends.data() + from, to - from), slice_lo, slice_hi, unit);
  }
  if (unit.all.near_pairs + unit.all.far_pairs > 0) units_.push_back(unit);
}

void CoincidenceTally::add_slice(std::span<const CallEnd> ends, uint64_t lo, uint64_t hi, Unit& unit) {
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
      for (Sums* s : {&unit.all, across ? &unit.across : nullptr}) {
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

CoincidenceMeasure CoincidenceTally::measure(Sums Unit::*which) const {
  Sums s;
  double far_squares = 0;
  for (const Unit& u : units_) {
    s.add(u.*which);
    far_squares += (u.*which).far * (u.*which).far;
  }
  CoincidenceMeasure m;
  m.near_pairs = s.near_pairs;
  m.far_pairs = s.far_pairs;
  if (s.far <= 0) return m;
  m.windows = s.far * s.far / far_squares;
  const double zones = static_cast<double>(far1_ - far0_) / static_cast<double>(near_);
  const double expected_near_pairs = static_cast<double>(s.far_pairs) / zones;
  if (expected_near_pairs < kMinNearExpected) return m;
  if (m.windows < kMinWindows) {
    m.few_windows = true;
    return m;
  }
  auto q_of = [&](double near, double far) { return near / far * zones; };
  const double q = q_of(s.near, s.far);
  m.value = q;
  // Poisson counts in both zones; with no near pair at all, the spread of one.
  const double near_n = std::max<double>(1, static_cast<double>(s.near_pairs));
  const double poisson = std::max(q, 1.0 / expected_near_pairs) *
                         std::sqrt(1.0 / near_n + 1.0 / static_cast<double>(s.far_pairs));
  // The jackknife over windows: Q without each window in turn.
  double sum = 0, squares = 0, n = 0;
  for (const Unit& u : units_) {
    const Sums& w = u.*which;
    if (w.far <= 0 && w.near <= 0) continue;
    if (s.far - w.far <= 0) continue;
    const double qi = q_of(s.near - w.near, s.far - w.far);
    sum += qi, squares += qi * qi, n += 1;
  }
  const double jackknife = n > 1 ? std::sqrt((n - 1) / n * std::max(0.0, squares - sum * sum / n)) : 0;
  m.se = std::max(poisson, jackknife * t_widening(m.windows - 1));
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
