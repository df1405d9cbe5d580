// shim/cpu_samples.cpp — see cpu_samples.h.
#include "cpu_samples.h"

#include <atomic>
#include <cstring>

#include "loaded_object.h"
#include "lock_waits.h"
#include "peer_waits.h"
#include "process_state.h"
#include "recorder.h"
#include "slot_registry.h"
#include "sys.h"

namespace allocscope {

bool g_cpu_samples = false;

namespace {

// Cleared for good when the program takes the signal: no timer is started after that.
std::atomic<bool> g_timers_allowed{true};

// The real pthread_mutex_trylock, pthread_rwlock_tryrdlock, pthread_rwlock_trywrlock,
// pthread_spin_trylock and mtx_trylock.
CodeRange g_trylock_code[5];

bool in_trylock(uintptr_t pc) {
  for (const CodeRange& r : g_trylock_code)
    if (r.contains(pc)) return true;
  return false;
}

// The kernel's struct sigevent (64 bytes): the C libraries name the thread-id member differently.
struct KernelSigevent {
  uint64_t value;
  int32_t signo;
  int32_t notify;
  int32_t tid;
  int32_t pad[11];
};
static_assert(sizeof(KernelSigevent) == 64);
constexpr int32_t kSigevThreadId = 4;      // SIGEV_THREAD_ID
constexpr long kThreadCpuClock = 3;        // CLOCK_THREAD_CPUTIME_ID: the calling thread's

struct KernelItimerspec {
  long interval_s, interval_ns, value_s, value_ns;
};

void delete_timer(Slot* s) {
  if (!load_shared(s->h.cpu_timer_set)) return;
  store_shared(s->h.cpu_timer_set, 0u);
  sys::call(SYS_timer_delete, load_shared(s->h.cpu_timer));
}

// Whether the calling thread blocks `sig` (then its samples would stay pending, and a thread that
// takes its signals with sigwait could read one as its own).
bool blocks(int sig) {
  uint64_t mask = 0;
  if (sys::failed(sys::call(SYS_rt_sigprocmask, 0 /* SIG_BLOCK */, 0, reinterpret_cast<long>(&mask), 8))) return true;
  return (mask & sys::signal_bit(sig)) != 0;
}

// Starts the calling thread's timer, unless it blocks the signal.
void arm_timer(Slot* s) {
  if (!g_cpu_samples || !g_timers_allowed.load(std::memory_order_acquire)) return;
  const int sig = hold_signal();
  if (sig <= 0 || blocks(sig)) return;
  KernelSigevent ev;
  std::memset(&ev, 0, sizeof ev);
  ev.signo = sig;
  ev.notify = kSigevThreadId;
  ev.tid = sys::gettid();
  int32_t id = -1;
  if (sys::failed(sys::call(SYS_timer_create, kThreadCpuClock, reinterpret_cast<long>(&ev), reinterpret_cast<long>(&id))))
    return;
  const KernelItimerspec every{0, static_cast<long>(format::kCpuSampleNs), 0, static_cast<long>(format::kCpuSampleNs)};
  if (sys::failed(sys::call(SYS_timer_settime, id, 0, reinterpret_cast<long>(&every), 0))) {
    sys::call(SYS_timer_delete, id);
    return;
  }
  store_shared(s->h.cpu_timer, id);
  store_shared(s->h.cpu_timer_set, 1u);
  // The program may have taken the signal meanwhile (stop_all_cpu_samples ran before the store).
  if (!g_timers_allowed.load(std::memory_order_acquire)) delete_timer(s);
}

}  // namespace

void start_cpu_samples(Slot* s) {
  delete_timer(s);  // an earlier owner's, if it exited without its exit hook
  store_shared(s->h.cpu_samples, uint64_t{0});
  store_shared(s->h.cpu_in_allocator, uint64_t{0});
  store_shared(s->h.cpu_in_shim, uint64_t{0});
  store_shared(s->h.cpu_in_locks, uint64_t{0});
  store_shared(s->h.cpu_in_cond, uint64_t{0});
  store_shared(s->h.cpu_samples_at_flush, uint64_t{0});
  arm_timer(s);
}

void cpu_samples_blocked(bool blocked) {
  const ThreadCtx& t = t_ctx;
  Slot* s = t.slot;
  if (!g_cpu_samples || !s || t.depth != 0 || s->h.state.load(std::memory_order_relaxed) != kSlotOwned) return;
  const bool set = load_shared(s->h.cpu_timer_set) != 0;
  if (blocked) {
    if (!set) return;
    delete_timer(s);
    drop_pending_hold_signal();  // a sample that came before the timer went
  } else if (!set) {
    arm_timer(s);
  }
}

void stop_cpu_samples(Slot* s) {
  if (s) delete_timer(s);
}

void stop_all_cpu_samples() {
  g_timers_allowed.store(false, std::memory_order_release);
  each_slot([](Slot* s) { delete_timer(s); });
}

void learn_trylock_code() {
  g_trylock_code[0] = function_range(reinterpret_cast<const void*>(g_real_locks.mutex_trylock));
  g_trylock_code[1] = function_range(reinterpret_cast<const void*>(g_real_locks.rwlock_tryrdlock));
  g_trylock_code[2] = function_range(reinterpret_cast<const void*>(g_real_locks.rwlock_trywrlock));
  g_trylock_code[3] = function_range(reinterpret_cast<const void*>(g_real_locks.spin_trylock));
  if (g_real_locks.mtx_trylock)
    g_trylock_code[4] = function_range(reinterpret_cast<const void*>(g_real_locks.mtx_trylock));
}

void take_cpu_sample(uintptr_t pc) {
  const ThreadCtx& t = t_ctx;
  Slot* s = t.slot;
  if (!s || s->h.state.load(std::memory_order_relaxed) != kSlotOwned) return;
  // The total first: a flusher on another thread reads the parts first (write_cpu_samples), so
  // that no part it reads exceeds the total it reads.
  bump(s->h.cpu_samples, 1);
  __atomic_thread_fence(__ATOMIC_RELEASE);
  if (t_in_lock == kInLockCall || t_unlocks != t_unlocks_done) bump(s->h.cpu_in_locks, 1);
  else if (t_in_lock == kInCondWait) bump(s->h.cpu_in_cond, 1);
  else if (t.depth & kInCall) bump(s->h.cpu_in_allocator, 1);
  else if (t.depth != 0) bump(s->h.cpu_in_shim, 1);
  else if (in_trylock(pc)) bump(s->h.cpu_in_locks, 1);
}

bool cpu_samples_pending(const Slot* s) {
  return peek(s->h.cpu_samples) != load_shared(s->h.cpu_samples_at_flush);
}

bool write_cpu_samples(Slot* s) {
  const uint64_t samples = peek(s->h.cpu_samples);
  if (samples == load_shared(s->h.cpu_samples_at_flush)) return true;
  constexpr size_t kHdr = sizeof(format::ChunkHeader);
  auto* c = reinterpret_cast<format::CpuSamples*>(s->out + kHdr);
  std::memset(c, 0, sizeof *c);
  c->thread_serial = s->h.serial;
  c->seq = load_shared(s->h.seq);
  // The parts first, then the total (take_cpu_sample counts the total first): no part beyond it.
  c->in_allocator = peek(s->h.cpu_in_allocator);
  c->in_shim = peek(s->h.cpu_in_shim);
  c->in_locks = peek(s->h.cpu_in_locks);
  c->in_cond = peek(s->h.cpu_in_cond);
  __atomic_thread_fence(__ATOMIC_ACQUIRE);
  c->samples = peek(s->h.cpu_samples);
  const bool ok = write_chunk(format::ChunkType::CpuSamples, s->out, sizeof *c);
  if (ok) store_shared(s->h.cpu_samples_at_flush, c->samples);
  return ok;
}

}  // namespace allocscope
