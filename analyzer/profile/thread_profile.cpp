#include "profile/thread_profile.h"


namespace allocscope {

OpTable ThreadProfile::totals_by_op() const {
  OpTable table{};
  add_cells_to(table, cells);
  return table;
}

Counters ThreadProfile::total() const {
  Counters sum;
  for (const auto& [key, cell] : cells) sum.add(cell.counters);
  return sum;
}

}  // namespace allocscope
