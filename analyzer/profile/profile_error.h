// profile_error.h — the one exception type for unreadable or damaged profiles.
//
// ProfileError names the file, the byte offset of the damage when there is one, and the reason.
// what() is a single line: "FILE: offset N: reason" (or "FILE: reason" without an offset).
#pragma once
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>

namespace allocscope {

class ProfileError : public std::runtime_error {
 public:
  ProfileError(std::string file, std::optional<uint64_t> offset, std::string reason);

  const std::string& file() const { return file_; }
  std::optional<uint64_t> offset() const { return offset_; }
  const std::string& reason() const { return reason_; }

 private:
  std::string file_;
  std::optional<uint64_t> offset_;
  std::string reason_;
};

}  // namespace allocscope
