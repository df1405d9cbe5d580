// chunk_decode.h — turns the checksummed payload of one chunk into a ChunkBody.
//
// Decoding checks everything the payload says about its own layout: fixed payloads have exactly
// their struct's size, string lengths and row/bin/event counts fit the payload exactly (checked
// before any allocation, so a huge count costs nothing), and enum and index fields (op, size
// bucket or kBucketUnknown, latency bin, clock, libc, thread state) are in range.  Trace records
// are decoded one by one (every varint within the chunk's bytes and at most 64 bits, known
// operations, no reserved bits, stack ids in range, ticks that do not wrap) and must fill the
// chunk exactly; stack depths and module path lengths must fit.  Damage throws ProfileError at
// the file offset of the offending field.
#pragma once
#include <cstdint>
#include <span>
#include <string>

#include "profile/chunk_records.h"

namespace allocscope {

// `type` must satisfy is_known_chunk_type(); payload_offset is the file offset of payload[0].
ChunkBody decode_chunk(uint16_t type, std::span<const unsigned char> payload, const std::string& file,
                       uint64_t payload_offset);

}  // namespace allocscope
