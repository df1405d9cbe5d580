// lifetimes.h — what happens to every block of a trace: who frees it, when, and what is left.
//
// LifetimeTracker is a TraceVisitor (trace_decode.h).  It follows blocks by address across all
// threads, in the merged time order:
//   * at a call's *enter* the block it gives back is released: free(p), and realloc's old block;
//   * at its *exit* the block it returns is obtained: malloc, calloc, the memaligns, valloc,
//     pvalloc, and realloc's new block.
// A block's *lifetime* is from the exit of the call that returned it to the enter of the call
// that released it.  *Allocations in between* counts the blocks the allocating thread obtained
// after this one and before its release.  A release by another thread than the one that
// obtained the block is a *cross-thread* free.
//
// A trace whose durations are sampled holds only the start of its untimed calls, so calls that
// overlapped may be visited out of order: a block obtained at an address still live, by an
// untimed call or over a block an untimed call obtained (either may be early), waits until that
// address is released, instead of counting as a reuse of a live address; and when several blocks
// are at one address, a thread releases its own before another thread's.
//
// Realloc: a successful realloc(p, n) ends p's lifetime and starts the new block's (also when it
// resizes in place); realloc(p, 0) returning NULL is a free; a failed realloc changes nothing.
// Successive reallocs of one block form a *growth chain* from the block's first allocation to its
// free (or the end of the trace): its length is the number of reallocs, its growth the final size
// over the first; each realloc is *in place* (same address) or *moved*.
//
// A shape is (size class, lifetime band, cross-thread).  Each block counts once, in the class of
// its request size; its calls are the one that created it and, when a free (or realloc to 0)
// ended it, that one — a realloc that resizes a block counts with the block it creates.  Blocks
// still live when the trace ends are *leaked* (band Leaked, same-thread): at the program's exit
// when the profile is complete, else merely live at the end of the recording.
//
// Live bytes are the sum of the request sizes of the live blocks.  Call costs are kept per
// (stack, operation, class) for the call-site report and the exports (callsites.h, export.h):
// a free's class is that of the block it frees.
//
// Time: a trace recorded with --sample N > 1 times only the calls in the sampling windows (its
// other records have a start and no duration; the windows take calls uniformly, whatever their
// cost).  A shape's or a call site's time is then estimated per operation: the time of its timed
// calls scaled by calls / timed calls, or — with no timed call of that operation there — its
// calls times the mean of the operation's timed calls in the same class, else in the whole trace.
// With every call timed (the default) the times are exact.
//
// Memory: one entry per live block, plus fixed-size tables; nothing grows with the trace's length.
#pragma once
#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <unordered_map>
#include <vector>

#include "allocscope/ops.h"
#include "model/class_tables.h"
#include "util/fine_histogram.h"
#include "profile/stack_table.h"
#include "profile/stats.h"
#include "profile/tick_clock.h"
#include "profile/trace_decode.h"

namespace allocscope {

enum class LifetimeBand : uint8_t { Under1us, Under10us, Under100us, Under1ms, Under1s, AtLeast1s, Leaked };
constexpr unsigned kLifetimeBands = 7;

// The band of a lifetime in ns (never Leaked).
LifetimeBand lifetime_band(uint64_t ns);
// "<1us", "<10us", "<100us", "<1ms", "<1s", ">=1s", "leaked" (stable: JSON).
const char* lifetime_band_name(LifetimeBand band);

struct ShapeKey {
  uint32_t cls = 0;
  LifetimeBand band = LifetimeBand::Under1us;
  bool cross_thread = false;
  auto operator<=>(const ShapeKey&) const = default;
};

// Calls of one operation and the time of those of them that were timed.
struct TimedCalls {
  uint64_t calls = 0, timed = 0, ticks = 0;
  void add(bool is_timed, uint64_t duration) {
    ++calls;
    if (is_timed) {
      ++timed;
      ticks += duration;
    }
  }
};

struct ShapeCounts {
  uint64_t blocks = 0;
  uint64_t calls = 0;
  uint64_t timed_calls = 0;  // of `calls`, those with a duration
  uint64_t ticks = 0;  // time of those calls (estimated when not all were timed: see above)
  std::array<TimedCalls, kOpSlots> by_op{};  // the calls per operation, for that estimate
  ByteCount bytes = 0; // request sizes of the blocks
  uint64_t min_size = ~uint64_t{0}, max_size = 0;  // smallest and largest request among them
};

struct ClassLifetimes {
  uint64_t blocks = 0;      // created
  ByteCount bytes = 0;
  uint64_t freed = 0, same_thread = 0, cross_thread = 0;
  uint64_t leaked = 0;
  ByteCount leaked_bytes = 0;
  std::array<uint64_t, kLifetimeBands> bands{};  // freed blocks per band; bands[Leaked] = leaked
  FineHistogram lifetime_ticks;   // freed blocks
  FineHistogram allocs_between;   // freed blocks
};

struct ReallocChains {
  uint64_t chains = 0;       // blocks reallocated at least once, counted when the chain ended
  uint64_t steps = 0;        // reallocs of a live block (in chains that ended or are still live)
  uint64_t in_place = 0, moved = 0;
  uint64_t grew = 0, shrank = 0, same = 0;  // steps by new size vs old
  uint32_t max_length = 0;
  std::map<uint32_t, uint64_t> by_length;   // chain length -> chains
  double log_growth_sum = 0;  // sum over chains of ln(final / first), chains with both sizes > 0
  uint64_t growth_chains = 0;
  double log_step_sum = 0;    // sum over steps of ln(new / old), both > 0
  uint64_t growth_steps = 0;
};

struct StackCostKey {
  StackIndex stack = kNoStack;
  uint8_t op = 0;
  uint32_t cls = kNoClass;
  auto operator<=>(const StackCostKey&) const = default;
};

struct StackCost {
  uint64_t calls = 0;
  uint64_t timed = 0;           // of `calls`, those with a duration
  uint64_t ticks = 0;           // (estimated when not all were timed: see above)
  double time_ns = -1;          // its part of the cost model's estimate (apply_estimate), or < 0: not set
  ByteCount bytes = 0;
  uint64_t leaked = 0;          // blocks allocated here and never freed
  ByteCount leaked_bytes = 0;
};

using StackCosts = std::map<StackCostKey, StackCost>;

struct LiveSample {         // one slot of the live-bytes timeline
  uint64_t max_live = 0;    // highest live bytes seen in the slot
  uint64_t end_live = 0;    // live bytes at the slot's last change
  bool touched = false;
};

struct LifetimeResults {
  uint64_t calls = 0;
  uint64_t timed_calls = 0;          // calls with a duration (all of them unless --sample N > 1)
  uint64_t blocks = 0;               // blocks obtained
  uint64_t frees = 0;                // blocks released by free or realloc to 0 (matched)
  uint64_t same_thread_frees = 0, cross_thread_frees = 0;
  uint64_t resized = 0;              // blocks ended by a realloc that resized them
  uint64_t unmatched_frees = 0;      // free of an address not live (obtained before recording)
  uint64_t unmatched_reallocs = 0;   // realloc of an address not live
  uint64_t null_frees = 0;
  uint64_t failed = 0;
  uint64_t reused_live = 0;          // an address returned while still live (a free was missed)
  uint64_t leaked_blocks = 0;
  ByteCount leaked_bytes = 0;
  uint64_t live_bytes = 0;           // at the end
  uint64_t peak_live_bytes = 0;
  uint64_t peak_tick = 0;
  std::map<ShapeKey, ShapeCounts> shapes;
  std::map<ShapeKey, ShapeCounts> bucket_shapes;  // the same with cls = size bucket (buckets.h),
                                                  // to compare profiles of different class tables
  std::vector<ClassLifetimes> classes;  // by class index
  ReallocChains chains;
  StackCosts stack_costs;
  std::vector<LiveSample> timeline;     // `slots` equal slots of [t0, t1]
};

class LifetimeTracker : public TraceVisitor {
 public:
  // `clock` turns ticks into ns for the lifetime bands; the timeline has `slots` slots over
  // [t0, t1] (ticks); `stacks` resolves stack ids (may be empty).
  LifetimeTracker(const ClassTable& table, const TickClock& clock, const StackTable& stacks,
                  uint64_t t0, uint64_t t1, unsigned slots);

  void enter(const TraceCall& call) override;
  void exit(const TraceCall& call) override;
  void finish() override;

  const LifetimeResults& results() const { return r_; }
  LifetimeResults& results() { return r_; }

 private:
  struct Block {
    uint64_t size = 0;
    uint64_t obtained = 0;      // tick
    uint64_t allocs_at = 0;     // the owner's count of obtained blocks, this one included
    uint64_t create_ticks = 0;  // duration of the call that created it
    bool create_timed = false;  // … if it was timed
    uint64_t chain_first = 0;   // size when the chain began
    uint32_t owner = 0;
    uint32_t cls = 0;
    uint32_t chain_len = 0;
    StackIndex stack = kNoStack;  // of the call that created it
    uint8_t op = 0;               // that call's operation
    uint8_t bucket = 0;           // size bucket of `size`
  };
  // `end`: the call that ended the block (free, realloc to 0), or null.
  void add_shape(const Block& b, LifetimeBand band, bool cross, const TraceCall* end);
  void estimate_untimed();

  uint64_t& allocs_of(uint32_t thread);
  void release(const Block& b, const TraceCall& call, bool by_free);
  void obtain(const TraceCall& call, uint64_t addr, uint64_t size, const Block* from);
  void end_chain(const Block& b);
  void set_live(uint64_t live, uint64_t tick);
  // Takes the block at `addr` that `thread` releases (see above); false if none is live there.
  bool take_block(uint64_t addr, uint32_t thread, Block& out);
  void add_cost(const TraceCall& call, uint32_t cls, ByteCount bytes);
  uint32_t class_of(uint64_t size) const { return static_cast<uint32_t>(class_lookup_(size)); }

  const ClassTable& table_;
  const ClassLookup class_lookup_;
  const TickClock& clock_;
  const StackTable& stacks_;
  uint64_t t0_, t1_;
  std::unordered_map<uint64_t, Block> live_;
  std::unordered_map<uint64_t, std::vector<Block>> pending_;  // obtained while the address was live
  std::vector<uint64_t> allocs_;                  // per thread serial
  std::vector<std::optional<Block>> resizing_;    // per thread: the block its realloc released
  std::vector<TimedCalls> timed_by_class_;  // [op * (classes + 1) + class], kNoClass last
  TimedCalls& timed_cell(unsigned op, uint32_t cls);
  std::array<TimedCalls, kOpSlots> timed_by_op_{};
  LifetimeResults r_;
  // Hash indexes in front of r_'s maps (their nodes do not move): one hash lookup per call instead
  // of a tree walk, a few percent of a trace's `report`.
  std::unordered_map<uint64_t, StackCost*> cost_index_;  // stack << 32 | op << 24 | class (24 bits)
  std::array<std::unordered_map<uint64_t, ShapeCounts*>, 2> shape_index_;  // by class, by bucket
};

}  // namespace allocscope
