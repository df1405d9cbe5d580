// lock_test.h — what the lock test found (format.h LockTest; run/lock_test.h runs it).
//
// allocscope-lockprobe holds one of its two threads where a signal found it and watches whether
// the other goes on. Counted here: the holds made inside malloc (not just back from a system call,
// where the held thread was a waiter and held nothing) after which the watched thread either went
// on (passed) or stopped — within two calls of the hold's start (stopped), or later. Under one
// lock that every allocation takes, a thread held while it holds that lock stops the other at its
// next allocation, whatever its size: the stopped share is the share of malloc's time spent
// holding the lock. A lock per size class stops it only at the same size; an allocator without a
// lock that allocations share stops it at neither.
//
//   one lock for all      sizes apart: stopped share's Wilson lower bound (z = 2) ≥ 0.2, and at
//                         least twice as many stopped at once as later (a lock that one call in
//                         k takes stops the other at once in about 2 holds of k)
//   lock per class        sizes apart: upper bound < 0.2; one size: lower bound ≥ 0.2
//   no shared lock        both: upper bound < 0.2
//   no lock across sizes  sizes apart: upper bound < 0.2, one size: too few holds
//   inconclusive          anything else, fewer than 20 telling holds at sizes apart, or holds
//                         made between calls (where nothing is held) that stopped it as often
#pragma once
#include <cstdint>
#include <optional>
#include <string>

#include "allocscope/lock_test_probe.h"
#include "profile/profile.h"

namespace allocscope {

enum class LockTestKind : uint8_t { NotRun, Failed, Inconclusive, OneLockForAll, LockPerClass, NoSharedLock, NoLockAcrossSizes };
const char* lock_test_kind_name(LockTestKind kind);  // "one_lock_for_all", …

// Holds of one kind: how many told something, and how many of them stopped the watched thread.
struct LockTestHolds {
  uint64_t told = 0;            // passed + stopped + stopped later
  uint64_t stopped = 0;         // stopped within two calls
  uint64_t stopped_later = 0;
  uint64_t preempted = 0;       // the watched thread waited for a CPU: told nothing
  double share() const { return told ? static_cast<double>(stopped) / static_cast<double>(told) : 0; }
  double low() const;           // Wilson's interval, z = 2
  double high() const;
};

struct LockTestFinding {
  LockTestKind kind = LockTestKind::NotRun;
  LockTestHolds apart, same;    // held inside malloc: sizes three powers of two apart, one size
  LockTestHolds between;        // held between its calls (both phases): what stops it with no lock held
  std::string detail;           // what ran, or why not
  double confidence = 0;        // how far the deciding share lies from its threshold (normal approximation)
};

constexpr uint64_t kLockTestMinTold = 20;
constexpr double kLockTestStops = ALLOCSCOPE_LOCK_TEST_STOPS;  // include/allocscope/lock_test_probe.h
constexpr uint64_t kLockTestAtOnce = ALLOCSCOPE_LOCK_TEST_AT_ONCE;

LockTestFinding read_lock_test(const std::optional<LockTestRecord>& record);

}  // namespace allocscope
