// contention_wording.h — the contention verdict (contention_verdict.h) in words: one sentence for
// the report's verdict, the reason, what to do when it cannot tell, and the evidence as a list of
// (kind, value, meaning) that text, JSON and HTML all print.
#pragma once
#include <string>
#include <vector>

#include "model/contention_verdict.h"

namespace allocscope {

struct EvidenceItem {
  std::string kind;     // a stable key: "met_slower", "blocked_calls", …
  double value = 0;
  std::string meaning;  // what the value says, in a sentence
};

std::vector<EvidenceItem> contention_evidence(const ContentionVerdict& v);
std::string contention_reason(const ContentionVerdict& v);   // why this verdict, one sentence
std::string contention_advice(const ContentionVerdict& v);   // what to do when unsure; "" otherwise
std::string contention_sentence(const ContentionVerdict& v); // the verdict for the report's paragraph

}  // namespace allocscope
