// compare_options.cpp — the command line of `allocscope compare` (compare.h).
#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>

#include "commands/cli.h"
#include "commands/commands.h"
#include "run/compare.h"
#include "run/record.h"

namespace allocscope {

namespace {

constexpr unsigned kMaxRuns = 1000;

unsigned parse_runs(const std::string& text) {
  char* end = nullptr;
  errno = 0;
  const unsigned long value = std::strtoul(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || errno != 0 || text[0] == '-' || text[0] == '+' || value < 1 ||
      value > kMaxRuns) {
    throw UsageError(fmt::format("compare: --runs needs a whole number from 1 to {}, not '{}'", kMaxRuns, text));
  }
  return static_cast<unsigned>(value);
}

std::vector<std::string> parse_allocator_list(const std::string& text) {
  std::vector<std::string> names;
  size_t start = 0;
  while (true) {
    const size_t comma = text.find(',', start);
    std::string item = text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    if (item.empty()) {
      throw UsageError(fmt::format("compare: --allocators takes a comma-separated list of names or paths, not '{}'",
                                   text));
    }
    names.push_back(std::move(item));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return names;
}

// A variant's name appears in file names and tables.
bool is_row_name(const std::string& name) {
  return !name.empty() && name.size() <= 64 && name != "." && name != ".." &&
         std::all_of(name.begin(), name.end(), is_row_name_char);
}

CompareVariant parse_variant(const std::string& text) {
  const size_t equals = text.find('=');
  if (equals == std::string::npos || equals + 1 == text.size()) {
    throw UsageError(fmt::format("compare: --variant needs NAME=PROGRAM, not '{}'", text));
  }
  CompareVariant variant{text.substr(0, equals), text.substr(equals + 1)};
  if (!is_row_name(variant.name)) {
    throw UsageError(fmt::format(
        "compare: variant name '{}' must be 1 to 64 letters, digits, '.', '_', '+' or '-'", variant.name));
  }
  return variant;
}

}  // namespace

std::vector<std::string> default_compare_allocators() { return {"glibc", "jemalloc", "tcmalloc", "mimalloc", "scudo"}; }

std::optional<CompareOptions> parse_compare_options(CommandArgs args) {
  CompareOptions options;
  bool allocators_given = false, json = false, markdown = false;
  const auto command =
      OptionParser("compare")
          .value("--allocators", [&](const std::string& v) {
            options.allocators = parse_allocator_list(v);
            allocators_given = true;
          })
          .value("--runs", [&](const std::string& v) { options.runs = parse_runs(v); })
          .value("--sample", [&](const std::string& v) { options.sample_every = parse_sample_rate("compare", "--sample", v); })
          .flag("--locks", options.locks)
          .value("--variant", [&](const std::string& v) { options.variants.push_back(parse_variant(v)); })
          .value("--output", "-o", [&](const std::string& v) {
            if (v.empty()) throw UsageError("compare: -o needs a directory");
            options.output_dir = v;
          })
          .value("--html", [&](const std::string& v) {
            if (v.empty()) throw UsageError("compare: --html needs an output file");
            options.html = v;
          })
          .flag("--json", json)
          .flag("--markdown", markdown)
          .flag("--force", options.force)
          .flag("--keep", options.keep)
          .parse(args, OptionParser::Operands::EndOptions);
  if (!command) return std::nullopt;
  options.command = *command;
  if (options.command.empty()) throw UsageError("compare: missing CMD");
  if (json && markdown) throw UsageError("compare: --json and --markdown exclude each other");
  if (!options.html.empty() && (json || markdown))
    throw UsageError("compare: --html excludes --json and --markdown");
  if (!options.html.empty()) options.format = CompareFormat::Html;
  if (options.force && options.html.empty()) throw UsageError("compare: --force goes with --html");
  if (json) options.format = CompareFormat::Json;
  if (markdown) options.format = CompareFormat::Markdown;
  if (!allocators_given) options.allocators = default_compare_allocators();
  return options;
}

}  // namespace allocscope
