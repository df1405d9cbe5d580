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
  // The program's malloc_usable_size: the next definition, wherever it lies (an allocator that
  // defines malloc but not malloc_usable_size leaves its callers the libc's, as without the shim).
  size_t (*malloc_usable_size)(void*);             // may be null: 0
  // The shim's own reading of a block's size (a timed free's bucket): the one of malloc's own
  // object only, since another allocator's answer for this heap's blocks may crash.
  size_t (*own_usable_size)(void*);                // may be null: 0
  void* (*dlopen)(const char*, int);
};

// What every entry point reads before it forwards, in one cache line: whether the real functions
// are resolved, whether `free` takes every block's size, and the most called of those functions.
// (A call also touches its thread's context, its slot's state and its counter: docs/overhead.md.)
struct alignas(64) Forwarding {
  bool resolved;          // `real` is filled
  bool exact_free_sizes;  // ALLOCSCOPE_FREE_SIZES=1: free asks the allocator for every block's size
  RealAllocator real;
};
static_assert(offsetof(Forwarding, real) + 4 * sizeof(void*) <= 64, "malloc..realloc in the first line");
extern Forwarding g_forwarding;
inline constexpr RealAllocator& g_real = g_forwarding.real;

// The C++ operators of the next definition in the search order (libstdc++'s, or an allocator's
// own: jemalloc, tcmalloc, mimalloc and scudo define them).  Where there is none (a C program that
// has no C++ runtime loaded), cxx_api.cpp's fallbacks serve them from g_real's malloc/free.
// `nothrow` arguments are the caller's std::nothrow_t reference, passed through.
struct RealCxx {
  void* (*nw)(size_t);
  void* (*nw_nothrow)(size_t, const void*);
  void* (*nw_aligned)(size_t, size_t);
  void* (*nw_aligned_nothrow)(size_t, size_t, const void*);
  void* (*na)(size_t);
  void* (*na_nothrow)(size_t, const void*);
  void* (*na_aligned)(size_t, size_t);
  void* (*na_aligned_nothrow)(size_t, size_t, const void*);
  void (*dl)(void*);
  void (*dl_nothrow)(void*, const void*);
  void (*dl_sized)(void*, size_t);
  void (*dl_aligned)(void*, size_t);
  void (*dl_aligned_nothrow)(void*, size_t, const void*);
  void (*dl_sized_aligned)(void*, size_t, size_t);
  void (*da)(void*);
  void (*da_nothrow)(void*, const void*);
  void (*da_sized)(void*, size_t);
  void (*da_aligned)(void*, size_t);
  void (*da_aligned_nothrow)(void*, size_t, const void*);
  void (*da_sized_aligned)(void*, size_t, size_t);
};
constexpr unsigned kCxxOperators = sizeof(RealCxx) / sizeof(void*);
// Their mangled names, in the order of RealCxx's fields.
extern const char* const kCxxNames[kCxxOperators];

extern RealCxx g_real_cxx;
// Fills g_real_cxx (dlsym(RTLD_NEXT)) and the fallbacks for those missing (cxx_api.cpp); called
// while the C functions are resolved.  `malloc_object` is the object of the real malloc.
void resolve_real_cxx(const void* malloc_object);
// Writes into `out` (NUL-terminated) one line per entry point the program calls past the shim:
// malloc, free, calloc, realloc, operator new or delete defined ahead of the preload library in
// the search order (by the executable, say, that links an allocator statically); its calls never
// reach the shim.  Returns the length; 0 when the preload library comes first for each, and always
// in a process that links the recorder directly (the core tests).
size_t describe_shadowed_entries(char* out, size_t cap);
// The process's own definition of `name` (the first in the search order) where it is not the
// preload library's — the program's, say, or a library's ahead of it — else null.  An object that
// only imports `name` does not define it, though dlsym answers the canonical address a non-PIE
// executable gives what it imports and takes the address of (loaded_object.h).  In a process
// that links the recorder directly (the core tests) any definition counts as not its own.
void* defined_ahead(const char* name);
// The object that defines the next operator new ("" when there is none), valid after resolution.
const char* real_cxx_path();

inline constexpr bool& g_real_resolved = g_forwarding.resolved;
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
