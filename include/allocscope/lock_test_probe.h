// lock_test_probe.h — what allocscope-lockprobe (lockprobe/lockprobe.c, in C) and the analyzer
// share about the lock test: the names its output gives the indices of format.h's LockTest (in
// that order: run/lock_test.cpp reads the output by them, dump prints them), and the stopped share
// that means a lock (model/lock_test.h reads the counts by it; the probe ends a phase early only
// once its share lies clearly on one side of it). C and C++ alike; header-only.
#ifndef ALLOCSCOPE_LOCK_TEST_PROBE_H
#define ALLOCSCOPE_LOCK_TEST_PROBE_H

// A lock: at least this share of the holds inside malloc that told something stopped the other
// thread, and at least ALLOCSCOPE_LOCK_TEST_AT_ONCE times as many of them at once as later.
#define ALLOCSCOPE_LOCK_TEST_STOPS 0.2
#define ALLOCSCOPE_LOCK_TEST_AT_ONCE 2

// format.h kLockTestPhases, kLockTestWheres (LockTestWhere), kLockTestOutcomes (LockTestOutcome).
static const char* const allocscope_lock_test_phase_names[2] = {"apart", "same"};
static const char* const allocscope_lock_test_where_names[4] = {"outside", "malloc", "free", "malloc_syscall"};
static const char* const allocscope_lock_test_outcome_names[5] = {"passed", "stopped", "stopped_later",
                                                                  "preempted", "other"};

#endif
