// shim/loaded_object.h — the loaded object an address lies in, where an exported function's code
// begins and ends, and which object defines a symbol.
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

// Where the definition of `name` that the object holding `addr` binds to lies, ahead of the object
// holding `stop`: `addr` itself when that object's dynamic symbol table defines `name` (an entry of
// that name whose section is not SHN_UNDEF), else the first definition in the objects loaded after
// it and before `stop`'s; null when there is none.  `addr` is what dlsym(RTLD_DEFAULT, name)
// answered: for a non-PIE executable that takes the address of a function it imports, that is the
// PLT stub its undefined entry gives as the function's canonical address (st_value), not a
// definition.  Looks the name up with DT_GNU_HASH or DT_HASH; no allocation.
const void* definition_ahead_of(const void* addr, const char* name, const void* stop);

}  // namespace allocscope
