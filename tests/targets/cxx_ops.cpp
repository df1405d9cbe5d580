// cxx_ops.cpp — every C++ allocation operator, called explicitly, across threads, with exact
// counts.  glibc only (C++ is not built against musl).
//
//   cxx_ops THREADS ITERS [throw]
//
// Each of THREADS threads (pthreads: no std::thread state is allocated) runs ITERS iterations; in
// iteration i, with s = 8 + 8 * (i % 64) (8..512 bytes):
//
//   call                                          counted as
//   operator new(s)            / delete(p)        new s,   delete (unsized)
//   operator new(s, nothrow)   / delete(p, s)     new s,   delete s (sized)
//   operator new(s, align 64)  / delete(p, s, 64) new s,   delete s (sized, aligned)
//   operator new[](s)          / delete[](p, s)   new[] s, delete[] s (sized)
//   operator new[](s, align 32, nothrow) / delete[](p, align 32)
//                                                 new[] s, delete[] (unsized, aligned)
//   operator new(s, nothrow)   / delete(p, nothrow)
//                                                 new s,   delete (unsized)
//
// so per thread: new 4·ITERS, new[] 2·ITERS, delete 4·ITERS, delete[] 2·ITERS, each size
// s getting ITERS/64 (when 64 divides ITERS) of every row.  With `throw`, the main thread first
// asks for SIZE_MAX/2 bytes from the throwing operator new (std::bad_alloc, caught) and from the
// nothrow one (null): 2 more `new`, both failed, then makes one new(24) / delete(p, 24): the
// thread that threw is observed again.  Then the threads run as above.  Nothing else calls a C++ operator.  Prints "ok" and exits
// 0 when every block was usable; output uses write(2).
#include <pthread.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <new>

namespace {

long g_iters = 0;

template <class T>
T* escape(T* p) {
  T* volatile v = p;
  return v;
}

void touch(void* p, size_t n) {
  std::memset(p, 0x5a, n);
  if (static_cast<volatile unsigned char*>(p)[n - 1] != 0x5a) std::abort();
}

void* worker(void*) {
  for (long i = 0; i < g_iters; i++) {
    const size_t s = 8 + 8 * static_cast<size_t>(i % 64);
    void* a = escape(::operator new(s));
    touch(a, s);
    ::operator delete(a);
    void* b = escape(::operator new(s, std::nothrow));
    touch(b, s);
    ::operator delete(b, s);
    void* c = escape(::operator new(s, std::align_val_t(64)));
    if (reinterpret_cast<uintptr_t>(c) % 64) std::abort();
    touch(c, s);
    ::operator delete(c, s, std::align_val_t(64));
    void* d = escape(::operator new[](s));
    touch(d, s);
    ::operator delete[](d, s);
    void* e = escape(::operator new[](s, std::align_val_t(32), std::nothrow));
    if (!e || reinterpret_cast<uintptr_t>(e) % 32) std::abort();
    touch(e, s);
    ::operator delete[](e, std::align_val_t(32));
    void* f = escape(::operator new(s, std::nothrow));
    touch(f, s);
    ::operator delete(f, std::nothrow);
  }
  return nullptr;
}

}  // namespace

int main(int argc, char** argv) {
  const int threads = argc > 1 ? std::atoi(argv[1]) : 4;
  g_iters = argc > 2 ? std::atol(argv[2]) : 6400;
  if (argc > 3 && std::strcmp(argv[3], "throw") == 0) {
    bool threw = false;
    try {
      escape(::operator new(SIZE_MAX / 2));
    } catch (const std::bad_alloc&) {
      threw = true;
    }
    if (!threw || escape(::operator new(SIZE_MAX / 2, std::nothrow)) != nullptr) {
      (void)!write(2, "FAIL: a huge new succeeded\n", 27);
      return 1;
    }
    void* p = escape(::operator new(24));
    touch(p, 24);
    ::operator delete(p, 24);
  }
  pthread_t t[64];
  if (threads < 1 || threads > 64) return 2;
  for (int i = 0; i < threads; i++)
    if (pthread_create(&t[i], nullptr, worker, nullptr) != 0) return 3;
  for (int i = 0; i < threads; i++) pthread_join(t[i], nullptr);
  return write(1, "ok\n", 3) == 3 ? 0 : 1;
}
