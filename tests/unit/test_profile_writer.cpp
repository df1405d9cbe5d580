#include "test_profile_writer.h"

#include <xxhash.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <stdexcept>

#include "allocscope/buckets.h"

namespace allocscope::test {

uint64_t checksum(std::string_view payload) { return XXH3_64bits(payload.data(), payload.size()); }

format::ChunkHeader sealed(format::ChunkHeader h) {
  h.header_check = static_cast<uint32_t>(XXH3_64bits(&h, format::kChunkHeaderChecked));
  return h;
}

TestProfileWriter::TestProfileWriter(uint32_t version) {
  format::FileHeader header{};
  std::memcpy(header.magic, format::kMagic, sizeof header.magic);
  header.version = version;
  header.header_size = sizeof header;
  header.created_realtime_ns = 1'700'000'000'000'000'000;
  bytes_.append(as_bytes(header));
}

uint64_t TestProfileWriter::raw_chunk(const format::ChunkHeader& header, std::string_view payload) {
  const uint64_t offset = bytes_.size();
  bytes_.append(as_bytes(header));
  bytes_.append(payload);
  return offset;
}

uint64_t TestProfileWriter::chunk(uint16_t type, std::string_view payload) {
  format::ChunkHeader header{};
  header.magic = format::kChunkMagic;
  header.type = type;
  header.payload_size = static_cast<uint32_t>(payload.size());
  header.checksum = checksum(payload);
  return raw_chunk(sealed(header), payload);
}

uint64_t TestProfileWriter::process(const format::ProcessInfo& info, std::string_view exe,
                                    std::string_view args_nul_separated, std::string_view allocator,
                                    std::string_view libc_version) {
  format::ProcessInfo filled = info;
  filled.exe_len = static_cast<uint32_t>(exe.size());
  filled.args_len = static_cast<uint32_t>(args_nul_separated.size());
  filled.allocator_len = static_cast<uint32_t>(allocator.size());
  filled.libc_version_len = static_cast<uint32_t>(libc_version.size());
  std::string payload(as_bytes(filled));
  payload.append(exe).append(args_nul_separated).append(allocator).append(libc_version);
  return chunk(static_cast<uint16_t>(format::ChunkType::Process), payload);
}

uint64_t TestProfileWriter::calibration(const format::Calibration& calibration) {
  return chunk(static_cast<uint16_t>(format::ChunkType::Calibration), as_bytes(calibration));
}

uint64_t TestProfileWriter::thread_stats(format::ThreadStatsHeader header, const std::vector<Row>& rows) {
  header.n_rows = static_cast<uint32_t>(rows.size());
  std::string payload(as_bytes(header));
  for (const Row& r : rows) {
    format::StatsRow row = r.row;
    row.n_bins = static_cast<uint16_t>(r.bins.size());
    payload.append(as_bytes(row));
    for (const auto& bin : r.bins) payload.append(as_bytes(bin));
  }
  return chunk(static_cast<uint16_t>(format::ChunkType::ThreadStats), payload);
}

uint64_t TestProfileWriter::events(uint32_t thread_serial, uint64_t first_index,
                                   const std::vector<format::Event>& events) {
  format::EventsHeader header{thread_serial, static_cast<uint32_t>(events.size()), first_index};
  std::string payload(as_bytes(header));
  for (const auto& event : events) payload.append(as_bytes(event));
  return chunk(static_cast<uint16_t>(format::ChunkType::Events), payload);
}

uint64_t TestProfileWriter::process_end(const format::ProcessEnd& end) {
  return chunk(static_cast<uint16_t>(format::ChunkType::ProcessEnd), as_bytes(end));
}

uint64_t TestProfileWriter::note(std::string_view text) {
  return chunk(static_cast<uint16_t>(format::ChunkType::Note), text);
}

std::string encode_trace(const std::vector<trace::Record>& records, uint64_t base_tick, uint64_t base_addr) {
  std::string out;
  trace::Cursor cursor{base_tick, base_addr};
  unsigned char buf[trace::kMaxRecordBytes];
  for (const auto& r : records) {
    const unsigned char* end = trace::encode(buf, cursor, r);
    out.append(reinterpret_cast<const char*>(buf), static_cast<size_t>(end - buf));
  }
  return out;
}

trace::Record make_record(unsigned op, uint64_t start, uint64_t duration, uint64_t addr, uint64_t size,
                          uint64_t old_addr, uint32_t stack_id, bool failed) {
  trace::Record r;
  r.op = static_cast<uint8_t>(op);
  r.start_tick = start;
  r.duration = duration;
  r.addr = addr;
  r.size = size;
  r.old_addr = old_addr;
  r.stack_id = stack_id;
  r.failed = failed;
  return r;
}

uint64_t TestProfileWriter::trace(uint32_t thread_serial, uint64_t first_index, const std::vector<trace::Record>& records,
                                  uint64_t base_tick, uint64_t base_addr) {
  const std::string body = encode_trace(records, base_tick, base_addr);
  format::TraceHeader h{};
  h.thread_serial = thread_serial;
  h.count = static_cast<uint32_t>(records.size());
  h.first_index = first_index;
  h.base_tick = base_tick;
  h.base_addr = base_addr;
  h.bytes = static_cast<uint32_t>(body.size());
  std::string payload(as_bytes(h));
  payload += body;
  return chunk(static_cast<uint16_t>(format::ChunkType::TraceEvents), payload);
}

uint64_t TestProfileWriter::stacks(uint32_t thread_serial, const std::vector<TestStack>& stacks) {
  format::StacksHeader h{thread_serial, static_cast<uint32_t>(stacks.size())};
  std::string payload(as_bytes(h));
  for (const TestStack& s : stacks) {
    format::StackRecord r{};
    r.stack_id = s.id;
    r.depth = static_cast<uint16_t>(s.frames.size());
    r.flags = s.flags;
    r.hash = XXH3_64bits(s.frames.data(), s.frames.size() * sizeof(uint64_t));
    payload.append(as_bytes(r));
    for (uint64_t f : s.frames) payload.append(as_bytes(f));
  }
  return chunk(static_cast<uint16_t>(format::ChunkType::Stacks), payload);
}

uint64_t TestProfileWriter::modules(const std::vector<TestModule>& modules) {
  format::ModulesHeader h{static_cast<uint32_t>(modules.size()), 0};
  std::string payload(as_bytes(h));
  for (const TestModule& m : modules) {
    format::ModuleRecord r{};
    r.load_bias = m.load_bias;
    r.start = m.start;
    r.end = m.end;
    r.path_len = static_cast<uint32_t>(m.path.size());
    payload.append(as_bytes(r));
    payload += m.path;
  }
  return chunk(static_cast<uint16_t>(format::ChunkType::Modules), payload);
}

void TestProfileWriter::save(const std::filesystem::path& path) const {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes_.data(), static_cast<std::streamsize>(bytes_.size()));
  if (!out) throw std::runtime_error("cannot write " + path.string());
}

TestProfileWriter trace_profile(std::string_view allocator, format::Libc libc) {
  TestProfileWriter w;
  format::ProcessInfo info{};
  info.pid = 10;
  info.libc = static_cast<uint8_t>(libc);
  w.process(info, "/bin/prog", "prog", allocator, "");
  format::Calibration c = make_calibration(1'000'000'000, format::Clock::Monotonic);
  c.mode_flags |= format::kModeTrace;
  c.clock_read_ticks = 0;
  w.calibration(c);
  return w;
}

format::Calibration make_calibration(uint64_t tick_hz, format::Clock clock) {
  format::Calibration c{};
  c.clock = static_cast<uint8_t>(clock);
  c.sample_every = 1;
  c.cpu_sample_every = 64;
  c.window_shift = 20;
  c.tick_hz = tick_hz;
  c.calib_tick0 = 1'000'000;
  c.calib_mono0 = 5'000'000;
  c.calib_mono1 = c.calib_mono0 + 10'000'000;  // a 10 ms calibration window
  c.calib_tick1 = c.calib_tick0 + tick_hz / 100;
  c.clock_read_ticks = 20;
  c.mode_flags = format::kModeNoticeBounded;  // as the shim writes: windows trusted 5 µs in
  c.syscall_ticks = 300;
  c.futex_wake_ticks = 250;
  c.futex_wait_ticks = 280;
  c.rusage_ticks = 900;
  c.thread_cputime_ticks = 150;
  c.minor_fault_ticks = 700;
  return c;
}

format::ThreadStatsHeader make_stats_header(uint32_t serial, uint32_t seq, uint16_t part,
                                            format::ThreadState state) {
  format::ThreadStatsHeader h{};
  h.thread_serial = serial;
  h.tid = 1000 + serial;
  h.seq = seq;
  h.part = part;
  h.state = static_cast<uint8_t>(state);
  h.first_tick = 2'000'000;
  h.snapshot_tick = 3'000'000 + seq;
  h.snapshot_mono_ns = 6'000'000 + seq;
  h.last_tick = 2'900'000;
  h.rusage = {100, 20, 5, 0, 3, 1};
  h.events_written = 10 * seq;
  return h;
}

Row make_row(unsigned op, unsigned bucket, uint64_t calls, uint64_t bytes, std::vector<format::LatencyBin> bins) {
  Row r;
  r.row.op = static_cast<uint8_t>(op);
  r.row.bucket = static_cast<uint8_t>(bucket);
  r.row.calls = calls;
  r.row.bytes = bytes;
  uint64_t timed = 0;
  for (const auto& bin : bins) {
    timed += bin.count;
    r.row.timed_ticks += uint64_t{bin.count} * bucket_lo(bin.bin);
    if (bin.count) r.row.max_ticks = std::max<uint64_t>(r.row.max_ticks, bucket_lo(bin.bin));
  }
  r.row.timed = timed;
  r.bins = std::move(bins);
  return r;
}

format::Event make_event(unsigned op, uint64_t size, uint64_t start_tick, uint32_t duration_ticks) {
  format::Event e{};
  e.start_tick = start_tick;
  e.duration_ticks = duration_ticks;
  e.size = static_cast<uint32_t>(size);
  e.op = static_cast<uint8_t>(op);
  e.bucket = static_cast<uint8_t>(bucket_of(size));
  return e;
}

}  // namespace allocscope::test
