// chunk_records.h — the decoded, validated content of one profile chunk (format.h).
//
// A Chunk is what ProfileReader hands out: the file offset of its header and a ChunkBody, one
// alternative per known chunk type.  Fixed-size payloads are the format structs themselves;
// variable parts (strings, rows, latency bins, events) are unpacked into owning containers whose
// sizes were checked against the payload before anything was allocated.
#pragma once
#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include "allocscope/format.h"

namespace allocscope {

// Process: the fixed part, then its strings (args split at NUL).
struct ProcessRecord {
  format::ProcessInfo info{};
  std::string exe;
  std::vector<std::string> args;
  std::string allocator;
  std::string libc_version;
};

// One (operation, size bucket) row of a thread snapshot and its latency histogram bins.
struct StatsRowRecord {
  format::StatsRow row{};
  std::vector<format::LatencyBin> bins;
};

// One part of a thread snapshot.
struct ThreadStatsRecord {
  format::ThreadStatsHeader header{};
  std::vector<StatsRowRecord> rows;
};

// A run of timed-call events of one thread.
struct EventsRecord {
  format::EventsHeader header{};
  std::vector<format::Event> events;
};

struct NoteRecord {
  std::string text;
};

using ChunkBody = std::variant<ProcessRecord, format::Calibration, ThreadStatsRecord, EventsRecord,
                               format::ProcessEnd, NoteRecord>;

struct Chunk {
  uint64_t offset = 0;  // file offset of the chunk header
  ChunkBody body;
};

}  // namespace allocscope
