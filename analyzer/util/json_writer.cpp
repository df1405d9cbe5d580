#include "util/json_writer.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace allocscope {

size_t utf8_sequence_length(std::string_view text, size_t i) {
  const auto byte = [&](size_t k) { return static_cast<unsigned char>(text[k]); };
  const unsigned char lead = byte(i);
  size_t length;
  unsigned char min_second = 0x80, max_second = 0xBF;
  if (lead >= 0xC2 && lead <= 0xDF) {
    length = 2;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    length = 3;
    if (lead == 0xE0) min_second = 0xA0;  // no overlong forms
    if (lead == 0xED) max_second = 0x9F;  // no surrogates
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    length = 4;
    if (lead == 0xF0) min_second = 0x90;  // no overlong forms
    if (lead == 0xF4) max_second = 0x8F;  // nothing above U+10FFFF
  } else {
    return 0;
  }
  if (i + length > text.size()) return 0;
  if (byte(i + 1) < min_second || byte(i + 1) > max_second) return 0;
  for (size_t k = 2; k < length; ++k) {
    if (byte(i + k) < 0x80 || byte(i + k) > 0xBF) return 0;
  }
  return length;
}

namespace {

void append_escaped_ascii(std::string& out, char c) {
  switch (c) {
    case '"': out += "\\\""; return;
    case '\\': out += "\\\\"; return;
    case '\b': out += "\\b"; return;
    case '\f': out += "\\f"; return;
    case '\n': out += "\\n"; return;
    case '\r': out += "\\r"; return;
    case '\t': out += "\\t"; return;
    default: break;
  }
  if (static_cast<unsigned char>(c) < 0x20) {
    fmt::format_to(std::back_inserter(out), "\\u{:04x}", static_cast<unsigned>(c));
  } else {
    out += c;
  }
}

}  // namespace

int64_t json_ns(double ns) { return std::isfinite(ns) ? static_cast<int64_t>(std::llround(std::max(0.0, ns))) : 0; }

int64_t json_signed_ns(double ns) { return std::isfinite(ns) ? static_cast<int64_t>(std::llround(ns)) : 0; }

std::optional<int64_t> json_signed_ns(const std::optional<double>& ns) {
  return ns ? std::optional<int64_t>(json_signed_ns(*ns)) : std::nullopt;
}

double json_fraction(double share) { return std::isfinite(share) ? std::round(share * 1e4) / 1e4 : 0.0; }

std::optional<double> json_fraction(const std::optional<double>& share) { return json_rounded(share, 1e4); }

std::optional<double> json_rounded(const std::optional<double>& value, double scale) {
  if (!value || !std::isfinite(*value)) return std::nullopt;
  return std::round(*value * scale) / scale;
}

void append_json_string(std::string& out, std::string_view text) {
  out += '"';
  for (size_t i = 0; i < text.size();) {
    if (static_cast<unsigned char>(text[i]) < 0x80) {
      append_escaped_ascii(out, text[i]);
      ++i;
    } else if (const size_t n = utf8_sequence_length(text, i)) {
      out.append(text.substr(i, n));
      i += n;
    } else {
      out += "\\ufffd";
      ++i;
    }
  }
  out += '"';
}

std::string json_quote(std::string_view text) {
  std::string out;
  append_json_string(out, text);
  return out;
}

void JsonWriter::newline() {
  if (indent_ <= 0) return;
  out_ += '\n';
  out_.append(stack_.size() * static_cast<size_t>(indent_), ' ');
}

void JsonWriter::before_value() {
  if (after_key_) {
    after_key_ = false;
    return;
  }
  if (stack_.empty()) {
    if (wrote_root_) throw std::logic_error("JsonWriter: a second top-level value");
    wrote_root_ = true;
    return;
  }
  Level& level = stack_.back();
  if (level.scope == Scope::Object) throw std::logic_error("JsonWriter: object member without a key");
  if (!level.empty) out_ += ',';
  level.empty = false;
  newline();
}

JsonWriter& JsonWriter::key(std::string_view name) {
  if (stack_.empty() || stack_.back().scope != Scope::Object || after_key_) {
    throw std::logic_error("JsonWriter: key outside an object");
  }
  Level& level = stack_.back();
  if (!level.empty) out_ += ',';
  level.empty = false;
  newline();
  append_json_string(out_, name);
  out_ += indent_ > 0 ? ": " : ":";
  after_key_ = true;
  return *this;
}

JsonWriter& JsonWriter::open(Scope scope, char bracket) {
  before_value();
  out_ += bracket;
  stack_.push_back({scope});
  return *this;
}

JsonWriter& JsonWriter::close(Scope scope, char bracket) {
  if (stack_.empty() || stack_.back().scope != scope || after_key_) {
    throw std::logic_error("JsonWriter: unbalanced close");
  }
  const bool empty = stack_.back().empty;
  stack_.pop_back();
  if (!empty) newline();
  out_ += bracket;
  return *this;
}

JsonWriter& JsonWriter::begin_object() { return open(Scope::Object, '{'); }
JsonWriter& JsonWriter::end_object() { return close(Scope::Object, '}'); }
JsonWriter& JsonWriter::begin_array() { return open(Scope::Array, '['); }
JsonWriter& JsonWriter::end_array() { return close(Scope::Array, ']'); }

JsonWriter& JsonWriter::raw(std::string_view token) {
  before_value();
  out_ += token;
  return *this;
}

JsonWriter& JsonWriter::value(std::string_view text) {
  before_value();
  append_json_string(out_, text);
  return *this;
}

JsonWriter& JsonWriter::value(bool flag) { return raw(flag ? "true" : "false"); }
JsonWriter& JsonWriter::null() { return raw("null"); }

JsonWriter& JsonWriter::value(unsigned __int128 number) { return raw(fmt::format("{}", number)); }

JsonWriter& JsonWriter::value(double number) {
  if (!std::isfinite(number)) return null();
  return raw(fmt::format("{}", number));
}

}  // namespace allocscope
