// cxxpool — a multi-threaded C++ program of the usual kind, for bench/overhead: a thread pool
// (std::thread workers, a std::deque of std::function tasks under a std::mutex and a
// std::condition_variable) that runs many small tasks, each of which parses a batch of synthetic
// log lines into std::string tokens, counts them in a std::map and a std::unordered_map, keeps
// std::shared_ptr records in a std::vector, and hands a summary back through a std::future.
// The allocations come from operator new/delete (containers, strings, shared_ptr control blocks,
// std::function, the futures' shared states) and from malloc/free (strdup'd keys, a malloc'd
// scratch buffer), as in real C++ code.
//
// usage: cxxpool [THREADS [TASKS [LINES]]]   (default 4 threads, 8000 tasks, 60 lines per task)
// Prints `tasks=<n> tokens=<n> checksum=<hex>` on stdout; the figures depend on TASKS and LINES
// only, not on the thread count or the scheduling. Exit status 0, 1 on a bad argument.
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

namespace {

class ThreadPool {
 public:
  explicit ThreadPool(unsigned n) {
    for (unsigned i = 0; i < n; ++i) workers_.emplace_back([this] { work(); });
  }
  ~ThreadPool() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    for (auto& w : workers_) w.join();
  }
  template <class F>
  auto submit(F f) -> std::future<decltype(f())> {
    auto task = std::make_shared<std::packaged_task<decltype(f())()>>(std::move(f));
    auto result = task->get_future();
    {
      std::lock_guard<std::mutex> lock(mu_);
      queue_.emplace_back([task] { (*task)(); });
    }
    cv_.notify_one();
    return result;
  }

 private:
  void work() {
    for (;;) {
      std::function<void()> job;
      {
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait(lock, [this] { return stop_ || !queue_.empty(); });
        if (queue_.empty()) return;
        job = std::move(queue_.front());
        queue_.pop_front();
      }
      job();
    }
  }
  std::vector<std::thread> workers_;
  std::deque<std::function<void()>> queue_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
};

struct Record {
  std::string host;
  std::string path;
  std::vector<std::string> tags;
  int status;
  uint64_t bytes;
};

struct Summary {
  uint64_t tokens = 0;
  uint64_t checksum = 0;
};

uint64_t mix(uint64_t h, uint64_t v) {
  h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
  return h;
}

uint64_t hash_str(const std::string& s) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return h;
}

const char* const kWords[] = {"GET", "POST", "api", "v1", "v2", "users", "orders", "items",
                              "search", "static", "img", "css", "js", "login", "logout", "cart",
                              "checkout", "admin", "health", "metrics"};
constexpr unsigned kNWords = sizeof kWords / sizeof kWords[0];

// One synthetic access-log line, different for every (task, line).
std::string make_line(uint64_t seed) {
  uint64_t x = seed * 6364136223846793005ull + 1442695040888963407ull;
  auto next = [&x] {
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 29;
    return x;
  };
  std::string line = "10." + std::to_string(next() % 256) + "." + std::to_string(next() % 256) +
                     " " + kWords[next() % 2] + " ";
  const unsigned depth = 1 + next() % 5;
  for (unsigned i = 0; i < depth; ++i) {
    line += "/";
    line += kWords[2 + next() % (kNWords - 2)];
    if (next() % 3 == 0) line += std::to_string(next() % 10000);
  }
  line += " " + std::to_string(200 + (next() % 4) * 100 + next() % 5) + " " +
          std::to_string(next() % 100000);
  return line;
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  size_t start = 0;
  for (size_t i = 0; i <= s.size(); ++i) {
    if (i == s.size() || s[i] == sep) {
      if (i > start) out.emplace_back(s, start, i - start);
      start = i + 1;
    }
  }
  return out;
}

Summary run_task(uint64_t task, unsigned lines) {
  std::vector<std::shared_ptr<Record>> records;
  std::map<std::string, int> paths;
  std::unordered_map<std::string, uint64_t> bytes_by_host;
  std::vector<char*> keys;  // C strings, as code that talks to C libraries keeps them
  char* scratch = static_cast<char*>(std::malloc(256));
  Summary sum;
  for (unsigned i = 0; i < lines; ++i) {
    const std::string line = make_line(task * 1000003ull + i);
    const std::vector<std::string> fields = split(line, ' ');
    if (fields.size() != 5) continue;
    auto r = std::make_shared<Record>();
    r->host = fields[0];
    r->path = fields[2];
    r->tags = split(fields[2], '/');
    r->status = std::atoi(fields[3].c_str());
    r->bytes = std::strtoull(fields[4].c_str(), nullptr, 10);
    sum.tokens += fields.size() + r->tags.size();
    for (const std::string& t : r->tags) ++paths[t];
    bytes_by_host[r->host] += r->bytes;
    std::snprintf(scratch, 256, "%s:%d", r->host.c_str(), r->status);
    keys.push_back(strdup(scratch));
    records.push_back(std::move(r));
    if (records.size() > 16) records.erase(records.begin(), records.begin() + 8);
  }
  for (const auto& [path, n] : paths) sum.checksum = mix(sum.checksum, hash_str(path) * n);
  uint64_t hosts = 0;
  for (const auto& [host, b] : bytes_by_host) hosts += hash_str(host) ^ b;  // order-free
  sum.checksum = mix(sum.checksum, hosts);
  for (char* k : keys) {
    sum.checksum = mix(sum.checksum, std::strlen(k));
    std::free(k);
  }
  std::free(scratch);
  return sum;
}

bool parse(const char* s, unsigned long& out) {
  char* end = nullptr;
  out = std::strtoul(s, &end, 10);
  return *s && !*end && out > 0;
}

}  // namespace

int main(int argc, char** argv) {
  unsigned long threads = 4, tasks = 8000, lines = 60;
  if ((argc > 1 && !parse(argv[1], threads)) || (argc > 2 && !parse(argv[2], tasks)) ||
      (argc > 3 && !parse(argv[3], lines)) || argc > 4) {
    std::fprintf(stderr, "usage: cxxpool [THREADS [TASKS [LINES]]] (positive integers)\n");
    return 1;
  }
  std::vector<std::future<Summary>> results;
  results.reserve(tasks);
  Summary total;
  {
    ThreadPool pool(static_cast<unsigned>(threads));
    for (unsigned long t = 0; t < tasks; ++t)
      results.push_back(pool.submit([t, lines] { return run_task(t, lines); }));
    for (auto& f : results) {
      const Summary s = f.get();
      total.tokens += s.tokens;
      total.checksum += s.checksum;  // a sum: the same whatever order the tasks ran in
    }
  }
  std::printf("tasks=%lu tokens=%llu checksum=%016llx\n", tasks,
              static_cast<unsigned long long>(total.tokens),
              static_cast<unsigned long long>(total.checksum));
  return 0;
}
