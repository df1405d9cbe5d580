// fuzz_target.h — what the fuzz targets share.
#pragma once
#include <cstdint>

namespace allocscope {

// Keeps a computed value alive, so that the work producing it is not optimised away.
inline void fuzz_sink(uint64_t value) {
  static volatile uint64_t sink;
  sink = sink + value;
}

}  // namespace allocscope
