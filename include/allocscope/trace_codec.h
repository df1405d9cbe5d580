// allocscope/trace_codec.h — encoding and decoding of trace-mode records (format.h, TraceEvents).
//
// One definition for the shim (encode, and decode to find where a chunk may be cut) and the
// analyzer (decode).  A Cursor carries the previous record's start tick and address: records are
// deltas against it, and a chunk starts from the cursor stored in its TraceHeader.
// decode() never reads past `end` and rejects over-long varints; it does not allocate.
#pragma once
#include <cstddef>
#include <cstdint>

#include "allocscope/format.h"
#include "allocscope/ops.h"

namespace allocscope::trace {

struct Cursor {
  uint64_t tick = 0;
  uint64_t addr = 0;
};

struct Record {
  uint8_t op = 0;
  bool failed = false;
  uint64_t start_tick = 0;
  uint64_t duration = 0;  // 0: not timed (outside the sampling windows of a --sample N trace)
  uint64_t addr = 0;      // block returned (0 if the call failed), freed, or queried
  uint64_t size = 0;      // not for free, delete and delete[]
  uint64_t old_addr = 0;  // realloc and reallocarray only
  uint32_t stack_id = 0;  // 0 = none
};

constexpr size_t kMaxVarint = 10;
constexpr size_t kMaxRecordBytes = 1 + 5 * kMaxVarint + 5;

// A releasing call has no size in a trace: the analyzer knows each block's.
constexpr bool has_size(unsigned op) { return !releases(op); }
constexpr bool has_old_addr(unsigned op) {
  return op == static_cast<unsigned>(Op::Realloc) || op == static_cast<unsigned>(Op::Reallocarray);
}

constexpr uint64_t zigzag(uint64_t delta) {
  return (delta << 1) ^ static_cast<uint64_t>(static_cast<int64_t>(delta) >> 63);
}
constexpr uint64_t unzigzag(uint64_t z) { return (z >> 1) ^ (~(z & 1) + 1); }

__attribute__((always_inline)) inline unsigned char* put_varint(unsigned char* p, uint64_t v) {
  if (v < 0x80) {  // the usual case in a trace: small deltas
    *p = static_cast<unsigned char>(v);
    return p + 1;
  }
  while (v >= 0x80) {
    *p++ = static_cast<unsigned char>(v | 0x80);
    v >>= 7;
  }
  *p++ = static_cast<unsigned char>(v);
  return p;
}

inline bool get_varint(const unsigned char*& p, const unsigned char* end, uint64_t& v) {
  v = 0;
  for (unsigned shift = 0; shift < 64; shift += 7) {
    if (p >= end) return false;
    const unsigned char b = *p++;
    if (shift == 63 && b > 1) return false;  // more than 64 bits
    v |= static_cast<uint64_t>(b & 0x7f) << shift;
    if (!(b & 0x80)) return true;
  }
  return false;
}

// Appends `r` at `out` (room for kMaxRecordBytes) and advances the cursor; returns the end.
__attribute__((always_inline)) inline unsigned char* encode(unsigned char* out, Cursor& c, const Record& r) {
  unsigned char head = static_cast<unsigned char>(r.op & format::kTraceOpMask);
  if (r.failed) head |= format::kTraceFailed;
  if (r.stack_id) head |= format::kTraceStack;
  *out++ = head;
  out = put_varint(out, r.start_tick - c.tick);
  out = put_varint(out, r.duration);
  out = put_varint(out, zigzag(r.addr - c.addr));
  if (has_size(r.op)) out = put_varint(out, r.size);
  if (has_old_addr(r.op)) out = put_varint(out, zigzag(r.old_addr - r.addr));
  if (r.stack_id) out = put_varint(out, r.stack_id);
  c.tick = r.start_tick;
  c.addr = r.addr;
  return out;
}

// Reads one record; false when the bytes are malformed or end inside the record.
inline bool decode(const unsigned char*& p, const unsigned char* end, Cursor& c, Record& r) {
  if (p >= end) return false;
  const unsigned char head = *p++;
  if (head & 0xc0) return false;
  r = Record{};
  r.op = head & format::kTraceOpMask;
  if (r.op >= kOps) return false;
  r.failed = head & format::kTraceFailed;
  uint64_t v;
  if (!get_varint(p, end, v)) return false;
  r.start_tick = c.tick + v;
  if (!get_varint(p, end, r.duration)) return false;
  if (!get_varint(p, end, v)) return false;
  r.addr = c.addr + unzigzag(v);
  if (has_size(r.op) && !get_varint(p, end, r.size)) return false;
  if (has_old_addr(r.op)) {
    if (!get_varint(p, end, v)) return false;
    r.old_addr = r.addr + unzigzag(v);
  }
  if (head & format::kTraceStack) {
    if (!get_varint(p, end, v) || v == 0 || v > 0xffffffffu) return false;
    r.stack_id = static_cast<uint32_t>(v);
  }
  c.tick = r.start_tick;
  c.addr = r.addr;
  return true;
}

}  // namespace allocscope::trace
