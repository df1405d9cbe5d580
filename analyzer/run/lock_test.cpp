#include "run/lock_test.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>
#include <xxhash.h>

#include <algorithm>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <tuple>

#include "allocscope/format.h"
#include "profile/format_names.h"
#include "profile/peek.h"
#include "run/child_process.h"

namespace allocscope {

namespace fs = std::filesystem;

namespace {

constexpr double kProbeSeconds = 2.0;  // the probe's own bound: a quiet machine needs a fraction
constexpr double kProbeTimeLimit = 15;  // then record stops it (its own alarm comes at 12 s)

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

// What the probe keeps of the program's environment: what tunes an allocator or finds its
// libraries — glibc's tunables and MALLOC_* variables (jemalloc's MALLOC_CONF too), jemalloc's,
// tcmalloc's, mimalloc's and scudo's own — and nothing else: a variable that names a file for the
// program or its allocator to write (a heap profile, a report) must not make the probe write it.
constexpr std::string_view kProbeEnvironment[] = {
    "GLIBC_TUNABLES=", "MALLOC_", "JE_MALLOC_CONF=", "_RJEM_MALLOC_CONF=", "TCMALLOC_", "MIMALLOC_",
    "SCUDO_OPTIONS=", "LD_LIBRARY_PATH=", "LD_BIND_NOW=", "PATH=", "LANG=", "LC_ALL="};
// jemalloc's settings, to which the probe adds prof:false: its heap profiles (prof_final,
// prof_prefix naming any path) are the program's to write, not the probe's.
constexpr std::string_view kJemallocSettings[] = {"MALLOC_CONF=", "JE_MALLOC_CONF=", "_RJEM_MALLOC_CONF="};

// The program's environment for the probe (kProbeEnvironment), with only the allocator preloaded
// (nothing for the C library's own): not the shim, not the program's other preloaded libraries.
std::vector<std::string> probe_environment(const std::vector<std::string>& env, const std::string& allocator) {
  std::vector<std::string> out;
  for (const std::string& entry : env) {
    if (!std::any_of(std::begin(kProbeEnvironment), std::end(kProbeEnvironment),
                     [&](std::string_view kept) { return entry.starts_with(kept); }))
      continue;
    const bool jemalloc = std::any_of(std::begin(kJemallocSettings), std::end(kJemallocSettings),
                                      [&](std::string_view name) { return entry.starts_with(name); });
    out.push_back(jemalloc ? entry + (entry.back() == '=' ? "" : ",") + "prof:false" : entry);
  }
  if (!is_the_c_library(allocator)) out.push_back("LD_PRELOAD=" + fs::absolute(allocator).string());
  return out;
}

// How a probe that did not exit 0 ended, in words.
std::string ending(const ChildResult& child, double limit) {
  if (child.killed_at_time_limit) return fmt::format("was stopped after {:.0f} s", limit);
  if (child.status > 128 && child.status < 128 + 65) {
    const int sig = child.status - 128;
    if (sig == SIGALRM) return "ended itself at its alarm (the allocator kept it from finishing)";
    return fmt::format("was killed by signal {} ({})", sig, strsignal(sig));
  }
  return fmt::format("exited with status {}", child.status);
}

// Removes the probe's files and directory however run_probe returns.
struct ProbeFiles {
  std::vector<std::string> files;
  std::string directory;
  ~ProbeFiles() {
    std::error_code ec;
    for (const std::string& f : files) fs::remove(f, ec);
    if (!directory.empty()) fs::remove_all(directory, ec);
  }
};

// The index whose name `name_of` gives `name`, or -1.
int index_of(const char* (*name_of)(int), int count, const std::string& name) {
  for (int i = 0; i < count; ++i) {
    if (name == name_of(i)) return i;
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
      const int phase = index_of(lock_test_phase_name, format::kLockTestPhases, a);
      const int where = index_of(lock_test_where_name, format::kLockTestWheres, b);
      const int outcome = index_of(lock_test_outcome_name, format::kLockTestOutcomes, e);
      if (!fields || phase < 0 || where < 0 || outcome < 0) return false;
      r.test.counts[phase][where][outcome] += static_cast<uint32_t>(n);
      counted = true;
    }
  }
  return counted;
}

TestResult run_probe(const fs::path& probe, format::Libc libc, const std::string& allocator,
                     const std::vector<std::string>& env) {
  const std::string how = fmt::format("{} with {}", probe.filename().string(),
                                      is_the_c_library(allocator) ? "the C library's malloc" : allocator);
  // Two files: the counts, and whatever the probe and the allocator print (a statistics dump at
  // exit), which only says why a probe failed; and a working directory of its own, where an
  // allocator that writes files where it runs writes them — all removed after.
  std::error_code ec;
  const fs::path dir = fs::absolute(fs::temp_directory_path(ec));
  if (ec) return not_run(format::LockTestStatus::Failed, libc, fmt::format("no directory for temporary files: {}", ec.message()));
  ProbeFiles made;
  for (int i = 0; i < 2; ++i) {
    std::string name = (dir / "allocscope-lockprobe-XXXXXX").string();
    const int fd = mkstemp(name.data());
    if (fd < 0) {
      return not_run(format::LockTestStatus::Failed, libc,
                     fmt::format("cannot create a file in {} for the lock test's output: {}", dir.string(),
                                 std::strerror(errno)));
    }
    close(fd);
    made.files.push_back(name);
  }
  std::string work = (dir / "allocscope-lockprobe-XXXXXX").string();
  if (!mkdtemp(work.data())) {
    return not_run(format::LockTestStatus::Failed, libc,
                   fmt::format("cannot create a directory in {} for the lock test: {}", dir.string(), std::strerror(errno)));
  }
  made.directory = work;
  const std::string& counts_name = made.files[0];
  ChildSpec spec;
  spec.directory = work;
  spec.program = probe;
  spec.argv = {probe.string(), "--max-seconds", fmt::format("{}", kProbeSeconds), "--output", counts_name};
  spec.env = probe_environment(env, allocator);
  spec.output = made.files[1];
  spec.time_limit = kProbeTimeLimit;
  ChildResult child;
  try {
    child = run_child(spec);
  } catch (const std::exception& error) {
    return not_run(format::LockTestStatus::Failed, libc, fmt::format("{} could not be run: {}", how, error.what()));
  }
  if (child.exec_errno != 0) {
    return not_run(format::LockTestStatus::Failed, libc,
                   fmt::format("{} could not be run: {}", how, std::strerror(child.exec_errno)));
  }
  if (child.status != 0) {
    const std::string last = last_output_line(made.files[1]);
    return not_run(format::LockTestStatus::Failed, libc,
                   fmt::format("{} {}{}", how, ending(child, kProbeTimeLimit), last.empty() ? "" : ": " + last));
  }
  std::ifstream in(counts_name);
  std::stringstream text;
  text << in.rdbuf();
  TestResult r;
  r.test.status = static_cast<uint8_t>(format::LockTestStatus::Ran);
  r.test.libc = static_cast<uint8_t>(libc);
  std::string tested;
  if (!parse_probe_output(text.str(), r, tested)) {
    return not_run(format::LockTestStatus::Failed, libc, fmt::format("{}: its output is not the lock test's", how));
  }
  if (canonical_or_same(tested) != canonical_or_same(allocator)) {
    return not_run(format::LockTestStatus::Failed, libc,
                   fmt::format("{}: the test ran on {}, not on the program's allocator", how, tested));
  }
  r.detail = how;
  return r;
}

TestResult lock_test_for(const ProcessRecord& process, const std::vector<std::string>& notes,
                         const std::vector<std::string>& env, const fs::path& shim) {
  const auto libc = static_cast<format::Libc>(process.info.libc);
  const std::string& allocator = process.allocator;
  if (allocator.empty()) return not_run(format::LockTestStatus::NotRun, libc, "the profile does not name the allocator");
  // The shim's note when the program's own malloc comes before it (an allocator linked into the
  // executable): the calls the profile holds went elsewhere, and the test could not load that one.
  for (const std::string& note : notes) {
    if (note.find(std::string("allocscope: malloc") + format::kNoteDefinedBy) != std::string::npos &&
        note.find(format::kNoteAheadOfShim) != std::string::npos) {
      return not_run(format::LockTestStatus::NotRun, libc,
                     "the program's malloc is defined ahead of the shim (in the executable, or a library loaded "
                     "before it): the test cannot load that allocator alone");
    }
  }
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
  return run_probe(*probe, libc, allocator, env);
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
    std::vector<std::string> notes;
    uint32_t threads = 0;
    try {
      threads = threads_with_statistics(profile, 2);
      process = read_process(profile);
      if (process) notes = read_early_notes(profile);
    } catch (const std::exception&) {
      continue;  // report says what is wrong with it
    }
    if (!process) continue;
    const auto libc = static_cast<format::Libc>(process->info.libc);
    if (threads < 2) {
      append_chunk(profile, not_run(format::LockTestStatus::NotRun, libc,
                                    "fewer than two threads called the allocator through the shim: nothing to test"));
      continue;
    }
    const auto key = std::make_tuple(process->info.libc, canonical_or_same(process->allocator));
    auto it = done.find(key);
    if (it == done.end()) {
      if (done.size() >= kMostTests) {
        append_chunk(profile, not_run(format::LockTestStatus::NotRun, libc,
                                      fmt::format("{} allocators were tested for this run already: the test runs for "
                                                  "{} at most",
                                                  kMostTests, kMostTests)));
        continue;
      }
      TestResult result;
      try {
        result = lock_test_for(*process, notes, env, shim);
      } catch (const std::exception& error) {
        result = not_run(format::LockTestStatus::Failed, libc, fmt::format("the lock test could not run: {}", error.what()));
      }
      it = done.emplace(key, std::move(result)).first;
    }
    append_chunk(profile, it->second);
  }
}

}  // namespace allocscope
