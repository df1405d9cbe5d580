// elf_symbols.h — function symbols of one ELF object, read from its file.
//
// ElfSymbols::load() reads a 64-bit little-endian ELF file's section headers and its .symtab (or,
// when it was stripped, its .dynsym): the defined functions (STT_FUNC, STT_GNU_IFUNC) with their
// virtual addresses and sizes.  find() maps a virtual address (address - load bias) to the
// function that holds it.  Only the bytes of those tables are read (pread), every offset and size
// is checked against the file, and a file that is not such an ELF object yields nullopt.
// has_debug_info() says whether the object carries DWARF line tables (.debug_line), which is
// when addr2line can give file:line.
#pragma once
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace allocscope {

struct ElfSymbol {
  uint64_t value = 0;  // virtual address
  uint64_t size = 0;
  std::string name;    // as in the file (mangled)
};

class ElfSymbols {
 public:
  static std::optional<ElfSymbols> load(const std::filesystem::path& path);

  // The function holding `vaddr`: the last symbol at or below it whose range contains it (or,
  // for symbols of size 0, the nearest one below).  nullptr when none does.
  const ElfSymbol* find(uint64_t vaddr) const;
  bool has_debug_info() const { return debug_info_; }
  bool from_symtab() const { return from_symtab_; }  // false: .dynsym only
  const std::vector<ElfSymbol>& symbols() const { return symbols_; }

 private:
  std::vector<ElfSymbol> symbols_;  // by value
  bool debug_info_ = false;
  bool from_symtab_ = false;
};

// The demangled form of a C++ symbol, or the name itself.
std::string demangle(const std::string& name);

}  // namespace allocscope
