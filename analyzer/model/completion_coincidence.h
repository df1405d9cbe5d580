// completion_coincidence.h — whether calls of different threads finish at the same moments.
//
// Under one lock that every call holds to its end, the lock serves one call at a time: after a
// call of one thread finishes, a call of another thread that was waiting still has its own
// critical section to run, so the ends of calls of different threads are never closer than that
// critical section.  Where threads do not exclude each other, their calls end independently, and
// ends of different threads fall close together as often as their rates predict.  The measure
// (docs/analysis.md, "Contention verdict") compares, within every timing window, the density of
// pairs of ends of different threads less than `near` ticks apart with their density `far` ticks
// apart (0.6–1.9 µs at a 10 ns clock step, beyond any critical section):
//
//   Q = (pairs closer than near / near) / (pairs far0..far1 apart / (far1 - far0))
//
// ≈ 1: ends coincide as chance says; ≪ 1: calls take turns.  A busy machine, preemption or a slow
// allocator lower the rate of ends at every distance alike and leave Q where it was; nothing but
// mutual exclusion makes a hole around 0.  Pairs of calls in different size classes are also
// measured alone: a lock per size class leaves them coinciding freely, one global lock does not.
//
// On a virtual TSC that advances in steps (10 ns here), ends fall on a grid, and `near` is a whole
// number of steps so that both orders of every pair are counted once (ties twice: one pair, both
// orders).  Pairs are weighted by 1/(W - d), W the trusted length of the window and d their
// distance, since a window holds fewer pairs far apart than close together.  A window holding more
// than 2048 ends (every call timed) is measured in slices of 2048 ends, at most 4 of them spread
// over the window, each as a window of its own: the work stays bounded.
//
// The pairs of one window are not independent.  Threads running the same loop keep their phases
// for a while, so the ends of two threads fall near each other for a whole stretch, or never: in
// one window of the stress harness under glibc's malloc 944 far pairs predicted 15 near ones and
// 2 came, a hole no lock made.  The spread of Q is therefore taken from the windows themselves
// (each window one unit, a jackknife over them, widened by Student's t for few windows), and never
// below what Poisson counts say.  Q needs the far pairs spread over at least ten windows' worth
// (their effective number: the square of their sum over the sum of their squares), since a spread
// read from fewer says little; the runs of bench/verdicts measure 12 to 1,600.
#pragma once
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "allocscope/format.h"

namespace allocscope {

struct CallEnd {
  uint64_t tick;    // the call's end
  uint32_t thread;  // thread serial
  uint32_t group;   // the size's power of two (size_group), or kUnknownGroup (a free whose size was not taken)
};
constexpr uint32_t kUnknownGroup = ~0u;

// The power of two a size falls in (std::bit_width): two calls whose groups differ by 2 or more
// asked for sizes at least twice apart — in different size classes of any allocator whose
// classes are no wider than a power of two, so under different locks if the allocator has a
// lock per class.  Calls of neighbouring groups may share a class (say 60 B and 70 B).
uint32_t size_group(uint64_t size);
// A timed call's size group: of the request it stands for (format.h event_size), or kUnknownGroup
// for a release whose size was not taken.
uint32_t call_size_group(const format::Event& e);
// Sizes apart count only where the smaller lies below 1 KiB (its group below kApartBelowGroup):
// above some size, allocators serve every request through one path and one lock — tcmalloc's
// page heap above 256 KiB, a secondary allocator for large blocks, one lock for the mapped ones —
// so two large sizes twice apart may share a lock that small ones never take.  Measured: threads
// that only asked for 300 KiB-2.4 MiB under tcmalloc, and under test allocators with one lock
// for every size from 2 KiB (libclasslock_alloc.so) or 4 KiB (libbiglock_alloc.so) up, made
// their calls wait for each other across sizes twice apart or more, and were called `global_lock`
// (docs/analysis.md).  Below 1 KiB every allocator measured keeps classes no wider than a power
// of two.
constexpr uint32_t kApartBelowGroup = 11;  // size_group(1024)
inline bool sizes_apart(uint32_t a, uint32_t b) {
  return a != kUnknownGroup && b != kUnknownGroup && (a > b ? a - b : b - a) >= 2 &&
         (a < b ? a : b) < kApartBelowGroup;
}

struct CoincidenceMeasure {
  uint64_t near_pairs = 0, far_pairs = 0;  // pairs of ends counted in each zone (unweighted)
  double windows = 0;                      // the effective number of windows the far pairs came from
  bool few_windows = false;                // null for that reason alone: enough pairs, too few windows
  std::optional<double> value;             // Q; null: too few pairs, or too few windows
  double se = 0;                           // its standard error: the windows' spread, at least Poisson's
  double low() const { return value ? *value - 2 * se : 0; }
  double high() const { return value ? *value + 2 * se : 0; }
};

class CoincidenceTally {
 public:
  // `step`: the clock's step in ticks (1 on a fine clock); `min_near`: the near zone's least
  // width in ticks (the shortest critical section worth seeing).
  CoincidenceTally(uint64_t step, uint64_t min_near);

  // The ends of the calls that began in the trusted part [lo, hi) of one window, any order.
  void add_window(std::vector<CallEnd>& ends, uint64_t lo, uint64_t hi);

  CoincidenceMeasure all() const { return measure(&Unit::all); }
  CoincidenceMeasure across_classes() const { return measure(&Unit::across); }  // pairs of sizes_apart
  uint64_t near_ticks() const { return near_; }
  uint64_t far_ticks() const { return far0_; }

 private:
  struct Sums {
    double near = 0, far = 0;  // weighted
    uint64_t near_pairs = 0, far_pairs = 0;
    void add(const Sums& o) {
      near += o.near, far += o.far;
      near_pairs += o.near_pairs, far_pairs += o.far_pairs;
    }
  };
  struct Unit {  // one window
    Sums all, across;
  };
  CoincidenceMeasure measure(Sums Unit::*which) const;
  void add_slice(std::span<const CallEnd> ends, uint64_t lo, uint64_t hi, Unit& unit);

  uint64_t near_, far0_, far1_;
  std::vector<Unit> units_;  // windows with any pair
};

// The clock's step from the timed durations: the smallest duration of at least 2 ticks that 1 %
// of the timed calls measured (a coarse clock makes every duration a multiple of it; on a fine
// clock it is the fastest common call, which is as good a unit).  `counts`: calls per duration,
// exact below its size.
uint64_t clock_step_of(std::span<const uint64_t> counts, uint64_t total);

}  // namespace allocscope
