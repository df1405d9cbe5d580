#include "run/lock_test.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>
#include <xxhash.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <tuple>

#include "allocscope/format.h"
#include "profile/peek.h"
#include "run/child_process.h"

namespace allocscope {

namespace fs = std::filesystem;

namespace {

constexpr double kProbeSeconds = 2.0;  // the probe's own bound: a quiet machine needs a fraction

struct TestResult {
  format::LockTest test{};
  std::string detail;
};

TestResult not_run(format::LockTestStatus status, format::Libc libc, std::string detail) {
  TestResult r;
  r.test.status = static_cast<uint8_t>(status);
  r.test.libc = static_cast<uint8_t>(libc);
  r.detail = std::move(detail);
  return r;
}

bool is_file(const fs::path& path) {
  std::error_code ec;
  return fs::is_regular_file(path, ec);
}

std::string canonical_or_same(const std::string& path) {
  std::error_code ec;
  const fs::path c = fs::canonical(path, ec);
  return ec ? path : c.string();
}

// The probe built for `libc`: beside the shim once installed (lib/allocscope), or in the build
// tree's lockprobe directory beside its shim directory.
std::optional<fs::path> probe_for(const fs::path& shim, format::Libc libc) {
  const std::string name = libc == format::Libc::Musl ? "allocscope-lockprobe-musl" : "allocscope-lockprobe-glibc";
  for (const fs::path& candidate : {shim.parent_path() / name, shim.parent_path() / ".." / "lockprobe" / name}) {
    if (is_file(candidate)) return candidate.lexically_normal();
  }
  return std::nullopt;
}

// The C library's own malloc: nothing to preload.
bool is_the_c_library(const std::string& allocator) {
  const std::string base = fs::path(allocator).filename().string();
  return base.starts_with("libc.so") || base.starts_with("libc-") || base.starts_with("ld-musl-") ||
         base.starts_with("libc.musl-");
}

std::vector<std::string> split(const std::string& text, char sep) {
  std::vector<std::string> parts;
  std::string part;
  std::istringstream in(text);
  while (std::getline(in, part, sep)) {
    if (!part.empty()) parts.push_back(part);
  }
  return parts;
}

// What the probe keeps of the program's environment: what tunes an allocator or finds its
// libraries — glibc's tunables and MALLOC_* variables (jemalloc's MALLOC_CONF too), jemalloc's,
// tcmalloc's, mimalloc's and scudo's own — and nothing else: a variable that names a file for the
// program or its allocator to write (a heap profile, a report) must not make the probe write it.
constexpr std::string_view kProbeEnvironment[] = {
    "GLIBC_TUNABLES=", "MALLOC_", "JE_MALLOC_CONF=", "_RJEM_MALLOC_CONF=", "TCMALLOC_", "MIMALLOC_",
    "SCUDO_OPTIONS=", "LD_LIBRARY_PATH=", "LD_BIND_NOW=", "PATH=", "LANG=", "LC_ALL="};

// The program's environment for the probe (kProbeEnvironment), without the shim, with the
// allocator preloaded first unless it is the C library's or already preloaded.
std::vector<std::string> probe_environment(const std::vector<std::string>& env, const fs::path& shim,
                                           const std::string& allocator) {
  std::vector<std::string> out;
  std::vector<std::string> preload;
  const std::string shim_path = canonical_or_same(shim.string());
  for (const std::string& entry : env) {
    if (entry.starts_with("LD_PRELOAD=")) {
      for (const std::string& lib : split(entry.substr(std::strlen("LD_PRELOAD=")), ':')) {
        if (canonical_or_same(lib) != shim_path) preload.push_back(lib);
      }
      continue;
    }
    if (std::any_of(std::begin(kProbeEnvironment), std::end(kProbeEnvironment),
                    [&](std::string_view kept) { return entry.starts_with(kept); }))
      out.push_back(entry);
  }
  const std::string wanted = canonical_or_same(allocator);
  bool present = is_the_c_library(allocator);
  for (const std::string& lib : preload) present = present || canonical_or_same(lib) == wanted;
  if (!present) preload.insert(preload.begin(), allocator);
  if (!preload.empty()) {
    std::string list;
    for (const std::string& lib : preload) list += (list.empty() ? "" : ":") + lib;
    out.push_back("LD_PRELOAD=" + list);
  }
  return out;
}

const char* const kPhaseNames[format::kLockTestPhases] = {"apart", "same"};
const char* const kWhereNames[format::kLockTestWheres] = {"outside", "malloc", "free", "malloc_syscall"};
const char* const kOutcomeNames[format::kLockTestOutcomes] = {"passed", "stopped", "stopped_later", "preempted",
                                                              "other"};

template <size_t N>
int index_of(const char* const (&names)[N], const std::string& name) {
  for (size_t i = 0; i < N; ++i) {
    if (name == names[i]) return static_cast<int>(i);
  }
  return -1;
}

// Reads the probe's output (lockprobe.c says its form) into `r`; false when it is not that form.
bool parse_probe_output(const std::string& text, TestResult& r, std::string& tested) {
  std::istringstream in(text);
  std::string line;
  if (!std::getline(in, line) || line != "allocscope-lockprobe 1") return false;
  bool counted = false;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string a, b, c, d, e;
    uint64_t n = 0;
    fields >> a;
    if (a == "allocator") {
      std::getline(fields >> std::ws, tested);
    } else if (a == "lost") {
      fields >> n;
      r.test.lost = static_cast<uint32_t>(n);
    } else {
      fields >> b >> c >> d >> e >> n;
      const int phase = index_of(kPhaseNames, a), where = index_of(kWhereNames, b), outcome = index_of(kOutcomeNames, e);
      if (!fields || phase < 0 || where < 0 || outcome < 0) return false;
      r.test.counts[phase][where][outcome] += static_cast<uint32_t>(n);
      counted = true;
    }
  }
  return counted;
}

TestResult run_probe(const fs::path& probe, format::Libc libc, const std::string& allocator,
                     const std::vector<std::string>& env, const fs::path& shim) {
  // Two files: the counts, and whatever the probe and the allocator print (a statistics dump at
  // exit), which only says why a probe failed.
  const fs::path dir = fs::absolute(fs::temp_directory_path());
  std::string counts_name = (dir / "allocscope-lockprobe-XXXXXX").string();
  std::string log_name = counts_name;
  const int counts_fd = mkstemp(counts_name.data());
  const int log_fd = counts_fd < 0 ? -1 : mkstemp(log_name.data());
  if (counts_fd >= 0) close(counts_fd);
  if (log_fd >= 0) close(log_fd);
  std::error_code ec;
  if (counts_fd < 0 || log_fd < 0) {
    if (counts_fd >= 0) fs::remove(counts_name, ec);
    return not_run(format::LockTestStatus::Failed, libc,
                   fmt::format("cannot create a file in {} for the lock test's output", dir.string()));
  }
  // Its own working directory, removed after: an allocator that writes files where it runs (a heap
  // profile at exit) writes them there, not beside the program's.
  std::string work_name = (dir / "allocscope-lockprobe-XXXXXX").string();
  if (!mkdtemp(work_name.data())) {
    fs::remove(counts_name, ec);
    fs::remove(log_name, ec);
    return not_run(format::LockTestStatus::Failed, libc,
                   fmt::format("cannot create a directory in {} for the lock test", dir.string()));
  }
  ChildSpec spec;
  spec.directory = work_name;
  spec.program = probe;
  spec.argv = {probe.string(), "--max-seconds", fmt::format("{}", kProbeSeconds), "--output", counts_name};
  spec.env = probe_environment(env, shim, allocator);
  spec.output = log_name;
  const ChildResult child = run_child(spec);
  const auto slurp = [](const std::string& name) {
    std::ifstream in(name);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
  };
  const std::string counts = slurp(counts_name), last = last_output_line(log_name);
  fs::remove(counts_name, ec);
  fs::remove(log_name, ec);
  fs::remove_all(work_name, ec);
  const std::string how = fmt::format("{} with {}", probe.filename().string(),
                                      is_the_c_library(allocator) ? "the C library's malloc" : allocator);
  if (child.status != 0) {
    return not_run(format::LockTestStatus::Failed, libc,
                   fmt::format("{} exited with status {}{}", how, child.status, last.empty() ? "" : ": " + last));
  }
  TestResult r;
  r.test.status = static_cast<uint8_t>(format::LockTestStatus::Ran);
  r.test.libc = static_cast<uint8_t>(libc);
  std::string tested;
  if (!parse_probe_output(counts, r, tested)) {
    return not_run(format::LockTestStatus::Failed, libc, fmt::format("{}: its output is not the lock test's", how));
  }
  if (canonical_or_same(tested) != canonical_or_same(allocator)) {
    return not_run(format::LockTestStatus::Failed, libc,
                   fmt::format("{}: the test ran on {}, not on the program's allocator", how, tested));
  }
  r.detail = how;
  return r;
}

TestResult lock_test_for(const ProcessRecord& process, const std::vector<std::string>& env, const fs::path& shim) {
  const auto libc = static_cast<format::Libc>(process.info.libc);
  const std::string& allocator = process.allocator;
  if (allocator.empty()) return not_run(format::LockTestStatus::NotRun, libc, "the profile does not name the allocator");
  if (canonical_or_same(allocator) == canonical_or_same(process.exe)) {
    return not_run(format::LockTestStatus::NotRun, libc,
                   fmt::format("the allocator is linked into the program ({}): the test cannot load it alone", allocator));
  }
  const std::optional<fs::path> probe = probe_for(shim, libc);
  if (!probe) {
    return not_run(format::LockTestStatus::NotRun, libc,
                   fmt::format("allocscope-lockprobe-{} is not installed beside {}",
                               libc == format::Libc::Musl ? "musl" : "glibc", shim.filename().string()));
  }
  return run_probe(*probe, libc, allocator, env, shim);
}

// Appends the chunk with one write(2) on an O_APPEND descriptor, as the shim writes its chunks.
void append_chunk(const fs::path& profile, const TestResult& result) {
  format::LockTest test = result.test;
  test.detail_len = static_cast<uint32_t>(result.detail.size());
  std::string payload(reinterpret_cast<const char*>(&test), sizeof test);
  payload += result.detail;
  format::ChunkHeader header{};
  header.magic = format::kChunkMagic;
  header.type = static_cast<uint16_t>(format::ChunkType::LockTest);
  header.payload_size = static_cast<uint32_t>(payload.size());
  header.header_check = static_cast<uint32_t>(XXH3_64bits(&header, format::kChunkHeaderChecked));
  header.checksum = XXH3_64bits(payload.data(), payload.size());
  std::string chunk(reinterpret_cast<const char*>(&header), sizeof header);
  chunk += payload;
  const int fd = open(profile.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC);
  if (fd < 0) return;
  const ssize_t wrote = write(fd, chunk.data(), chunk.size());
  (void)wrote;  // a profile that cannot take it reads as one without a lock test
  close(fd);
}

}  // namespace

void add_lock_tests(const std::vector<fs::path>& profiles, const std::vector<std::string>& env, const fs::path& shim) {
  constexpr size_t kMostTests = 4;  // distinct allocators tested for one run
  std::map<std::tuple<uint8_t, std::string>, TestResult> done;
  for (const fs::path& profile : profiles) {
    std::optional<ProcessRecord> process;
    try {
      if (threads_with_statistics(profile, 2) < 2) continue;
      process = read_process(profile);
    } catch (const std::exception&) {
      continue;  // report says what is wrong with it
    }
    if (!process) continue;
    const auto key = std::make_tuple(process->info.libc, canonical_or_same(process->allocator));
    auto it = done.find(key);
    if (it == done.end()) {
      if (done.size() >= kMostTests) continue;
      it = done.emplace(key, lock_test_for(*process, env, shim)).first;
    }
    append_chunk(profile, it->second);
  }
}

}  // namespace allocscope
