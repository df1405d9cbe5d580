// The report's timeline: see timeline.h.
#include "model/timeline.h"

#include <algorithm>
#include <cmath>

#include "profile/profile.h"
#include "model/window_sweep.h"

namespace allocscope {

TimelineBuilder::TimelineBuilder(const Profile& profile, const SweepConfig& config)
    : profile_(profile), config_(config) {
  bool have_start = false;
  if (profile.process) {
    t0_ = profile.process->info.start_tick;
    have_start = true;
  }
  for (const auto& t : profile.threads) {
    if (!have_start || t.first_tick < t0_) t0_ = t.first_tick;
    have_start = true;
    t1_ = std::max({t1_, t.snapshot_tick, t.last_tick});
  }
  if (profile.end) t1_ = std::max(t1_, profile.end->end_tick);
  if (t1_ <= t0_) t1_ = t0_ + 1;

  // Slots no shorter than a period, so that a window starts in every one.
  const double period = std::ldexp(1.0, static_cast<int>(config_.window_shift));
  const double span = static_cast<double>(t1_ - t0_);
  n_ = static_cast<size_t>(std::clamp(std::floor(span / period), 1.0, static_cast<double>(kTimelineSlots)));
  slot_ticks_ = span / static_cast<double>(n_);
  inside_.assign(n_, 0.0);
  max_inside_.assign(n_, 0);
  calls_.assign(n_, 0);

  std::vector<size_t> order;
  timed_.resize(profile.threads.size());
  for (size_t i = 0; i < profile.threads.size(); ++i) {
    timed_[i] = profile.threads[i].total().timed;
    if (timed_[i] > 0) order.push_back(i);
  }
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return timed_[a] > timed_[b]; });
  lanes_left_out_ = order.size() > kTimelineLanes ? order.size() - kTimelineLanes : 0;
  lane_of_thread_.assign(profile.threads.size(), -1);
  for (size_t i = 0; i < order.size() && i < kTimelineLanes; ++i) {
    lane_of_thread_[order[i]] = static_cast<int32_t>(i);
    lane_threads_.push_back(order[i]);
  }
  busy_.assign(lane_threads_.size(), std::vector<double>(n_, 0.0));
  wait_.assign(lane_threads_.size(), std::vector<double>(n_, 0.0));
}

size_t TimelineBuilder::slot_of(uint64_t tick, bool* outside) const {
  if (tick < t0_ || tick >= t1_) {
    if (outside) *outside = true;
    return tick < t0_ ? 0 : n_ - 1;
  }
  const auto slot = static_cast<size_t>(static_cast<double>(tick - t0_) / slot_ticks_);
  return std::min(slot, n_ - 1);
}

uint64_t TimelineBuilder::windows_before(uint64_t tick) const {
  // The windows of the periods before the one holding `tick`, and that period's own if it starts
  // before `tick`.
  const uint64_t period = tick >> config_.window_shift;
  return period + (config_.window_start(period) < tick ? 1 : 0);
}

uint64_t TimelineBuilder::windows_in(size_t slot) const {
  // A slot's first tick is the first whole tick at or after its real-valued start.  Slot 0 also
  // holds the window of the period holding t0 (it may start before t0), the last slot those that
  // start at t1 or later (none, unless the file holds late calls).
  const double t0 = static_cast<double>(t0_);
  const auto first_tick = [&](size_t s) {
    return static_cast<uint64_t>(std::ceil(t0 + static_cast<double>(s) * slot_ticks_));
  };
  const uint64_t lo = slot == 0 ? (t0_ >> config_.window_shift) << config_.window_shift : first_tick(slot);
  const uint64_t hi = slot + 1 == n_ ? t1_ : first_tick(slot + 1);
  const uint64_t before_lo = windows_before(lo), before_hi = windows_before(hi);
  return before_hi > before_lo ? before_hi - before_lo : 1;
}

void TimelineBuilder::add_window(const WindowInfo& info) {
  if (info.late) return;
  const size_t s = slot_of(info.start);
  inside_[s] += static_cast<double>(info.inside_ticks);
  max_inside_[s] = std::max(max_inside_[s], info.max_inside);
}

void TimelineBuilder::add_call(size_t thread_index, const format::Event& e, double busy, double wait) {
  bool outside = false;
  const size_t s = slot_of(e.start_tick, &outside);
  ++calls_[s];
  outside_ += outside;
  if (thread_index >= lane_of_thread_.size() || lane_of_thread_[thread_index] < 0) return;
  const auto lane = static_cast<size_t>(lane_of_thread_[thread_index]);
  // Only the part of the call inside its window was watched.
  const uint64_t window_end = config_.window_start(e.start_tick >> config_.window_shift) + config_.window_len;
  double watched = 1;
  if (e.duration_ticks > 0) {
    const uint64_t end = std::min(e.start_tick + e.duration_ticks, window_end);
    watched = end > e.start_tick ? static_cast<double>(end - e.start_tick) / static_cast<double>(e.duration_ticks) : 0.0;
  }
  busy_[lane][s] += busy * watched;
  wait_[lane][s] += wait * watched;
}

Timeline TimelineBuilder::finish() const {
  Timeline t;
  t.slot_ns = profile_.clock.to_ns_exact(slot_ticks_);
  const uint64_t window_len = config_.window_len, trim = config_.trim;
  t.timed_fraction = std::min(1.0, static_cast<double>(window_len) / std::ldexp(1.0, static_cast<int>(config_.window_shift)));
  t.calls_outside = outside_;
  std::vector<double> watched(n_), trusted(n_);
  for (size_t s = 0; s < n_; ++s) {
    const auto windows = static_cast<double>(windows_in(s));
    watched[s] = windows * static_cast<double>(window_len);
    trusted[s] = windows * static_cast<double>(window_len > trim ? window_len - trim : 0);
    TimelineSlot slot;
    slot.mean_inside = trusted[s] > 0 ? inside_[s] / trusted[s] : 0;
    slot.max_inside = max_inside_[s];
    slot.calls = calls_[s];
    t.slots.push_back(slot);
  }
  for (size_t lane = 0; lane < lane_threads_.size(); ++lane) {
    const ThreadProfile& thread = profile_.threads[lane_threads_[lane]];
    ThreadLane l;
    l.serial = thread.serial;
    l.tid = thread.tid;
    l.timed = timed_[lane_threads_[lane]];
    for (size_t s = 0; s < n_; ++s) {
      const double busy = watched[s] > 0 ? std::clamp(busy_[lane][s] / watched[s], 0.0, 1.0) : 0.0;
      const double wait = watched[s] > 0 ? std::clamp(wait_[lane][s] / watched[s], 0.0, busy) : 0.0;
      l.busy.push_back(static_cast<float>(busy));
      l.waiting.push_back(static_cast<float>(wait));
    }
    t.lanes.push_back(std::move(l));
  }
  t.lanes_left_out = static_cast<uint32_t>(lanes_left_out_);
  return t;
}

}  // namespace allocscope
