// window_sweep.h — puts the timed calls of all threads back on one time line, window by window.
//
// With sampling (Calibration::sample_every N > 1) every thread times every call that starts in the
// same global windows: period/N ticks of each period of 2^window_shift ticks, at an offset within
// the period drawn anew for every period from the profile's seed (allocscope/window_phase.h;
// profiles without kModeWindowPhase have every window at offset 0).  Inside a window the analyzer
// therefore sees every call of every thread that started there, and can tell, for each call, how
// many *other* threads were inside the allocator when it started.  With N = 1 every call is timed
// and a window is simply one period.
//
// Events reach the file per thread, in chunks (a thread writes its ring when it is full or after
// about 250 ms), so the threads' chunks of one window arrive at different places in the file.
// WindowSweep buffers events by window and settles a window once the file has moved well past it
// (`horizon` ticks later than the window's end, by the latest start seen), or earlier when more
// than `max_pending` events are buffered.  Memory is bounded by the horizon and the cap, never by
// the size of the profile.  An event whose window was already settled is *late*: it is passed on
// with inside = kUnknownInside and counted.
//
// Settling a window: its events are sorted by start.  Calls still running from earlier windows
// (at most one per thread) are carried into it.  A call's `inside` is the number of other threads
// with a call in progress at its start; `inside_allocating` counts those of them whose call
// requests bytes (malloc, new, realloc, …: allocscope/ops.h allocates()); `inside_running` those
// whose call lasted less than `running_ticks` (10 µs): a thread that ran through its call, as a
// lock's holder does, not one preempted or asleep inside it; `inside_near_size` those whose call
// asked for a size less than twice apart from its own, or of unknown size (completion_coincidence.h
// sizes_apart: under a lock per size class only those can share its lock).  It is known (>= 0) only for calls that start in the
// trusted part of the window, [window start + trim, window end): during the first `trim` ticks a
// thread may not have noticed the window yet (the shim checks the clock only every few calls
// outside windows), so another thread's call there could be invisible.  Calls that began before
// the window outside any timed window remain invisible: a thread blocked in such a call is not
// counted until it returns.
//
// The sweep also measures, over the trusted parts, how long exactly n threads were inside, for
// every n (ticks_at), and for each call the part of it, within trusted parts, during which at
// least one other thread was inside too (contended_ticks).  The serialization index
// (cost_model.h) is built from these.  Each settled window also reports its own share of these
// measures (WindowInfo), for the report's concurrency timeline.
#pragma once
#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <span>
#include <utility>
#include <vector>

#include "allocscope/format.h"
#include "allocscope/window_phase.h"

namespace allocscope {

constexpr int32_t kUnknownInside = -1;

struct SweepItem {
  format::Event event;
  uint32_t thread = 0;              // thread_serial
  int32_t inside = kUnknownInside;  // other threads inside at the call's start, or kUnknownInside
  int32_t inside_allocating = kUnknownInside;  // … of them, those inside a call that requests bytes
  int32_t inside_running = kUnknownInside;     // … those inside a call shorter than running_ticks
  int32_t inside_near_size = kUnknownInside;   // … those inside a call of a size not twice apart from its own (or unknown)
  uint64_t contended_ticks = 0;     // of the call, trusted time with another thread inside too
};

struct SweepConfig {
  unsigned window_shift = 20;
  uint64_t window_len = 1u << 20;  // ticks of each period that are timed
  bool phased = false;             // windows at a per-period offset (format::kModeWindowPhase)
  uint64_t window_seed = 0;        // … drawn from this seed
  uint64_t trim = 0;               // untrusted ticks at the start of each window
  uint64_t horizon = 0;            // settle a window once the latest start is this far past it
  uint64_t running_ticks = ~uint64_t{0};  // a call shorter than this ran to its end (not preempted, not asleep)
  size_t max_pending = size_t{1} << 20;

  // The first tick of window `window` (the period tick >> window_shift), as the shim placed it.
  uint64_t window_start(uint64_t window) const {
    return window_start_of(window << window_shift, window_shift, window_len, phased, window_seed);
  }
};

// The configuration for a profile's calibration: its windows' placement; trim = min(window/4,
// 5 µs) with sampling, 0 when every call is timed; horizon = 0.6 s; running_ticks = 10 µs.
SweepConfig sweep_config_for(const format::Calibration& calibration, double tick_hz);

constexpr unsigned kInsideLevels = 65;  // ticks_at[n] for n = 0..64, more folded into 64

struct SweepTotals {
  uint64_t windows = 0;          // windows settled
  uint64_t late_events = 0;      // events whose window had already been settled
  uint64_t classified = 0;       // events with a known `inside`
  uint64_t trusted_ticks = 0;    // total length of the trusted parts of the settled windows
  std::array<uint64_t, kInsideLevels> ticks_at{};  // time with exactly n threads inside
  uint32_t max_inside = 0;       // most threads inside at once (trusted parts)

  uint64_t busy_ticks() const;       // n >= 1
  uint64_t contended_ticks() const;  // n >= 2
  double inside_ticks() const;       // sum of n * time
};

struct WindowInfo {
  uint64_t start = 0;            // the window's first tick
  uint64_t contended_ticks = 0;  // trusted time with >= 2 threads inside
  uint64_t inside_ticks = 0;     // trusted part: sum over its ticks of the threads inside
  uint32_t max_inside = 0;       // trusted part: the most threads inside at once
  bool late = false;             // a late event, not a window
};

class WindowSweep {
 public:
  // Receives the events of one settled window in start order (or one late event).
  using Sink = std::function<void(std::span<const SweepItem>, const WindowInfo&)>;

  WindowSweep(const SweepConfig& config, Sink sink) : config_(config), sink_(std::move(sink)) {}

  void add(uint32_t thread, std::span<const format::Event> events);
  // Settles every window still buffered.  Call once, after the last add().
  void finish();

  const SweepTotals& totals() const { return totals_; }

 private:
  void settle_ready();
  void settle(uint64_t window, std::vector<SweepItem>& items);
  void sort_by_start(std::vector<SweepItem>& items);
  void meet_others(SweepItem& item, uint64_t end, bool trusted);

  SweepConfig config_;
  Sink sink_;
  std::map<uint64_t, std::vector<SweepItem>> pending_;
  std::vector<SweepItem>* cached_ = nullptr;  // pending_[cached_window_]
  uint64_t cached_window_ = 0;
  size_t pending_events_ = 0;
  uint64_t latest_start_ = 0;
  bool settled_any_ = false;
  uint64_t last_settled_ = 0;
  struct Running {
    uint64_t end;
    uint32_t thread;
    bool allocating;  // the call requests bytes (allocscope/ops.h allocates())
    bool short_call;  // it lasted less than running_ticks
    uint32_t group;   // its size's power of two (completion_coincidence.h size_group)
  };
  std::vector<Running> in_flight_;                        // calls still running past the window
  std::vector<Running> active_;                           // scratch: calls in progress
  struct Point {
    uint64_t tick;   // the call's end
    uint32_t index;  // item index, or ~0u for a call carried over
  };
  std::vector<Point> heap_;                               // scratch: ends of calls in progress
  static constexpr size_t kSpareBuffers = 4;
  std::vector<std::vector<SweepItem>> spare_;             // emptied buffers of settled windows
  std::vector<size_t> runs_;                              // scratch: bounds of ascending runs
  std::vector<SweepItem> scratch_;                        // scratch: merge target
  SweepTotals totals_;
};

}  // namespace allocscope
