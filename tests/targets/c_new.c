/* c_new.c — a C program that calls the C++ operators new and delete by their mangled names,
 * found with dlsym: with no C++ runtime loaded, only the shim defines them (its fallback serves
 * them from malloc/free).  Without the shim they do not exist: prints "no operator new", exits 3.
 *
 *   c_new          100 x (_Znwm(32), _ZdlPv): new 100, delete 100, no malloc or free of its own
 *   c_new fail     the same, then _Znwm(SIZE_MAX/2), which must not return: with no C++ runtime
 *                  to throw std::bad_alloc, the shim says so and aborts (SIGABRT).  Exits 4 if
 *                  it returned.
 * Prints "ok" on success (write(2)). */
#include <dlfcn.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char** argv) {
  void* (*nw)(size_t) = (void* (*)(size_t))dlsym(RTLD_DEFAULT, "_Znwm");
  void (*dl)(void*) = (void (*)(void*))dlsym(RTLD_DEFAULT, "_ZdlPv");
  if (!nw || !dl) {
    (void)!write(1, "no operator new\n", 16);
    return 3;
  }
  for (int i = 0; i < 100; i++) {
    char* volatile p = nw(32);
    memset(p, 'x', 32);
    dl(p);
  }
  if (argc > 1 && strcmp(argv[1], "fail") == 0) {
    void* volatile q = nw(SIZE_MAX / 2);
    (void)q;
    return 4;
  }
  return write(1, "ok\n", 3) == 3 ? 0 : 1;
}
