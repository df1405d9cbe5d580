// export.h — `allocscope export FILE --format folded|pprof|chrome -o OUT [--weight time|calls]`:
// a profile's calls in the formats of other tools.
//
//   folded  one line per distinct stack, "outermost;…;innermost;op WEIGHT" (FlameGraph's
//           flamegraph.pl, speedscope, inferno).  The shim's own frames are left out; inlined
//           functions (addr2line) appear as frames of their own; the leaf is the operation.
//           Calls without a stack are "[no stack];op".  WEIGHT is time in ns, or calls.
//   pprof   a gzipped profile.proto message (go tool pprof, speedscope, Perfetto): sample types
//           calls/count and time/nanoseconds (the default is the --weight one), labels "op" and
//           "size_class", one mapping per loaded object, locations with their functions and
//           inlined lines, and a leaf location per operation.
//   chrome  Chrome trace-event JSON (Perfetto UI, chrome://tracing): a track per thread with a
//           complete event ("X") for each timed call — every call of a trace, the timed sample
//           otherwise — named after its operation, with size, address and call site as args;
//           for a trace, a counter track of the threads inside the allocator.
// Times in the chrome format are µs from the process start (ns precision).  Stacks are those of
// Stacks chunks: in sampled mode only the timed calls that got a stack carry one (callsites.h).
#pragma once
#include <cstdio>
#include <string>

#include "cli.h"
#include "symbolize.h"
#include "trace_analysis.h"

namespace allocscope {

enum class ExportWeight { Time, Calls };

struct ExportOptions {
  ExportWeight weight = ExportWeight::Time;
  bool source_lines = true;
};

std::string export_folded(const StackCostSource& src, const ExportOptions& options = {});
// The gzipped protobuf; export_pprof_raw() the message before compression.
std::string export_pprof(const StackCostSource& src, const ExportOptions& options = {});
std::string export_pprof_raw(const StackCostSource& src, const ExportOptions& options = {});
std::string gzip_bytes(const std::string& data);
// Streams the trace-event JSON of `path` to `out`.
void export_chrome(const std::filesystem::path& path, std::FILE* out, const ExportOptions& options = {});

int export_command(CommandArgs args);

}  // namespace allocscope
