#include "profile/peek.h"

#include <cstdio>
#include <memory>
#include <set>
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

std::vector<std::string> read_early_notes(const std::filesystem::path& path) {
  ProfileReader reader(path, [](std::string_view) {});
  Chunk chunk;
  std::vector<std::string> notes;
  for (int i = 0; i < 8 && reader.next(chunk); ++i) {
    if (const auto* n = std::get_if<NoteRecord>(&chunk.body)) notes.push_back(n->text);
  }
  return notes;
}

uint32_t threads_with_statistics(const std::filesystem::path& path, uint32_t enough) {
  std::unique_ptr<FILE, int (*)(FILE*)> file(std::fopen(path.c_str(), "rb"), &std::fclose);
  if (!file) return 0;
  std::set<uint32_t> serials;
  long at = sizeof(format::FileHeader);
  format::ChunkHeader header;
  while (serials.size() < enough && std::fseek(file.get(), at, SEEK_SET) == 0 &&
         std::fread(&header, sizeof header, 1, file.get()) == 1 && header.magic == format::kChunkMagic &&
         header.payload_size <= format::kMaxChunkPayload) {
    uint32_t serial = 0;
    if (header.type == static_cast<uint16_t>(format::ChunkType::ThreadStats) &&
        std::fread(&serial, sizeof serial, 1, file.get()) == 1) {
      serials.insert(serial);
    }
    at += static_cast<long>(sizeof header + header.payload_size);
  }
  return static_cast<uint32_t>(serials.size());
}

}  // namespace allocscope
