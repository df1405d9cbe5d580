// protobuf_writer.h — just enough of the protocol buffers wire format to write a message by hand.
//
// Fields are appended in the order the caller gives: varints (wire type 0) for integers and
// booleans, length-delimited (wire type 2) for strings, nested messages and packed repeated
// integers.  Negative int64 values are written as their 64-bit two's complement (as protobuf does
// for int64, not sint64).
#pragma once
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace allocscope {

class ProtoWriter {
 public:
  ProtoWriter& varint(uint32_t field, uint64_t value) {
    tag(field, 0);
    raw_varint(out_, value);
    return *this;
  }
  ProtoWriter& int64(uint32_t field, int64_t value) { return varint(field, static_cast<uint64_t>(value)); }
  ProtoWriter& boolean(uint32_t field, bool value) { return varint(field, value ? 1 : 0); }
  ProtoWriter& bytes(uint32_t field, std::string_view data) {
    tag(field, 2);
    raw_varint(out_, data.size());
    out_.append(data);
    return *this;
  }
  ProtoWriter& message(uint32_t field, const ProtoWriter& inner) { return bytes(field, inner.out_); }
  ProtoWriter& packed(uint32_t field, std::span<const uint64_t> values) {
    if (values.empty()) return *this;
    std::string body;
    for (uint64_t v : values) raw_varint(body, v);
    return bytes(field, body);
  }

  const std::string& data() const { return out_; }
  std::string take() { return std::move(out_); }

  static void raw_varint(std::string& out, uint64_t v) {
    while (v >= 0x80) {
      out.push_back(static_cast<char>(v | 0x80));
      v >>= 7;
    }
    out.push_back(static_cast<char>(v));
  }

 private:
  void tag(uint32_t field, unsigned wire_type) { raw_varint(out_, (uint64_t{field} << 3) | wire_type); }
  std::string out_;
};

}  // namespace allocscope
