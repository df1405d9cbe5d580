// callsites.h — which lines of the program pay for the allocator: costs per call site and class.
//
// A stack (stack_table.h) runs from the shim's own frames, through the allocator's object, out to
// the program.  The *call site* of a stack is its first frame (innermost first) that lies neither
// in the shim (liballocscope*.so) nor in the allocator's object (ProcessRecord::allocator), nor in
// an allocation wrapper of the C++ runtime (operator new / operator delete and their variants).
// Its name is the innermost function at that address (a function inlined there, when addr2line
// knows), with file:line when the object has line tables; its chain names the functions around it:
// what was inlined into what, then up to two callers.
//
// analyze_callsites() adds up, per (call site, size class), the calls, time and bytes of every
// call that carries a stack (all calls of a trace recorded with stacks; in sampled mode the timed
// calls that got a stack), and the blocks allocated there that were never freed (traces only).
// Rows are per class, costliest first, at most `top` per class.
#pragma once
#include <array>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "allocscope/ops.h"
#include "symbols/symbolize.h"
#include "model/trace_analysis.h"

namespace allocscope {

// Decides which frames belong to the shim, the allocator and the C++ runtime's wrappers.
class FrameFilter {
 public:
  FrameFilter(const Profile& profile, Symbolizer& symbolizer);
  bool in_shim(const FrameInfo& frame) const;
  bool in_allocator(const FrameInfo& frame) const;  // the allocator's object or a C++ wrapper
  // Index of the call site in `stack` (innermost first), or nullopt when every frame is filtered.
  std::optional<size_t> call_site(const Stack& stack);
  // The frames of `stack` outside the shim, innermost first.
  std::vector<const FrameInfo*> program_frames(const Stack& stack);
  Symbolizer& symbolizer() { return symbolizer_; }

 private:
  Symbolizer& symbolizer_;
  std::vector<bool> shim_module_, allocator_module_;
};

// A symbolizer for `profile`'s addresses (its executable names an unnamed main module), with every
// frame of every stack already resolved in one batch.
std::unique_ptr<Symbolizer> stack_symbolizer(const Profile& profile, bool source_lines);

struct CallSiteOptions {
  size_t top = 10;            // rows per class
  bool source_lines = true;   // run addr2line
};

struct CallSiteRow {
  std::string site;           // innermost function at the call site
  std::string location;       // "file.c:42", or ""
  std::string module;         // file name of the object
  std::vector<std::string> chain;  // the site, what it was inlined into, then callers
  uint32_t inlined = 0;            // chain[0 .. inlined-1] were inlined into the entry after them
  uint64_t lo = 0, hi = 0;
  std::string label;
  bool size_known = true;     // false: frees of blocks whose size is unknown
  uint64_t calls = 0;
  uint64_t time_ns = 0;
  ByteCount bytes = 0;
  uint64_t leaked_blocks = 0;
  ByteCount leaked_bytes = 0;
  std::array<uint64_t, kOpSlots> calls_by_op{};
};

struct CallSiteReport {
  std::string file, program;
  std::string class_table;
  bool trace = false;
  uint64_t calls = 0;                 // calls the costs come from
  uint64_t calls_with_stack = 0, calls_without_stack = 0;
  uint64_t time_with_stack_ns = 0, time_without_stack_ns = 0;
  bool estimated = false;             // times are the cost model's estimate (apply_estimate)
  double allocator_time_ns = 0;       // … which adds up to this, stacks and "no stack" together
  uint64_t stacks = 0;                // distinct stacks
  uint64_t sites = 0;                 // distinct call sites
  std::vector<CallSiteRow> rows;      // per class in size order, costliest first within a class
};

CallSiteReport analyze_callsites(const std::filesystem::path& path, const CallSiteOptions& options = {});
CallSiteReport callsite_report(const StackCostSource& costs, const CallSiteOptions& options = {});

}  // namespace allocscope
