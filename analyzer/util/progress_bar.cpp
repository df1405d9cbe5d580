#include "util/progress_bar.h"

#include <fmt/format.h>
#include <unistd.h>

namespace allocscope {

namespace {

constexpr size_t kBarWidth = 24;
constexpr size_t kMaxWhat = 50;  // characters of the step's description on the bar line

}  // namespace

ProgressBar::ProgressBar(size_t total, FILE* out) : ProgressBar(total, out, isatty(fileno(out)) == 1) {}

ProgressBar::ProgressBar(size_t total, FILE* out, bool terminal) : total_(total), out_(out), terminal_(terminal) {}

ProgressBar::~ProgressBar() { finish(); }

void ProgressBar::draw() {
  const size_t filled = total_ == 0 ? kBarWidth : done_ * kBarWidth / total_;
  std::string what = current_.size() > kMaxWhat ? current_.substr(0, kMaxWhat - 3) + "..." : current_;
  fmt::print(out_, "\r\x1b[K[{}{}] {}/{}  {}", std::string(filled, '#'), std::string(kBarWidth - filled, '.'), done_,
             total_, what);
  std::fflush(out_);
  shown_ = true;
}

void ProgressBar::erase() {
  if (!shown_) return;
  fmt::print(out_, "\r\x1b[K");
  std::fflush(out_);
  shown_ = false;
}

void ProgressBar::begin_step(std::string_view what) {
  current_ = what;
  if (terminal_) draw();
}

void ProgressBar::end_step(std::string_view result) {
  ++done_;
  if (terminal_) {
    draw();
  } else {
    fmt::print(out_, "allocscope: {}/{}: {}\n", done_, total_, result);
    std::fflush(out_);
  }
}

void ProgressBar::note(std::string_view line) {
  const bool was_shown = shown_;
  erase();
  fmt::print(out_, "{}\n", line);
  if (was_shown) draw();
  std::fflush(out_);
}

void ProgressBar::finish() { erase(); }

}  // namespace allocscope
