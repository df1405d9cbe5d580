// chunk_records.h — the decoded, validated content of one profile chunk (format.h).
//
// A Chunk is what ProfileReader hands out: the file offset of its header and a ChunkBody, one
// alternative per known chunk type.  Fixed-size payloads are the format structs themselves;
// variable parts (strings, rows, latency bins, events, stacks, modules) are unpacked into owning
// containers whose sizes were checked against the payload before anything was allocated.
// Trace records stay encoded (TraceEventsRecord::bytes, at most one payload): decoding checked
// every record, and trace_decode.h walks them again without allocating.
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

// Every call of one thread over a stretch of time, still encoded (format.h TraceHeader); each
// record was checked when the chunk was decoded.  bytes_offset is the file offset of bytes[0].
struct TraceEventsRecord {
  format::TraceHeader header{};
  std::vector<unsigned char> bytes;
  uint64_t bytes_offset = 0;
  uint64_t first_tick = 0;  // start tick of the first record (base_tick when there is none)
  uint64_t last_tick = 0;   // start tick of the last record (base_tick when there is none)
};

// One call stack: return addresses, innermost first.
struct StackEntry {
  format::StackRecord record{};
  std::vector<uint64_t> frames;
};

struct StacksRecord {
  format::StacksHeader header{};
  std::vector<StackEntry> stacks;
};

// One loaded object: where it was mapped, and its path ("" for the main program when the shim
// could not name it).
struct ModuleEntry {
  format::ModuleRecord record{};
  std::string path;
};

struct ModulesRecord {
  std::vector<ModuleEntry> modules;
};

// One thread's contended lock waits per (lock, call site), cumulative (format.h LockWaits).
struct LockWaitsRecord {
  format::LockWaitsHeader header{};
  std::vector<format::LockWaitRow> rows;
};

// What one thread saw other threads do inside long timed calls (format.h PeerWaits).
struct PeerWaitsRecord {
  format::PeerWaitsHeader header{};
  std::vector<format::PeerWait> waits;
};

// What the lock test found, with the text that says what was run (format.h LockTest).
struct LockTestRecord {
  format::LockTest test{};
  std::string detail;
};

using ChunkBody = std::variant<ProcessRecord, format::Calibration, ThreadStatsRecord, EventsRecord,
                               format::ProcessEnd, NoteRecord, TraceEventsRecord, StacksRecord,
                               ModulesRecord, LockWaitsRecord, PeerWaitsRecord, format::CpuSamples,
                               LockTestRecord>;

struct Chunk {
  uint64_t offset = 0;  // file offset of the chunk header
  ChunkBody body;
};

}  // namespace allocscope
