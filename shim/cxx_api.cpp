// shim/cxx_api.cpp — the C++ operators: operator new/new[]/delete/delete[] with their nothrow,
// sized and align_val_t variants, forwarded to the next definition and counted as `new`, `new[]`,
// `delete`, `delete[]`.
//
// Built with -fexceptions (and nothing else of the C++ runtime): a throwing operator new of the
// next definition may throw std::bad_alloc through the shim's frame, and the cleanup of that frame
// (ThrowGuard, observe.h) must reopen the thread's gate.  The personality routine and
// _Unwind_Resume that the cleanup needs are the process's own, reached through the preload
// library's forwarders (entry_points.cpp).
//
// A C++ runtime's operator new that calls malloc (libstdc++'s) is one `new`.  Where the next
// definition is libstdc++'s and nothing ahead of the preload library replaced the operators, the
// plain and nothrow new and new[] call the real malloc themselves, and the plain, nothrow and sized
// delete and delete[] the real free, as libstdc++'s do: one pass through the shim per operator
// instead of two (the operator, then its malloc or free, forwarded as reentrant).  A new that gets
// no memory then calls libstdc++'s, which calls the new-handler or throws std::bad_alloc.  The
// aligned operators always go to the next definition.
//
// Without a next definition (no C++ runtime in the search order, e.g. a C program that dlopens a
// C++ library privately), the operators are served from the real malloc/free: a throwing new
// calls the program's new-handler while there is one, then throws std::bad_alloc through the
// runtime's std::__throw_bad_alloc when one is loaded, and otherwise says so on stderr and aborts
// the process — it never returns null.
#include <dlfcn.h>
#include <signal.h>

#include "allocscope_core.h"
#include "observe.h"
#include "peer_waits.h"
#include "process_state.h"
#include "real_allocator.h"
#include "recorder.h"
#include "sys.h"

namespace allocscope {

RealCxx g_real_cxx;

const char* const kCxxNames[kCxxOperators] = {
    "_Znwm",
    "_ZnwmRKSt9nothrow_t",
    "_ZnwmSt11align_val_t",
    "_ZnwmSt11align_val_tRKSt9nothrow_t",
    "_Znam",
    "_ZnamRKSt9nothrow_t",
    "_ZnamSt11align_val_t",
    "_ZnamSt11align_val_tRKSt9nothrow_t",
    "_ZdlPv",
    "_ZdlPvRKSt9nothrow_t",
    "_ZdlPvm",
    "_ZdlPvSt11align_val_t",
    "_ZdlPvSt11align_val_tRKSt9nothrow_t",
    "_ZdlPvmSt11align_val_t",
    "_ZdaPv",
    "_ZdaPvRKSt9nothrow_t",
    "_ZdaPvm",
    "_ZdaPvSt11align_val_t",
    "_ZdaPvSt11align_val_tRKSt9nothrow_t",
    "_ZdaPvmSt11align_val_t",
};

namespace {

const char* g_cxx_path = "";

[[noreturn]] void abort_process(const char* why) {
  sys::write(2, why, __builtin_strlen(why));
  sys::tgkill(sys::getpid(), sys::gettid(), SIGABRT);
  __builtin_trap();
}

// What a failing throwing operator new does when no C++ runtime's own is there to forward to.
void* new_failed_without_runtime() {
  using Throw = void (*)();
  auto throw_bad_alloc = reinterpret_cast<Throw>(dlsym(RTLD_DEFAULT, "_ZSt17__throw_bad_allocv"));
  if (throw_bad_alloc) throw_bad_alloc();  // does not return
  abort_process(
      "allocscope: operator new failed and no C++ runtime is loaded to throw std::bad_alloc; "
      "aborting\n");
}

// Calls the program's new-handler, if it has one; false when there is none.
bool call_new_handler() {
  using Handler = void (*)();
  using Get = Handler (*)();
  auto get = reinterpret_cast<Get>(dlsym(RTLD_DEFAULT, "_ZSt15get_new_handlerv"));
  Handler h = get ? get() : nullptr;
  if (!h) return false;
  h();
  return true;
}

void* malloc_or_null(size_t n) { return g_real.malloc(n ? n : 1); }
void* aligned_or_null(size_t n, size_t align) {
  void* p = nullptr;
  return g_real.posix_memalign(&p, align < sizeof(void*) ? sizeof(void*) : align, n ? n : 1) == 0
             ? p
             : nullptr;
}

void* fallback_new(size_t n) {
  for (;;) {
    if (void* p = malloc_or_null(n)) return p;
    if (!call_new_handler()) return new_failed_without_runtime();
  }
}
void* fallback_new_aligned(size_t n, size_t align) {
  for (;;) {
    if (void* p = aligned_or_null(n, align)) return p;
    if (!call_new_handler()) return new_failed_without_runtime();
  }
}
void* fallback_new_nothrow(size_t n, const void*) { return malloc_or_null(n); }
void* fallback_new_aligned_nothrow(size_t n, size_t align, const void*) {
  return aligned_or_null(n, align);
}
void fallback_delete(void* p) { g_real.free(p); }
void fallback_delete_2(void* p, size_t) { g_real.free(p); }
void fallback_delete_nothrow(void* p, const void*) { g_real.free(p); }
void fallback_delete_aligned_nothrow(void* p, size_t, const void*) { g_real.free(p); }
void fallback_delete_3(void* p, size_t, size_t) { g_real.free(p); }

template <class F>
void resolve_one(F& slot, unsigned index, F fallback) {
  void* f = dlsym(RTLD_NEXT, kCxxNames[index]);
  slot = f ? reinterpret_cast<F>(f) : fallback;
}

// libstdc++'s operators, for the calls that get no memory from the real malloc.
RealCxx g_libstdcxx;

// A new or new[] (`libstdcxx` names which of libstdc++'s) served from the real malloc; the nothrow
// forms pass their std::nothrow_t on.
template <void* (*RealCxx::*libstdcxx)(size_t)>
void* direct_new(size_t n) {
  void* p = g_real.malloc(n ? n : 1);
  return p ? p : (g_libstdcxx.*libstdcxx)(n);
}
template <void* (*RealCxx::*libstdcxx)(size_t, const void*)>
void* direct_new_nothrow(size_t n, const void* nt) {
  void* p = g_real.malloc(n ? n : 1);
  return p ? p : (g_libstdcxx.*libstdcxx)(n, nt);
}

// The next operators are libstdc++'s (they call malloc and free), and the ones they call in turn
// (::operator new, new[], delete and delete[]) are the preload library's, not replacements the
// program defines ahead of it (real_allocator.h defined_ahead, as the caveat of calls past the shim).
bool libstdcxx_next(const char* path) {
  const char* base = __builtin_strrchr(path, '/');
  base = base ? base + 1 : path;
  return __builtin_strncmp(base, "libstdc++.so", 12) == 0 && !defined_ahead("_Znwm") &&
         !defined_ahead("_Znam") && !defined_ahead("_ZdlPv") && !defined_ahead("_ZdaPv");
}

}  // namespace

void resolve_real_cxx(const void*) {
  RealCxx& r = g_real_cxx;
  unsigned i = 0;
  resolve_one(r.nw, i++, fallback_new);
  resolve_one(r.nw_nothrow, i++, fallback_new_nothrow);
  resolve_one(r.nw_aligned, i++, fallback_new_aligned);
  resolve_one(r.nw_aligned_nothrow, i++, fallback_new_aligned_nothrow);
  resolve_one(r.na, i++, fallback_new);
  resolve_one(r.na_nothrow, i++, fallback_new_nothrow);
  resolve_one(r.na_aligned, i++, fallback_new_aligned);
  resolve_one(r.na_aligned_nothrow, i++, fallback_new_aligned_nothrow);
  for (int array = 0; array < 2; ++array) {
    resolve_one(array ? r.da : r.dl, i++, fallback_delete);
    resolve_one(array ? r.da_nothrow : r.dl_nothrow, i++, fallback_delete_nothrow);
    resolve_one(array ? r.da_sized : r.dl_sized, i++, fallback_delete_2);
    resolve_one(array ? r.da_aligned : r.dl_aligned, i++, fallback_delete_2);
    resolve_one(array ? r.da_aligned_nothrow : r.dl_aligned_nothrow, i++,
                fallback_delete_aligned_nothrow);
    resolve_one(array ? r.da_sized_aligned : r.dl_sized_aligned, i++, fallback_delete_3);
  }
  Dl_info info;
  void* nw = dlsym(RTLD_NEXT, kCxxNames[0]);
  g_cxx_path = nw && dladdr(nw, &info) && info.dli_fname ? info.dli_fname : "";
  if (nw && libstdcxx_next(g_cxx_path)) {
    g_libstdcxx = r;
    r.nw = direct_new<&RealCxx::nw>;
    r.nw_nothrow = direct_new_nothrow<&RealCxx::nw_nothrow>;
    r.na = direct_new<&RealCxx::na>;
    r.na_nothrow = direct_new_nothrow<&RealCxx::na_nothrow>;
    r.dl = r.da = fallback_delete;
    r.dl_nothrow = r.da_nothrow = fallback_delete_nothrow;
    r.dl_sized = r.da_sized = fallback_delete_2;
  }
}

const char* real_cxx_path() { return g_cxx_path; }

void call_unwound(Op o, uint64_t size) {
  ThreadCtx& t = t_ctx;
  Slot* s = t.slot;
  if (s) {
    Counter& c = counter_for_write(s, op_index(o), bucket_of(size));
    bump(c.failed, 1);
    bump(c.bytes, 0 - size);
    s->h.inside_since.store(0, std::memory_order_relaxed);  // the timed call, if it was one, is over
  }
  t.cpu_sampled = 0;
  t.flt_valid = 0;  // the call's faults are not known
  drop_probe();  // a look that this call was to probe is kept without it
  set_gate(t, 1, 0);  // decide on timing at the next call
}

}  // namespace allocscope

using namespace allocscope;

namespace {

template <class Real>
__attribute__((always_inline)) inline void* observe_new(Op o, size_t size, Real real) {
  if (!real_allocator_ready()) return bootstrap_alloc(size, 16);
  return observe<true>(o, size, real, is_null, same);
}

template <class Real>
__attribute__((always_inline)) inline void* observe_new_nothrow(Op o, size_t size, Real real) {
  if (!real_allocator_ready()) return bootstrap_alloc(size, 16);
  return observe(o, size, real, is_null, same);
}

template <class Real>
__attribute__((always_inline)) inline void observe_delete(Op o, void* ptr, Real real,
                                                          bool has_size = false, size_t size = 0) {
  if (is_bootstrap_block(ptr) || !real_allocator_ready()) return;
  release(o, ptr, real, has_size, size);
}

}  // namespace

extern "C" {

#define NEW_FAMILY(prefix, OP, f)                                                              \
  void* allocscope_##prefix(size_t n) {                                                        \
    return observe_new(OP, n, [=] { return g_real_cxx.f(n); });                                \
  }                                                                                            \
  void* allocscope_##prefix##_nothrow(size_t n, const void* nt) {                              \
    return observe_new_nothrow(OP, n, [=] { return g_real_cxx.f##_nothrow(n, nt); });          \
  }                                                                                            \
  void* allocscope_##prefix##_aligned(size_t n, size_t a) {                                    \
    if (!real_allocator_ready()) return bootstrap_alloc(n, a);                                 \
    return observe<true>(OP, n, [=] { return g_real_cxx.f##_aligned(n, a); }, is_null, same);  \
  }                                                                                            \
  void* allocscope_##prefix##_aligned_nothrow(size_t n, size_t a, const void* nt) {            \
    if (!real_allocator_ready()) return bootstrap_alloc(n, a);                                 \
    return observe(OP, n, [=] { return g_real_cxx.f##_aligned_nothrow(n, a, nt); }, is_null,   \
                   same);                                                                      \
  }

NEW_FAMILY(new, Op::New, nw)
NEW_FAMILY(new_array, Op::NewArray, na)

#define DELETE_FAMILY(prefix, OP, f)                                                           \
  void allocscope_##prefix(void* p) { observe_delete(OP, p, [=] { g_real_cxx.f(p); }); }       \
  void allocscope_##prefix##_nothrow(void* p, const void* nt) {                                \
    observe_delete(OP, p, [=] { g_real_cxx.f##_nothrow(p, nt); });                             \
  }                                                                                            \
  void allocscope_##prefix##_sized(void* p, size_t n) {                                        \
    observe_delete(OP, p, [=] { g_real_cxx.f##_sized(p, n); }, true, n);                       \
  }                                                                                            \
  void allocscope_##prefix##_aligned(void* p, size_t a) {                                      \
    observe_delete(OP, p, [=] { g_real_cxx.f##_aligned(p, a); });                              \
  }                                                                                            \
  void allocscope_##prefix##_aligned_nothrow(void* p, size_t a, const void* nt) {              \
    observe_delete(OP, p, [=] { g_real_cxx.f##_aligned_nothrow(p, a, nt); });                  \
  }                                                                                            \
  void allocscope_##prefix##_sized_aligned(void* p, size_t n, size_t a) {                      \
    observe_delete(OP, p, [=] { g_real_cxx.f##_sized_aligned(p, n, a); }, true, n);            \
  }

DELETE_FAMILY(delete, Op::Delete, dl)
DELETE_FAMILY(delete_array, Op::DeleteArray, da)

}  // extern "C"
