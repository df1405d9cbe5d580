// shim/recorder.cpp — cold paths of the recorder: thread attach/exit, timed calls, flushing.
#include "recorder.h"

#include <pthread.h>
#include <sys/mman.h>

#include <cerrno>
#include <cstring>

#include "allocscope/window_phase.h"
#include "cpu_samples.h"
#include "lock_waits.h"
#include "peer_waits.h"
#include "process_state.h"
#include "slot_registry.h"
#include "stack_walk.h"
#include "sys.h"

namespace allocscope {

__thread ThreadCtx t_ctx __attribute__((tls_model("initial-exec")));
SamplingConfig g_sampling;
bool g_trace = false;

namespace {

pthread_key_t g_exit_key;
std::atomic<int> g_exit_key_state{0};  // 0 none, 1 creating, 2 ready

void on_thread_exit(void* p) {
  ThreadCtx& t = t_ctx;
  const int saved = errno;
  if (t_wait_pending) add_pending_wait(false);  // a lock held to the end: its wait still counts
  if (t_allocator_wait_pending) add_allocator_wait();
  t.depth++;
  Slot* s = static_cast<Slot*>(p);
  stop_cpu_samples(s);  // before its last counts are written
  flush_slot(s, format::ThreadState::Exited);
  s->h.state.store(kSlotExited, std::memory_order_release);
  if (g_ps) g_ps->live_threads.fetch_sub(1, std::memory_order_relaxed);
  t.depth--;
  errno = saved;
}

void ensure_exit_key() {
  int expected = 0;
  if (g_exit_key_state.compare_exchange_strong(expected, 1, std::memory_order_acq_rel)) {
    if (pthread_key_create(&g_exit_key, on_thread_exit) == 0)
      g_exit_key_state.store(2, std::memory_order_release);
  }
}

uint16_t latency_row(Slot* s, unsigned op, unsigned bucket) {
  uint16_t idx = s->latency_index[op][bucket];  // only the owner writes it
  if (idx) return idx;
  if (s->h.n_latency_rows >= kMaxLatencyRows) return 0;
  idx = static_cast<uint16_t>(++s->h.n_latency_rows);
  store_shared(s->latency_index[op][bucket], idx);
  return idx;
}

uint16_t saturate16(uint64_t v) { return v > 0xffff ? 0xffff : static_cast<uint16_t>(v); }
uint8_t saturate8(uint64_t v) { return v > 0xff ? 0xff : static_cast<uint8_t>(v); }

}  // namespace

void read_thread_rusage(format::Rusage& out) {
  struct {
    long utime_s, utime_us, stime_s, stime_us;
    long maxrss, ixrss, idrss, isrss, minflt, majflt, nswap, inblock, oublock, msgsnd, msgrcv,
        nsignals, nvcsw, nivcsw;
  } ru;
  if (sys::failed(sys::getrusage(1 /* RUSAGE_THREAD */, &ru))) {
    std::memset(&out, 0xff, sizeof out);
    return;
  }
  out.utime_us = static_cast<uint64_t>(ru.utime_s) * 1000000u + static_cast<uint64_t>(ru.utime_us);
  out.stime_us = static_cast<uint64_t>(ru.stime_s) * 1000000u + static_cast<uint64_t>(ru.stime_us);
  out.minflt = static_cast<uint64_t>(ru.minflt);
  out.majflt = static_cast<uint64_t>(ru.majflt);
  out.nvcsw = static_cast<uint64_t>(ru.nvcsw);
  out.nivcsw = static_cast<uint64_t>(ru.nivcsw);
}

format::Rusage rusage_since(const format::Rusage& now, const format::Rusage& base) {
  constexpr uint64_t kNone = ~uint64_t{0};
  const auto since = [](uint64_t a, uint64_t b) {
    return a == kNone || b == kNone ? kNone : a > b ? a - b : 0;  // never below the reading
  };
  return format::Rusage{since(now.utime_us, base.utime_us), since(now.stime_us, base.stime_us),
                        since(now.minflt, base.minflt),     since(now.majflt, base.majflt),
                        since(now.nvcsw, base.nvcsw),       since(now.nivcsw, base.nivcsw)};
}

namespace {

Slot* attach_thread(ThreadCtx& t) {
  const int saved = errno;
  Slot* s = nullptr;
  if (process_active()) {
    s = acquire_slot();
    if (s) {
      ensure_exit_key();
      if (g_exit_key_state.load(std::memory_order_acquire) == 2)
        pthread_setspecific(g_exit_key, s);
      t.slot = s;
      store_shared(s->h.gate_addr, reinterpret_cast<uint64_t>(&t.countdown));
      t.countdown = 1;
      t.timing = 0;
      t.next_open = t.next_close = 0;
      t.cpu_countdown = g_sampling.cpu_sample_every;
      start_cpu_samples(s);
    } else if (g_ps && g_ps->mode.load(std::memory_order_acquire) == kModeActive) {
      t.unobserved = 1;
      say_once(3, slot_mapping_failed()
                      ? "allocscope: a new thread's slot could not be mapped (a memory limit); it and later threads without a slot are not observed\n"
                      : "allocscope: more live threads than slots; further threads are not observed\n");
    }
  }
  errno = saved;
  return s;
}

void flush_in_place(Slot* s);

void flush_in_place(Slot* s) {
  if (on_alternate_stack(t_ctx)) return;  // the thread's next call on its own stack flushes
  const int saved = errno;
  flush_slot(s, format::ThreadState::Running);
  errno = saved;
  t_ctx.sw_valid = 0;  // a write may sleep: the switch reading no longer stands for the next call
}

}  // namespace

// The trace buffer has no room for a record: flush it (and say whether there is room now).
bool make_trace_room(Slot* s) {
  const int saved = errno;
  flush_buffers(s);
  errno = saved;
  const uint64_t pub = s->h.trace.published.load(std::memory_order_relaxed);
  if ((pub & 0xffffffffu) + trace::kMaxRecordBytes <= kTraceBuffer) return true;
  bump(s->h.trace.dropped, 1);
  return false;
}

void trace_flush_due(Slot* s) { flush_in_place(s); }

// No call of the thread's took the shim's own path since the last check, 2^20 reentrant calls ago:
// every decision stores last_tick, and one comes at least every kCheckEvery calls.
void check_left_inside(Slot* s) {
  ThreadCtx& t = t_ctx;
  const uint64_t last = load_shared(s->h.last_tick);
  if (last == t.reentrant_mark)
    say_once(8, "allocscope: a thread's allocator calls all find the shim's bookkeeping in progress "
                "(a signal handler that interrupted it and left with longjmp?): they are forwarded, "
                "counted as reentrant, and not observed\n");
  t.reentrant_mark = last;
}


Slot* enter_slow(ThreadCtx& t) {
  if (t.depth != 0) {  // re-entry: a libc-internal call, or a signal handler interrupting us
    Slot* s = t.slot;
    if (s && s->h.state.load(std::memory_order_relaxed) != kSlotFree)
      bump(s->h.reentrant_calls, 1);
    return nullptr;
  }
  if (t.unobserved) return nullptr;
  t.depth = 1;
  Slot* s = attach_thread(t);
  if (!s) t.depth = 0;
  return s;
}

namespace {

// Calls until the next window check: halved while checks are further apart than check_gap (1/8 of
// a window, at least 1 µs), doubled (up to kCheckEvery) while they are closer than half of it: a
// steady pace settles between half the gap and the gap (doubling below a quarter of it, as before,
// let it settle anywhere from a quarter; the longest gap, which the analyzer's trim must cover, is
// the same either way).  On PHP (ZendMM off) the checks took about 30 % fewer samples, the shim 10 %
// (docs/overhead.md).  `was_timing`: the previous check was inside a window, where every call
// checks: no interval to learn from.
uint32_t next_check_interval(ThreadCtx& t, uint64_t now, const SamplingConfig& c, bool was_timing) {
  uint32_t n = t.check_every ? t.check_every : kCheckEvery;
  const uint64_t since = now - t.last_check;
  if (t.last_check != 0 && !was_timing) {
    if (since > c.check_gap) {
      n = n > 1 ? n / 2 : 1;
    } else if (since < c.check_gap / 2 && n < kCheckEvery) {
      n *= 2;
    }
  }
  t.check_every = n;
  t.last_check = now;
  return n;
}

}  // namespace

namespace {

// The thread's faults as of `tick` (format.h kModeFaults): a reading the next slow call's faults
// are counted against; none where getrusage failed.
void fault_reading(ThreadCtx& t, const format::Rusage& ru, uint64_t tick) {
  t.flt_valid = ru.minflt != ~uint64_t{0};
  t.flt_minflt = ru.minflt;
  t.flt_end = tick;
}

// The thread's switch counts as of `tick`: a reading the next slow call's switches are counted
// against (note_switches).  Any reading serves, the one a timed call takes before it starts too:
// that call then needs no second one after it unless it was slow.
void switch_reading(ThreadCtx& t, const format::Rusage& ru, uint64_t tick) {
  if (ru.nvcsw == ~uint64_t{0}) return;
  t.sw_valid = 1;
  t.sw_nvcsw = ru.nvcsw;
  t.sw_nivcsw = ru.nivcsw;
  t.sw_end = tick;
}

// The context switches of a slow timed call (format.h kEvSwitches), without a read before it:
// the thread's switch counts are read after every slow call and after every call that follows a
// gap longer than switch_ticks (unless the call's start read them: switch_reading), and the
// reading stays good while the thread's timed calls follow
// each other closely: a thread cannot sleep, or wait for a CPU, in less than switch_ticks between
// two calls, so the switches since the last reading happened inside this call.  Those reads are
// bounded by window_len / switch_ticks per window and thread; `read`: one taken after the call
// already (the rusage probe).
void note_switches(ThreadCtx& t, format::Event& e, uint64_t t0, uint64_t t1, const format::Rusage* read) {
  const uint64_t gap = g_sampling.switch_ticks;
  if (gap == 0) return;
  const bool good = t.sw_valid && t0 >= t.sw_end && t0 - t.sw_end < gap;
  const bool slow = t1 - t0 >= gap;
  // The fault reading is good where the call began right after it, within fault_ticks (the call
  // start reads one where needed: maybe_sample_cpu), and every call since was too short to fault.
  const uint64_t fgap = g_sampling.fault_ticks;
  const bool flt_good = t.flt_valid && t0 >= t.flt_end && t0 - t.flt_end < fgap;
  if (fgap && !slow && !read) {
    if (!flt_good || t1 - t0 >= fgap) t.flt_valid = 0;
    t.flt_end = t1;
  }
  if (good && !slow && !read) {
    t.sw_end = t1;
    return;
  }
  format::Rusage now;
  if (!read) {
    read_thread_rusage(now);
    read = &now;
  }
  if (read->nvcsw == ~uint64_t{0}) {
    t.sw_valid = 0;
    return;
  }
  // A forked child's thread starts its counts anew: a reading above the present one is its parent's.
  const bool ordered = read->nvcsw >= t.sw_nvcsw && read->nivcsw >= t.sw_nivcsw;
  if (good && slow && ordered && !(e.flags & format::kEvRusage)) {
    e.flags |= format::kEvSwitches;
    e.nvcsw = saturate8(read->nvcsw - t.sw_nvcsw);
    e.nivcsw = saturate8(read->nivcsw - t.sw_nivcsw);
  }
  if (slow && t.flt_valid && read->minflt >= t.flt_minflt && !(e.flags & format::kEvRusage)) {
    e.flags |= flt_good ? format::kEvFaults : format::kEvFaultsAtMost;
    e.minflt = saturate16(read->minflt - t.flt_minflt);
  }
  if (fgap) fault_reading(t, *read, t1);
  switch_reading(t, *read, t1);
}

// The rusage probe of 1 timed call in cpu_sample_every; `now` is the call's start tick so far.
uint64_t maybe_sample_cpu(ThreadCtx& t, const SamplingConfig& c, uint64_t now) {
  if (t.cpu_countdown == 0) t.cpu_countdown = c.cpu_sample_every;  // attached before start-up ended
  if (c.cpu_sample_every && --t.cpu_countdown == 0) {
    t.cpu_countdown = c.cpu_sample_every;
    t.cpu_sampled = 1;
    read_thread_rusage(t.ru0);
    const uint64_t t0 = ticks();  // the call starts after the probe
    if (c.fault_ticks) fault_reading(t, t.ru0, t0);
    return t0;
  }
  // A timed call after a gap that could hold a fault reads the thread's faults first, so that a
  // slow call's are known (note_switches); at most one read per fault_ticks of the thread's time.
  if (c.fault_ticks && !(t.flt_valid && now >= t.flt_end && now - t.flt_end < c.fault_ticks)) {
    format::Rusage ru;
    read_thread_rusage(ru);
    now = ticks();
    fault_reading(t, ru, now);
    if (c.switch_ticks) switch_reading(t, ru, now);
  }
  return now;  // one clock read serves both the decision and the start (it costs ~12 ns here)
}

}  // namespace

namespace {

// Outside the windows, a decision that times nothing: when to check again, and the periodic flush.
Timing untimed_decision(ThreadCtx& t, Slot* s, const SamplingConfig& c, uint64_t now, bool was_timing, bool allocating) {
  t.countdown = c.sample_every == 0 ? kCheckEveryCountOnly : next_check_interval(t, now, c, was_timing);
  bool probe = false;
  if (__builtin_expect(outside_turn_due(now), 0)) {
    probe = outside_turn(s, now, allocating);
    t.last_check = ticks();  // the turn's microseconds are not the calls' pace
    t.sw_valid = 0;
  }
  store_shared(s->h.last_tick, now);
  if (now - load_shared(s->h.last_flush_tick) > c.flush_interval) flush_in_place(s);  // (checks the mode)
  return Timing{probe ? ticks() : 0, false};
}

}  // namespace

Timing timing_decision(Slot* s, bool allocating) {
  ThreadCtx& t = t_ctx;
  const SamplingConfig& c = g_sampling;
  // The usual case: outside the windows, before the next one opens.  A thread learns next_open
  // only after it has seen the settings published (below), so the mode need not be read here: a
  // window's opening reads it again before anything is timed.
  uint64_t now = 0;
  if (__builtin_expect(t.next_open != 0 && !t.timing, 1)) {
    now = ticks();
    if (__builtin_expect(now < t.next_open, 1)) return untimed_decision(t, s, c, now, false, allocating);
  }
  // The settings are written while the process initialises, and published by the mode becoming
  // Active: a thread that arrived earlier counts, and times nothing until then.
  if (__builtin_expect(g_ps->mode.load(std::memory_order_acquire) != kModeActive, 0)) {
    t.countdown = 1;  // decide again on the next call: start-up is short
    return Timing{0, false};
  }
  if (now == 0) now = ticks();
  if (c.sample_every != 1 && !(t.timing && now < t.next_close)) {
    const bool was_timing = t.timing;
    t.timing = 0;
    if (!in_window(t, c, now)) return untimed_decision(t, s, c, now, was_timing, allocating);
    t.timing = 1;  // until next_close, the end of the window in_window found
  }
  t.countdown = 1;  // decide again on the next call
  const uint64_t t0 = maybe_sample_cpu(t, c, now);
  s->h.inside_since.store(t0, std::memory_order_relaxed);  // for other threads' looks (peer_waits.h)
  return Timing{t0, true};
}

void find_next_window(ThreadCtx& t, const SamplingConfig& c, uint64_t now) {
  uint64_t start = window_start_of(now, c.window_shift, c.window_len, true, c.window_seed);
  if (now >= start + c.window_len) {  // this period's window has closed
    const uint64_t next = ((now >> c.window_shift) + 1) << c.window_shift;
    start = window_start_of(next, c.window_shift, c.window_len, true, c.window_seed);
  }
  t.next_open = start;
  t.next_close = start + c.window_len;
}

Timing timed_trace_start(uint64_t now) {
  return Timing{maybe_sample_cpu(t_ctx, g_sampling, now), true};
}

void finish_slow(Timing tm, uint64_t t1, const CallInfo& call) {
  Slot* s = t_ctx.slot;
  if (call.failed) {  // bytes count what was obtained: take back the request that failed
    Counter& c = counter_for_write(s, call.op, call.bucket);
    bump(c.failed, 1);
    bump(c.bytes, 0 - call.size);
  }
  if (tm.timed) {
    record_timed(s, call, tm.t0, t1);
  } else if (tm.t0 && g_trace) {
    record_untimed(s, call, tm.t0);
  } else if (tm.t0) {
    drop_probe();  // a probe's call that failed: the look is kept without it
  }
}

void record_timed(Slot* s, const CallInfo& call, uint64_t t0, uint64_t t1) {
  ThreadCtx& t = t_ctx;
  const unsigned op = call.op, bucket = call.bucket;
  const uint64_t size = call.size;
  const bool failed = call.failed;
  s->h.inside_since.store(0, std::memory_order_relaxed);
  format::Event e{};
  format::Rusage ru1;
  bool read = false;
  if (t.cpu_sampled) {
    t.cpu_sampled = 0;
    read_thread_rusage(ru1);
    read = true;
    if (ru1.utime_us != ~uint64_t{0} && t.ru0.utime_us != ~uint64_t{0}) {
      e.flags |= format::kEvRusage;
      e.cpu_us = saturate16((ru1.utime_us + ru1.stime_us) - (t.ru0.utime_us + t.ru0.stime_us));
      e.nvcsw = saturate8(ru1.nvcsw - t.ru0.nvcsw);
      e.nivcsw = saturate8(ru1.nivcsw - t.ru0.nivcsw);
      e.minflt = saturate16(ru1.minflt - t.ru0.minflt);
    }
  }
  if (!g_trace) note_switches(t, e, t0, t1, read ? &ru1 : nullptr);
  const uint64_t d = t1 - t0;
  const uint16_t row = latency_row(s, op, bucket);
  if (row) {
    LatencyRow& r = s->latency[row - 1];
    bump(r.timed, 1);
    bump(r.ticks, d);
    if (d > peek(r.max)) __atomic_store_n(&r.max, d, __ATOMIC_RELAXED);
    const unsigned bin = latency_bin_of(d);
    bump(r.bins[bin], 1);
  }
  uint32_t stack = 0;
  if (g_sampling.stack_every) {
    StackState& st = s->h.stacks;
    if (st.countdown == 0 || st.countdown > g_sampling.stack_every)
      st.countdown = g_sampling.stack_every;
    if (--st.countdown == 0 || d >= g_sampling.stack_slow_ticks) stack = capture_stack(s);
  }
  if (g_trace) {
    append_trace(s, call, t0, d ? d : 1, stack);  // a duration of 0 means "not timed"
    store_shared(s->h.last_tick, t1);
    if (t1 - load_shared(s->h.last_flush_tick) > g_sampling.flush_interval) flush_in_place(s);
    return;
  }
  e.start_tick = t0;
  e.duration_ticks = d > 0xffffffffu ? 0xffffffffu : static_cast<uint32_t>(d);
  if (d > 0xffffffffu) e.flags |= format::kEvClamped;
  if (failed) e.flags |= format::kEvFailed;
  e.size = size > 0xffffffffu ? 0xffffffffu : static_cast<uint32_t>(size);
  e.op = static_cast<uint8_t>(op);
  e.bucket = static_cast<uint8_t>(bucket);
  e.stack_id = stack;
  if (!s->h.ring.push(e)) bump(s->h.events_dropped, 1);
  store_shared(s->h.last_tick, t1);
  if (g_sampling.look_gap) look_at_peers(s, t1);
  if (t1 - load_shared(s->h.last_flush_tick) > g_sampling.flush_interval) {
    flush_in_place(s);
  } else if (s->h.ring.size() >= kRingEvents) {
    const int saved = errno;
    flush_buffers(s);
    errno = saved;
    t_ctx.sw_valid = 0;
  }
}

}  // namespace allocscope
