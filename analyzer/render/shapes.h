// shapes.h — the shapes of a trace (model/shapes.h) in words: text and JSON.
//
// For `report` and `diff`:
//   write_shape_fields()  writes the trace keys of `report --json` into an open JSON object:
//       "cross_thread_frees", "same_thread_frees", "leaked_blocks", "leaked_bytes",
//       "peak_live_bytes", "shapes": [{"lo","hi","label","lifetime","cross_thread","blocks",
//       "calls","time_ns","bytes"}], and "trace": {everything else, see shapes_json.cpp}.
//   write_shape_groups()  writes "shape_groups": the shapes merged across adjacent size classes
//       (shape_groups.h), which is how `report --by shape` lists them.
#pragma once
#include <cstdint>
#include <string>

#include "model/shapes.h"
#include "util/json_writer.h"

namespace allocscope {

void write_shape_fields(JsonWriter& w, const ShapeReport& report);
// "shape_groups": [{"lo","hi","lifetime","cross_thread","classes","description","blocks","calls",
// "time_ns","bytes","call_share","time_share"}], by time.
void write_shape_groups(JsonWriter& w, const ShapeReport& report);
std::string shapes_json(const ShapeReport& report);
std::string shapes_text(const ShapeReport& report);
// Parts of shapes_text() for other reports: the summary lines (blocks, leaks, live bytes, realloc
// chains, threads inside), the merged shapes, and the first `rows` fine shapes.
std::string shapes_summary_text(const ShapeReport& report);
std::string shape_groups_text(const ShapeReport& report, size_t rows = 10);
std::string shape_rows_text(const ShapeReport& report, size_t rows = 20);

// "short-lived (< 1 µs) same-thread 16–1032 B": bands below 10 µs are short-lived, below 1 s
// medium-lived, the rest long-lived; leaked blocks are "leaked 16–1032 B".
std::string describe_shape(uint64_t lo, uint64_t hi, LifetimeBand band, bool cross_thread);
// "< 1 µs", …, "≥ 1 s", "leaked": a lifetime band in the text.
const char* lifetime_band_label(LifetimeBand band);
// "short-lived same-thread 16–1039 B", "leaked 9000 B".
std::string describe_shape_group(uint64_t lo, uint64_t hi, ShapeGroupKey key);
// {"base_ns","other_ns","gap_ns","groups":[…],"shapes":[…]}
void write_shape_gap(JsonWriter& w, const ShapeGap& gap);
// The merged shapes, then the first `rows` fine ones.
std::string shape_gap_text(const ShapeGap& gap, size_t rows = 10);

}  // namespace allocscope
