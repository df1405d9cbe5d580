// allocscope/ops.h — the allocator operations the shim interposes, and their names.
//
// The numeric values are part of the profile format (format.h): never renumber, only append.
// "Size" of an operation, as recorded:
//   malloc/valloc/pvalloc: the request; calloc/reallocarray: n*size (saturated);
//   realloc: the new size; posix_memalign/aligned_alloc/memalign: the request;
//   free: the usable size of the block being freed (0 for free(NULL)), taken on timed calls
//         (or on all, with ALLOCSCOPE_FREE_SIZES=1); otherwise the bucket is kBucketUnknown;
//   malloc_usable_size: the value returned.
// Bytes are summed over successful calls only (a failed 2^63-byte request obtains nothing).
#pragma once
#include <cstdint>

namespace allocscope {

enum class Op : uint8_t {
  Malloc = 0,
  Free = 1,
  Calloc = 2,
  Realloc = 3,
  Reallocarray = 4,
  PosixMemalign = 5,
  AlignedAlloc = 6,
  Memalign = 7,
  Valloc = 8,
  Pvalloc = 9,
  MallocUsableSize = 10,
};

constexpr unsigned kOps = 11;       // number of defined operations
constexpr unsigned kOpSlots = 16;   // room reserved per thread (format stays stable when appending)

constexpr const char* op_name(unsigned op) {
  constexpr const char* names[kOps] = {
      "malloc",         "free",          "calloc",  "realloc", "reallocarray", "posix_memalign",
      "aligned_alloc",  "memalign",      "valloc",  "pvalloc", "malloc_usable_size"};
  return op < kOps ? names[op] : "unknown";
}

}  // namespace allocscope
