// cxx.cpp — C++ with a preloaded recorder: new and delete in all their forms, exceptions thrown
// and caught on many threads at once (each exception object comes from malloc), the nothrow and
// throwing behaviour of failing new, containers, and destructors that allocate while threads and
// the program end (thread_local objects, a static object).  glibc only.
//
//   cxx [no-failing-new]
//
// Prints one line per check, ending with "cxx: done", and exits 0 (1 if a check failed).  The
// tests run it alone and behind each allocator (jemalloc, tcmalloc, mimalloc, scudo); some of them
// define operator new themselves, so how many calls reach malloc varies, but what the program
// prints must not.  Some of those end the process on a failed throwing new (mimalloc aborts,
// scudo crashes) instead of throwing bad_alloc: "no-failing-new" leaves that check out.
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <new>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace {

std::atomic<long> sink{0};
int failures = 0;

void say(const std::string& line) {
  const std::string text = "cxx: " + line + "\n";
  if (write(1, text.data(), text.size()) < 0) _exit(3);
}

void check(bool ok, const std::string& what) {
  say(what + (ok ? ": ok" : ": FAILED"));
  if (!ok) failures++;
}

// Allocates when constructed and again when destroyed.
struct Allocating {
  std::string name;
  explicit Allocating(const char* n) : name(std::string(n) + std::string(300, '.')) {}
  ~Allocating() {
    std::vector<std::string> parts(8, std::string(500, 'x'));
    sink += static_cast<long>(parts.size() + name.size());
  }
};

thread_local Allocating per_thread("thread_local");
Allocating at_exit_object("static");

struct alignas(128) Wide {
  unsigned char bytes[384];
};

int throw_and_catch(int rounds) {
  int caught = 0;
  for (int i = 0; i < rounds; i++) {
    try {
      if (i % 2) throw std::runtime_error("round " + std::to_string(i) + std::string(100, '!'));
      throw std::vector<int>(50, i);
    } catch (const std::runtime_error& e) {
      caught += e.what()[0] == 'r';
    } catch (const std::vector<int>& v) {
      caught += v.size() == 50;
    }
  }
  return caught;
}

}  // namespace

int main(int argc, char** argv) {
  const bool failing_new = !(argc == 2 && std::strcmp(argv[1], "no-failing-new") == 0);
  // Scalar, array, sized and aligned forms.
  auto* one = new std::string(1000, 'a');
  auto* many = new int[1000]();
  auto* wide = new Wide[3];
  check(reinterpret_cast<std::uintptr_t>(wide) % 128 == 0, "aligned new[]");
  auto uniq = std::make_unique<Wide>();
  check(reinterpret_cast<std::uintptr_t>(uniq.get()) % 128 == 0, "aligned make_unique");
  delete one;
  delete[] many;
  delete[] wide;

  // Failing new: nothrow gives null, the throwing form throws bad_alloc.
  volatile std::size_t huge = SIZE_MAX / 4;
  char* none = new (std::nothrow) char[huge];
  check(none == nullptr, "new (nothrow) of SIZE_MAX/4 is null");
  if (failing_new) {
    bool threw = false;
    try {
      char* never = new char[huge];
      never[0] = 1;
    } catch (const std::bad_alloc&) {
      threw = true;
    }
    check(threw, "new of SIZE_MAX/4 throws bad_alloc");
  }

  // Exceptions on 8 threads at once; each thread also builds and destroys its thread_local.
  std::vector<std::thread> threads;
  std::atomic<int> caught{0};
  for (int t = 0; t < 8; t++) {
    threads.emplace_back([&caught] {
      caught += throw_and_catch(2000);
      sink += static_cast<long>(per_thread.name.size());
    });
  }
  for (auto& t : threads) t.join();
  check(caught == 8 * 2000, "16000 exceptions thrown and caught on 8 threads");

  // Containers.
  std::map<int, std::string> table;
  for (int i = 0; i < 20000; i++) table[i * 7 % 20011] = std::to_string(i);
  std::vector<std::unique_ptr<std::vector<char>>> vectors;
  for (int i = 0; i < 2000; i++) vectors.push_back(std::make_unique<std::vector<char>>(i, 'v'));
  check(table.size() == 20000 && vectors.back()->size() == 1999, "containers");
  table.clear();
  vectors.clear();

  sink += static_cast<long>(per_thread.name.size() + at_exit_object.name.size());
  say("done");
  return failures != 0;
}
