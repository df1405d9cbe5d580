// mini_json.h — a strict little JSON parser, so tests can check documents the analyzer writes.
//
// parse_json() accepts exactly RFC 8259 JSON (throws std::runtime_error otherwise).  Numbers keep
// their text so that 64-bit integers compare exactly; as_u64() converts integer text.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace allocscope::test {

struct Json;
using JsonObject = std::map<std::string, Json>;
using JsonArray = std::vector<Json>;

struct JsonNumber {
  std::string text;
};

struct Json {
  std::variant<std::nullptr_t, bool, JsonNumber, std::string, JsonArray, JsonObject> value;

  bool is_null() const { return std::holds_alternative<std::nullptr_t>(value); }
  const JsonObject& object() const { return std::get<JsonObject>(value); }
  const JsonArray& array() const { return std::get<JsonArray>(value); }
  const std::string& string() const { return std::get<std::string>(value); }
  bool boolean() const { return std::get<bool>(value); }
  uint64_t as_u64() const;
  const Json& operator[](const std::string& key) const { return object().at(key); }
  bool has(const std::string& key) const { return object().contains(key); }
};

Json parse_json(std::string_view text);

}  // namespace allocscope::test
