// commands.h — the subcommands of the `allocscope` executable (main.cpp's table), one file each,
// and the option parsers they share.  Each turns its arguments (those after its name) into
// options, runs the model and renders it; cli.h holds their conventions.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "commands/cli.h"
#include "run/compare.h"
#include "run/record.h"

namespace allocscope {

int record_command(CommandArgs args);     // record.cpp
int dump_command(CommandArgs args);       // dump.cpp
int shapes_command(CommandArgs args);     // shapes.cpp
int callsites_command(CommandArgs args);  // callsites.cpp
int export_command(CommandArgs args);     // export.cpp
int report_command(CommandArgs args);     // report.cpp
int diff_command(CommandArgs args);       // diff.cpp
int compare_command(CommandArgs args);    // compare.cpp

// The value of --sample N or --stacks=N: 0 to 2^32 - 1.  Throws UsageError naming the command.
uint32_t parse_sample_rate(std::string_view command, std::string_view option, const std::string& text);
// Parses the arguments after "record"; nullopt for --help.  Throws UsageError.
std::optional<RecordOptions> parse_record_options(CommandArgs args);
// The allocators compared when --allocators is not given.
std::vector<std::string> default_compare_allocators();
// Parses the arguments after "compare"; nullopt for --help.  Throws UsageError.
std::optional<CompareOptions> parse_compare_options(CommandArgs args);

}  // namespace allocscope
