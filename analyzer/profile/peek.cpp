#include "profile/peek.h"

#include <string_view>
#include <variant>

#include "profile/profile_reader.h"

namespace allocscope {

std::optional<format::Calibration> read_calibration(const std::filesystem::path& path) {
  ProfileReader reader(path, [](std::string_view) {});
  Chunk chunk;
  while (reader.next(chunk)) {
    if (const auto* c = std::get_if<format::Calibration>(&chunk.body)) return *c;
    if (std::holds_alternative<EventsRecord>(chunk.body)) break;
  }
  return std::nullopt;
}

std::optional<ProcessRecord> read_process(const std::filesystem::path& path) {
  ProfileReader reader(path, [](std::string_view) {});
  Chunk chunk;
  for (int i = 0; i < 8 && reader.next(chunk); ++i) {
    if (const auto* p = std::get_if<ProcessRecord>(&chunk.body)) return *p;
  }
  return std::nullopt;
}

}  // namespace allocscope
