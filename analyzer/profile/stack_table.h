// stack_table.h — the call stacks and loaded modules of a profile (format.h Stacks, Modules).
//
// Stack ids are per thread (format.h): StackTable maps (thread_serial, stack_id) to one entry of a
// list of distinct stacks, so that equal stacks of different threads are one stack for reports
// and exports.  A stack id defined twice for the same thread keeps its first definition (counted
// in conflicting_ids).  Memory grows with the number of distinct stacks, not with the file.
//
// ModuleMap holds the loaded objects of the Modules chunks (a later chunk may add objects loaded
// later; exact repeats are dropped) and finds the object that holds an address.
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "profile/chunk_records.h"

namespace allocscope {

using StackIndex = uint32_t;
constexpr StackIndex kNoStack = ~StackIndex{0};

struct Stack {
  std::vector<uint64_t> frames;  // return addresses, innermost first
  uint64_t hash = 0;             // StackRecord::hash of the first definition
  uint16_t flags = 0;            // kStackTruncated, kStackFramePointers
};

class StackTable {
 public:
  void add(uint32_t thread_serial, const StackEntry& entry);

  // The distinct stack behind a thread's stack id, or kNoStack (id 0, or never defined).
  StackIndex find(uint32_t thread_serial, uint32_t stack_id) const;
  const Stack& stack(StackIndex index) const { return stacks_.at(index); }
  const std::vector<Stack>& stacks() const { return stacks_; }
  size_t ids() const { return by_id_.size(); }
  uint64_t conflicting_ids() const { return conflicting_; }
  bool empty() const { return by_id_.empty(); }

 private:
  std::vector<Stack> stacks_;
  std::map<std::pair<uint64_t, std::vector<uint64_t>>, StackIndex> by_content_;
  std::map<std::pair<uint32_t, uint32_t>, StackIndex> by_id_;
  uint64_t conflicting_ = 0;
};

struct Module {
  uint64_t load_bias = 0;
  uint64_t start = 0, end = 0;  // lowest and highest mapped address
  std::string path;
};

class ModuleMap {
 public:
  void add(const ModuleEntry& entry);
  // The object whose [start, end] holds `address` (the latest added when several do), or -1.
  int find(uint64_t address) const;
  const std::vector<Module>& modules() const { return modules_; }
  bool empty() const { return modules_.empty(); }

 private:
  std::vector<Module> modules_;
};

}  // namespace allocscope
