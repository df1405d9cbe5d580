// symbolize.h — return addresses of a profile's stacks, as functions and source lines.
//
// A Symbolizer resolves addresses offline with the profile's Modules (stack_table.h): the module
// that held an address, the function around it from the module's own ELF symbol tables
// (elf_symbols.h; .symtab, else .dynsym), and — when the module has DWARF line tables and the
// `addr2line` program (binutils) is on PATH — its file:line and the chain of functions inlined
// there, asked of addr2line once per module for all the addresses of that module.
//
// Addresses of a stack are return addresses: each is looked up one byte earlier, inside the call
// instruction, so that a call at the very end of a function is not taken for the next one.
// Modules are read from the paths the profile recorded; the program's own entry may have an empty
// path (glibc), which stands for the profile's executable unless another module has its path
// (musl, whose unnamed object is the vDSO).  Objects that are gone, or are not ELF files,
// leave their addresses as "module+0xoffset".
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "symbols/elf_symbols.h"
#include "profile/stack_table.h"

namespace allocscope {

struct SourceFrame {
  std::string function;  // demangled
  std::string file;      // "" when unknown
  uint32_t line = 0;     // 0 when unknown
};

struct FrameInfo {
  uint64_t address = 0;   // as recorded (a return address)
  int module = -1;        // index in ModuleMap::modules(), -1: in no known module
  std::string module_name;  // the module's file name (no directory)
  std::string function;   // demangled function name, "" when no symbol holds the address
  uint64_t offset = 0;    // of the address from the function's start, or from the load bias
  // From addr2line, innermost first: functions inlined at this address, then the function that
  // holds them (whose name may differ from `function`'s spelling).  Empty without line info.
  std::vector<SourceFrame> source;

  // "function", else "basename(module)+0xoffset", else "0xaddress".
  std::string name() const;
  // The innermost function at the address: an inlined one when addr2line knows, else name().
  std::string innermost() const;
  // The innermost source position, "file:line", or "" when unknown.
  std::string location() const;
};

struct SymbolizeOptions {
  std::string exe;                      // the program's path, for a module recorded without one
  bool source_lines = true;             // ask addr2line for file:line
  std::string addr2line = "addr2line";  // program to run (looked up on PATH)
};

class Symbolizer {
 public:
  Symbolizer(const ModuleMap& modules, SymbolizeOptions options);
  ~Symbolizer();

  // Resolves many addresses at once (one addr2line run per module); optional, frame() resolves
  // what was not prepared one address at a time.
  void prepare(std::span<const uint64_t> addresses);
  const FrameInfo& frame(uint64_t return_address);

  // The path of module `index` as read (the executable for an unnamed main program).
  std::string module_path(int index) const;
  const ModuleMap& modules() const { return modules_; }

 private:
  const ElfSymbols* symbols_of(int module);
  FrameInfo resolve_symbol(uint64_t address);
  void run_addr2line(int module, const std::vector<uint64_t>& addresses);

  const ModuleMap& modules_;
  SymbolizeOptions options_;
  std::map<int, std::optional<ElfSymbols>> elf_;
  std::map<uint64_t, FrameInfo> frames_;
  bool exe_named_ = false;  // some module carries the executable's path
};

// Runs `argv` (argv[0] looked up on PATH) with stdin from /dev/null and returns what it wrote on
// stdout, or nullopt if it could not be run or did not exit with status 0.
std::optional<std::string> run_capturing_stdout(const std::vector<std::string>& argv);

}  // namespace allocscope
