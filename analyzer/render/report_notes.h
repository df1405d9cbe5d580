// report_notes.h — what the report says about its own figures, in words: the caveats about the
// data (model/cost_model.h ModelNotes) and how the ± bounds were computed (ErrorNotes).  The text
// and JSON reports and the HTML page print the same lines.
#pragma once
#include <string>
#include <vector>

#include "model/cost_model.h"

namespace allocscope {

// Plain-language warnings about the data, in order; the shim's own notes last.
std::vector<std::string> report_caveats(const CostReport& r);

// How the ± bounds were computed.
std::string error_method(const ErrorNotes& error);

}  // namespace allocscope
