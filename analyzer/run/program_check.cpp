#include "run/program_check.h"

#include <elf.h>
#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <vector>

namespace allocscope {

namespace fs = std::filesystem;

namespace {

constexpr int kMaxInterpreterDepth = 4;  // the kernel's limit on nested "#!" interpreters

#if defined(__x86_64__)
constexpr uint16_t kNativeMachine = EM_X86_64;
#elif defined(__aarch64__)
constexpr uint16_t kNativeMachine = EM_AARCH64;
#endif
constexpr unsigned char kNativeClass = sizeof(void*) == 8 ? ELFCLASS64 : ELFCLASS32;

bool is_executable_file(const fs::path& path) {
  std::error_code ec;
  return fs::is_regular_file(path, ec) && access(path.c_str(), X_OK) == 0;
}

std::string default_path() {
  const size_t n = confstr(_CS_PATH, nullptr, 0);
  if (n == 0) return "/bin:/usr/bin";
  std::string path(n, '\0');
  confstr(_CS_PATH, path.data(), n);
  path.resize(n - 1);
  return path;
}

template <class T>
bool read_at(std::ifstream& in, uint64_t offset, T& out) {
  in.seekg(static_cast<std::streamoff>(offset));
  in.read(reinterpret_cast<char*>(&out), sizeof out);
  return static_cast<size_t>(in.gcount()) == sizeof out;
}

// Reads the program headers of an ELF of class Ehdr/Phdr/Shdr: is there a PT_INTERP?
template <class Ehdr, class Phdr, class Shdr>
ExecutableInfo inspect_elf(std::ifstream& in, bool native_class) {
  ExecutableInfo info;
  Ehdr eh;
  if (!read_at(in, 0, eh)) return {ExecutableInfo::Kind::Other, true, {}, "truncated ELF header"};
  info.native = native_class && eh.e_machine == kNativeMachine;
  uint64_t phnum = eh.e_phnum;
  if (phnum == PN_XNUM) {  // the real count is in section header 0
    Shdr sh0;
    if (eh.e_shoff == 0 || !read_at(in, eh.e_shoff, sh0)) return {ExecutableInfo::Kind::Other, true, {}, "bad ELF"};
    phnum = sh0.sh_info;
  }
  if (eh.e_phentsize != sizeof(Phdr)) return {ExecutableInfo::Kind::Other, true, {}, "unexpected ELF layout"};
  info.kind = ExecutableInfo::Kind::StaticElf;
  for (uint64_t i = 0; i < phnum; ++i) {
    Phdr ph;
    if (!read_at(in, eh.e_phoff + i * sizeof(Phdr), ph)) return {ExecutableInfo::Kind::Other, true, {}, "truncated ELF"};
    if (ph.p_type != PT_INTERP) continue;
    std::string interp(std::min<uint64_t>(ph.p_filesz, 4096), '\0');
    in.seekg(static_cast<std::streamoff>(ph.p_offset));
    in.read(interp.data(), static_cast<std::streamsize>(interp.size()));
    interp.resize(std::strlen(interp.c_str()));
    info.kind = ExecutableInfo::Kind::DynamicElf;
    info.interpreter = interp;
    break;
  }
  return info;
}

// "#!interpreter [arg]": the interpreter path.
ExecutableInfo inspect_script(std::ifstream& in) {
  in.seekg(2);
  std::string line;
  std::getline(in, line);
  const size_t start = line.find_first_not_of(" \t");
  if (start == std::string::npos) return {ExecutableInfo::Kind::Other, true, {}, "empty #! line"};
  const size_t end = line.find_first_of(" \t\r", start);
  return {ExecutableInfo::Kind::Script, true, line.substr(start, end - start), {}};
}

}  // namespace

std::optional<fs::path> resolve_command(std::string_view command) {
  if (command.empty()) return std::nullopt;
  if (command.find('/') != std::string_view::npos) {
    std::error_code ec;
    return fs::exists(command, ec) ? std::optional<fs::path>(command) : std::nullopt;
  }
  const char* env_path = std::getenv("PATH");
  const std::string search = env_path ? env_path : default_path();
  size_t start = 0;
  while (start <= search.size()) {
    const size_t end = std::min(search.find(':', start), search.size());
    const std::string dir = search.substr(start, end - start);
    const fs::path candidate = fs::path(dir.empty() ? "." : dir) / command;
    if (is_executable_file(candidate)) return candidate;
    start = end + 1;
  }
  return std::nullopt;
}

ExecutableInfo inspect_executable(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return {ExecutableInfo::Kind::Unreadable, true, {}, std::strerror(errno)};
  unsigned char ident[EI_NIDENT] = {};
  in.read(reinterpret_cast<char*>(ident), sizeof ident);
  const auto got = static_cast<size_t>(in.gcount());
  in.clear();
  if (got >= 2 && ident[0] == '#' && ident[1] == '!') return inspect_script(in);
  if (got < sizeof ident || std::memcmp(ident, ELFMAG, SELFMAG) != 0) {
    return {ExecutableInfo::Kind::Other, true, {}, "neither an ELF file nor a #! script"};
  }
  if (ident[EI_DATA] != ELFDATA2LSB) {
    return {ExecutableInfo::Kind::StaticElf, false, {}, {}};  // another byte order: not ours either way
  }
  const bool native_class = ident[EI_CLASS] == kNativeClass;
  if (ident[EI_CLASS] == ELFCLASS64) return inspect_elf<Elf64_Ehdr, Elf64_Phdr, Elf64_Shdr>(in, native_class);
  if (ident[EI_CLASS] == ELFCLASS32) return inspect_elf<Elf32_Ehdr, Elf32_Phdr, Elf32_Shdr>(in, native_class);
  return {ExecutableInfo::Kind::Other, true, {}, "unknown ELF class"};
}

PreloadCheck check_preloadable(const fs::path& program) {
  fs::path current = program;
  for (int depth = 0; depth <= kMaxInterpreterDepth; ++depth) {
    const ExecutableInfo info = inspect_executable(current);
    switch (info.kind) {
      case ExecutableInfo::Kind::Script:
        current = info.interpreter;
        continue;
      case ExecutableInfo::Kind::Unreadable:
        return {true, current, {}};
      case ExecutableInfo::Kind::Other:  // execvp runs such files with /bin/sh
        if (depth > 0) return {false, current, fmt::format("cannot be run: {}", info.error)};
        current = "/bin/sh";
        continue;
      case ExecutableInfo::Kind::StaticElf:
        if (!info.native) return {false, current, "is not a program for this machine: the shim cannot be loaded into it"};
        return {false, current, "is statically linked: LD_PRELOAD cannot observe it"};
      case ExecutableInfo::Kind::DynamicElf:
        if (!info.native) return {false, current, "is not a program for this machine: the shim cannot be loaded into it"};
        return {true, current, {}};
    }
  }
  return {false, current, "has too many nested #! interpreters"};
}

}  // namespace allocscope
