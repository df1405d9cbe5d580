// shim/function_range.cpp — see function_range.h.
#include "function_range.h"

#include <elf.h>
#include <link.h>

namespace allocscope {

namespace {

struct Query {
  uintptr_t addr;
  CodeRange found;
};

// A dynamic entry's address: glibc relocates the .dynamic of a loaded object in place, musl does
// not; an entry below the load address is still an offset.
uintptr_t dyn_address(uintptr_t base, ElfW(Addr) value) { return value < base ? base + value : value; }

// The number of dynamic symbols: DT_HASH says it; with only DT_GNU_HASH, one past the last chain.
uint32_t symbol_count(uintptr_t hash, uintptr_t gnu_hash) {
  if (hash) return reinterpret_cast<const uint32_t*>(hash)[1];
  if (!gnu_hash) return 0;
  const auto* h = reinterpret_cast<const uint32_t*>(gnu_hash);
  const uint32_t nbuckets = h[0], symoffset = h[1], bloom_size = h[2];
  const auto* buckets = reinterpret_cast<const uint32_t*>(reinterpret_cast<const ElfW(Addr)*>(h + 4) + bloom_size);
  const uint32_t* chain = buckets + nbuckets;
  uint32_t last = 0;
  for (uint32_t i = 0; i < nbuckets; i++)
    if (buckets[i] > last) last = buckets[i];
  if (last < symoffset) return symoffset;
  while (!(chain[last - symoffset] & 1)) last++;
  return last + 1;
}

int look_in(struct dl_phdr_info* info, size_t, void* data) {
  auto* q = static_cast<Query*>(data);
  const uintptr_t base = info->dlpi_addr;
  bool inside = false;
  const ElfW(Dyn)* dyn = nullptr;
  for (int i = 0; i < info->dlpi_phnum; i++) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    if (ph.p_type == PT_LOAD && q->addr - (base + ph.p_vaddr) < ph.p_memsz) inside = true;
    if (ph.p_type == PT_DYNAMIC) dyn = reinterpret_cast<const ElfW(Dyn)*>(base + ph.p_vaddr);
  }
  if (!inside) return 0;
  if (!dyn) return 1;
  uintptr_t symtab = 0, hash = 0, gnu_hash = 0;
  for (; dyn->d_tag != DT_NULL; dyn++) {
    if (dyn->d_tag == DT_SYMTAB) symtab = dyn_address(base, dyn->d_un.d_ptr);
    else if (dyn->d_tag == DT_HASH) hash = dyn_address(base, dyn->d_un.d_ptr);
    else if (dyn->d_tag == DT_GNU_HASH) gnu_hash = dyn_address(base, dyn->d_un.d_ptr);
  }
  if (!symtab) return 1;
  const uint32_t n = symbol_count(hash, gnu_hash);
  const auto* syms = reinterpret_cast<const ElfW(Sym)*>(symtab);
  for (uint32_t i = 1; i < n; i++) {
    const ElfW(Sym)& s = syms[i];
    if (s.st_shndx == SHN_UNDEF || s.st_size == 0 || ELF64_ST_TYPE(s.st_info) != STT_FUNC) continue;
    if (base + s.st_value == q->addr) {
      q->found = CodeRange{q->addr, q->addr + s.st_size};
      break;
    }
  }
  return 1;
}

}  // namespace

CodeRange function_range(const void* fn) {
  Query q{reinterpret_cast<uintptr_t>(fn), {}};
  if (fn) dl_iterate_phdr(look_in, &q);
  return q.found;
}

}  // namespace allocscope
