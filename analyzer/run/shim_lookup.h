// shim_lookup.h — where the preload library (liballocscope.so) is.
//
// $ALLOCSCOPE_SHIM when set; otherwise next to this executable: ../shim/liballocscope.so (build
// tree: bin in <build>/analyzer, shim in <build>/shim) or ../lib/allocscope/liballocscope.so
// (installed).  The result is an absolute path without symlinks or "..".
#pragma once
#include <filesystem>
#include <stdexcept>

namespace allocscope {

class ShimNotFound : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

std::filesystem::path find_shim();  // throws ShimNotFound saying where it looked

}  // namespace allocscope
