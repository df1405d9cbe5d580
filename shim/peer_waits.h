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
//
// Outside the windows (format.h kModePeerLooksOutside) the process looks too, at most once per
// kPeerLookOutsideGapNs whichever thread notices it is time (at a window check): at one of the
// threads inside any allocator call, timed or not; and then times its own call, the one it was
// about to make (a probe: did the lock it saw hold that call up too?).  Between the looks it
// probes alone, as often again (format.h kPeerNoLook): a probe costs a process_vm_readv and two
// getrusage calls, a look three more system calls and a read of the kernel's file; both share one
// schedule, so that a window check reads one word to know neither is due.  Which threads are inside, and in which call,
// their gate words say (recorder.h in_call_depth), read with process_vm_readv, which fails
// rather than faults on a thread that has exited meanwhile; read again after the /proc file, the
// same word with no timing decision since means the same call.
//
// Holds (format.h kModeHolds, kPeerHold): at most once per kHoldGapNs, a turn whose thread is about
// to allocate — and, on a schedule of its own, one whose thread is about to release a block — asks
// the threads inside allocating calls, and on a CPU, to stay where they are: a
// real-time signal whose handler spins on the clock for kHoldNs.  A thread held inside a call keeps
// whatever lock it holds; the requester, once they are held, times its own allocation and records
// whether it lasted until a held thread was let go.  No lock, no allocation, no system call in the
// handler; one outstanding signal per thread at most.
#pragma once
#include <atomic>
#include <cstdint>

#include "recorder.h"
#include "thread_slot.h"

namespace allocscope {

// After the timed call that ended at `now` on the owner of `self`: looks at a peer inside a long
// call, if it is time to look again (ThreadCtx::next_look).
void look_at_peers(Slot* self, uint64_t now);

// Gate words read at once by a turn outside the windows: a look picks one of those inside a call.
constexpr uint32_t kPeerCandidates = 32;
// Outside the windows (format.h kModePeerLooksOutside, kModePeerProbes): at most once per
// kPeerProbeGapNs for the whole process, the thread that notices it at a window check takes a
// turn — it times the call it was about to make as a probe, having read which other threads are
// inside calls; and every kTurnsPerLook-th turn, or the turn after a look that found a thread
// asleep in a futex wait, it first looks at one of them.  The tick from which
// the next turn is due, and the turns taken.
extern std::atomic<uint64_t> g_next_outside_turn;
extern std::atomic<uint64_t> g_outside_turns;
// Takes the turn, if it is due (checked inline first).  True when the probe waits in
// ThreadCtx::probe_look for the call about to be made (finish_probe, recorder.h); a look whose
// probe is not taken is kept as it is (drop_probe).
// `allocating`: the call about to be made obtains bytes.  A hold (format.h kPeerHold) whose probe is
// an allocation is due at most once per kHoldGapNs, and one whose probe is a release as well.
bool outside_turn(Slot* self, uint64_t now, bool allocating);
// The shim's real-time signal (holds, and CPU samples: cpu_samples.h), chosen and installed on
// first use; -1 when none could be had or the program has taken it.
int hold_signal();
// The real-time signals the shim chooses from: the highest free one.
constexpr int kFirstShimSignal = 40, kLastShimSignal = 60;
// The signal chosen so far (0: none yet, -1: none), without choosing one.
int hold_signal_chosen();
// Requests sent and not yet taken by their thread's handler (nor withdrawn).
extern std::atomic<int> g_holds_in_flight;
// The program installs a handler on `sig` (signal_api.h): if it is the holds' signal, the holds
// stop for good, and the requests in flight are let land first (50 ms at most).
void program_takes_signal(int sig);
// Before an exec: consumes a hold signal still pending on this thread (it blocked the signal after
// it was sent), which would otherwise reach the next program, where it has no handler.
void drop_pending_hold_signal();
// Before this thread blocks the holds' signal: no request is sent to it from now on, and one sent
// before lands first (its handler runs while the signal still gets through).  Otherwise a request
// whose sender read the thread's mask just before would stay pending behind it, where the program
// would find it (sigpending, or a wait on every signal).  After it lets the signal through again:
// requests may come.
void refuse_holds();
// Once the mask blocks it: a signal that came all the same is dropped, its request withdrawn.
void holds_blocked();
void accept_holds();
// Keeps a pending look without its probe (the call failed or threw).
void drop_probe();
inline bool outside_turn_due(uint64_t now) {
  return g_sampling.outside_gap && now >= g_next_outside_turn.load(std::memory_order_relaxed);
}
// When the records are full and all written, the owner empties them; false if they stay full.
bool make_look_room(Slot* self);

bool peer_waits_pending(const Slot* s);
// Writes the records not yet written (by the holder of the slot's `flushing` flag).
bool write_peer_waits(Slot* s);

}  // namespace allocscope
