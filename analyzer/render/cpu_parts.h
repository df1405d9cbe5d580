// cpu_parts.h — where the threads' CPU time went (model/cpu_parts.h) as text and JSON.
#pragma once
#include <string>

#include "model/cpu_parts.h"

namespace allocscope {

class JsonWriter;
// The report section "Where the CPU time went" (empty when not recorded).
std::string cpu_section_text(const CpuParts& c);
// The "cpu" object of report --json.
void write_cpu_parts_json(JsonWriter& w, const CpuParts& c);

}  // namespace allocscope
