// shim/slot_registry.cpp — slot table, reclaim of exited threads, chunk serialisation.
#include "slot_registry.h"

#include <sys/mman.h>

#include <cstring>

#include "allocscope/window_phase.h"
#include "cpu_samples.h"
#include "lock_waits.h"
#include "peer_waits.h"
#include "process_state.h"
#include "recorder.h"
#include "stack_walk.h"
#include "sys.h"

#ifndef MADV_WIPEONFORK
#define MADV_WIPEONFORK 18
#endif

namespace allocscope {

namespace {

std::atomic<Slot*> g_slots[kMaxSlots];
std::atomic<uint32_t> g_nslots{0};

bool flush_held(Slot* s, format::ThreadState state);

uint32_t slot_count() {
  const uint32_t n = g_nslots.load(std::memory_order_acquire);
  return n < kMaxSlots ? n : kMaxSlots;
}

void start_slot(Slot* s, int tid) {
  SlotHeader& h = s->h;
  h.flushing.store(0, std::memory_order_relaxed);
  // Other threads read both while they look at this slot (peer_waits.cpp): atomic stores.
  store_shared(h.serial, g_ps->next_serial.fetch_add(1, std::memory_order_relaxed) + 1);
  store_shared(h.tid, static_cast<uint32_t>(tid));
  store_shared(h.seq, 0u);
  h.n_latency_rows = 0;
  const uint64_t now = ticks();
  // The thread is observed from here on: its rusage counts from this reading, taken after `now`,
  // so that the CPU time of its snapshots lies inside its lifetime (a fork child's thread reads
  // its own counts, which the kernel started anew).  The thread that started the profile is
  // observed from the start, whenever its first call comes (process_state.h start_tid).
  read_thread_rusage(h.rusage_base);
  h.first_tick = now;
  if (tid == __atomic_load_n(&g_ps->start_tid, __ATOMIC_ACQUIRE) &&
      g_ps->start_taken.exchange(1, std::memory_order_relaxed) == 0) {
    h.first_tick = g_ps->start_tick;
    h.rusage_base = g_ps->start_rusage;
  }
  store_shared(h.last_tick, now);
  store_shared(h.last_flush_tick, now);
  store_shared(h.calls_at_flush, uint64_t{0});
  __atomic_store_n(&h.used_ops, 0u, __ATOMIC_RELAXED);
  h.events_written = h.events_dropped = h.reentrant_calls = 0;
  std::memset(&h.rusage, 0xff, sizeof h.rusage);
  h.ring.init(s->events, kRingEvents);
  h.trace.published.store(0, std::memory_order_relaxed);
  h.trace.cursor = h.trace.flushed_cursor = trace::Cursor{};
  h.trace.first_index = h.trace.dropped = 0;
  h.trace.flushed_bytes = h.trace.flushed_count = 0;
  h.stacks.next_id = h.stacks.countdown = h.stacks.flushed = 0;  // the table itself was madvised
  h.stacks.published.store(0, std::memory_order_relaxed);
  h.stacks.stack_lo = h.stacks.stack_hi = h.stacks.dropped = 0;
  h.inside_since.store(0, std::memory_order_relaxed);
  store_shared(h.gate_addr, uint64_t{0});
  store_shared(h.decisions, uint64_t{0});
  h.peer_count.store(0, std::memory_order_relaxed);
  if (h.hold_request.exchange(0, std::memory_order_acq_rel) != 0)  // sent to a thread that is gone
    g_holds_in_flight.fetch_sub(1, std::memory_order_release);
  h.hold_start.store(0, std::memory_order_relaxed);
  h.hold_end.store(0, std::memory_order_relaxed);
  h.holds_refused.store(0, std::memory_order_relaxed);
  h.signal_checked.store(0, std::memory_order_relaxed);
  h.peer_flushed = 0;
  h.state.store(kSlotOwned, std::memory_order_release);
  const uint32_t live = g_ps->live_threads.fetch_add(1, std::memory_order_relaxed) + 1;
  uint32_t max = g_ps->max_live_threads.load(std::memory_order_relaxed);
  while (live > max &&
         !g_ps->max_live_threads.compare_exchange_weak(max, live, std::memory_order_relaxed)) {
  }
}

uint64_t count_calls(const Slot* s) {
  uint64_t n = 0;
  for (unsigned op = 0; op < kOps; op++)
    if (op_used(s, op))
      for (unsigned b = 0; b < kBucketSlots; b++) n += peek(s->counters[op][b].calls);
  return n;
}

bool trace_pending(const Slot* s) {
  const uint64_t pub = s->h.trace.published.load(std::memory_order_acquire);
  return static_cast<uint32_t>(pub & 0xffffffffu) > s->h.trace.flushed_bytes;
}

bool owner_gone(const Slot* s, int pid, int tid) {
  // The tid is read once, atomically: another thread may be starting the slot for itself (start_slot).
  const int owner = static_cast<int>(load_shared(s->h.tid));
  return owner == tid || sys::tgkill(pid, owner, 0) == -3;
}

std::atomic<bool> g_slot_unmapped{false};

// Mapped without access first, then unlocked, then opened: a program that called
// mlockall(MCL_FUTURE) has every new mapping locked, and a locked mapping that can be read is
// filled at once (1.2 MiB a thread: a program of 64 threads grew from 6.5 MB to 87 MB).  Unlocked,
// the slot takes only the pages it touches, as in any other program.
Slot* new_slot() {
  void* mem = sys::mmap(nullptr, kSlotBytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (!mem) {
    g_slot_unmapped.store(true, std::memory_order_relaxed);
    return nullptr;
  }
  sys::call(SYS_munlock, reinterpret_cast<long>(mem), static_cast<long>(kSlotBytes));
  if (sys::failed(sys::call(SYS_mprotect, reinterpret_cast<long>(mem), static_cast<long>(kSlotBytes),
                            PROT_READ | PROT_WRITE))) {
    sys::munmap(mem, kSlotBytes);
    g_slot_unmapped.store(true, std::memory_order_relaxed);
    return nullptr;
  }
  sys::madvise(mem, kSlotBytes, MADV_WIPEONFORK);
  Slot* s = static_cast<Slot*>(mem);
  s->h.state.store(kSlotReclaiming, std::memory_order_relaxed);
  const uint32_t idx = g_nslots.fetch_add(1, std::memory_order_acq_rel);
  if (idx >= kMaxSlots) {
    sys::munmap(mem, kSlotBytes);
    return nullptr;
  }
  g_slots[idx].store(s, std::memory_order_release);
  return s;
}

// --- serialisation -----------------------------------------------------------------------

constexpr size_t kHdr = sizeof(format::ChunkHeader);
constexpr unsigned kMaxBinEntries = 2 * kLatencyBins;  // room for a few split bins per row

bool write_events(Slot* s) {
  constexpr uint64_t kPerChunk =
      (kOutBuffer - kHdr - sizeof(format::EventsHeader)) / sizeof(format::Event);
  bool ok = true;
  while (ok && s->h.ring.size() > 0) {
    auto* eh = reinterpret_cast<format::EventsHeader*>(s->out + kHdr);
    auto* dst = reinterpret_cast<format::Event*>(s->out + kHdr + sizeof *eh);
    uint32_t n = 0;
    uint64_t first = s->h.ring.consumed();
    s->h.ring.consume(kPerChunk, [&](const format::Event* src, uint64_t count, uint64_t) {
      std::memcpy(dst + n, src, count * sizeof *src);
      n += static_cast<uint32_t>(count);
    });
    eh->thread_serial = s->h.serial;
    eh->count = n;
    eh->first_index = first;
    ok = write_chunk(format::ChunkType::Events, s->out, sizeof *eh + n * sizeof(format::Event));
    if (ok) bump(s->h.events_written, n);
    else bump(s->h.events_dropped, n);
  }
  return ok;
}

// Writes the trace records not yet flushed. The owner empties its buffer; anyone else (at exit,
// or for a thread that is gone) leaves it to the owner and remembers how far it got.
bool write_trace(Slot* s, bool owner) {
  TraceState& tr = s->h.trace;
  const uint64_t pub = tr.published.load(std::memory_order_acquire);
  const uint32_t len = static_cast<uint32_t>(pub & 0xffffffffu);
  const uint32_t count = static_cast<uint32_t>(pub >> 32);
  bool ok = true;
  if (len > tr.flushed_bytes) {
    auto* th = reinterpret_cast<format::TraceHeader*>(s->out + kHdr);
    std::memset(th, 0, sizeof *th);
    th->thread_serial = s->h.serial;
    th->count = count - tr.flushed_count;
    th->first_index = tr.first_index + tr.flushed_count;
    th->base_tick = tr.flushed_cursor.tick;
    th->base_addr = tr.flushed_cursor.addr;
    th->bytes = len - tr.flushed_bytes;
    std::memcpy(th + 1, s->trace + tr.flushed_bytes, th->bytes);
    ok = write_chunk(format::ChunkType::TraceEvents, s->out, sizeof *th + th->bytes);
    if (ok) bump(s->h.events_written, th->count);
    if (!owner) {
      const unsigned char* p = s->trace + tr.flushed_bytes;
      trace::Record r;
      while (p < s->trace + len && trace::decode(p, s->trace + len, tr.flushed_cursor, r)) {
      }
      tr.flushed_bytes = len;
      tr.flushed_count = count;
    }
  }
  if (owner) {
    tr.first_index += count;
    tr.flushed_cursor = tr.cursor;
    tr.flushed_bytes = tr.flushed_count = 0;
    tr.published.store(0, std::memory_order_release);
  }
  return ok;
}

void fill_stats_header(Slot* s, format::ThreadStatsHeader* th, format::ThreadState state,
                       uint16_t part, uint32_t rows, uint64_t now, uint64_t now_ns) {
  std::memset(th, 0, sizeof *th);
  th->thread_serial = s->h.serial;
  th->tid = s->h.tid;
  th->seq = load_shared(s->h.seq);
  th->part = part;
  th->state = static_cast<uint8_t>(state);
  th->first_tick = s->h.first_tick;
  th->snapshot_tick = now;
  th->snapshot_mono_ns = now_ns;
  th->last_tick = load_shared(s->h.last_tick);
  th->rusage = s->h.rusage;
  th->events_written = peek(s->h.events_written);
  th->events_dropped = peek(s->h.events_dropped) + peek(s->h.trace.dropped);
  th->reentrant_calls = peek(s->h.reentrant_calls);
  th->n_rows = rows;
}

bool write_stats(Slot* s, format::ThreadState state) {
  const uint64_t now = ticks(), now_ns = mono_ns();
  store_shared(s->h.seq, load_shared(s->h.seq) + 1);
  constexpr size_t kBody = kHdr + sizeof(format::ThreadStatsHeader);
  size_t pos = kBody;
  uint32_t rows = 0;
  uint16_t part = 0;
  auto emit = [&](bool last) {
    auto* th = reinterpret_cast<format::ThreadStatsHeader*>(s->out + kHdr);
    fill_stats_header(s, th, state, static_cast<uint16_t>(part | (last ? format::kLastPart : 0)),
                      rows, now, now_ns);
    const bool ok = write_chunk(format::ChunkType::ThreadStats, s->out, pos - kHdr);
    part++;
    pos = kBody;
    rows = 0;
    return ok;
  };
  for (unsigned op = 0; op < kOps; op++) {
    if (!op_used(s, op)) continue;
    for (unsigned b = 0; b < kBucketSlots; b++) {
      const Counter& c = s->counters[op][b];
      const uint64_t calls = peek(c.calls);
      if (calls == 0) continue;
      const uint16_t idx = load_shared(s->latency_index[op][b]);
      const LatencyRow* lr = idx ? &s->latency[idx - 1] : nullptr;
      const size_t need = sizeof(format::StatsRow) + kMaxBinEntries * sizeof(format::LatencyBin);
      if (pos + need > kOutBuffer && !emit(false)) return false;
      auto* row = reinterpret_cast<format::StatsRow*>(s->out + pos);
      std::memset(row, 0, sizeof *row);
      row->op = static_cast<uint8_t>(op);
      row->bucket = static_cast<uint8_t>(b);
      row->calls = calls;
      row->bytes = peek(c.bytes);
      row->failed = peek(c.failed);
      pos += sizeof *row;
      if (lr) {
        row->timed = peek(lr->timed);
        row->timed_ticks = peek(lr->ticks);
        row->max_ticks = peek(lr->max);
        uint16_t nb = 0;
        for (unsigned bin = 0; bin < kLatencyBins; bin++) {
          // A count beyond 32 bits is written as several entries of the same bin.
          for (uint64_t n = peek(lr->bins[bin]); n > 0 && nb < kMaxBinEntries;) {
            const uint32_t part = n > 0xffffffffu ? 0xffffffffu : static_cast<uint32_t>(n);
            auto* lb = reinterpret_cast<format::LatencyBin*>(s->out + pos);
            lb->bin = static_cast<uint16_t>(bin);
            lb->reserved = 0;
            lb->count = part;
            pos += sizeof *lb;
            nb++;
            n -= part;
          }
        }
        row->n_bins = nb;
      }
      rows++;
    }
  }
  return emit(true);
}

// Whether the slot holds anything flush_held would write: calls, events, trace records, lock waits,
// CPU samples or peer waits not yet in the profile.  The one list: a new kind of chunk joins here.
bool unwritten(Slot* s) {
  return count_calls(s) != load_shared(s->h.calls_at_flush) || s->h.ring.size() > 0 || trace_pending(s) ||
         lock_waits_pending(s) || cpu_samples_pending(s) || peer_waits_pending(s);
}

}  // namespace

bool slot_mapping_failed() { return g_slot_unmapped.load(std::memory_order_relaxed); }

Slot* acquire_slot() {
  const int pid = g_ps->pid;
  const int tid = sys::gettid();
  const uint32_t n = slot_count();
  for (uint32_t i = 0; i < n; i++) {
    Slot* s = g_slots[i].load(std::memory_order_acquire);
    if (!s) continue;
    uint32_t st = s->h.state.load(std::memory_order_acquire);
    if (st == kSlotFree) {
      // Never used in this process (a fork child's wiped slot): already all zeroes.
      if (s->h.state.compare_exchange_strong(st, kSlotReclaiming, std::memory_order_acq_rel)) {
        start_slot(s, tid);
        return s;
      }
    } else if (st == kSlotExited && owner_gone(s, pid, tid)) {
      // A dead thread's slot with counts still to write needs kilobytes of stack to flush: not on a
      // signal handler's alternate stack (recorder.h on_alternate_stack), where another slot serves.
      if (on_alternate_stack(t_ctx) && unwritten(s)) continue;
      if (s->h.state.compare_exchange_strong(st, kSlotReclaiming, std::memory_order_acq_rel)) {
        // Another thread may be flushing it (the final flush, an explicit one): leave it to them
        // and look further, rather than reset a slot under a writer.
        uint32_t idle = 0;
        if (!s->h.flushing.compare_exchange_strong(idle, 1, std::memory_order_acquire)) {
          s->h.state.store(kSlotExited, std::memory_order_release);
          continue;
        }
        if (unwritten(s) && !flush_held(s, format::ThreadState::Exited) &&
            g_ps->mode.load(std::memory_order_acquire) == kModeInitialising) {
          // The profile is not open yet: keep the dead thread's counts for a later flush.
          s->h.flushing.store(0, std::memory_order_release);
          s->h.state.store(kSlotExited, std::memory_order_release);
          continue;
        }
        // Zero everything but the header page; the kernel refills it with zero pages lazily.
        sys::madvise(reinterpret_cast<char*>(s) + kSlotHeaderSize, kSlotBytes - kSlotHeaderSize,
                     MADV_DONTNEED);
        start_slot(s, tid);
        return s;
      }
    }
  }
  Slot* s = new_slot();
  if (s) start_slot(s, tid);
  return s;
}

namespace {

// flush_slot's work, by the holder of the slot's `flushing` flag.
bool flush_held(Slot* s, format::ThreadState state) {
  bool ok = g_ps && g_ps->mode.load(std::memory_order_acquire) == kModeActive &&
            sys::getpid() == g_ps->pid;
  if (ok) {
    const bool owner = t_ctx.slot == s;
    if (owner) {  // getrusage only sees the caller
      format::Rusage now;
      read_thread_rusage(now);
      s->h.rusage = rusage_since(now, s->h.rusage_base);
    }
    const uint64_t calls = count_calls(s);
    ok = write_pending_stacks(s) && write_events(s) && write_trace(s, owner) &&
         write_stats(s, state) && write_lock_waits(s) && write_cpu_samples(s) && write_peer_waits(s);
    if (ok && owner && (g_sampling.stack_every || lock_stacks_wanted())) write_modules_if_changed();
    store_shared(s->h.calls_at_flush, calls);
    store_shared(s->h.last_flush_tick, ticks());
  }
  return ok;
}

}  // namespace

bool flush_slot(Slot* s, format::ThreadState state) {
  uint32_t expected = 0;
  if (!s->h.flushing.compare_exchange_strong(expected, 1, std::memory_order_acquire)) return false;
  const bool ok = flush_held(s, state);
  s->h.flushing.store(0, std::memory_order_release);
  return ok;
}

bool flush_buffers(Slot* s) {
  if (on_alternate_stack(t_ctx)) return false;  // recorder.h: not on a signal handler's small stack
  uint32_t expected = 0;
  if (!s->h.flushing.compare_exchange_strong(expected, 1, std::memory_order_acquire)) return false;
  bool ok = g_ps && g_ps->mode.load(std::memory_order_acquire) == kModeActive &&
            sys::getpid() == g_ps->pid;
  if (ok) ok = write_pending_stacks(s) && write_events(s) && write_trace(s, t_ctx.slot == s);
  s->h.flushing.store(0, std::memory_order_release);
  return ok;
}

void flush_all_slots(format::ThreadState state) {
  const uint32_t n = slot_count();
  for (uint32_t i = 0; i < n; i++) {
    Slot* s = g_slots[i].load(std::memory_order_acquire);
    if (!s) continue;
    if (state == format::ThreadState::ProcessExit) {
      // A thread may be writing its own last snapshot (its exit destructor) as the process ends:
      // let it finish, or exit_group would cut it off and its counts would be lost.  Bounded.
      for (int spins = 0; spins < 20000 && s->h.flushing.load(std::memory_order_acquire); spins++)
        sys::sched_yield();
    }
    uint32_t idle = 0;
    if (!s->h.flushing.compare_exchange_strong(idle, 1, std::memory_order_acquire)) continue;
    // The state is read with the flag held: a slot being reclaimed (which takes the flag first)
    // is not flushed under its new owner's feet, nor a new owner's slot as an exited thread.
    const uint32_t st = s->h.state.load(std::memory_order_acquire);
    // Nothing of a slot being started (a free one taken without the flag: start_slot) is read.
    const bool live = st == kSlotOwned || st == kSlotExited;
    // At the end of the image every thread still alive gets a last snapshot, news or not: its
    // lifetime runs to here (a thread whose calls all came early would otherwise end at its last
    // snapshot, and the exiting thread's rusage would be that snapshot's).
    const bool ending = state == format::ThreadState::ProcessExit && st == kSlotOwned;
    const bool pending = live && (ending || load_shared(s->h.seq) == 0 || unwritten(s));
    if (pending) flush_held(s, st == kSlotOwned ? state : format::ThreadState::Exited);
    s->h.flushing.store(0, std::memory_order_release);
  }
}

Slot* peer_inside(const Slot* self, uint64_t before, uint64_t pick, uint64_t* since) {
  Slot* chosen = nullptr;
  uint64_t seen = 0;
  const uint32_t n = slot_count();
  for (uint32_t i = 0; i < n; i++) {
    Slot* s = g_slots[i].load(std::memory_order_acquire);
    if (!s || s == self || s->h.state.load(std::memory_order_acquire) != kSlotOwned) continue;
    const uint64_t at = s->h.inside_since.load(std::memory_order_relaxed);
    if (at == 0 || at >= before) continue;
    // Reservoir sampling of one: the k-th candidate replaces the choice with probability 1/k.
    ++seen;
    if (mix64(pick + seen) % seen == 0) {
      chosen = s;
      *since = at;
    }
  }
  return chosen;
}

uint32_t some_peers(const Slot* self, uint64_t pick, Slot** out, uint32_t max) {
  const uint32_t n = slot_count();
  uint32_t found = 0;
  for (uint32_t k = 0; k < n && found < max; k++) {
    Slot* s = g_slots[(pick + k) % n].load(std::memory_order_acquire);
    if (s && s != self && s->h.state.load(std::memory_order_acquire) == kSlotOwned) out[found++] = s;
  }
  return found;
}

void each_slot(void (*visit)(Slot*)) {
  const uint32_t n = slot_count();
  for (uint32_t i = 0; i < n; i++) {
    Slot* s = g_slots[i].load(std::memory_order_acquire);
    if (s && s->h.state.load(std::memory_order_acquire) != kSlotFree) visit(s);
  }
}

uint64_t total_events_dropped() {
  uint64_t sum = 0;
  const uint32_t n = slot_count();
  for (uint32_t i = 0; i < n; i++) {
    Slot* s = g_slots[i].load(std::memory_order_acquire);
    if (s && s->h.state.load(std::memory_order_acquire) != kSlotFree)
      sum += peek(s->h.events_dropped) + peek(s->h.trace.dropped);
  }
  return sum;
}

}  // namespace allocscope
