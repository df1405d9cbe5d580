// shim/peer_waits.h — where threads inside long allocator calls wait (format.h PeerWaits).
//
// A waiting thread cannot say what it waits for: the allocator's lock is its own (musl's never
// passes through a symbol the shim sees) and the futex system call leaves no trace the thread can
// read afterwards.  Another thread can: the kernel shows, in /proc/self/task/TID/syscall, the
// system call a sleeping thread of the same process is in and its arguments — for a futex wait
// the address of the word it waits on.  So a thread that ends a timed call now and then picks
// one of the other threads that have been inside a timed call for 2 µs or more, at random (the
// longest inside is most often one preempted, with more threads than CPUs), reads that file, and records what it saw if the peer was still inside the same call.  The
// analyzer joins each record to the peer's timed call (docs/analysis.md, "Where do sleeping
// calls wait?"): waiters of every thread and size class asleep on one word are one lock.
//
// No helper thread, no allocation: three system calls (openat, read, close) on the observing
// thread, outside its timed interval, at most once per format::kPeerLookGapNs of its time.
#pragma once
#include <cstdint>

#include "thread_slot.h"

namespace allocscope {

// After the timed call that ended at `now` on the owner of `self`: looks at a peer inside a long
// call, if it is time to look again (ThreadCtx::next_look).
void look_at_peers(Slot* self, uint64_t now);

bool peer_waits_pending(const Slot* s);
// Writes the records not yet written (by the holder of the slot's `flushing` flag).
bool write_peer_waits(Slot* s);

}  // namespace allocscope
