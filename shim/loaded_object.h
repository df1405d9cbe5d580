// shim/loaded_object.h — which loaded object an address lies in.
//
// Found with dl_iterate_phdr over the objects' loadable segments: no allocation, and a few hundred
// comparisons where dladdr searches the object's whole dynamic symbol table for the nearest
// symbol.  The shim asks some twenty times as a process starts; with dladdr that was 2.7 % of the
// samples of a loop of short programs under the shim (docs/overhead.md, "fork+exec").  Call
// outside any signal handler: dl_iterate_phdr takes the loader's lock.
#pragma once
#include <cstdint>

namespace allocscope {

// Where the object whose loadable segments hold `addr` begins in memory (its lowest segment, as
// dladdr's dli_fbase: the same for every address of one object, different between objects, never
// 0), or 0 when no object holds it.
uintptr_t object_holding(const void* addr);

}  // namespace allocscope
