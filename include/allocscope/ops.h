// allocscope/ops.h — the allocator operations the shim interposes, and their names.
//
// The numeric values are part of the profile format (format.h): never renumber, only append.
// "Size" of an operation, as recorded:
//   malloc/valloc/pvalloc: the request; calloc/reallocarray: n*size (saturated);
//   realloc: the new size; posix_memalign/aligned_alloc/memalign: the request;
//   free: the usable size of the block being freed, taken on timed calls (or on all, with
//         ALLOCSCOPE_FREE_SIZES=1); otherwise the bucket is kBucketUnknown; free(NULL): 0, always
//         (bucket 0: it gives back no block);
//   malloc_usable_size: the value returned;
//   new/new[] (every variant: nothrow, align_val_t): the request;
//   delete/delete[]: the size a sized delete is given (the request that made the block), else
//         like free.
// The C++ operators count as operations of their own: a `new` that the C++ runtime implements by
// calling malloc is one `new`, not a `new` and a `malloc` (docs/recording.md).
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
  New = 11,          // operator new (also its nothrow and align_val_t variants)
  NewArray = 12,     // operator new[] (idem)
  Delete = 13,       // operator delete (also sized, nothrow and align_val_t variants)
  DeleteArray = 14,  // operator delete[] (idem)
};

constexpr unsigned kOps = 15;       // number of defined operations
constexpr unsigned kOpSlots = 16;   // room reserved per thread (format stays stable when appending)
// Trace records hold the operation in 4 bits (format.h kTraceOpMask).
static_assert(kOps <= kOpSlots && kOpSlots <= 16);

constexpr const char* op_name(unsigned op) {
  constexpr const char* names[kOps] = {
      "malloc",         "free",          "calloc",  "realloc", "reallocarray", "posix_memalign",
      "aligned_alloc",  "memalign",      "valloc",  "pvalloc", "malloc_usable_size",
      "new",            "new[]",         "delete",  "delete[]"};
  return op < kOps ? names[op] : "unknown";
}

// The operations that give a block back: free, delete, delete[].
constexpr bool releases(unsigned op) {
  return op == static_cast<unsigned>(Op::Free) || op == static_cast<unsigned>(Op::Delete) ||
         op == static_cast<unsigned>(Op::DeleteArray);
}

// The operations that request bytes: every one but the releasing ones and malloc_usable_size.
constexpr bool allocates(unsigned op) {
  return op < kOps && !releases(op) && op != static_cast<unsigned>(Op::MallocUsableSize);
}

}  // namespace allocscope
