// Folded stacks ("frame;frame;frame weight"), outermost frame first.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "callsites.h"
#include "export.h"

namespace allocscope {

namespace {

std::string folded_name(std::string name) {
  for (char& c : name) {
    if (c == ';' || c == '\n' || c == '\r') c = c == ';' ? ':' : ' ';
  }
  return name;
}

}  // namespace

std::string export_folded(const StackCostSource& src, const ExportOptions& options) {
  const Profile& profile = src.profile;
  const auto symbolizer = stack_symbolizer(profile, options.source_lines);
  FrameFilter filter(profile, *symbolizer);

  std::vector<std::string> prefix(profile.stacks.stacks().size());
  for (size_t i = 0; i < prefix.size(); ++i) {
    const auto frames = filter.program_frames(profile.stacks.stack(static_cast<StackIndex>(i)));
    std::string line;
    for (auto it = frames.rbegin(); it != frames.rend(); ++it) {
      const FrameInfo& f = **it;
      if (f.source.size() > 1) {  // the holding function, then what was inlined into it
        for (auto s = f.source.rbegin(); s != f.source.rend(); ++s) {
          line += folded_name(s->function.empty() ? f.name() : s->function) + ";";
        }
      } else {
        line += folded_name(f.name()) + ";";
      }
    }
    prefix[i] = std::move(line);
  }

  std::map<std::string, uint64_t> lines;
  for (const auto& [key, cost] : src.costs) {
    const uint64_t weight = options.weight == ExportWeight::Calls ? cost.calls
                                                                    : static_cast<uint64_t>(std::llround(cost_ns(src, cost)));
    if (weight == 0) continue;
    const std::string stack = key.stack == kNoStack ? std::string("[no stack];") : prefix[key.stack];
    lines[stack + op_label(key.op)] += weight;
  }
  std::string out;
  for (const auto& [line, weight] : lines) out += fmt::format("{} {}\n", line, weight);
  return out;
}

}  // namespace allocscope
