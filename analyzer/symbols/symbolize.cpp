#include "symbols/symbolize.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <csignal>
#include <filesystem>

namespace allocscope {

namespace {

constexpr size_t kAddr2lineBatch = 512;

std::string base_name(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

std::optional<uint64_t> parse_hex(std::string_view text) {
  if (text.starts_with("0x")) text.remove_prefix(2);
  uint64_t v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v, 16);
  if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return v;
}

// "file:line" or "file:line (discriminator N)"; "??:0", "??:?" are unknown.
SourceFrame parse_position(std::string_view function, std::string_view position) {
  SourceFrame f;
  if (function != "??") f.function = std::string(function);
  if (const size_t paren = position.find(" ("); paren != std::string_view::npos) position = position.substr(0, paren);
  const size_t colon = position.rfind(':');
  if (colon == std::string_view::npos) return f;
  const std::string_view file = position.substr(0, colon), line = position.substr(colon + 1);
  if (file != "??") f.file = std::string(file);
  uint32_t n = 0;
  const auto [end, ec] = std::from_chars(line.data(), line.data() + line.size(), n);
  if (ec == std::errc() && end == line.data() + line.size()) f.line = n;
  return f;
}

}  // namespace

std::string FrameInfo::name() const {
  if (!function.empty()) return function;
  if (!source.empty() && !source.back().function.empty()) return source.back().function;
  if (module >= 0) return fmt::format("{}+0x{:x}", module_name, offset);
  return fmt::format("0x{:x}", address);
}

std::string FrameInfo::innermost() const {
  if (!source.empty() && !source.front().function.empty()) return source.front().function;
  return name();
}

std::string FrameInfo::location() const {
  for (const SourceFrame& f : source) {
    if (!f.file.empty() && f.line) return fmt::format("{}:{}", base_name(f.file), f.line);
  }
  return "";
}

std::optional<std::string> run_capturing_stdout(const std::vector<std::string>& argv) {
  if (argv.empty()) return std::nullopt;
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return std::nullopt;
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  const pid_t pid = ::fork();
  if (pid < 0) {
    ::close(fds[0]);
    ::close(fds[1]);
    return std::nullopt;
  }
  if (pid == 0) {
    const int null = ::open("/dev/null", O_RDWR | O_CLOEXEC);
    if (null >= 0) {
      ::dup2(null, 0);
      ::dup2(null, 2);
    }
    ::dup2(fds[1], 1);
    ::execvp(args[0], args.data());
    ::_exit(127);
  }
  ::close(fds[1]);
  std::string out;
  char buf[65536];
  for (;;) {
    const ssize_t got = ::read(fds[0], buf, sizeof buf);
    if (got > 0) {
      out.append(buf, static_cast<size_t>(got));
    } else if (got == 0 || errno != EINTR) {
      break;
    }
  }
  ::close(fds[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) return std::nullopt;
  return out;
}

Symbolizer::Symbolizer(const ModuleMap& modules, SymbolizeOptions options)
    : modules_(modules), options_(std::move(options)) {
  // glibc names the main program "" (and the vDSO "linux-vdso.so.1"); musl names the program and
  // leaves the vDSO "".  An unnamed object is the program only when no other object is.
  for (const Module& m : modules_.modules()) {
    if (!options_.exe.empty() && m.path == options_.exe) exe_named_ = true;
  }
}

Symbolizer::~Symbolizer() = default;

std::string Symbolizer::module_path(int index) const {
  if (index < 0 || static_cast<size_t>(index) >= modules_.modules().size()) return "";
  const std::string& path = modules_.modules()[static_cast<size_t>(index)].path;
  if (path.empty()) return exe_named_ ? path : options_.exe;
  // musl names the program as it was started: a relative path ("./prog", "bin/prog") of the
  // program's file name is the program, whose absolute path the profile has.
  if (path[0] != '/' && !options_.exe.empty() && base_name(path) == base_name(options_.exe)) return options_.exe;
  return path;
}

const ElfSymbols* Symbolizer::symbols_of(int module) {
  auto it = elf_.find(module);
  if (it == elf_.end()) {
    const std::string path = module_path(module);
    it = elf_.emplace(module, path.empty() || path[0] != '/' ? std::nullopt : ElfSymbols::load(path)).first;
  }
  return it->second ? &*it->second : nullptr;
}

FrameInfo Symbolizer::resolve_symbol(uint64_t address) {
  FrameInfo f;
  f.address = address;
  const uint64_t pc = address ? address - 1 : 0;
  f.module = modules_.find(pc);
  if (f.module < 0) return f;
  const Module& m = modules_.modules()[static_cast<size_t>(f.module)];
  f.offset = pc + 1 - m.load_bias;
  if (const ElfSymbols* syms = symbols_of(f.module)) {
    if (const ElfSymbol* s = syms->find(pc - m.load_bias)) {
      f.function = demangle(s->name);
      f.offset = pc + 1 - m.load_bias - s->value;
    }
  }
  f.module_name = base_name(module_path(f.module));
  return f;
}

void Symbolizer::run_addr2line(int module, const std::vector<uint64_t>& addresses) {
  const std::string path = module_path(module);
  const uint64_t bias = modules_.modules()[static_cast<size_t>(module)].load_bias;
  for (size_t from = 0; from < addresses.size(); from += kAddr2lineBatch) {
    const size_t to = std::min(addresses.size(), from + kAddr2lineBatch);
    std::vector<std::string> argv = {options_.addr2line, "-e", path, "-a", "-f", "-i", "-C"};
    std::map<uint64_t, uint64_t> by_pc;  // vaddr -> recorded address
    for (size_t i = from; i < to; ++i) {
      const uint64_t vaddr = addresses[i] - 1 - bias;
      by_pc[vaddr] = addresses[i];
      argv.push_back(fmt::format("0x{:x}", vaddr));
    }
    const auto out = run_capturing_stdout(argv);
    if (!out) return;  // no addr2line, or it failed: symbols only
    FrameInfo* current = nullptr;
    std::optional<std::string> function;
    size_t start = 0;
    while (start < out->size()) {
      size_t end = out->find('\n', start);
      if (end == std::string::npos) end = out->size();
      const std::string_view line(out->data() + start, end - start);
      start = end + 1;
      if (!function && line.starts_with("0x")) {
        current = nullptr;
        if (const auto vaddr = parse_hex(line)) {
          const auto it = by_pc.find(*vaddr);
          if (it != by_pc.end()) current = &frames_[it->second];
        }
        continue;
      }
      if (!function) {
        function = std::string(line);
        continue;
      }
      if (current) {
        SourceFrame f = parse_position(*function, line);
        if (!f.function.empty() || !f.file.empty()) current->source.push_back(std::move(f));
      }
      function.reset();
    }
  }
}

void Symbolizer::prepare(std::span<const uint64_t> addresses) {
  std::map<int, std::vector<uint64_t>> by_module;
  for (const uint64_t address : addresses) {
    if (frames_.contains(address)) continue;
    FrameInfo f = resolve_symbol(address);
    if (f.module >= 0 && address > 0) by_module[f.module].push_back(address);
    frames_.emplace(address, std::move(f));
  }
  if (!options_.source_lines) return;
  for (auto& [module, list] : by_module) {
    const ElfSymbols* syms = symbols_of(module);
    if (!syms || !syms->has_debug_info()) continue;
    run_addr2line(module, list);
  }
}

const FrameInfo& Symbolizer::frame(uint64_t return_address) {
  auto it = frames_.find(return_address);
  if (it == frames_.end()) {
    const uint64_t one[1] = {return_address};
    prepare(one);
    it = frames_.find(return_address);
  }
  return it->second;
}

}  // namespace allocscope
