// shim/lock_waits.cpp — see lock_waits.h.
#include "lock_waits.h"

#include <dlfcn.h>
#include <linux/futex.h>
#include <sys/syscall.h>

#include <atomic>
#include <cstring>

#include "process_state.h"
#include "slot_registry.h"
#include "stack_walk.h"
#include "sys.h"
#include "thread_slot.h"
#include "tick_clock.h"

namespace allocscope {

RealLocks g_real_locks;
__thread uint32_t t_unlock_countdown __attribute__((tls_model("initial-exec")));
__thread uint64_t t_unlocks __attribute__((tls_model("initial-exec")));
__thread uint64_t t_unlocks_done __attribute__((tls_model("initial-exec")));
__thread bool t_unlock_started __attribute__((tls_model("initial-exec")));
__thread bool t_wait_pending __attribute__((tls_model("initial-exec")));
__thread bool t_allocator_wait_pending __attribute__((tls_model("initial-exec")));
__thread uint8_t t_in_lock __attribute__((tls_model("initial-exec")));
bool g_real_locks_resolved = false;
bool g_lock_waits = false;

namespace {

enum : int { kUnresolved = 0, kResolving = 1, kResolved = 2 };
std::atomic<int> g_state{kUnresolved};
__thread int t_resolving __attribute__((tls_model("initial-exec")));

template <class F>
void resolve(F& out, const char* name) {
  out = reinterpret_cast<F>(dlsym(RTLD_NEXT, name));
}

}  // namespace

bool resolve_real_locks() {
  for (;;) {
    int s = g_state.load(std::memory_order_acquire);
    if (s == kResolved) return true;
    if (t_resolving) return false;  // dlsym came back here on this thread
    if (s == kUnresolved &&
        g_state.compare_exchange_strong(s, kResolving, std::memory_order_acq_rel)) {
      const int saved = errno;
      t_resolving = 1;
      RealLocks r{};
      resolve(r.mutex_lock, "pthread_mutex_lock");
      resolve(r.mutex_trylock, "pthread_mutex_trylock");
      resolve(r.mutex_timedlock, "pthread_mutex_timedlock");
      resolve(r.rwlock_rdlock, "pthread_rwlock_rdlock");
      resolve(r.rwlock_tryrdlock, "pthread_rwlock_tryrdlock");
      resolve(r.rwlock_timedrdlock, "pthread_rwlock_timedrdlock");
      resolve(r.rwlock_wrlock, "pthread_rwlock_wrlock");
      resolve(r.rwlock_trywrlock, "pthread_rwlock_trywrlock");
      resolve(r.rwlock_timedwrlock, "pthread_rwlock_timedwrlock");
      resolve(r.cond_wait, "pthread_cond_wait");
      resolve(r.cond_timedwait, "pthread_cond_timedwait");
      resolve(r.mutex_unlock, "pthread_mutex_unlock");
      resolve(r.rwlock_unlock, "pthread_rwlock_unlock");
      resolve(r.spin_lock, "pthread_spin_lock");
      resolve(r.spin_trylock, "pthread_spin_trylock");
      resolve(r.spin_unlock, "pthread_spin_unlock");
      resolve(r.mutex_clocklock, "pthread_mutex_clocklock");
      resolve(r.rwlock_clockrdlock, "pthread_rwlock_clockrdlock");
      resolve(r.rwlock_clockwrlock, "pthread_rwlock_clockwrlock");
      resolve(r.cond_clockwait, "pthread_cond_clockwait");
      resolve(r.mtx_lock, "mtx_lock");
      resolve(r.mtx_timedlock, "mtx_timedlock");
      resolve(r.mtx_trylock, "mtx_trylock");
      resolve(r.mtx_unlock, "mtx_unlock");
      resolve(r.cnd_wait, "cnd_wait");
      resolve(r.cnd_timedwait, "cnd_timedwait");
      resolve(r.syscall, "syscall");
      t_resolving = 0;
      errno = saved;
      if (!r.mutex_lock || !r.mutex_trylock || !r.mutex_timedlock || !r.rwlock_rdlock ||
          !r.rwlock_tryrdlock || !r.rwlock_timedrdlock || !r.rwlock_wrlock ||
          !r.rwlock_trywrlock || !r.rwlock_timedwrlock || !r.cond_wait || !r.cond_timedwait ||
          !r.mutex_unlock || !r.rwlock_unlock || !r.spin_lock || !r.spin_trylock || !r.spin_unlock) {
        static const char msg[] =
            "allocscope: cannot find the real pthread lock functions with dlsym(RTLD_NEXT); "
            "giving up\n";
        sys::write(2, msg, sizeof msg - 1);
        __builtin_trap();
      }
      g_real_locks = r;
      g_state.store(kResolved, std::memory_order_release);
      __atomic_store_n(&g_real_locks_resolved, true, __ATOMIC_RELEASE);
      return true;
    }
    // Another thread is resolving (a short dlsym): wait for it.
    sys::sched_yield();
  }
}

namespace {

uint64_t mix(uint64_t lock, uint64_t site) {
  uint64_t x = lock * 0x9e3779b97f4a7c15ull ^ site;
  x ^= x >> 31;
  x *= 0xbf58476d1ce4e5b9ull;
  return x ^ (x >> 29);
}

// The thread's row for (lock, site, kind, flags), created on first use; null when the table is full.
format::LockWaitRow* row_for(LockTable& t, uint64_t lock, uint64_t site, uint8_t kind, uint8_t flags = 0) {
  unsigned i = static_cast<unsigned>(mix(lock, site)) & (kLockIndexSize - 1);
  for (unsigned probe = 0; probe < kLockIndexSize; probe++, i = (i + 1) & (kLockIndexSize - 1)) {
    const uint16_t idx = t.index[i];
    if (idx == 0) {
      const uint32_t n = t.n_rows.load(std::memory_order_relaxed);
      if (n >= kLockRows) return nullptr;
      format::LockWaitRow& r = t.rows[n];
      r.lock = lock;
      r.site = site;
      r.kind = kind;
      r.flags = flags;
      t.index[i] = static_cast<uint16_t>(n + 1);
      t.n_rows.store(n + 1, std::memory_order_release);
      return &r;
    }
    format::LockWaitRow& r = t.rows[idx - 1];
    if (r.lock == lock && r.site == site && r.kind == kind && r.flags == flags) return &r;
  }
  return nullptr;
}

// Adds one wait of `duration` ticks (which ended at `t1`) to the calling thread's table;
// `stack`: may take a call stack for its row.
void record_wait(const void* lock, void* site, format::LockKind kind, uint64_t duration,
                 uint64_t t1, bool timed_out, bool stack) {
  const int saved = errno;
  Slot* s = enter();
  if (s) {
    // A thread whose first observed call is this wait got its slot when the wait ended: its
    // lifetime starts where the wait began, so that the wait lies inside it.
    if (t1 - duration < s->h.first_tick) __atomic_store_n(&s->h.first_tick, t1 - duration, __ATOMIC_RELAXED);
    if (g_ps && g_ps->mode.load(std::memory_order_acquire) == kModeActive) {
      LockTable& t = s->locks;
      format::LockWaitRow* r = row_for(t, reinterpret_cast<uint64_t>(lock),
                                       reinterpret_cast<uint64_t>(site), static_cast<uint8_t>(kind));
      if (r) {
        const uint64_t waits = peek(r->waits) + 1;
        __atomic_store_n(&r->waits, waits, __ATOMIC_RELAXED);
        bump(r->wait_ticks, duration);
        if (duration > peek(r->max_ticks)) __atomic_store_n(&r->max_ticks, duration, __ATOMIC_RELAXED);
        if (timed_out && r->timeouts != 0xffff) __atomic_store_n(&r->timeouts, uint16_t(r->timeouts + 1), __ATOMIC_RELAXED);
        if (stack && r->stack_id == 0 && (waits & (waits - 1)) == 0) {
          const uint32_t id = capture_stack(s);
          __atomic_store_n(&r->stack_id, id, __ATOMIC_RELAXED);
        }
      } else {
        bump(t.dropped_waits, 1);
        bump(t.dropped_ticks, duration);
      }
      bump(t.waits, 1);
      store_shared(s->h.last_tick, t1);
      if (t1 - load_shared(s->h.last_flush_tick) > g_sampling.flush_interval)
        flush_slot(s, format::ThreadState::Running);
    }
    leave();
  }
  errno = saved;
}

// Keeps a wait that ended with the lock taken until the thread's next unlock (lock_waits.h).
// `held`: the call returned with the lock taken (else the wait is recorded at once).
void defer_wait(const void* lock, void* site, format::LockKind kind, uint64_t duration, uint64_t t1,
                bool timed_out, bool held) {
  Slot* s = t_ctx.slot;
  if (!held || t_ctx.depth != 0 || s == nullptr || s->h.state.load(std::memory_order_relaxed) == kSlotFree) {
    record_wait(lock, site, kind, duration, t1, timed_out, true);  // nothing held, or no slot yet
    return;
  }
  if (s->locks.pending.set) add_pending_wait(false);  // a second lock taken while holding the first
  LockTable::PendingWait& p = s->locks.pending;
  p.lock = reinterpret_cast<uint64_t>(lock);
  p.site = reinterpret_cast<uint64_t>(site);
  p.duration = duration;
  p.t1 = t1;
  p.kind = static_cast<uint8_t>(kind);
  p.timed_out = timed_out;
  p.set = 1;
  t_wait_pending = true;
}

}  // namespace

void add_pending_wait(bool at_unlock) {
  t_wait_pending = false;
  Slot* s = t_ctx.slot;
  // A fork child's slot was wiped: its parent's wait is not its own.
  if (s == nullptr || s->h.state.load(std::memory_order_relaxed) == kSlotFree || !s->locks.pending.set) return;
  const LockTable::PendingWait p = s->locks.pending;
  s->locks.pending.set = 0;
  record_wait(reinterpret_cast<const void*>(p.lock), reinterpret_cast<void*>(p.site),
              static_cast<format::LockKind>(p.kind), p.duration, p.t1, p.timed_out != 0, at_unlock);
}

namespace {

// A pseudo-random byte from a xorshift of the tick, the thread's count and its TLS address.
uint32_t unlock_draw(uint64_t tick) {
  uint64_t x = tick ^ (t_unlocks << 17) ^ reinterpret_cast<uint64_t>(&t_unlocks);
  x ^= x >> 12;
  x ^= x << 25;
  x ^= x >> 27;
  return static_cast<uint32_t>((x * 0x2545f4914f6cdd1dull) >> 56);
}

}  // namespace

int sampled_mutex_unlock(pthread_mutex_t* m, void* site) {
  // A thread's first unlock comes here (its countdown starts at 0), but it is not the one to
  // time: a thread's first unlock is often of a start-up lock (PHP's TSRM mutex), taken by all
  // threads at once and unlocked just before a preemption; timed on every thread and scaled by
  // 256 it would be read as seconds of unlocking.  The first timed unlock falls at a random
  // position 1..256 instead: a thread's first unlocks are then about as likely to be timed as any.
  if (__builtin_expect(!t_unlock_started, 0)) {
    t_unlock_started = true;
    const uint32_t position = 1 + unlock_draw(ticks());
    if (position > 1) {
      t_unlock_countdown = position - 2;  // the next position - 2 unlocks go untimed
      return counted_unlock(m);
    }
  }
  // The next countdown: 128..383 (never periodic).
  const uint64_t t0 = ticks();
  t_unlock_countdown = 128 + unlock_draw(t0);
  const int r = counted_unlock(m);
  const uint64_t t1 = ticks();
  const int saved = errno;
  Slot* s = enter();
  if (s) {
    if (t0 < s->h.first_tick) __atomic_store_n(&s->h.first_tick, t0, __ATOMIC_RELAXED);  // as for a wait
    if (g_ps && g_ps->mode.load(std::memory_order_acquire) == kModeActive) {
      LockTable& t = s->locks;
      store_shared(t.unlocks, t_unlocks);
      bump(t.unlocks_timed, 1);
      format::LockWaitRow* row = row_for(t, reinterpret_cast<uint64_t>(m), reinterpret_cast<uint64_t>(site),
                                         static_cast<uint8_t>(format::LockKind::Unlock));
      const uint64_t d = t1 - t0;
      if (row) {
        bump(row->waits, 1);
        bump(row->wait_ticks, d);
        if (d > peek(row->max_ticks)) __atomic_store_n(&row->max_ticks, d, __ATOMIC_RELAXED);
      }
      // (An unlock dropped for a full table still counts in unlocks_timed: its time is then
      // missing from the rows, and the estimate errs low.)
      bump(t.waits, 1);
    }
    leave();
  }
  errno = saved;
  if (t_wait_pending) add_pending_wait(true);
  return r;
}

namespace {

// Adds one wait of the allocator's own, of `duration` ticks, to its row of the thread's table.
void add_allocator_row(Slot* s, uint64_t lock, uint64_t site, format::LockKind kind, uint64_t duration) {
  if (!g_ps || g_ps->mode.load(std::memory_order_acquire) != kModeActive) return;
  LockTable& t = s->locks;
  format::LockWaitRow* r = row_for(t, lock, site, static_cast<uint8_t>(kind), format::kLockRowInAllocator);
  if (r) {
    bump(r->waits, 1);
    bump(r->wait_ticks, duration);
    if (duration > peek(r->max_ticks)) __atomic_store_n(&r->max_ticks, duration, __ATOMIC_RELAXED);
  } else {
    bump(t.allocator_dropped, 1);
  }
  bump(t.waits, 1);
}

// The thread's slot, unless it has none or it was wiped (a fork child).
Slot* own_slot() {
  Slot* s = t_ctx.slot;
  return s != nullptr && s->h.state.load(std::memory_order_relaxed) != kSlotFree ? s : nullptr;
}

}  // namespace

void keep_allocator_wait(format::LockKind kind, const void* lock, void* site, uint64_t duration, bool held) {
  Slot* s = own_slot();
  if (s == nullptr) return;
  if (s->locks.allocator_pending.set) add_allocator_wait();  // a second lock taken while holding the first
  if (!held) {  // a failed call: nothing held, nothing to lengthen
    add_allocator_row(s, reinterpret_cast<uint64_t>(lock), reinterpret_cast<uint64_t>(site), kind, duration);
    return;
  }
  LockTable::PendingWait& p = s->locks.allocator_pending;
  p.lock = reinterpret_cast<uint64_t>(lock);
  p.site = reinterpret_cast<uint64_t>(site);
  p.duration = duration;
  p.kind = static_cast<uint8_t>(kind);
  p.set = 1;
  t_allocator_wait_pending = true;  // added after the unlock
}

long real_syscall(long number, long a, long b, long c, long d, long e, long f) {
  if (__builtin_expect(real_locks_ready(), 1) && g_real_locks.syscall)
    return g_real_locks.syscall(number, a, b, c, d, e, f);
  const long r = sys::call(number, a, b, c, d, e, f);
  if (sys::failed(r)) {
    errno = static_cast<int>(-r);
    return -1;
  }
  return r;
}

bool futex_op_waits(long op) {
  switch (op & FUTEX_CMD_MASK) {
    case FUTEX_WAIT:
    case FUTEX_WAIT_BITSET:
    case FUTEX_LOCK_PI:
    case FUTEX_WAIT_REQUEUE_PI:
#ifdef FUTEX_LOCK_PI2
    case FUTEX_LOCK_PI2:
#endif
      return true;
    default:
      return false;
  }
}

long allocator_futex_wait(long uaddr, long op, long c, long d, long e, long f, void* site) {
  const uint64_t t0 = ticks();
  const long r = real_syscall(SYS_futex, uaddr, op, c, d, e, f);
  const uint64_t t1 = ticks();
  const int saved = errno;
  if (r == 0 || saved == EINTR || saved == ETIMEDOUT) {
    if (Slot* s = own_slot())
      add_allocator_row(s, static_cast<uint64_t>(uaddr), reinterpret_cast<uint64_t>(site), format::LockKind::Futex,
                        t1 - t0);
  }
  errno = saved;
  return r;
}

void add_allocator_wait() {
  t_allocator_wait_pending = false;
  Slot* s = own_slot();
  // A fork child's slot was wiped: its parent's wait is not its own.
  if (s == nullptr || !s->locks.allocator_pending.set) return;
  const LockTable::PendingWait p = s->locks.allocator_pending;
  s->locks.allocator_pending.set = 0;
  add_allocator_row(s, p.lock, p.site, static_cast<format::LockKind>(p.kind), p.duration);
}

int unlock_then_add_wait(pthread_mutex_t* m) {
  const int r = counted_unlock(m);
  add_pending_wait(true);
  return r;
}

int contended_mutex_lock(pthread_mutex_t* m, const struct timespec* timeout, void* site) {
  const uint64_t t0 = ticks();
  const int r = in_lock_call([&] { return timeout ? g_real_locks.mutex_timedlock(m, timeout) : g_real_locks.mutex_lock(m); });
  const uint64_t t1 = ticks();
  defer_wait(m, site, format::LockKind::Mutex, t1 - t0, t1, r == ETIMEDOUT, r == 0);
  return r;
}

namespace {

// A contended call timed around the real one: `call` returns the real call's result; `held` says
// whether a result leaves the lock held, `timed_out` whether it means the timeout passed.
template <class Call, class Held, class TimedOut>
int timed_wait(Call call, const void* lock, void* site, format::LockKind kind, uint8_t mark, Held held,
               TimedOut timed_out) {
  const uint64_t t0 = ticks();
  const int r = in_lock_call(call, mark);
  const uint64_t t1 = ticks();
  defer_wait(lock, site, kind, t1 - t0, t1, timed_out(r), held(r));
  return r;
}

bool pthread_held(int r) { return r == 0; }
bool pthread_timed_out(int r) { return r == ETIMEDOUT; }
bool pthread_cond_held(int r) { return r == 0 || r == ETIMEDOUT; }  // a timed-out wait takes the mutex again
bool c11_held(int r) { return r == thrd_success; }
bool c11_timed_out(int r) { return r == thrd_timedout; }
bool c11_cond_held(int r) { return r == thrd_success || r == thrd_timedout; }
bool never(int) { return false; }

}  // namespace

int contended_mutex_clocklock(pthread_mutex_t* m, clockid_t clock, const struct timespec* timeout, void* site) {
  return timed_wait([&] { return g_real_locks.mutex_clocklock(m, clock, timeout); }, m, site,
                    format::LockKind::Mutex, kInLockCall, pthread_held, pthread_timed_out);
}

int contended_rwlock_clock(pthread_rwlock_t* l, bool write, clockid_t clock, const struct timespec* timeout, void* site) {
  return timed_wait([&] { return write ? g_real_locks.rwlock_clockwrlock(l, clock, timeout)
                                       : g_real_locks.rwlock_clockrdlock(l, clock, timeout); },
                    l, site, write ? format::LockKind::RwWrite : format::LockKind::RwRead, kInLockCall,
                    pthread_held, pthread_timed_out);
}

int traced_cond_clockwait(pthread_cond_t* c, pthread_mutex_t* m, clockid_t clock, const struct timespec* timeout, void* site) {
  return timed_wait([&] { return g_real_locks.cond_clockwait(c, m, clock, timeout); }, c, site,
                    format::LockKind::Cond, kInCondWait, pthread_cond_held, pthread_timed_out);
}

int contended_mtx_lock(mtx_t* m, const struct timespec* timeout, void* site) {
  return timed_wait([&] { return timeout ? g_real_locks.mtx_timedlock(m, timeout) : g_real_locks.mtx_lock(m); }, m,
                    site, format::LockKind::Mutex, kInLockCall, c11_held, c11_timed_out);
}

int traced_cnd_wait(cnd_t* c, mtx_t* m, const struct timespec* timeout, void* site) {
  return timed_wait([&] { return timeout ? g_real_locks.cnd_timedwait(c, m, timeout) : g_real_locks.cnd_wait(c, m); },
                    c, site, format::LockKind::Cond, kInCondWait, c11_cond_held, c11_timed_out);
}

int contended_spin_lock(pthread_spinlock_t* l, void* site) {
  return timed_wait([&] { return g_real_locks.spin_lock(l); }, spin_address(l), site, format::LockKind::Spin, kInLockCall,
                    pthread_held, never);
}

int contended_rwlock(pthread_rwlock_t* l, bool write, const struct timespec* timeout, void* site) {
  const uint64_t t0 = ticks();
  const int r = in_lock_call([&] {
    if (write) return timeout ? g_real_locks.rwlock_timedwrlock(l, timeout) : g_real_locks.rwlock_wrlock(l);
    return timeout ? g_real_locks.rwlock_timedrdlock(l, timeout) : g_real_locks.rwlock_rdlock(l);
  });
  const uint64_t t1 = ticks();
  defer_wait(l, site, write ? format::LockKind::RwWrite : format::LockKind::RwRead, t1 - t0, t1,
             r == ETIMEDOUT, r == 0);
  return r;
}

int traced_cond_wait(pthread_cond_t* c, pthread_mutex_t* m, const struct timespec* timeout, void* site) {
  const uint64_t t0 = ticks();
  const int r = in_lock_call([&] { return timeout ? g_real_locks.cond_timedwait(c, m, timeout) : g_real_locks.cond_wait(c, m); },
                             kInCondWait);
  const uint64_t t1 = ticks();
  defer_wait(c, site, format::LockKind::Cond, t1 - t0, t1, r == ETIMEDOUT, r == 0 || r == ETIMEDOUT);
  return r;
}

bool lock_waits_pending(const Slot* s) {
  return peek(s->locks.waits) != load_shared(s->locks.waits_at_flush);
}

bool write_lock_waits(Slot* s) {
  LockTable& t = s->locks;
  const uint64_t waits = peek(t.waits);
  if (waits == load_shared(t.waits_at_flush)) return true;  // the last chunk still holds
  constexpr size_t kHdr = sizeof(format::ChunkHeader);
  static_assert(kHdr + sizeof(format::LockWaitsHeader) + kLockRows * sizeof(format::LockWaitRow) <=
                kOutBuffer, "one chunk holds a whole table");
  auto* lh = reinterpret_cast<format::LockWaitsHeader*>(s->out + kHdr);
  auto* rows = reinterpret_cast<format::LockWaitRow*>(lh + 1);
  const uint32_t n = t.n_rows.load(std::memory_order_acquire);
  std::memset(lh, 0, sizeof *lh);
  lh->thread_serial = s->h.serial;
  lh->seq = load_shared(s->h.seq);
  lh->count = n;
  lh->dropped_waits = peek(t.dropped_waits);
  lh->dropped_ticks = peek(t.dropped_ticks);
  lh->unlocks = peek(t.unlocks);
  lh->unlocks_timed = peek(t.unlocks_timed);
  const uint64_t allocator_dropped = peek(t.allocator_dropped);
  lh->allocator_dropped = allocator_dropped > 0xffffffffu ? 0xffffffffu : static_cast<uint32_t>(allocator_dropped);
  for (uint32_t i = 0; i < n; i++) {
    const format::LockWaitRow& src = t.rows[i];
    format::LockWaitRow& dst = rows[i];
    dst.lock = src.lock;
    dst.site = src.site;
    dst.waits = peek(src.waits);
    dst.wait_ticks = peek(src.wait_ticks);
    dst.max_ticks = peek(src.max_ticks);
    dst.stack_id = __atomic_load_n(&src.stack_id, __ATOMIC_RELAXED);
    dst.kind = src.kind;
    dst.flags = src.flags;
    dst.timeouts = __atomic_load_n(&src.timeouts, __ATOMIC_RELAXED);
  }
  const bool ok = write_chunk(format::ChunkType::LockWaits, s->out,
                              sizeof *lh + n * sizeof(format::LockWaitRow));
  if (ok) store_shared(t.waits_at_flush, waits);
  return ok;
}

}  // namespace allocscope
