// progress_bar.h — progress of a long series of steps, on stderr.
//
// On a terminal: one line redrawn in place, "[#####.....]  7/15  what is running", erased by
// finish().  Elsewhere (a log, a pipe): nothing while a step runs, one line per finished step.
#pragma once
#include <cstddef>
#include <cstdio>
#include <string>
#include <string_view>

namespace allocscope {

class ProgressBar {
 public:
  ProgressBar(size_t total, FILE* out = stderr);  // a terminal when `out` is one
  ProgressBar(size_t total, FILE* out, bool terminal);
  ~ProgressBar();
  ProgressBar(const ProgressBar&) = delete;
  ProgressBar& operator=(const ProgressBar&) = delete;

  void begin_step(std::string_view what);  // terminal: the bar with `what` beside it
  void end_step(std::string_view result);  // elsewhere: "<prefix> <done>/<total>: <result>"
  void note(std::string_view line);        // a line of its own, above the bar
  void finish();                           // erase the bar
  size_t done() const { return done_; }

 private:
  void draw();
  void erase();

  size_t total_, done_ = 0;
  FILE* out_;
  bool terminal_;
  bool shown_ = false;
  std::string current_;
};

}  // namespace allocscope
