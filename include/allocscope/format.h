// allocscope/format.h — the profile file format, the one definition shared by writer and reader.
//
// A profile is one file per process:
//
//   FileHeader                      (64 bytes, once)
//   Chunk*                          (ChunkHeader + payload, appended by any thread)
//
// The first chunk is always the Process chunk (the shim reads a file's pid back from there to
// tell an earlier image of its own process from a stranger's file: process_state.cpp).
//
// Every chunk is written by one write(2) on an O_APPEND descriptor, so chunks never interleave and
// a file cut short (crash, _exit, SIGKILL, full disk) still reads up to its last whole chunk.
// Every payload is checked by XXH3_64bits (xxHash) over its bytes.  All integers are little-endian
// (the native order of every supported target), all structs are packed to the sizes asserted here.
//
// Chunk kinds and their payloads:
//   Process      ProcessInfo, then exe, args (NUL-separated), allocator path, libc version, as
//                length-prefixed strings (the *_len fields).
//   Calibration  Calibration (clock source, tick rate, probe costs, sampling parameters, and
//                where in each period the timing window falls).
//   ThreadStats  ThreadStatsHeader, then n_rows x (StatsRow, StatsRow::n_bins x LatencyBin).
//                A thread's statistics are *cumulative*: a later snapshot (higher seq) of the same
//                thread_serial replaces earlier ones.  One snapshot may span several chunks
//                (part = 0,1,2…); it counts only once its chunk with kLastPart arrives.
//   Events       EventsHeader, then count x Event: the timed calls of one thread, in order.
//   ProcessEnd   ProcessEnd: written at exit, _exit and exec (not after abort, a crash or a kill).
//   Note         a UTF-8 message from the shim (e.g. why it gave up), length = payload size.
//   TraceEvents  (trace mode) every call of one thread, compactly encoded: see TraceHeader.
//   Stacks       call stacks referred to by events of one thread: see StacksHeader.
//   Modules      the loaded objects and their addresses: see ModulesHeader.
//   LockWaits    (lock tracing) one thread's contended waits on the program's own pthread locks,
//                per (lock, call site): see LockWaitsHeader.  Cumulative like ThreadStats.
//   PeerWaits    what one thread found other threads doing inside long timed calls: see
//                PeerWaitsHeader.  Each chunk holds new records only.
//   CpuSamples   (lock tracing) where one thread was when its CPU time was sampled: see
//                CpuSamples.  Cumulative like ThreadStats.
//   LockTest     written by `allocscope record` after the program ended, never by the shim:
//                LockTest, then a UTF-8 text of detail_len bytes (what was run, or why not).
//
// Times are in ticks of the clock named by Calibration::clock (TSC or CLOCK_MONOTONIC ns);
// tick_hz converts them.  Pairs (tick, mono_ns) in several chunks let a reader refine tick_hz.
#pragma once
#include <cstddef>
#include <cstdint>

#include "allocscope/buckets.h"

namespace allocscope::format {

constexpr char kMagic[8] = {'A', 'L', 'C', 'S', 'C', 'O', 'P', 'E'};
constexpr uint32_t kVersion = 1;
constexpr uint32_t kChunkMagic = 0x4b434341;  // "ACCK" little-endian
constexpr uint32_t kMaxChunkPayload = 1u << 24; // 16 MiB: larger is corruption

struct FileHeader {
  char magic[8];
  uint32_t version;
  uint32_t header_size;  // sizeof(FileHeader) of the writer
  uint64_t created_realtime_ns;
  uint8_t reserved[40];
};
static_assert(sizeof(FileHeader) == 64);

enum class ChunkType : uint16_t {
  Process = 1,
  Calibration = 2,
  ThreadStats = 3,
  Events = 4,
  ProcessEnd = 5,
  Note = 6,
  TraceEvents = 7,
  Stacks = 8,
  Modules = 9,
  LockWaits = 10,
  PeerWaits = 11,
  CpuSamples = 12,
  LockTest = 13,
};

// The Note the shim writes for each entry point defined ahead of it (an allocator linked into the
// executable, a library preloaded before it): "allocscope: malloc is defined by OBJECT ahead of
// the shim: …" (shim/real_allocator.cpp). `record` reads it back: such a program gets no lock test.
inline constexpr char kNoteDefinedBy[] = " is defined by ";
inline constexpr char kNoteAheadOfShim[] = " ahead of the shim: the calls bound to it are not recorded";

struct ChunkHeader {
  uint32_t magic;         // kChunkMagic
  uint16_t type;          // ChunkType
  uint16_t flags;         // reserved, 0
  uint32_t payload_size;  // bytes after this header, <= kMaxChunkPayload
  uint32_t header_check;  // low 32 bits of XXH3_64bits over the kChunkHeaderChecked bytes above
  uint64_t checksum;      // XXH3_64bits(payload, payload_size)
};
static_assert(sizeof(ChunkHeader) == 24);
// The header's own fields are checked too: a damaged size or type is an error, not a file cut short.
constexpr size_t kChunkHeaderChecked = 12;

enum class Libc : uint8_t { Unknown = 0, Glibc = 1, Musl = 2 };

struct ProcessInfo {
  uint32_t pid;
  uint32_t ppid;
  uint64_t start_tick;
  uint64_t start_mono_ns;
  uint64_t start_realtime_ns;
  uint8_t libc;           // Libc
  uint8_t secure;         // 1 if AT_SECURE (the shim then records nothing more)
  uint16_t cpus_allowed;  // CPUs in the process's affinity mask at start (0: not recorded)
  uint32_t exe_len;
  uint32_t args_len;      // argv, NUL-separated, without a NUL after the last argument
  uint32_t allocator_len; // path of the object that provides the real malloc
  uint32_t libc_version_len;
  uint32_t cpus_online;   // CPUs online at start, /sys/devices/system/cpu/online (0: not recorded)
};
static_assert(sizeof(ProcessInfo) == 56);

enum class Clock : uint8_t { Tsc = 1, Monotonic = 2 };

constexpr uint64_t kModeTrace = 1u << 0;   // every call is in TraceEvents chunks
constexpr uint64_t kModeStacks = 1u << 1;  // sampled call stacks in Stacks chunks
// The timing windows fall at a pseudo-random offset in each period, derived from window_seed
// (allocscope/window_phase.h).  Without it (profiles written before the flag existed) every
// window starts at its period's first tick.
constexpr uint64_t kModeWindowPhase = 1u << 2;
// The shim interposed the C++ operators (new, new[], delete, delete[]: ops.h).  Without it
// (profiles written before), a C++ program's operators reached the shim only where the C++
// runtime implements them with malloc and free, and were counted as those.
constexpr uint64_t kModeCxxOperators = 1u << 3;
// The shim traced the program's contended pthread lock waits (LockWaits chunks): without the
// flag, a profile says nothing about locks outside the allocator.
constexpr uint64_t kModeLocks = 1u << 4;
// Slow timed calls carry their context switches (kEvSwitches): without the flag (profiles written
// before, or sampling too dense for it), only the rusage probe's calls do.
constexpr uint64_t kModeSwitches = 1u << 5;
// The shim read the clock outside windows at most window_phase.h kCheckGapMaxNs apart (while a
// thread's calls kept their pace): a window is trusted kWindowTrimNs after its start.  Without the
// flag (profiles written before), the gap could reach window/8 (more than kWindowTrimNs with
// --sample 12 or fewer), and the analyzer trims that much more.
constexpr uint64_t kModeNoticeBounded = 1u << 6;
// The shim looked at threads inside long timed calls (PeerWaits chunks): without the flag, a
// profile says nothing of where waiting threads waited.
constexpr uint64_t kModePeerWaits = 1u << 7;
// Besides, outside the windows, the process looked now and then (at most once per
// kPeerLookOutsideGapNs) at a thread inside any allocator call (PeerWait with kPeerUntimed).
constexpr uint64_t kModePeerLooksOutside = 1u << 8;
// Between those looks, the process times one allocator call now and then (twice a millisecond
// at most, all threads together: kTurnsPerLook) as a probe without a look (PeerWait with kPeerNoLook).
constexpr uint64_t kModePeerProbes = 1u << 9;
// Now and then (kHoldGapNs) a turn outside the windows holds the threads inside allocator calls
// where they are for kHoldNs, and times the observer's own call meanwhile (PeerWait with kPeerHold).
constexpr uint64_t kModeHolds = 1u << 10;
// Slow timed calls also carry the minor faults taken inside them (kEvFaults), read as their
// switches are, against a reading the thread took when it could not have faulted since: the gap
// before the call and every unread call since were shorter than fault_free_ticks below.
// Without the flag (profiles written before, traces, count-only), only the rusage probe's calls
// say how many faults were taken inside calls.
constexpr uint64_t kModeFaults = 1u << 11;
// Each thread's CPU time was sampled (CpuSamples chunks): a timer on the thread's own CPU clock
// signals it every kCpuSampleNs of its CPU time, user or system, and the handler notes where the
// thread is — inside an allocator call, inside the shim, inside one of the program's pthread lock
// calls (lock tracing), or elsewhere.  Without the flag a profile says nothing of where CPU time went.
constexpr uint64_t kModeCpuSamples = 1u << 12;
// A thread's figures run from the moment the shim began to observe it: the Rusage of its
// ThreadStats is the difference from a reading taken then (at its first allocator call; for the
// thread that started the profile, at the shim's start-up, whose tick ProcessInfo::start_tick is
// then its first_tick, whenever its first call comes), and every thread alive at the end of the
// image has a snapshot taken then (state ProcessExit).  Without the flag (profiles written before),
// Rusage counted from the thread's own start (the dynamic loader's start-up, and a program exec'd
// from a wrapper carried the wrapper's CPU time), the starting thread's first_tick was its first
// allocator call, and a thread with nothing new since its last snapshot kept that one at the end.
constexpr uint64_t kModeRusageSinceObserved = 1u << 13;
// The allocator's own contended waits on pthread locks were recorded (LockWaitRow with
// kLockRowInAllocator): a pthread_mutex_lock, rwlock, spin or C11 mtx_lock call made from inside
// an allocator call (a library allocator's refill or arena lock) is tried first, and only when that
// fails is its wait timed.  Without the flag (profiles written before), such calls went unrecorded,
// and a profile says nothing of them.  Locks the allocator takes without the C library's functions
// (musl's and glibc's own, spin locks of its own atomics) are never seen.
constexpr uint64_t kModeAllocatorLocks = 1u << 14;
// Besides, the futex waits that an allocator call made through the C library's syscall() and that
// slept (kind Futex): the locks of allocators that wait on a futex of their own.  Without the flag,
// such waits went unrecorded.
constexpr uint64_t kModeAllocatorFutexWaits = 1u << 15;

struct Calibration {
  uint8_t clock;                 // Clock
  uint8_t reserved0[3];
  uint32_t sample_every;         // N: calls are timed during 1/N of the time (1 = all, 0 = none)
  uint32_t cpu_sample_every;     // 1 timed call in M also reads the thread's rusage around it
  uint32_t window_shift;         // timed windows: ticks >> window_shift is the window number
  uint64_t tick_hz;              // ticks per second, measured at start-up
  uint64_t calib_tick0, calib_mono0, calib_tick1, calib_mono1;  // the measurement behind tick_hz
  // Probe costs measured at start-up, in ticks (median of repeated runs):
  uint64_t clock_read_ticks;     // one read of the tick clock
  uint64_t syscall_ticks;        // a trivial syscall (getppid)
  uint64_t futex_wake_ticks;     // FUTEX_WAKE with no waiter (what an uncontended unlock may cost)
  uint64_t futex_wait_ticks;     // FUTEX_WAIT on a changed value (returns at once, EAGAIN)
  uint64_t rusage_ticks;         // getrusage(RUSAGE_THREAD)
  uint64_t thread_cputime_ticks; // clock_gettime(CLOCK_THREAD_CPUTIME_ID)
  uint64_t minor_fault_ticks;    // first touch of a fresh anonymous page (a minor fault)
  uint64_t mode_flags;           // kModeTrace | kModeStacks | kModeWindowPhase | kModeCxxOperators
                                 // | kModeLocks | kModeSwitches
  uint32_t stack_every;          // with kModeStacks: a stack on 1 timed call in this many
  uint32_t stack_slow_ticks;     // with kModeStacks: and on every call at least this slow
  uint64_t window_seed;          // with kModeWindowPhase: the seed of the windows' offsets; was
                                 // reserved (0) before, so older profiles read unchanged
};
static_assert(sizeof(Calibration) == 16 + 8 * 5 + 8 * 6 + 32);

enum class ThreadState : uint8_t { Running = 1, Exited = 2, ProcessExit = 3 };
constexpr uint16_t kLastPart = 0x8000;

// Thread resource usage, from getrusage(RUSAGE_THREAD): with kModeRusageSinceObserved, cumulative
// since the shim began to observe the thread (the reading then subtracted); before, since the
// thread started.
struct Rusage {
  uint64_t utime_us, stime_us, minflt, majflt, nvcsw, nivcsw;
};
static_assert(sizeof(Rusage) == 48);

struct ThreadStatsHeader {
  uint32_t thread_serial;   // 1, 2, … in order of the thread's first allocator call
  uint32_t tid;             // kernel thread id
  uint32_t seq;             // snapshot number of this thread, increasing
  uint16_t part;            // index of this chunk in the snapshot; | kLastPart on the last one
  uint8_t state;            // ThreadState
  uint8_t reserved0;
  uint64_t first_tick;      // first allocator call seen on the thread (kModeRusageSinceObserved: the
                            // start of the profile for the thread that started it; kModeLocks: or
                            // the start of an earlier lock wait or timed unlock)
  uint64_t snapshot_tick;
  uint64_t snapshot_mono_ns;
  uint64_t last_tick;       // last allocator call seen on the thread
  Rusage rusage;            // at the snapshot; all-ones when unavailable
  uint64_t events_written;  // timed-call events emitted so far
  uint64_t events_dropped;  // timed-call events lost so far (ring full and no flush possible)
  uint64_t reentrant_calls; // calls made from inside the shim (signal handlers, libc internals)
  uint32_t n_rows;          // rows in this part
  uint32_t reserved1;
};
static_assert(sizeof(ThreadStatsHeader) == 128);

// One (operation, size bucket) of one thread.
struct StatsRow {
  uint8_t op;          // Op
  uint8_t bucket;      // size bucket (buckets.h)
  uint16_t n_bins;     // LatencyBin entries that follow
  uint32_t reserved;
  uint64_t calls;      // all calls
  uint64_t bytes;      // sum of sizes of all calls
  uint64_t failed;     // calls that returned NULL / an error
  uint64_t timed;      // calls whose duration was measured
  uint64_t timed_ticks;// sum of measured durations
  uint64_t max_ticks;  // longest measured duration
};
static_assert(sizeof(StatsRow) == 56);

struct LatencyBin {
  uint16_t bin;        // latency bin (buckets.h latency_bin_of); a bin may repeat: counts add up
  uint16_t reserved;
  uint32_t count;
};
static_assert(sizeof(LatencyBin) == 8);

struct EventsHeader {
  uint32_t thread_serial;
  uint32_t count;
  uint64_t first_index;     // index of the first event of this chunk in the thread's sequence
};
static_assert(sizeof(EventsHeader) == 16);

// Event flags.
constexpr uint16_t kEvFailed = 1u << 0;     // the call failed
constexpr uint16_t kEvClamped = 1u << 1;    // duration did not fit in 32 bits: clamped
constexpr uint16_t kEvRusage = 1u << 2;     // the rusage fields below are valid
// nvcsw and nivcsw (only) are valid: a slow call's switches, read after it against a reading the
// thread took when it could not have slept since (the shim's note_switches, docs/analysis.md).
constexpr uint16_t kEvSwitches = 1u << 3;
// The shortest call that gets kEvSwitches: a thread that slept, or waited for a CPU, was away at
// least this long, so a shorter gap between two calls cannot hold a switch.
constexpr uint64_t kSwitchSlowNs = 2000;
constexpr uint64_t switch_slow_ticks(uint64_t tick_hz) { return tick_hz * kSwitchSlowNs / 1000000000; }
// minflt (only, besides nvcsw and nivcsw with kEvSwitches) is valid: the minor faults a slow call
// took, read after it against a reading the thread took when it could not have faulted since.
constexpr uint16_t kEvFaults = 1u << 4;
// minflt (only) is the most faults a slow call took: those since a reading the thread took before
// the call, but longer before it than kEvFaults needs (the call's faults are among them).
constexpr uint16_t kEvFaultsAtMost = 1u << 5;
// With kModeFaults: a timed call, or a gap between two, shorter than this cannot hold a page
// fault — half the calibrated cost of one (minor_fault_ticks), and never more than the switches'
// threshold, after which the shim reads the thread's counts anyway.  0: the calibration has no
// fault cost, and no call gets kEvFaults.  The shim and the analyzer both take it from here.
constexpr uint64_t fault_free_ticks(const Calibration& c) {
  const uint64_t half = c.minor_fault_ticks / 2, slow = switch_slow_ticks(c.tick_hz);
  return half < slow ? half : slow;
}
// One timed call.  When kEvRusage is set, the thread's rusage was read right before and after
// the call: cpu_us = (utime+stime) delta, and the voluntary/involuntary context switches and
// minor faults during the call (each saturated at its field's maximum).
struct Event {
  uint64_t start_tick;
  uint32_t duration_ticks;
  uint32_t size;            // request size, saturated at 2^32-1 (bucket is exact)
  uint8_t op;
  uint8_t bucket;
  uint16_t flags;
  uint16_t cpu_us;
  uint8_t nvcsw;
  uint8_t nivcsw;
  uint16_t minflt;
  uint16_t reserved;
  uint32_t stack_id;        // the call's stack in this thread's Stacks chunks, 0 = none
};
static_assert(sizeof(Event) == 32);

// The request size an event stands for: its size, or, where the size saturated at 2^32-1, the
// lower bound of its bucket (which is exact).  A release whose size was not taken has
// kBucketUnknown and size 0.
constexpr uint64_t event_size(const Event& e) {
  const bool saturated = e.size == 0xffffffffu && e.bucket < kSizeBuckets;
  return saturated && bucket_lo(e.bucket) > e.size ? bucket_lo(e.bucket) : e.size;
}

// --- trace mode ------------------------------------------------------------------------------
// TraceEvents: TraceHeader, then `count` variable-length records, `bytes` bytes in all.  Every
// chunk decodes on its own: deltas start from the header's base values.  A record is
//   byte   op (bits 0-3) | kTraceFailed (bit 4) | kTraceStack (bit 5)
//   varint start tick - previous record's start tick (the first: - base_tick)
//   varint duration in ticks
//   varint zigzag(address - previous record's address) (the first: - base_addr); the address is
//          the block returned (0 when a call failed), the block freed, or the pointer queried
//   varint size                              all ops but free, delete, delete[] (ops.h: n*size, the request…)
//   varint zigzag(old address - address)     realloc and reallocarray only
//   varint stack id                          only with kTraceStack
// Varints are LEB128 (7 bits a byte, low first); zigzag(x) = (x << 1) ^ (x >> 63).
// allocscope/trace_codec.h encodes and decodes records: use it on both sides.
struct TraceHeader {
  uint32_t thread_serial;
  uint32_t count;          // records
  uint64_t first_index;    // index of the first record in the thread's sequence
  uint64_t base_tick;
  uint64_t base_addr;
  uint32_t bytes;          // encoded bytes after this header
  uint32_t reserved;
};
static_assert(sizeof(TraceHeader) == 40);
constexpr uint8_t kTraceOpMask = 0x0f;
constexpr uint8_t kTraceFailed = 1u << 4;
constexpr uint8_t kTraceStack = 1u << 5;

// Stacks: StacksHeader, then `count` x (StackRecord, depth x uint64_t return addresses, innermost
// first).  Ids are per thread, 1, 2, … in order of first use; `hash` (XXH3_64bits of the frames)
// identifies equal stacks across threads and processes of the same build.
struct StacksHeader {
  uint32_t thread_serial;
  uint32_t count;
};
static_assert(sizeof(StacksHeader) == 8);
constexpr uint16_t kStackTruncated = 1u << 0;   // deeper than the walker's limit
constexpr uint16_t kStackFramePointers = 1u << 1;  // walked by frame pointers (may stop early)
struct StackRecord {
  uint32_t stack_id;
  uint16_t depth;
  uint16_t flags;
  uint64_t hash;
};
static_assert(sizeof(StackRecord) == 16);

// Modules: ModulesHeader, then `count` x (ModuleRecord, path_len bytes of path): where each
// loaded object was mapped, so that return addresses resolve to symbols offline.
struct ModulesHeader {
  uint32_t count;
  uint32_t reserved;
};
static_assert(sizeof(ModulesHeader) == 8);
struct ModuleRecord {
  uint64_t load_bias;      // dlpi_addr: address = load_bias + ELF virtual address
  uint64_t start, end;     // the object's lowest and highest mapped address (PT_LOAD)
  uint32_t path_len;
  uint32_t reserved;
};
static_assert(sizeof(ModuleRecord) == 32);

// --- lock waits ------------------------------------------------------------------------------
// LockWaits: LockWaitsHeader, then `count` x LockWaitRow.  With kModeLocks the shim interposes
// the program's pthread_mutex_lock / _timedlock, pthread_rwlock_{rd,wr}lock / _timed{rd,wr}lock
// and pthread_cond_wait / _timedwait.  A lock is tried first (trylock): only when that fails is
// the wait timed, from before the real call to its return.  A condition wait is always timed (it
// is a wait by design, not contention: kind Cond).  pthread_mutex_unlock is timed on a sample of
// calls (about 1 in 256, at pseudo-random intervals), kind Unlock: its rows hold the *sampled*
// calls and their time, and the header's unlocks / unlocks_timed scales them to all of the
// thread's (a contended unlock may wake a waiter: a system call).  Calls made from inside the shim
// are not recorded.  Calls made from inside an allocator call (its own locks) are recorded with
// kModeAllocatorLocks, whether or not kModeLocks is set, in rows of their own (flags
// kLockRowInAllocator; kinds Mutex, RwRead, RwWrite, Spin and, with kModeAllocatorFutexWaits,
// Futex; never a stack; the site is the allocator's call into the lock function).  A thread's
// rows are cumulative: the chunk with the highest seq of a thread_serial replaces the earlier ones.
// Mutex: pthread_mutex_lock, _timedlock, _clocklock and C11's mtx_lock, mtx_timedlock; RwRead and
// RwWrite: pthread_rwlock_{rd,wr}lock and their timed and clock variants; Cond: pthread_cond_wait,
// _timedwait, _clockwait and C11's cnd_wait, cnd_timedwait; Unlock: a timed pthread_mutex_unlock;
// Spin: pthread_spin_lock; Futex: (the allocator's own rows only) a futex wait that slept, made
// through the C library's syscall() — a lock of the allocator's own (tcmalloc's SpinLock, scudo's
// mutex); its `lock` is the futex word.
enum class LockKind : uint8_t { Mutex = 1, RwRead = 2, RwWrite = 3, Cond = 4, Unlock = 5, Spin = 6, Futex = 7 };
constexpr uint8_t kLastLockKind = static_cast<uint8_t>(LockKind::Futex);
struct LockWaitsHeader {
  uint32_t thread_serial;
  uint32_t seq;            // increasing per thread
  uint32_t count;          // rows that follow
  uint32_t allocator_dropped;  // the allocator's own waits not in any row (saturated; 0 before kModeAllocatorLocks)
  uint64_t dropped_waits;  // the program's waits not in any row (the thread's table was full)
  uint64_t dropped_ticks;  // and their time
  uint64_t unlocks;        // pthread_mutex_unlock calls of the thread, up to its last timed one
  uint64_t unlocks_timed;  // of which timed (in Unlock rows, or dropped)
};
static_assert(sizeof(LockWaitsHeader) == 48);
struct LockWaitRow {
  uint64_t lock;        // the lock's address (for Cond: the condition variable's)
  uint64_t site;        // return address of the call into the lock function (the call site)
  uint64_t waits;       // contended calls (trylock failed; Cond: every call; Unlock: the timed ones)
  uint64_t wait_ticks;  // their summed duration
  uint64_t max_ticks;   // the longest
  uint32_t stack_id;    // a call stack of one of these waits in this thread's Stacks, 0 = none
  uint8_t kind;         // LockKind
  uint8_t flags;        // kLockRowInAllocator; 0 in profiles written before (reserved then)
  uint16_t timeouts;    // timed variants that gave up (saturated)
};
static_assert(sizeof(LockWaitRow) == 48);
// The row's waits were the allocator's own, inside its calls (kModeAllocatorLocks).
constexpr uint8_t kLockRowInAllocator = 1;

// --- peer waits ------------------------------------------------------------------------------
// PeerWaits: PeerWaitsHeader, then `count` x PeerWait.  With kModePeerWaits, a thread that ends a
// timed call now and then (at most once per kPeerLookGapNs of its time) looks for another thread
// that has been inside a timed call for at least kSwitchSlowNs, and reads what that thread is
// doing from the kernel (/proc/self/task/TID/syscall): the system call it sleeps in and its first
// two arguments — for a futex wait, the address of the word it waits on and the operation.  The
// call it was inside is the peer's Event with start_tick == peer_start_tick.  Nothing is recorded
// if the peer left that call while it was read.
// With kModePeerLooksOutside, the process also looks outside the windows, at most once per
// kPeerLookOutsideGapNs (all threads together): the thread that notices it is time picks one of
// the threads inside an allocator call, timed or not, at random.  The peer's call has no Event
// then: peer_start_tick carries kPeerUntimed and the call's op and size bucket
// (peer_untimed_call).  Such looks sample, at moments that do not depend on the allocator, what
// threads inside its calls are doing.  The observer was about to make an allocator call of its
// own when it looked: that call is timed (kPeerProbed), with its op and size bucket, its duration
// (its latency bin, buckets.h latency_bin_of) and whether the observer slept in it (a voluntary
// context switch: kPeerProbeSlept); and just before it started, the observer read which other
// threads were inside allocator calls (of up to 32 of them; more: kPeerProbeUnknownPeer): how many, the smallest and
// the largest size bucket of their allocating calls, and whether one was in a call of no known
// size (a free outside the windows, or another kind).  A lock that every call takes holds up the
// observer's call too when another thread is asleep on it, and makes it sleep behind calls of
// any size; a lock on a path that few calls take does neither, a lock per size class only
// behind calls of its own class.
constexpr uint64_t kPeerLookGapNs = 25000;
constexpr uint64_t kPeerLookOutsideGapNs = 1000000;
constexpr int32_t kPeerInUserSpace = -1;  // not in a system call: preempted in user space (arg0 sp, arg1 pc)
constexpr int32_t kPeerRunning = -2;      // on a CPU: the kernel does not say more
// A look outside the windows that saw nothing (no thread inside a call, or it left the call before
// the read): the record carries the observer's probe only.
constexpr int32_t kPeerNotSeen = -3;
// A probe taken between the looks (kTurnsPerLook - 1 of every kTurnsPerLook turns, a turn at most
// every kPeerProbeGapNs): no thread was looked at, and
// the record carries the probe only (with kPeerUntimed; peer_serial is the observer's own).  These
// probes sample the allocator's calls at moments that depend neither on the allocator nor on a
// look's reading of /proc just before, and are several times as many as the looks.
constexpr int32_t kPeerNoLook = -4;
// A hold (kModeHolds): the observer asked the other threads that were inside allocator calls to stay
// where they were for kHoldNs (a signal whose handler spins on the clock: the call it interrupts
// does not go on meanwhile), waited until they did, and then made its own call, timed like a probe
// (peer_start_tick as for kPeerNoLook: the held threads' calls are the `peers`).  A lock that
// every call takes is held by a held thread inside a call as often as that thread holds it at all:
// the observer's call then waits until the hold ends and the holder lets the lock go, whatever
// sizes the two ask for.  An allocator without such a lock lets the observer's call through.
// peer_serial: the held thread whose hold ended last inside the observer's call (the releaser),
// or the observer's own serial when none did; tick: the observer's call's start; arg0: its
// duration in ticks; arg1: hold_outcome() below.
constexpr int32_t kPeerHold = -5;
constexpr uint64_t kHoldNs = 30000;
// A turn holds instead of probing alone at most once per kHoldGapNs for the whole process, when the
// observer's call is an allocation (its size is known) and the turn is not a look's; and, on a
// schedule of their own as often, holds whose observer's call is a release (its op says so; its
// size is not known: only whether it went past the held threads counts).  Only threads in
// allocating calls are held (a release's size is not known).
constexpr uint64_t kHoldGapNs = 5000000;
// arg1 of a hold: bits 0-31 the ticks from the releaser's hold end to the end of the observer's
// call (saturated), 32-39 the releaser's size bucket, 40-46 its op, 47 a releaser, 48-55 the held
// threads, 56 the observer lost its CPU during its call (an involuntary switch), 57-63 how many
// held threads inside calls had their holds end inside the observer's call (saturated).
struct HoldOutcome {
  bool released;
  uint64_t after_ticks;
  unsigned op, bucket;
  unsigned held;
  bool preempted;
  unsigned ended_inside;
};
constexpr uint64_t hold_outcome(HoldOutcome h) {
  return (h.after_ticks > 0xffffffffu ? 0xffffffffu : h.after_ticks) | static_cast<uint64_t>(h.bucket & 0xff) << 32 |
         static_cast<uint64_t>(h.op & 0x7f) << 40 | (h.released ? uint64_t{1} << 47 : 0) |
         static_cast<uint64_t>(h.held > 255 ? 255 : h.held) << 48 | (h.preempted ? uint64_t{1} << 56 : 0) |
         static_cast<uint64_t>(h.ended_inside > 127 ? 127 : h.ended_inside) << 57;
}
constexpr HoldOutcome hold_outcome_of(uint64_t x) {
  return HoldOutcome{(x >> 47 & 1) != 0, x & 0xffffffffu, static_cast<unsigned>(x >> 40) & 0x7f,
                     static_cast<unsigned>(x >> 32) & 0xff, static_cast<unsigned>(x >> 48) & 0xff, (x >> 56 & 1) != 0,
                     static_cast<unsigned>(x >> 57)};
}
// The looks and the probes alone share one schedule: a turn at most every kPeerProbeGapNs, every
// kTurnsPerLook-th of them with a look — two probes alone a millisecond, one look; and the turn
// after a look that found a thread asleep in a futex wait looks again (a hold due goes first).
constexpr uint64_t kTurnsPerLook = 3;
constexpr uint64_t kPeerProbeGapNs = kPeerLookOutsideGapNs / kTurnsPerLook;
// peer_start_tick of a look outside the windows: bits 0-7 the peer's size bucket, 8-11 its op;
// 12-15 the observer's own call's op, 16-23 its size bucket, 24-31 its latency bin; 32-39 and
// 40-47 the smallest and largest bucket of the other threads' allocating calls in progress as it
// started, 48-50 how many threads were inside calls then (saturated at 7), 51 one of them in a
// call of no known size (kPeerProbeUnknownPeer); 61 kPeerProbeSlept, 62 kPeerProbed, 63
// kPeerUntimed.
constexpr uint64_t kPeerUntimed = uint64_t{1} << 63;
constexpr uint64_t kPeerProbed = uint64_t{1} << 62;
constexpr uint64_t kPeerProbeSlept = uint64_t{1} << 61;
constexpr uint64_t kPeerProbeUnknownPeer = uint64_t{1} << 51;
constexpr uint64_t peer_untimed_call(unsigned op, unsigned bucket) {
  return kPeerUntimed | static_cast<uint64_t>(op & 0xf) << 8 | (bucket & 0xff);
}
// What the other threads were doing as the probe started: `inside` threads in calls, the smallest
// and largest bucket of their allocating calls of known size (min > max: none), and whether one
// was in a call of no known size.
struct ProbePeers {
  unsigned inside, min_bucket, max_bucket;
  bool unknown;
};
constexpr ProbePeers kNoProbePeers{0, 0xff, 0, false};
constexpr uint64_t peer_probe(unsigned op, unsigned bucket, unsigned latency_bin, bool slept, ProbePeers peers) {
  return kPeerProbed | (slept ? kPeerProbeSlept : 0) | static_cast<uint64_t>(op & 0xf) << 12 |
         static_cast<uint64_t>(bucket & 0xff) << 16 | static_cast<uint64_t>(latency_bin & 0xff) << 24 |
         static_cast<uint64_t>(peers.min_bucket & 0xff) << 32 | static_cast<uint64_t>(peers.max_bucket & 0xff) << 40 |
         static_cast<uint64_t>(peers.inside > 7 ? 7 : peers.inside) << 48 | (peers.unknown ? kPeerProbeUnknownPeer : 0);
}
constexpr bool peer_probed(uint64_t peer_start_tick) {
  return (peer_start_tick & (kPeerUntimed | kPeerProbed)) == (kPeerUntimed | kPeerProbed);
}
constexpr unsigned peer_untimed_op(uint64_t x) { return static_cast<unsigned>(x >> 8) & 0xf; }
constexpr unsigned peer_untimed_bucket(uint64_t x) { return static_cast<unsigned>(x) & 0xff; }
constexpr unsigned peer_probe_op(uint64_t x) { return static_cast<unsigned>(x >> 12) & 0xf; }
constexpr unsigned peer_probe_bucket(uint64_t x) { return static_cast<unsigned>(x >> 16) & 0xff; }
constexpr unsigned peer_probe_latency_bin(uint64_t x) { return static_cast<unsigned>(x >> 24) & 0xff; }
constexpr bool peer_probe_slept(uint64_t x) { return (x & kPeerProbeSlept) != 0; }
constexpr ProbePeers peer_probe_peers(uint64_t x) {
  ProbePeers p = kNoProbePeers;
  p.min_bucket = static_cast<unsigned>(x >> 32) & 0xff;
  p.max_bucket = static_cast<unsigned>(x >> 40) & 0xff;
  p.inside = static_cast<unsigned>(x >> 48) & 7;
  p.unknown = (x & kPeerProbeUnknownPeer) != 0;
  return p;
}
constexpr bool peer_call_untimed(uint64_t peer_start_tick) { return (peer_start_tick & kPeerUntimed) != 0; }
struct PeerWaitsHeader {
  uint32_t thread_serial;  // the observer
  uint32_t count;
};
static_assert(sizeof(PeerWaitsHeader) == 8);
struct PeerWait {
  uint64_t tick;             // when the observer looked
  uint64_t peer_start_tick;  // the start of the peer's timed call, or peer_untimed_call(op, bucket)
  uint32_t peer_serial;
  int32_t syscall;           // the kernel's number of the system call, or kPeerInUserSpace, kPeerRunning, kPeerNotSeen, kPeerNoLook
  uint64_t arg0, arg1;       // its first two arguments
};
static_assert(sizeof(PeerWait) == 40);

// --- CPU samples -----------------------------------------------------------------------------
// CpuSamples (kModeCpuSamples): the samples of one thread's CPU time so far, by where the thread
// was.  A sample is due every kCpuSampleNs of the thread's CPU time (the kernel checks a thread's
// CPU timers at its clock ticks, so samples may come further apart): the counts are shares of the
// thread's CPU time (the rusage of its ThreadStats snapshot), not durations.  Cumulative: the
// chunk with the highest seq of a thread_serial replaces the earlier ones.
constexpr uint64_t kCpuSampleNs = 1000000;
struct CpuSamples {
  uint32_t thread_serial;
  uint32_t seq;            // increasing per thread
  uint64_t samples;        // all samples of the thread
  uint64_t in_allocator;   // inside an allocator call (the real allocator, the shim's entry around it)
  uint64_t in_shim;        // inside the shim's own work (timing, flushing, looks), outside a call
  uint64_t in_locks;       // inside a traced pthread_mutex_*/pthread_rwlock_* lock or unlock call
  uint64_t in_cond;        // inside a traced pthread_cond_wait / _timedwait
};
static_assert(sizeof(CpuSamples) == 48);

// --- Lock test ---------------------------------------------------------------------------------
// What allocscope-lockprobe (lockprobe/lockprobe.c) found when `record` ran it after the program
// ended, with the program's environment and allocator: two threads of its own allocate; one is
// held by a signal where it was, and the other is watched.  counts[phase][where][outcome]: phase
// kLockTestApart (the two ask for sizes three powers of two apart) or kLockTestSame (one size);
// where the held thread was; what the watched thread did meanwhile.
enum class LockTestStatus : uint8_t { Ran = 1, NotRun = 2, Failed = 3 };
enum LockTestPhase { kLockTestApart = 0, kLockTestSame = 1, kLockTestPhases = 2 };
enum LockTestWhere {
  kHeldOutside = 0,        // between its calls
  kHeldInMalloc = 1,       // inside malloc
  kHeldInFree = 2,         // inside free
  kHeldAfterSyscall = 3,   // inside malloc, in a system call (a waiter, at or just past its syscall: it held no lock)
  kLockTestWheres = 4
};
enum LockTestOutcome {
  kWatchedPassed = 0,        // completed calls until the hold's last 25 µs
  kWatchedStopped = 1,       // stopped within 2 calls of the hold's start, spinning or asleep in a futex wait
  kWatchedStoppedLater = 2,  // stopped likewise after more calls
  kWatchedPreempted = 3,     // stopped while waiting for a CPU: tells nothing
  kWatchedOther = 4,         // asleep in another system call
  kLockTestOutcomes = 5
};
struct LockTest {
  uint8_t status;      // LockTestStatus
  uint8_t libc;        // Libc the probe ran with
  uint16_t reserved;
  uint32_t lost;       // holds that never ended
  uint32_t counts[kLockTestPhases][kLockTestWheres][kLockTestOutcomes];
  uint32_t detail_len;
};
static_assert(sizeof(LockTest) == 172);

enum class ExitKind : uint32_t { Exit = 1, UnderscoreExit = 2, Exec = 3, Explicit = 4 };

// The end of the program image.  After an exec that failed, recording resumes and a later
// ProcessEnd supersedes this one.
struct ProcessEnd {
  uint64_t end_tick;
  uint64_t end_mono_ns;
  uint32_t threads_seen;     // threads that called the allocator
  uint32_t max_live_threads;
  uint64_t events_dropped;   // total over all threads
  uint64_t write_errors;     // chunks that could not be written
  uint32_t exit_kind;        // ExitKind
  uint32_t reserved;
};
static_assert(sizeof(ProcessEnd) == 48);

}  // namespace allocscope::format
