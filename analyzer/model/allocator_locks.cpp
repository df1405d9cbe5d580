// allocator_locks.cpp — see allocator_locks.h.
#include "model/allocator_locks.h"

#include <algorithm>
#include <map>
#include <set>

#include "profile/profile.h"

namespace allocscope {

AllocatorLockWaits measure_allocator_locks(const Profile& profile) {
  AllocatorLockWaits m;
  m.recorded = (profile.mode_flags() & format::kModeAllocatorLocks) != 0;
  struct Lock {
    uint64_t waits = 0, ticks = 0;
    std::set<uint32_t> threads;
  };
  std::map<uint64_t, Lock> locks;
  uint64_t ticks = 0, max_ticks = 0;
  for (const auto& [serial, rec] : profile.allocator_lock_waits) {
    bool waited = rec.header.allocator_dropped > 0;
    m.dropped += rec.header.allocator_dropped;
    m.waits += rec.header.allocator_dropped;
    for (const format::LockWaitRow& row : rec.rows) {
      if (row.waits == 0) continue;
      waited = true;
      m.waits += row.waits;
      if (row.kind == static_cast<uint8_t>(format::LockKind::Futex)) m.futex_waits += row.waits;
      ticks += row.wait_ticks;
      max_ticks = std::max(max_ticks, row.max_ticks);
      Lock& l = locks[row.lock];
      l.waits += row.waits;
      l.ticks += row.wait_ticks;
      l.threads.insert(serial);
    }
    m.threads += waited;
  }
  m.wait_ns = static_cast<double>(profile.ticks_to_ns(ticks));
  m.max_ns = static_cast<double>(profile.ticks_to_ns(max_ticks));
  m.locks = static_cast<uint32_t>(locks.size());
  const Lock* top = nullptr;
  for (const auto& [address, l] : locks)
    if (!top || l.ticks > top->ticks) top = &l;
  if (top) {
    m.top_waits = top->waits;
    m.top_wait_ns = static_cast<double>(profile.ticks_to_ns(top->ticks));
    m.top_threads = static_cast<uint32_t>(top->threads.size());
  }
  return m;
}

}  // namespace allocscope
