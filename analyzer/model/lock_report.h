// lock_report.h — locks outside the allocator: the program's own contended pthread lock waits.
//
// A profile recorded with `record --locks` (format.h kModeLocks) holds, per thread, the waits on
// the program's pthread mutexes, rwlocks, spin locks and condition variables (and C11's mutexes
// and conditions) that did not get the lock at once, per (lock address, call site) — cumulative
// rows, the last of each thread counting (profile.h lock_waits).  analyze_locks() adds them up per
// lock and per call site, symbolizes the call sites (the return address of the call into
// pthread_*; a sampled stack gives its callers), and relates the wait to the threads' time.  Definitions (docs/analysis.md):
//   lock wait        time from a failed trylock to the return of the real lock call, summed over
//                    mutexes, rwlocks and spin locks; the allocator's own locks are not in it
//                    (they are inside allocator calls, and musl's and glibc's malloc locks never
//                    pass through these symbols)
//   share            lock wait / thread time (the cost model's: the threads' lifetimes)
//   condition wait   time in pthread_cond_wait / _timedwait / _clockwait, cnd_wait /
//                    cnd_timedwait: waiting for work or a signal by design, so reported apart and
//                    never counted as contention
//   unlock           estimated time in pthread_mutex_unlock (where a contended lock pays its
//                    wake-up system call): the sampled calls' time x all unlocks / timed unlocks,
//                    per thread
//                    (it includes time preempted right after waking a waiter); a thread's
//                    estimate is capped at its lifetime less its waits
//   lock time        lock wait + unlock: what the program's own locks cost its threads
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace allocscope {

struct Profile;
class JsonWriter;

struct LockSite {
  std::string site;                // innermost function at the call site (inlined one if known)
  std::string location;            // "file.c:42", or ""
  std::string module;              // file name of the object
  std::vector<std::string> chain;  // the site, then up to two callers from a sampled stack
  uint64_t waits = 0;
  double wait_ns = 0, max_ns = 0;
};

struct LockRow {
  uint64_t address = 0;
  std::string kind;                // "mutex", "rwlock", "condition"
  uint64_t waits = 0, timeouts = 0;
  double wait_ns = 0, max_ns = 0;
  double unlock_ns = 0;            // estimated time unlocking it
  uint64_t unlocks_timed = 0;      // its timed unlocks (unlock_ns scales them up)
  double share = 0;                // wait, of thread time
  uint32_t threads = 0;            // threads that waited on it
  std::vector<LockSite> sites;     // costliest first
  std::string name() const;        // its costliest call site, "site (file:line)"
};

struct LockReport {
  bool recorded = false;           // the profile was recorded with --locks
  double thread_time_ns = 0;       // the denominator of the shares
  uint64_t waits = 0;              // mutexes and rwlocks
  double wait_ns = 0;
  double share = 0;
  double unlock_ns = 0;            // estimated, all mutexes
  uint64_t unlocks = 0, unlocks_timed = 0;
  double time_ns = 0;              // lock time: wait + unlock
  double time_share = 0;
  uint32_t capped_threads = 0;     // threads whose unlock estimate was capped
  uint64_t cond_waits = 0;
  double cond_wait_ns = 0;
  double cond_share = 0;
  uint64_t dropped_waits = 0;      // waits beyond a thread's table (in the totals, in no row)
  double dropped_ns = 0;
  std::map<uint32_t, double> wait_ns_by_thread;       // mutexes and rwlocks, per thread serial
  std::map<uint32_t, double> time_ns_by_thread;       // lock time (wait + unlock), per thread
  std::map<uint32_t, double> cond_wait_ns_by_thread;
  std::vector<LockRow> locks;      // mutexes and rwlocks, most lock time (wait + unlock) first
  std::vector<LockRow> conditions; // condition variables, most wait first
};

struct LockOptions {
  bool source_lines = true;        // run addr2line for file:line
  size_t top = 10;                 // locks kept in each list
};

// Reads the profile's lock waits; thread_time_ns is the cost model's thread time, lifetimes_ns
// each thread's lifetime by serial (the cap of its unlock estimate; none: not capped).
LockReport analyze_locks(const Profile& profile, double thread_time_ns,
                         const std::map<uint32_t, double>& lifetimes_ns = {}, const LockOptions& options = {});

}  // namespace allocscope
