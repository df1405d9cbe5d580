// output_file.h — the one rule for files allocscope writes (profiles, pages, exports).
#pragma once
#include <cstdio>
#include <filesystem>

namespace allocscope {

// Files a command writes (profiles, pages, exports) follow one rule: an existing file is
// overwritten only with --force.  refuse_overwrite() checks early (before a long analysis or run)
// and throws "PATH already exists; not overwriting it (--force overwrites it)"; open_output_file()
// opens for writing, exclusively without `force` (a file that appeared meanwhile is refused too),
// and "-" means standard output.  Neither ever writes through or replaces a directory.
void refuse_overwrite(const std::filesystem::path& path, bool force);
std::FILE* open_output_file(const std::filesystem::path& path, bool force);
// Closes what open_output_file() opened (never stdout).
struct OutputFileCloser {
  void operator()(std::FILE* f) const;
};

}  // namespace allocscope
