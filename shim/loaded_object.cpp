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
uint32_t symbol_count(const uint32_t* hash, const uint32_t* gnu_hash) {
  if (hash) return hash[1];
  if (!gnu_hash) return 0;
  const uint32_t* h = gnu_hash;
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

// The object's dynamic symbol and string tables and its hash tables (each 0 when absent).
struct DynamicTables {
  const ElfW(Sym)* symbols = nullptr;
  const char* strings = nullptr;
  const uint32_t* hash = nullptr;
  const uint32_t* gnu_hash = nullptr;
};

DynamicTables dynamic_tables(const dl_phdr_info& info) {
  DynamicTables t;
  const uintptr_t base = info.dlpi_addr;
  const ElfW(Dyn)* dyn = nullptr;
  for (int i = 0; i < info.dlpi_phnum; i++) {
    const ElfW(Phdr)& ph = info.dlpi_phdr[i];
    if (ph.p_type == PT_DYNAMIC) dyn = reinterpret_cast<const ElfW(Dyn)*>(base + ph.p_vaddr);
  }
  if (!dyn) return t;
  for (; dyn->d_tag != DT_NULL; dyn++) {
    const uintptr_t at = dyn_address(base, dyn->d_un.d_ptr);
    if (dyn->d_tag == DT_SYMTAB) t.symbols = reinterpret_cast<const ElfW(Sym)*>(at);
    else if (dyn->d_tag == DT_STRTAB) t.strings = reinterpret_cast<const char*>(at);
    else if (dyn->d_tag == DT_HASH) t.hash = reinterpret_cast<const uint32_t*>(at);
    else if (dyn->d_tag == DT_GNU_HASH) t.gnu_hash = reinterpret_cast<const uint32_t*>(at);
  }
  return t;
}

bool same_name(const char* a, const char* b) {
  while (*a && *a == *b) a++, b++;
  return *a == *b;
}

// An entry named `name` of the object's dynamic symbol table that defines it (its section is not
// SHN_UNDEF), or null.  DT_GNU_HASH holds the defined entries only; DT_HASH, every entry.
const ElfW(Sym)* defined_symbol(const DynamicTables& t, const char* name) {
  if (!t.symbols || !t.strings) return nullptr;
  if (t.gnu_hash) {
    uint32_t h = 5381;
    for (const char* c = name; *c; c++) h = h * 33 + static_cast<unsigned char>(*c);
    const uint32_t nbuckets = t.gnu_hash[0], symoffset = t.gnu_hash[1], bloom_size = t.gnu_hash[2];
    if (nbuckets == 0) return nullptr;
    const auto* buckets = reinterpret_cast<const uint32_t*>(
        reinterpret_cast<const ElfW(Addr)*>(t.gnu_hash + 4) + bloom_size);
    const uint32_t* chain = buckets + nbuckets;
    uint32_t i = buckets[h % nbuckets];
    if (i < symoffset) return nullptr;  // an empty bucket
    for (;; i++) {
      const uint32_t c = chain[i - symoffset];
      const ElfW(Sym)& s = t.symbols[i];
      if ((c | 1) == (h | 1) && s.st_shndx != SHN_UNDEF && same_name(t.strings + s.st_name, name))
        return &s;
      if (c & 1) return nullptr;
    }
  }
  if (t.hash) {
    uint32_t h = 0;
    for (const char* c = name; *c; c++) {
      h = (h << 4) + static_cast<unsigned char>(*c);
      const uint32_t g = h & 0xf0000000u;
      if (g) h ^= g >> 24;
      h &= ~g;
    }
    const uint32_t nbuckets = t.hash[0], nchain = t.hash[1];
    if (nbuckets == 0) return nullptr;
    const uint32_t* chain = t.hash + 2 + nbuckets;
    for (uint32_t i = t.hash[2 + h % nbuckets]; i != STN_UNDEF && i < nchain; i = chain[i]) {
      const ElfW(Sym)& s = t.symbols[i];
      if (s.st_shndx != SHN_UNDEF && same_name(t.strings + s.st_name, name)) return &s;
    }
  }
  return nullptr;
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
  const DynamicTables t = dynamic_tables(*info);
  if (!t.symbols) return 1;
  const uint32_t n = symbol_count(t.hash, t.gnu_hash);
  for (uint32_t i = 1; i < n; i++) {
    const ElfW(Sym)& s = t.symbols[i];
    if (s.st_shndx == SHN_UNDEF || s.st_size == 0 || ELF64_ST_TYPE(s.st_info) != STT_FUNC) continue;
    if (base + s.st_value == q->addr) {
      q->found = CodeRange{q->addr, q->addr + s.st_size};
      break;
    }
  }
  return 1;
}

struct DefinitionQuery {
  uintptr_t addr, stop;
  const char* name;
  bool past_addr, past_stop;  // the objects holding addr, stop are behind
  uintptr_t found;
};

// In load order: the object that holds q->addr if it defines q->name, else the first object after
// it, and before the one that holds q->stop, that does.
int find_definition(struct dl_phdr_info* info, size_t, void* data) {
  auto* q = static_cast<DefinitionQuery*>(data);
  if (holds(*info, q->stop, nullptr)) {
    q->past_stop = true;
    return q->past_addr ? 1 : 0;
  }
  const bool holder = !q->past_addr && holds(*info, q->addr, nullptr);
  if (!holder && !q->past_addr) return 0;
  q->past_addr = true;
  if (const ElfW(Sym)* s = defined_symbol(dynamic_tables(*info), q->name)) {
    // The holder's: dlsym's answer (for an STT_GNU_IFUNC, the function its resolver chose).
    q->found = holder ? q->addr : info->dlpi_addr + s->st_value;
    return 1;
  }
  return q->past_stop ? 1 : 0;  // `stop` came first: no object lies between
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

const void* definition_ahead_of(const void* addr, const char* name, const void* stop) {
  DefinitionQuery q{reinterpret_cast<uintptr_t>(addr), reinterpret_cast<uintptr_t>(stop), name,
                    false, false, 0};
  if (addr) dl_iterate_phdr(find_definition, &q);
  return reinterpret_cast<const void*>(q.found);
}

}  // namespace allocscope
