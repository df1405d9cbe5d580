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
//   chrome  Chrome trace-event JSON (Perfetto UI, chrome://tracing): a track per thread (its real
//           tid, named by a metadata event) with a complete event ("X") for each timed call and
//           an instant event ("i") for each call without a duration — every call of a trace, the
//           timed sample otherwise — named after its operation, with size, address and call
//           site as args; for a trace, a counter track of the threads inside the allocator.
//           --from/--to and --threads choose a time range and threads (docs/shapes.md).
// Times in the chrome format are µs from the process start (ns precision).  Stacks are those of
// Stacks chunks: in sampled mode only the timed calls that got a stack carry one (callsites.h).
#pragma once
#include <array>
#include <cstdio>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <tuple>
#include <vector>

#include "symbols/symbolize.h"
#include "model/trace_analysis.h"

namespace allocscope {

enum class ExportWeight { Time, Calls };

// A bound of chrome's --from/--to: seconds from the process start, or a tick of the profile's clock.
struct TimeBound {
  double seconds = 0;
  std::optional<uint64_t> tick;  // "…t": an absolute tick, as `dump` shows them
};

struct ExportOptions {
  ExportWeight weight = ExportWeight::Time;
  bool source_lines = true;
  // chrome only:
  std::optional<TimeBound> from, to;  // calls that start in [from, to)
  std::vector<uint64_t> threads;      // thread ids (tid) to keep; empty: all
  bool progress = true;               // a progress bar on stderr for exports of many calls
};

// The calls that carry a stack are a sample (docs/recording.md): the shim takes the stack of one
// timed call in N ("fast" below: those under the profile's stack_slow_ticks) and of every slower
// call.  StackSample gathers, in the pass that reads the calls, what the folded export needs to
// let each sampled stack stand for the calls it represents: per operation, the timed calls fast
// and slow, and per (thread, stack id, operation) the sampled ones.
class StackSample : public TraceVisitor {
 public:
  struct Part {
    uint64_t calls = 0, ticks = 0;
    void add(uint64_t t) { ++calls, ticks += t; }
  };
  struct Site {
    Part fast, slow;
  };
  struct OpTimed {
    Part fast, slow;        // every timed call
    uint64_t fast_sampled = 0;  // fast calls with a stack
  };

  explicit StackSample(uint64_t slow_ticks) : slow_ticks_(slow_ticks) {}
  void exit(const TraceCall& call) override;                                  // a trace's calls
  void events(const format::EventsHeader& header, std::span<const format::Event> events);  // sampled

  const std::array<OpTimed, kOpSlots>& ops() const { return ops_; }
  const std::map<std::tuple<uint32_t, uint32_t, uint8_t>, Site>& sites() const { return sites_; }

 private:
  void add(uint32_t thread, uint32_t stack_id, unsigned op, uint64_t ticks);
  uint64_t slow_ticks_;
  std::array<OpTimed, kOpSlots> ops_{};
  std::map<std::tuple<uint32_t, uint32_t, uint8_t>, Site> sites_;  // thread, stack id, op
};

// The weight of each (stack, operation) line of a folded export; kNoStack for "[no stack]".
// With a sample, the weight of every operation (all its calls, timed or not: the same total as
// without) is spread over the sampled stacks as the calls they stand for: the operation's fast
// timed calls in the proportions of the sampled fast calls of each stack, a slow call for itself;
// untimed calls are taken to come from the stacks in the proportions of the timed ones.  What no
// stack stands for (fast calls of an operation none of whose fast calls got a stack, slow calls
// whose stack could not be taken) stays under "[no stack]".  Without a sample: the weight of the
// calls that carry each stack.
struct FoldedWeights {
  std::map<std::pair<StackIndex, uint8_t>, uint64_t> lines;
  uint64_t total = 0, under_stacks = 0;  // weights
  uint64_t sampled_calls = 0;            // calls that carry a stack
  uint64_t calls = 0;                    // calls in the export
};
FoldedWeights folded_weights(const StackCostSource& src, const ExportOptions& options,
                             const StackSample* sample = nullptr);

std::string export_folded(const StackCostSource& src, const ExportOptions& options = {},
                          const StackSample* sample = nullptr);
// The gzipped protobuf; export_pprof_raw() the message before compression.
std::string export_pprof(const StackCostSource& src, const ExportOptions& options = {});
std::string export_pprof_raw(const StackCostSource& src, const ExportOptions& options = {});
std::string gzip_bytes(const std::string& data);
// Streams the trace-event JSON of `profile` (loaded by load_profile(); its events are read again
// from its file) to `out`; returns the calls written.
uint64_t export_chrome(const Profile& profile, std::FILE* out, const ExportOptions& options = {});

}  // namespace allocscope
