#include "run/shim_lookup.h"

#include <fmt/format.h>

#include <cstdlib>
#include <vector>

namespace allocscope {

namespace fs = std::filesystem;

namespace {

constexpr const char* kShimFile = "liballocscope.so";

bool is_file(const fs::path& path) {
  std::error_code ec;
  return fs::is_regular_file(path, ec);
}

}  // namespace

fs::path find_shim() {
  if (const char* from_env = std::getenv("ALLOCSCOPE_SHIM"); from_env && *from_env) {
    if (!is_file(from_env)) throw ShimNotFound(fmt::format("ALLOCSCOPE_SHIM={}: no such file", from_env));
    return fs::canonical(from_env);
  }
  std::error_code ec;
  const fs::path self = fs::read_symlink("/proc/self/exe", ec);
  if (ec) throw ShimNotFound(fmt::format("cannot find {}: /proc/self/exe: {}", kShimFile, ec.message()));
  const fs::path bin_dir = self.parent_path();
  const std::vector<fs::path> candidates = {bin_dir / ".." / "shim" / kShimFile,
                                            bin_dir / ".." / "lib" / "allocscope" / kShimFile};
  for (const auto& candidate : candidates) {
    if (is_file(candidate)) return fs::canonical(candidate);
  }
  throw ShimNotFound(fmt::format("cannot find {}: looked for {} and {}; set ALLOCSCOPE_SHIM to its path",
                                 kShimFile, candidates[0].lexically_normal().string(),
                                 candidates[1].lexically_normal().string()));
}

}  // namespace allocscope
