// shim/recorder.h — the hot path: per-thread context, timing decision, counting.
//
// Every observed call is:   Slot* s = enter();   [size]   Timing tm = start_timing(s);
//                           real call;           finish(tm, op, bucket, size, failed, addr);
// (finish() leaves the shim.)
// enter() returns null when the call must pass through unobserved: re-entry (a call made from
// inside the shim or from a signal handler interrupting it), a passive process (setuid, no
// output), or a thread beyond the slot table.  Nothing here sets errno, takes a lock or allocates.
//
// Timing: when ALLOCSCOPE_SAMPLE=N > 1, all threads time *every* call during the same global
// windows of 1/N of each ~1 ms period (tick >> window_shift), so the analyzer sees complete,
// time-aligned intervals of every thread and can measure overlap.  Each period's window starts at
// a pseudo-random offset within it (allocscope/window_phase.h), so that a program whose behaviour
// repeats in step with the period cannot keep one of its phases out of every window; the analyzer
// finds the same offsets from the seed in the profile.  Outside windows a thread reads
// the clock only once every `check_every` calls: up to kCheckEvery while its calls are fast, fewer
// (down to every call) when they are slow, so that it notices a window opening within a fraction
// of the window whatever its calls cost.  A fixed count would leave a thread whose calls block for
// milliseconds (a contended lock) blind to most windows: the timed sample would then miss exactly
// the slow calls.  N = 1 times every call, N = 0 counts only.  In trace mode every call reads the
// clock once (its record's start) and checks the window itself (trace_decision below).
#pragma once
#include <cstddef>
#include <cstdint>

#include "allocscope/trace_codec.h"
#include "process_state.h"
#include "real_allocator.h"
#include "thread_slot.h"
#include "tick_clock.h"

namespace allocscope {

// One cache line holds what every call and every timing decision reads (slot .. next_close).
struct alignas(64) ThreadCtx {
  Slot* slot;
  // `countdown` then `depth`: the fast path writes them together (set_gate below).
  uint32_t countdown;     // calls left before the next timing decision (1 = decide every call)
  uint32_t depth;         // > 0 while inside the shim on this thread
  uint32_t timing;        // inside a timed window (the one that ends at next_close)
  uint32_t cpu_countdown; // timed calls left before the next rusage sample
  uint32_t unobserved;    // this thread could not get a slot
  uint32_t cpu_sampled;   // the current timed call also samples rusage (ru0 below)
  uint32_t check_every;   // calls between window checks outside windows (adaptive, see above)
  uint64_t last_check;    // tick of the last window check
  // The thread's next timing window (window_phase.h): the one in progress, or the next to open.
  uint64_t next_open;     // its first tick
  uint64_t next_close;    // its end; 0 with next_open 0: not known yet
  format::Rusage ru0;
  // The thread's switch counts when its last timed call ended (note_switches in recorder.cpp).
  uint64_t sw_nvcsw, sw_nivcsw;
  uint64_t sw_end;        // the tick they stand for
  uint32_t sw_valid;
  // Its minor faults as of flt_end, good while neither the calls since nor the gaps between them
  // could hold a fault (format.h kModeFaults).
  uint64_t flt_minflt;
  uint64_t flt_end;
  uint32_t flt_valid;
  uint64_t next_look;     // the thread looks at other threads again from this tick (peer_waits.h)
  // A look outside the windows whose observer's own call is being timed (peer_waits.h probes):
  // the record, kept when that call ends, and the observer's voluntary switches before the call.
  uint32_t probe_pending;
  uint64_t probe_nvcsw;
  format::PeerWait probe_look;
  format::ProbePeers probe_peers;  // the other threads inside calls as the probe's call starts
  // A hold (peer_waits.h): the probe's call is made while these threads are held.
  uint32_t hold_pending;
  uint32_t hold_count;
  uint64_t probe_nivcsw;
  Slot* hold_targets[8];
  // The thread's alternate signal stack, [lo, hi), as it last set it (signal_api.h sigaltstack);
  // 0, 0: none.
  uint64_t alt_stack_lo, alt_stack_hi;
  uint64_t reentrant_mark;  // the slot's last_tick at the last check_left_inside
};

static_assert(offsetof(ThreadCtx, next_close) + sizeof(uint64_t) <= 64, "the hot fields in one line");
extern __thread ThreadCtx t_ctx __attribute__((tls_model("initial-exec")));

// The fast path may run outside the shim (depth 0) when it is not deciding on timing this call
// (countdown >= 2).  A thread without a slot has countdown 0.  Two 4-byte loads: the slow paths
// write the fields one by one, and an 8-byte load of two separate 4-byte stores would stall.
inline bool fast_path_open(const ThreadCtx& t) { return t.countdown > 1 && t.depth == 0; }
// A signal handler of the program's on its alternate stack calls the allocator: that stack may be
// a few KiB (SIGSTKSZ), so what needs kilobytes of stack of its own — the profile's writes
// (flush_in_place, flush_buffers), the turns outside the windows and the looks (peer_waits.h), a
// dead thread's slot taken over (acquire_slot) — returns at once there, and is left to the thread's
// next call on its own stack.
inline bool on_alternate_stack(const ThreadCtx& t) {
  const uint64_t sp = reinterpret_cast<uint64_t>(__builtin_frame_address(0));
  return sp - t.alt_stack_lo < t.alt_stack_hi - t.alt_stack_lo;
}
// While the thread is inside the real allocator, `depth` also says so, and which call: other
// threads read the gate to find threads inside allocator calls (peer_waits.h).  The nesting count
// stays in the low bits, so that depth++/-- of a signal handler's call still balance.
constexpr uint32_t kInCall = 1u << 31;
constexpr uint32_t in_call_depth(unsigned op, unsigned bucket) {
  return 1u | kInCall | (op & 0x7fu) << 24 | (bucket & 0xffu) << 16;
}
constexpr bool gate_in_call(uint64_t gate) { return (gate >> 32 & kInCall) != 0; }
constexpr unsigned gate_op(uint64_t gate) { return static_cast<unsigned>(gate >> 56) & 0x7fu; }
constexpr unsigned gate_bucket(uint64_t gate) { return static_cast<unsigned>(gate >> 48) & 0xffu; }
// Writes countdown and depth (adjacent) in one store.
inline void set_gate(ThreadCtx& t, uint32_t countdown, uint32_t depth) {
  static_assert(offsetof(ThreadCtx, depth) == offsetof(ThreadCtx, countdown) + 4, "layout");
  const uint64_t w = countdown | static_cast<uint64_t>(depth) << 32;
  __builtin_memcpy(&t.countdown, &w, sizeof w);
}

struct SamplingConfig {
  uint32_t sample_every;       // N
  uint32_t cpu_sample_every;   // M
  uint32_t window_shift;
  uint64_t window_len;         // 0: nothing is timed (N = 0, or N longer than a period)
  uint64_t window_seed;        // the windows' offsets (window_phase.h), Calibration::window_seed
  uint64_t check_gap;          // wanted ticks between window checks: window/8, at least 1 µs
  uint64_t flush_interval;     // ticks between a thread's periodic flushes
  uint32_t stack_every;        // a stack on 1 timed call in this many (0: no stacks)
  uint64_t stack_slow_ticks;   // and on every timed call at least this slow
  uint64_t switch_ticks;       // a timed call this slow gets its context switches (kEvSwitches); 0: none
  uint64_t fault_ticks;        // a shorter call or gap cannot hold a fault (format.h fault_free_ticks); 0: no kEvFaults
  uint64_t look_gap;           // ticks between a thread's looks at other threads (peer_waits.h); 0: none
  uint64_t outside_gap;        // ticks between the process's turns outside the windows (probes, some with a look); 0: none
  uint64_t hold_ticks;         // how long a held thread stays held (format.h kHoldNs); 0: no holds
  uint64_t hold_gap;           // ticks between holds (format.h kHoldGapNs)
  uint64_t signal_check_ticks; // how long a reading of a thread's blocked signals stands (peer_waits.cpp)
};
extern SamplingConfig g_sampling;
inline constexpr bool& g_exact_free_sizes = g_forwarding.exact_free_sizes;  // ALLOCSCOPE_FREE_SIZES=1
extern bool g_trace;             // ALLOCSCOPE_TRACE=1: every call, encoded, instead of events

constexpr uint32_t kCheckEvery = 256;         // most calls between window checks (the adaptive cap)
constexpr uint32_t kCheckEveryCountOnly = 1024; // count-only: just the periodic flush check

// What start_timing decided for a call.  `t0`: its start tick when it is timed, or when a trace
// records it untimed (a trace records every call with its start; its duration only in the
// sampling windows, or always with ALLOCSCOPE_SAMPLE=1), or when it follows a look outside the
// windows (not timed, not a trace: a probe, peer_waits.h); else 0.
struct Timing {
  uint64_t t0;
  bool timed;
};

// Cold paths (recorder.cpp).
Slot* enter_slow(ThreadCtx& t);
// outside trace mode (start_timing sends a trace elsewhere); `allocating`: the call about to be
// made obtains bytes (a hold's call must: peer_waits.h)
Timing timing_decision(Slot* s, bool allocating);
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
bool make_trace_room(Slot* s);   // flushes a full trace buffer; false (counted) if still full
void trace_flush_due(Slot* s);   // the periodic flush
// Every 2^20th call that found the shim busy on its own thread (counted reentrant): a thread whose
// calls all do so has left the shim without its way out (a signal handler that interrupted it and
// ended with longjmp), and stays unobserved; said once.
constexpr uint64_t kReentrantCheckMask = (uint64_t{1} << 20) - 1;
void check_left_inside(Slot* s);

// Appends one trace record (duration 0: not timed) to the thread's trace buffer.
__attribute__((always_inline)) inline void append_trace(Slot* s, const CallInfo& call, uint64_t t0,
                                                      uint64_t duration, uint32_t stack) {
  TraceState& tr = s->h.trace;
  uint64_t pub = tr.published.load(std::memory_order_relaxed);
  if (__builtin_expect((pub & 0xffffffffu) + trace::kMaxRecordBytes > kTraceBuffer, 0)) {
    if (!make_trace_room(s)) return;
    pub = tr.published.load(std::memory_order_relaxed);
  }
  trace::Record r;
  r.op = static_cast<uint8_t>(call.op);
  r.failed = call.failed;
  r.start_tick = t0;
  r.duration = duration;
  r.addr = call.addr;
  r.size = call.size;
  r.old_addr = call.old_addr;
  r.stack_id = stack;
  const uint32_t len = static_cast<uint32_t>(pub & 0xffffffffu);
  unsigned char* end = trace::encode(s->trace + len, tr.cursor, r);
  const uint64_t count = (pub >> 32) + 1;
  tr.published.store(count << 32 | static_cast<uint64_t>(end - s->trace), std::memory_order_release);
}

// A trace's call outside the sampling windows: its record, without a duration.
__attribute__((always_inline)) inline void record_untimed(Slot* s, const CallInfo& call, uint64_t t0) {
  append_trace(s, call, t0, 0, 0);
  store_shared(s->h.last_tick, t0);
  if (__builtin_expect(t0 - load_shared(s->h.last_flush_tick) > g_sampling.flush_interval, 0))
    trace_flush_due(s);
}
void read_thread_rusage(format::Rusage& out);
// `now` - `base`, field by field: unavailable (all ones) where either is.
format::Rusage rusage_since(const format::Rusage& now, const format::Rusage& base);

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

// The full path's real call is about to start: other threads may now see it (in_call_depth).
inline void enter_call(unsigned op, unsigned bucket) { t_ctx.depth = in_call_depth(op, bucket); }

Timing timed_trace_start(uint64_t now);  // a trace's call in a window: rusage probe, start tick

// Learns the window in progress at `now`, or else the next to open (window_phase.h): the window
// of now's period, or of the next period when it has closed.  Once per window and thread.
void find_next_window(ThreadCtx& t, const SamplingConfig& c, uint64_t now);

// Whether `now` lies in a timing window.  Before the next window opens (the usual case outside
// windows) this is one comparison; the hash behind a window's offset runs once per window.
__attribute__((always_inline)) inline bool in_window(ThreadCtx& t, const SamplingConfig& c,
                                                     uint64_t now) {
  if (__builtin_expect(now < t.next_open, 1)) return false;
  if (now >= t.next_close) {
    find_next_window(t, c, now);
    if (now < t.next_open) return false;
  }
  return true;
}

// A trace records every call with its start tick, and times it in the same windows as a sampled
// profile (every call with ALLOCSCOPE_SAMPLE=1): the clock is read on every call anyway, so each
// call checks.  Inline: in a trace this runs on every call.
__attribute__((always_inline)) inline Timing trace_decision(Slot*) {
  ThreadCtx& t = t_ctx;
  t.countdown = 1;
  if (__builtin_expect(g_ps->mode.load(std::memory_order_acquire) != kModeActive, 0))
    return Timing{0, false};  // settings not published yet, or torn down: counted, not traced
  const SamplingConfig& c = g_sampling;
  const uint64_t now = ticks();
  if (c.sample_every == 1 || in_window(t, c, now)) return timed_trace_start(now);
  return Timing{now, false};
}

inline Timing start_timing(Slot* s, bool allocating = false) {
  if (__builtin_expect(--t_ctx.countdown != 0, 1)) return Timing{0, false};
  // Only a decision sets the countdown anew (SlotHeader::gate_addr): count them for the readers.
  bump(s->h.decisions, 1);
  if (g_trace) return trace_decision(s);
  return timing_decision(s, allocating);
}

// Counts one call of `op` in bucket `b`; done before the real call, so that nothing but the start
// tick needs to survive it.
inline void count_call(Slot* s, unsigned op, unsigned b, uint64_t size) {
  Counter& c = counter_for_write(s, op, b);
  bump(c.calls, 1);
  bump(c.bytes, size);
}

// After the real call, for a timed, traced or failed call only: the slot is found again from the
// thread.  `t1` is the end tick of a timed call.
void finish_slow(Timing tm, uint64_t t1, const CallInfo& call);

// The call that follows a look outside the windows ended (peer_waits.h): keeps the look with it.
void finish_probe(unsigned op, unsigned bucket, uint64_t t0);

__attribute__((always_inline)) inline void finish(Timing tm, unsigned op, unsigned b, uint64_t size,
                                                  bool failed, const void* addr,
                                                  const void* old_addr = nullptr) {
  if (__builtin_expect(tm.t0 != 0 || failed, 0)) {
    if (!tm.timed && !failed && !g_trace) {  // a probe: the call after a look outside the windows
      finish_probe(op, b, tm.t0);
      return leave();
    }
    if (!tm.timed && !failed) {  // a trace's untimed call: the usual one in a trace
      record_untimed(t_ctx.slot, CallInfo{op, b, size, false, reinterpret_cast<uint64_t>(addr),
                                          reinterpret_cast<uint64_t>(old_addr)},
                     tm.t0);
      return leave();
    }
    const uint64_t t1 = tm.timed ? ticks() : 0;
    finish_slow(tm, t1,
                CallInfo{op, b, size, failed, reinterpret_cast<uint64_t>(addr),
                         reinterpret_cast<uint64_t>(old_addr)});
  }
  leave();
}


}  // namespace allocscope
