// profile_reader.h — a streaming, validating reader of one profile file (format.h).
//
// ProfileReader checks the FileHeader when it opens the file, then next() hands out one Chunk at
// a time.  It reads through a small stdio buffer and holds at most one payload (a chunk is at most
// format::kMaxChunkPayload bytes), so memory does not grow with the file.  Each chunk is checked
// for its magic, its size, its XXH3_64bits checksum and the consistency of its payload; chunks of
// unknown type are skipped once their checksum is verified.
//
// Damage throws ProfileError ("FILE: offset N: reason").  A file *cut short* is not damage: when
// the final chunk's header or payload is incomplete at end of file (or the file ends in a
// zero-filled tail, as a crash can leave behind), reading stops after the last whole chunk,
// truncated_at() gives the offset and one warning goes to the WarningSink.
#pragma once
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "allocscope/format.h"
#include "profile/chunk_records.h"
#include "profile/profile_error.h"

namespace allocscope {

using WarningSink = std::function<void(std::string_view message)>;

// Prints "allocscope: warning: MESSAGE" on stderr.
void warn_to_stderr(std::string_view message);

class ProfileReader {
 public:
  // Opens `path` and validates its FileHeader; throws ProfileError.
  explicit ProfileReader(const std::filesystem::path& path, WarningSink warn = warn_to_stderr);

  const std::string& file() const { return file_; }
  const format::FileHeader& header() const { return header_; }

  // Reads the next chunk into `chunk`.  Returns false at the end of the data: end of file, or an
  // incomplete final chunk (then truncated_at() is set).  Throws ProfileError on damage.
  bool next(Chunk& chunk);

  // Continues reading at `offset`, the offset of a chunk header that an earlier pass found (used to
  // revisit chunks, e.g. trace_decode.h).  Clears the end of data; truncated_at() stays as it was.
  void seek(uint64_t offset);

  bool truncated() const { return truncated_at_.has_value(); }
  std::optional<uint64_t> truncated_at() const { return truncated_at_; }
  uint64_t skipped_chunks() const { return skipped_chunks_; }  // unknown types, checksum verified

 private:
  struct FileCloser {
    void operator()(std::FILE* f) const { std::fclose(f); }
  };

  void read_file_header();
  size_t read_up_to(void* destination, size_t size);
  bool rest_of_file_is_zero();
  void stop_truncated(uint64_t at, std::string_view why);
  [[noreturn]] void fail(std::optional<uint64_t> at, std::string reason) const;

  std::string file_;
  std::unique_ptr<std::FILE, FileCloser> stream_;
  std::vector<char> stream_buffer_;
  WarningSink warn_;
  format::FileHeader header_{};
  uint64_t offset_ = 0;                  // file offset of the next unread byte
  std::vector<unsigned char> payload_;   // the current chunk's payload, reused
  std::optional<uint64_t> truncated_at_;
  uint64_t skipped_chunks_ = 0;
  bool at_end_ = false;
};

}  // namespace allocscope
