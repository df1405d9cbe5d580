#include "util/units.h"

#include <fmt/format.h>

#include <array>
#include <cmath>

#include "allocscope/buckets.h"

namespace allocscope {

namespace {

// Up to `decimals` decimals, without trailing zeros: 1.50 -> "1.5", 2.00 -> "2".
std::string trim_number(double value, int decimals) {
  std::string text = fmt::format("{:.{}f}", value, decimals);
  if (text.find('.') == std::string::npos) return text;
  while (text.back() == '0') text.pop_back();
  if (text.back() == '.') text.pop_back();
  return text;
}

}  // namespace

std::string group_digits(uint64_t value) {
  const std::string digits = std::to_string(value);
  std::string out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

std::string format_bytes(ByteCount bytes) {
  static constexpr std::array<const char*, 9> kUnits = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB", "ZiB", "YiB"};
  size_t unit = 0;
  while (unit + 1 < kUnits.size() && bytes >> (10 * (unit + 1)) != 0) ++unit;
  if (unit == 0) return fmt::format("{} B", bytes);
  const double scaled = static_cast<double>(bytes) / static_cast<double>(ByteCount{1} << (10 * unit));
  return fmt::format("{} {}", trim_number(scaled, 2), kUnits[unit]);
}

std::string format_duration_ns(double ns) {
  if (ns < 1e3) return fmt::format("{} ns", trim_number(ns, ns < 10 ? 1 : 0));
  if (ns < 1e6) return fmt::format("{} µs", trim_number(ns / 1e3, 2));
  if (ns < 1e9) return fmt::format("{} ms", trim_number(ns / 1e6, 2));
  return fmt::format("{} s", trim_number(ns / 1e9, 2));
}

std::string format_signed_duration_ns(double ns, std::string_view minus) {
  return (ns < 0 ? std::string(minus) : std::string("+")) + format_duration_ns(std::fabs(ns));
}

std::string format_percent(double share, int decimals) {
  if (!std::isfinite(share)) return "-";
  return fmt::format("{:.{}f} %", 100 * share, decimals);
}

std::string format_size_bucket(unsigned bucket) {
  if (bucket >= kSizeBuckets) return "size not taken";
  const uint64_t lo = bucket_lo(bucket);
  const uint64_t hi = bucket_hi(bucket);
  if (lo == hi) return format_bytes(lo);
  if (hi == ~uint64_t{0}) return fmt::format("≥ {}", format_bytes(lo));
  return fmt::format("[{}, {})", format_bytes(lo), format_bytes(hi + 1));
}

std::string size_range_text(uint64_t lo, uint64_t hi) {
  if (hi == ~uint64_t{0}) return fmt::format("≥ {}", format_bytes(lo));
  if (lo == hi) return format_bytes(lo);
  if (hi < 1024) return fmt::format("{}–{} B", lo, hi);
  return fmt::format("{}–{}", format_bytes(lo), format_bytes(hi));
}

std::string printable(std::string_view text) {
  std::string out;
  for (char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte < 0x20 || byte == 0x7f) {
      out += fmt::format("\\x{:02x}", byte);
    } else {
      out += c;
    }
  }
  return out;
}

}  // namespace allocscope
