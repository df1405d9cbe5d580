#include "cli.h"

namespace allocscope {

bool is_help_flag(std::string_view arg) { return arg == "-h" || arg == "--help"; }

}  // namespace allocscope
