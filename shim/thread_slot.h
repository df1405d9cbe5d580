// shim/thread_slot.h — one thread's statistics, owned by that thread, read by flushers.
//
// A slot is an anonymous mapping (MADV_WIPEONFORK: a fork child sees it zeroed, i.e. Free).
// Its first page holds the header (state, identity, ring indices); the rest are the counters,
// latency rows, event ring and the output buffer, committed by the kernel only where touched.
//
// Lifecycle: Free -> Owned (a thread attached) -> Exited (its pthread key destructor flushed it;
// the thread may still allocate during its teardown and is still counted) -> Reclaiming (another
// thread saw the owner is gone, flushed the remainder) -> Owned by the new thread.
// Only the owner writes counters; flushers read them with relaxed atomics.  The `flushing`
// try-flag makes the ring single-consumer; nobody ever waits for it.
#pragma once
#include <atomic>
#include <cstddef>
#include <cstdint>

#include "allocscope/buckets.h"
#include "allocscope/format.h"
#include "allocscope/ops.h"
#include "allocscope/ring.h"
#include "allocscope/trace_codec.h"
#include "lock_table.h"

namespace allocscope {

enum SlotState : uint32_t { kSlotFree = 0, kSlotOwned = 1, kSlotExited = 2, kSlotReclaiming = 3 };

struct Counter {
  uint64_t calls, bytes, failed, reserved;
};

struct LatencyRow {
  uint64_t timed, ticks, max;
  uint64_t bins[kLatencyBins];
};

constexpr unsigned kBucketSlots = 256;       // size buckets plus kBucketUnknown
constexpr unsigned kMaxLatencyRows = 512;   // distinct (op, bucket) pairs that got timed calls
constexpr unsigned kRingEvents = 4096;      // timed-call events buffered per thread
constexpr size_t kOutBuffer = 64 * 1024;    // one chunk is built here before its write(2)
constexpr size_t kSlotHeaderSize = 4096;
constexpr size_t kTraceBuffer = kOutBuffer - 256;  // encoded trace records, one chunk's worth
constexpr unsigned kPeerWaits = 1024;       // PeerWait records kept per thread (then no more looks)

// Stacks: a per-thread table (open addressing on the stack's hash) hands out ids and is emptied
// when it fills (stack_walk.cpp); new stacks are queued as (StackRecord, frames) in
// `pending_stacks`, published like trace records below.
constexpr unsigned kStackTableSize = 4096;   // a power of two
constexpr size_t kPendingStacks = 32 * 1024;
struct StackEntry {
  uint64_t hash;  // 0 = empty
  uint32_t id;
  uint32_t reserved;
};
struct StackState {
  uint32_t next_id;
  uint32_t countdown;                 // timed calls left before the next sampled stack
  std::atomic<uint32_t> published;    // bytes queued in pending_stacks
  uint32_t flushed;                   // bytes of them already written by a non-owner
  uint64_t stack_lo, stack_hi;        // the thread's stack, for the frame-pointer walk
  uint64_t dropped;                   // stacks not kept: queue full and not writable
};

// Trace mode: the owner appends encoded records to `trace` and publishes (count << 32 | bytes) in
// `published` after each; a flusher writes [flushed_bytes, bytes) as one chunk starting from
// `flushed_cursor`.  Only the owner empties the buffer; another flusher (at exit, or for a dead
// thread) advances `flushed_*`, decoding the records it wrote to find the next chunk's cursor.
struct TraceState {
  std::atomic<uint64_t> published;
  trace::Cursor cursor;          // the owner's encoder state: the last record appended
  uint64_t first_index;          // records of this thread before the buffer's first one
  trace::Cursor flushed_cursor;  // the encoder state after the last record flushed
  uint32_t flushed_bytes, flushed_count;
  uint64_t dropped;              // records lost: buffer full while someone else flushed it
};

struct SlotHeader {
  std::atomic<uint32_t> state;
  std::atomic<uint32_t> flushing;
  uint32_t serial;
  uint32_t tid;
  uint32_t seq;                // snapshots written
  uint32_t n_latency_rows;
  // Bit op set once a counter of op was written (counter_for_write): the readers of the counters
  // skip the other ops' pages, which a reused slot has zeroed and given back (a read of each
  // would be a page fault: 30 of them at every flush of a short thread's slot).
  uint32_t used_ops;
  uint64_t first_tick, last_tick, last_flush_tick;
  uint64_t calls_at_flush;     // sum of all counters at the last flush
  uint64_t events_written, events_dropped, reentrant_calls;
  format::Rusage rusage;       // as of the owner's last flush, since rusage_base
  format::Rusage rusage_base;  // the thread's rusage when the slot started observing it
  Ring<format::Event> ring;
  TraceState trace;
  StackState stacks;
  // The start tick of the timed call in progress (0: none), for other threads to look at.
  alignas(64) std::atomic<uint64_t> inside_since;
  // Where the owner's gate word lies (recorder.h ThreadCtx: countdown, then depth with the call
  // in progress), for other threads to read with process_vm_readv (peer_waits.cpp); and the
  // owner's timing decisions, the only places where the countdown is set anew: a gate read twice
  // with no decision between, and equal, is one call.
  uint64_t gate_addr;
  uint64_t decisions;
  std::atomic<uint32_t> peer_count;  // PeerWait records appended by the owner (peer_waits.h)
  uint32_t peer_flushed;             // of which written, by the holder of `flushing`
  // A hold (peer_waits.h): the tick another thread asked this one to stay where it is (0: no request
  // outstanding), and the hold this thread's signal handler made: its start and end ticks, and the
  // gate word (recorder.h in_call_depth) it interrupted.
  std::atomic<uint64_t> hold_request;
  std::atomic<uint64_t> hold_start, hold_end, hold_gate;
  // 1 from just before the owner blocks the holds' signal until it lets it through again
  // (peer_waits.h refuse_holds): a request made meanwhile is withdrawn, never sent.
  std::atomic<uint32_t> holds_refused;
  // The last reading of the thread's blocked signals by a requester (peer_waits.cpp
  // lets_signal_through): its tick << 1, and bit 0 set when the holds' signal got through; 0: none.
  std::atomic<uint64_t> signal_checked;
  // CPU samples (cpu_samples.h): the thread's timer, and where its signal handler found the thread,
  // counted by the handler on the owner's own thread (format.h CpuSamples).
  int32_t cpu_timer;
  uint32_t cpu_timer_set;       // 1 while cpu_timer is the thread's
  uint64_t cpu_samples, cpu_in_allocator, cpu_in_shim, cpu_in_locks, cpu_in_cond;
  uint64_t cpu_samples_at_flush;  // cpu_samples as of the last CpuSamples chunk
};
static_assert(sizeof(SlotHeader) <= kSlotHeaderSize);

struct Slot {
  SlotHeader h;
  alignas(kSlotHeaderSize) Counter counters[kOps][kBucketSlots];
  uint16_t latency_index[kOps][kBucketSlots];  // 0 = no row yet, else row number + 1
  LatencyRow latency[kMaxLatencyRows];
  format::Event events[kRingEvents];
  alignas(64) unsigned char out[kOutBuffer];
  alignas(64) unsigned char trace[kTraceBuffer];
  StackEntry stack_table[kStackTableSize];
  alignas(64) unsigned char pending_stacks[kPendingStacks];
  alignas(64) LockTable locks;   // contended lock waits (lock_waits.cpp)
  format::PeerWait peer_waits[kPeerWaits];  // what this thread saw others do (peer_waits.cpp)
};

constexpr size_t kSlotBytes = (sizeof(Slot) + 4095) & ~size_t{4095};

// The counter of (op, bucket), to be written: marks op as used (SlotHeader::used_ops), in the
// header's first line, which every call reads anyway (its state word).
inline Counter& counter_for_write(Slot* s, unsigned op, unsigned b) {
  const uint32_t bit = 1u << op;
  const uint32_t used = __atomic_load_n(&s->h.used_ops, __ATOMIC_RELAXED);
  if (__builtin_expect((used & bit) == 0, 0)) __atomic_store_n(&s->h.used_ops, used | bit, __ATOMIC_RELAXED);
  return s->counters[op][b];
}
// Whether a reader of the counters needs to look at op's.
inline bool op_used(const Slot* s, unsigned op) {
  return (__atomic_load_n(&s->h.used_ops, __ATOMIC_RELAXED) >> op & 1u) != 0;
}

// Relaxed single-writer updates: plain loads/stores in the generated code, yet race-free.
inline void bump(uint64_t& x, uint64_t d) {
  __atomic_store_n(&x, __atomic_load_n(&x, __ATOMIC_RELAXED) + d, __ATOMIC_RELAXED);
}
inline uint64_t peek(const uint64_t& x) { return __atomic_load_n(&x, __ATOMIC_RELAXED); }
// Header fields one thread writes while another may read them (owner and flusher): relaxed
// atomics, so that neither reads a torn value and the race is a defined one.
template <class T> inline T load_shared(const T& x) { return __atomic_load_n(&x, __ATOMIC_RELAXED); }
template <class T> inline void store_shared(T& x, T v) { __atomic_store_n(&x, v, __ATOMIC_RELAXED); }

}  // namespace allocscope
