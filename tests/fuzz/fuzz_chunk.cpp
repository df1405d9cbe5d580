// fuzz_chunk.cpp — libFuzzer target: one chunk payload straight into its decoder, without the
// reader's checksums in the way (a fuzzer would rarely get past them).
//
// Input: the chunk type (2 bytes, little-endian), then the payload.  A type the analyzer does not
// know is not decoded (the reader skips such chunks).  The decoders must reject every bad payload
// with ProfileError; anything else is a finding.  Decoded TraceEvents chunks are also walked with
// the trace cursor, which relies on what the decoder checked.
#include <cstdint>
#include <cstring>
#include <span>
#include <variant>

#include "profile/chunk_decode.h"
#include "profile/format_names.h"
#include "fuzz_target.h"
#include "profile/profile_error.h"
#include "profile/trace_decode.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  uint16_t type;
  std::memcpy(&type, data, sizeof type);
  if (!allocscope::is_known_chunk_type(type)) return 0;
  static const std::string file = "fuzz-chunk";
  try {
    const allocscope::ChunkBody body =
        allocscope::decode_chunk(type, std::span<const unsigned char>(data + 2, size - 2), file, 24);
    if (const auto* trace = std::get_if<allocscope::TraceEventsRecord>(&body)) {
      allocscope::TraceCursor cursor(*trace);
      allocscope::trace::Record record;
      uint64_t n = 0;
      while (cursor.next(record)) n++;
      allocscope::fuzz_sink(n);
    }
  } catch (const allocscope::ProfileError&) {
  }
  return 0;
}
