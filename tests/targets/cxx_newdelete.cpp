// cxx_newdelete.cpp — C++ allocation paths: new/delete, new[]/delete[], over-aligned new,
// std::vector growth, std::string, a thrown and caught exception, a std::thread.
// glibc only (C++ is not built against musl). Prints "ok" and exits 0 if every check passed;
// prints "FAIL: ..." lines on stderr and exits 1 otherwise.
//
// Expected calls, at the operator level and at the C level (libstdc++'s operator new calls
// malloc, its over-aligned operator new calls aligned_alloc, operator delete calls free):
//
//   what                      operator calls                           C-level calls
//   ------------------------  ---------------------------------------  ------------------------
//   scalar new/delete         5 x new(8) (std::uint64_t), 5 x delete   5 malloc(8), 5 free
//   array new[]/delete[]      3 x new[] of char: 10, 1000, 100000;     3 malloc, 3 free
//                             3 x delete[]
//   over-aligned new/delete   2 x new(128, align_val_t(64)) (struct    2 aligned_alloc(64, 128),
//                             alignas(64) of 128 bytes), 2 x delete    2 free
//   std::vector<int> growth   1000 push_backs, no reserve; libstdc++   11 malloc, 11 free
//                             doubles: 11 x new of 4, 8, 16, ...,
//                             4096 bytes, each deleted
//   std::string               s(100,'x'): new(101); s.append(200 'y')  2 malloc, 2 free
//                             -> new(301) (capacity 300), new(101)
//                             deleted; s deleted
//   exception                 throw std::runtime_error(std::string(    3 malloc, 3 free
//                             120,'e')), caught: the temporary string
//                             new(121), the exception's message (COW
//                             string, malloc 145), the exception object
//                             (__cxa_allocate_exception, malloc 144)
//   std::thread               new(16) for the thread state (deleted    5 malloc, 5 free
//                             by the thread), and inside the thread
//                             4 x new(24) / delete
//
// Totals from the program's own code:
//   malloc 29 (5x8, 10, 1000, 100000, 4/8/16/.../4096, 101, 301, 121, 145, 144, 16, 4x24),
//   aligned_alloc 2 (128 bytes, a=64), free 31; nothing of these is live at exit.
//   By size, malloc: 8 -> 6 (5 scalar + 1 vector), 16 -> 2 (vector + thread state),
//   24 -> 4, every other size above -> 1.
// Added by the runtimes (glibc 2.36, libstdc++ 12; other versions may differ):
//   libstdc++ allocates its emergency exception pool at start-up, malloc(72704), never freed
//   (live at exit); glibc's pthread_create makes a calloc(304) TLS vector for the new thread
//   (kept with the cached stack, live at exit) and thread exit adds a couple of free(NULL).
// The numbers that are exact for every allocator and runtime version are the per-size counts of
// the rows above, except the exception row (sizes depend on the libstdc++ version).
// Nothing else is printed; output uses write(2).
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <new>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace {

int g_failures = 0;

void fail(const char* what) {
  char buf[200];
  int n = std::snprintf(buf, sizeof buf, "FAIL: %s\n", what);
  if (n > 0) (void)!write(2, buf, static_cast<size_t>(n));
  g_failures++;
}

struct alignas(64) Aligned {
  unsigned char bytes[128];
};
static_assert(sizeof(Aligned) == 128);

// Keeps the optimiser from eliding new/delete pairs (allowed since C++14).
template <class T>
T* escape(T* p) {
  T* volatile v = p;
  return v;
}

void scalar_new_delete() {
  std::uint64_t* p[5];
  for (int i = 0; i < 5; i++) p[i] = escape(new std::uint64_t(static_cast<std::uint64_t>(i) * 7));
  for (int i = 0; i < 5; i++)
    if (*p[i] != static_cast<std::uint64_t>(i) * 7) fail("scalar new value");
  for (int i = 0; i < 5; i++) delete p[i];
}

void array_new_delete() {
  static constexpr std::size_t sizes[3] = {10, 1000, 100000};
  for (std::size_t n : sizes) {
    char* a = escape(new char[n]);
    std::memset(a, 'a', n);
    if (a[0] != 'a' || a[n - 1] != 'a') fail("array new contents");
    delete[] a;
  }
}

void aligned_new_delete() {
  for (int i = 0; i < 2; i++) {
    Aligned* a = escape(new Aligned);
    if (reinterpret_cast<std::uintptr_t>(a) % 64 != 0) fail("over-aligned new misaligned");
    a->bytes[0] = a->bytes[127] = 1;
    delete a;
  }
}

void vector_growth() {
  std::vector<int> v;
  for (int i = 0; i < 1000; i++) v.push_back(i);
  long sum = 0;
  for (int x : v) sum += x;
  if (sum != 999L * 1000 / 2) fail("vector contents");
  if (v.capacity() != 1024) fail("vector growth is not doubling (capacity != 1024)");
}

void string_ops() {
  std::string s(100, 'x');
  char tail[201];
  std::memset(tail, 'y', 200);
  tail[200] = '\0';
  s.append(tail, 200);
  if (s.size() != 300 || s[0] != 'x' || s[299] != 'y') fail("string contents");
}

void exception_roundtrip() {
  bool caught = false;
  try {
    throw std::runtime_error(std::string(120, 'e'));
  } catch (const std::runtime_error& e) {
    caught = std::strlen(e.what()) == 120;
  }
  if (!caught) fail("exception not caught with its message");
}

void thread_roundtrip() {
  int result = 0;
  std::thread t([&result] {
    int sum = 0;
    for (int i = 0; i < 4; i++) {
      struct Node {
        int v[6];
      };
      Node* n = escape(new Node{{i, i, i, i, i, i}});
      sum += n->v[5];
      delete n;
    }
    result = sum;
  });
  t.join();
  if (result != 0 + 1 + 2 + 3) fail("thread result");
}

}  // namespace

int main() {
  scalar_new_delete();
  array_new_delete();
  aligned_new_delete();
  vector_growth();
  string_ops();
  exception_roundtrip();
  thread_roundtrip();
  if (g_failures != 0) {
    (void)!write(1, "FAILED\n", 7);
    return 1;
  }
  return write(1, "ok\n", 3) == 3 ? 0 : 1;
}
