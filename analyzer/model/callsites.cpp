#include "model/callsites.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

namespace allocscope {

namespace {

std::string base_name(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

bool same_file(const std::string& a, const std::string& b) {
  if (a.empty() || b.empty()) return false;
  if (a == b) return true;
  std::error_code ec;
  if (std::filesystem::equivalent(a, b, ec) && !ec) return true;
  return base_name(a) == base_name(b);
}

bool is_cxx_wrapper(const std::string& function) {
  return function.starts_with("operator new") || function.starts_with("operator delete");
}

}  // namespace

FrameFilter::FrameFilter(const Profile& profile, Symbolizer& symbolizer) : symbolizer_(symbolizer) {
  const std::string allocator = profile.process ? profile.process->allocator : "";
  const size_t n = symbolizer.modules().modules().size();
  for (size_t i = 0; i < n; ++i) {
    const std::string path = symbolizer.module_path(static_cast<int>(i));
    shim_module_.push_back(base_name(path).starts_with("liballocscope"));
    allocator_module_.push_back(same_file(path, allocator));
  }
}

bool FrameFilter::in_shim(const FrameInfo& f) const {
  return f.module >= 0 && shim_module_[static_cast<size_t>(f.module)];
}

bool FrameFilter::in_allocator(const FrameInfo& f) const {
  if (f.module >= 0 && allocator_module_[static_cast<size_t>(f.module)]) return true;
  return is_cxx_wrapper(f.function);
}

std::optional<size_t> FrameFilter::call_site(const Stack& stack) {
  for (size_t i = 0; i < stack.frames.size(); ++i) {
    const FrameInfo& f = symbolizer_.frame(stack.frames[i]);
    if (!in_shim(f) && !in_allocator(f)) return i;
  }
  return std::nullopt;
}

std::vector<const FrameInfo*> FrameFilter::program_frames(const Stack& stack) {
  std::vector<const FrameInfo*> out;
  for (const uint64_t address : stack.frames) {
    const FrameInfo& f = symbolizer_.frame(address);
    if (!in_shim(f)) out.push_back(&f);
  }
  return out;
}

namespace {

struct Site {
  std::string name, location, module;
  std::vector<std::string> chain;
  uint32_t inlined = 0;
};

// The call site of every stack of the profile, by key ("name\x1flocation\x1fmodule"), and the
// key of each stack's site (by stack index).
std::vector<std::string> stack_sites(const Profile& profile, Symbolizer& symbolizer, FrameFilter& filter,
                                     std::map<std::string, Site>& sites) {
  std::vector<std::string> site_of_stack(profile.stacks.stacks().size());
  for (size_t i = 0; i < profile.stacks.stacks().size(); ++i) {
    const Stack& stack = profile.stacks.stack(static_cast<StackIndex>(i));
    const auto at = filter.call_site(stack);
    if (!at) {
      site_of_stack[i] = "[allocator]";
      sites.try_emplace("[allocator]", Site{"[allocator]", "", "", {"[allocator]"}});
      continue;
    }
    const FrameInfo& f = symbolizer.frame(stack.frames[*at]);
    Site site;
    site.name = f.innermost();
    site.location = f.location();
    site.module = f.module_name;
    for (size_t k = 0; k < f.source.size(); ++k) site.chain.push_back(f.source[k].function);
    if (site.chain.empty()) site.chain.push_back(f.name());
    site.inlined = static_cast<uint32_t>(site.chain.size() - 1);
    for (size_t up = *at + 1; up < stack.frames.size() && up <= *at + 2; ++up) {
      site.chain.push_back(symbolizer.frame(stack.frames[up]).name());
    }
    const std::string key = fmt::format("{}\x1f{}\x1f{}", site.name, site.location, site.module);
    site_of_stack[i] = key;
    sites.try_emplace(key, std::move(site));
  }
  return site_of_stack;
}

// Per class in size order (unknown sizes last), costliest first, `top` each.
std::vector<CallSiteRow> top_rows(std::map<std::pair<uint32_t, std::string>, CallSiteRow>& rows, size_t top) {
  std::vector<CallSiteRow> out;
  std::map<uint32_t, std::vector<CallSiteRow>> by_class;
  for (auto& [key, row] : rows) {
    if (row.calls == 0 && row.leaked_blocks == 0) continue;
    by_class[key.first].push_back(std::move(row));
  }
  for (auto& [cls, list] : by_class) {
    std::stable_sort(list.begin(), list.end(), [](const CallSiteRow& a, const CallSiteRow& b) {
      if (a.time_ns != b.time_ns) return a.time_ns > b.time_ns;
      if (a.calls != b.calls) return a.calls > b.calls;
      return a.leaked_bytes > b.leaked_bytes;
    });
    if (top && list.size() > top) list.resize(top);
    for (auto& row : list) out.push_back(std::move(row));
  }
  return out;
}

}  // namespace

CallSiteReport callsite_report(const StackCostSource& src, const CallSiteOptions& options) {
  const Profile& profile = src.profile;
  CallSiteReport r;
  r.file = profile.file;
  if (profile.process) r.program = profile.process->exe;
  r.class_table = std::string(src.table->name());
  r.trace = src.trace;
  r.estimated = src.estimated;
  r.allocator_time_ns = src.allocator_time_ns;
  r.calls = src.calls;
  r.stacks = profile.stacks.stacks().size();

  const auto symbolizer = stack_symbolizer(profile, options.source_lines);
  FrameFilter filter(profile, *symbolizer);

  std::map<std::string, Site> sites;  // by key
  const std::vector<std::string> site_of_stack = stack_sites(profile, *symbolizer, filter, sites);
  const auto classes = src.table->classes();
  std::map<std::pair<uint32_t, std::string>, CallSiteRow> rows;  // (class, site)
  std::set<std::string> used_sites;
  for (const auto& [key, cost] : src.costs) {
    const auto ns = static_cast<uint64_t>(std::llround(cost_ns(src, cost)));
    if (key.stack == kNoStack) {
      r.calls_without_stack += cost.calls;
      r.time_without_stack_ns += ns;
      continue;
    }
    r.calls_with_stack += cost.calls;
    r.time_with_stack_ns += ns;
    const std::string& site_key = site_of_stack[key.stack];
    used_sites.insert(site_key);
    CallSiteRow& row = rows[{key.cls, site_key}];
    if (row.site.empty()) {
      const Site& site = sites.at(site_key);
      row.site = site.name;
      row.location = site.location;
      row.module = site.module;
      row.chain = site.chain;
      row.inlined = site.inlined;
      row.size_known = key.cls != kNoClass;
      if (row.size_known) {
        row.lo = classes[key.cls].lo;
        row.hi = classes[key.cls].hi;
        row.label = std::string(classes[key.cls].label);
      }
    }
    row.calls += cost.calls;
    row.time_ns += ns;
    row.bytes += cost.bytes;
    row.leaked_blocks += cost.leaked;
    row.leaked_bytes += cost.leaked_bytes;
    if (key.op < kOpSlots) row.calls_by_op[key.op] += cost.calls;
  }
  r.sites = used_sites.size();

  r.rows = top_rows(rows, options.top);
  return r;
}

CallSiteReport analyze_callsites(const std::filesystem::path& path, const CallSiteOptions& options) {
  return callsite_report(load_estimated_stack_costs(path), options);
}

std::unique_ptr<Symbolizer> stack_symbolizer(const Profile& profile, bool source_lines) {
  SymbolizeOptions so;
  if (profile.process) so.exe = profile.process->exe;
  so.source_lines = source_lines;
  auto symbolizer = std::make_unique<Symbolizer>(profile.modules, so);
  std::vector<uint64_t> addresses;
  for (const Stack& s : profile.stacks.stacks()) addresses.insert(addresses.end(), s.frames.begin(), s.frames.end());
  std::sort(addresses.begin(), addresses.end());
  addresses.erase(std::unique(addresses.begin(), addresses.end()), addresses.end());
  symbolizer->prepare(addresses);
  return symbolizer;
}

}  // namespace allocscope
