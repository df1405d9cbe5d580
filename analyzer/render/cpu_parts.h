// cpu_parts.h — where the threads' CPU time went (model/cpu_parts.h) as text and JSON.
#pragma once
#include <string>
#include <vector>

#include "model/cpu_parts.h"

namespace allocscope {

class JsonWriter;
// The parts as the text section and the HTML page name them, and their keys in report --json, in
// their order (the one list of the parts).
struct NamedCpuPart {
  const char* label;
  const char* key;
  const CpuPart* part;
};
std::vector<NamedCpuPart> named_cpu_parts(const CpuParts& c);
// The report section "Where the CPU time went" (empty when not recorded).
std::string cpu_section_text(const CpuParts& c);
// The "cpu" object of report --json.
void write_cpu_parts_json(JsonWriter& w, const CpuParts& c);

}  // namespace allocscope
