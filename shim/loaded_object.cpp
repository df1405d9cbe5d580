// shim/loaded_object.cpp — see loaded_object.h.
#include "loaded_object.h"

#include <link.h>

#include <cstdint>

namespace allocscope {

namespace {

struct Query {
  uintptr_t addr;
  uintptr_t base;
};

int look_in(struct dl_phdr_info* info, size_t, void* data) {
  auto* q = static_cast<Query*>(data);
  bool inside = false;
  uintptr_t lowest = UINTPTR_MAX;
  for (int i = 0; i < info->dlpi_phnum; i++) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    if (ph.p_type != PT_LOAD) continue;
    const uintptr_t start = info->dlpi_addr + ph.p_vaddr;
    if (q->addr - start < ph.p_memsz) inside = true;
    if (start < lowest) lowest = start & ~uintptr_t{4095};
  }
  if (!inside) return 0;
  q->base = lowest;
  return 1;
}

}  // namespace

uintptr_t object_holding(const void* addr) {
  Query q{reinterpret_cast<uintptr_t>(addr), 0};
  if (addr) dl_iterate_phdr(look_in, &q);
  return q.base;
}

}  // namespace allocscope
