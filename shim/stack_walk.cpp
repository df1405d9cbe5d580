// shim/stack_walk.cpp — see stack_walk.h.
#include "stack_walk.h"

#include <dlfcn.h>
#include <link.h>
#include <pthread.h>

#include <cstddef>
#include <cstring>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "process_state.h"
#include "recorder.h"
#include "slot_registry.h"
#include "thread_slot.h"

namespace allocscope {

namespace {

using UnwBacktrace = int (*)(void**, int);
UnwBacktrace g_unw_backtrace = nullptr;

// The calling thread's stack, [lo, hi).
void find_stack_bounds(StackState& st) {
  pthread_attr_t attr;
  void* base = nullptr;
  size_t size = 0;
  if (pthread_getattr_np(pthread_self(), &attr) == 0) {
    pthread_attr_getstack(&attr, &base, &size);
    pthread_attr_destroy(&attr);
  }
  st.stack_lo = reinterpret_cast<uint64_t>(base);
  st.stack_hi = st.stack_lo + size;
  if (!st.stack_hi) st.stack_hi = 1;  // unknown: the walk stops at once
}

// Follows saved frame pointers while each frame lies higher on the stack than the last one and
// inside the thread's stack: a function built without frame pointers ends the walk, never a fault.
__attribute__((noinline)) int walk_frame_pointers(void** out, int max, const StackState& st) {
  auto* fp = static_cast<uint64_t*>(__builtin_frame_address(0));
  int n = 0;
  while (n < max) {
    const auto at = reinterpret_cast<uint64_t>(fp);
    // (stack_hi - at, not at + 16: a frame pointer of -8 or -16 must not wrap around to pass.)
    if (at < st.stack_lo || at >= st.stack_hi || st.stack_hi - at < 16 || (at & 7)) break;
    const uint64_t ret = fp[1];
    if (ret < 4096) break;
    out[n++] = reinterpret_cast<void*>(ret);
    auto* next = reinterpret_cast<uint64_t*>(fp[0]);
    if (next <= fp) break;
    fp = next;
  }
  return n;
}

// Probes before a new stack gives up on its run of the table: past this, the table is nearly full.
constexpr unsigned kStackProbes = 64;

// The id of `frames` in the thread's table; a stack not seen yet gets the next id and is queued.
// The table only remembers which stacks were already queued: when a new stack finds no free entry
// within kStackProbes, the table is emptied and starts over (ids keep growing, and a stack seen
// again is queued again under a new id; the analyzer merges equal stacks). A full table must not
// leave the rest of a long run without stacks.
uint32_t remember(Slot* s, void* const* frames, int depth, uint16_t flags) {
  StackState& st = s->h.stacks;
  const uint64_t hash = XXH3_64bits(frames, static_cast<size_t>(depth) * sizeof(void*)) | 1;
  for (int attempt = 0; attempt < 2; attempt++) {
    if (attempt) std::memset(s->stack_table, 0, sizeof s->stack_table);
    for (unsigned probe = 0, i = static_cast<unsigned>(hash) & (kStackTableSize - 1);
         probe < kStackProbes; probe++, i = (i + 1) & (kStackTableSize - 1)) {
      StackEntry& e = s->stack_table[i];
      if (e.hash == hash) return e.id;
      if (e.hash != 0) continue;
      const size_t need = sizeof(format::StackRecord) + static_cast<size_t>(depth) * sizeof(uint64_t);
      uint32_t len = st.published.load(std::memory_order_relaxed);
      if (len + need > kPendingStacks) {
        flush_buffers(s);
        len = st.published.load(std::memory_order_relaxed);
        if (len + need > kPendingStacks) {
          bump(st.dropped, 1);
          return 0;
        }
      }
      format::StackRecord rec{};
      rec.stack_id = ++st.next_id;
      rec.depth = static_cast<uint16_t>(depth);
      rec.flags = flags;
      rec.hash = hash;
      std::memcpy(s->pending_stacks + len, &rec, sizeof rec);
      std::memcpy(s->pending_stacks + len + sizeof rec, frames, static_cast<size_t>(depth) * 8);
      st.published.store(static_cast<uint32_t>(len + need), std::memory_order_release);
      e.id = rec.stack_id;
      e.hash = hash;
      return e.id;
    }
  }
  bump(st.dropped, 1);  // not reached: an emptied table has room
  return 0;
}

// A static buffer for Modules chunks, taken with a try-flag (a dlopen racing the exit flush
// simply skips: the exit writes the modules again).
alignas(64) unsigned char g_modules_buf[256 * 1024];
std::atomic<int> g_modules_busy{0};

struct ModulesWriter {
  size_t pos;
  uint32_t count;
};

int add_module(dl_phdr_info* info, size_t, void* data) {
  auto* w = static_cast<ModulesWriter*>(data);
  uint64_t lo = ~uint64_t{0}, hi = 0;
  for (int i = 0; i < info->dlpi_phnum; i++) {
    const auto& ph = info->dlpi_phdr[i];
    if (ph.p_type != PT_LOAD) continue;
    const uint64_t start = info->dlpi_addr + ph.p_vaddr;
    if (start < lo) lo = start;
    if (start + ph.p_memsz > hi) hi = start + ph.p_memsz;
  }
  if (hi == 0) return 0;
  const char* path = info->dlpi_name ? info->dlpi_name : "";
  const size_t path_len = std::strlen(path);
  if (w->pos + sizeof(format::ModuleRecord) + path_len > sizeof g_modules_buf) return 1;
  format::ModuleRecord rec{};
  rec.load_bias = info->dlpi_addr;
  rec.start = lo;
  rec.end = hi;
  rec.path_len = static_cast<uint32_t>(path_len);
  std::memcpy(g_modules_buf + w->pos, &rec, sizeof rec);
  std::memcpy(g_modules_buf + w->pos + sizeof rec, path, path_len);
  w->pos += sizeof rec + path_len;
  w->count++;
  return 0;
}

}  // namespace

void stack_walk_init(bool glibc) {
  if (!glibc || g_unw_backtrace) return;
  // RTLD_LOCAL keeps libunwind's _Unwind_* and backtrace out of the program's global scope.
  void* h = dlopen("libunwind.so.8", RTLD_LAZY | RTLD_LOCAL);
  if (h) g_unw_backtrace = reinterpret_cast<UnwBacktrace>(dlsym(h, "unw_backtrace"));
}

uint32_t capture_stack(Slot* s) {
  void* frames[kMaxStackDepth];
  int depth;
  uint16_t flags = 0;
  if (g_unw_backtrace) {
    depth = g_unw_backtrace(frames, kMaxStackDepth);
  } else {
    StackState& st = s->h.stacks;
    if (!st.stack_hi) find_stack_bounds(st);
    depth = walk_frame_pointers(frames, kMaxStackDepth, st);
    flags |= format::kStackFramePointers;
  }
  if (depth <= 0) return 0;
  if (depth == static_cast<int>(kMaxStackDepth)) flags |= format::kStackTruncated;
  return remember(s, frames, depth, flags);
}

bool write_pending_stacks(Slot* s) {
  StackState& st = s->h.stacks;
  const uint32_t len = st.published.load(std::memory_order_acquire);
  constexpr size_t kHdr = sizeof(format::ChunkHeader);
  constexpr size_t kRoom = kOutBuffer - kHdr - sizeof(format::StacksHeader);
  bool ok = true;
  while (ok && st.flushed < len) {
    // Whole records only, as many as fit in one chunk.
    uint32_t end = st.flushed, count = 0;
    while (end < len) {
      format::StackRecord rec;
      std::memcpy(&rec, s->pending_stacks + end, sizeof rec);
      const uint32_t size = static_cast<uint32_t>(sizeof rec + rec.depth * sizeof(uint64_t));
      if (end + size - st.flushed > kRoom) break;
      end += size;
      count++;
    }
    auto* sh = reinterpret_cast<format::StacksHeader*>(s->out + kHdr);
    sh->thread_serial = s->h.serial;
    sh->count = count;
    std::memcpy(sh + 1, s->pending_stacks + st.flushed, end - st.flushed);
    ok = write_chunk(format::ChunkType::Stacks, s->out, sizeof *sh + (end - st.flushed));
    st.flushed = end;
  }
  if (t_ctx.slot == s) {  // only the owner empties the queue
    st.flushed = 0;
    st.published.store(0, std::memory_order_release);
  }
  return ok;
}

namespace {
std::atomic<uint64_t> g_modules_generation{0};  // adds + subs of the last Modules chunk

int read_generation(dl_phdr_info* info, size_t size, void* data) {
  if (size >= offsetof(dl_phdr_info, dlpi_subs) + sizeof info->dlpi_subs)
    *static_cast<uint64_t*>(data) = info->dlpi_adds + info->dlpi_subs;
  return 1;  // the first object is enough
}
}  // namespace

void write_modules_if_changed() {
  uint64_t generation = 0;
  dl_iterate_phdr(read_generation, &generation);
  if (generation != g_modules_generation.load(std::memory_order_relaxed)) write_modules();
}

void write_modules() {
  uint64_t generation = 0;
  dl_iterate_phdr(read_generation, &generation);
  g_modules_generation.store(generation, std::memory_order_relaxed);
  if (g_modules_busy.exchange(1, std::memory_order_acquire)) return;
  constexpr size_t kHdr = sizeof(format::ChunkHeader);
  ModulesWriter w{kHdr + sizeof(format::ModulesHeader), 0};
  dl_iterate_phdr(add_module, &w);
  auto* mh = reinterpret_cast<format::ModulesHeader*>(g_modules_buf + kHdr);
  mh->count = w.count;
  mh->reserved = 0;
  write_chunk(format::ChunkType::Modules, g_modules_buf, w.pos - kHdr);
  g_modules_busy.store(0, std::memory_order_release);
}

}  // namespace allocscope
