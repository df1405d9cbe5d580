// callsites.h — the call sites (model/callsites.h) as text and JSON.
#pragma once
#include <cstddef>
#include <string>

#include "model/callsites.h"
#include "util/json_writer.h"

namespace allocscope {

void write_callsite_fields(JsonWriter& w, const CallSiteReport& report);  // "callsites": […], …
std::string callsites_json(const CallSiteReport& report);
std::string callsites_text(const CallSiteReport& report);
// callsites_text() without its title line: how many calls carry a stack, then the table (or why
// there is none), for other reports; with `width`, call chains are cut to fit in that many columns.
std::string callsites_body_text(const CallSiteReport& report, size_t width = 0);

}  // namespace allocscope
