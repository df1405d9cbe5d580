#include "profile/chunk_decode.h"

#include <fmt/format.h>

#include <cstring>
#include <type_traits>

#include "allocscope/buckets.h"
#include "allocscope/ops.h"
#include "allocscope/trace_codec.h"
#include "profile/format_names.h"
#include "profile/profile_error.h"
#include "profile/stats.h"

namespace allocscope {

using format::ChunkType;

namespace {

// Reads a payload front to back; every failure names the file offset where it happened.
class PayloadCursor {
 public:
  PayloadCursor(std::span<const unsigned char> bytes, const std::string& file, uint64_t offset)
      : bytes_(bytes), file_(file), base_(offset) {}

  size_t remaining() const { return bytes_.size() - pos_; }
  uint64_t offset() const { return base_ + pos_; }

  [[noreturn]] void fail(std::string reason) const { fail_at(offset(), std::move(reason)); }
  [[noreturn]] void fail_at(uint64_t at, std::string reason) const {
    throw ProfileError(file_, at, std::move(reason));
  }

  template <class T>
  T take(std::string_view what) {
    static_assert(std::is_trivially_copyable_v<T>);
    need(sizeof(T), what);
    T value;
    std::memcpy(&value, bytes_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return value;
  }

  // `count` records of T, after checking that count * sizeof(T) bytes are there.
  template <class T>
  std::vector<T> take_array(uint64_t count, std::string_view what) {
    static_assert(std::is_trivially_copyable_v<T>);
    if (count > remaining() / sizeof(T)) {
      fail(fmt::format("{}: {} entries of {} bytes do not fit in the {} bytes left", what, count,
                       sizeof(T), remaining()));
    }
    std::vector<T> out(count);
    if (count > 0) std::memcpy(out.data(), bytes_.data() + pos_, count * sizeof(T));
    pos_ += count * sizeof(T);
    return out;
  }

  // The next `length` bytes, unparsed.
  std::span<const unsigned char> take_bytes(uint64_t length, std::string_view what) {
    need(length, what);
    const auto out = bytes_.subspan(pos_, length);
    pos_ += length;
    return out;
  }

  std::string take_string(uint64_t length, std::string_view what) {
    need(length, what);
    std::string out(reinterpret_cast<const char*>(bytes_.data() + pos_), length);
    pos_ += length;
    return out;
  }

  void expect_end(std::string_view what) const {
    if (remaining() != 0) fail(fmt::format("{}: {} unexpected bytes after the end", what, remaining()));
  }

 private:
  void need(uint64_t n, std::string_view what) const {
    if (n > remaining()) {
      fail(fmt::format("{}: needs {} bytes, only {} left in the payload", what, n, remaining()));
    }
  }

  std::span<const unsigned char> bytes_;
  const std::string& file_;
  uint64_t base_;
  size_t pos_ = 0;
};

// argv as written by the shim: NUL-separated, with or without a final NUL.
std::vector<std::string> split_args(const std::string& joined) {
  std::vector<std::string> args;
  if (joined.empty()) return args;
  size_t start = 0;
  while (start <= joined.size()) {
    const size_t end = joined.find('\0', start);
    if (end == std::string::npos) {
      args.push_back(joined.substr(start));
      break;
    }
    args.push_back(joined.substr(start, end - start));
    if (end + 1 == joined.size()) break;  // a final NUL terminates, it does not add an argument
    start = end + 1;
  }
  return args;
}

ProcessRecord decode_process(PayloadCursor& in) {
  ProcessRecord rec;
  const uint64_t info_at = in.offset();
  rec.info = in.take<format::ProcessInfo>("ProcessInfo");
  const auto& info = rec.info;
  if (info.libc > static_cast<uint8_t>(format::Libc::Musl)) {
    in.fail_at(info_at, fmt::format("ProcessInfo: unknown libc {}", info.libc));
  }
  const uint64_t strings = uint64_t{info.exe_len} + info.args_len + info.allocator_len +
                           info.libc_version_len;
  if (strings != in.remaining()) {
    in.fail_at(info_at, fmt::format("ProcessInfo: string lengths add up to {} bytes but {} follow",
                                    strings, in.remaining()));
  }
  rec.exe = in.take_string(info.exe_len, "exe");
  rec.args = split_args(in.take_string(info.args_len, "args"));
  rec.allocator = in.take_string(info.allocator_len, "allocator");
  rec.libc_version = in.take_string(info.libc_version_len, "libc version");
  return rec;
}

format::Calibration decode_calibration(PayloadCursor& in) {
  const uint64_t at = in.offset();
  const auto cal = in.take<format::Calibration>("Calibration");
  in.expect_end("Calibration");
  if (cal.clock != static_cast<uint8_t>(format::Clock::Tsc) &&
      cal.clock != static_cast<uint8_t>(format::Clock::Monotonic)) {
    in.fail_at(at, fmt::format("Calibration: unknown clock {}", cal.clock));
  }
  if (cal.tick_hz == 0) in.fail_at(at, "Calibration: tick_hz is 0");
  return cal;
}

StatsRowRecord decode_stats_row(PayloadCursor& in, uint32_t index) {
  StatsRowRecord rec;
  const uint64_t at = in.offset();
  rec.row = in.take<format::StatsRow>("StatsRow");
  if (rec.row.op >= kOpSlots) in.fail_at(at, fmt::format("row {}: operation {} out of range", index, rec.row.op));
  if (!is_bucket_index(rec.row.bucket)) {
    in.fail_at(at, fmt::format("row {}: size bucket {} out of range", index, rec.row.bucket));
  }
  const uint64_t bins_at = in.offset();
  rec.bins = in.take_array<format::LatencyBin>(rec.row.n_bins, fmt::format("row {} latency bins", index));
  for (size_t i = 0; i < rec.bins.size(); ++i) {
    if (rec.bins[i].bin >= kLatencyBins) {
      in.fail_at(bins_at + i * sizeof(format::LatencyBin),
                 fmt::format("row {}: latency bin {} out of range", index, rec.bins[i].bin));
    }
  }
  return rec;
}

ThreadStatsRecord decode_thread_stats(PayloadCursor& in) {
  ThreadStatsRecord rec;
  const uint64_t at = in.offset();
  rec.header = in.take<format::ThreadStatsHeader>("ThreadStatsHeader");
  const auto& h = rec.header;
  if (h.state < static_cast<uint8_t>(format::ThreadState::Running) ||
      h.state > static_cast<uint8_t>(format::ThreadState::ProcessExit)) {
    in.fail_at(at, fmt::format("ThreadStats: unknown thread state {}", h.state));
  }
  // Each row takes at least sizeof(StatsRow): reject an impossible count before reserving.
  if (h.n_rows > in.remaining() / sizeof(format::StatsRow)) {
    in.fail_at(at, fmt::format("ThreadStats: {} rows cannot fit in the {} bytes that follow",
                               h.n_rows, in.remaining()));
  }
  rec.rows.reserve(h.n_rows);
  for (uint32_t i = 0; i < h.n_rows; ++i) rec.rows.push_back(decode_stats_row(in, i));
  in.expect_end("ThreadStats");
  return rec;
}

EventsRecord decode_events(PayloadCursor& in) {
  EventsRecord rec;
  const uint64_t at = in.offset();
  rec.header = in.take<format::EventsHeader>("EventsHeader");
  if (uint64_t{rec.header.count} * sizeof(format::Event) != in.remaining()) {
    in.fail_at(at, fmt::format("Events: {} events need {} bytes but {} follow", rec.header.count,
                               uint64_t{rec.header.count} * sizeof(format::Event), in.remaining()));
  }
  const uint64_t events_at = in.offset();
  rec.events = in.take_array<format::Event>(rec.header.count, "events");
  for (size_t i = 0; i < rec.events.size(); ++i) {
    const auto& ev = rec.events[i];
    if (ev.op >= kOpSlots || !is_bucket_index(ev.bucket)) {
      in.fail_at(events_at + i * sizeof(format::Event),
                 fmt::format("event {}: operation {} / size bucket {} out of range", i, ev.op, ev.bucket));
    }
  }
  return rec;
}

format::ProcessEnd decode_process_end(PayloadCursor& in) {
  const auto end = in.take<format::ProcessEnd>("ProcessEnd");
  in.expect_end("ProcessEnd");
  return end;
}

NoteRecord decode_note(PayloadCursor& in) { return NoteRecord{in.take_string(in.remaining(), "note")}; }

// Why trace record `index` at `p` does not decode: walks its fields as trace::decode does.
std::string explain_bad_trace_record(const unsigned char* p, const unsigned char* end, uint32_t index,
                                     const unsigned char*& where) {
  where = p;
  if (p >= end) return fmt::format("trace record {}: the encoded bytes end before it", index);
  const unsigned char head = *p++;
  if (head & 0xc0) return fmt::format("trace record {}: reserved bits set in {:#04x}", index, head);
  const unsigned op = head & format::kTraceOpMask;
  if (op >= kOps) return fmt::format("trace record {}: unknown operation {}", index, op);
  const char* fields[6] = {"start tick", "duration", "address", "size", "old address", "stack id"};
  bool present[6] = {true, true, true, trace::has_size(op), trace::has_old_addr(op),
                     (head & format::kTraceStack) != 0};
  for (int f = 0; f < 6; ++f) {
    if (!present[f]) continue;
    where = p;
    uint64_t v;
    if (!trace::get_varint(p, end, v)) {
      const bool cut = [&] {
        for (const unsigned char* q = where; q < end && q < where + trace::kMaxVarint; ++q) {
          if (!(*q & 0x80)) return false;
        }
        return end - where < static_cast<ptrdiff_t>(trace::kMaxVarint);
      }();
      return fmt::format("trace record {} ({}): {} varint {}", index, op_name(op), fields[f],
                         cut ? "runs past the end of the chunk" : "is longer than 64 bits");
    }
    if (f == 5 && (v == 0 || v > 0xffffffffu)) {
      return fmt::format("trace record {} ({}): stack id {} out of range", index, op_name(op), v);
    }
  }
  where = p;
  return fmt::format("trace record {}: malformed", index);
}

TraceEventsRecord decode_trace_events(PayloadCursor& in) {
  TraceEventsRecord rec;
  const uint64_t at = in.offset();
  rec.header = in.take<format::TraceHeader>("TraceHeader");
  const auto& h = rec.header;
  if (h.bytes != in.remaining()) {
    in.fail_at(at, fmt::format("TraceEvents: header says {} encoded bytes but {} follow", h.bytes,
                               in.remaining()));
  }
  // A record takes at least 4 bytes (op, start, duration, address): reject impossible counts.
  if (h.count > in.remaining() / 4) {
    in.fail_at(at, fmt::format("TraceEvents: {} records cannot fit in {} bytes", h.count, in.remaining()));
  }
  rec.bytes_offset = in.offset();
  const auto bytes = in.take_bytes(h.bytes, "trace records");
  const unsigned char* const begin = bytes.data();
  const unsigned char* const end = begin + bytes.size();
  const unsigned char* p = begin;
  trace::Cursor cursor{h.base_tick, h.base_addr};
  trace::Record r;
  for (uint32_t i = 0; i < h.count; ++i) {
    const unsigned char* const record_at = p;
    const uint64_t previous_tick = cursor.tick;
    if (!trace::decode(p, end, cursor, r)) {
      const unsigned char* where = record_at;
      std::string why = explain_bad_trace_record(record_at, end, i, where);
      in.fail_at(rec.bytes_offset + static_cast<uint64_t>(where - begin), std::move(why));
    }
    if (r.start_tick < previous_tick || r.start_tick + r.duration < r.start_tick) {
      in.fail_at(rec.bytes_offset + static_cast<uint64_t>(record_at - begin),
                 fmt::format("trace record {}: start tick or duration overflows 64 bits", i));
    }
    if (i == 0) rec.first_tick = r.start_tick;
  }
  if (p != end) {
    in.fail_at(rec.bytes_offset + static_cast<uint64_t>(p - begin),
               fmt::format("TraceEvents: {} bytes after the last of {} records", end - p, h.count));
  }
  rec.last_tick = cursor.tick;
  if (h.count == 0) rec.first_tick = h.base_tick;
  rec.bytes.assign(begin, end);
  return rec;
}

StacksRecord decode_stacks(PayloadCursor& in) {
  StacksRecord rec;
  const uint64_t at = in.offset();
  rec.header = in.take<format::StacksHeader>("StacksHeader");
  if (rec.header.count > in.remaining() / sizeof(format::StackRecord)) {
    in.fail_at(at, fmt::format("Stacks: {} stacks cannot fit in the {} bytes that follow",
                               rec.header.count, in.remaining()));
  }
  rec.stacks.reserve(rec.header.count);
  for (uint32_t i = 0; i < rec.header.count; ++i) {
    const uint64_t stack_at = in.offset();
    StackEntry entry;
    entry.record = in.take<format::StackRecord>("StackRecord");
    if (entry.record.stack_id == 0) in.fail_at(stack_at, fmt::format("stack {}: id 0 is reserved", i));
    entry.frames = in.take_array<uint64_t>(entry.record.depth, fmt::format("stack {} frames", i));
    rec.stacks.push_back(std::move(entry));
  }
  in.expect_end("Stacks");
  return rec;
}

ModulesRecord decode_modules(PayloadCursor& in) {
  ModulesRecord rec;
  const uint64_t at = in.offset();
  const auto header = in.take<format::ModulesHeader>("ModulesHeader");
  if (header.count > in.remaining() / sizeof(format::ModuleRecord)) {
    in.fail_at(at, fmt::format("Modules: {} modules cannot fit in the {} bytes that follow", header.count,
                               in.remaining()));
  }
  rec.modules.reserve(header.count);
  for (uint32_t i = 0; i < header.count; ++i) {
    const uint64_t module_at = in.offset();
    ModuleEntry entry;
    entry.record = in.take<format::ModuleRecord>("ModuleRecord");
    if (entry.record.end < entry.record.start) {
      in.fail_at(module_at, fmt::format("module {}: end {:#x} below start {:#x}", i, entry.record.end,
                                        entry.record.start));
    }
    entry.path = in.take_string(entry.record.path_len, fmt::format("module {} path", i));
    rec.modules.push_back(std::move(entry));
  }
  in.expect_end("Modules");
  return rec;
}

LockWaitsRecord decode_lock_waits(PayloadCursor& in) {
  LockWaitsRecord rec;
  const uint64_t at = in.offset();
  rec.header = in.take<format::LockWaitsHeader>("LockWaitsHeader");
  if (rec.header.count > in.remaining() / sizeof(format::LockWaitRow)) {
    in.fail_at(at, fmt::format("LockWaits: {} rows cannot fit in the {} bytes that follow",
                               rec.header.count, in.remaining()));
  }
  const uint64_t rows_at = in.offset();
  rec.rows = in.take_array<format::LockWaitRow>(rec.header.count, "LockWaits rows");
  for (size_t i = 0; i < rec.rows.size(); ++i) {
    const auto& r = rec.rows[i];
    const uint64_t row_at = rows_at + i * sizeof(format::LockWaitRow);
    if (r.kind < static_cast<uint8_t>(format::LockKind::Mutex) || r.kind > format::kLastLockKind)
      in.fail_at(row_at, fmt::format("lock wait row {}: unknown kind {}", i, r.kind));
    if (r.max_ticks > r.wait_ticks)
      in.fail_at(row_at, fmt::format("lock wait row {}: longest wait {} exceeds the total {}", i, r.max_ticks, r.wait_ticks));
  }
  if (rec.header.unlocks_timed > rec.header.unlocks)
    in.fail_at(at, fmt::format("LockWaits: {} timed unlocks of {} in all", rec.header.unlocks_timed, rec.header.unlocks));
  in.expect_end("LockWaits");
  return rec;
}

PeerWaitsRecord decode_peer_waits(PayloadCursor& in) {
  PeerWaitsRecord rec;
  const uint64_t at = in.offset();
  rec.header = in.take<format::PeerWaitsHeader>("PeerWaitsHeader");
  if (rec.header.count > in.remaining() / sizeof(format::PeerWait)) {
    in.fail_at(at, fmt::format("PeerWaits: {} records cannot fit in the {} bytes that follow", rec.header.count,
                               in.remaining()));
  }
  const uint64_t rows_at = in.offset();
  rec.waits = in.take_array<format::PeerWait>(rec.header.count, "PeerWaits records");
  for (size_t i = 0; i < rec.waits.size(); ++i) {
    const format::PeerWait& w = rec.waits[i];
    const uint64_t row_at = rows_at + i * sizeof(format::PeerWait);
    if (format::peer_call_untimed(w.peer_start_tick)) {
      if (format::peer_untimed_op(w.peer_start_tick) >= kOps)
        in.fail_at(row_at, fmt::format("peer wait {}: unknown operation {}", i, format::peer_untimed_op(w.peer_start_tick)));
    } else if (w.peer_start_tick > w.tick) {
      in.fail_at(row_at, fmt::format("peer wait {}: the peer's call starts at tick {}, after the look at {}", i,
                                     w.peer_start_tick, w.tick));
    }
    if (w.peer_serial == rec.header.thread_serial && w.syscall != format::kPeerNoLook && w.syscall != format::kPeerHold)
      in.fail_at(row_at, fmt::format("peer wait {}: thread {} looked at itself", i, w.peer_serial));
    if (w.syscall == format::kPeerNoLook && !format::peer_probed(w.peer_start_tick))
      in.fail_at(row_at, fmt::format("peer wait {}: a probe without a look carries no probe", i));
    if (w.syscall == format::kPeerHold && !format::peer_probed(w.peer_start_tick))
      in.fail_at(row_at, fmt::format("peer wait {}: a hold carries no probe", i));
    if (w.syscall < format::kPeerHold || (w.syscall <= format::kPeerNotSeen && !format::peer_call_untimed(w.peer_start_tick)))
      in.fail_at(row_at, fmt::format("peer wait {}: unknown state {}", i, w.syscall));
  }
  in.expect_end("PeerWaits");
  return rec;
}

format::CpuSamples decode_cpu_samples(PayloadCursor& in) {
  const uint64_t at = in.offset();
  const auto c = in.take<format::CpuSamples>("CpuSamples");
  const uint64_t parts = c.in_allocator + c.in_shim + c.in_locks + c.in_cond;
  if (parts > c.samples || parts < c.in_allocator)
    in.fail_at(at, fmt::format("CpuSamples: {} samples in parts of {} in all", parts, c.samples));
  in.expect_end("CpuSamples");
  return c;
}

LockTestRecord decode_lock_test(PayloadCursor& in) {
  const uint64_t at = in.offset();
  LockTestRecord r;
  r.test = in.take<format::LockTest>("LockTest");
  const auto status = static_cast<format::LockTestStatus>(r.test.status);
  if (status != format::LockTestStatus::Ran && status != format::LockTestStatus::NotRun &&
      status != format::LockTestStatus::Failed)
    in.fail_at(at, fmt::format("LockTest: unknown status {}", r.test.status));
  r.detail = in.take_string(r.test.detail_len, "LockTest detail");
  in.expect_end("LockTest");
  return r;
}

}  // namespace

ChunkBody decode_chunk(uint16_t type, std::span<const unsigned char> payload, const std::string& file,
                       uint64_t payload_offset) {
  PayloadCursor in(payload, file, payload_offset);
  switch (static_cast<ChunkType>(type)) {
    case ChunkType::Process: return decode_process(in);
    case ChunkType::Calibration: return decode_calibration(in);
    case ChunkType::ThreadStats: return decode_thread_stats(in);
    case ChunkType::Events: return decode_events(in);
    case ChunkType::ProcessEnd: return decode_process_end(in);
    case ChunkType::Note: return decode_note(in);
    case ChunkType::TraceEvents: return decode_trace_events(in);
    case ChunkType::Stacks: return decode_stacks(in);
    case ChunkType::Modules: return decode_modules(in);
    case ChunkType::LockWaits: return decode_lock_waits(in);
    case ChunkType::PeerWaits: return decode_peer_waits(in);
    case ChunkType::CpuSamples: return decode_cpu_samples(in);
    case ChunkType::LockTest: return decode_lock_test(in);
  }
  in.fail(fmt::format("cannot decode chunk {}", chunk_type_name(type)));
}

}  // namespace allocscope
