// test_profile_writer.h — builds profile files in memory, chunk by chunk, for the reader tests.
//
// Each chunk method appends one correctly checksummed chunk and returns the chunk's file offset;
// raw_chunk() writes any header/payload, however wrong.  Count fields the writer can derive
// (n_rows, n_bins, events count, string lengths) are filled in unless a test sets them itself
// through the raw forms.  The free functions make typical payload structs.
#pragma once
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "allocscope/format.h"
#include "allocscope/trace_codec.h"

namespace allocscope::test {

// A stack for stacks(): id, return addresses (innermost first), flags.
struct TestStack {
  uint32_t id = 0;
  std::vector<uint64_t> frames;
  uint16_t flags = format::kStackFramePointers;
};

struct TestModule {
  uint64_t load_bias = 0, start = 0, end = 0;
  std::string path;
};

struct Row {
  format::StatsRow row{};
  std::vector<format::LatencyBin> bins;
};

class TestProfileWriter {
 public:
  explicit TestProfileWriter(uint32_t version = format::kVersion);

  uint64_t process(const format::ProcessInfo& info, std::string_view exe, std::string_view args_nul_separated,
                   std::string_view allocator, std::string_view libc_version);
  uint64_t calibration(const format::Calibration& calibration);
  uint64_t thread_stats(format::ThreadStatsHeader header, const std::vector<Row>& rows);
  uint64_t events(uint32_t thread_serial, uint64_t first_index, const std::vector<format::Event>& events);
  uint64_t process_end(const format::ProcessEnd& end);
  uint64_t note(std::string_view text);
  // A TraceEvents chunk encoded with trace_codec.h from base_tick/base_addr.
  uint64_t trace(uint32_t thread_serial, uint64_t first_index, const std::vector<trace::Record>& records,
                 uint64_t base_tick = 0, uint64_t base_addr = 0);
  uint64_t stacks(uint32_t thread_serial, const std::vector<TestStack>& stacks);
  uint64_t modules(const std::vector<TestModule>& modules);

  uint64_t chunk(uint16_t type, std::string_view payload);  // correct header and checksum
  uint64_t raw_chunk(const format::ChunkHeader& header, std::string_view payload);

  std::string& bytes() { return bytes_; }
  uint64_t size() const { return bytes_.size(); }
  void save(const std::filesystem::path& path) const;

 private:
  std::string bytes_;
};

template <class T>
std::string_view as_bytes(const T& value) {
  return {reinterpret_cast<const char*>(&value), sizeof value};
}

uint64_t checksum(std::string_view payload);
// `h` with its header_check filled in, as a writer seals every chunk header.
format::ChunkHeader sealed(format::ChunkHeader h);

format::Calibration make_calibration(uint64_t tick_hz, format::Clock clock = format::Clock::Tsc);
format::ThreadStatsHeader make_stats_header(uint32_t serial, uint32_t seq, uint16_t part,
                                            format::ThreadState state = format::ThreadState::Running);
Row make_row(unsigned op, unsigned bucket, uint64_t calls, uint64_t bytes,
             std::vector<format::LatencyBin> bins = {});
format::Event make_event(unsigned op, uint64_t size, uint64_t start_tick, uint32_t duration_ticks);
// A profile in trace mode whose ticks are nanoseconds, for trace chunks to be added: a Process
// chunk (pid 10, "/bin/prog", `allocator`, `libc`) and a Calibration whose clock reads cost nothing.
TestProfileWriter trace_profile(std::string_view allocator = "", format::Libc libc = format::Libc::Unknown);
// The encoded bytes of trace records (what follows a TraceHeader).
std::string encode_trace(const std::vector<trace::Record>& records, uint64_t base_tick = 0, uint64_t base_addr = 0);
// A trace record; failed calls have addr 0.
trace::Record make_record(unsigned op, uint64_t start, uint64_t duration, uint64_t addr, uint64_t size = 0,
                          uint64_t old_addr = 0, uint32_t stack_id = 0, bool failed = false);

}  // namespace allocscope::test
