// class_split.cpp — bucket statistics split into size classes: EventSizes and split_cells
// (class_tables.h).
#include "model/class_tables.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "allocscope/buckets.h"
#include "profile/profile.h"
#include "util/largest_remainder.h"

namespace allocscope {

// ---- EventSizes ----

void EventSizes::add(const format::Event& event) {
  if (!is_bucket_index(event.bucket) || event.bucket == kBucketUnknown) return;
  if (bucket_of(event.size) != event.bucket) return;  // saturated size: not exact
  SizeTally** slot_ptr;
  if (event.size < kSmallSizes && event.op < kOpSlots) {  // the bucket follows from the size
    auto& small = small_index_[event.op];
    if (small.empty()) small.assign(kSmallSizes, nullptr);
    slot_ptr = &small[event.size];
  } else {
    slot_ptr = &index_[uint64_t{event.op} << 56 | uint64_t{event.bucket} << 48 | event.size];
  }
  SizeTally*& slot = *slot_ptr;
  if (!slot) slot = &by_cell_[CellKey{event.op, event.bucket}][event.size];
  SizeTally& tally = *slot;
  tally.events += 1;
  tally.ticks += event.duration_ticks;
  tally.max_ticks = std::max<uint64_t>(tally.max_ticks, event.duration_ticks);
  const auto bin = static_cast<uint16_t>(latency_bin_of(event.duration_ticks));
  auto& bins = tally.latency;
  if (tally.last_bin < bins.size() && bins[tally.last_bin].first == bin) {
    ++bins[tally.last_bin].second;
    return;
  }
  for (size_t i = 0; i < bins.size(); ++i) {
    if (bins[i].first == bin) {
      ++bins[i].second;
      tally.last_bin = i;
      return;
    }
  }
  tally.last_bin = bins.size();
  bins.emplace_back(bin, 1);
}

void EventSizes::add(std::span<const format::Event> events) {
  for (const auto& event : events) add(event);
}

const std::map<uint64_t, SizeTally>* EventSizes::find(CellKey key) const {
  const auto it = by_cell_.find(key);
  return it == by_cell_.end() ? nullptr : &it->second;
}

// ---- Splitting ----

namespace {

using Weights = std::vector<long double>;

// Splits `total` into integer parts proportional to `weights` (largest_remainder.h); the parts
// add up to `total`.  All weights zero: everything goes to the first part.
template <typename T>
std::vector<T> apportion(T total, const Weights& weights) {
  if (!weights.empty() && std::none_of(weights.begin(), weights.end(), [](long double w) { return w > 0; })) {
    std::vector<T> parts(weights.size(), T{0});
    parts[0] = total;
    return parts;
  }
  return largest_remainder(total, weights);
}

// `weights` without the parts that got nothing of `parts`: what follows a count (its bytes, its
// timed calls) goes only where some of the count went.  Unchanged when that would leave nothing.
Weights only_where(const Weights& weights, const std::vector<uint64_t>& parts) {
  Weights out = weights;
  for (size_t i = 0; i < out.size(); ++i) {
    if (!parts[i]) out[i] = 0;
  }
  return std::any_of(out.begin(), out.end(), [](long double w) { return w > 0; }) ? out : weights;
}

// Sum of the integers in [lo, hi] as a long double.
long double range_sum(uint64_t lo, uint64_t hi) {
  return (static_cast<long double>(lo) + static_cast<long double>(hi)) *
         (static_cast<long double>(hi - lo) + 1) / 2;
}

void add_share(Cell& into, const Counters& share, const std::map<uint16_t, uint64_t>& latency) {
  into.counters.add(share);
  for (const auto& [bin, count] : latency) {
    if (count) into.latency[bin] += count;
  }
}

void split_cell(ClassCellMap& out, const CellKey& key, const Cell& cell, const ClassTable& table,
                const EventSizes* sizes) {
  if (key.bucket == kBucketUnknown || key.bucket >= kSizeBuckets) {
    add_share(out[ClassCellKey{kNoClass, key.op}], cell.counters, cell.latency);
    return;
  }
  const uint64_t lo = bucket_lo(key.bucket), hi = bucket_hi(key.bucket);
  const size_t first = table.class_of(lo), last = table.class_of(hi);
  if (first == last) {
    add_share(out[ClassCellKey{static_cast<uint32_t>(first), key.op}], cell.counters, cell.latency);
    return;
  }
  const size_t n = last - first + 1;
  const auto classes = table.classes();

  Weights by_count(n, 0), by_bytes(n, 0), by_ticks(n, 0);
  std::vector<uint64_t> event_max(n, 0);
  std::map<uint16_t, Weights> by_bin;  // latency bin -> events per class
  const std::map<uint64_t, SizeTally>* tallies = sizes ? sizes->find(key) : nullptr;
  bool have_events = false;
  if (tallies) {
    for (const auto& [size, tally] : *tallies) {
      if (size < lo || size > hi || tally.events == 0) continue;
      const size_t i = table.class_of(size) - first;
      have_events = true;
      by_count[i] += static_cast<long double>(tally.events);
      by_bytes[i] += static_cast<long double>(size) * static_cast<long double>(tally.events);
      by_ticks[i] += static_cast<long double>(tally.ticks);
      event_max[i] = std::max(event_max[i], tally.max_ticks);
      for (const auto& [bin, count] : tally.latency) {
        auto& w = by_bin[bin];
        if (w.empty()) w.assign(n, 0);
        w[i] += static_cast<long double>(count);
      }
    }
  }
  if (!have_events) {
    for (size_t i = 0; i < n; ++i) {
      const uint64_t a = std::max(lo, classes[first + i].lo);
      const uint64_t b = std::min(hi, classes[first + i].hi);
      by_count[i] = static_cast<long double>(b - a) + 1;
      by_bytes[i] = range_sum(a, b);
    }
    by_ticks = by_count;
    by_bin.clear();
  } else {
    long double ticks = 0;
    for (long double t : by_ticks) ticks += t;
    if (!(ticks > 0)) by_ticks = by_count;
    long double bytes = 0;
    for (long double b : by_bytes) bytes += b;
    if (!(bytes > 0)) by_bytes = by_count;
  }

  const Counters& c = cell.counters;
  // Calls first; bytes, failures and timed calls only where calls went (apportioned apart, a class
  // could otherwise get bytes of no call), timed ticks only where timed calls went.
  const auto calls = apportion<uint64_t>(c.calls, by_count);
  const Weights with_calls = c.calls ? only_where(by_count, calls) : by_count;
  const auto failed = apportion<uint64_t>(c.failed, with_calls);
  const auto timed = apportion<uint64_t>(c.timed, with_calls);
  const auto bytes = apportion<ByteCount>(c.bytes, c.calls ? only_where(by_bytes, calls) : by_bytes);
  const auto ticks = apportion<uint64_t>(c.timed_ticks, c.timed ? only_where(by_ticks, timed) : by_ticks);
  std::vector<std::map<uint16_t, uint64_t>> latency(n);
  for (const auto& [bin, count] : cell.latency) {
    const auto it = by_bin.find(bin);
    const auto parts = apportion<uint64_t>(count, it != by_bin.end() ? it->second : by_count);
    for (size_t i = 0; i < n; ++i) {
      if (parts[i]) latency[i][bin] = parts[i];
    }
  }
  size_t longest = 0;
  for (size_t i = 1; i < n; ++i) {
    if (event_max[i] > event_max[longest]) longest = i;
  }

  for (size_t i = 0; i < n; ++i) {
    if (!calls[i] && !bytes[i] && !failed[i] && !timed[i] && !ticks[i] && latency[i].empty()) {
      continue;
    }
    Counters share{calls[i], bytes[i], failed[i], timed[i], ticks[i], 0};
    if (timed[i] || ticks[i]) {
      share.max_ticks = !have_events || i == longest ? c.max_ticks
                                                     : std::min(c.max_ticks, event_max[i]);
    }
    add_share(out[ClassCellKey{static_cast<uint32_t>(first + i), key.op}], share, latency[i]);
  }
}

}  // namespace

ClassCellMap split_cells(const CellMap& cells, const ClassTable& table, const EventSizes* sizes) {
  ClassCellMap out;
  for (const auto& [key, cell] : cells) split_cell(out, key, cell, table, sizes);
  return out;
}

ClassCellMap split_profile(const Profile& profile, const ClassTable& table,
                           const EventSizes* sizes) {
  CellMap all;
  for (const auto& thread : profile.threads) {
    for (const auto& [key, cell] : thread.cells) {
      Cell& into = all[key];
      into.counters.add(cell.counters);
      for (const auto& [bin, count] : cell.latency) into.latency[bin] += count;
    }
  }
  return split_cells(all, table, sizes);
}

}  // namespace allocscope
