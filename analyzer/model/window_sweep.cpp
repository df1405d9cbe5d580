#include "model/window_sweep.h"

#include "model/completion_coincidence.h"

#include <algorithm>
#include <cmath>

#include "allocscope/buckets.h"
#include "allocscope/ops.h"

namespace allocscope {

namespace {

uint64_t end_of(const format::Event& e) { return e.start_tick + e.duration_ticks; }

}  // namespace

SweepConfig sweep_config_for(const format::Calibration& c, double tick_hz) {
  SweepConfig config;
  config.window_shift = std::min(c.window_shift, 62u);
  const uint64_t period = uint64_t{1} << config.window_shift;
  const uint32_t n = c.sample_every == 0 ? 1 : c.sample_every;
  config.window_len = std::max<uint64_t>(1, period / n);
  config.phased = (c.mode_flags & format::kModeWindowPhase) != 0;
  config.window_seed = c.window_seed;
  if (n > 1) {
    // Twice the longest gap between a thread's clock checks (allocscope/window_phase.h).  Before
    // the shim bounded it (format.h kModeNoticeBounded) the gap was window/8: where that exceeds
    // kWindowTrimNs (long windows), such a profile is trusted from a quarter of the window in.
    const auto trim = static_cast<uint64_t>(std::llround(tick_hz * 1e-9 * static_cast<double>(kWindowTrimNs)));
    const bool bounded = (c.mode_flags & format::kModeNoticeBounded) != 0;
    config.trim = bounded || config.window_len / 8 <= trim ? std::min(config.window_len / 4, trim) : config.window_len / 4;
  }
  config.horizon = static_cast<uint64_t>(std::llround(tick_hz * 0.6));
  config.running_ticks = static_cast<uint64_t>(std::llround(tick_hz * 10e-6));
  config.max_pending = size_t{1} << 19;  // about 25 MB of buffered events
  return config;
}

void WindowSweep::add(uint32_t thread, std::span<const format::Event> events) {
  for (const format::Event& e : events) {
    const uint64_t window = e.start_tick >> config_.window_shift;
    if (settled_any_ && window <= last_settled_) {
      ++totals_.late_events;
      const SweepItem late{e, thread, kUnknownInside};
      WindowInfo info;
      info.start = config_.window_start(window);
      info.late = true;
      sink_(std::span<const SweepItem>(&late, 1), info);
      continue;
    }
    if (!cached_ || cached_window_ != window) {  // consecutive events mostly share a window
      const auto [it, made] = pending_.try_emplace(window);
      if (made && !spare_.empty()) {  // a settled window's buffer, with its capacity
        it->second.swap(spare_.back());
        spare_.pop_back();
      }
      cached_ = &it->second;
      cached_window_ = window;
    }
    cached_->push_back(SweepItem{e, thread, kUnknownInside});
    ++pending_events_;
    latest_start_ = std::max(latest_start_, e.start_tick);
  }
  settle_ready();
}

void WindowSweep::settle_ready() {
  while (!pending_.empty()) {
    auto first = pending_.begin();
    const uint64_t period_end = (first->first + 1) << config_.window_shift;  // the window's, or later
    const bool old = latest_start_ > period_end && latest_start_ - period_end >= config_.horizon;
    if (!old && pending_events_ <= config_.max_pending) break;
    settle(first->first, first->second);
    pending_events_ -= first->second.size();
    if (cached_ == &first->second) cached_ = nullptr;
    if (spare_.size() < kSpareBuffers) {
      first->second.clear();
      spare_.push_back(std::move(first->second));
    }
    pending_.erase(first);
  }
}

void WindowSweep::finish() {
  for (auto& [window, items] : pending_) settle(window, items);
  pending_.clear();
  cached_ = nullptr;
  pending_events_ = 0;
}

uint64_t SweepTotals::busy_ticks() const {
  uint64_t t = 0;
  for (unsigned n = 1; n < kInsideLevels; ++n) t += ticks_at[n];
  return t;
}

uint64_t SweepTotals::contended_ticks() const {
  uint64_t t = 0;
  for (unsigned n = 2; n < kInsideLevels; ++n) t += ticks_at[n];
  return t;
}

double SweepTotals::inside_ticks() const {
  double t = 0;
  for (unsigned n = 1; n < kInsideLevels; ++n) t += static_cast<double>(n) * static_cast<double>(ticks_at[n]);
  return t;
}

// A window's items arrive chunk by chunk, and each thread's chunk is in start order: the vector
// is a few ascending runs.  A stable merge of the runs (pairwise, into scratch and back) sorts it
// in O(n log runs), where a general sort spent a fifth of `report`'s time on large profiles.
void WindowSweep::sort_by_start(std::vector<SweepItem>& items) {
  runs_.clear();
  runs_.push_back(0);
  for (size_t i = 1; i < items.size(); ++i) {
    if (items[i].event.start_tick < items[i - 1].event.start_tick) runs_.push_back(i);
  }
  if (runs_.size() == 1) return;
  runs_.push_back(items.size());
  scratch_.resize(items.size());
  const auto earlier = [](const SweepItem& a, const SweepItem& b) { return a.event.start_tick < b.event.start_tick; };
  std::vector<SweepItem>* from = &items;
  std::vector<SweepItem>* to = &scratch_;
  while (runs_.size() > 2) {  // runs_ holds the bounds: runs_.size() - 1 runs
    size_t out = 0;
    size_t k = 0;
    for (; k + 2 < runs_.size(); k += 2) {
      const auto a = from->begin() + static_cast<ptrdiff_t>(runs_[k]);
      const auto b = from->begin() + static_cast<ptrdiff_t>(runs_[k + 1]);
      const auto c = from->begin() + static_cast<ptrdiff_t>(runs_[k + 2]);
      std::merge(a, b, b, c, to->begin() + static_cast<ptrdiff_t>(runs_[k]), earlier);
      runs_[out++] = runs_[k];
    }
    if (k + 1 < runs_.size()) {  // an odd run left over: copied as it is
      std::copy(from->begin() + static_cast<ptrdiff_t>(runs_[k]), from->begin() + static_cast<ptrdiff_t>(runs_[k + 1]),
                to->begin() + static_cast<ptrdiff_t>(runs_[k]));
      runs_[out++] = runs_[k];
    }
    runs_[out++] = items.size();
    runs_.resize(out);
    std::swap(from, to);
  }
  if (from != &items) items.swap(scratch_);
}

// The other threads inside at `item`'s start, from the calls in progress (active_, which `item`
// joins): all of them, those requesting bytes, those that ran through their call, those of a
// near size.  Only a call that starts in the trusted part of its window knows them.
void WindowSweep::meet_others(SweepItem& item, uint64_t end, bool trusted) {
  const uint64_t start = item.event.start_tick;
  const bool allocating = allocates(item.event.op);
  const bool short_call = item.event.duration_ticks < config_.running_ticks;
  const uint32_t group = call_size_group(item.event);
  uint32_t others = 0, others_allocating = 0, others_running = 0, others_near = 0;
  bool replaced = false;
  for (size_t i = 0; i < active_.size();) {
    if (active_[i].end <= start) {
      active_[i] = active_.back();
      active_.pop_back();
      continue;
    }
    if (active_[i].thread == item.thread) {
      if (!replaced) {
        active_[i] = Running{end, item.thread, allocating, short_call, group};  // one call at a time: this one replaces it
        replaced = true;
      }
    } else {
      ++others;
      others_allocating += active_[i].allocating;
      others_running += active_[i].short_call;
      others_near += !sizes_apart(active_[i].group, group);
    }
    ++i;
  }
  if (!replaced) active_.push_back(Running{end, item.thread, allocating, short_call, group});
  if (trusted) {
    item.inside = static_cast<int32_t>(others);
    item.inside_allocating = static_cast<int32_t>(others_allocating);
    item.inside_running = static_cast<int32_t>(others_running);
    item.inside_near_size = static_cast<int32_t>(others_near);
    ++totals_.classified;
  }
}

void WindowSweep::settle(uint64_t window, std::vector<SweepItem>& items) {
  settled_any_ = true;
  last_settled_ = window;
  ++totals_.windows;
  const uint64_t ws = config_.window_start(window);
  const uint64_t lo = ws + config_.trim;
  const uint64_t hi = ws + config_.window_len;
  totals_.trusted_ticks += hi > lo ? hi - lo : 0;

  sort_by_start(items);

  // Inside at each call's start: calls carried over from earlier windows that are still running at
  // this window's start, and this window's calls in start order.  At the same time, threads inside
  // moment by moment: the time at each level, and a clock of contended time (>= 2 inside, trusted
  // parts only) read at each call's start and end.  Calls in progress wait in a min-heap of ends;
  // at equal ticks an end comes before a start.
  active_.clear();
  heap_.clear();
  const auto later_end = [](const Point& a, const Point& b) { return a.tick > b.tick; };
  uint32_t n = 0;
  uint64_t prev = ws;
  uint64_t contended_clock = 0;
  uint64_t inside_ticks = 0;
  uint32_t max_inside = 0;
  auto advance = [&](uint64_t tick) {
    if (n > 0 && tick > prev) {
      const uint64_t s = std::max(prev, lo), e = std::min(tick, hi);
      if (e > s) {
        totals_.ticks_at[std::min<uint32_t>(n, kInsideLevels - 1)] += e - s;
        totals_.max_inside = std::max(totals_.max_inside, n);
        inside_ticks += n * (e - s);
        max_inside = std::max(max_inside, n);
        if (n >= 2) contended_clock += e - s;
      }
    }
    prev = std::max(prev, tick);
  };
  auto end_calls_until = [&](uint64_t tick) {  // ends at or before `tick`
    while (!heap_.empty() && heap_.front().tick <= tick) {
      std::pop_heap(heap_.begin(), heap_.end(), later_end);
      const Point p = heap_.back();
      heap_.pop_back();
      advance(p.tick);
      if (p.index != ~0u) items[p.index].contended_ticks = contended_clock - items[p.index].contended_ticks;
      if (n > 0) --n;
    }
  };
  for (const Running& r : in_flight_) {
    if (r.end <= ws) continue;
    active_.push_back(r);
    heap_.push_back(Point{r.end, ~0u});
    std::push_heap(heap_.begin(), heap_.end(), later_end);
    ++n;
  }
  for (size_t index = 0; index < items.size(); ++index) {
    SweepItem& item = items[index];
    const uint64_t start = item.event.start_tick;
    const uint64_t end = end_of(item.event);
    end_calls_until(start);
    advance(start);
    ++n;
    item.contended_ticks = contended_clock;  // the clock at its start
    // A call measured at 0 ticks (a coarse clock) still occupies its tick.
    heap_.push_back(Point{std::max(end, start + 1), static_cast<uint32_t>(index)});
    std::push_heap(heap_.begin(), heap_.end(), later_end);

    meet_others(item, end, start >= lo && start < hi);
  }
  end_calls_until(~uint64_t{0});

  in_flight_.clear();
  for (const Running& r : active_) {
    if (r.end > hi) in_flight_.push_back(r);
  }
  WindowInfo info;
  info.start = ws;
  info.contended_ticks = contended_clock;
  info.inside_ticks = inside_ticks;
  info.max_inside = max_inside;
  sink_(std::span<const SweepItem>(items.data(), items.size()), info);
}

}  // namespace allocscope
