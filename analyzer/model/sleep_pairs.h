// sleep_pairs.h — which calls a call that slept inside the allocator was waiting behind.
//
// A call that sleeps inside the allocator (a voluntary context switch, format.h kEvSwitches)
// waits for something another thread holds.  Where, at the moment it started, exactly one other
// thread is known to have been inside the allocator, that thread's call is the one it waited
// behind (or the one that had just handed the lock on): a *sleep pair*.  Under
// a lock per size class the two calls share a class, so their sizes are less than twice apart;
// under one lock for every size they are whatever the two threads happened to ask for.  A pair of
// sizes at least twice apart (completion_coincidence.h sizes_apart) joins the two sizes' powers of
// two: they are served by one lock.  Joined transitively, the powers of two that carry most of the
// calls form one group exactly when one lock serves most sizes; a lock per class never joins any.
// Noise (a call that slept behind a call its neighbour started just after it) pairs sizes at
// random now and then; under one lock, a sleeper's neighbour asks for a size twice apart about as
// often as any call's only neighbour inside does (`met_apart_share`, over every timed call that
// met exactly one other thread: window_sweep.h inside, inside_near_size), under a lock per class
// hardly ever.  The verdict compares the two.
// The pairs also join threads, and each thread's own allocating calls that slept are counted: a
// lock that one thread's frees share with another thread's allocations (glibc's arena under
// cross-thread frees) leaves the freeing thread's allocations awake.  With many threads and a
// short run a thread may show no allocation asleep by chance alone, so each thread's timed
// allocating calls are also set against its timed releases: under one lock for every call a
// call of either kind finds it taken alike.  A thread's allocations are *clearly awake* when none
// of its n_a timed allocating calls slept while its releases slept at a rate r with
// n_a * r >= kAwakeExpected (no sleep then has a chance of e^-4.6 = 1 %).  Every timed call
// counts: one shorter than format.h kSwitchSlowNs cannot have slept.
//
// "Known to have been inside": the thread's last timed call in the window that started by then
// had not ended.  A busy thread with no call in the window by then is taken to be outside, though
// it may be inside a call that began before the window: a waiter asleep there (holding nothing),
// or a holder unseen.  Requiring every busy thread to be seen left almost every sleep out with
// more threads than CPUs (most threads are off the CPU at any moment); the noise an unseen holder
// adds pairs the sleeper with a random neighbour, which is what the comparison with
// `met_apart_share` weighs.  Measured with a lock per size class at 4-16 threads (2-3 s runs,
// docs/analysis.md): no pair of those was apart in the stress and producer/consumer runs.  A
// thread that makes few calls (a main thread waiting in pthread_join) is never a partner.
//
// Numbers only; contention_wording.h words them.
#pragma once
#include <array>
#include <cstdint>
#include <span>
#include <vector>

#include "model/window_sweep.h"
#include "util/disjoint_sets.h"

namespace allocscope {

// A thread's allocator calls span [first, last] ticks (ThreadProfile::first_tick, last_tick);
// `busy`: cost_model.h busy_thread.  The others are neither paired nor judged.
struct ThreadSpan {
  uint64_t first = 0, last = 0;
  bool busy = false;
};

// Sleeps expected at a thread's own release rate below which its allocations' missing sleeps say
// nothing (above).
constexpr double kAwakeExpected = 4.6;

struct SleepPairsMeasure {
  uint64_t slept = 0;           // timed calls that slept, in the trusted part of a window
  uint64_t pairs = 0;           // … with exactly one other thread known to be inside
  uint64_t apart = 0;           // … of them, the two calls' sizes at least twice apart
  double met_apart_share = 0;   // of timed calls with exactly one other thread inside, sizes twice apart
  double joined_share = 0;      // timed calls of known size in the largest set of powers of two joined by apart pairs
  bool threads_joined = false;  // the pairs join every busy thread (>= 1 % of the timed calls) into one set
  uint64_t min_thread_slept_allocating = 0;  // over busy threads: the fewest allocating calls that slept
  uint64_t slept_allocating = 0;             // over busy threads: allocating calls that slept
  uint64_t awake_threads = 0;                // busy threads whose allocations are clearly awake (above)
};

class SleepPairTally {
 public:
  explicit SleepPairTally(std::vector<ThreadSpan> span_of_serial);

  // One settled window's calls in start order (window_sweep.h), `slept[i]` whether item i slept
  // inside its call, `trusted_from` the first tick at which every thread has noticed the window.
  void add_window(std::span<const SweepItem> items, std::span<const uint8_t> slept, uint64_t trusted_from);

  SleepPairsMeasure measure() const;

 private:
  struct Call {
    uint64_t start, end;
    uint32_t group;
  };
  std::vector<ThreadSpan> spans_;
  struct ThreadCalls {
    uint64_t allocating = 0, allocating_slept = 0;  // timed calls that request bytes, and of them asleep
    uint64_t releasing = 0, releasing_slept = 0;    // timed calls that release (ops.h releases()), and of them asleep
  };
  std::vector<ThreadCalls> calls_of_thread_;          // by serial
  DisjointSets threads_;                             // by serial: the threads joined by pairs
  static constexpr uint32_t kGroups = 64;           // size_group values (larger ones fold into the last)
  std::array<uint64_t, kGroups> calls_of_group_{};   // timed calls by size_group
  std::array<uint64_t, kGroups> joined_groups_{};    // bit g of [h]: an apart pair joined groups g and h
  uint64_t slept_ = 0, pairs_ = 0, apart_ = 0, met_one_ = 0, met_one_apart_ = 0;
  std::vector<std::vector<Call>> by_thread_;         // scratch: this window's calls by serial
  std::vector<uint32_t> seen_;                       // scratch: serials with calls in this window

  void grow(uint32_t serial);
  static uint32_t bit_group(const format::Event& e);
};

}  // namespace allocscope
