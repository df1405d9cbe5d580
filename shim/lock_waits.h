// shim/lock_waits.h — the program's own pthread lock waits (ALLOCSCOPE_LOCKS=1, `record --locks`).
//
// The exported pthread_mutex_lock, … (lock_entry_points.cpp) are inline calls into the functions
// below.  With lock tracing off they forward at once.  With it on, a lock is *tried* first: an
// uncontended lock costs its trylock and nothing else (no clock read, no slot).  Only when the
// trylock finds the lock taken is the real, blocking call timed (two clock reads around it) and
// the wait added to the thread's row for (lock address, call site) (lock_table.h); the first wait
// of a row — and the 2nd, 4th, 8th… while none was captured — takes a call stack.  A condition
// wait blocks by design: every call is timed, under kind Cond.  Calls from inside the shim
// (t_ctx.depth > 0 outside an allocator call: libunwind's caches) are forwarded unrecorded.  Calls
// from inside an allocator call (the gate's kInCall: a library allocator's refill lock, jemalloc's
// arena mutexes) are the allocator's own lock waits: whether or not lock tracing is on, they are
// tried first the same way, and a wait is timed and kept in rows of their own (format.h
// kLockRowInAllocator), never with the program's locks: the allocator's waits stay in the
// allocator's time, and say where its threads waited for each other.  musl's malloc lock and
// glibc's arena locks never come through these symbols at all.
//
// The real functions are found with dlsym(RTLD_NEXT, …) — in glibc's libc.so.6 (2.34 and later;
// earlier in libpthread) or musl's libc.so — when the library loads, or on first use.
#pragma once
#include <pthread.h>
#include <threads.h>
#include <time.h>

#include <cerrno>
#include <cstdint>

#include "allocscope/format.h"
#include "cpu_samples.h"
#include "recorder.h"

namespace allocscope {

struct Slot;

struct RealLocks {
  int (*mutex_lock)(pthread_mutex_t*);
  int (*mutex_trylock)(pthread_mutex_t*);
  int (*mutex_timedlock)(pthread_mutex_t*, const struct timespec*);
  int (*rwlock_rdlock)(pthread_rwlock_t*);
  int (*rwlock_tryrdlock)(pthread_rwlock_t*);
  int (*rwlock_timedrdlock)(pthread_rwlock_t*, const struct timespec*);
  int (*rwlock_wrlock)(pthread_rwlock_t*);
  int (*rwlock_trywrlock)(pthread_rwlock_t*);
  int (*rwlock_timedwrlock)(pthread_rwlock_t*, const struct timespec*);
  int (*cond_wait)(pthread_cond_t*, pthread_mutex_t*);
  int (*cond_timedwait)(pthread_cond_t*, pthread_mutex_t*, const struct timespec*);
  int (*mutex_unlock)(pthread_mutex_t*);
  int (*rwlock_unlock)(pthread_rwlock_t*);
  int (*spin_lock)(pthread_spinlock_t*);
  int (*spin_trylock)(pthread_spinlock_t*);
  int (*spin_unlock)(pthread_spinlock_t*);
  // Null where the C library has none: the clock variants are glibc's (2.30 and later; C++'s
  // std::condition_variable::wait_for, std::timed_mutex::try_lock_for and
  // std::shared_timed_mutex's timed calls use them), musl has none of them.
  int (*mutex_clocklock)(pthread_mutex_t*, clockid_t, const struct timespec*);
  int (*rwlock_clockrdlock)(pthread_rwlock_t*, clockid_t, const struct timespec*);
  int (*rwlock_clockwrlock)(pthread_rwlock_t*, clockid_t, const struct timespec*);
  int (*cond_clockwait)(pthread_cond_t*, pthread_mutex_t*, clockid_t, const struct timespec*);
  // C11's threads (glibc 2.28 and later, musl): their mutexes and conditions call the C library's
  // pthread functions inside it, where no interposed symbol sees them.
  int (*mtx_lock)(mtx_t*);
  int (*mtx_timedlock)(mtx_t*, const struct timespec*);
  int (*mtx_trylock)(mtx_t*);
  int (*mtx_unlock)(mtx_t*);
  int (*cnd_wait)(cnd_t*, mtx_t*);
  int (*cnd_timedwait)(cnd_t*, mtx_t*, const struct timespec*);
  long (*syscall)(long, ...);  // the C library's syscall(): an allocator's futex waits (allocator_futex_wait)
};

extern RealLocks g_real_locks;
extern bool g_real_locks_resolved;
extern bool g_lock_waits;  // ALLOCSCOPE_LOCKS=1: set when the process starts recording

// True once g_real_locks is resolved (resolving it now if needed).  False only on the thread that
// is resolving them, re-entered from dlsym: the caller then fails the call with EAGAIN.
bool resolve_real_locks();
inline bool real_locks_ready() {
  return __builtin_expect(__atomic_load_n(&g_real_locks_resolved, __ATOMIC_ACQUIRE), 1) ||
         resolve_real_locks();
}

// Whether this call is to be traced: lock tracing on, and the thread is not inside the shim or
// the allocator.
inline bool trace_this_lock() {
  return __builtin_expect(__atomic_load_n(&g_lock_waits, __ATOMIC_RELAXED), 0) && t_ctx.depth == 0;
}

// A spin lock's address (a volatile int) as a row's lock.
inline const void* spin_address(pthread_spinlock_t* l) {
  return reinterpret_cast<const void*>(reinterpret_cast<uintptr_t>(l));
}

// Whether the thread is inside a real allocator call (the gate's kInCall): a lock taken now is the
// allocator's own.
inline bool inside_allocator_call() { return (t_ctx.depth & kInCall) != 0; }

// The allocator's own contended lock call, timed around the real blocking call (lock_entry_points.cpp):
// a wait that ends with the lock taken (`held`) is kept until the allocator's next unlock
// (t_allocator_wait_pending), so that recording it lengthens none of its critical sections; any
// other is added to the thread's rows at once.
void keep_allocator_wait(format::LockKind kind, const void* lock, void* site, uint64_t duration, bool held);
extern __thread bool t_allocator_wait_pending __attribute__((tls_model("initial-exec")));
// The C library's syscall() with six arguments: the real one once found, else the raw system call
// with the C library's convention (-1 and errno on failure).
long real_syscall(long number, long a, long b, long c, long d, long e, long f);
// A futex operation that may sleep until another thread wakes it (FUTEX_WAIT, _WAIT_BITSET,
// _LOCK_PI, _LOCK_PI2, _WAIT_REQUEUE_PI; private or not).
bool futex_op_waits(long op);
// Inside an allocator call, the allocator's own futex wait made through syscall(): the call, timed,
// and where it slept (returned 0, or was interrupted or timed out; not EAGAIN, whose word had
// already changed), a wait added at once to the thread's rows, kind Futex, lock `uaddr`.
long allocator_futex_wait(long uaddr, long op, long c, long d, long e, long f, void* site);
// After the real unlock: adds the kept wait to the thread's rows.  Also called when the thread
// exits, and before a second wait is kept.
void add_allocator_wait();

// The contended paths: time `wait` and keep it for the thread's next unlock (lock_waits.cpp).  A
// wait is added to the rows only once the thread has let go of a lock: whatever recording costs
// (the row's lookup, a call stack, a flush that writes the profile) then lengthens no critical
// section.  Recorded inside the lock, PHP's zend_strtod mutex (about 260,000 contended waits a
// run of 8 workers) made the threaded host run 1.5 % slower on glibc and 10 % on musl, whose
// threads spin and then sleep on it (docs/overhead.md).  A wait on a second lock taken while the
// first one's is still kept adds the first at once.
int contended_mutex_lock(pthread_mutex_t* m, const struct timespec* timeout, void* site);
int contended_rwlock(pthread_rwlock_t* l, bool write, const struct timespec* timeout, void* site);
int traced_cond_wait(pthread_cond_t* c, pthread_mutex_t* m, const struct timespec* timeout, void* site);
// The clock variants (a real function that exists), C11's calls and the spin lock, the same way.
int contended_mutex_clocklock(pthread_mutex_t* m, clockid_t clock, const struct timespec* timeout, void* site);
int contended_rwlock_clock(pthread_rwlock_t* l, bool write, clockid_t clock, const struct timespec* timeout, void* site);
int traced_cond_clockwait(pthread_cond_t* c, pthread_mutex_t* m, clockid_t clock, const struct timespec* timeout, void* site);
int contended_mtx_lock(mtx_t* m, const struct timespec* timeout, void* site);
int traced_cnd_wait(cnd_t* c, mtx_t* m, const struct timespec* timeout, void* site);
int contended_spin_lock(pthread_spinlock_t* l, void* site);

// t_wait_pending: a contended wait is kept in the slot (LockTable::pending), for
// add_pending_wait after the next unlock; `at_unlock`: the stack, if the row wants one, is taken
// there (the unlock's callers are the lock's where a function takes and releases a lock), else
// none.  Also called when the thread exits.
extern __thread bool t_wait_pending __attribute__((tls_model("initial-exec")));
// Where the thread is for a CPU sample (cpu_samples.h): inside a traced lock call that waits, an
// rwlock unlock, or a condition wait.  Set around the real call only: the wrappers' own work is the
// shim's.  A lock taken at its first try is not marked: the mark's second store would lie inside
// the critical section, and on the threaded PHP host, whose zend_strtod mutex is taken 10.8
// million times a run, marking every lock and unlock cost 1.04-1.08x (docs/overhead.md).  The
// trylock's few nanoseconds count as elsewhere.
enum : uint8_t { kNotInLock = 0, kInLockCall = 1, kInCondWait = 2 };
extern __thread uint8_t t_in_lock __attribute__((tls_model("initial-exec")));
// Runs the real call `f` marked as a lock call (or `mark`) for the CPU samples, when they are taken.
template <class F>
__attribute__((always_inline)) inline int in_lock_call(F f, uint8_t mark = kInLockCall) {
  if (!__atomic_load_n(&g_cpu_samples, __ATOMIC_RELAXED)) return f();
  t_in_lock = mark;
  const int r = f();
  t_in_lock = kNotInLock;
  return r;
}
void add_pending_wait(bool at_unlock);

// pthread_mutex_unlock: with a waiter it is a system call (musl wakes on every contended unlock),
// which is the lock's cost too.  Timed on a sample: when the thread's countdown runs out, drawn
// again each time from 128..383 (about 1 in 256, never in step with a program's own period).
extern __thread uint32_t t_unlock_countdown __attribute__((tls_model("initial-exec")));
extern __thread uint64_t t_unlocks __attribute__((tls_model("initial-exec")));
// For the CPU samples, a mutex unlock is not marked like the waits: a store before the real unlock
// lies inside the critical section.  t_unlocks already counts the unlock before the real call;
// t_unlocks_done catches up after it, outside the critical section.  A sample that finds them
// apart is inside an unlock (or the few instructions of the wrapper around it).
extern __thread uint64_t t_unlocks_done __attribute__((tls_model("initial-exec")));
inline int counted_unlock(pthread_mutex_t* m) {
  const int r = g_real_locks.mutex_unlock(m);
  t_unlocks_done = t_unlocks;
  return r;
}
int sampled_mutex_unlock(pthread_mutex_t* m, void* site);
int unlock_then_add_wait(pthread_mutex_t* m);  // an untimed unlock with a wait kept

// For the flushers (slot_registry.cpp): whether the slot has waits not yet written, and the
// LockWaits chunk of its rows (after its ThreadStats snapshot: same seq).
bool lock_waits_pending(const Slot* s);
bool write_lock_waits(Slot* s);

// The settings that follow from lock tracing (process_state.cpp).
inline bool lock_stacks_wanted() { return __atomic_load_n(&g_lock_waits, __ATOMIC_RELAXED); }

}  // namespace allocscope
