// shim/process_state.cpp — start-up, the profile file, chunk writes and the final flush.
#include "process_state.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "allocscope/window_phase.h"
#include "calibration.h"
#include "cpu_samples.h"
#include "lock_waits.h"
#include "real_allocator.h"
#include "recorder.h"
#include "slot_registry.h"
#include "stack_walk.h"
#include "sys.h"
#include "text_buffer.h"
#include "tick_clock.h"

#ifndef MADV_WIPEONFORK
#define MADV_WIPEONFORK 18
#endif

extern char** environ;

namespace allocscope {

ProcessState* g_ps = nullptr;

namespace {

constexpr uint32_t kDefaultSampleEvery = 64;  // 1/64 of the time: docs/overhead.md
constexpr uint32_t kDefaultCpuSampleEvery = 256;

format::Calibration g_calibration;
bool g_calibrated = false;
char g_output_override[4096];
int g_sample_override = -1;
std::atomic<uint32_t> g_said{0};

// Scratch for the start-up chunks; only the initialising thread touches it.
alignas(64) unsigned char g_init_buf[64 * 1024];

size_t read_file(const char* path, char* buf, size_t cap);

// The process's initial environment, for a start before the C library has set `environ` up (glibc
// runs the program's preinit_array first: a malloc there would find no variable at all).  At that
// point nothing can have changed the environment since exec.
char g_initial_env[64 * 1024];
size_t g_initial_env_len = 0;

const char* env(const char* name) {
  if (environ) return getenv(name);
  if (!g_initial_env_len)
    g_initial_env_len = read_file("/proc/self/environ", g_initial_env, sizeof g_initial_env - 1);
  const size_t len = std::strlen(name);
  for (size_t at = 0; at < g_initial_env_len;) {
    const char* entry = g_initial_env + at;
    const size_t n = std::strlen(entry);  // the buffer ends in a NUL: sizeof - 1 above
    if (n > len && entry[len] == '=' && std::memcmp(entry, name, len) == 0) return entry + len + 1;
    at += n + 1;
  }
  return nullptr;
}

uint32_t env_uint(const char* name, uint32_t fallback) {
  const char* v = env(name);
  if (!v || !*v) return fallback;
  uint64_t x = 0;
  for (; *v >= '0' && *v <= '9'; v++) {
    x = x * 10 + static_cast<uint64_t>(*v - '0');
    if (x > 0xffffffffu) return fallback;
  }
  return *v ? fallback : static_cast<uint32_t>(x);
}

void configure_sampling(const format::Calibration& c) {
  SamplingConfig& s = g_sampling;
  s.sample_every = g_sample_override >= 0 ? static_cast<uint32_t>(g_sample_override)
                                          : env_uint("ALLOCSCOPE_SAMPLE", kDefaultSampleEvery);
  __atomic_store_n(&g_exact_free_sizes, env_uint("ALLOCSCOPE_FREE_SIZES", 0) != 0, __ATOMIC_RELAXED);
  g_trace = env_uint("ALLOCSCOPE_TRACE", 0) != 0;
  __atomic_store_n(&g_lock_waits, env_uint("ALLOCSCOPE_LOCKS", 0) != 0, __ATOMIC_RELAXED);
  // CPU samples come with lock tracing unless told otherwise (cpu_samples.h).
  g_cpu_samples = env_uint("ALLOCSCOPE_CPU_SAMPLES", g_lock_waits ? 1 : 0) != 0;
  s.cpu_sample_every = env_uint("ALLOCSCOPE_CPU_SAMPLE", kDefaultCpuSampleEvery);
  s.stack_every = env_uint("ALLOCSCOPE_STACKS", 0);
  s.stack_slow_ticks = env_uint("ALLOCSCOPE_STACK_SLOW_NS", 50000) * (c.tick_hz / 1000000) / 1000;
  // A trace records every call with its start, and times calls as a sampled profile does: in the
  // windows, or every call with ALLOCSCOPE_SAMPLE=1.  Timing only in the windows saves a clock
  // read (~12 ns here, as much as a fast allocator's whole call) on the other calls.  A trace
  // that times every call probes rusage as often per call as the default mode does.
  if (g_trace && s.sample_every == 1 && !env("ALLOCSCOPE_CPU_SAMPLE"))
    s.cpu_sample_every = kDefaultCpuSampleEvery * kDefaultSampleEvery;
  // Windows repeat about every millisecond: 2^shift ticks.
  unsigned shift = 10;
  while (shift < 40 && (uint64_t{1} << (shift + 1)) <= c.tick_hz / 1000) shift++;
  s.window_shift = shift;
  s.window_len = s.sample_every == 0 ? 0 : (uint64_t{1} << shift) / s.sample_every;
  // Where in each period its window falls (allocscope/window_phase.h).  Chosen with the
  // calibration, once per program image: a forked child keeps its parent's windows.
  s.window_seed = c.window_seed;
  // Checking more often than every microsecond costs more than it finds: with a very short
  // window (large N) a fast thread would read the clock on every call.  Checking less often than
  // kCheckGapMaxNs would let a thread notice a long window (small N) after the analyzer starts to
  // trust it (allocscope/window_phase.h): its calls there would be missing from the others' view.
  const uint64_t one_us = c.tick_hz / 1000000;
  const uint64_t most = c.tick_hz * kCheckGapMaxNs / 1000000000;
  uint64_t gap = s.window_len / 8;
  if (gap > most) gap = most;
  s.check_gap = gap < one_us ? one_us : gap;
  s.flush_interval = c.tick_hz / 4;  // 250 ms
  // A timed call of 2 µs or more gets its context switches (recorder.cpp note_switches): a thread
  // that slept or waited for a CPU was away that long at least.  Each costs a getrusage (~0.25 µs
  // here), at most one per 2 µs of timed time (12 % of it at worst, when every call is slow or
  // follows a gap; 0.2 % of the run with the default windows; measured 0.04-0.06 %: docs/analysis.md);
  // not in trace mode, whose records have no room for them.
  s.switch_ticks = !g_trace && s.sample_every >= 1 ? format::switch_slow_ticks(c.tick_hz) : 0;
  // The same readings give the faults taken inside those slow calls (kEvFaults), where the calls
  // and gaps since the last reading were too short to fault: no system call more.
  s.fault_ticks = s.switch_ticks ? format::fault_free_ticks(c) : 0;
  // Where threads inside long calls wait (peer_waits.h): a look costs a few microseconds (three
  // system calls) and is taken at most once per kPeerLookGapNs of a thread's timed time, and only
  // when another thread has been inside a timed call for 2 µs.  Off with ALLOCSCOPE_PEERS=0.
  s.look_gap = s.switch_ticks && env_uint("ALLOCSCOPE_PEERS", 1) != 0
                   ? c.tick_hz * format::kPeerLookGapNs / 1000000000 : 0;
  // Outside the windows (peer_waits.h outside_turn): a probe at most once per kPeerProbeGapNs for
  // the whole process, every kTurnsPerLook-th with a look (once per kPeerLookOutsideGapNs); only
  // where there are windows to be outside of.  Measured with the looks: 0-5 % of a run
  // (docs/overhead.md).
  s.outside_gap = s.look_gap && s.sample_every > 1 ? c.tick_hz * format::kPeerProbeGapNs / 1000000000 : 0;
  // A turn at most every kHoldGapNs holds the threads inside allocating calls for kHoldNs
  // (peer_waits.h): at most 30 µs of those threads' time per 5 ms.  Off with ALLOCSCOPE_HOLDS=0.
  s.hold_ticks = s.outside_gap && env_uint("ALLOCSCOPE_HOLDS", 1) != 0 ? c.tick_hz * format::kHoldNs / 1000000000 : 0;
  s.hold_gap = c.tick_hz * format::kHoldGapNs / 1000000000;
  s.signal_check_ticks = c.tick_hz / 20;  // 50 ms
}

// Tries `<base>` (root process only), then `<base>.<pid>`, `<base>.<pid>.2` … `.999` (an image
// that execs itself keeps its pid: each of its images takes the next name).
// O_EXCL never overwrites and, with O_NOFOLLOW, never follows a symlink at the path.
// *moved tells that the first choice existed (a file or a symlink) and another name was taken.
constexpr int kProfileNamesPerPid = 999;
int open_profile(const char* base, bool is_root, int pid, char* chosen, size_t cap, bool* moved) {
  const int flags = O_WRONLY | O_CREAT | O_EXCL | O_APPEND | O_CLOEXEC | O_NOFOLLOW;
  long fd = -17;
  *moved = false;
  if (is_root) {
    TextBuffer p(chosen, cap);
    p.put(base);
    if (p.ok()) fd = sys::openat(AT_FDCWD, chosen, flags, 0644);
    if (fd != -17) return static_cast<int>(fd);
    *moved = true;
  }
  for (int attempt = 1; attempt <= kProfileNamesPerPid && fd == -17; attempt++) {
    TextBuffer p(chosen, cap);
    p.put(base).put(".").put_uint(static_cast<uint64_t>(pid));
    if (attempt > 1) p.put(".").put_uint(static_cast<uint64_t>(attempt));
    if (!p.ok()) return -36;  // ENAMETOOLONG
    fd = sys::openat(AT_FDCWD, chosen, flags, 0644);
    if (fd == -17) *moved = true;
  }
  return static_cast<int>(fd);
}

// The profile's descriptor moves to the top of the first 1024 (of RLIMIT_NOFILE, where that is
// lower), out of the way of the numbers the program counts on: its first open() still returns 3,
// however low the limit (with 8, the profile's is 7).  Keeps `fd` where that is not possible.
int move_fd_high(int fd) {
  struct { uint64_t cur, max; } nofile;
  if (sys::failed(sys::call(SYS_prlimit64, 0, RLIMIT_NOFILE, 0, reinterpret_cast<long>(&nofile))))
    return fd;
  const uint64_t top = nofile.cur < 1024 ? nofile.cur : 1024;
  if (top <= 4) return fd;  // 0-2 and the profile's: nothing above it
  const long high = sys::call(SYS_fcntl, fd, F_DUPFD_CLOEXEC, static_cast<long>(top - 1));
  if (sys::failed(high)) return fd;
  sys::close(fd);
  return static_cast<int>(high);
}

bool stat_fd(int fd, uint64_t& dev, uint64_t& ino) {
  struct stat st;
  if (sys::failed(sys::call(SYS_fstat, fd, reinterpret_cast<long>(&st)))) return false;
  dev = static_cast<uint64_t>(st.st_dev);
  ino = static_cast<uint64_t>(st.st_ino);
  return true;
}

constexpr long kNotOurs = -9;  // EBADF: the descriptor no longer refers to the profile

// Appends one record to the profile, unless that would harm the program: a program that closes
// every descriptor and opens a file of its own may be handed the profile's number (then nothing
// is written into its file), and a write that starts past RLIMIT_FSIZE raises SIGXFSZ, which
// would kill it (then the profile ends, as on a full disk).  Returns 0 or -errno.
long append(const void* buf, size_t n) {
  uint64_t dev, ino;
  if (!stat_fd(g_ps->fd, dev, ino) || dev != g_ps->file_dev || ino != g_ps->file_ino)
    return kNotOurs;
  const uint64_t at = g_ps->bytes_reserved.fetch_add(n, std::memory_order_relaxed);
  struct { uint64_t cur, max; } fsize;
  if (!sys::failed(sys::call(SYS_prlimit64, 0, RLIMIT_FSIZE, 0, reinterpret_cast<long>(&fsize))) &&
      fsize.cur != ~uint64_t{0} && at + n > fsize.cur)
    return -27;  // EFBIG
  return sys::append_record(g_ps->fd, buf, n);
}

// CPUs in this process's affinity mask (0 when the call fails).
uint32_t allowed_cpus() {
  uint64_t mask[16] = {};
  const long n = sys::sched_getaffinity(0, sizeof mask, mask);
  if (n <= 0) return 0;
  uint32_t cpus = 0;
  for (long i = 0; i < n / 8; ++i) cpus += static_cast<uint32_t>(__builtin_popcountll(mask[i]));
  return cpus;
}

// CPUs online, from a list such as "0-3,6" (0 when it cannot be read).
uint32_t online_cpus() {
  char text[256];
  const size_t n = read_file("/sys/devices/system/cpu/online", text, sizeof text - 1);
  uint32_t cpus = 0, lo = 0, value = 0;
  bool in_range = false, digits = false;
  for (size_t i = 0; i <= n; ++i) {
    const char ch = i < n ? text[i] : ',';
    if (ch >= '0' && ch <= '9') {
      value = value * 10 + static_cast<uint32_t>(ch - '0');
      digits = true;
    } else if (ch == '-' && digits) {
      lo = value;
      value = 0;
      in_range = true;
      digits = false;
    } else if (digits) {
      cpus += in_range ? (value >= lo ? value - lo + 1 : 0) : 1;
      value = 0;
      in_range = digits = false;
    }
  }
  return cpus;
}

size_t read_file(const char* path, char* buf, size_t cap) {
  const long fd = sys::openat(AT_FDCWD, path, O_RDONLY | O_CLOEXEC, 0);
  if (sys::failed(fd)) return 0;
  size_t n = 0;
  while (n < cap) {
    const long r = sys::read(static_cast<int>(fd), buf + n, cap - n);
    if (r <= 0) break;
    n += static_cast<size_t>(r);
  }
  sys::close(static_cast<int>(fd));
  return n;
}

const char* base_name(const char* path) {
  const char* b = path;
  for (const char* p = path; *p; p++)
    if (*p == '/') b = p + 1;
  return b;
}

bool write_header() {
  format::FileHeader fh;
  std::memset(&fh, 0, sizeof fh);
  std::memcpy(fh.magic, format::kMagic, sizeof fh.magic);
  fh.version = format::kVersion;
  fh.header_size = sizeof fh;
  fh.created_realtime_ns = realtime_ns();
  return append(&fh, sizeof fh) == 0;
}

// Whether the profile at `path` is that of an earlier image of this process (its Process chunk,
// the first after the file header, has this pid): an exec chain — a wrapper that execs the
// program — in which each image after the first takes <path>.<pid>.  Expected, and `record`
// names them all; only a file left by another process is worth a line on stderr.
bool written_by_this_process(const char* path, int pid) {
  // Non-blocking: a FIFO at the path must not hold the program up (a read of it then fails).
  const long fd = sys::openat(AT_FDCWD, path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY, 0);
  if (sys::failed(fd)) return false;
  constexpr size_t kAt = sizeof(format::FileHeader);
  unsigned char buf[kAt + sizeof(format::ChunkHeader) + sizeof(format::ProcessInfo)];
  const long n = sys::call(SYS_pread64, fd, reinterpret_cast<long>(buf), sizeof buf, 0);
  sys::close(static_cast<int>(fd));
  if (n != static_cast<long>(sizeof buf)) return false;
  format::ChunkHeader h;
  format::ProcessInfo pi;
  std::memcpy(&h, buf + kAt, sizeof h);
  std::memcpy(&pi, buf + kAt + sizeof h, sizeof pi);
  return h.magic == format::kChunkMagic && h.type == static_cast<uint16_t>(format::ChunkType::Process) &&
         pi.pid == static_cast<uint32_t>(pid);
}

bool write_process_chunk(const char* exe, uint64_t start_tick) {
  constexpr size_t kHdr = sizeof(format::ChunkHeader);
  auto* pi = reinterpret_cast<format::ProcessInfo*>(g_init_buf + kHdr);
  std::memset(pi, 0, sizeof *pi);
  pi->pid = static_cast<uint32_t>(g_ps->pid);
  pi->ppid = static_cast<uint32_t>(sys::getppid());
  pi->start_tick = start_tick;
  pi->start_mono_ns = mono_ns();
  pi->start_realtime_ns = realtime_ns();
  using VersionFn = const char* (*)();
  auto gnu_version = reinterpret_cast<VersionFn>(dlsym(RTLD_DEFAULT, "gnu_get_libc_version"));
  pi->libc = static_cast<uint8_t>(gnu_version ? format::Libc::Glibc : format::Libc::Musl);
  char* p = reinterpret_cast<char*>(pi + 1);
  char* const end = reinterpret_cast<char*>(g_init_buf + sizeof g_init_buf);
  auto put = [&](const char* s, size_t n, size_t reserve) -> uint32_t {
    const size_t room = static_cast<size_t>(end - p) > reserve ? end - p - reserve : 0;
    if (n > room) n = room;
    std::memcpy(p, s, n);
    p += n;
    return static_cast<uint32_t>(n);
  };
  pi->exe_len = put(exe, std::strlen(exe), 8192);
  char args[32768];
  size_t an = read_file("/proc/self/cmdline", args, sizeof args);
  if (an && args[an - 1] == '\0') an--;  // NUL-separated, without the final NUL
  pi->args_len = put(args, an, 4096);
  const char* alloc = real_allocator_path();
  pi->allocator_len = put(alloc, std::strlen(alloc), 256);
  const char* ver = gnu_version ? gnu_version() : "";
  pi->libc_version_len = put(ver, std::strlen(ver), 0);
  pi->cpus_allowed = static_cast<uint16_t>(allowed_cpus());
  pi->cpus_online = online_cpus();
  return write_chunk(format::ChunkType::Process, g_init_buf,
                     static_cast<size_t>(p - reinterpret_cast<char*>(pi)));
}

bool write_calibration_chunk() {
  constexpr size_t kHdr = sizeof(format::ChunkHeader);
  format::Calibration c = g_calibration;
  c.sample_every = g_sampling.sample_every;
  c.cpu_sample_every = g_sampling.cpu_sample_every;
  c.window_shift = g_sampling.window_shift;
  c.mode_flags = (g_trace ? format::kModeTrace : 0) |
                 (g_sampling.stack_every ? format::kModeStacks : 0) | format::kModeWindowPhase |
                 format::kModeCxxOperators | (g_lock_waits ? format::kModeLocks : 0) |
                 (g_sampling.switch_ticks ? format::kModeSwitches : 0) | format::kModeNoticeBounded |
                 (g_sampling.look_gap ? format::kModePeerWaits : 0) |
                 (g_sampling.outside_gap ? format::kModePeerLooksOutside | format::kModePeerProbes : 0) |
                 (g_sampling.hold_ticks ? format::kModeHolds : 0) |
                 (g_sampling.fault_ticks ? format::kModeFaults : 0) |
                 (g_cpu_samples ? format::kModeCpuSamples : 0) | format::kModeRusageSinceObserved |
                 format::kModeAllocatorLocks | format::kModeAllocatorFutexWaits;
  c.window_seed = g_sampling.window_seed;
  c.stack_every = g_sampling.stack_every;
  c.stack_slow_ticks = static_cast<uint32_t>(
      g_sampling.stack_slow_ticks > 0xffffffffu ? 0xffffffffu : g_sampling.stack_slow_ticks);
  std::memcpy(g_init_buf + kHdr, &c, sizeof c);
  return write_chunk(format::ChunkType::Calibration, g_init_buf, sizeof c);
}

// Runs on exactly one thread; returns the resulting mode.
int initialise() {
  if (getauxval(AT_SECURE)) {
    say_once(0, "allocscope: secure (setuid/setgid) process: not recording\n");
    return kModePassive;
  }
  if (!g_calibrated) {
    calibrate(g_calibration);
    g_calibrated = true;
  }
  configure_sampling(g_calibration);
  const uint64_t start_tick = ticks();
  g_ps->pid = sys::getpid();
  g_ps->start_tick = start_tick;
  // This thread is observed from here on (format.h kModeRusageSinceObserved): its rusage is
  // counted from this reading, taken after start_tick, so that its CPU time lies inside its life.
  read_thread_rusage(g_ps->start_rusage);
  __atomic_store_n(&g_ps->start_tid, sys::gettid(), __ATOMIC_RELEASE);

  char exe[4096];
  long n = sys::readlink("/proc/self/exe", exe, sizeof exe - 1);
  exe[n > 0 ? n : 0] = '\0';

  char default_base[4096];
  const char* base = g_output_override[0] ? g_output_override : env("ALLOCSCOPE_OUTPUT");
  bool is_root = true;
  bool named = true;  // this process was told its profile's name: say if that name is taken
  if (!base || !*base) {
    TextBuffer d(default_base, sizeof default_base);
    d.put("allocscope.").put(base_name(exe)).put(".").put_uint(static_cast<uint64_t>(g_ps->pid))
        .put(".asp");
    base = default_base;
    is_root = true;
  } else if (!g_output_override[0]) {
    const uint32_t root = env_uint("ALLOCSCOPE_ROOT_PID", 0);
    is_root = root == 0 || root == static_cast<uint32_t>(g_ps->pid);
    // Unset, every process tries the name and all but the first take <name>.<pid>: as designed.
    named = root == static_cast<uint32_t>(g_ps->pid);
  }
  bool moved = false;
  int fd = open_profile(base, is_root, g_ps->pid, g_ps->path, sizeof g_ps->path, &moved);
  if (fd < 0) {
    char line[4200];
    TextBuffer m(line, sizeof line);
    m.put("allocscope: cannot create a profile at ").put(base).put(": ").put(strerror(-fd))
        .put("; not recording\n");
    say_once(1, line);
    return kModePassive;
  }
  fd = move_fd_high(fd);
  g_ps->fd = fd;
  if (!stat_fd(fd, g_ps->file_dev, g_ps->file_ino) || !write_header() ||
      !write_process_chunk(exe, start_tick) || !write_calibration_chunk()) {
    // Nothing usable was written (a full disk, a file size limit): leave no file behind.
    sys::call(SYS_unlinkat, AT_FDCWD, reinterpret_cast<long>(g_ps->path), 0);
    sys::close(fd);
    say_once(4, "allocscope: cannot write the profile ", g_ps->path, "; not recording\n");
    return kModePassive;
  }
  {  // entry points the program calls past the shim: the report names them as a caveat
    constexpr size_t kHdr = sizeof(format::ChunkHeader);
    char* text = reinterpret_cast<char*>(g_init_buf + kHdr);
    const size_t len = describe_shadowed_entries(text, sizeof g_init_buf - kHdr);
    if (len) {
      write_chunk(format::ChunkType::Note, g_init_buf, len);
      sys::write(2, text, len);
    }
  }
  if (moved && named && !written_by_this_process(base, g_ps->pid)) {
    char line[8400];
    TextBuffer m(line, sizeof line);
    m.put("allocscope: ").put(base).put(" exists; writing the profile to ").put(g_ps->path)
        .put(" instead\n");
    say_once(6, line);
  }
  if (g_sampling.stack_every || lock_stacks_wanted()) {
    // Loading libunwind allocates (the loader's own malloc calls, libunwind's and liblzma's
    // constructors): the shim's calls, not the program's.
    t_ctx.depth++;
    stack_walk_init(dlsym(RTLD_DEFAULT, "gnu_get_libc_version") != nullptr);
    write_modules();
    t_ctx.depth--;
  }
  return kModeActive;
}

}  // namespace

bool process_active() {
  if (!__atomic_load_n(&g_ps, __ATOMIC_ACQUIRE)) {
    void* mem = sys::mmap(nullptr, sizeof(ProcessState), PROT_READ | PROT_WRITE,
                          MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (!mem) return false;
    sys::madvise(mem, sizeof(ProcessState), MADV_WIPEONFORK);
    ProcessState* expected = nullptr;
    if (!__atomic_compare_exchange_n(&g_ps, &expected, static_cast<ProcessState*>(mem), false,
                                     __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
      sys::munmap(mem, sizeof(ProcessState));
  }
  ProcessState* ps = __atomic_load_n(&g_ps, __ATOMIC_ACQUIRE);
  int mode = ps->mode.load(std::memory_order_acquire);
  // Threads that arrive while another initialises may count already: their slots are flushed
  // once the profile is open.
  if (mode == kModeActive || mode == kModeInitialising) return true;
  if (mode != kModeUninitialised) return false;
  if (!ps->mode.compare_exchange_strong(mode, kModeInitialising, std::memory_order_acq_rel))
    return mode == kModeActive || mode == kModeInitialising;
  if (!real_allocator_ready()) {  // resolved by now in practice; be safe
    ps->mode.store(kModeUninitialised, std::memory_order_release);
    return false;
  }
  const int result = initialise();
  ps->mode.store(result, std::memory_order_release);
  return result == kModeActive;
}

// The one line about a failed write, in a frame of its own: its 4 KiB buffer would otherwise sit in
// every write_chunk's frame, on whatever stack the write runs (a signal handler's, say).
[[gnu::noinline, gnu::cold]] void say_write_failed(long r) {
  if (r == kNotOurs) {
    say_once(7, "allocscope: the program closed the descriptor of the profile ", g_ps->path,
             "; recording stops here\n");
  } else {
    char line[4300];
    TextBuffer m(line, sizeof line);
    m.put("allocscope: writing the profile ").put(g_ps->path).put(" failed (")
        .put(strerror(static_cast<int>(-r))).put("): the profile is cut short here\n");
    say_once(5, line);
  }
}

bool write_chunk(format::ChunkType type, unsigned char* buf, size_t payload_len) {
  auto* ch = reinterpret_cast<format::ChunkHeader*>(buf);
  ch->magic = format::kChunkMagic;
  ch->type = static_cast<uint16_t>(type);
  ch->flags = 0;
  ch->payload_size = static_cast<uint32_t>(payload_len);
  ch->header_check = static_cast<uint32_t>(XXH3_64bits(ch, format::kChunkHeaderChecked));
  ch->checksum = XXH3_64bits(buf + sizeof *ch, payload_len);
  const long r = append(buf, sizeof *ch + payload_len);
  if (r == 0) return true;
  g_ps->write_errors.fetch_add(1, std::memory_order_relaxed);
  if (g_ps->write_warned.exchange(1) == 0) say_write_failed(r);
  // Stop writing: later chunks after a partial one would not be readable anyway.
  int active = kModeActive;
  g_ps->mode.compare_exchange_strong(active, kModeTornDown);
  return false;
}

void shutdown_process(format::ExitKind kind) {
  ProcessState* ps = __atomic_load_n(&g_ps, __ATOMIC_ACQUIRE);
  if (!ps || ps->mode.load(std::memory_order_acquire) != kModeActive) return;
  if (sys::getpid() != ps->pid) return;
  const int saved = errno;
  if (t_wait_pending) add_pending_wait(false);  // the exiting thread holds the lock it waited for
  if (t_allocator_wait_pending) add_allocator_wait();
  t_ctx.depth++;
  flush_all_slots(format::ThreadState::ProcessExit);
  if (g_sampling.stack_every || lock_stacks_wanted()) write_modules_if_changed();
  alignas(8) unsigned char buf[sizeof(format::ChunkHeader) + sizeof(format::ProcessEnd)];
  auto* pe = reinterpret_cast<format::ProcessEnd*>(buf + sizeof(format::ChunkHeader));
  std::memset(pe, 0, sizeof *pe);
  pe->end_tick = ticks();
  pe->end_mono_ns = mono_ns();
  pe->threads_seen = ps->next_serial.load(std::memory_order_relaxed);
  pe->max_live_threads = ps->max_live_threads.load(std::memory_order_relaxed);
  pe->events_dropped = total_events_dropped();
  pe->write_errors = ps->write_errors.load(std::memory_order_relaxed);
  pe->exit_kind = static_cast<uint32_t>(kind);
  write_chunk(format::ChunkType::ProcessEnd, buf, sizeof *pe);
  ps->mode.store(kModeTornDown, std::memory_order_release);
  t_ctx.depth--;
  errno = saved;
}

void resume_after_failed_exec() {
  ProcessState* ps = __atomic_load_n(&g_ps, __ATOMIC_ACQUIRE);
  if (!ps || sys::getpid() != ps->pid || ps->write_warned.load() != 0) return;
  int torn = kModeTornDown;
  ps->mode.compare_exchange_strong(torn, kModeActive);
}

void set_output_override(const char* path) {
  TextBuffer b(g_output_override, sizeof g_output_override);
  b.put(path);
}

void set_sample_override(int sample_every) { g_sample_override = sample_every; }

void say_once(int id, const char* a, const char* b, const char* c) {
  const uint32_t bit = 1u << id;
  if (g_said.fetch_or(bit, std::memory_order_relaxed) & bit) return;
  char line[1024];
  TextBuffer t(line, sizeof line);
  t.put(a);
  if (b) t.put(b);
  if (c) t.put(c);
  if (!t.ok()) line[t.size() - 1] = '\n';  // a line cut short still ends the line
  sys::write(2, line, t.size());
}

__attribute__((destructor)) static void allocscope_at_exit() { shutdown_process(format::ExitKind::Exit); }

}  // namespace allocscope
