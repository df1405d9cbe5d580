// shim/slot_registry.h — the table of per-thread slots and the code that turns them into chunks.
//
// The table is append-only (a slot, once mapped, stays mapped for the life of the image) and is
// scanned without locks: a thread claims a slot with one CAS.  Slots of exited threads are
// reclaimed once the kernel says their thread is gone (tgkill(pid, tid, 0) == -ESRCH).
#pragma once
#include "allocscope/format.h"
#include "thread_slot.h"

namespace allocscope {

constexpr unsigned kMaxSlots = 4096;

// A slot for the calling thread, initialised and Owned; null when the table is full.
Slot* acquire_slot();
// Whether a new slot could not be mapped (a memory or locked-memory limit), rather than all slots in use.
bool slot_mapping_failed();

// Writes the slot's pending events and a cumulative statistics snapshot. Returns false when the
// slot is being flushed by someone else (never waits) or the profile is not writable.
bool flush_slot(Slot* s, format::ThreadState state);

// Writes the slot's pending events and trace records only (its buffer is full): no snapshot.
bool flush_buffers(Slot* s);

// Flushes every slot with news since its last flush (at exit: state ProcessExit).
void flush_all_slots(format::ThreadState state);

// One of the Owned slots other than `self` whose timed call in progress started before `before`,
// each as likely (drawn with `pick`, a random number: window_phase.h mix64); null if there is none.  *since: that call's start.
Slot* peer_inside(const Slot* self, uint64_t before, uint64_t pick, uint64_t* since);

// Up to `max` Owned slots other than `self`, from a place in the table drawn with `pick`; their
// number.
uint32_t some_peers(const Slot* self, uint64_t pick, Slot** out, uint32_t max);

// Calls `visit` on every slot that is not Free.
void each_slot(void (*visit)(Slot*));

// Totals over all slots, for ProcessEnd.
uint64_t total_events_dropped();

}  // namespace allocscope
