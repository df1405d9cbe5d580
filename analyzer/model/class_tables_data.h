// class_tables_data.h — the allocators' size-class tables, as data (class_tables.h says what a
// table is; class_tables.cpp looks them up).  Private to model/.
//
// Every table has the columns of SizeClass:
//
//   lo, hi     requests (bytes asked of malloc) that the allocator serves from this class
//   slot_size  the block serving a request of size hi, in-band header included; 0 = sized per
//              request (page runs, mmap): no fixed slot
//   label      the allocator's own name for the class where it has one
//
// Rows are contiguous from 0 to 2^64-1 (tested).  Behaviour that depends on run-time state
// (thresholds that move, classes borrowed while a class is empty) is noted in each legend; the
// rows give the default, steady-state mapping.  The unit tests re-derive every table from the
// allocator's own algorithm, and compare it with malloc_usable_size of the installed library
// where that reports the slot (glibc, jemalloc, tcmalloc, mimalloc).
#pragma once
#include <cstdint>
#include <limits>

#include "model/class_tables.h"

namespace allocscope::class_data {

constexpr uint64_t kMax = std::numeric_limits<uint64_t>::max();

// The C libraries' allocators (class_tables_libc.cpp).
extern const ClassTable kMuslTable;
extern const ClassTable kGlibcTable;
// The replacement allocators (class_tables_replacements.cpp).
extern const ClassTable kJemallocTable;
extern const ClassTable kTcmallocTable;
extern const ClassTable kMimallocTable;
extern const ClassTable kScudoTable;

}  // namespace allocscope::class_data
