#include "model/release_classes.h"

#include <algorithm>
#include <map>
#include <numeric>

#include "allocscope/ops.h"
#include "util/largest_remainder.h"

namespace allocscope {

bool feeds_release(unsigned alloc_op, unsigned release_op) {
  if (!allocates(alloc_op)) return false;
  switch (static_cast<Op>(release_op)) {
    case Op::Delete: return alloc_op == static_cast<unsigned>(Op::New);
    case Op::DeleteArray: return alloc_op == static_cast<unsigned>(Op::NewArray);
    case Op::Free:
      return alloc_op != static_cast<unsigned>(Op::New) &&
             alloc_op != static_cast<unsigned>(Op::NewArray);
    default: return false;
  }
}

ReleaseTotals attribute_releases(std::vector<ClassCellMap>& per_thread,
                                 const std::vector<const CellMap*>& cells_in, const ClassTable& table) {
  ReleaseTotals totals;
  const uint32_t zero_class = static_cast<uint32_t>(table.class_of(0));
  // Releases of size 0 (bucket 0) per thread and operation: they stay in the class of 0 B.
  auto zero_releases = [&](size_t ti, unsigned rop) -> uint64_t {
    if (ti >= cells_in.size() || !cells_in[ti]) return 0;
    const auto it = cells_in[ti]->find(CellKey{static_cast<uint8_t>(rop), 0});
    return it == cells_in[ti]->end() ? 0 : it->second.counters.calls;
  };
  // Classes in use, in order (kNoClass sorts last and never receives a share).
  std::map<uint32_t, size_t> index;
  for (const auto& cells : per_thread)
    for (const auto& [key, cell] : cells)
      if (key.cls != kNoClass) index.emplace(key.cls, 0);
  std::vector<uint32_t> classes;
  for (auto& [cls, i] : index) {
    i = classes.size();
    classes.push_back(cls);
  }
  const size_t n_threads = per_thread.size(), n_classes = classes.size();
  for (unsigned rop = 0; rop < kOps; ++rop) {
    if (!releases(rop)) continue;
    // Blocks made per thread and class: the family's, else (no such block in the process) every
    // allocating operation's.
    std::vector<std::vector<uint64_t>> family(n_threads, std::vector<uint64_t>(n_classes, 0));
    std::vector<std::vector<uint64_t>> any = family;
    std::vector<uint64_t> thread_releases(n_threads, 0);
    uint64_t family_sum = 0, any_sum = 0;
    for (size_t ti = 0; ti < n_threads; ++ti) {
      for (const auto& [key, cell] : per_thread[ti]) {
        if (key.op == rop) {
          thread_releases[ti] += cell.counters.calls;
          continue;
        }
        if (key.cls == kNoClass || !allocates(key.op)) continue;
        const uint64_t made = cell.counters.calls - std::min(cell.counters.calls, cell.counters.failed);
        const size_t c = index[key.cls];
        any[ti][c] += made;
        any_sum += made;
        if (feeds_release(key.op, rop)) {
          family[ti][c] += made;
          family_sum += made;
        }
      }
    }
    std::vector<uint64_t> zero(n_threads, 0);
    uint64_t total = 0;
    for (size_t ti = 0; ti < n_threads; ++ti) {
      zero[ti] = std::min(zero_releases(ti, rop), thread_releases[ti]);
      thread_releases[ti] -= zero[ti];
      total += thread_releases[ti];
    }
    totals.blocks_made = any_sum;
    totals.releases += total;
    if (total == 0 || (family_sum ? family_sum : any_sum) == 0) continue;
    const auto& made = family_sum ? family : any;
    // 1. A thread gives back its own blocks first: min(releases, blocks it made), in proportion
    //    to the blocks it made per class (each share at most that class's blocks).
    std::vector<std::vector<uint64_t>> parts(n_threads);
    std::vector<uint64_t> kept(n_classes, 0), all_made(n_classes, 0);
    std::vector<uint64_t> excess(n_threads, 0);
    uint64_t excess_total = 0;
    for (size_t ti = 0; ti < n_threads; ++ti) {
      const uint64_t own_made = std::accumulate(made[ti].begin(), made[ti].end(), uint64_t{0});
      const uint64_t own = std::min(thread_releases[ti], own_made);
      parts[ti] = largest_remainder(own, made[ti]);
      for (size_t c = 0; c < n_classes; ++c) {
        kept[c] += made[ti][c] - parts[ti][c];
        all_made[c] += made[ti][c];
      }
      excess[ti] = thread_releases[ti] - own;
      excess_total += excess[ti];
    }
    // 2. Releases beyond the blocks a thread made are other threads' blocks: spread over the
    //    blocks the makers kept (beyond those, blocks made before recording: in proportion to all
    //    blocks made).  Class quotas first, then each thread's share of what is left, the last
    //    taking the exact remainder, so that class and thread totals are both exact.
    if (excess_total) {
      const uint64_t kept_sum = std::accumulate(kept.begin(), kept.end(), uint64_t{0});
      std::vector<uint64_t> left = largest_remainder(std::min(excess_total, kept_sum), kept);
      if (excess_total > kept_sum) {
        const std::vector<uint64_t> more = largest_remainder(excess_total - kept_sum, all_made);
        for (size_t c = 0; c < n_classes; ++c) left[c] += more[c];
      }
      uint64_t remaining = excess_total;
      for (size_t ti = 0; ti < n_threads; ++ti) {
        if (!excess[ti]) continue;
        const std::vector<uint64_t> share =
            excess[ti] == remaining ? left : largest_remainder(excess[ti], left);
        remaining -= excess[ti];
        for (size_t c = 0; c < n_classes; ++c) {
          parts[ti][c] += share[c];
          left[c] -= share[c];
        }
      }
    }
    for (size_t ti = 0; ti < n_threads; ++ti) {
      if (thread_releases[ti] == 0) continue;
      ClassCellMap& cells = per_thread[ti];
      // The thread's timed releases of this operation go with the calls, in proportion (their
      // usable sizes say the allocator's class, not the request's): each class's releases cost
      // the thread's mean release.
      Counters timed;
      std::map<uint16_t, uint64_t> latency;
      for (auto& [key, cell] : cells) {
        if (key.op != rop) continue;
        cell.counters.calls = 0;
        timed.timed += cell.counters.timed;
        timed.timed_ticks += cell.counters.timed_ticks;
        timed.max_ticks = std::max(timed.max_ticks, cell.counters.max_ticks);
        for (const auto& [bin, n] : cell.latency) latency[bin] += n;
        cell.counters.timed = cell.counters.timed_ticks = cell.counters.max_ticks = 0;
        cell.latency.clear();
      }
      std::vector<uint64_t> calls_now(n_classes + 1, 0), classes_now(n_classes + 1, 0);
      for (size_t c = 0; c < n_classes; ++c) {
        calls_now[c] = parts[ti][c];
        classes_now[c] = classes[c];
      }
      calls_now[n_classes] = zero[ti];  // free(NULL): its class of 0 B
      classes_now[n_classes] = zero_class;
      std::vector<uint64_t> timed_parts = largest_remainder(std::min(timed.timed, thread_releases[ti] + zero[ti]), calls_now);
      const std::vector<uint64_t> tick_parts = largest_remainder(timed.timed_ticks, timed_parts);
      std::vector<uint64_t> left = timed_parts;
      uint64_t bins_left = std::accumulate(left.begin(), left.end(), uint64_t{0});
      for (size_t c = 0; c <= n_classes; ++c) {
        if (!calls_now[c] && !timed_parts[c]) continue;
        Cell& cell = cells[ClassCellKey{static_cast<uint32_t>(classes_now[c]), static_cast<uint8_t>(rop)}];
        cell.counters.calls += calls_now[c];
        cell.counters.timed += timed_parts[c];
        cell.counters.timed_ticks += tick_parts[c];
        if (timed_parts[c]) cell.counters.max_ticks = std::max(cell.counters.max_ticks, timed.max_ticks);
      }
      for (const auto& [bin, n] : latency) {
        const uint64_t take = std::min(n, bins_left);
        const std::vector<uint64_t> share = largest_remainder(take, left);
        bins_left -= take;
        for (size_t c = 0; c <= n_classes; ++c) {
          if (!share[c]) continue;
          cells[ClassCellKey{static_cast<uint32_t>(classes_now[c]), static_cast<uint8_t>(rop)}].latency[bin] += share[c];
          left[c] -= share[c];
        }
      }
    }
  }
  return totals;
}

}  // namespace allocscope
