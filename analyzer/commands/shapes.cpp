// shapes.cpp — `allocscope shapes`: a trace's shapes, or the gap between two traces by shape.
#include <fmt/format.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "commands/cli.h"
#include "commands/commands.h"
#include "model/cost_model.h"
#include "model/shapes.h"
#include "render/shapes.h"
#include "model/trace_analysis.h"
#include "util/json_writer.h"

namespace allocscope {

namespace {

constexpr std::string_view kUsage =
    "usage: allocscope shapes FILE [OTHER] [--json]\n"
    "\n"
    "The shapes of a trace (a profile recorded with `allocscope record --trace`): how long blocks\n"
    "live per size class, which are freed by another thread, realloc growth chains, live bytes\n"
    "and their peak, leaks at exit, and how many threads are inside the allocator over time.\n"
    "With OTHER, also splits the difference in allocator time from FILE to OTHER by shape.\n"
    "\n"
    "  --json     one JSON document instead of text\n"
    "  -h, --help this help\n";

}  // namespace

int shapes_command(CommandArgs args) {
  bool json = false;
  const auto operands = OptionParser("shapes").flag("--json", json).parse(args);
  if (!operands) {
    fmt::print("{}", kUsage);
    return 0;
  }
  const std::vector<std::string>& files = *operands;
  if (files.empty()) throw UsageError("shapes: missing FILE");
  if (files.size() > 2) throw UsageError("shapes: at most two files");
  const Profile base_profile = load_profile(files[0]);
  ShapeReport base = shape_report(base_profile, analyze_trace(base_profile));
  apply_estimate(base, analyze_profile(files[0]));
  if (files.size() == 1) {
    fmt::print("{}", json ? shapes_json(base) : shapes_text(base));
    return 0;
  }
  const ShapeReport other = analyze_shapes(files[1]);
  if (!base.trace || !other.trace) {
    throw std::runtime_error(fmt::format("shapes: {} holds no trace (record it with --trace)",
                                         base.trace ? files[1] : files[0]));
  }
  const ShapeGap gap = attribute_gap(base, other, class_table_of(base_profile));
  if (json) {
    std::string out;
    JsonWriter w(out);
    w.begin_object();
    w.field("schema", "allocscope-shapes-gap/1");
    w.key("base").begin_object().field("file", base.file);
    write_shape_fields(w, base);
    w.end_object();
    w.key("other").begin_object().field("file", other.file);
    write_shape_fields(w, other);
    w.end_object();
    w.key("gap");
    write_shape_gap(w, gap);
    w.end_object();
    fmt::print("{}\n", out);
  } else {
    fmt::print("{}\n{}\n{}", shapes_text(base), shapes_text(other), shape_gap_text(gap));
  }
  return 0;
}

}  // namespace allocscope
