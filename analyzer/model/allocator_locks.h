// allocator_locks.h — the allocator's own waits on pthread locks (format.h kModeAllocatorLocks).
//
// A library allocator that takes its locks through the C library (a refill lock behind thread
// caches, jemalloc's arena and bin mutexes, a test allocator's global mutex) calls
// pthread_mutex_lock and its kin from inside its calls; the shim tries each such lock first and
// times the call only when the try fails (shim/lock_waits.h).  One whose lock is a futex of its
// own sleeps on it through the C library's syscall() (tcmalloc's SpinLock, scudo's mutex): the
// shim times those futex waits, and keeps those that slept (kModeAllocatorFutexWaits).  Every
// contended call is counted, not a sample: a lock that few calls take and that is contended only
// now and then — when its holder loses its CPU inside the critical section — shows here whatever
// the timing windows saw.  Locks the allocator takes without those functions (musl's and glibc's
// own, spin locks of its own atomics that never sleep through syscall()) never show: none
// recorded says nothing of them.
#pragma once
#include <cstdint>

namespace allocscope {

struct Profile;

struct AllocatorLockWaits {
  bool recorded = false;     // the shim recorded them (kModeAllocatorLocks)
  uint64_t waits = 0;        // contended lock calls inside allocator calls, every thread
  uint64_t futex_waits = 0;  // of them, futex waits made through syscall() that slept (kind Futex)
  uint64_t dropped = 0;      // of them, not in any row (a thread's table was full): no time
  double wait_ns = 0;        // their time, from the failed try to the real call's return
  double max_ns = 0;         // the longest
  uint32_t threads = 0;      // threads that waited
  uint32_t locks = 0;        // distinct locks waited on
  // The lock waited on longest: its waits, time and threads.
  uint64_t top_waits = 0;
  double top_wait_ns = 0;
  uint32_t top_threads = 0;
};

AllocatorLockWaits measure_allocator_locks(const Profile& profile);

}  // namespace allocscope
