// shim/lock_table.h — one thread's contended lock waits, per (lock, call site), in its slot.
//
// Rows are appended by the owner only (lock_waits.cpp) and published by `n_rows` (release);
// flushers read the first n_rows rows with relaxed loads.  The table lives in the slot's body,
// which is zero for a fresh slot, wiped for a fork child and zeroed when a slot is reclaimed: an
// all-zero table is an empty one.
#pragma once
#include <atomic>
#include <cstdint>

#include "allocscope/format.h"

namespace allocscope {

constexpr unsigned kLockRows = 1024;       // (lock, call site) rows per thread
constexpr unsigned kLockIndexSize = 2048;  // open addressing over the rows, a power of two

struct LockTable {
  std::atomic<uint32_t> n_rows;
  uint32_t reserved;
  uint64_t waits;             // all recorded waits of the thread (rows and dropped)
  uint64_t waits_at_flush;    // `waits` as of the last LockWaits chunk
  uint64_t dropped_waits, dropped_ticks;
  uint64_t allocator_dropped;       // the allocator's own waits not in any row (the table was full)
  uint64_t unlocks, unlocks_timed;  // pthread_mutex_unlock: all (as of the last timed one), timed
  // The last contended wait, not yet in the rows: the thread got the lock and holds it, and the
  // wait is added after its next unlock (lock_waits.cpp), outside the lock.  Here, not in TLS, so
  // that a fork child (whose slot is wiped) never adds its parent's wait.
  struct PendingWait {
    uint64_t lock, site, duration, t1;
    uint8_t kind, timed_out, set;
  } pending;
  // The same for a wait of the allocator's own (lock_waits.h keep_allocator_wait): added after the
  // allocator's next unlock, outside its critical section.
  PendingWait allocator_pending;
  uint16_t index[kLockIndexSize];  // 0 = empty, else row number + 1
  format::LockWaitRow rows[kLockRows];
};

}  // namespace allocscope
