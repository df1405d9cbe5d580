// Folded stacks ("frame;frame;frame weight"), outermost frame first.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "model/callsites.h"
#include "export/export.h"

namespace allocscope {

namespace {

std::string folded_name(std::string name) {
  for (char& c : name) {
    if (c == ';' || c == '\n' || c == '\r') c = c == ';' ? ':' : ' ';
  }
  return name;
}

}  // namespace

void StackSample::add(uint32_t thread, uint32_t stack_id, unsigned op, uint64_t ticks) {
  if (op >= kOpSlots) return;
  const bool slow = ticks >= slow_ticks_;
  OpTimed& o = ops_[op];
  (slow ? o.slow : o.fast).add(ticks);
  if (stack_id == 0) return;
  Site& site = sites_[{thread, stack_id, static_cast<uint8_t>(op)}];
  (slow ? site.slow : site.fast).add(ticks);
  if (!slow) ++o.fast_sampled;
}

void StackSample::exit(const TraceCall& call) {
  if (call.record.duration == 0) return;  // not timed: it never carries a stack
  add(call.thread, call.record.stack_id, call.record.op, call.duration());
}

void StackSample::events(const format::EventsHeader& header, std::span<const format::Event> events) {
  for (const format::Event& e : events) add(header.thread_serial, e.stack_id, e.op, e.duration_ticks);
}

FoldedWeights folded_weights(const StackCostSource& src, const ExportOptions& options, const StackSample* sample) {
  const Profile& profile = src.profile;
  const bool by_calls = options.weight == ExportWeight::Calls;
  FoldedWeights out;
  std::array<uint64_t, kOpSlots> op_total{};
  for (const auto& [key, cost] : src.costs) {
    const uint64_t weight = by_calls ? cost.calls : static_cast<uint64_t>(std::llround(cost_ns(src, cost)));
    out.calls += cost.calls;
    if (key.stack != kNoStack) out.sampled_calls += cost.calls;
    if (!sample) {
      if (weight) out.lines[{key.stack, key.op}] += weight;
    } else if (key.op < kOpSlots) {
      op_total[key.op] += weight;
    }
  }
  if (sample) {
    // Per operation: the fast timed calls are spread over the stacks in the proportions of their
    // sampled fast calls (a ratio estimate), the slow ones with a stack stand for themselves; the
    // shares of the operation's timed calls so found spread its whole weight (untimed calls too).
    std::map<std::pair<StackIndex, uint8_t>, StackSample::Site> by_stack;
    std::array<StackSample::Part, kOpSlots> sampled_fast{};
    for (const auto& [site_key, site] : sample->sites()) {
      const auto& [thread, id, op] = site_key;
      const StackIndex stack = profile.stacks.find(thread, id);
      if (stack == kNoStack) continue;
      StackSample::Site& s = by_stack[{stack, op}];
      s.fast.calls += site.fast.calls, s.fast.ticks += site.fast.ticks;
      s.slow.calls += site.slow.calls, s.slow.ticks += site.slow.ticks;
      sampled_fast[op].calls += site.fast.calls, sampled_fast[op].ticks += site.fast.ticks;
    }
    auto measure = [by_calls](const StackSample::Part& p) {
      return static_cast<double>(by_calls ? p.calls : p.ticks);
    };
    std::array<uint64_t, kOpSlots> placed{};
    for (const auto& [key, site] : by_stack) {
      const unsigned op = key.second;
      const StackSample::OpTimed& o = sample->ops()[op];
      const double timed = measure(o.fast) + measure(o.slow);
      if (timed <= 0 || op_total[op] == 0) continue;
      const double fast = measure(sampled_fast[op]) > 0 ? measure(o.fast) * measure(site.fast) / measure(sampled_fast[op]) : 0;
      const double share = std::min(1.0, (fast + measure(site.slow)) / timed);
      const auto weight = std::min(static_cast<uint64_t>(std::llround(static_cast<double>(op_total[op]) * share)),
                                   op_total[op] - placed[op]);
      if (weight == 0) continue;
      out.lines[key] += weight;
      placed[op] += weight;
    }
    for (unsigned op = 0; op < kOpSlots; ++op) {
      if (op_total[op] > placed[op]) out.lines[{kNoStack, static_cast<uint8_t>(op)}] += op_total[op] - placed[op];
    }
  }
  for (const auto& [key, weight] : out.lines) {
    out.total += weight;
    if (key.first != kNoStack) out.under_stacks += weight;
  }
  return out;
}

std::string export_folded(const StackCostSource& src, const ExportOptions& options, const StackSample* sample) {
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
  for (const auto& [key, weight] : folded_weights(src, options, sample).lines) {
    if (weight == 0) continue;
    const std::string stack = key.first == kNoStack ? std::string("[no stack];") : prefix[key.first];
    lines[stack + op_label(key.second)] += weight;
  }
  std::string out;
  for (const auto& [line, weight] : lines) out += fmt::format("{} {}\n", line, weight);
  return out;
}

}  // namespace allocscope
