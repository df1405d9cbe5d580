// shim/loaded_object.h — the loaded object an address lies in, and where an exported function's
// code begins and ends.
//
// Both walk the loaded objects with dl_iterate_phdr and test their loadable segments: no
// allocation, no file read, in both C libraries (musl has no dladdr1).  dladdr would search the
// object's whole dynamic symbol table for the nearest symbol; the shim asks which object holds a
// function some twenty times as a process starts, and with dladdr that was 2.7 % of the samples of
// a loop of short programs under the shim (docs/overhead.md, "fork+exec").  Call outside any
// signal handler: dl_iterate_phdr takes the loader's lock.
#pragma once
#include <cstdint>

namespace allocscope {

// Where the object whose loadable segments hold `addr` begins in memory (its lowest segment's
// page, as dladdr's dli_fbase: the same for every address of one object, different between
// objects, never 0), or 0 when no object holds it.
uintptr_t object_holding(const void* addr);

struct CodeRange {
  uintptr_t begin = 0, end = 0;  // [begin, end); empty when not found
  bool contains(uintptr_t pc) const { return pc - begin < end - begin; }
};

// The range of the exported function at `fn`, from the size its object's dynamic symbol table
// gives it (st_size), or an empty one (no symbol of that address with a size).  The CPU samples
// use it to tell a thread inside the real pthread_mutex_trylock by the address it was interrupted
// at (cpu_samples.h), where a mark would lengthen the program's critical section.
CodeRange function_range(const void* fn);

}  // namespace allocscope
