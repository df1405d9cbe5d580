#include "export.h"

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <stdexcept>

namespace allocscope {

namespace {

constexpr std::string_view kUsage =
    "usage: allocscope export FILE --format folded|pprof|chrome -o OUT [--weight time|calls]\n"
    "                         [--no-lines]\n"
    "\n"
    "Writes a profile's calls for other tools:\n"
    "  folded   folded stacks, outermost frame first (flamegraph.pl, speedscope, inferno)\n"
    "  pprof    gzipped profile.proto (go tool pprof, speedscope)\n"
    "  chrome   Chrome trace-event JSON: a track per thread, a counter of threads inside the\n"
    "           allocator (Perfetto UI, chrome://tracing)\n"
    "\n"
    "  -o, --output OUT   where to write ('-' for standard output)\n"
    "  --weight W         folded and pprof: weigh stacks by allocator time (default) or calls\n"
    "  --no-lines         do not run addr2line (symbols only)\n"
    "  -h, --help         this help\n";

struct FileCloser {
  void operator()(std::FILE* f) const {
    if (f && f != stdout) std::fclose(f);
  }
};

}  // namespace

int export_command(CommandArgs args) {
  std::string file, format, output;
  ExportOptions options;
  bool options_done = false;
  auto value_of = [&](size_t& i, std::string_view name) -> std::string {
    const std::string& arg = args[i];
    if (arg.size() > name.size() && arg.starts_with(name) && arg[name.size()] == '=') return arg.substr(name.size() + 1);
    if (i + 1 >= args.size()) throw UsageError(fmt::format("export: {} needs a value", arg));
    return args[++i];
  };
  auto is = [](const std::string& arg, std::string_view name) {
    return arg == name || (arg.size() > name.size() && arg.starts_with(name) && arg[name.size()] == '=');
  };
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (!options_done && is_help_flag(arg)) {
      fmt::print("{}", kUsage);
      return 0;
    }
    if (!options_done && is(arg, "--format")) {
      format = value_of(i, "--format");
    } else if (!options_done && (is(arg, "--output") || arg == "-o")) {
      output = value_of(i, arg == "-o" ? "-o" : "--output");
    } else if (!options_done && arg.starts_with("-o") && arg.size() > 2) {
      output = arg.substr(2);
    } else if (!options_done && is(arg, "--weight")) {
      const std::string w = value_of(i, "--weight");
      if (w == "time") {
        options.weight = ExportWeight::Time;
      } else if (w == "calls") {
        options.weight = ExportWeight::Calls;
      } else {
        throw UsageError(fmt::format("export: --weight is time or calls, not '{}'", w));
      }
    } else if (!options_done && arg == "--no-lines") {
      options.source_lines = false;
    } else if (!options_done && arg == "--") {
      options_done = true;
    } else if (!options_done && arg.size() > 1 && arg[0] == '-') {
      throw UsageError(fmt::format("export: unknown option '{}'", arg));
    } else if (!file.empty()) {
      throw UsageError("export: one FILE only");
    } else {
      file = arg;
    }
  }
  if (file.empty()) throw UsageError("export: missing FILE");
  if (format.empty()) throw UsageError("export: missing --format folded|pprof|chrome");
  if (format != "folded" && format != "pprof" && format != "chrome") {
    throw UsageError(fmt::format("export: unknown format '{}' (folded, pprof or chrome)", format));
  }
  if (output.empty()) throw UsageError("export: missing -o OUT");

  std::string data;
  // Times are the cost model's estimate, apportioned over the stacks (trace_analysis.h).
  if (format == "folded") data = export_folded(load_estimated_stack_costs(file), options);
  if (format == "pprof") data = export_pprof(load_estimated_stack_costs(file), options);

  std::unique_ptr<std::FILE, FileCloser> out(output == "-" ? stdout : std::fopen(output.c_str(), "wb"));
  if (!out) throw std::runtime_error(fmt::format("cannot write {}: {}", output, std::strerror(errno)));
  if (format == "chrome") {
    export_chrome(file, out.get(), options);
  } else {
    std::fwrite(data.data(), 1, data.size(), out.get());
  }
  if (std::fflush(out.get()) != 0 || std::ferror(out.get())) {
    throw std::runtime_error(fmt::format("cannot write {}: {}", output, std::strerror(errno)));
  }
  return 0;
}

}  // namespace allocscope
