// format_names.h — display names of the enum values of the profile format (format.h).
//
// Names are stable, lower-case identifiers (they appear in JSON); values this analyzer does not
// know get a name that still shows the number.
#pragma once
#include <cstdint>
#include <string>

#include "allocscope/format.h"

namespace allocscope {

std::string chunk_type_name(uint16_t type);  // "Process", …, or "type N"
bool is_known_chunk_type(uint16_t type);
std::string libc_name(uint8_t libc);         // "glibc", "musl", "unknown"
std::string clock_name(uint8_t clock);       // "tsc", "monotonic", or "clock N"
std::string thread_state_name(format::ThreadState state);  // "running", "exited", "process-exit"
std::string exit_kind_name(uint32_t kind);   // "exit", "_exit", "exec", "explicit", or "kind N"
// The LockTest chunk's indices (format.h), by the names allocscope-lockprobe prints them with
// (lockprobe/lockprobe.c): run/lock_test.cpp reads its output by them, dump prints them.
const char* lock_test_status_name(uint8_t status);  // "ran", "not_run", "failed", or "unknown"
const char* lock_test_phase_name(int phase);        // "apart", "same"
const char* lock_test_where_name(int where);        // "outside", "malloc", "free", "malloc_syscall"
const char* lock_test_outcome_name(int outcome);    // "passed", "stopped", "stopped_later", "preempted", "other"

}  // namespace allocscope
