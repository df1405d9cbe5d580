// lock_report.h — the locks outside the allocator (model/lock_report.h) as text and JSON.
#pragma once
#include <cstddef>
#include <string>

#include "model/lock_report.h"

namespace allocscope {

class JsonWriter;
// The report section "Locks outside the allocator" (empty when not recorded).
std::string lock_section_text(const LockReport& r, size_t width);
// The "locks" object of report --json.
void write_lock_report_json(JsonWriter& w, const LockReport& r);

}  // namespace allocscope
