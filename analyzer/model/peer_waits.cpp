// peer_waits.cpp — see peer_waits.h.
#include "model/peer_waits.h"

#include <sys/syscall.h>

#include <algorithm>
#include <cmath>
#include <tuple>
#include <map>
#include <set>

#include "allocscope/buckets.h"
#include "allocscope/ops.h"
#include "model/completion_coincidence.h"
#include "util/disjoint_sets.h"

namespace allocscope {
namespace {

// The key of a timed call: its thread and its start tick.
uint64_t call_key(uint32_t serial, uint64_t start_tick) { return start_tick * 0x9e3779b97f4a7c15ull ^ serial; }

}  // namespace

// With a[t] = (1 - p[t])^n the chance that t is never drawn,
// the mean is the sum of 1 - a[t], the variance the sum of a[t] (1 - a[t]) plus, over pairs,
// the covariances (1 - p[s] - p[t])^n - a[s] a[t].
std::pair<double, double> distinct_draws(const std::vector<double>& p, uint64_t n) {
  const double draws = static_cast<double>(n);
  std::vector<double> a(p.size());
  double mean = 0, var = 0;
  for (size_t t = 0; t < p.size(); ++t) {
    a[t] = std::pow(1 - p[t], draws);
    mean += 1 - a[t];
    var += a[t] * (1 - a[t]);
  }
  for (size_t s = 0; s < p.size(); ++s)
    for (size_t t = s + 1; t < p.size(); ++t)
      var += 2 * (std::pow(std::max(0.0, 1 - p[s] - p[t]), draws) - a[s] * a[t]);
  return {mean, std::sqrt(std::max(0.0, var))};
}

namespace {

// Wilson's score interval at z = 2: centre and half-width.
std::pair<double, double> wilson(uint64_t k, uint64_t n) {
  constexpr double z = 2;
  const double nn = static_cast<double>(n), p = static_cast<double>(k) / nn;
  const double centre = p + z * z / (2 * nn), spread = z * std::sqrt(p * (1 - p) / nn + z * z / (4 * nn * nn));
  const double scale = 1 + z * z / nn;
  return {centre / scale, spread / scale};
}

}  // namespace

double wilson_low(uint64_t k, uint64_t n) {
  if (n == 0) return 0;
  const auto [centre, half] = wilson(k, n);
  return std::max(0.0, centre - half);
}

double wilson_high(uint64_t k, uint64_t n) {
  if (n == 0) return 1;
  const auto [centre, half] = wilson(k, n);
  return std::min(1.0, centre + half);
}

bool is_futex(int32_t syscall) { return syscall == SYS_futex; }

bool is_map_syscall(int32_t syscall) {
  return syscall == SYS_mmap || syscall == SYS_munmap || syscall == SYS_mremap || syscall == SYS_madvise ||
         syscall == SYS_brk || syscall == SYS_mprotect;
}

bool is_futex_wait(int32_t syscall, uint64_t op) {
  if (!is_futex(syscall)) return false;
  const uint64_t cmd = op & 0x7f;  // without FUTEX_PRIVATE_FLAG (128) and FUTEX_CLOCK_REALTIME (256)
  return cmd == 0 /* WAIT */ || cmd == 9 /* WAIT_BITSET */ || cmd == 6 /* LOCK_PI */ || cmd == 13 /* LOCK_PI2 */ ||
         cmd == 11 /* WAIT_REQUEUE_PI */;
}

void PeerWaitTally::expect(const std::vector<Profile::PeerLook>& looks, bool recorded, uint64_t slow_ticks,
                           uint64_t release_ticks) {
  recorded_ = recorded;
  slow_ticks_ = slow_ticks;
  release_ticks_ = release_ticks;
  for (const Profile::PeerLook& l : looks) {
    const format::PeerWait& w = l.wait;
    if (w.syscall == format::kPeerHold) {  // neither a look nor a probe: measured on their own
      holds_.push_back(l);
      continue;
    }
    if (!format::peer_call_untimed(w.peer_start_tick)) {
      pending_.emplace(call_key(w.peer_serial, w.peer_start_tick), w);
      continue;
    }
    // A look outside the windows: the gate gave the call's kind and size bucket.
    const unsigned op = format::peer_untimed_op(w.peer_start_tick), bucket = format::peer_untimed_bucket(w.peer_start_tick);
    const bool sized = bucket < kSizeBuckets;
    joined_.push_back(Joined{w, l.observer, w.peer_serial, allocates(op), sized, sized ? bucket_lo(bucket) : 0});
  }
}

void PeerWaitTally::add_call(uint32_t serial, const format::Event& e) {
  ++calls_by_thread_[serial];
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
    joined_.push_back(Joined{w, 0, serial, allocates(e.op), sized, sized ? format::event_size(e) : 0});
  }
}

PeerWaitMeasure PeerWaitTally::measure() const {
  PeerWaitMeasure m;
  m.recorded = recorded_;
  std::map<uint64_t, uint64_t> by_word;
  for (const Joined& j : joined_) {
    const format::PeerWait& w = j.wait;
    if (w.syscall == format::kPeerNotSeen || w.syscall == format::kPeerNoLook) continue;  // a probe only
    ++m.looks;
    if (format::peer_call_untimed(w.peer_start_tick)) ++m.outside_looks;
    if (w.syscall == format::kPeerRunning) ++m.running;
    else if (w.syscall == format::kPeerInUserSpace) ++m.preempted;
    else if (is_futex_wait(w.syscall, w.arg1)) ++m.futex_waits, m.futex_waits_allocating += j.allocating, ++by_word[w.arg0];
    else ++m.other_syscalls, m.map_syscalls += is_map_syscall(w.syscall);
  }
  m.words = by_word.size();
  const std::optional<uint32_t> median = median_group();
  std::set<uint32_t> apart_threads;
  std::map<uint32_t, std::pair<uint64_t, uint64_t>> low_by_observer;  // (apart probes below the median, held up)
  for (const Joined& j : joined_) {
    const uint64_t x = j.wait.peer_start_tick;
    if (!format::peer_probed(x) || !allocates(format::peer_probe_op(x))) continue;
    const bool slept = format::peer_probe_slept(x);
    const bool held = slept || bucket_lo(format::peer_probe_latency_bin(x)) >= slow_ticks_;
    ++m.probes;
    m.probes_slept += slept;
    m.probes_alone += j.wait.syscall == format::kPeerNoLook;
    const unsigned bucket = format::peer_probe_bucket(x);
    const format::ProbePeers pp = format::peer_probe_peers(x);
    if (pp.inside == 0 && !pp.unknown) {
      ++m.probes_unmet;
      m.probes_unmet_held += held;
      m.probes_unmet_slept += slept;
    }
    if (bucket >= kSizeBuckets || pp.inside == 0 || pp.unknown || pp.min_bucket > pp.max_bucket) continue;
    const uint32_t own = size_group(bucket_lo(bucket)), lo = size_group(bucket_lo(pp.min_bucket)),
                   hi = size_group(bucket_lo(pp.max_bucket));
    if (!((hi < own && sizes_apart(hi, own)) || (lo > own && sizes_apart(own, lo)))) continue;
    ++m.probes_apart;
    if (median && std::min(own, lo) < *median) {
      ++m.probes_apart_low;
      m.probes_apart_low_held += held;
      auto& [apart, apart_held] = low_by_observer[j.observer];
      ++apart;
      apart_held += held;
    }
    if (!slept) continue;
    ++m.probes_apart_slept;
    apart_threads.insert(j.observer);
    m.probes_apart_slept_across_median += median && ((own <= *median && *median <= lo) || (hi <= *median && *median <= own));
  }
  const double unmet_high = wilson_high(m.probes_unmet_held, m.probes_unmet);
  for (const auto& [observer, counts] : low_by_observer) {
    if (counts.first < kMinThreadProbes) continue;
    ++m.probes_apart_low_threads;
    m.probes_apart_low_held_threads +=
        static_cast<double>(counts.second) > unmet_high * static_cast<double>(counts.first);
  }
  m.probes_apart_slept_threads = static_cast<uint32_t>(apart_threads.size());
  measure_holds(median, m);
  if (by_word.empty()) return m;
  const auto top = std::max_element(by_word.begin(), by_word.end(),
                                    [](const auto& a, const auto& b) { return a.second < b.second; });
  m.top_waits = top->second;
  std::set<uint32_t> threads, allocating_threads;
  uint32_t min_group = ~0u, max_group = 0;
  for (const Joined& j : joined_) {
    if (!is_futex_wait(j.wait.syscall, j.wait.arg1) || j.wait.arg0 != top->first) continue;
    threads.insert(j.serial);
    m.top_waits_outside += format::peer_call_untimed(j.wait.peer_start_tick);
    if (j.allocating) allocating_threads.insert(j.serial);
    if (!j.allocating || !j.sized) continue;
    ++m.top_allocating;
    m.top_min_size = m.top_allocating == 1 ? j.size : std::min(m.top_min_size, j.size);
    m.top_max_size = std::max(m.top_max_size, j.size);
    min_group = std::min(min_group, size_group(j.size));
    max_group = std::max(max_group, size_group(j.size));
  }
  m.top_threads = static_cast<uint32_t>(threads.size());
  m.top_allocating_threads = static_cast<uint32_t>(allocating_threads.size());
  for (const Joined& j : joined_) {
    const uint64_t x = j.wait.peer_start_tick;
    if (!format::peer_probed(x) || !allocates(format::peer_probe_op(x))) continue;
    const bool held = format::peer_probe_slept(x) || bucket_lo(format::peer_probe_latency_bin(x)) >= slow_ticks_;
    if (is_futex_wait(j.wait.syscall, j.wait.arg1) && j.wait.arg0 == top->first) {
      ++m.probes_after_sleeper;
      m.probes_after_sleeper_held += held;
    } else {
      ++m.probes_other;
      m.probes_other_held += held;
    }
  }
  uint64_t calls = 0;
  for (const auto& [serial, n] : calls_by_thread_) calls += n;
  if (calls > 0) {
    std::vector<double> shares;
    for (const auto& [serial, n] : calls_by_thread_) shares.push_back(static_cast<double>(n) / static_cast<double>(calls));
    std::tie(m.top_threads_expected, m.top_threads_sd) = distinct_draws(shares, m.top_waits);
  }
  m.top_sizes_apart = m.top_allocating >= 2 && sizes_apart(min_group, max_group);
  m.top_spans_median = m.top_allocating > 0 && median && min_group <= *median && *median <= max_group;
  return m;
}

void PeerWaitTally::measure_holds(std::optional<uint32_t> median, PeerWaitMeasure& m) const {
  std::set<uint32_t> threads;
  DisjointSets sets;
  for (const Profile::PeerLook& l : holds_) {
    const uint64_t x = l.wait.peer_start_tick;
    const unsigned own = format::peer_probe_bucket(x);
    const format::HoldOutcome h = format::hold_outcome_of(l.wait.arg1);
    if (h.preempted) continue;
    if (!allocates(format::peer_probe_op(x))) {
      ++m.release_holds;
      m.holds_passed += !h.released;
      continue;
    }
    if (own >= kSizeBuckets) continue;
    ++m.holds;
    m.holds_passed += !h.released;
    if (!h.released || h.after_ticks > release_ticks_) continue;
    ++m.holds_released;
    if (!allocates(h.op) || h.bucket >= kSizeBuckets || !median) continue;
    const uint32_t a = size_group(bucket_lo(own)), b = size_group(bucket_lo(h.bucket));
    if (!sizes_apart(std::min(a, b), std::max(a, b)) || std::min(a, b) >= *median) continue;
    ++m.holds_apart_low_released;
    threads.insert(l.observer);
    m.holds_apart_low_joined = std::max(m.holds_apart_low_joined, sets.unite(l.observer, l.wait.peer_serial));
  }
  m.holds_apart_low_released_threads = static_cast<uint32_t>(threads.size());
}

std::optional<uint32_t> PeerWaitTally::median_group() const {
  uint64_t allocations = 0, below = 0;
  for (uint64_t n : allocating_by_group_) allocations += n;
  if (allocations == 0) return std::nullopt;
  uint32_t median = 0;
  for (; median < allocating_by_group_.size(); ++median) {
    below += allocating_by_group_[median];
    if (2 * below >= allocations) break;
  }
  return median;
}

}  // namespace allocscope
