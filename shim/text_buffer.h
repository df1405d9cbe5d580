// shim/text_buffer.h — bounded string building on caller memory (no allocation, no stdio).
// The buffer always stays NUL-terminated; ok() is false once anything had to be cut.
#pragma once
#include <cstddef>
#include <cstdint>

namespace allocscope {

class TextBuffer {
 public:
  TextBuffer(char* buf, size_t cap) : buf_(buf), cap_(cap) {
    if (cap_) buf_[0] = '\0';
  }
  TextBuffer& put(const char* s) {
    while (s && *s) put_char(*s++);
    return *this;
  }
  TextBuffer& put_uint(uint64_t v) {
    char digits[20];
    int n = 0;
    do digits[n++] = static_cast<char>('0' + v % 10); while ((v /= 10) != 0);
    while (n) put_char(digits[--n]);
    return *this;
  }
  size_t size() const { return len_; }
  bool ok() const { return !cut_; }

 private:
  void put_char(char c) {
    if (len_ + 1 >= cap_) {
      cut_ = true;
      return;
    }
    buf_[len_++] = c;
    buf_[len_] = '\0';
  }
  char* buf_;
  size_t cap_;
  size_t len_ = 0;
  bool cut_ = false;
};

}  // namespace allocscope
