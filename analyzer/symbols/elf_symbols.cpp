#include "symbols/elf_symbols.h"

#include <cxxabi.h>
#include <elf.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string_view>

namespace allocscope {

namespace {

constexpr uint64_t kMaxTable = uint64_t{1} << 30;  // a symbol or string table larger is not believed

class File {
 public:
  explicit File(const std::filesystem::path& path) : fd_(::open(path.c_str(), O_RDONLY | O_CLOEXEC)) {
    struct stat st;
    if (fd_ >= 0 && ::fstat(fd_, &st) == 0 && S_ISREG(st.st_mode)) size_ = static_cast<uint64_t>(st.st_size);
  }
  ~File() {
    if (fd_ >= 0) ::close(fd_);
  }
  File(const File&) = delete;
  File& operator=(const File&) = delete;

  bool ok() const { return fd_ >= 0 && size_ > 0; }
  uint64_t size() const { return size_; }

  bool read(uint64_t offset, void* out, uint64_t n) const {
    if (offset > size_ || n > size_ - offset) return false;
    auto* p = static_cast<char*>(out);
    while (n > 0) {
      const ssize_t got = ::pread(fd_, p, n, static_cast<off_t>(offset));
      if (got <= 0) return false;
      p += got;
      offset += static_cast<uint64_t>(got);
      n -= static_cast<uint64_t>(got);
    }
    return true;
  }

 private:
  int fd_;
  uint64_t size_ = 0;
};

}  // namespace

std::string demangle(const std::string& name) {
  if (name.size() < 2 || name[0] != '_' || name[1] != 'Z') return name;
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> out(abi::__cxa_demangle(name.c_str(), nullptr, nullptr, &status), std::free);
  return status == 0 && out ? std::string(out.get()) : name;
}

std::optional<ElfSymbols> ElfSymbols::load(const std::filesystem::path& path) {
  File file(path);
  if (!file.ok()) return std::nullopt;
  Elf64_Ehdr eh;
  if (!file.read(0, &eh, sizeof eh)) return std::nullopt;
  if (std::memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 || eh.e_ident[EI_CLASS] != ELFCLASS64 ||
      eh.e_ident[EI_DATA] != ELFDATA2LSB || eh.e_shentsize != sizeof(Elf64_Shdr)) {
    return std::nullopt;
  }
  uint64_t count = eh.e_shnum;
  if (eh.e_shoff == 0) return std::nullopt;
  if (count == 0) {  // more than SHN_LORESERVE sections: the count is in section 0
    Elf64_Shdr first;
    if (!file.read(eh.e_shoff, &first, sizeof first)) return std::nullopt;
    count = first.sh_size;
  }
  if (count > file.size() / sizeof(Elf64_Shdr)) return std::nullopt;
  std::vector<Elf64_Shdr> sections(count);
  if (!file.read(eh.e_shoff, sections.data(), count * sizeof(Elf64_Shdr))) return std::nullopt;

  ElfSymbols out;
  // Section names, for .debug_line.
  uint64_t shstrndx = eh.e_shstrndx == SHN_XINDEX && count ? sections[0].sh_link : eh.e_shstrndx;
  if (shstrndx < count && sections[shstrndx].sh_size < kMaxTable) {
    const Elf64_Shdr& names = sections[shstrndx];
    std::string table(names.sh_size, '\0');
    if (file.read(names.sh_offset, table.data(), table.size())) {
      for (const Elf64_Shdr& s : sections) {
        if (s.sh_name >= table.size() || s.sh_type == SHT_NOBITS || s.sh_size == 0) continue;
        const char* name = table.c_str() + s.sh_name;
        if (std::string_view(name, strnlen(name, table.size() - s.sh_name)) == ".debug_line") {
          out.debug_info_ = true;
        }
      }
    }
  }

  const Elf64_Shdr* symtab = nullptr;
  for (const Elf64_Shdr& s : sections) {
    if (s.sh_type == SHT_SYMTAB) symtab = &s;
  }
  out.from_symtab_ = symtab != nullptr;
  if (!symtab) {
    for (const Elf64_Shdr& s : sections) {
      if (s.sh_type == SHT_DYNSYM) symtab = &s;
    }
  }
  if (!symtab || symtab->sh_link >= count || symtab->sh_size > kMaxTable) return out;
  const Elf64_Shdr& strtab = sections[symtab->sh_link];
  if (strtab.sh_size > kMaxTable) return out;
  std::vector<Elf64_Sym> syms(symtab->sh_size / sizeof(Elf64_Sym));
  std::string strings(strtab.sh_size, '\0');
  if (!file.read(symtab->sh_offset, syms.data(), syms.size() * sizeof(Elf64_Sym)) ||
      !file.read(strtab.sh_offset, strings.data(), strings.size())) {
    return out;
  }
  for (const Elf64_Sym& sym : syms) {
    const unsigned type = ELF64_ST_TYPE(sym.st_info);
    if ((type != STT_FUNC && type != STT_GNU_IFUNC) || sym.st_shndx == SHN_UNDEF || sym.st_value == 0) continue;
    if (sym.st_name >= strings.size()) continue;
    const char* name = strings.c_str() + sym.st_name;
    const size_t len = strnlen(name, strings.size() - sym.st_name);
    if (len == 0) continue;
    out.symbols_.push_back(ElfSymbol{sym.st_value, sym.st_size, std::string(name, len)});
  }
  // By address; among aliases the sized one first, then the shortest name without a leading '_'.
  std::sort(out.symbols_.begin(), out.symbols_.end(), [](const ElfSymbol& a, const ElfSymbol& b) {
    if (a.value != b.value) return a.value < b.value;
    if ((a.size > 0) != (b.size > 0)) return a.size > 0;
    const bool au = a.name[0] == '_', bu = b.name[0] == '_';
    if (au != bu) return !au;
    if (a.name.size() != b.name.size()) return a.name.size() < b.name.size();
    return a.name < b.name;
  });
  out.symbols_.erase(std::unique(out.symbols_.begin(), out.symbols_.end(),
                                 [](const ElfSymbol& a, const ElfSymbol& b) { return a.value == b.value; }),
                     out.symbols_.end());
  return out;
}

const ElfSymbol* ElfSymbols::find(uint64_t vaddr) const {
  auto it = std::upper_bound(symbols_.begin(), symbols_.end(), vaddr,
                             [](uint64_t v, const ElfSymbol& s) { return v < s.value; });
  if (it == symbols_.begin()) return nullptr;
  --it;
  if (it->size == 0 || vaddr - it->value < it->size) return &*it;
  // Inside no sized symbol: an enclosing one may start earlier (rare); look a few back.
  for (int back = 0; back < 8 && it != symbols_.begin(); ++back) {
    --it;
    if (it->size > 0 && vaddr - it->value < it->size) return &*it;
  }
  return nullptr;
}

}  // namespace allocscope
