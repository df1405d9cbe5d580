// peer_waits.cpp — see peer_waits.h.
#include "model/peer_waits.h"

#include <sys/syscall.h>

#include <algorithm>
#include <map>
#include <set>

#include "allocscope/ops.h"
#include "model/completion_coincidence.h"

namespace allocscope {
namespace {

// The key of a timed call: its thread and its start tick.
uint64_t call_key(uint32_t serial, uint64_t start_tick) { return start_tick * 0x9e3779b97f4a7c15ull ^ serial; }

}  // namespace

bool is_futex(int32_t syscall) { return syscall == SYS_futex; }

bool is_futex_wait(int32_t syscall, uint64_t op) {
  if (!is_futex(syscall)) return false;
  const uint64_t cmd = op & 0x7f;  // without FUTEX_PRIVATE_FLAG (128) and FUTEX_CLOCK_REALTIME (256)
  return cmd == 0 /* WAIT */ || cmd == 9 /* WAIT_BITSET */ || cmd == 6 /* LOCK_PI */ || cmd == 13 /* LOCK_PI2 */ ||
         cmd == 11 /* WAIT_REQUEUE_PI */;
}

void PeerWaitTally::expect(const std::vector<Profile::PeerLook>& looks, bool recorded) {
  recorded_ = recorded;
  for (const Profile::PeerLook& l : looks) pending_.emplace(call_key(l.wait.peer_serial, l.wait.peer_start_tick), l.wait);
}

void PeerWaitTally::add_call(uint32_t serial, const format::Event& e) {
  if (allocates(e.op) && e.bucket != kBucketUnknown) {
    const uint32_t g = size_group(format::event_size(e));
    if (g >= allocating_by_group_.size()) allocating_by_group_.resize(g + 1);
    ++allocating_by_group_[g];
  }
  auto [from, to] = pending_.equal_range(call_key(serial, e.start_tick));
  for (auto it = from; it != to; ++it) {
    const format::PeerWait& w = it->second;
    if (w.peer_serial != serial || w.peer_start_tick != e.start_tick) continue;
    if (w.tick > e.start_tick + e.duration_ticks) continue;  // looked after the call ended: not this call
    const bool sized = e.bucket != kBucketUnknown;
    joined_.push_back(Joined{w, serial, allocates(e.op), sized, sized ? format::event_size(e) : 0});
  }
}

PeerWaitMeasure PeerWaitTally::measure() const {
  PeerWaitMeasure m;
  m.recorded = recorded_;
  std::map<uint64_t, uint64_t> by_word;
  for (const Joined& j : joined_) {
    ++m.looks;
    const format::PeerWait& w = j.wait;
    if (w.syscall == format::kPeerRunning) ++m.running;
    else if (w.syscall == format::kPeerInUserSpace) ++m.preempted;
    else if (is_futex_wait(w.syscall, w.arg1)) ++m.futex_waits, ++by_word[w.arg0];
    else ++m.other_syscalls;
  }
  m.words = by_word.size();
  if (by_word.empty()) return m;
  const auto top = std::max_element(by_word.begin(), by_word.end(),
                                    [](const auto& a, const auto& b) { return a.second < b.second; });
  m.top_waits = top->second;
  std::set<uint32_t> threads;
  uint32_t min_group = ~0u, max_group = 0;
  for (const Joined& j : joined_) {
    if (!is_futex_wait(j.wait.syscall, j.wait.arg1) || j.wait.arg0 != top->first || !j.allocating) continue;
    threads.insert(j.serial);
    if (!j.sized) continue;
    ++m.top_allocating;
    m.top_min_size = m.top_allocating == 1 ? j.size : std::min(m.top_min_size, j.size);
    m.top_max_size = std::max(m.top_max_size, j.size);
    min_group = std::min(min_group, size_group(j.size));
    max_group = std::max(max_group, size_group(j.size));
  }
  m.top_threads = static_cast<uint32_t>(threads.size());
  m.top_sizes_apart = m.top_allocating >= 2 && sizes_apart(min_group, max_group);
  uint64_t calls = 0, below = 0;
  for (uint64_t n : allocating_by_group_) calls += n;
  uint32_t median = 0;
  for (; median < allocating_by_group_.size(); ++median) {
    below += allocating_by_group_[median];
    if (2 * below >= calls) break;
  }
  m.top_spans_median = m.top_allocating > 0 && calls > 0 && min_group <= median && median <= max_group;
  return m;
}

}  // namespace allocscope
