// usage_error.h — a request that cannot be carried out as asked (a bad option, a file name that is
// not one): the command that receives it prints it with exit status 2 (commands/cli.h).
#pragma once
#include <stdexcept>

namespace allocscope {

class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace allocscope
