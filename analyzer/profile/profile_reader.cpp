#include "profile/profile_reader.h"

#include <fmt/format.h>
#include <xxhash.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "profile/chunk_decode.h"
#include "profile/format_names.h"

namespace allocscope {

namespace {

constexpr size_t kStreamBufferSize = 1 << 16;
constexpr uint32_t kMaxHeaderSize = 4096;  // a FileHeader larger than this is corruption

bool all_zero(const void* data, size_t size) {
  const auto* bytes = static_cast<const unsigned char*>(data);
  return std::all_of(bytes, bytes + size, [](unsigned char b) { return b == 0; });
}

}  // namespace

void warn_to_stderr(std::string_view message) { fmt::print(stderr, "allocscope: warning: {}\n", message); }

ProfileReader::ProfileReader(const std::filesystem::path& path, WarningSink warn)
    : file_(path.string()), warn_(std::move(warn)) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) fail(std::nullopt, "is a directory");
  stream_.reset(std::fopen(file_.c_str(), "rb"));
  if (!stream_) fail(std::nullopt, fmt::format("cannot open: {}", std::strerror(errno)));
  stream_buffer_.resize(kStreamBufferSize);
  std::setvbuf(stream_.get(), stream_buffer_.data(), _IOFBF, stream_buffer_.size());
  read_file_header();
}

void ProfileReader::fail(std::optional<uint64_t> at, std::string reason) const {
  throw ProfileError(file_, at, std::move(reason));
}

size_t ProfileReader::read_up_to(void* destination, size_t size) {
  const size_t got = std::fread(destination, 1, size, stream_.get());
  if (got < size && std::ferror(stream_.get())) {
    fail(offset_ + got, fmt::format("read error: {}", std::strerror(errno)));
  }
  offset_ += got;
  return got;
}

void ProfileReader::read_file_header() {
  const size_t got = read_up_to(&header_, sizeof header_);
  if (got == 0) fail(std::nullopt, "not an allocscope profile (empty file)");
  if (got < sizeof header_.magic ||
      std::memcmp(header_.magic, format::kMagic, sizeof format::kMagic) != 0) {
    fail(std::nullopt, "not an allocscope profile (no profile magic at the start)");
  }
  if (got < sizeof header_) {
    fail(got, fmt::format("file header cut short ({} of {} bytes)", got, sizeof header_));
  }
  if (header_.version != format::kVersion) {
    fail(offsetof(format::FileHeader, version),
         fmt::format("unsupported format version {} (this analyzer reads version {})", header_.version,
                     format::kVersion));
  }
  if (header_.header_size < sizeof header_ || header_.header_size > kMaxHeaderSize) {
    fail(offsetof(format::FileHeader, header_size),
         fmt::format("implausible header size {}", header_.header_size));
  }
  // A newer writer may have a longer header: skip what this reader does not know.
  for (uint32_t extra = header_.header_size - sizeof header_; extra > 0;) {
    unsigned char scratch[256];
    const size_t want = std::min<size_t>(extra, sizeof scratch);
    if (read_up_to(scratch, want) < want) fail(offset_, "file header cut short");
    extra -= static_cast<uint32_t>(want);
  }
}

bool ProfileReader::rest_of_file_is_zero() {
  std::vector<unsigned char> block(kStreamBufferSize);
  while (const size_t got = read_up_to(block.data(), block.size())) {
    if (!all_zero(block.data(), got)) return false;
  }
  return true;
}

void ProfileReader::stop_truncated(uint64_t at, std::string_view why) {
  truncated_at_ = at;
  at_end_ = true;
  if (warn_) {
    warn_(fmt::format("{}: cut short at offset {} ({}); reading up to the last whole chunk", file_, at, why));
  }
}

void ProfileReader::seek(uint64_t offset) {
  if (fseeko(stream_.get(), static_cast<off_t>(offset), SEEK_SET) != 0) {
    fail(offset, fmt::format("cannot seek: {}", std::strerror(errno)));
  }
  offset_ = offset;
  at_end_ = false;
}

bool ProfileReader::next(Chunk& chunk) {
  while (!at_end_) {
    const uint64_t at = offset_;
    format::ChunkHeader header;
    const size_t got = read_up_to(&header, sizeof header);
    if (got == 0) {
      at_end_ = true;
      return false;
    }
    if (got < sizeof header) {
      stop_truncated(at, fmt::format("incomplete chunk header, {} of {} bytes", got, sizeof header));
      return false;
    }
    if (header.magic != format::kChunkMagic) {
      if (all_zero(&header, sizeof header) && rest_of_file_is_zero()) {
        stop_truncated(at, "zero-filled tail");
        return false;
      }
      fail(at, fmt::format("bad chunk magic {:#010x}", header.magic));
    }
    if (static_cast<uint32_t>(XXH3_64bits(&header, format::kChunkHeaderChecked)) !=
        header.header_check) {
      fail(at, "chunk header is damaged (its check does not match)");
    }
    const std::string type_name = chunk_type_name(header.type);
    if (header.payload_size > format::kMaxChunkPayload) {
      fail(at, fmt::format("{} chunk: payload size {} exceeds the {} byte limit", type_name,
                           header.payload_size, format::kMaxChunkPayload));
    }
    payload_.resize(header.payload_size);
    const size_t payload_got = read_up_to(payload_.data(), payload_.size());
    if (payload_got < payload_.size()) {
      stop_truncated(at, fmt::format("{} chunk has {} of {} payload bytes", type_name, payload_got,
                                     payload_.size()));
      return false;
    }
    if (XXH3_64bits(payload_.data(), payload_.size()) != header.checksum) {
      fail(at, fmt::format("{} chunk: checksum mismatch (payload of {} bytes is damaged)", type_name,
                           header.payload_size));
    }
    if (!is_known_chunk_type(header.type)) {
      ++skipped_chunks_;
      continue;
    }
    chunk.offset = at;
    chunk.body = decode_chunk(header.type, payload_, file_, at + sizeof header);
    return true;
  }
  return false;
}

}  // namespace allocscope
