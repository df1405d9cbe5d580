// thread_profile.h — one thread's statistics: the winning (latest complete) snapshot.
//
// Every number is cumulative from the thread's first observed moment (first_tick) up to
// snapshot_tick; its rusage too with format.h kModeRusageSinceObserved (before: from the thread's
// own start).  Ticks are in the profile's clock (Profile::clock converts them).  Rusage fields
// equal to kRusageUnavailable could not be read by the shim.
#pragma once
#include <cstdint>

#include "allocscope/format.h"
#include "profile/stats.h"

namespace allocscope {

constexpr uint64_t kRusageUnavailable = ~uint64_t{0};

struct ThreadProfile {
  uint32_t serial = 0;  // 1, 2, … in order of the first allocator call
  uint32_t tid = 0;
  uint32_t seq = 0;     // snapshot number that won
  format::ThreadState state = format::ThreadState::Running;
  uint64_t first_tick = 0;
  uint64_t snapshot_tick = 0;
  uint64_t snapshot_mono_ns = 0;
  uint64_t last_tick = 0;
  format::Rusage rusage{};
  uint64_t events_written = 0;
  uint64_t events_dropped = 0;
  uint64_t reentrant_calls = 0;
  uint64_t events_read = 0;  // Event records of this thread found in the file
  CellMap cells;             // (op, bucket) -> statistics

  OpTable totals_by_op() const;
  Counters total() const;
  // The thread's lifetime: ticks from its first observed moment (first_tick: its first allocator
  // call, or the start of the profile for the thread that started it, format.h) to the snapshot
  // (its exit, or the end of the image for the threads alive then).  The one definition of it.
  uint64_t active_ticks() const { return snapshot_tick > first_tick ? snapshot_tick - first_tick : 0; }
};

}  // namespace allocscope
