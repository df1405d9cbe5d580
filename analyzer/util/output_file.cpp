#include "util/output_file.h"

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace allocscope {

namespace {

std::runtime_error exists_error(const std::filesystem::path& path) {
  return std::runtime_error(
      fmt::format("{} already exists; not overwriting it (--force overwrites it)", path.string()));
}

}  // namespace

void refuse_overwrite(const std::filesystem::path& path, bool force) {
  if (path == "-") return;
  std::error_code ec;
  const auto status = std::filesystem::symlink_status(path, ec);
  if (!std::filesystem::exists(status)) return;
  if (std::filesystem::is_directory(std::filesystem::status(path, ec))) {
    throw std::runtime_error(fmt::format("{} is a directory", path.string()));
  }
  if (!force) throw exists_error(path);
}

std::FILE* open_output_file(const std::filesystem::path& path, bool force) {
  if (path == "-") return stdout;
  refuse_overwrite(path, force);
  std::FILE* f = std::fopen(path.c_str(), force ? "wb" : "wbx");
  if (!f && errno == EEXIST) throw exists_error(path);
  if (!f) throw std::runtime_error(fmt::format("cannot write {}: {}", path.string(), std::strerror(errno)));
  return f;
}

void OutputFileCloser::operator()(std::FILE* f) const {
  if (f && f != stdout) std::fclose(f);
}

}  // namespace allocscope
