// shim/function_range.h — where a loaded function's code begins and ends.
//
// The size of an exported function, read from its object's dynamic symbol table (st_size), found
// with dl_iterate_phdr: no allocation, no file read, in both C libraries (musl has no dladdr1).
// The CPU samples use it to tell a thread inside the real pthread_mutex_trylock by the address it
// was interrupted at (cpu_samples.h), where a mark would lengthen the program's critical section.
#pragma once
#include <cstdint>

namespace allocscope {

struct CodeRange {
  uintptr_t begin = 0, end = 0;  // [begin, end); empty when not found
  bool contains(uintptr_t pc) const { return pc - begin < end - begin; }
};

// The range of the exported function at `fn`, or an empty one (no symbol of that address with a
// size in the object's dynamic symbol table).  Call outside any signal handler: dl_iterate_phdr
// takes the loader's lock.
CodeRange function_range(const void* fn);

}  // namespace allocscope
