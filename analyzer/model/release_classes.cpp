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

namespace {

using Table = std::vector<std::vector<uint64_t>>;  // [thread][class]

// Classes in use, in order (kNoClass sorts last and never receives a share): class -> index.
std::map<uint32_t, size_t> classes_in_use(const std::vector<ClassCellMap>& per_thread, std::vector<uint32_t>& classes) {
  std::map<uint32_t, size_t> index;
  for (const auto& cells : per_thread)
    for (const auto& [key, cell] : cells)
      if (key.cls != kNoClass) index.emplace(key.cls, 0);
  for (auto& [cls, i] : index) {
    i = classes.size();
    classes.push_back(cls);
  }
  return index;
}

// Blocks made per thread and class, and each thread's releases of `rop`.
struct BlocksMade {
  Table family, any;  // the family's (feeds_release) blocks; every allocating operation's
  std::vector<uint64_t> thread_releases;
  uint64_t family_sum = 0, any_sum = 0;
};

BlocksMade blocks_made(const std::vector<ClassCellMap>& per_thread, std::map<uint32_t, size_t>& index,
                       size_t n_classes, unsigned rop) {
  const size_t n_threads = per_thread.size();
  BlocksMade b;
  b.family.assign(n_threads, std::vector<uint64_t>(n_classes, 0));
  b.any = b.family;
  b.thread_releases.assign(n_threads, 0);
  for (size_t ti = 0; ti < n_threads; ++ti) {
    for (const auto& [key, cell] : per_thread[ti]) {
      if (key.op == rop) {
        b.thread_releases[ti] += cell.counters.calls;
        continue;
      }
      if (key.cls == kNoClass || !allocates(key.op)) continue;
      const uint64_t made = cell.counters.calls - std::min(cell.counters.calls, cell.counters.failed);
      const size_t c = index[key.cls];
      b.any[ti][c] += made;
      b.any_sum += made;
      if (feeds_release(key.op, rop)) {
        b.family[ti][c] += made;
        b.family_sum += made;
      }
    }
  }
  return b;
}

// Each thread's releases (thread_releases) by class of the blocks they give back.
Table release_parts(const Table& made, const std::vector<uint64_t>& thread_releases, size_t n_classes) {
  const size_t n_threads = made.size();
  // 1. A thread gives back its own blocks first: min(releases, blocks it made), in proportion
  //    to the blocks it made per class (each share at most that class's blocks).
  Table parts(n_threads);
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
  return parts;
}

// One thread's releases of `rop` put in its cells: calls_now[c] of them in class classes_now[c].
// The thread's timed releases of this operation go with the calls, in proportion (their usable
// sizes say the allocator's class, not the request's): each class's releases cost the thread's
// mean release.
void place_releases(ClassCellMap& cells, unsigned rop, const std::vector<uint64_t>& calls_now,
                    const std::vector<uint64_t>& classes_now, uint64_t releases_now) {
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
  const size_t n_slots = calls_now.size();
  std::vector<uint64_t> timed_parts = largest_remainder(std::min(timed.timed, releases_now), calls_now);
  const std::vector<uint64_t> tick_parts = largest_remainder(timed.timed_ticks, timed_parts);
  std::vector<uint64_t> left = timed_parts;
  uint64_t bins_left = std::accumulate(left.begin(), left.end(), uint64_t{0});
  for (size_t c = 0; c < n_slots; ++c) {
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
    for (size_t c = 0; c < n_slots; ++c) {
      if (!share[c]) continue;
      cells[ClassCellKey{static_cast<uint32_t>(classes_now[c]), static_cast<uint8_t>(rop)}].latency[bin] += share[c];
      left[c] -= share[c];
    }
  }
}

}  // namespace

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
  std::vector<uint32_t> classes;
  std::map<uint32_t, size_t> index = classes_in_use(per_thread, classes);
  const size_t n_threads = per_thread.size(), n_classes = classes.size();
  for (unsigned rop = 0; rop < kOps; ++rop) {
    if (!releases(rop)) continue;
    BlocksMade b = blocks_made(per_thread, index, n_classes, rop);
    std::vector<uint64_t>& thread_releases = b.thread_releases;
    std::vector<uint64_t> zero(n_threads, 0);
    uint64_t total = 0;
    for (size_t ti = 0; ti < n_threads; ++ti) {
      zero[ti] = std::min(zero_releases(ti, rop), thread_releases[ti]);
      thread_releases[ti] -= zero[ti];
      total += thread_releases[ti];
    }
    totals.blocks_made = b.any_sum;
    totals.releases += total;
    if (total == 0 || (b.family_sum ? b.family_sum : b.any_sum) == 0) continue;
    const Table parts = release_parts(b.family_sum ? b.family : b.any, thread_releases, n_classes);
    for (size_t ti = 0; ti < n_threads; ++ti) {
      if (thread_releases[ti] == 0) continue;
      std::vector<uint64_t> calls_now(n_classes + 1, 0), classes_now(n_classes + 1, 0);
      for (size_t c = 0; c < n_classes; ++c) {
        calls_now[c] = parts[ti][c];
        classes_now[c] = classes[c];
      }
      calls_now[n_classes] = zero[ti];  // free(NULL): its class of 0 B
      classes_now[n_classes] = zero_class;
      place_releases(per_thread[ti], rop, calls_now, classes_now, thread_releases[ti] + zero[ti]);
    }
  }
  return totals;
}

}  // namespace allocscope
