// json_writer.h — a small streaming JSON writer that appends to a std::string.
//
// JsonWriter tracks nesting and commas, so callers only say what comes next:
//   w.begin_object().field("calls", 12).key("ops").begin_array()…end_array().end_object();
// Strings are escaped by append_json_string(): ", \ and control characters are escaped, valid
// UTF-8 passes through, and bytes that are not valid UTF-8 become U+FFFD, so the output is always
// valid JSON whatever bytes the input holds (paths, argv and notes come from the profiled program).
// Non-finite doubles are written as null.  indent = 0 writes everything on one line.
#pragma once
#include <concepts>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace allocscope {

// Length of the valid UTF-8 sequence starting at text[i] (i < text.size()), or 0 if it is not
// one (overlong forms, surrogates and code points above U+10FFFF are not).
size_t utf8_sequence_length(std::string_view text, size_t i);

// The numbers of allocscope's JSON documents: durations in integer nanoseconds (json_ns never
// below 0; json_signed_ns for differences), shares as fractions rounded to 4 decimals
// (json_rounded: to another scale).  A value that is not finite is 0, or null when optional.
int64_t json_ns(double ns);
int64_t json_signed_ns(double ns);
std::optional<int64_t> json_signed_ns(const std::optional<double>& ns);
double json_fraction(double share);
std::optional<double> json_fraction(const std::optional<double>& share);
std::optional<double> json_rounded(const std::optional<double>& value, double scale);

// Appends `text` as a quoted JSON string.
void append_json_string(std::string& out, std::string_view text);
std::string json_quote(std::string_view text);

class JsonWriter {
 public:
  explicit JsonWriter(std::string& out, int indent = 2) : out_(out), indent_(indent) {}

  JsonWriter& begin_object();
  JsonWriter& end_object();
  JsonWriter& begin_array();
  JsonWriter& end_array();
  JsonWriter& key(std::string_view name);

  JsonWriter& value(std::string_view text);
  JsonWriter& value(const char* text) { return value(std::string_view(text)); }
  JsonWriter& value(const std::string& text) { return value(std::string_view(text)); }
  JsonWriter& value(bool flag);
  JsonWriter& value(double number);
  JsonWriter& value(std::integral auto number) { return raw(std::to_string(number)); }
  JsonWriter& value(unsigned __int128 number);  // JSON numbers have no size limit
  template <class T>
  JsonWriter& value(const std::optional<T>& maybe) {
    return maybe ? value(*maybe) : null();
  }
  JsonWriter& null();

  template <class T>
  JsonWriter& field(std::string_view name, const T& v) {
    key(name);
    return value(v);
  }

  // True once every object and array that was opened has been closed.
  bool done() const { return stack_.empty() && wrote_root_; }

 private:
  enum class Scope { Object, Array };
  struct Level {
    Scope scope;
    bool empty = true;
  };

  JsonWriter& raw(std::string_view token);
  JsonWriter& open(Scope scope, char bracket);
  JsonWriter& close(Scope scope, char bracket);
  void before_value();
  void newline();

  std::string& out_;
  int indent_;
  std::vector<Level> stack_;
  bool after_key_ = false;
  bool wrote_root_ = false;
};

}  // namespace allocscope
