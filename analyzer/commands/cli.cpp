#include "commands/cli.h"

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace allocscope {

bool is_help_flag(std::string_view arg) { return arg == "-h" || arg == "--help"; }

bool take_option_value(std::string_view command, CommandArgs args, size_t& i, std::string_view long_name,
                       std::string_view short_name, std::string& value) {
  const std::string& arg = args[i];
  if (arg == long_name || (!short_name.empty() && arg == short_name)) {
    if (i + 1 >= args.size()) throw UsageError(fmt::format("{}: {} needs a value", command, arg));
    value = args[++i];
    return true;
  }
  if (arg.size() > long_name.size() && arg.starts_with(long_name) && arg[long_name.size()] == '=') {
    value = arg.substr(long_name.size() + 1);
    return true;
  }
  if (!short_name.empty() && arg.starts_with(short_name) && arg.size() > short_name.size()) {
    value = arg.substr(short_name.size());
    return true;
  }
  return false;
}

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
