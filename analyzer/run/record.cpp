#include "run/record.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <set>
#include <stdexcept>

#include "run/allocator_lookup.h"
#include "run/child_process.h"
#include "run/lock_test.h"
#include "run/program_check.h"
#include "profile/profile.h"
#include "run/shim_lookup.h"
#include "util/output_file.h"
#include "util/units.h"
#include "util/usage_error.h"

extern char** environ;

namespace allocscope {

namespace fs = std::filesystem;

namespace {

constexpr std::string_view kEnvPrefixesToReplace[] = {"LD_PRELOAD=", "ALLOCSCOPE_OUTPUT=", "ALLOCSCOPE_ROOT_PID="};

void check_preloadable_path(const fs::path& path, const char* what) {
  if (path.string().find_first_of(": \t\n") != std::string::npos) {
    throw std::runtime_error(fmt::format(
        "the {} path '{}' contains a ':' or a blank, which LD_PRELOAD cannot express", what, path.string()));
  }
}

// Names in `dir` that begin with `prefix`.
std::set<std::string> names_with_prefix(const fs::path& dir, const std::string& prefix) {
  std::set<std::string> names;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    std::string name = it->path().filename().string();
    if (name.starts_with(prefix)) names.insert(std::move(name));
  }
  return names;
}

// "<pid>" or "<pid>.<n>": the suffixes the shim gives the profiles of other processes.
bool is_child_profile_suffix(std::string_view suffix) {
  const size_t dot = suffix.find('.');
  auto digits = [](std::string_view s) {
    return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
  };
  if (dot == std::string_view::npos) return digits(suffix);
  return digits(suffix.substr(0, dot)) && digits(suffix.substr(dot + 1));
}

// Natural order: file.12 before file.100, file.12.2 before file.12.10.
bool natural_less(const std::string& a, const std::string& b) { return strverscmp(a.c_str(), b.c_str()) < 0; }

// Where the profiles go: the root file is `shown` (as the user will read it) and `absolute`.
struct OutputPlan {
  fs::path dir;                 // absolute directory of the profiles
  std::optional<fs::path> given;  // -o, absolute
  PidTemplate default_name;     // without -o: file name, completed with the child's pid
  std::string shown_prefix;     // how to display paths in that directory

  fs::path root_file(pid_t pid) const { return given ? *given : dir / default_name.with_pid(pid); }
  std::string shown(const std::string& file_name) const { return shown_prefix + file_name; }
};

OutputPlan plan_output(const RecordOptions& options) {
  OutputPlan plan;
  if (options.output) {
    const fs::path absolute = fs::absolute(*options.output).lexically_normal();
    std::error_code ec;
    if (absolute.filename().empty()) throw UsageError(fmt::format("record: -o {}: not a file name", options.output->string()));
    refuse_overwrite(*options.output, options.force);
    // --force: the shim never writes over a file (it would pick FILE.<pid>), so the old one goes now.
    if (fs::exists(fs::symlink_status(absolute, ec)) && !fs::remove(absolute, ec)) {
      throw std::runtime_error(fmt::format("cannot replace {}: {}", options.output->string(), ec.message()));
    }
    if (!fs::is_directory(absolute.parent_path(), ec)) {
      throw std::runtime_error(fmt::format("{}: directory does not exist", absolute.parent_path().string()));
    }
    plan.given = absolute;
    plan.dir = absolute.parent_path();
    const fs::path shown_dir = options.output->parent_path();
    plan.shown_prefix = shown_dir.empty() ? "" : (shown_dir / "").string();
  } else {
    plan.dir = fs::current_path();
    const std::string base = fs::path(options.command.front()).filename().string();
    plan.default_name = {fmt::format("allocscope.{}.", base), ".asp"};
  }
  return plan;
}

// The environment of the child: ours, with LD_PRELOAD, the output and every setting replaced.
std::vector<std::string> child_environment(const std::string& preload,
                                           const std::vector<std::string>& settings,
                                           const std::optional<fs::path>& output) {
  std::vector<std::string> env;
  auto replaced_by_setting = [&](std::string_view text) {
    return std::any_of(settings.begin(), settings.end(), [&](const std::string& setting) {
      return text.starts_with(setting.substr(0, setting.find('=') + 1));
    });
  };
  for (char** entry = environ; *entry; ++entry) {
    const std::string_view text(*entry);
    const bool replaced = std::any_of(std::begin(kEnvPrefixesToReplace), std::end(kEnvPrefixesToReplace),
                                      [&](std::string_view p) { return text.starts_with(p); });
    if (replaced || replaced_by_setting(text)) continue;
    env.emplace_back(text);
  }
  env.push_back("LD_PRELOAD=" + preload);
  env.insert(env.end(), settings.begin(), settings.end());
  if (output) env.push_back("ALLOCSCOPE_OUTPUT=" + output->string());
  return env;
}

// The shim's settings for these options (docs/recording.md).
std::vector<std::string> shim_settings(const RecordOptions& options) {
  std::vector<std::string> settings;
  if (options.sample_every) settings.push_back(fmt::format("ALLOCSCOPE_SAMPLE={}", *options.sample_every));
  if (options.trace) settings.push_back("ALLOCSCOPE_TRACE=1");
  if (options.stacks_every) settings.push_back(fmt::format("ALLOCSCOPE_STACKS={}", *options.stacks_every));
  if (options.locks) settings.push_back("ALLOCSCOPE_LOCKS=1");
  return settings;
}

// The profiles of the other processes CMD started: <root>.<pid>[.<n>], new since `before`.
std::vector<std::string> other_profile_names(const OutputPlan& plan, pid_t pid, const std::set<std::string>& before) {
  const std::string root_name = plan.root_file(pid).filename().string();
  std::vector<std::string> others;
  for (const auto& name : names_with_prefix(plan.dir, root_name + ".")) {
    if (!before.contains(name) && is_child_profile_suffix(std::string_view(name).substr(root_name.size() + 1))) {
      others.push_back(name);
    }
  }
  std::sort(others.begin(), others.end(), natural_less);
  return others;
}

// What one profile holds, for the summary of a run that wrote several: its program (the file name
// of the image) and its allocator calls.
struct ProfileGist {
  std::string program;
  uint64_t calls = 0;
  uint64_t threads = 0;
  bool read = false;
};

ProfileGist gist_of(const fs::path& path) {
  ProfileGist g;
  try {
    LoadOptions quiet;
    quiet.warn = nullptr;
    const Profile p = load_profile(path, quiet);
    if (p.process) g.program = fs::path(p.process->exe).filename().string();
    for (const auto& t : p.threads) g.calls += t.total().calls;
    g.threads = p.threads_seen();
    g.read = true;
  } catch (const std::exception&) {
    // A profile that cannot be read is left out of the comparison (report says why).
  }
  return g;
}

// The profiles' names, the first few and the last when there are many.
std::string name_list(const OutputPlan& plan, const std::vector<fs::path>& paths) {
  constexpr size_t kShownAll = 8, kShownFirst = 3;
  std::string list;
  for (size_t i = 0; i < paths.size(); ++i) {
    if (paths.size() > kShownAll && i >= kShownFirst && i + 1 < paths.size()) {
      if (i == kShownFirst) list += ", …";
      continue;
    }
    list += (list.empty() ? "" : ", ") + plan.shown(paths[i].filename().string());
  }
  return list;
}

// A run that wrote several profiles (a wrapper that execs the program, a program that forks or
// runs others): which one made the most allocator calls, when it is not the root — with a wrapper
// (a shell script, env, a version manager's shim) the root profile is the wrapper's.
std::string busiest_note(const OutputPlan& plan, const RecordedRun& run) {
  constexpr size_t kMostRead = 256;  // more profiles than this: their summary alone would be slow
  if (run.other_profiles.empty() || run.other_profiles.size() > kMostRead) return "";
  const ProfileGist root = run.profile_written ? gist_of(run.profile) : ProfileGist{};
  const fs::path* best = nullptr;
  ProfileGist best_gist = root;
  for (const auto& path : run.other_profiles) {
    const ProfileGist g = gist_of(path);
    if (g.read && g.calls > best_gist.calls) {
      best = &path;
      best_gist = g;
    }
  }
  if (!best) return "";
  const std::string name = plan.shown(best->filename().string());
  const auto who = [](const ProfileGist& g) { return g.program.empty() ? std::string("?") : g.program; };
  return fmt::format("; the most allocator calls are in {} ({}, {} calls in {} thread{}{}): allocscope report {}", name,
                     who(best_gist), group_digits(best_gist.calls), best_gist.threads,
                     best_gist.threads == 1 ? "" : "s",
                     root.read ? fmt::format("; {} is {}'s, {} calls", plan.shown(run.profile.filename().string()),
                                             who(root), group_digits(root.calls))
                               : "",
                     name);
}

void report_profiles(const OutputPlan& plan, const RecordedRun& run) {
  const std::string more = name_list(plan, run.other_profiles);
  const size_t others = run.other_profiles.size();
  const std::string root_name = plan.shown(run.profile.filename().string());
  if (run.profile_written) {
    fmt::print(stderr, "allocscope: profile written to {}{}{}\n", root_name,
               others == 0 ? "" : fmt::format(" (and {} more: {})", others, more), busiest_note(plan, run));
    return;
  }
  fmt::print(stderr,
             "allocscope: no profile was written to {} (the program may never have called the allocator, be "
             "setuid, or have become a statically linked program by exec; or the shim could not create the "
             "file){}{}\n",
             root_name, others == 0 ? "" : fmt::format("; {} other profiles: {}", others, more), busiest_note(plan, run));
}

struct Recording {
  OutputPlan plan;
  RecordedRun run;
};

Recording record_with_plan(const RecordOptions& options) {
  const std::string& command = options.command.front();
  const fs::path shim = find_shim();
  const AllocatorChoice allocator = options.allocator ? find_allocator(*options.allocator) : AllocatorChoice{};
  const fs::path program = options.program ? *options.program : observable_program(command);
  if (options.program) check_observable(command, program);
  Recording recording{plan_output(options), {}};
  const OutputPlan& plan = recording.plan;

  ChildSpec spec;
  spec.program = program;
  spec.argv = options.command;
  spec.env = child_environment(preload_list(shim, allocator.library, std::getenv("LD_PRELOAD")),
                               shim_settings(options), plan.given);
  spec.pid_env.push_back({"ALLOCSCOPE_ROOT_PID=", ""});
  if (!plan.given) {
    const std::string dir = (plan.dir / "").string();
    spec.pid_env.push_back({"ALLOCSCOPE_OUTPUT=" + dir + plan.default_name.prefix, plan.default_name.suffix});
    spec.fresh_path = PidTemplate{dir + plan.default_name.prefix, plan.default_name.suffix};
  }
  spec.output = options.command_output;

  const std::string root_prefix = plan.given ? plan.given->filename().string() : plan.default_name.prefix;
  const std::set<std::string> before = names_with_prefix(plan.dir, root_prefix);
  RecordedRun& run = recording.run;
  run.child = run_child(spec);

  run.profile = plan.root_file(run.child.pid);
  if (run.child.fresh_path_existed) {
    throw std::runtime_error(
        fmt::format("{} already exists; not overwriting it", plan.shown(run.profile.filename().string())));
  }
  if (run.child.exec_errno != 0) return recording;
  std::error_code ec;
  run.profile_written = fs::exists(run.profile, ec);
  for (const auto& name : other_profile_names(plan, run.child.pid, before)) run.other_profiles.push_back(plan.dir / name);
  if (!options.no_lock_test) {
    std::vector<fs::path> profiles = run.other_profiles;
    if (run.profile_written) profiles.insert(profiles.begin(), run.profile);
    add_lock_tests(profiles, spec.env, shim);
  }
  return recording;
}

}  // namespace

void check_observable(const std::string& command, const fs::path& program) {
  if (const PreloadCheck check = check_preloadable(program); !check.ok) {
    const std::string via = check.elf == program ? "" : fmt::format(" (run by {})", check.elf.string());
    throw std::runtime_error(fmt::format("{}{} {}", command, via, check.problem));
  }
}

fs::path observable_program(const std::string& command) {
  const auto program = resolve_command(command);
  if (!program) throw CommandNotFound(fmt::format("{}: command not found", command));
  check_observable(command, *program);
  return *program;
}

std::string preload_list(const fs::path& shim, const std::optional<fs::path>& allocator, const char* previous) {
  check_preloadable_path(shim, "shim");
  std::string list = shim.string();
  if (allocator) {
    check_preloadable_path(*allocator, "allocator");
    list += ":" + allocator->string();
  }
  if (previous && *previous) list += std::string(":") + previous;
  return list;
}

RecordedRun record_program(const RecordOptions& options) { return record_with_plan(options).run; }

int record_and_report(const RecordOptions& options) {
  const std::string& command = options.command.front();
  try {
    const Recording recording = record_with_plan(options);
    const RecordedRun& run = recording.run;
    if (run.child.exec_errno != 0) {
      fmt::print(stderr, "allocscope: cannot execute {}: {}\n", command, std::strerror(run.child.exec_errno));
    } else {
      report_profiles(recording.plan, run);
    }
    return run.child.status;
  } catch (const CommandNotFound& error) {
    fmt::print(stderr, "allocscope: {}\n", error.what());
    return 127;
  }
}

}  // namespace allocscope
