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

}  // namespace allocscope
