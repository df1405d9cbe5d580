// shim/peer_waits.cpp — see peer_waits.h.
#include "peer_waits.h"

#include <fcntl.h>
#include <sys/uio.h>

#include <atomic>
#include <cstring>

#include "allocscope/buckets.h"
#include "allocscope/ops.h"
#include "allocscope/window_phase.h"
#include "process_state.h"
#include "recorder.h"
#include "slot_registry.h"
#include "sys.h"
#include "text_buffer.h"

namespace allocscope {
namespace {

// Set when /proc cannot be read at all (not mounted, or denied): looking stops for good.
std::atomic<bool> g_unreadable{false};
// Set when the kernel refuses process_vm_readv (a seccomp filter, say): no looks outside windows.
std::atomic<bool> g_no_vm_read{false};

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
      const char c = *p;
      const int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
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

// The file that says what thread `tid` is doing, opened; -1 when it cannot be (the thread has just
// left, or /proc cannot be read: then looking stops).  Opening costs most of a look: the peer's
// call is checked again after it, so that only the read itself must fall inside that call.
int open_peer(uint32_t tid) {
  char path[48];
  TextBuffer(path, sizeof path).put("/proc/self/task/").put_uint(tid).put("/syscall");
  const long fd = sys::openat(AT_FDCWD, path, O_RDONLY | O_CLOEXEC, 0);
  if (sys::failed(fd)) {
    if (fd != -2 && fd != -3) g_unreadable.store(true, std::memory_order_relaxed);  // not ENOENT or ESRCH (the thread just left)
    return -1;
  }
  return static_cast<int>(fd);
}

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

// Which of the `n` threads whose gate words lie at `addrs` are inside calls, and of what sizes; a
// word that could not be read counts as a call of no known size.
format::ProbePeers who_is_inside(const uint64_t* addrs, uint32_t n) {
  uint64_t gates[kPeerCandidates];
  format::ProbePeers pp = format::kNoProbePeers;
  const long got = read_gates(addrs, gates, n);
  for (long i = 0; i < got; i++) {
    if (!gate_in_call(gates[i])) continue;
    ++pp.inside;
    const unsigned op = gate_op(gates[i]), bucket = gate_bucket(gates[i]);
    if (allocates(op) && bucket < kSizeBuckets) {
      pp.min_bucket = bucket < pp.min_bucket ? bucket : pp.min_bucket;
      pp.max_bucket = bucket > pp.max_bucket ? bucket : pp.max_bucket;
    } else {
      pp.unknown = true;
    }
  }
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
std::atomic<uint64_t> g_outside_turns{0};

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

bool outside_turn(Slot* self, uint64_t now) {
  const SamplingConfig& c = g_sampling;
  uint64_t due = g_next_outside_turn.load(std::memory_order_relaxed);
  if (now < due || !g_next_outside_turn.compare_exchange_strong(due, now + c.outside_gap, std::memory_order_relaxed))
    return false;  // another thread takes this turn
  // Only the thread that won the turn counts it: every kTurnsPerLook-th turn looks too.
  const bool look_turn = g_outside_turns.fetch_add(1, std::memory_order_relaxed) % format::kTurnsPerLook == 0;
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
  if (t.slot && saw_something(t.probe_look)) keep_look(t.slot, t.probe_look);
}



void look_at_peers(Slot* self, uint64_t now) {
  ThreadCtx& t = t_ctx;
  const SamplingConfig& c = g_sampling;
  if (now < t.next_look || c.look_gap == 0 || g_unreadable.load(std::memory_order_relaxed)) return;
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
