// shim/peer_waits.cpp — see peer_waits.h.
#include "peer_waits.h"

#include <fcntl.h>

#include <atomic>
#include <cstring>

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

// What the thread `tid` is doing: false when the file could not be read or made no sense.
bool read_peer(uint32_t tid, format::PeerWait* w) {
  char path[48];
  TextBuffer(path, sizeof path).put("/proc/self/task/").put_uint(tid).put("/syscall");
  const long fd = sys::openat(AT_FDCWD, path, O_RDONLY | O_CLOEXEC, 0);
  if (sys::failed(fd)) {
    if (fd != -2 && fd != -3) g_unreadable.store(true, std::memory_order_relaxed);  // not ENOENT or ESRCH (the thread just left)
    return false;
  }
  char buf[160];
  const long n = sys::read(static_cast<int>(fd), buf, sizeof buf);
  sys::close(static_cast<int>(fd));
  if (sys::failed(n) || n <= 0) return false;
  const char* p = buf;
  const char* end = buf + n;
  if (n >= 7 && std::memcmp(buf, "running", 7) == 0) {
    w->syscall = format::kPeerRunning;
    return true;
  }
  int64_t nr = 0, a0 = 0, a1 = 0;
  if (!parse_number(p, end, &nr)) return false;
  if (nr < 0) {
    w->syscall = format::kPeerInUserSpace;
    return true;
  }
  if (!parse_number(p, end, &a0) || !parse_number(p, end, &a1)) return false;
  w->syscall = static_cast<int32_t>(nr);
  w->arg0 = static_cast<uint64_t>(a0);
  w->arg1 = static_cast<uint64_t>(a1);
  return true;
}

}  // namespace

void look_at_peers(Slot* self, uint64_t now) {
  ThreadCtx& t = t_ctx;
  const SamplingConfig& c = g_sampling;
  if (now < t.next_look || c.look_gap == 0 || g_unreadable.load(std::memory_order_relaxed)) return;
  t.next_look = now + c.look_gap;
  const uint32_t count = self->h.peer_count.load(std::memory_order_relaxed);
  if (count >= kPeerWaits) return;
  uint64_t since = 0;
  Slot* peer = peer_inside(self, now - c.switch_ticks, mix64(now ^ self->h.serial), &since);
  if (!peer) return;
  format::PeerWait w{};
  w.peer_serial = load_shared(peer->h.serial);
  w.peer_start_tick = since;
  const uint32_t tid = load_shared(peer->h.tid);
  const bool read = read_peer(tid, &w);
  // The peer may have left that call while the file was read: then the reading is of something else.
  if (!read || peer->h.inside_since.load(std::memory_order_relaxed) != since ||
      peer->h.state.load(std::memory_order_acquire) != kSlotOwned || load_shared(peer->h.serial) != w.peer_serial)
    return;
  w.tick = now;
  self->peer_waits[count] = w;
  self->h.peer_count.store(count + 1, std::memory_order_release);
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
