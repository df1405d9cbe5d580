// cost_constants.h — the constants of a call's uncontended cost and of the serialization index,
// shared by the report's cost model (cost_pass1.cpp, cost_model.cpp) and a trace's concurrency
// (concurrency.cpp); docs/analysis.md defines them.
#pragma once
#include <cstdint>

namespace allocscope {

constexpr double kBaselineQuantile = 0.99;   // the uncontended cost: mean of calls made alone, top 1 % left out
constexpr double kFallbackQuantile = 0.10;   // without calls made alone: the cell's 10th percentile
constexpr double kOverheadQuantile = 0.001;  // the probe overhead can't exceed the fastest calls
constexpr uint64_t kMinAlone = 20;           // calls made alone for a cell's own baseline
constexpr uint64_t kMinContended = 20;       // calls meeting another thread, for a serialization index

}  // namespace allocscope
