// allocator_lookup.h — which shared library to preload for a named malloc implementation.
//
//   glibc, system, musl   the program's own allocator: nothing to preload
//   jemalloc              libjemalloc.so.2
//   tcmalloc              libtcmalloc_minimal.so.4, libtcmalloc.so.4
//   mimalloc              libmimalloc.so.2, libmimalloc.so.2.0, libmimalloc.so
//   scudo                 libclang_rt.scudo_standalone-<arch>.so from an LLVM installation
// Libraries are searched in the usual library directories (multiarch first) and, for scudo, in
// the LLVM runtime directories (newest LLVM first).  An argument containing '/' is a path to a
// library; a bare file name such as "libfoo.so.1" is searched like the names above.
#pragma once
#include <filesystem>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace allocscope {

struct AllocatorChoice {
  std::string name;                              // the name or path as given
  std::optional<std::filesystem::path> library;  // absent: the program's own allocator
};

// Where to look; default_allocator_search() describes this system.
struct AllocatorSearch {
  std::vector<std::filesystem::path> directories;  // plain library directories, in order
  std::vector<std::string> runtime_globs;          // glob(3) patterns of compiler-runtime directories
};

class AllocatorLookupError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A name that is neither a known allocator, nor a library file name, nor a path.
class UnknownAllocatorName : public AllocatorLookupError {
 public:
  using AllocatorLookupError::AllocatorLookupError;
};

const AllocatorSearch& default_allocator_search();
std::vector<std::string> known_allocator_names();

// Throws AllocatorLookupError naming what was searched when nothing is found, and
// UnknownAllocatorName for a name it does not know how to look for.
AllocatorChoice find_allocator(std::string_view name_or_path,
                               const AllocatorSearch& search = default_allocator_search());

}  // namespace allocscope
