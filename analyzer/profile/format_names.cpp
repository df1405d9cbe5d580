#include "profile/format_names.h"

#include <fmt/format.h>

#include <iterator>

#include "allocscope/lock_test_probe.h"

namespace allocscope {

using format::ChunkType;

std::string chunk_type_name(uint16_t type) {
  switch (static_cast<ChunkType>(type)) {
    case ChunkType::Process: return "Process";
    case ChunkType::Calibration: return "Calibration";
    case ChunkType::ThreadStats: return "ThreadStats";
    case ChunkType::Events: return "Events";
    case ChunkType::ProcessEnd: return "ProcessEnd";
    case ChunkType::Note: return "Note";
    case ChunkType::TraceEvents: return "TraceEvents";
    case ChunkType::Stacks: return "Stacks";
    case ChunkType::Modules: return "Modules";
    case ChunkType::LockWaits: return "LockWaits";
    case ChunkType::PeerWaits: return "PeerWaits";
    case ChunkType::CpuSamples: return "CpuSamples";
    case ChunkType::LockTest: return "LockTest";
  }
  return fmt::format("type {}", type);
}

bool is_known_chunk_type(uint16_t type) {
  return type >= static_cast<uint16_t>(ChunkType::Process) &&
         type <= static_cast<uint16_t>(ChunkType::LockTest);
}

std::string libc_name(uint8_t libc) {
  switch (static_cast<format::Libc>(libc)) {
    case format::Libc::Glibc: return "glibc";
    case format::Libc::Musl: return "musl";
    case format::Libc::Unknown: break;
  }
  return "unknown";
}

std::string clock_name(uint8_t clock) {
  switch (static_cast<format::Clock>(clock)) {
    case format::Clock::Tsc: return "tsc";
    case format::Clock::Monotonic: return "monotonic";
  }
  return fmt::format("clock {}", clock);
}

std::string thread_state_name(format::ThreadState state) {
  switch (state) {
    case format::ThreadState::Running: return "running";
    case format::ThreadState::Exited: return "exited";
    case format::ThreadState::ProcessExit: return "process-exit";
  }
  return fmt::format("state {}", static_cast<unsigned>(state));
}

std::string exit_kind_name(uint32_t kind) {
  switch (static_cast<format::ExitKind>(kind)) {
    case format::ExitKind::Exit: return "exit";
    case format::ExitKind::UnderscoreExit: return "_exit";
    case format::ExitKind::Exec: return "exec";
    case format::ExitKind::Explicit: return "explicit";
  }
  return fmt::format("kind {}", kind);
}

static_assert(std::size(allocscope_lock_test_phase_names) == format::kLockTestPhases);
static_assert(std::size(allocscope_lock_test_where_names) == format::kLockTestWheres);
static_assert(std::size(allocscope_lock_test_outcome_names) == format::kLockTestOutcomes);

const char* lock_test_status_name(uint8_t status) {
  switch (static_cast<format::LockTestStatus>(status)) {
    case format::LockTestStatus::Ran: return "ran";
    case format::LockTestStatus::NotRun: return "not_run";
    case format::LockTestStatus::Failed: return "failed";
  }
  return "unknown";
}
const char* lock_test_phase_name(int phase) { return allocscope_lock_test_phase_names[phase]; }
const char* lock_test_where_name(int where) { return allocscope_lock_test_where_names[where]; }
const char* lock_test_outcome_name(int outcome) { return allocscope_lock_test_outcome_names[outcome]; }

}  // namespace allocscope
