// cxx_own_new.cpp — a program that replaces the plain operator new and delete (and nothing else),
// as [new.delete] allows.  libstdc++'s new[], nothrow new and sized delete call ::operator new and
// ::operator delete, which are then this program's: under the shim they must still be.
//
//   cxx_own_new
//
// Makes 10 new[] / delete[] (sized), 10 nothrow new / delete and 10 plain new / delete of 48 B,
// then prints "own_new=<n> own_delete=<n>": how many times its own operators ran (30 and 30 with
// libstdc++), and exits 0.  Output uses write(2); glibc only.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <new>

namespace {
int g_new = 0, g_delete = 0;

template <class T>
T* escape(T* p) {
  T* volatile v = p;
  return v;
}
}  // namespace

void* operator new(std::size_t n) {
  g_new++;
  if (void* p = std::malloc(n ? n : 1)) return p;
  throw std::bad_alloc();
}

void operator delete(void* p) noexcept {
  if (p) g_delete++;
  std::free(p);
}

int main() {
  for (int i = 0; i < 10; i++) {
    char* a = escape(new char[48]);
    delete[] a;
    int* b = escape(new (std::nothrow) int[12]);
    ::operator delete[](b, std::nothrow);
    void* c = escape(::operator new(48));
    ::operator delete(c);
  }
  char line[64];
  const int len = std::snprintf(line, sizeof line, "own_new=%d own_delete=%d\n", g_new, g_delete);
  return write(1, line, static_cast<size_t>(len)) == len ? 0 : 1;
}
