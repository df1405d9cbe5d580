// peer_waits.h — where calls asleep inside the allocator waited (format.h PeerWaits).
//
// The shim's threads now and then read what another thread, inside a timed call for 2 µs or
// more, is doing (shim/peer_waits.h): asleep in a futex wait, with the address of the word; in
// another system call; preempted; or running.  Each record is joined here to the peer's timed call
// (its Event, by thread and start tick) for the call's kind and size.  One lock that every call
// takes makes every sleeping waiter wait on one word — whatever its thread and size; a lock per
// size class or per arena spreads them over several words, and an allocator without locks leaves
// none asleep.  The measure: the word most waited on, its share of the futex waits, and how many
// threads and which sizes its waiting *allocating* calls came from.
#pragma once
#include <cstdint>
#include <optional>
#include <unordered_map>
#include <utility>
#include <vector>

#include "allocscope/format.h"
#include "profile/profile.h"

namespace allocscope {

struct PeerWaitMeasure {
  bool recorded = false;     // the profile has looks (format.h kModePeerWaits)
  uint64_t looks = 0;        // looks joined to a timed call, and looks outside the windows
  uint64_t outside_looks = 0;  // of which outside the windows (format.h kPeerUntimed)
  uint64_t futex_waits = 0;  // of which asleep in a futex wait
  uint64_t futex_waits_allocating = 0;  // … inside allocating calls (a lock that only frees take puts none there)
  uint64_t running = 0;      // on a CPU or waiting for one (the kernel does not tell them apart)
  uint64_t preempted = 0;    // stopped in user space
  uint64_t other_syscalls = 0;
  uint64_t map_syscalls = 0;  // of which in a call on the process's memory map (mmap, munmap, mremap, madvise, brk, mprotect)
  uint64_t words = 0;        // distinct futex words waited on
  uint64_t top_waits = 0;    // futex waits on the word most waited on
  uint64_t top_waits_outside = 0;  // … of them seen by looks outside the windows (of outside_looks)
  uint32_t top_threads = 0;  // distinct threads whose calls waited on it
  uint32_t top_allocating_threads = 0;  // … in allocating calls (a consumer's frees that sleep on its producer's arena are not)
  // How many distinct threads its sleepers would come from if each were drawn from the threads in
  // proportion to their timed calls — as under one lock that every call takes — and the standard
  // deviation of that number.  A lock that only some threads reach (an arena two threads share, a
  // lock on a slow path that few threads take) leaves fewer.
  double top_threads_expected = 0, top_threads_sd = 0;
  uint32_t top_allocating = 0;             // its waits in allocating calls of known size
  uint64_t top_min_size = 0, top_max_size = 0;  // their smallest and largest request
  bool top_sizes_apart = false;            // two of them at least twice apart (completion_coincidence.h sizes_apart)
  // Their size groups (completion_coincidence.h size_group) reach from at or below the median
  // group of all timed allocating calls to at or above it: the sleepers are not confined to the
  // large sizes or the small ones (a lock for one wide class, say every size of 2 KiB and up).
  bool top_spans_median = false;
  // Probes (format.h kPeerProbed): the looking thread's own allocating call, made just after the
  // look.  After a look that saw a thread asleep on the top word, and after the other looks: how
  // many, and how many of them were held up (slept, or took kSwitchSlowNs or longer).  A lock that
  // every allocation takes holds up the call that follows the sight of a sleeper on it.
  uint64_t probes_after_sleeper = 0, probes_after_sleeper_held = 0;
  uint64_t probes_other = 0, probes_other_held = 0;
  // Every probe, and those in which the looking thread slept inside the allocator: how often an
  // ordinary allocation sleeps there.
  uint64_t probes = 0, probes_slept = 0;
  // Probes of a known size whose observer saw, as its call started, other threads inside
  // allocating calls only and all of sizes at least twice apart from its own (size groups two or
  // more apart, all on one side): a lock per size class cannot make such a call sleep; one lock
  // for all can.  How many, how many slept, and of how many observing threads.
  uint64_t probes_apart = 0, probes_apart_slept = 0;
  uint32_t probes_apart_slept_threads = 0;
  // … of the sleepers, those whose own size and the others' lay on either side of the median
  // request (a lock for one wide class, every size of 2 KiB and up, joins large sizes only).
  uint64_t probes_apart_slept_across_median = 0;
  // Held up (slept, or took kSwitchSlowNs or longer): probes made while no other thread was inside
  // a call (unmet), and probes apart whose smaller side — its own size or the others' — lay below
  // the median request (a lock for one wide class of the large sizes, every size of 2 KiB and up,
  // holds up probes apart within it; one side below the median is outside such a class).  A call
  // that meets nobody can be held up only by the allocator's own slow paths (the kernel, page
  // faults) or by losing its CPU; beside calls of sizes twice apart, a lock per size class adds
  // nothing to that, nor does an allocator without locks — one lock for every call holds the probe
  // up behind whatever the other threads asked for.  Of the observing threads with
  // kMinThreadProbes such probes or more, how many, and how many of them were held up more often
  // than unmet probes could be (above the upper end of Wilson's interval of the unmet share).
  uint64_t probes_unmet = 0, probes_unmet_held = 0;
  // … of the unmet probes, those that slept: what sleeps inside the allocator with nobody else
  // inside (the kernel's map lock, taken by another thread's page faults outside the allocator).
  uint64_t probes_unmet_slept = 0;
  uint64_t probes_apart_low = 0, probes_apart_low_held = 0;
  uint32_t probes_apart_low_threads = 0, probes_apart_low_held_threads = 0;
  // Probes without a look (format.h kPeerNoLook), counted in `probes` too.
  uint64_t probes_alone = 0;
  // Holds (format.h kPeerHold, shim/peer_waits.h): the observer's allocating calls of a known size
  // made while the threads inside allocator calls were held where they were, the observer keeping
  // its CPU throughout (no involuntary switch).  Released: the call lasted until a held thread
  // that was inside a call was let go, and ended at most kHoldReleaseNs after.  Apart, low: that
  // releaser was in an allocating call of a size at least two size groups from the observer's
  // own, one of the two below the median request (as the probes apart above).  A lock per size
  // class cannot hold such a call, nor can an allocator without locks; one lock that every call
  // takes does whenever the held thread held it.  Of how many observing threads.
  uint64_t holds = 0, holds_released = 0;
  // The same with a release as the observer's call (format.h kHoldGapNs), counted apart: a
  // release's size is not known.
  uint64_t release_holds = 0;
  // Passed, of both: the call ended while every thread it found inside a call was still held — a
  // call that went past threads stopped inside allocator calls, which one lock for every call
  // allows only where none of them held it.
  uint64_t holds_passed = 0;
  uint64_t holds_apart_low_released = 0;
  uint32_t holds_apart_low_released_threads = 0;
  // The most threads those releases join into one set, each joining its observer and the held
  // thread that released it: one lock for all joins whichever threads held it; a lock that pairs
  // of threads share (arenas shared by two threads each) joins pairs only.
  uint32_t holds_apart_low_joined = 0;
  double apart_slept_share() const {
    return probes_apart ? static_cast<double>(probes_apart_slept) / static_cast<double>(probes_apart) : 0;
  }
  double held_after_sleeper() const {
    return probes_after_sleeper ? static_cast<double>(probes_after_sleeper_held) / static_cast<double>(probes_after_sleeper) : 0;
  }
  double held_other() const {
    return probes_other ? static_cast<double>(probes_other_held) / static_cast<double>(probes_other) : 0;
  }
  double top_share() const { return futex_waits ? static_cast<double>(top_waits) / static_cast<double>(futex_waits) : 0; }
};

// Apart probes an observing thread needs to be judged on its own (PeerWaitMeasure).
constexpr uint64_t kMinThreadProbes = 5;
// A hold's call released by a held thread ended at most this long after that thread's hold did:
// the time the holder needs to finish its critical section and hand the lock over, a wake-up
// included (measured at two threads: a median of 4 µs for a spin lock, 33-56 µs for musl's and a
// mutex, 90 % within 370 µs; docs/analysis.md).
constexpr double kHoldReleaseNs = 1e6;

// The lower end of Wilson's score interval for k successes in n trials, at z = 2 (0 for n = 0).
double wilson_low(uint64_t k, uint64_t n);
// … and its upper end (1 for n = 0).
double wilson_high(uint64_t k, uint64_t n);

class PeerWaitTally {
 public:
  // The profile's looks, to be joined to the timed calls given to add_call; a probe that lasted
  // `slow_ticks` or longer was held up.
  // `release_ticks`: kHoldReleaseNs in ticks.
  void expect(const std::vector<Profile::PeerLook>& looks, bool recorded, uint64_t slow_ticks, uint64_t release_ticks);
  // No look to join or to weigh against the timed calls: add_call may be skipped.
  bool empty() const { return pending_.empty() && joined_.empty() && holds_.empty(); }
  // A timed call of thread `serial`: joins the looks at it.
  void add_call(uint32_t serial, const format::Event& e);
  PeerWaitMeasure measure() const;

 private:
  // The size group (completion_coincidence.h size_group) of the median timed allocating call.
  std::optional<uint32_t> median_group() const;
  // The holds' counts of PeerWaitMeasure, against that median.
  void measure_holds(std::optional<uint32_t> median, PeerWaitMeasure& m) const;
  struct Joined {
    format::PeerWait wait;
    uint32_t observer;
    uint32_t serial;
    bool allocating;
    bool sized;
    uint64_t size;
  };
  std::unordered_multimap<uint64_t, format::PeerWait> pending_;  // by (serial, start tick)
  std::vector<Joined> joined_;
  std::vector<Profile::PeerLook> holds_;  // format.h kPeerHold records
  std::vector<uint64_t> allocating_by_group_;  // timed allocating calls of known size, per size group
  std::unordered_map<uint32_t, uint64_t> calls_by_thread_;  // timed calls, per thread
  bool recorded_ = false;
  uint64_t slow_ticks_ = 0;
  uint64_t release_ticks_ = 0;
};

// The number of distinct threads among `n` draws, each drawing thread t with probability p[t]:
// its mean and standard deviation.
std::pair<double, double> distinct_draws(const std::vector<double>& p, uint64_t n);

// The futex system call, by the kernel's number: that of the machine that recorded the profile,
// taken to be this one's architecture (a profile does not name its architecture).
bool is_futex(int32_t syscall);
// A system call on the process's memory map: the kernel's map lock may put such calls to sleep.
bool is_map_syscall(int32_t syscall);
// A futex operation that sleeps until the word changes or a lock is handed over.
bool is_futex_wait(int32_t syscall, uint64_t op);

}  // namespace allocscope
