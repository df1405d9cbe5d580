// side_by_side.h — two independent analyses at once (say the two profiles of a `diff`), on two
// threads, with the errors of the order they are written in: when both throw, the first one's
// error is the one that propagates, as if they had run one after the other.
#pragma once
#include <exception>
#include <future>
#include <optional>
#include <utility>

namespace allocscope {

// Runs first() on a thread of its own and second() on the caller's; returns both results.
template <class First, class Second>
auto side_by_side(First first, Second second) {
  auto early = std::async(std::launch::async, std::move(first));
  std::exception_ptr second_error;
  using SecondResult = decltype(second());
  std::optional<SecondResult> b;
  try {
    b.emplace(second());
  } catch (...) {
    second_error = std::current_exception();
  }
  auto a = early.get();  // rethrows first()'s error, which comes first
  if (second_error) std::rethrow_exception(second_error);
  return std::pair<decltype(a), SecondResult>(std::move(a), std::move(*b));
}

}  // namespace allocscope
