// shim/core_api.cpp — the C API: forward to the real allocator, record the call.
#include "allocscope_core.h"

#include <dlfcn.h>

#include <cstring>

#include "observe.h"
#include "process_state.h"
#include "real_allocator.h"
#include "recorder.h"
#include "slot_registry.h"

using namespace allocscope;

namespace {

uint64_t product(size_t n, size_t size) {
  size_t total;
  return __builtin_mul_overflow(n, size, &total) ? ~uint64_t{0} : total;
}

}  // namespace

void allocscope::note_failed(Op o, uint64_t size) {
  finish_slow(Timing{0, false}, 0, CallInfo{op_index(o), bucket_of(size), size, true, 0, 0});
}

extern "C" {

void* allocscope_malloc(size_t size) {
  if (!real_allocator_ready()) return bootstrap_alloc(size, 16);
  return observe(Op::Malloc, size, [=] { return g_real.malloc(size); }, is_null, same);
}

void allocscope_free(void* ptr) {
  if (is_bootstrap_block(ptr) || !real_allocator_ready()) return;
  release(Op::Free, ptr, [=] { g_real.free(ptr); });
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
  count_call(s, op_index(Op::MallocUsableSize), b, n);
  finish(tm, op_index(Op::MallocUsableSize), b, n, false, ptr);
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
