#include "run/allocator_lookup.h"

#include <fmt/format.h>
#include <glob.h>

#include <algorithm>
#include <cstring>

namespace allocscope {

namespace fs = std::filesystem;

namespace {

#if defined(__x86_64__)
constexpr const char* kMultiarch = "x86_64-linux-gnu";
constexpr const char* kRuntimeArch = "x86_64";
#elif defined(__aarch64__)
constexpr const char* kMultiarch = "aarch64-linux-gnu";
constexpr const char* kRuntimeArch = "aarch64";
#else
#error "add the multiarch triplet and compiler-runtime name of this architecture"
#endif

struct KnownAllocator {
  std::string name;
  std::vector<std::string> files;  // empty: the program's own allocator
  bool in_runtime_dirs = false;    // searched in the compiler-runtime directories
};

const std::vector<KnownAllocator>& known_allocators() {
  static const std::vector<KnownAllocator> known = {
      {"glibc", {}},
      {"system", {}},
      {"musl", {}},
      {"jemalloc", {"libjemalloc.so.2"}},
      {"tcmalloc", {"libtcmalloc_minimal.so.4", "libtcmalloc.so.4"}},
      {"mimalloc", {"libmimalloc.so.2", "libmimalloc.so.2.0", "libmimalloc.so"}},
      {"scudo",
       {fmt::format("libclang_rt.scudo_standalone-{}.so", kRuntimeArch)},
       true},
  };
  return known;
}

bool is_library_file(const fs::path& path) {
  std::error_code ec;
  return fs::is_regular_file(path, ec);  // follows symlinks
}

// Directories matching `pattern`, newest version first (llvm-15 before llvm-9).
std::vector<fs::path> expand_glob(const std::string& pattern) {
  glob_t matches{};
  std::vector<std::string> found;
  if (glob(pattern.c_str(), GLOB_ONLYDIR, nullptr, &matches) == 0) {
    for (size_t i = 0; i < matches.gl_pathc; ++i) found.emplace_back(matches.gl_pathv[i]);
  }
  globfree(&matches);
  std::sort(found.begin(), found.end(),
            [](const std::string& a, const std::string& b) { return strverscmp(a.c_str(), b.c_str()) > 0; });
  return {found.begin(), found.end()};
}

std::vector<fs::path> search_directories(const AllocatorSearch& search, bool in_runtime_dirs) {
  std::vector<fs::path> dirs;
  if (in_runtime_dirs) {
    for (const auto& pattern : search.runtime_globs) {
      for (auto& dir : expand_glob(pattern)) dirs.push_back(std::move(dir));
    }
  }
  dirs.insert(dirs.end(), search.directories.begin(), search.directories.end());
  return dirs;
}

std::string join(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& item : items) out += (out.empty() ? "" : ", ") + item;
  return out;
}

AllocatorChoice search_files(std::string_view name, const std::vector<std::string>& files,
                             const AllocatorSearch& search, bool in_runtime_dirs) {
  const auto dirs = search_directories(search, in_runtime_dirs);
  for (const auto& file : files) {
    for (const auto& dir : dirs) {
      if (is_library_file(dir / file)) return {std::string(name), dir / file};
    }
  }
  std::vector<std::string> searched;
  for (const auto& dir : dirs) searched.push_back(dir.string());
  if (in_runtime_dirs) {
    for (const auto& pattern : search.runtime_globs) searched.push_back(pattern);
  }
  throw AllocatorLookupError(fmt::format("allocator '{}' not found: looked for {} in {}", name, join(files),
                                         searched.empty() ? "(no directories)" : join(searched)));
}

AllocatorChoice from_path(std::string_view given) {
  const fs::path path(given);
  if (!is_library_file(path)) {
    throw AllocatorLookupError(fmt::format("allocator library '{}' does not exist or is not a file", given));
  }
  return {std::string(given), fs::absolute(path).lexically_normal()};
}

bool looks_like_library_name(std::string_view name) {
  return name.ends_with(".so") || name.find(".so.") != std::string_view::npos;
}

}  // namespace

const AllocatorSearch& default_allocator_search() {
  static const AllocatorSearch search = {
      {fs::path("/usr/lib") / kMultiarch, fs::path("/lib") / kMultiarch, "/usr/local/lib", "/usr/lib",
       "/lib", "/usr/lib64"},
      {"/usr/lib/llvm-*/lib/clang/*/lib/linux", "/usr/lib/clang/*/lib/linux",
       "/usr/local/lib/clang/*/lib/linux"},
  };
  return search;
}

std::vector<std::string> known_allocator_names() {
  std::vector<std::string> names;
  for (const auto& known : known_allocators()) names.push_back(known.name);
  return names;
}

AllocatorChoice find_allocator(std::string_view name_or_path, const AllocatorSearch& search) {
  if (name_or_path.find('/') != std::string_view::npos) return from_path(name_or_path);
  for (const auto& known : known_allocators()) {
    if (known.name != name_or_path) continue;
    if (known.files.empty()) return {known.name, std::nullopt};
    return search_files(known.name, known.files, search, known.in_runtime_dirs);
  }
  if (looks_like_library_name(name_or_path)) {
    return search_files(name_or_path, {std::string(name_or_path)}, search, true);
  }
  throw UnknownAllocatorName(fmt::format(
      "unknown allocator '{}' (known: {}; or give the path of a shared library)", name_or_path,
      join(known_allocator_names())));
}

}  // namespace allocscope
