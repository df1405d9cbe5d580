// shim/loaded_object.cpp — see loaded_object.h.
#include "loaded_object.h"

#include <elf.h>
#include <link.h>

namespace allocscope {

namespace {

// Whether one of the object's loadable segments holds `addr`; `lowest`: where its lowest begins.
bool holds(const dl_phdr_info& info, uintptr_t addr, uintptr_t* lowest) {
  bool inside = false;
  uintptr_t low = UINTPTR_MAX;
  for (int i = 0; i < info.dlpi_phnum; i++) {
    const ElfW(Phdr)& ph = info.dlpi_phdr[i];
    if (ph.p_type != PT_LOAD) continue;
    const uintptr_t start = info.dlpi_addr + ph.p_vaddr;
    if (addr - start < ph.p_memsz) inside = true;
    if (start < low) low = start;
  }
  if (lowest) *lowest = low & ~uintptr_t{4095};
  return inside;
}

struct ObjectQuery {
  uintptr_t addr;
  uintptr_t base;
};

int find_object(struct dl_phdr_info* info, size_t, void* data) {
  auto* q = static_cast<ObjectQuery*>(data);
  return holds(*info, q->addr, &q->base) ? 1 : 0;
}

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

struct RangeQuery {
  uintptr_t addr;
  CodeRange found;
};

// The exported function at q->addr in the object that holds it: its symbol's size.
int find_range(struct dl_phdr_info* info, size_t, void* data) {
  auto* q = static_cast<RangeQuery*>(data);
  if (!holds(*info, q->addr, nullptr)) return 0;
  const uintptr_t base = info->dlpi_addr;
  const ElfW(Dyn)* dyn = nullptr;
  for (int i = 0; i < info->dlpi_phnum; i++) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    if (ph.p_type == PT_DYNAMIC) dyn = reinterpret_cast<const ElfW(Dyn)*>(base + ph.p_vaddr);
  }
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

uintptr_t object_holding(const void* addr) {
  ObjectQuery q{reinterpret_cast<uintptr_t>(addr), 0};
  if (addr) dl_iterate_phdr(find_object, &q);
  return q.base;
}

CodeRange function_range(const void* fn) {
  RangeQuery q{reinterpret_cast<uintptr_t>(fn), {}};
  if (fn) dl_iterate_phdr(find_range, &q);
  return q.found;
}

}  // namespace allocscope
