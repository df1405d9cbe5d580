// shim/lock_entry_points.cpp — the pthread lock functions the preload library exports (lock
// tracing: lock_waits.h).  Each is: forward unless traced; try first; time only a real wait.
// __builtin_return_address(0) here is the program's call site.
#include <pthread.h>
#include <sys/syscall.h>
#include <threads.h>
#include <time.h>

#include <cerrno>
#include <cstdarg>

#include "lock_waits.h"

using namespace allocscope;

// Resolves the real functions while the process is still single-threaded (a library constructor).
__attribute__((constructor)) static void allocscope_locks_at_load() {
  if (real_locks_ready()) learn_trylock_code();
}

#define EXPORT extern "C" __attribute__((visibility("default")))

// The allocator's own contended lock call, out of line: the lambdas capture their arguments by
// value, and none of the entry point's locals has its address taken, so that its other paths stay
// tail calls.  `forward` is the real blocking call, timed around it.
template <class Forward>
__attribute__((noinline)) static int allocator_wait_call(format::LockKind kind, const void* lock, void* site,
                                                         Forward forward) {
  const uint64_t t0 = ticks();
  const int r = forward();
  keep_allocator_wait(kind, lock, site, ticks() - t0, r == 0);
  return r;
}

// The shape of every lock function here: forward unless traced or the allocator's own; try first;
// time only a real wait.  The try is not marked for the CPU samples (lock_waits.h): they know the
// trylock by its code.  `kind` and `lock`: the allocator's own wait's row (the real blocking call
// is `forward`); `busy`: what the try returns when the lock is taken (EBUSY; C11's thrd_busy);
// `unready`: what the call returns while the real functions cannot be found (a call from inside dlsym).
template <class Forward, class Try, class Wait>
__attribute__((always_inline)) static inline int try_then_wait(Forward forward, Try try_lock, Wait wait,
                                                               format::LockKind kind, const void* lock,
                                                               void* site, int busy = EBUSY,
                                                               int unready = EAGAIN) {
  if (__builtin_expect(!real_locks_ready(), 0)) return unready;
  if (__builtin_expect(inside_allocator_call(), 0)) {
    const int r = try_lock();
    if (__builtin_expect(r != busy, 1)) return r;
    return allocator_wait_call(kind, lock, site, forward);
  }
  if (!trace_this_lock()) return forward();
  const int r = try_lock();
  if (__builtin_expect(r != busy, 1)) return r;
  return wait();
}

// The unlocks: after the real call, a wait of the allocator's own kept until now is added
// (lock_waits.h keep_allocator_wait).  The flag is the thread's own: read before the call, it
// leaves the common case a tail call.
template <class Unlock>
__attribute__((always_inline)) static inline int unlock_allocator_lock(Unlock unlock) {
  if (__builtin_expect(!t_allocator_wait_pending, 1)) return unlock();
  const int r = unlock();
  add_allocator_wait();
  return r;
}

EXPORT int pthread_mutex_lock(pthread_mutex_t* m) {
  void* site = __builtin_return_address(0);
  return try_then_wait([=] { return g_real_locks.mutex_lock(m); },
                       [=] { return g_real_locks.mutex_trylock(m); },
                       [=] { return contended_mutex_lock(m, nullptr, site); },
                       format::LockKind::Mutex, m, site);
}

EXPORT int pthread_mutex_timedlock(pthread_mutex_t* m, const struct timespec* t) {
  void* site = __builtin_return_address(0);
  return try_then_wait([=] { return g_real_locks.mutex_timedlock(m, t); },
                       [=] { return g_real_locks.mutex_trylock(m); },
                       [=] { return contended_mutex_lock(m, t, site); },
                       format::LockKind::Mutex, m, site);
}

EXPORT int pthread_mutex_unlock(pthread_mutex_t* m) {
  if (__builtin_expect(!real_locks_ready(), 0)) return EINVAL;
  if (!trace_this_lock()) return unlock_allocator_lock([=] { return g_real_locks.mutex_unlock(m); });
  t_unlocks++;
  if (__builtin_expect(t_unlock_countdown-- != 0, 1)) {
    if (__builtin_expect(!t_wait_pending, 1)) return counted_unlock(m);
    return unlock_then_add_wait(m);
  }
  return sampled_mutex_unlock(m, __builtin_return_address(0));
}

EXPORT int pthread_rwlock_unlock(pthread_rwlock_t* l) {
  if (__builtin_expect(!real_locks_ready(), 0)) return EINVAL;
  if (!trace_this_lock()) return unlock_allocator_lock([=] { return g_real_locks.rwlock_unlock(l); });
  const int r = in_lock_call([=] { return g_real_locks.rwlock_unlock(l); });
  if (__builtin_expect(t_wait_pending, 0)) add_pending_wait(true);
  return r;
}

EXPORT int pthread_rwlock_rdlock(pthread_rwlock_t* l) {
  void* site = __builtin_return_address(0);
  return try_then_wait([=] { return g_real_locks.rwlock_rdlock(l); },
                       [=] { return g_real_locks.rwlock_tryrdlock(l); },
                       [=] { return contended_rwlock(l, false, nullptr, site); },
                       format::LockKind::RwRead, l, site);
}

EXPORT int pthread_rwlock_timedrdlock(pthread_rwlock_t* l, const struct timespec* t) {
  void* site = __builtin_return_address(0);
  return try_then_wait([=] { return g_real_locks.rwlock_timedrdlock(l, t); },
                       [=] { return g_real_locks.rwlock_tryrdlock(l); },
                       [=] { return contended_rwlock(l, false, t, site); },
                       format::LockKind::RwRead, l, site);
}

EXPORT int pthread_rwlock_wrlock(pthread_rwlock_t* l) {
  void* site = __builtin_return_address(0);
  return try_then_wait([=] { return g_real_locks.rwlock_wrlock(l); },
                       [=] { return g_real_locks.rwlock_trywrlock(l); },
                       [=] { return contended_rwlock(l, true, nullptr, site); },
                       format::LockKind::RwWrite, l, site);
}

EXPORT int pthread_rwlock_timedwrlock(pthread_rwlock_t* l, const struct timespec* t) {
  void* site = __builtin_return_address(0);
  return try_then_wait([=] { return g_real_locks.rwlock_timedwrlock(l, t); },
                       [=] { return g_real_locks.rwlock_trywrlock(l); },
                       [=] { return contended_rwlock(l, true, t, site); },
                       format::LockKind::RwWrite, l, site);
}

EXPORT int pthread_cond_wait(pthread_cond_t* c, pthread_mutex_t* m) {
  if (__builtin_expect(!real_locks_ready(), 0)) return EINVAL;
  if (!trace_this_lock()) return g_real_locks.cond_wait(c, m);
  return traced_cond_wait(c, m, nullptr, __builtin_return_address(0));
}

EXPORT int pthread_cond_timedwait(pthread_cond_t* c, pthread_mutex_t* m, const struct timespec* t) {
  if (__builtin_expect(!real_locks_ready(), 0)) return EINVAL;
  if (!trace_this_lock()) return g_real_locks.cond_timedwait(c, m, t);
  return traced_cond_wait(c, m, t, __builtin_return_address(0));
}

// The clock variants (glibc's: C++'s timed waits and condition_variable::wait_for call them).  A
// program calls them only where the C library has them; the null check covers a lookup by name.
EXPORT int pthread_mutex_clocklock(pthread_mutex_t* m, clockid_t c, const struct timespec* t) {
  void* site = __builtin_return_address(0);
  if (real_locks_ready() && !g_real_locks.mutex_clocklock) return ENOSYS;
  return try_then_wait([=] { return g_real_locks.mutex_clocklock(m, c, t); },
                       [=] { return g_real_locks.mutex_trylock(m); },
                       [=] { return contended_mutex_clocklock(m, c, t, site); },
                       format::LockKind::Mutex, m, site);
}

EXPORT int pthread_rwlock_clockrdlock(pthread_rwlock_t* l, clockid_t c, const struct timespec* t) {
  void* site = __builtin_return_address(0);
  if (real_locks_ready() && !g_real_locks.rwlock_clockrdlock) return ENOSYS;
  return try_then_wait([=] { return g_real_locks.rwlock_clockrdlock(l, c, t); },
                       [=] { return g_real_locks.rwlock_tryrdlock(l); },
                       [=] { return contended_rwlock_clock(l, false, c, t, site); },
                       format::LockKind::RwRead, l, site);
}

EXPORT int pthread_rwlock_clockwrlock(pthread_rwlock_t* l, clockid_t c, const struct timespec* t) {
  void* site = __builtin_return_address(0);
  if (real_locks_ready() && !g_real_locks.rwlock_clockwrlock) return ENOSYS;
  return try_then_wait([=] { return g_real_locks.rwlock_clockwrlock(l, c, t); },
                       [=] { return g_real_locks.rwlock_trywrlock(l); },
                       [=] { return contended_rwlock_clock(l, true, c, t, site); },
                       format::LockKind::RwWrite, l, site);
}

EXPORT int pthread_cond_clockwait(pthread_cond_t* cv, pthread_mutex_t* m, clockid_t c, const struct timespec* t) {
  if (__builtin_expect(!real_locks_ready(), 0)) return EINVAL;
  if (!g_real_locks.cond_clockwait) return ENOSYS;
  if (!trace_this_lock()) return g_real_locks.cond_clockwait(cv, m, c, t);
  return traced_cond_clockwait(cv, m, c, t, __builtin_return_address(0));
}

// The spin lock: its waits spin on a CPU instead of sleeping; timed the same way.
EXPORT int pthread_spin_lock(pthread_spinlock_t* l) {
  void* site = __builtin_return_address(0);
  return try_then_wait([=] { return g_real_locks.spin_lock(l); },
                       [=] { return g_real_locks.spin_trylock(l); },
                       [=] { return contended_spin_lock(l, site); },
                       format::LockKind::Spin, spin_address(l), site);
}

EXPORT int pthread_spin_unlock(pthread_spinlock_t* l) {
  if (__builtin_expect(!real_locks_ready(), 0)) return EINVAL;
  if (!trace_this_lock()) return unlock_allocator_lock([=] { return g_real_locks.spin_unlock(l); });
  const int r = g_real_locks.spin_unlock(l);
  if (__builtin_expect(t_wait_pending, 0)) add_pending_wait(true);
  return r;
}

// C11's threads.  Their unlocks are not timed (only pthread_mutex_unlock's are), nor counted.
EXPORT int mtx_lock(mtx_t* m) {
  void* site = __builtin_return_address(0);
  if (real_locks_ready() && !g_real_locks.mtx_lock) return thrd_error;
  return try_then_wait([=] { return g_real_locks.mtx_lock(m); },
                       [=] { return g_real_locks.mtx_trylock(m); },
                       [=] { return contended_mtx_lock(m, nullptr, site); },
                       format::LockKind::Mutex, m, site, thrd_busy, thrd_error);
}

EXPORT int mtx_timedlock(mtx_t* __restrict m, const struct timespec* __restrict t) {
  void* site = __builtin_return_address(0);
  if (real_locks_ready() && !g_real_locks.mtx_timedlock) return thrd_error;
  return try_then_wait([=] { return g_real_locks.mtx_timedlock(m, t); },
                       [=] { return g_real_locks.mtx_trylock(m); },
                       [=] { return contended_mtx_lock(m, t, site); },
                       format::LockKind::Mutex, m, site, thrd_busy, thrd_error);
}

EXPORT int mtx_unlock(mtx_t* m) {
  if (__builtin_expect(!real_locks_ready(), 0) || !g_real_locks.mtx_unlock) return thrd_error;
  if (!trace_this_lock()) return unlock_allocator_lock([=] { return g_real_locks.mtx_unlock(m); });
  const int r = g_real_locks.mtx_unlock(m);
  if (__builtin_expect(t_wait_pending, 0)) add_pending_wait(true);
  return r;
}

// The C library's syscall(): an allocator that waits on a futex of its own calls it (tcmalloc's
// SpinLock, scudo's mutex).  Every other call is forwarded as it came; six arguments are read, as
// the C library's own does, whatever the call takes.
EXPORT long syscall(long number, ...) {
  va_list ap;
  va_start(ap, number);
  const long a = va_arg(ap, long), b = va_arg(ap, long), c = va_arg(ap, long);
  const long d = va_arg(ap, long), e = va_arg(ap, long), f = va_arg(ap, long);
  va_end(ap);
  if (__builtin_expect(number == SYS_futex, 0) && inside_allocator_call() && futex_op_waits(b))
    return allocator_futex_wait(a, b, c, d, e, f, __builtin_return_address(0));
  return real_syscall(number, a, b, c, d, e, f);
}

EXPORT int cnd_wait(cnd_t* c, mtx_t* m) {
  if (__builtin_expect(!real_locks_ready(), 0) || !g_real_locks.cnd_wait) return thrd_error;
  if (!trace_this_lock()) return g_real_locks.cnd_wait(c, m);
  return traced_cnd_wait(c, m, nullptr, __builtin_return_address(0));
}

EXPORT int cnd_timedwait(cnd_t* __restrict c, mtx_t* __restrict m, const struct timespec* __restrict t) {
  if (__builtin_expect(!real_locks_ready(), 0) || !g_real_locks.cnd_timedwait) return thrd_error;
  if (!trace_this_lock()) return g_real_locks.cnd_timedwait(c, m, t);
  return traced_cnd_wait(c, m, t, __builtin_return_address(0));
}
