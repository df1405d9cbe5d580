// shim/recorder.h — the hot path: per-thread context, timing decision, counting.
//
// Every observed call is:   Slot* s = enter();   [size]   uint64_t t0 = start_timing(s);
//                           real call;           finish(s, t0, op, size, failed);   leave();
// enter() returns null when the call must pass through unobserved: re-entry (a call made from
// inside the shim or from a signal handler interrupting it), a passive process (setuid, no
// output), or a thread beyond the slot table.  Nothing here sets errno, takes a lock or allocates.
//
// Timing: when ALLOCSCOPE_SAMPLE=N > 1, all threads time *every* call during the same global
// windows of 1/N of each ~1 ms period (tick >> window_shift), so the analyzer sees complete,
// time-aligned intervals of every thread and can measure overlap.  Outside windows a thread reads
// the clock only once every `check_every` calls: up to kCheckEvery while its calls are fast, fewer
// (down to every call) when they are slow, so that it notices a window opening within a fraction
// of the window whatever its calls cost.  A fixed count would leave a thread whose calls block for
// milliseconds (a contended lock) blind to most windows: the timed sample would then miss exactly
// the slow calls.  N = 1 times every call, N = 0 counts only.
#pragma once
#include <cstddef>
#include <cstdint>

#include "thread_slot.h"
#include "tick_clock.h"

namespace allocscope {

struct ThreadCtx {
  Slot* slot;
  // `countdown` then `depth`: read together as one word by the fast path (fast_gate below).
  uint32_t countdown;     // calls left before the next timing decision (1 = decide every call)
  uint32_t depth;         // > 0 while inside the shim on this thread
  uint32_t timing;        // inside a timed window
  uint32_t cpu_countdown; // timed calls left before the next rusage sample
  uint64_t window_end;
  uint32_t unobserved;    // this thread could not get a slot
  uint32_t cpu_sampled;   // the current timed call also samples rusage (ru0 below)
  uint32_t check_every;   // calls between window checks outside windows (adaptive, see above)
  uint64_t last_check;    // tick of the last window check
  format::Rusage ru0;
};

extern __thread ThreadCtx t_ctx __attribute__((tls_model("initial-exec")));

// countdown | depth << 32 in one load (little-endian x86_64 and aarch64).  The fast path may run
// when it is in [2, 2^32): outside the shim (depth 0) and not deciding on timing this call
// (countdown >= 2).  A thread without a slot has countdown 0.
inline uint64_t fast_gate(const ThreadCtx& t) {
  static_assert(offsetof(ThreadCtx, depth) == offsetof(ThreadCtx, countdown) + 4, "layout");
  uint64_t w;
  __builtin_memcpy(&w, &t.countdown, sizeof w);
  return w;
}
inline bool fast_path_open(uint64_t gate) { return gate - 2 < 0xffffffffull - 1; }
// Writes countdown and depth as one word: the next call's fast_gate load then forwards from this
// store (two 4-byte stores read back as one 8-byte load stall the pipeline for ~15 cycles).
inline void set_gate(ThreadCtx& t, uint32_t countdown, uint32_t depth) {
  const uint64_t w = countdown | static_cast<uint64_t>(depth) << 32;
  __builtin_memcpy(&t.countdown, &w, sizeof w);
}

struct SamplingConfig {
  uint32_t sample_every;       // N
  uint32_t cpu_sample_every;   // M
  uint32_t window_shift;
  uint64_t period_mask;
  uint64_t window_len;
  uint64_t check_gap;          // wanted ticks between window checks: window/8, at least 1 µs
  uint64_t flush_interval;     // ticks between a thread's periodic flushes
  uint32_t stack_every;        // a stack on 1 timed call in this many (0: no stacks)
  uint64_t stack_slow_ticks;   // and on every timed call at least this slow
};
extern SamplingConfig g_sampling;

constexpr uint32_t kCheckEvery = 256;         // most calls between window checks (the adaptive cap)
constexpr uint32_t kCheckEveryCountOnly = 1024; // count-only: just the periodic flush check

// Cold paths (recorder.cpp).
Slot* enter_slow(ThreadCtx& t);
uint64_t timing_decision(Slot* s);  // start tick of a timed call, or 0
// What a finished call was, for the slow path.
struct CallInfo {
  unsigned op;
  unsigned bucket;
  uint64_t size;
  bool failed;
  uint64_t addr;      // block returned, freed or queried (trace mode)
  uint64_t old_addr;  // realloc's old block (trace mode)
};
void record_timed(Slot* s, const CallInfo& call, uint64_t t0, uint64_t t1);
void read_thread_rusage(format::Rusage& out);

inline Slot* enter() {
  ThreadCtx& t = t_ctx;
  Slot* s = t.slot;
  if (__builtin_expect(t.depth == 0 && s != nullptr &&
                           s->h.state.load(std::memory_order_relaxed) != kSlotFree, 1)) {
    t.depth = 1;
    return s;
  }
  return enter_slow(t);
}

inline void leave() { t_ctx.depth = 0; }

// 0 for an untimed call, else the call's start tick.
inline uint64_t start_timing(Slot* s) {
  if (__builtin_expect(--t_ctx.countdown != 0, 1)) return 0;
  return timing_decision(s);
}

// Counts one call of `op` in bucket `b`; done before the real call, so that nothing but the start
// tick needs to survive it.
inline void count_call(Slot* s, unsigned op, unsigned b, uint64_t size) {
  Counter& c = s->counters[op][b];
  bump(c.calls, 1);
  bump(c.bytes, size);
}

// After the real call, for a timed or failed call only: the slot is found again from the thread.
void finish_slow(uint64_t t0, uint64_t t1, const CallInfo& call);

inline void finish(uint64_t t0, unsigned op, unsigned b, uint64_t size, bool failed,
                   const void* addr, const void* old_addr = nullptr) {
  if (__builtin_expect(t0 != 0 || failed, 0)) {
    const uint64_t t1 = t0 ? ticks() : 0;
    finish_slow(t0, t1,
                CallInfo{op, b, size, failed, reinterpret_cast<uint64_t>(addr),
                         reinterpret_cast<uint64_t>(old_addr)});
  }
  leave();
}

extern bool g_exact_free_sizes;  // ALLOCSCOPE_FREE_SIZES=1
extern bool g_trace;             // ALLOCSCOPE_TRACE=1: every call, encoded, instead of events

}  // namespace allocscope
