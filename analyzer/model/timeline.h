// timeline.h — what the threads did over time, for the report's plots.
//
// The time from the process's start (else the first thread's first call) to its end (else the
// last snapshot) is cut into equal slots, at most kTimelineSlots and none shorter than a sampling
// period (2^window_shift ticks).  Each slot gathers the timed windows that start in it:
//   * slots: threads inside the allocator over the trusted parts of the windows (the sweep's
//     measure, window_sweep.h), their mean and the most at once, and the timed calls started;
//   * lanes: for the threads with the most timed calls (at most kTimelineLanes), the share of the
//     windows' time the thread spent inside calls that started in them (each call clipped to its
//     window, the probe overhead taken out), and the part of it spent waiting.
// Which windows a slot holds follows from the sampling period and the windows' offsets, so a slot
// without timed calls is time when no thread was inside, not a gap in the data.  Memory is fixed
// by the two caps.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "allocscope/format.h"
#include "model/window_sweep.h"

namespace allocscope {

struct Profile;

constexpr size_t kTimelineSlots = 240;
constexpr size_t kTimelineLanes = 32;

struct TimelineSlot {
  double mean_inside = 0;  // threads inside, averaged over the slot's trusted window time
  uint32_t max_inside = 0;
  uint64_t calls = 0;      // timed calls that started in the slot
};

struct ThreadLane {
  uint32_t serial = 0, tid = 0;
  uint64_t timed = 0;           // timed calls of the thread (its snapshot's count)
  std::vector<float> busy;      // per slot: share of timed-window time inside calls, [0, 1]
  std::vector<float> waiting;   // per slot: … of it blocked off-CPU, <= busy
};

struct Timeline {
  double slot_ns = 0;           // slot 0 starts at the process's start
  double timed_fraction = 0;    // share of each sampling period inside timed windows
  std::vector<TimelineSlot> slots;
  std::vector<ThreadLane> lanes;   // the threads with the most timed calls, busiest first
  uint32_t lanes_left_out = 0;     // threads with timed calls that have no lane
  uint64_t calls_outside = 0;      // timed calls outside the span, counted in the nearest slot
};

class TimelineBuilder {
 public:
  TimelineBuilder(const Profile& profile, const SweepConfig& config);

  // A settled window (late events' infos are ignored).
  void add_window(const WindowInfo& info);
  // A timed call of profile.threads[thread_index]; `busy` and `wait` are its duration less the
  // probe overhead and its waiting part, in ticks.
  void add_call(size_t thread_index, const format::Event& e, double busy, double wait);

  Timeline finish() const;

 private:
  size_t slot_of(uint64_t tick, bool* outside = nullptr) const;
  uint64_t windows_before(uint64_t tick) const;  // windows that start before `tick`
  uint64_t windows_in(size_t slot) const;        // windows that start in the slot

  const Profile& profile_;
  SweepConfig config_;  // where the windows fall
  uint64_t t0_ = 0, t1_ = 0;
  size_t n_ = 1;
  double slot_ticks_ = 1;
  std::vector<double> inside_;
  std::vector<uint32_t> max_inside_;
  std::vector<uint64_t> calls_;
  uint64_t outside_ = 0;
  std::vector<int32_t> lane_of_thread_;  // by index in profile.threads; -1: no lane
  std::vector<size_t> lane_threads_;     // thread indexes, busiest first
  std::vector<uint64_t> timed_;          // by index in profile.threads: timed calls
  size_t lanes_left_out_ = 0;
  std::vector<std::vector<double>> busy_, wait_;  // per lane, per slot: ticks
};

}  // namespace allocscope
