// shim/real_allocator.h — the allocator behind the shim, found with dlsym(RTLD_NEXT, …).
//
// "Next" is whatever comes after the shim in the symbol search order: glibc's or musl's own
// malloc, or an allocator preloaded after the shim (jemalloc, tcmalloc, mimalloc, scudo, …).
// While the functions are being resolved, dlsym itself may allocate (glibc's calloc); those
// requests are served by a small static bootstrap pool, whose blocks every entry point recognises
// later (free ignores them, realloc copies them out, malloc_usable_size reports their size).
#pragma once
#include <cstddef>

namespace allocscope {

struct RealAllocator {
  void* (*malloc)(size_t);
  void (*free)(void*);
  void* (*calloc)(size_t, size_t);
  void* (*realloc)(void*, size_t);
  void* (*reallocarray)(void*, size_t, size_t);   // may be null: emulated
  int (*posix_memalign)(void**, size_t, size_t);
  void* (*aligned_alloc)(size_t, size_t);          // may be null: emulated
  void* (*memalign)(size_t, size_t);               // may be null: emulated
  void* (*valloc)(size_t);                         // may be null: emulated
  void* (*pvalloc)(size_t);                        // may be null (musl): emulated
  size_t (*malloc_usable_size)(void*);             // may be null: 0
  void* (*dlopen)(const char*, int);
};

extern RealAllocator g_real;

extern bool g_real_resolved;
bool resolve_real_allocator();

// True once g_real is resolved; resolves it on first use.  False while resolution is in progress
// (on this or another thread): the caller must then serve the request from the bootstrap pool.
inline bool real_allocator_ready() {
  return __builtin_expect(__atomic_load_n(&g_real_resolved, __ATOMIC_ACQUIRE), 1) ||
         resolve_real_allocator();
}

// The bootstrap pool.
constexpr size_t kBootstrapPoolSize = 256 * 1024;
extern unsigned char g_bootstrap_pool[kBootstrapPoolSize];
void* bootstrap_alloc(size_t size, size_t align);
inline bool is_bootstrap_block(const void* p) {
  const auto* c = static_cast<const unsigned char*>(p);
  return c >= g_bootstrap_pool && c < g_bootstrap_pool + kBootstrapPoolSize;
}
size_t bootstrap_block_size(const void* p);

// Path of the shared object providing the real malloc ("" if unknown), valid after resolution.
const char* real_allocator_path();

}  // namespace allocscope
