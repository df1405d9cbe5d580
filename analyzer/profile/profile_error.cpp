#include "profile/profile_error.h"

#include <fmt/format.h>

namespace allocscope {

namespace {

std::string describe(const std::string& file, std::optional<uint64_t> offset,
                     const std::string& reason) {
  if (offset) return fmt::format("{}: offset {}: {}", file, *offset, reason);
  return fmt::format("{}: {}", file, reason);
}

}  // namespace

ProfileError::ProfileError(std::string file, std::optional<uint64_t> offset, std::string reason)
    : std::runtime_error(describe(file, offset, reason)),
      file_(std::move(file)),
      offset_(offset),
      reason_(std::move(reason)) {}

}  // namespace allocscope
