// shim/core_api.cpp — the C API: forward to the real allocator, record the call.
#include "allocscope_core.h"

#include <dlfcn.h>

#include <cstring>

#include "process_state.h"
#include "real_allocator.h"
#include "recorder.h"
#include "slot_registry.h"

using namespace allocscope;

namespace {

constexpr unsigned op(Op o) { return static_cast<unsigned>(o); }

uint64_t product(size_t n, size_t size) {
  size_t total;
  return __builtin_mul_overflow(n, size, &total) ? ~uint64_t{0} : total;
}

// Forwards `real` and records it as `o` of `size` bytes; `failed` judges the result, `block`
// finds the block it returned; `old` is realloc's old block.  The full path: re-entry, a thread
// without a slot yet, a timing decision, a timed call.
template <class Real, class Failed, class Block>
__attribute__((noinline)) auto observe_full(Op o, uint64_t size, Real real, Failed failed,
                                            Block block, const void* old) {
  Slot* s = enter();
  if (!s) return real();
  const unsigned b = bucket_of(size);
  count_call(s, op(o), b, size);
  const Timing tm = start_timing(s);
  auto r = real();
  finish(tm, op(o), b, size, failed(r), block(r), old);
  return r;
}

// A call that failed: its request did not obtain bytes (it was counted before the call).
__attribute__((noinline)) void note_failed(Op o, uint64_t size) {
  finish_slow(Timing{0, false}, 0, CallInfo{op(o), bucket_of(size), size, true, 0, 0});
}

// The common case inline: an observed thread, outside the shim, not deciding on timing this call.
// It counts, calls, and checks the result.  `real` holds its arguments by value, so that nothing
// is spilled on this path; little stays live across the real call (the thread's context and the
// size), so the entry point saves few registers.
template <class Real, class Failed, class Block>
__attribute__((always_inline)) inline auto observe(Op o, uint64_t size, Real real, Failed failed,
                                                   Block block, const void* old = nullptr) {
  ThreadCtx& t = t_ctx;
  Slot* s = t.slot;
  if (__builtin_expect(!fast_path_open(t) ||
                           s->h.state.load(std::memory_order_relaxed) == kSlotFree, 0))
    return observe_full(o, size, real, failed, block, old);
  count_call(s, op(o), bucket_of(size), size);
  const uint32_t left = t.countdown - 1;
  set_gate(t, left, 1);
  auto r = real();
  set_gate(t, left, 0);
  if (__builtin_expect(failed(r), 0)) note_failed(o, size);
  return r;
}

constexpr auto same = [](void* p) { return p; };

constexpr auto is_null = [](void* p) { return p == nullptr; };

}  // namespace

extern "C" {

void* allocscope_malloc(size_t size) {
  if (!real_allocator_ready()) return bootstrap_alloc(size, 16);
  return observe(Op::Malloc, size, [=] { return g_real.malloc(size); }, is_null, same);
}

namespace {

__attribute__((noinline)) void free_full(void* ptr) {
  Slot* s = enter();
  if (!s) return g_real.free(ptr);
  // The block's size costs as much as the free itself: it is taken for every free with
  // ALLOCSCOPE_FREE_SIZES=1, and in a trace that times every call (before the timing starts, so
  // that one clock read serves the decision and the start); else on timed calls only (outside
  // the timed interval).  A trace's untimed frees need no size: the analyzer knows each block's.
  const bool sized = __atomic_load_n(&g_exact_free_sizes, __ATOMIC_RELAXED) ||
                     (g_trace && g_sampling.sample_every == 1);
  uint64_t size = sized && ptr ? g_real.malloc_usable_size(ptr) : 0;
  Timing tm = start_timing(s);
  if (!sized && tm.timed) {
    size = ptr ? g_real.malloc_usable_size(ptr) : 0;
    tm.t0 = ticks();
  }
  const unsigned b = sized || tm.timed ? bucket_of(size) : kBucketUnknown;
  count_call(s, op(Op::Free), b, size);
  g_real.free(ptr);
  finish(tm, op(Op::Free), b, size, false, ptr);
}

}  // namespace

void allocscope_free(void* ptr) {
  if (is_bootstrap_block(ptr) || !real_allocator_ready()) return;
  ThreadCtx& t = t_ctx;
  Slot* s = t.slot;
  if (__builtin_expect(!fast_path_open(t) ||
                           __atomic_load_n(&g_exact_free_sizes, __ATOMIC_RELAXED) ||
                           s->h.state.load(std::memory_order_relaxed) == kSlotFree, 0))
    return free_full(ptr);
  bump(s->counters[op(Op::Free)][kBucketUnknown].calls, 1);  // size not taken: see free_full
  const uint32_t left = t.countdown - 1;
  set_gate(t, left, 1);
  g_real.free(ptr);
  set_gate(t, left, 0);
}

void* allocscope_calloc(size_t n, size_t size) {
  if (!real_allocator_ready()) {
    const uint64_t total = product(n, size);
    return total == ~uint64_t{0} ? nullptr : bootstrap_alloc(total, 16);
  }
  return observe(Op::Calloc, product(n, size), [=] { return g_real.calloc(n, size); }, is_null,
                 same);
}

void* allocscope_realloc(void* ptr, size_t size) {
  if (!real_allocator_ready() || is_bootstrap_block(ptr)) {
    // A block from the bootstrap pool moves to the real allocator (the pool never frees).
    void* q = real_allocator_ready() ? g_real.malloc(size ? size : 1) : bootstrap_alloc(size, 16);
    if (q && ptr) {
      const size_t old = bootstrap_block_size(ptr);
      std::memcpy(q, ptr, old < size ? old : size);
    }
    return q;
  }
  return observe(Op::Realloc, size, [=] { return g_real.realloc(ptr, size); },
                 [=](void* p) { return p == nullptr && size != 0; }, same, ptr);
}

void* allocscope_reallocarray(void* ptr, size_t n, size_t size) {
  if (!real_allocator_ready() || is_bootstrap_block(ptr)) {
    const uint64_t total = product(n, size);
    return total == ~uint64_t{0} ? nullptr : allocscope_realloc(ptr, total);
  }
  return observe(Op::Reallocarray, product(n, size),
                 [=] { return g_real.reallocarray(ptr, n, size); },
                 [=](void* p) { return p == nullptr && n != 0 && size != 0; }, same, ptr);
}

int allocscope_posix_memalign(void** out, size_t align, size_t size) {
  if (!real_allocator_ready()) {
    *out = bootstrap_alloc(size, align);
    return *out ? 0 : 12 /* ENOMEM */;
  }
  return observe(Op::PosixMemalign, size, [=] { return g_real.posix_memalign(out, align, size); },
                 [](int r) { return r != 0; }, [=](int r) { return r == 0 ? *out : nullptr; });
}

void* allocscope_aligned_alloc(size_t align, size_t size) {
  if (!real_allocator_ready()) return bootstrap_alloc(size, align);
  return observe(Op::AlignedAlloc, size, [=] { return g_real.aligned_alloc(align, size); },
                 is_null, same);
}

void* allocscope_memalign(size_t align, size_t size) {
  if (!real_allocator_ready()) return bootstrap_alloc(size, align);
  return observe(Op::Memalign, size, [=] { return g_real.memalign(align, size); }, is_null,
                 same);
}

void* allocscope_valloc(size_t size) {
  if (!real_allocator_ready()) return bootstrap_alloc(size, 4096);
  return observe(Op::Valloc, size, [=] { return g_real.valloc(size); }, is_null, same);
}

void* allocscope_pvalloc(size_t size) {
  if (!real_allocator_ready()) return bootstrap_alloc((size + 4095) & ~size_t{4095}, 4096);
  return observe(Op::Pvalloc, size, [=] { return g_real.pvalloc(size); }, is_null, same);
}

size_t allocscope_malloc_usable_size(void* ptr) {
  if (is_bootstrap_block(ptr)) return bootstrap_block_size(ptr);
  if (!real_allocator_ready()) return 0;
  Slot* s = enter();
  if (!s) return g_real.malloc_usable_size(ptr);
  const Timing tm = start_timing(s);
  const size_t n = g_real.malloc_usable_size(ptr);
  const unsigned b = bucket_of(n);
  count_call(s, op(Op::MallocUsableSize), b, n);
  finish(tm, op(Op::MallocUsableSize), b, n, false, ptr);
  return n;
}

// RTLD_DEEPBIND would bind a library's free() past the shim and the allocator preloaded with it.
// The call to the real dlopen stays a tail call, so glibc still sees the caller's return address
// (and so the caller's RUNPATH and namespace).
void* allocscope_dlopen(const char* file, int mode) {
  if (__builtin_expect(!g_real.dlopen, 0)) real_allocator_ready();
  return g_real.dlopen(file, mode & ~RTLD_DEEPBIND);
}

void allocscope_configure(const char* output_path, int sample_every) {
  if (output_path) set_output_override(output_path);
  set_sample_override(sample_every);
}

void allocscope_start(void) {
  if (real_allocator_ready()) process_active();
}

void allocscope_flush(void) {
  if (!g_ps || g_ps->mode.load(std::memory_order_acquire) != kModeActive) return;
  t_ctx.depth++;
  flush_all_slots(format::ThreadState::Running);
  t_ctx.depth--;
}

void allocscope_shutdown(void) { shutdown_process(format::ExitKind::Explicit); }

const char* allocscope_profile_path(void) {
  return g_ps && g_ps->mode.load(std::memory_order_acquire) >= kModeActive &&
                 g_ps->mode.load(std::memory_order_acquire) != kModePassive
             ? g_ps->path
             : "";
}

}  // extern "C"
