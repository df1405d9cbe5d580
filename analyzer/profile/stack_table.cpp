#include "profile/stack_table.h"

namespace allocscope {

void StackTable::add(uint32_t thread_serial, const StackEntry& entry) {
  const auto key = std::make_pair(thread_serial, entry.record.stack_id);
  auto content = std::make_pair(entry.record.hash, entry.frames);
  auto found = by_content_.find(content);
  StackIndex index;
  if (found != by_content_.end()) {
    index = found->second;
  } else {
    index = static_cast<StackIndex>(stacks_.size());
    stacks_.push_back(Stack{entry.frames, entry.record.hash, entry.record.flags});
    by_content_.emplace(std::move(content), index);
  }
  const auto [it, inserted] = by_id_.emplace(key, index);
  if (!inserted && it->second != index) ++conflicting_;
}

StackIndex StackTable::find(uint32_t thread_serial, uint32_t stack_id) const {
  if (stack_id == 0) return kNoStack;
  const auto it = by_id_.find({thread_serial, stack_id});
  return it == by_id_.end() ? kNoStack : it->second;
}

void ModuleMap::add(const ModuleEntry& entry) {
  Module m{entry.record.load_bias, entry.record.start, entry.record.end, entry.path};
  for (const Module& known : modules_) {
    if (known.load_bias == m.load_bias && known.start == m.start && known.end == m.end &&
        known.path == m.path) {
      return;
    }
  }
  modules_.push_back(std::move(m));
}

int ModuleMap::find(uint64_t address) const {
  for (size_t i = modules_.size(); i-- > 0;) {
    if (modules_[i].start <= address && address <= modules_[i].end) return static_cast<int>(i);
  }
  return -1;
}

}  // namespace allocscope
