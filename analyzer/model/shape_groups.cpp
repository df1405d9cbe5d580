#include "model/shape_groups.h"

#include <optional>

namespace allocscope {

LifetimeGroup lifetime_group(LifetimeBand band) {
  switch (band) {
    case LifetimeBand::Under1us:
    case LifetimeBand::Under10us: return LifetimeGroup::Short;
    case LifetimeBand::Under100us:
    case LifetimeBand::Under1ms:
    case LifetimeBand::Under1s: return LifetimeGroup::Medium;
    case LifetimeBand::AtLeast1s: return LifetimeGroup::Long;
    case LifetimeBand::Leaked: return LifetimeGroup::Leaked;
  }
  return LifetimeGroup::Leaked;
}

const char* lifetime_group_name(LifetimeGroup group) {
  switch (group) {
    case LifetimeGroup::Short: return "short";
    case LifetimeGroup::Medium: return "medium";
    case LifetimeGroup::Long: return "long";
    case LifetimeGroup::Leaked: return "leaked";
  }
  return "?";
}

std::map<ShapeCell, uint32_t> class_runs(const std::set<ShapeCell>& cells) {
  std::set<uint32_t> occupied;
  std::set<ShapeGroupKey> keys;
  for (const auto& [key, cls] : cells) {
    occupied.insert(cls);
    keys.insert(key);
  }
  std::map<ShapeCell, uint32_t> first;
  for (const ShapeGroupKey& key : keys) {
    std::optional<uint32_t> run;
    for (const uint32_t cls : occupied) {
      if (!cells.contains({key, cls})) {
        run.reset();
        continue;
      }
      if (!run) run = cls;
      first[{key, cls}] = *run;
    }
  }
  return first;
}

}  // namespace allocscope
