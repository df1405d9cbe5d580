// Progress on stderr: a bar redrawn in place on a terminal, one line per step elsewhere.
#include "util/progress_bar.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <string>

namespace allocscope {
namespace {

// What `write` printed through a ProgressBar on a temporary file.
template <class Write>
std::string printed(bool terminal, Write write) {
  FILE* file = std::tmpfile();
  {
    ProgressBar bar(4, file, terminal);
    write(bar);
  }
  std::string text(static_cast<size_t>(std::ftell(file)), '\0');
  std::rewind(file);
  text.resize(std::fread(text.data(), 1, text.size(), file));
  std::fclose(file);
  return text;
}

TEST(ProgressBar, ElsewhereOneLinePerFinishedStep) {
  const std::string text = printed(false, [](ProgressBar& bar) {
    bar.begin_step("a (run 1/2)");
    bar.end_step("a run 1/2: 0.1 s");
    bar.note("a note");
    bar.begin_step("b (run 1/2)");
    bar.end_step("b run 1/2: 0.2 s");
  });
  EXPECT_EQ(text, "allocscope: 1/4: a run 1/2: 0.1 s\na note\nallocscope: 2/4: b run 1/2: 0.2 s\n");
}

TEST(ProgressBar, OnATerminalOneLineRedrawnAndErased) {
  const std::string text = printed(true, [](ProgressBar& bar) {
    bar.begin_step("a (run 1/2)");
    bar.end_step("ignored");
    bar.note("a note");
    EXPECT_EQ(bar.done(), 1u);
  });
  EXPECT_EQ(text.find('\n'), text.find("a note") + 6) << text;  // the only newline ends the note
  EXPECT_NE(text.find("\r\x1b[K[........................] 0/4  a (run 1/2)"), std::string::npos) << text;
  EXPECT_NE(text.find("\r\x1b[K[######..................] 1/4  a (run 1/2)"), std::string::npos) << text;
  EXPECT_EQ(text.find("ignored"), std::string::npos) << text;
  EXPECT_TRUE(text.ends_with("\r\x1b[K")) << text;  // erased when done
}

}  // namespace
}  // namespace allocscope
