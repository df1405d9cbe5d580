// shim/real_allocator.cpp — resolution of the next allocator and the bootstrap pool.
#include "real_allocator.h"

#include <dlfcn.h>

#include <atomic>
#include <cstdint>
#include <cerrno>
#include <cstring>

#include "allocscope/format.h"
#include "loaded_object.h"
#include "sys.h"
#include "text_buffer.h"

// Defined by the preload library only (entry_points.cpp).
extern "C" __attribute__((weak, visibility("hidden"))) const char allocscope_preload_marker;

namespace allocscope {

Forwarding g_forwarding;
alignas(4096) unsigned char g_bootstrap_pool[kBootstrapPoolSize];

namespace {

enum : int { kUnresolved = 0, kResolving = 1, kResolved = 2 };
std::atomic<int> g_state{kUnresolved};
const char* g_path = "";

// --- bootstrap pool -----------------------------------------------------------------------
// Blocks carry a 16-byte header holding their size; alignment up to 4096 is honoured.
constexpr size_t kPoolSize = kBootstrapPoolSize;
unsigned char* const g_pool = g_bootstrap_pool;
std::atomic<size_t> g_pool_used{0};

template <class F>
F resolve(const char* name) {
  return reinterpret_cast<F>(dlsym(RTLD_NEXT, name));
}

constexpr size_t kPage = 4096;

void* emulated_aligned_alloc(size_t align, size_t size) {
  void* p = nullptr;
  return g_real.posix_memalign(&p, align < sizeof(void*) ? sizeof(void*) : align, size) == 0
             ? p
             : nullptr;
}
void* emulated_valloc(size_t size) { return emulated_aligned_alloc(kPage, size); }
void* emulated_pvalloc(size_t size) {
  const size_t rounded = (size + kPage - 1) & ~(kPage - 1);
  if (rounded < size) return nullptr;
  return emulated_aligned_alloc(kPage, rounded ? rounded : kPage);
}
void* emulated_reallocarray(void* p, size_t n, size_t size) {
  size_t total;
  if (__builtin_mul_overflow(n, size, &total)) {
    errno = ENOMEM;
    return nullptr;
  }
  return g_real.realloc(p, total);
}
size_t no_usable_size(void*) { return 0; }

// The object that defines `fn`, or null (loaded_object.h: cheaper than dladdr, asked some twenty
// times as the process starts).
const void* object_of(void* fn) { return reinterpret_cast<const void*>(object_holding(fn)); }

// An allocator that lacks, say, pvalloc (Debian's jemalloc) lets dlsym find the libc's: its blocks
// would come from another heap and crash the allocator's free.  Optional functions defined outside
// malloc's object are emulated on top of the allocator's own posix_memalign/realloc.
template <class F>
F same_object_or_null(F fn, const void* malloc_object) {
  return fn && object_of(reinterpret_cast<void*>(fn)) == malloc_object ? fn : nullptr;
}

void resolve_all() {
  RealAllocator r{};
  r.malloc = resolve<decltype(r.malloc)>("malloc");
  r.free = resolve<decltype(r.free)>("free");
  r.calloc = resolve<decltype(r.calloc)>("calloc");
  r.realloc = resolve<decltype(r.realloc)>("realloc");
  r.posix_memalign = resolve<decltype(r.posix_memalign)>("posix_memalign");
  r.reallocarray = resolve<decltype(r.reallocarray)>("reallocarray");
  r.aligned_alloc = resolve<decltype(r.aligned_alloc)>("aligned_alloc");
  r.memalign = resolve<decltype(r.memalign)>("memalign");
  r.valloc = resolve<decltype(r.valloc)>("valloc");
  r.pvalloc = resolve<decltype(r.pvalloc)>("pvalloc");
  r.malloc_usable_size = resolve<decltype(r.malloc_usable_size)>("malloc_usable_size");
  r.dlopen = resolve<decltype(r.dlopen)>("dlopen");
  const void* home = object_of(reinterpret_cast<void*>(r.malloc));
  r.reallocarray = same_object_or_null(r.reallocarray, home);
  r.aligned_alloc = same_object_or_null(r.aligned_alloc, home);
  r.memalign = same_object_or_null(r.memalign, home);
  r.valloc = same_object_or_null(r.valloc, home);
  r.pvalloc = same_object_or_null(r.pvalloc, home);
  r.own_usable_size = same_object_or_null(r.malloc_usable_size, home);
  g_real = r;
  if (!g_real.reallocarray) g_real.reallocarray = emulated_reallocarray;
  if (!g_real.aligned_alloc) g_real.aligned_alloc = emulated_aligned_alloc;
  if (!g_real.memalign) g_real.memalign = emulated_aligned_alloc;
  if (!g_real.valloc) g_real.valloc = emulated_valloc;
  if (!g_real.pvalloc) g_real.pvalloc = emulated_pvalloc;
  if (!g_real.malloc_usable_size) g_real.malloc_usable_size = no_usable_size;
  if (!g_real.own_usable_size) g_real.own_usable_size = no_usable_size;
  Dl_info info;
  if (g_real.malloc && dladdr(reinterpret_cast<void*>(g_real.malloc), &info) && info.dli_fname)
    g_path = info.dli_fname;
  const bool split = object_of(reinterpret_cast<void*>(r.free)) != home ||
                     object_of(reinterpret_cast<void*>(r.calloc)) != home ||
                     object_of(reinterpret_cast<void*>(r.realloc)) != home ||
                     object_of(reinterpret_cast<void*>(r.posix_memalign)) != home;
  resolve_real_cxx(home);
  if (split) {
    static const char msg[] =
        "allocscope: the allocator behind malloc does not define free, calloc, realloc and "
        "posix_memalign itself; the program mixes two allocators\n";
    sys::write(2, msg, sizeof msg - 1);
  }
}

}  // namespace

bool resolve_real_allocator() {
  int s = g_state.load(std::memory_order_acquire);
  if (__builtin_expect(s == kResolved, 1)) return true;
  if (s == kUnresolved) {
    int expected = kUnresolved;
    if (g_state.compare_exchange_strong(expected, kResolving, std::memory_order_acq_rel)) {
      const int saved = errno;
      resolve_all();
      errno = saved;
      if (!g_real.malloc || !g_real.free || !g_real.calloc || !g_real.realloc ||
          !g_real.posix_memalign) {
        static const char msg[] =
            "allocscope: cannot find the real malloc with dlsym(RTLD_NEXT); giving up\n";
        sys::write(2, msg, sizeof msg - 1);
        __builtin_trap();
      }
      g_state.store(kResolved, std::memory_order_release);
      __atomic_store_n(&g_real_resolved, true, __ATOMIC_RELEASE);
      return true;
    }
  }
  return g_state.load(std::memory_order_acquire) == kResolved;
}

const char* real_allocator_path() { return g_path; }

void* defined_ahead(const char* name) {
  void* fn = dlsym(RTLD_DEFAULT, name);
  if (!fn || &allocscope_preload_marker == nullptr) return fn;
  const void* shim = &allocscope_preload_marker;
  if (object_of(fn) == object_of(const_cast<void*>(shim))) return nullptr;
  // dlsym also answers an executable's undefined entry that carries a canonical address (a non-PIE
  // program that takes malloc's address): its calls go through its PLT to the definition after it.
  return const_cast<void*>(definition_ahead_of(fn, name, shim));
}

size_t describe_shadowed_entries(char* out, size_t cap) {
  if (cap == 0) return 0;
  out[0] = '\0';
  if (&allocscope_preload_marker == nullptr) return 0;
  static const char* const kEntries[][2] = {
      {"malloc", "malloc"}, {"free", "free"}, {"calloc", "calloc"}, {"realloc", "realloc"},
      {"_Znwm", "operator new"}, {"_ZdlPv", "operator delete"}};
  TextBuffer m(out, cap);
  for (const auto& e : kEntries) {
    void* fn = defined_ahead(e[0]);
    if (!fn) continue;
    Dl_info info;
    const char* where = dladdr(fn, &info) && info.dli_fname && *info.dli_fname
                            ? info.dli_fname
                            : "the executable";
    m.put("allocscope: ").put(e[1]).put(format::kNoteDefinedBy).put(where).put(format::kNoteAheadOfShim);
    if (e[0][0] == '_') m.put(" (only the C functions it calls, if any)");
    m.put("\n");
  }
  return __builtin_strlen(out);
}

void* bootstrap_alloc(size_t size, size_t align) {
  if (align < 16) align = 16;
  if (align > kPage || size > kPoolSize) return nullptr;
  size_t used = g_pool_used.load(std::memory_order_relaxed);
  for (;;) {
    const size_t start = (used + 16 + align - 1) & ~(align - 1);  // header fits before start
    const size_t end = start + ((size + 15) & ~size_t{15});
    if (end > kPoolSize) return nullptr;
    if (g_pool_used.compare_exchange_weak(used, end, std::memory_order_relaxed)) {
      std::memcpy(g_pool + start - 16, &size, sizeof size);
      return g_pool + start;  // the pool is zero-initialised and never reused: calloc-ready
    }
  }
}

size_t bootstrap_block_size(const void* p) {
  size_t size;
  std::memcpy(&size, static_cast<const unsigned char*>(p) - 16, sizeof size);
  return size;
}

}  // namespace allocscope
