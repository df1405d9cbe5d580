// shim/observe.h — how an entry point forwards one call to the real allocator and records it.
//
// observe() wraps a call that obtains bytes (malloc, new, …), release() one that gives a block
// back (free, delete, …).  Both are inline on the common path: an observed thread, outside the
// shim, not deciding on timing this call; everything else goes through their noinline *_full
// versions.  The thread's gate (recorder.h: countdown and depth) is closed during the real call,
// so that a call the real function makes through another public entry (musl's calloc calling
// malloc, libstdc++'s operator new calling malloc) is forwarded and counted as reentrant, never a
// second time.
//
// A real call that may throw (a throwing operator new) is wrapped with `Throws = true`: if it
// throws, a cleanup (compiled only where exceptions are enabled, cxx_api.cpp) reopens the gate and
// marks the call failed (call_unwound), so that the thread is observed again after the catch.
#pragma once
#include <cstddef>
#include <cstdint>

#include "allocscope/buckets.h"
#include "allocscope/ops.h"
#include "real_allocator.h"
#include "recorder.h"

namespace allocscope {

constexpr unsigned op_index(Op o) { return static_cast<unsigned>(o); }

// A call that failed: its request did not obtain bytes (it was counted before the call).
void note_failed(Op o, uint64_t size);
// A real call that threw: the gate reopens, the call counts as failed (core of ThrowGuard).
void call_unwound(Op o, uint64_t size);

// Armed around a real call that may throw: its destructor runs only when the call threw.
template <bool Throws>
struct ThrowGuard {
  Op o;
  uint64_t size;
  bool armed;
  ~ThrowGuard() {
    if constexpr (Throws) {
      if (__builtin_expect(armed, 0)) call_unwound(o, size);
    }
  }
};

// A call made from inside the shim on this thread (musl's calloc calling malloc, libstdc++'s
// operator new calling malloc, a signal handler): forwarded and counted as reentrant, inline, since
// with C++ operators it happens once per `new` or `delete` of a C++ runtime that calls malloc.
template <class Real>
__attribute__((always_inline)) inline auto pass_reentrant(const ThreadCtx& t, Real real) {
  Slot* s = t.slot;
  if (s && s->h.state.load(std::memory_order_relaxed) != kSlotFree) {
    bump(s->h.reentrant_calls, 1);
    if (__builtin_expect((peek(s->h.reentrant_calls) & kReentrantCheckMask) == 0, 0)) check_left_inside(s);
  }
  return real();
}

// Forwards `real` and records it as `o` of `size` bytes; `failed` judges the result, `block`
// finds the block it returned; `old` is realloc's old block.  The full path: re-entry, a thread
// without a slot yet, a timing decision, a timed call.
template <bool Throws = false, class Real, class Failed, class Block>
__attribute__((noinline)) auto observe_full(Op o, uint64_t size, Real real, Failed failed,
                                            Block block, const void* old) {
  Slot* s = enter();
  if (!s) return real();
  const unsigned b = bucket_of(size);
  count_call(s, op_index(o), b, size);
  const Timing tm = start_timing(s, allocates(op_index(o)));
  enter_call(op_index(o), b);
  ThrowGuard<Throws> guard{o, size, true};
  auto r = real();
  guard.armed = false;
  finish(tm, op_index(o), b, size, failed(r), block(r), old);
  return r;
}

// The common case inline: it counts, calls, and checks the result.  `real` holds its arguments by
// value, so that nothing is spilled on this path; little stays live across the real call (the
// thread's context and the size), so the entry point saves few registers.
template <bool Throws = false, class Real, class Failed, class Block>
__attribute__((always_inline)) inline auto observe(Op o, uint64_t size, Real real, Failed failed,
                                                   Block block, const void* old = nullptr) {
  ThreadCtx& t = t_ctx;
  Slot* s = t.slot;
  if (__builtin_expect(!fast_path_open(t) ||
                           s->h.state.load(std::memory_order_relaxed) == kSlotFree, 0)) {
    if (t.depth != 0) return pass_reentrant(t, real);
    return observe_full<Throws>(o, size, real, failed, block, old);
  }
  const unsigned b = bucket_of(size);
  count_call(s, op_index(o), b, size);
  const uint32_t left = t.countdown - 1;
  set_gate(t, left, in_call_depth(op_index(o), b));
  ThrowGuard<Throws> guard{o, size, true};
  auto r = real();
  guard.armed = false;
  set_gate(t, left, 0);
  if (__builtin_expect(failed(r), 0)) note_failed(o, size);
  return r;
}

constexpr auto same = [](void* p) { return p; };

constexpr auto is_null = [](void* p) { return p == nullptr; };

// A call that gives `ptr` back, the full path.  A null `ptr` (free(NULL)) gives back no block: it
// is counted in bucket 0, with size 0.  Else its bucket is that of `known` when the caller
// passes the block's request (a sized delete: has_known); else the block's usable size, asked of
// the allocator — for every call with ALLOCSCOPE_FREE_SIZES=1 and in a trace that times every call
// (before the timing starts, so that one clock read serves the decision and the start), else on
// timed calls only (outside the timed interval): it costs as much as the free itself; else
// kBucketUnknown.  A trace's untimed releases need no size: the analyzer knows each block's.
template <class Real>
__attribute__((noinline)) void release_full(Op o, void* ptr, bool has_known, uint64_t known,
                                            Real real) {
  Slot* s = enter();
  if (!s) return real();
  const bool sized = !ptr || has_known || __atomic_load_n(&g_exact_free_sizes, __ATOMIC_RELAXED) ||
                     (g_trace && g_sampling.sample_every == 1);
  uint64_t size = !ptr ? 0 : has_known ? known : sized ? g_real.own_usable_size(ptr) : 0;
  Timing tm = start_timing(s);
  if (!sized && tm.timed) {
    size = g_real.own_usable_size(ptr);
    tm.t0 = ticks();
  }
  const unsigned b = sized || tm.timed ? bucket_of(size) : kBucketUnknown;
  count_call(s, op_index(o), b, size);
  enter_call(op_index(o), b);
  real();
  finish(tm, op_index(o), b, size, false, ptr);
}

template <class Real>
__attribute__((always_inline)) inline void release(Op o, void* ptr, Real real,
                                                   bool has_known = false, uint64_t known = 0) {
  ThreadCtx& t = t_ctx;
  Slot* s = t.slot;
  if (__builtin_expect(!fast_path_open(t) ||
                           __atomic_load_n(&g_exact_free_sizes, __ATOMIC_RELAXED) ||
                           s->h.state.load(std::memory_order_relaxed) == kSlotFree, 0)) {
    if (t.depth != 0) return pass_reentrant(t, real);
    return release_full(o, ptr, has_known, known, real);
  }
  unsigned b = kBucketUnknown;  // size not taken: see release_full
  if (__builtin_expect(!ptr, 0)) {
    b = 0;
    bump(counter_for_write(s, op_index(o), 0).calls, 1);  // no block given back: bucket 0, size 0
  } else if (has_known) {
    b = bucket_of(known);
    count_call(s, op_index(o), b, known);
  } else {
    bump(counter_for_write(s, op_index(o), kBucketUnknown).calls, 1);
  }
  const uint32_t left = t.countdown - 1;
  set_gate(t, left, in_call_depth(op_index(o), b));
  real();
  set_gate(t, left, 0);
}

}  // namespace allocscope
