// sleep_pairs.cpp — see sleep_pairs.h.
#include "model/sleep_pairs.h"

#include <algorithm>
#include <bit>

#include "allocscope/ops.h"
#include "allocscope/buckets.h"
#include "model/completion_coincidence.h"

namespace allocscope {

// call_size_group, folded into the bits of joined_groups_ (kUnknownGroup stays as it is).
uint32_t SleepPairTally::bit_group(const format::Event& e) {
  const uint32_t g = call_size_group(e);
  return g == kUnknownGroup ? g : std::min(g, kGroups - 1);
}

SleepPairTally::SleepPairTally(std::vector<ThreadSpan> span_of_serial) : spans_(std::move(span_of_serial)) {}

void SleepPairTally::grow(uint32_t serial) {
  if (serial < by_thread_.size()) return;
  const size_t n = static_cast<size_t>(serial) + 1;
  by_thread_.resize(n);
  calls_of_thread_.resize(n);
  threads_.grow(serial);
}

void SleepPairTally::add_window(std::span<const SweepItem> items, std::span<const uint8_t> slept, uint64_t trusted_from) {
  for (uint32_t s : seen_) by_thread_[s].clear();
  seen_.clear();
  for (size_t i = 0; i < items.size(); ++i) {
    const SweepItem& it = items[i];
    grow(it.thread);
    const format::Event& e = it.event;
    const uint32_t group = bit_group(e);
    std::vector<Call>& calls = by_thread_[it.thread];
    if (calls.empty()) seen_.push_back(it.thread);
    ThreadCalls& tc = calls_of_thread_[it.thread];
    const bool asleep = i < slept.size() && slept[i] != 0;
    if (allocates(e.op)) {
      ++tc.allocating;
      tc.allocating_slept += asleep;
    } else if (releases(e.op)) {
      ++tc.releasing;
      tc.releasing_slept += asleep;
    }
    calls.push_back(Call{e.start_tick, e.start_tick + e.duration_ticks, group});
    if (group != kUnknownGroup) ++calls_of_group_[group];
    if (it.inside == 1 && group != kUnknownGroup) {
      ++met_one_;
      met_one_apart_ += it.inside_near_size == 0;
    }
  }
  for (size_t i = 0; i < items.size() && i < slept.size(); ++i) {
    if (!slept[i]) continue;
    const SweepItem& it = items[i];
    const format::Event& e = it.event;
    const uint64_t t = e.start_tick;
    if (t < trusted_from) continue;
    ++slept_;
    // The other busy threads whose calls span t and that were seen in this window by t: inside
    // if their last call that started by t had not ended (an unseen one is taken as outside).
    int64_t partner = -1;
    uint32_t partner_group = kUnknownGroup;
    unsigned inside = 0;
    for (uint32_t s = 0; s < spans_.size(); ++s) {
      if (s == it.thread || !spans_[s].busy || spans_[s].first > t || spans_[s].last < t) continue;
      if (s >= by_thread_.size() || by_thread_[s].empty() || by_thread_[s].front().start > t) continue;
      const std::vector<Call>& calls = by_thread_[s];
      // The last call of s that started by t: s is inside at t if it has not ended.
      auto next = std::upper_bound(calls.begin(), calls.end(), t, [](uint64_t tick, const Call& c) { return tick < c.start; });
      const Call& c = *(next - 1);
      if (c.end > t) {
        ++inside;
        partner = s;
        partner_group = c.group;
      }
    }
    if (inside != 1) continue;
    ++pairs_;
    threads_.unite(it.thread, static_cast<uint32_t>(partner));
    const uint32_t group = bit_group(e);
    if (sizes_apart(group, partner_group)) {
      ++apart_;
      joined_groups_[group] |= uint64_t{1} << partner_group;
      joined_groups_[partner_group] |= uint64_t{1} << group;
    }
  }
}

SleepPairsMeasure SleepPairTally::measure() const {
  SleepPairsMeasure m;
  m.slept = slept_;
  m.pairs = pairs_;
  m.apart = apart_;
  m.met_apart_share = met_one_ ? static_cast<double>(met_one_apart_) / static_cast<double>(met_one_) : 0;
  // Sets of powers of two joined by apart pairs (connected components), weighted by their calls.
  std::array<bool, kGroups> done{};
  uint64_t total = 0, largest = 0;
  for (uint64_t n : calls_of_group_) total += n;
  for (uint32_t g = 0; g < kGroups; ++g) {
    if (done[g]) continue;
    uint64_t weight = 0;
    std::vector<uint32_t> stack{g};
    done[g] = true;
    while (!stack.empty()) {
      const uint32_t x = stack.back();
      stack.pop_back();
      weight += calls_of_group_[x];
      for (uint64_t bits = joined_groups_[x]; bits; bits &= bits - 1) {
        const auto y = static_cast<uint32_t>(std::countr_zero(bits));
        if (!done[y]) {
          done[y] = true;
          stack.push_back(y);
        }
      }
    }
    largest = std::max(largest, weight);
  }
  m.joined_share = total ? static_cast<double>(largest) / static_cast<double>(total) : 0;
  // Busy threads: all in one set of threads joined by pairs, and the fewest allocating sleeps.
  DisjointSets sets = threads_;
  int64_t root = -1;
  bool joined = true;
  bool any = false;
  for (uint32_t s = 0; s < spans_.size(); ++s) {
    if (!spans_[s].busy) continue;
    const uint32_t r = sets.find(s);
    if (root < 0) root = r;
    joined = joined && static_cast<int64_t>(r) == root;
    const ThreadCalls tc = s < calls_of_thread_.size() ? calls_of_thread_[s] : ThreadCalls{};
    m.min_thread_slept_allocating = any ? std::min(m.min_thread_slept_allocating, tc.allocating_slept) : tc.allocating_slept;
    any = true;
    m.slept_allocating += tc.allocating_slept;
    const double release_rate =
        tc.releasing ? static_cast<double>(tc.releasing_slept) / static_cast<double>(tc.releasing) : 0.0;
    m.awake_threads += tc.allocating_slept == 0 && static_cast<double>(tc.allocating) * release_rate >= kAwakeExpected;
  }
  m.threads_joined = any && joined;
  return m;
}

}  // namespace allocscope
