// shim/peer_waits.cpp — see peer_waits.h.
#include "peer_waits.h"

#include <fcntl.h>
#include <signal.h>
#include <ucontext.h>
#include <sys/uio.h>

#include <atomic>
#include <cstring>

#include "allocscope/buckets.h"
#include "allocscope/ops.h"
#include "allocscope/window_phase.h"
#include "cpu_samples.h"
#include "process_state.h"
#include "recorder.h"
#include "signal_api.h"
#include "slot_registry.h"
#include "sys.h"
#include "text_buffer.h"

namespace allocscope {
namespace {

// Set when /proc cannot be read at all (not mounted, or denied): looking stops for good.
std::atomic<bool> g_unreadable{false};
// Set when the kernel refuses process_vm_readv (a seccomp filter, say): no looks outside windows.
std::atomic<bool> g_no_vm_read{false};

// The value of a lowercase hexadecimal digit, or -1.
int hex_digit(char c) { return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1; }

// A number of the file: decimal (possibly negative) or 0x-prefixed hexadecimal.  Advances `p`.
bool parse_number(const char*& p, const char* end, int64_t* out) {
  while (p < end && *p == ' ') ++p;
  bool neg = false;
  if (p < end && *p == '-') neg = true, ++p;
  uint64_t v = 0;
  const char* start = p;
  if (end - p > 2 && p[0] == '0' && p[1] == 'x') {
    p += 2;
    start = p;
    for (; p < end; ++p) {
      const int d = hex_digit(*p);
      if (d < 0) break;
      v = v << 4 | static_cast<uint64_t>(d);
    }
  } else {
    for (; p < end && *p >= '0' && *p <= '9'; ++p) v = v * 10 + static_cast<uint64_t>(*p - '0');
  }
  if (p == start) return false;
  *out = neg ? -static_cast<int64_t>(v) : static_cast<int64_t>(v);
  return true;
}

// The kernel's file `name` of thread `tid` (/proc/self/task/TID/name), opened; -1 when it cannot be
// (the thread has just left, or /proc cannot be read: then looking stops).
int open_task_file(uint32_t tid, const char* name) {
  char path[48];
  TextBuffer(path, sizeof path).put("/proc/self/task/").put_uint(tid).put("/").put(name);
  const long fd = sys::openat(AT_FDCWD, path, O_RDONLY | O_CLOEXEC, 0);
  if (sys::failed(fd)) {
    if (fd != -2 && fd != -3) g_unreadable.store(true, std::memory_order_relaxed);  // not ENOENT or ESRCH (the thread just left)
    return -1;
  }
  return static_cast<int>(fd);
}

// The file that says what thread `tid` is doing.  Opening costs most of a look: the peer's call is
// checked again after it, so that only the read itself must fall inside that call.
int open_peer(uint32_t tid) { return open_task_file(tid, "syscall"); }

// What the file read says the thread was doing: false when it made no sense.
bool parse_peer(const char* buf, long n, format::PeerWait* w) {
  if (n <= 0) return false;
  const char* p = buf;
  const char* end = buf + n;
  if (n >= 7 && std::memcmp(buf, "running", 7) == 0) {
    w->syscall = format::kPeerRunning;
    return true;
  }
  int64_t nr = 0, a0 = 0, a1 = 0;
  if (!parse_number(p, end, &nr)) return false;
  if (nr < 0) {  // "-1 sp pc"
    w->syscall = format::kPeerInUserSpace;
    if (parse_number(p, end, &a0) && parse_number(p, end, &a1)) {
      w->arg0 = static_cast<uint64_t>(a0);
      w->arg1 = static_cast<uint64_t>(a1);
    }
    return true;
  }
  if (!parse_number(p, end, &a0) || !parse_number(p, end, &a1)) return false;
  w->syscall = static_cast<int32_t>(nr);
  w->arg0 = static_cast<uint64_t>(a0);
  w->arg1 = static_cast<uint64_t>(a1);
  return true;
}

// Reads the opened file of a peer, if `still_inside()` holds just before and just after the read
// (the peer is in the same call), and closes it.
template <class StillInside>
bool read_peer(int fd, format::PeerWait* w, StillInside still_inside) {
  char buf[160];
  bool ok = still_inside();
  const long n = ok ? sys::read(fd, buf, sizeof buf) : 0;
  ok = ok && !sys::failed(n) && still_inside();
  sys::close(fd);
  return ok && parse_peer(buf, n, w);
}

// Reads `n` gate words of other threads (SlotHeader::gate_addr) into `out`; how many were read (a
// thread gone meanwhile stops the read at its word), or -1 when the kernel refuses the call.
long read_gates(const uint64_t* addrs, uint64_t* out, uint32_t n) {
  iovec local[kPeerCandidates], remote[kPeerCandidates];
  for (uint32_t i = 0; i < n; i++) {
    local[i] = iovec{&out[i], sizeof out[i]};
    remote[i] = iovec{reinterpret_cast<void*>(addrs[i]), sizeof out[i]};
  }
  const long r = sys::process_vm_readv(sys::getpid(), local, n, remote, n);
  if (r == -38 /* ENOSYS */ || r == -1 /* EPERM */) return -1;
  return sys::failed(r) ? 0 : r / static_cast<long>(sizeof(uint64_t));
}

// Adds the call a gate word shows (if it shows one) to `pp`: one more thread inside, and its size
// bucket if it allocates a known size, else a call of no known size.
void add_inside(format::ProbePeers& pp, uint64_t gate) {
  if (!gate_in_call(gate)) return;
  ++pp.inside;
  const unsigned op = gate_op(gate), bucket = gate_bucket(gate);
  if (allocates(op) && bucket < kSizeBuckets) {
    pp.min_bucket = bucket < pp.min_bucket ? bucket : pp.min_bucket;
    pp.max_bucket = bucket > pp.max_bucket ? bucket : pp.max_bucket;
  } else {
    pp.unknown = true;
  }
}

// Which of the `n` threads whose gate words lie at `addrs` are inside calls, and of what sizes; a
// word that could not be read counts as a call of no known size.
format::ProbePeers who_is_inside(const uint64_t* addrs, uint32_t n) {
  uint64_t gates[kPeerCandidates];
  format::ProbePeers pp = format::kNoProbePeers;
  const long got = read_gates(addrs, gates, n);
  for (long i = 0; i < got; i++) add_inside(pp, gates[i]);
  if (got < static_cast<long>(n)) pp.unknown = true;
  return pp;
}

// A look that saw a thread inside a call: worth keeping without its probe.
bool saw_something(const format::PeerWait& w) {
  return w.syscall != format::kPeerNotSeen && w.syscall != format::kPeerNoLook;
}

// Appends a record; false when the array is full (see make_look_room).
bool keep_look(Slot* self, const format::PeerWait& w) {
  const uint32_t count = self->h.peer_count.load(std::memory_order_relaxed);
  if (count >= kPeerWaits) return false;
  self->peer_waits[count] = w;
  self->h.peer_count.store(count + 1, std::memory_order_release);
  return true;
}

}  // namespace

std::atomic<uint64_t> g_next_outside_turn{0};
std::atomic<uint64_t> g_next_hold{0};
// Holds whose call is a release, on a schedule of their own: a thread that only frees (a consumer
// of blocks other threads allocated) can then test whether its calls go past held ones, without
// taking a hold from the allocations, whose sizes the verdict weighs.
std::atomic<uint64_t> g_next_release_hold{0};
std::atomic<uint64_t> g_outside_turns{0};
// The last look found a thread asleep in a futex wait inside an allocator call: the next turn looks
// again (docs/analysis.md, "Where do sleeping calls wait?").  A lock that puts its waiters to sleep
// is then looked at up to three times as often as the schedule says, while it keeps doing so; an
// allocator whose threads seldom sleep inside it keeps the schedule.
std::atomic<bool> g_look_again{false};

bool make_look_room(Slot* self) {
  if (self->h.peer_count.load(std::memory_order_relaxed) < kPeerWaits) return true;
  uint32_t idle = 0;
  if (!self->h.flushing.compare_exchange_strong(idle, 1, std::memory_order_acquire)) return false;
  const bool written = self->h.peer_flushed == self->h.peer_count.load(std::memory_order_relaxed);
  if (written) {
    self->h.peer_flushed = 0;
    self->h.peer_count.store(0, std::memory_order_release);
  }
  self->h.flushing.store(0, std::memory_order_release);
  return written;
}

namespace {

// The call this thread is about to make becomes the probe of look `w`, if its switches can be
// read: who is inside a call as it starts (of the `m` gate words at `addrs`; beyond them, with
// `more`, one may be).  Else a look that saw something is kept without it.
bool start_probe(Slot* self, const format::PeerWait& w, const uint64_t* addrs, uint32_t m, bool more) {
  ThreadCtx& t = t_ctx;
  // Who is inside first: process_vm_readv takes the memory map's lock and may sleep on it while
  // another thread maps or unmaps memory — a sleep that is not the probe's.
  format::ProbePeers peers = who_is_inside(addrs, m);
  if (more) peers.unknown = true;
  format::Rusage ru;
  read_thread_rusage(ru);
  if (ru.nvcsw == ~uint64_t{0}) {
    if (saw_something(w)) keep_look(self, w);
    return false;
  }
  t.probe_look = w;
  t.probe_nvcsw = ru.nvcsw;
  t.probe_pending = 1;
  t.probe_peers = peers;
  return true;
}

}  // namespace

namespace {

// The look of one turn: at one of the `m` threads whose gate words lie at `addrs`, chosen among
// those inside an allocator call (each as likely: reservoir sampling of one).  The record says
// what it was doing, or kPeerNotSeen; false when the kernel refuses process_vm_readv.
bool look_at_one(Slot* const* peers, const uint64_t* addrs, uint32_t m, uint64_t pick, format::PeerWait* w) {
  uint64_t gates[kPeerCandidates];
  const long got = read_gates(addrs, gates, m);
  if (got < 0) return false;
  long chosen = -1;
  uint64_t seen = 0;
  for (long i = 0; i < got; i++) {
    if (!gate_in_call(gates[i])) continue;
    ++seen;
    if (mix64(pick + seen) % seen == 0) chosen = i;
  }
  w->peer_serial = load_shared(peers[0]->h.serial);
  w->syscall = format::kPeerNotSeen;
  if (chosen < 0) return true;
  Slot* peer = peers[chosen];
  format::PeerWait found = *w;
  found.peer_serial = load_shared(peer->h.serial);
  const int fd = open_peer(load_shared(peer->h.tid));
  // The call may have ended while the file was opened: the one in progress now, if any, is looked
  // at.  The decisions before the gate: a gate read again unchanged, with no decision since, is
  // one call.
  uint64_t gate = 0, decided = 0;
  const auto still_inside = [&] {
    uint64_t now_gate = 0;
    const uint64_t now_decided = load_shared(peer->h.decisions);
    if (read_gates(&addrs[chosen], &now_gate, 1) != 1 || !gate_in_call(now_gate)) return false;
    if (gate == 0) gate = now_gate, decided = now_decided;
    return now_gate == gate && now_decided == decided && peer->h.state.load(std::memory_order_acquire) == kSlotOwned &&
           load_shared(peer->h.serial) == found.peer_serial;
  };
  if (fd >= 0 && read_peer(fd, &found, still_inside)) {
    found.peer_start_tick = format::peer_untimed_call(gate_op(gate), gate_bucket(gate));
    *w = found;
  }
  return true;
}

}  // namespace

namespace {

// How long a requester waits for the held threads to stop, in holds (2 x 30 µs): a signal reaches
// a thread on a CPU within microseconds, one that waits for a CPU only when it runs again.  A
// request older than that has lapsed.
constexpr uint64_t kHoldAckWait = 2;

// The signal that holds a thread (0: not chosen yet, -1: none could be had), and the handler.
std::atomic<int> g_hold_signal{0};
std::atomic<int> g_hold_choosing{0};

// Whether the signal interrupted a system call: a thread asleep in one (a futex wait) holds nothing.
// The kernel either restarts it (SA_RESTART: the saved pc is back on the system call instruction)
// or makes it fail with EINTR.
bool interrupted_system_call(const void* context) {
  if (!context) return false;
  const auto* uc = static_cast<const ucontext_t*>(context);
#if defined(__x86_64__)
  const auto* pc = reinterpret_cast<const unsigned char*>(uc->uc_mcontext.gregs[REG_RIP]);
  if (uc->uc_mcontext.gregs[REG_RAX] == -EINTR) return true;
  // `syscall` is 0f 05; a 0f byte always begins an instruction of two bytes or more, so the second
  // byte is mapped whenever the first is.
  return pc && pc[0] == 0x0f && pc[1] == 0x05;
#elif defined(__aarch64__)
  const auto* pc = reinterpret_cast<const uint32_t*>(uc->uc_mcontext.pc);
  return static_cast<long>(uc->uc_mcontext.regs[0]) == -EINTR || (pc && *pc == 0xd4000001u);  // svc #0
#else
  (void)uc;
  return false;
#endif
}

// Interrupts the thread where it is and, if a request is outstanding and fresh (a signal that was
// pending while the thread could not take it comes late), stays there for hold_ticks — only inside
// an allocating call, outside any system call: elsewhere the thread holds none of the allocator's
// locks (hold_gate then says it was not inside a call).  Only the clock and the thread's own slot.
void on_hold(const ThreadCtx& t, const void* context) {
  Slot* s = t.slot;
  if (!s) return;
  const uint64_t asked = s->h.hold_request.load(std::memory_order_acquire);
  if (asked == 0) return;
  const uint64_t start = ticks();
  if (s->h.hold_request.exchange(0, std::memory_order_acq_rel) != 0) g_holds_in_flight.fetch_sub(1, std::memory_order_release);
  if (start - asked > kHoldAckWait * g_sampling.hold_ticks) return;
  uint64_t gate;
  __builtin_memcpy(&gate, &t.countdown, sizeof gate);
  if (!gate_in_call(gate) || !allocates(gate_op(gate)) || interrupted_system_call(context)) {
    s->h.hold_gate.store(0, std::memory_order_relaxed);
    s->h.hold_end.store(start, std::memory_order_relaxed);
    s->h.hold_start.store(start, std::memory_order_release);
    return;
  }
  s->h.hold_gate.store(gate, std::memory_order_relaxed);
  s->h.hold_start.store(start, std::memory_order_release);
  uint64_t end = start;
  while (end - start < g_sampling.hold_ticks) {
    __builtin_ia32_pause();
    end = ticks();
  }
  s->h.hold_end.store(end, std::memory_order_release);
}

// The shim's signal: a CPU sample when its thread's timer sent it (cpu_samples.h), else a hold.
uintptr_t interrupted_pc(const void* context) {
  if (!context) return 0;
  const auto* uc = static_cast<const ucontext_t*>(context);
#if defined(__x86_64__)
  return static_cast<uintptr_t>(uc->uc_mcontext.gregs[REG_RIP]);
#elif defined(__aarch64__)
  return static_cast<uintptr_t>(uc->uc_mcontext.pc);
#else
  (void)uc;
  return 0;
#endif
}

void on_shim_signal(int, siginfo_t* info, void* context) {
  if (info && info->si_code == SI_TIMER) {
    take_cpu_sample(interrupted_pc(context));
    return;
  }
  on_hold(t_ctx, context);
}

}  // namespace

int hold_signal_chosen() { return g_hold_signal.load(std::memory_order_acquire); }

// The shim's signal, installed on first use: the highest real-time signal from 60 down whose
// disposition is the default (the program does not use it); none when every one is taken.  Checked
// again at every hold: a program that installs its own handler on it later ends the holds.
int hold_signal() {
  int sig = g_hold_signal.load(std::memory_order_acquire);
  if (sig < 0) return -1;
  if (sig > 0) {
    struct sigaction cur;
    if (real_sigaction(sig, nullptr, &cur) == 0 && (cur.sa_flags & SA_SIGINFO) && cur.sa_sigaction == on_shim_signal)
      return sig;
    g_hold_signal.store(-1, std::memory_order_release);
    return -1;
  }
  int idle = 0;
  if (!g_hold_choosing.compare_exchange_strong(idle, 1, std::memory_order_acquire)) {
    // Another thread is choosing (threads of a pool start together): a few sigaction calls.  At
    // most 20 ms: in a fork child the chooser may be a thread that did not follow; then there is
    // none, for good (a chooser merely slow still stores its choice over it).
    const uint64_t start = mono_ns();
    while (g_hold_signal.load(std::memory_order_acquire) == 0) {
      if (mono_ns() - start > 20000000) {
        int none = 0;
        g_hold_signal.compare_exchange_strong(none, -1, std::memory_order_acq_rel);
        break;
      }
      sys::sched_yield();
    }
    return hold_signal();
  }
  int chosen = -1;
  for (int n = kLastShimSignal; n >= kFirstShimSignal && chosen < 0; --n) {
    struct sigaction cur;
    if (real_sigaction(n, nullptr, &cur) != 0 || cur.sa_handler != SIG_DFL) continue;
    struct sigaction sa;
    __builtin_memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_shim_signal;
    sa.sa_flags = SA_RESTART | SA_SIGINFO;
    if (real_sigaction(n, &sa, nullptr) == 0) chosen = n;
  }
  g_hold_signal.store(chosen, std::memory_order_release);
  return chosen;
}

namespace {

// Whether the thread of `peer` lets signal `sig` through (its blocked set, the "SigBlk:" line of
// /proc/self/task/TID/status).  A thread that blocks it would keep it pending: a program that
// takes its signals with sigwait or signalfd would read it as its own, and an exec would carry it
// into the next program, where the default action of a real-time signal ends the process.
// Out of line: its 2 KiB buffer stays out of the frame of the turn that calls it.
[[gnu::noinline]] bool takes_signal(const Slot* peer, int sig) {
  const int fd = open_task_file(load_shared(peer->h.tid), "status");
  if (fd < 0) return false;
  char buf[2048];
  const long n = sys::read(fd, buf, sizeof buf);
  sys::close(fd);
  if (sys::failed(n) || n <= 0) return false;
  static constexpr char kKey[] = "\nSigBlk:";
  for (long i = 0; i + static_cast<long>(sizeof kKey) - 1 < n; ++i) {
    if (std::memcmp(buf + i, kKey, sizeof kKey - 1) != 0) continue;
    const char* p = buf + i + sizeof kKey - 1;
    const char* end = buf + n;
    while (p < end && (*p == ' ' || *p == '\t')) ++p;
    uint64_t mask = 0;
    int digits = 0;
    for (; p < end && digits < 16; ++p, ++digits) {
      const int d = hex_digit(*p);
      if (d < 0) break;
      mask = mask << 4 | static_cast<uint64_t>(d);
    }
    return digits == 16 && (mask & sys::signal_bit(sig)) == 0;
  }
  return false;
}

// takes_signal(), read again once its last reading is 50 ms old (signal_check_ticks): the shim sees
// the masks set through pthread_sigmask and sigprocmask (refuse_holds), this reading the rest (a
// mask inherited from the thread's creator, or set by the system call itself).  So the signal
// follows the reading of the gate words within microseconds: the held thread is most likely still
// in the call, not yet in a system call of its own that the signal would interrupt.
bool lets_signal_through(Slot* peer, int sig) {
  const uint64_t now = ticks(), checked = peer->h.signal_checked.load(std::memory_order_relaxed);
  if (checked != 0 && now - (checked >> 1) < g_sampling.signal_check_ticks) return (checked & 1) != 0;
  const bool through = takes_signal(peer, sig);
  peer->h.signal_checked.store(now << 1 | (through ? 1 : 0), std::memory_order_relaxed);
  return through;
}

// A hold turn: asks the threads (of the `m` at `peers`, gate words at `addrs`) that are inside
// allocator calls to stay where they are, waits until they do (kHoldAckWait holds at most), and makes the
// call this thread is about to make the probe of the hold.  False when nothing could be held.
bool hold_peers(Slot* self, Slot* const* peers, const uint64_t* addrs, uint32_t m, int sig, uint64_t now) {
  ThreadCtx& t = t_ctx;
  const SamplingConfig& c = g_sampling;
  // The hold must end before the next window opens: a call held into a window would be timed.
  if (t.next_open > now && t.next_open - now < (kHoldAckWait + 2) * c.hold_ticks) return false;
  uint64_t gates[kPeerCandidates];
  const long got = read_gates(addrs, gates, m);
  const int pid = sys::getpid();
  uint32_t asked = 0;
  uint64_t sent = now;
  for (long i = 0; i < got && asked < sizeof t.hold_targets / sizeof t.hold_targets[0]; i++) {
    if (!gate_in_call(gates[i]) || !allocates(gate_op(gates[i]))) continue;  // a release's size is not known
    Slot* peer = peers[i];
    if (peer->h.holds_refused.load(std::memory_order_relaxed) != 0 || !lets_signal_through(peer, sig)) continue;
    // Dated when sent: the reads above may have taken this thread off its CPU for a while.
    sent = ticks();
    uint64_t none = 0;  // one request at a time per thread: one pending signal at most
    if (!peer->h.hold_request.compare_exchange_strong(none, sent, std::memory_order_seq_cst)) continue;
    g_holds_in_flight.fetch_add(1, std::memory_order_acq_rel);
    // The peer is about to block the signal (refuse_holds): its SigBlk line above was read before.
    // Its flag and this request are each written before the other is read (sequentially
    // consistent): one of the two threads sees the other's.
    if (peer->h.holds_refused.load(std::memory_order_seq_cst) != 0) {
      if (peer->h.hold_request.exchange(0, std::memory_order_acq_rel) != 0)
        g_holds_in_flight.fetch_sub(1, std::memory_order_release);
      continue;
    }
    peer->h.hold_start.store(0, std::memory_order_relaxed);
    peer->h.hold_end.store(0, std::memory_order_relaxed);
    // The program may be installing a handler of its own on the signal (program_takes_signal).
    const bool ours = g_hold_signal.load(std::memory_order_acquire) == sig;
    if (!ours || sys::failed(sys::tgkill(pid, static_cast<int>(load_shared(peer->h.tid)), sig))) {
      if (peer->h.hold_request.exchange(0, std::memory_order_acq_rel) != 0)
        g_holds_in_flight.fetch_sub(1, std::memory_order_release);
      if (!ours) break;
      continue;
    }
    t.hold_targets[asked++] = peer;
  }
  if (asked == 0) return false;
  format::ProbePeers held = format::kNoProbePeers;  // the held threads' calls, as a probe's peers
  for (;;) {
    held = format::kNoProbePeers;
    uint32_t acked = 0;
    for (uint32_t k = 0; k < asked; k++) {
      if (t.hold_targets[k]->h.hold_start.load(std::memory_order_acquire) == 0) continue;
      ++acked;
      add_inside(held, t.hold_targets[k]->h.hold_gate.load(std::memory_order_relaxed));
    }
    // Counted before the time is checked: a requester that lost its CPU meanwhile sees who is held.
    if (acked == asked || ticks() - sent >= kHoldAckWait * c.hold_ticks) break;
    __builtin_ia32_pause();  // (no yield: a busy machine would take the CPU for milliseconds)
  }
  // Nobody held in time, or only threads that had left their calls: the requests lapse.
  if (held.inside == 0) return false;
  format::Rusage ru;
  read_thread_rusage(ru);
  if (ru.nvcsw == ~uint64_t{0}) return false;
  format::PeerWait w{};
  w.peer_serial = load_shared(self->h.serial);
  w.peer_start_tick = format::kPeerUntimed;
  w.syscall = format::kPeerHold;
  t.probe_look = w;
  t.probe_nvcsw = ru.nvcsw;
  t.probe_nivcsw = ru.nivcsw;
  t.probe_peers = held;
  t.probe_pending = 1;
  t.hold_pending = 1;
  t.hold_count = asked;
  return true;
}

}  // namespace

std::atomic<int> g_holds_in_flight{0};

void program_takes_signal(int sig) {
  if (sig <= 0 || g_hold_signal.load(std::memory_order_acquire) != sig) return;
  g_hold_signal.store(-1, std::memory_order_release);
  stop_all_cpu_samples();  // a sample pending now lands before the program's handler is in place
  // A turn that read the signal just before sends within microseconds; the requests in flight
  // land as soon as their threads run (this one yields its CPU to them): 50 ms at most, once in
  // the life of a program that takes the signal.
  const uint64_t start = mono_ns();
  uint64_t now = start;
  while (now - start < 100000 || (g_holds_in_flight.load(std::memory_order_acquire) > 0 && now - start < 50000000)) {
    sys::sched_yield();
    now = mono_ns();
  }
}

void refuse_holds() {
  Slot* s = t_ctx.slot;
  if (!s) return;
  s->h.holds_refused.store(1, std::memory_order_seq_cst);
  if (s->h.hold_request.load(std::memory_order_seq_cst) == 0) return;
  // A request sent before: its signal lands at this thread's next return from the kernel, and the
  // handler takes the request.  One whose sender has not sent it yet is sent or withdrawn within
  // microseconds, or when the sender runs again (20 ms at most here: the mask then goes on, and a
  // signal that comes after it is dropped once the mask is in place).  Unless the thread blocks
  // the signal already (inside a handler of the program's whose mask holds it, say): then it
  // cannot land, and is dropped once the new mask is in place.
  uint64_t current = 0;
  const int sig = g_hold_signal.load(std::memory_order_acquire);
  if (sig <= 0 || sys::failed(sys::call(SYS_rt_sigprocmask, SIG_BLOCK, 0, reinterpret_cast<long>(&current), 8)) ||
      (current & sys::signal_bit(sig)) != 0)
    return;
  const uint64_t start = mono_ns();
  while (s->h.hold_request.load(std::memory_order_acquire) != 0 && mono_ns() - start < 20000000) sys::sched_yield();
}

void holds_blocked() {
  drop_pending_hold_signal();
  Slot* s = t_ctx.slot;
  if (s && s->h.hold_request.exchange(0, std::memory_order_acq_rel) != 0)  // its signal dropped, or never to come
    g_holds_in_flight.fetch_sub(1, std::memory_order_release);
}

void accept_holds() {
  Slot* s = t_ctx.slot;
  if (!s || s->h.holds_refused.load(std::memory_order_relaxed) == 0) return;
  s->h.signal_checked.store(0, std::memory_order_relaxed);  // read the mask again before the next request
  s->h.holds_refused.store(0, std::memory_order_release);
}

void drop_pending_hold_signal() {
  const int sig = g_hold_signal.load(std::memory_order_acquire);
  if (sig <= 0) return;
  const uint64_t set = sys::signal_bit(sig);
  const struct { long sec, nsec; } now{0, 0};
  // Taken while it is blocked (pending), it is consumed; not pending, the call fails at once.
  while (!sys::failed(sys::call(SYS_rt_sigtimedwait, reinterpret_cast<long>(&set), 0, reinterpret_cast<long>(&now), 8))) {
  }
}

bool outside_turn(Slot* self, uint64_t now, bool allocating) {
  const SamplingConfig& c = g_sampling;
  uint64_t due = g_next_outside_turn.load(std::memory_order_relaxed);
  if (now < due || on_alternate_stack(t_ctx) ||
      !g_next_outside_turn.compare_exchange_strong(due, now + c.outside_gap, std::memory_order_relaxed))
    return false;  // another thread takes this turn (or this one, off a handler's alternate stack)
  // Only the thread that won the turn counts it: every kTurnsPerLook-th turn looks too.
  const uint64_t turn = g_outside_turns.fetch_add(1, std::memory_order_relaxed);
  const bool scheduled_look = turn % format::kTurnsPerLook == 0;
  // A hold is due until one is made (turns are one at a time: the turn's exchange above); it goes
  // before a look taken again after a sleeper.
  std::atomic<uint64_t>& next_hold = allocating ? g_next_hold : g_next_release_hold;
  const bool hold_turn = c.hold_ticks && !scheduled_look && now >= next_hold.load(std::memory_order_relaxed);
  const bool look_turn = scheduled_look || (!hold_turn && g_look_again.exchange(false, std::memory_order_relaxed));
  if (g_no_vm_read.load(std::memory_order_relaxed) || !make_look_room(self)) return false;
  const uint64_t pick = mix64(now ^ self->h.serial);
  Slot* peers[kPeerCandidates];
  const uint32_t n = some_peers(self, pick, peers, kPeerCandidates);
  uint64_t addrs[kPeerCandidates];
  uint32_t m = 0;
  for (uint32_t i = 0; i < n; i++) {
    addrs[m] = load_shared(peers[i]->h.gate_addr);
    if (addrs[m]) peers[m++] = peers[i];
  }
  if (m == 0) return false;  // no other thread: nobody to meet
  if (hold_turn) {
    const int sig = hold_signal();
    if (sig > 0 && hold_peers(self, peers, addrs, m, sig, now)) {
      next_hold.store(now + c.hold_gap, std::memory_order_relaxed);
      return true;
    }
  }
  format::PeerWait w{};
  w.peer_serial = load_shared(self->h.serial);
  w.peer_start_tick = format::kPeerUntimed;
  w.syscall = format::kPeerNoLook;
  w.tick = now;
  // A look turn whose look cannot be taken (the kernel's file unreadable) is a probe alone.
  if (look_turn && !g_unreadable.load(std::memory_order_relaxed) && !look_at_one(peers, addrs, m, pick, &w)) {
    g_no_vm_read.store(true, std::memory_order_relaxed);
    return false;
  }
  if (look_turn && w.syscall == SYS_futex) g_look_again.store(true, std::memory_order_relaxed);
  return start_probe(self, w, addrs, m, n == kPeerCandidates);
}

void finish_probe(unsigned op, unsigned bucket, uint64_t t0) {
  const uint64_t t1 = ticks();
  ThreadCtx& t = t_ctx;
  if (!t.probe_pending || !t.slot) return;
  t.probe_pending = 0;
  format::Rusage ru;
  read_thread_rusage(ru);
  format::PeerWait w = t.probe_look;
  if (t.hold_pending) {
    t.hold_pending = 0;
    if (ru.nvcsw == ~uint64_t{0}) return;
    // The releaser: the held thread whose hold ended last inside this call.
    format::HoldOutcome h{false, 0, 0, 0, t.probe_peers.inside, ru.nivcsw > t.probe_nivcsw, 0};
    uint64_t last_end = 0;
    for (uint32_t k = 0; k < t.hold_count; k++) {
      const Slot* peer = t.hold_targets[k];
      const uint64_t end = peer->h.hold_end.load(std::memory_order_acquire);
      if (end <= t0 || end > t1) continue;
      const uint64_t gate = peer->h.hold_gate.load(std::memory_order_relaxed);
      if (!gate_in_call(gate)) continue;  // held outside a call: it held no lock of the allocator's
      ++h.ended_inside;
      if (end <= last_end) continue;
      last_end = end;
      h.released = true;
      h.op = gate_op(gate);
      h.bucket = gate_bucket(gate);
      h.after_ticks = t1 - end;
      w.peer_serial = load_shared(peer->h.serial);
    }
    if (!h.released) w.peer_serial = load_shared(t.slot->h.serial);
    w.tick = t0;
    w.arg0 = t1 - t0;
    w.arg1 = format::hold_outcome(h);
    w.peer_start_tick |= format::peer_probe(op, bucket, latency_bin_of(t1 - t0), ru.nvcsw > t.probe_nvcsw, t.probe_peers);
    keep_look(t.slot, w);
    t.sw_valid = 0;
    return;
  }
  if (ru.nvcsw != ~uint64_t{0})
    w.peer_start_tick |= format::peer_probe(op, bucket, latency_bin_of(t1 - t0), ru.nvcsw > t.probe_nvcsw, t.probe_peers);
  else if (!saw_something(w))
    return;  // nothing seen, nothing probed
  keep_look(t.slot, w);
  t.sw_valid = 0;
}

void drop_probe() {
  ThreadCtx& t = t_ctx;
  if (!t.probe_pending) return;
  t.probe_pending = 0;
  if (t.hold_pending) {  // a hold's call that failed: nothing to keep
    t.hold_pending = 0;
    return;
  }
  if (t.slot && saw_something(t.probe_look)) keep_look(t.slot, t.probe_look);
}



void look_at_peers(Slot* self, uint64_t now) {
  ThreadCtx& t = t_ctx;
  const SamplingConfig& c = g_sampling;
  if (now < t.next_look || c.look_gap == 0 || g_unreadable.load(std::memory_order_relaxed) || on_alternate_stack(t)) return;
  t.next_look = now + c.look_gap;
  if (!make_look_room(self)) return;
  uint64_t since = 0;
  Slot* peer = peer_inside(self, now - c.switch_ticks, mix64(now ^ self->h.serial), &since);
  if (!peer) return;
  format::PeerWait w{};
  w.peer_serial = load_shared(peer->h.serial);
  w.peer_start_tick = since;
  const int fd = open_peer(load_shared(peer->h.tid));
  if (fd < 0) return;
  // The peer may leave that call before the file is read: then the reading is of something else.
  const auto still_inside = [&] {
    return peer->h.inside_since.load(std::memory_order_relaxed) == since &&
           peer->h.state.load(std::memory_order_acquire) == kSlotOwned && load_shared(peer->h.serial) == w.peer_serial;
  };
  if (!read_peer(fd, &w, still_inside)) return;
  w.tick = now;
  keep_look(self, w);
  // The look took a few microseconds: the next timed call must not read them as a gap it slept in.
  t.sw_valid = 0;
}

bool peer_waits_pending(const Slot* s) {
  return s->h.peer_count.load(std::memory_order_acquire) > s->h.peer_flushed;
}

bool write_peer_waits(Slot* s) {
  const uint32_t n = s->h.peer_count.load(std::memory_order_acquire);
  constexpr size_t kHdr = sizeof(format::ChunkHeader);
  constexpr uint32_t kPerChunk =
      static_cast<uint32_t>((kOutBuffer - kHdr - sizeof(format::PeerWaitsHeader)) / sizeof(format::PeerWait));
  bool ok = true;
  while (ok && s->h.peer_flushed < n) {
    const uint32_t take = n - s->h.peer_flushed < kPerChunk ? n - s->h.peer_flushed : kPerChunk;
    auto* ph = reinterpret_cast<format::PeerWaitsHeader*>(s->out + kHdr);
    ph->thread_serial = s->h.serial;
    ph->count = take;
    std::memcpy(ph + 1, s->peer_waits + s->h.peer_flushed, take * sizeof(format::PeerWait));
    ok = write_chunk(format::ChunkType::PeerWaits, s->out, sizeof *ph + take * sizeof(format::PeerWait));
    if (ok) s->h.peer_flushed += take;
  }
  return ok;
}

}  // namespace allocscope
