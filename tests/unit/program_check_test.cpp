// Command resolution and the "can LD_PRELOAD observe it" check (analyzer/run/program_check.h).
#include "run/program_check.h"

#include <elf.h>
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>

#include "temp_dir.h"

namespace allocscope {
namespace {

namespace fs = std::filesystem;

void write_file(const fs::path& path, const std::string& content, bool executable = true) {
  std::ofstream(path, std::ios::binary) << content;
  if (executable) fs::permissions(path, fs::perms::owner_all, fs::perm_options::add);
}

// A minimal native ELF executable header with one PT_LOAD and, optionally, a PT_INTERP.
std::string fake_elf(bool with_interp, uint16_t machine = EM_X86_64) {
  Elf64_Ehdr eh{};
  std::memcpy(eh.e_ident, ELFMAG, SELFMAG);
  eh.e_ident[EI_CLASS] = ELFCLASS64;
  eh.e_ident[EI_DATA] = ELFDATA2LSB;
  eh.e_ident[EI_VERSION] = EV_CURRENT;
  eh.e_type = ET_EXEC;
  eh.e_machine = machine;
  eh.e_version = EV_CURRENT;
  eh.e_phoff = sizeof eh;
  eh.e_ehsize = sizeof eh;
  eh.e_phentsize = sizeof(Elf64_Phdr);
  eh.e_phnum = with_interp ? 2 : 1;
  const std::string interp = "/lib64/ld-linux-x86-64.so.2";
  Elf64_Phdr load{};
  load.p_type = PT_LOAD;
  Elf64_Phdr interp_ph{};
  interp_ph.p_type = PT_INTERP;
  interp_ph.p_offset = sizeof eh + 2 * sizeof(Elf64_Phdr);
  interp_ph.p_filesz = interp.size() + 1;
  std::string out(reinterpret_cast<const char*>(&eh), sizeof eh);
  if (with_interp) out.append(reinterpret_cast<const char*>(&interp_ph), sizeof interp_ph);
  out.append(reinterpret_cast<const char*>(&load), sizeof load);
  if (with_interp) out.append(interp.c_str(), interp.size() + 1);
  return out;
}

#if defined(__x86_64__)
constexpr uint16_t kOtherMachine = EM_AARCH64;
#else
constexpr uint16_t kOtherMachine = EM_X86_64;
#endif

TEST(ProgramCheck, TheSystemShellIsDynamic) {
  const ExecutableInfo info = inspect_executable("/bin/sh");
  EXPECT_EQ(info.kind, ExecutableInfo::Kind::DynamicElf);
  EXPECT_TRUE(info.native);
  EXPECT_FALSE(info.interpreter.empty());
  EXPECT_TRUE(check_preloadable("/bin/sh").ok);
}

TEST(ProgramCheck, FakeElfsAreClassifiedByTheirInterpreter) {
  test::TempDir dir;
#if defined(__x86_64__)
  write_file(dir.file("dynamic"), fake_elf(true));
  write_file(dir.file("static"), fake_elf(false));
  EXPECT_EQ(inspect_executable(dir.file("dynamic")).interpreter, "/lib64/ld-linux-x86-64.so.2");
  EXPECT_EQ(inspect_executable(dir.file("static")).kind, ExecutableInfo::Kind::StaticElf);
  EXPECT_TRUE(check_preloadable(dir.file("dynamic")).ok);
  const PreloadCheck check = check_preloadable(dir.file("static"));
  EXPECT_FALSE(check.ok);
  EXPECT_EQ(check.problem, "is statically linked: LD_PRELOAD cannot observe it");
#endif
  write_file(dir.file("foreign"), fake_elf(true, kOtherMachine));
  EXPECT_FALSE(inspect_executable(dir.file("foreign")).native);
  EXPECT_FALSE(check_preloadable(dir.file("foreign")).ok);
}

TEST(ProgramCheck, ScriptsAreJudgedByTheirInterpreter) {
  test::TempDir dir;
  write_file(dir.file("static"), fake_elf(false));
  write_file(dir.file("good.sh"), "#!/bin/sh -e\necho hi\n");
  write_file(dir.file("bad.sh"), "#! " + dir.file("static").string() + "\n");
  write_file(dir.file("nested.sh"), "#!" + dir.file("bad.sh").string() + "\n");
  EXPECT_EQ(inspect_executable(dir.file("good.sh")).kind, ExecutableInfo::Kind::Script);
  EXPECT_EQ(inspect_executable(dir.file("good.sh")).interpreter, "/bin/sh");
  const PreloadCheck good = check_preloadable(dir.file("good.sh"));
  EXPECT_TRUE(good.ok);
  EXPECT_EQ(good.elf, "/bin/sh");
  const PreloadCheck nested = check_preloadable(dir.file("nested.sh"));
  EXPECT_FALSE(nested.ok);
  EXPECT_EQ(nested.elf, dir.file("static"));
}

TEST(ProgramCheck, FilesThatAreNeitherElfNorScriptRunUnderTheShell) {
  test::TempDir dir;
  write_file(dir.file("plain"), "echo no shebang\n");
  EXPECT_EQ(inspect_executable(dir.file("plain")).kind, ExecutableInfo::Kind::Other);
  const PreloadCheck check = check_preloadable(dir.file("plain"));
  EXPECT_TRUE(check.ok);
  EXPECT_EQ(check.elf, "/bin/sh");
}

TEST(ResolveCommand, SearchesPathLikeExecvp) {
  const auto sh = resolve_command("sh");
  ASSERT_TRUE(sh);
  EXPECT_TRUE(fs::exists(*sh));
  EXPECT_FALSE(resolve_command("surely-no-such-command-exists-here"));
  EXPECT_FALSE(resolve_command(""));
}

TEST(ResolveCommand, PathsWithASlashAreTakenAsGiven) {
  test::TempDir dir;
  write_file(dir.file("tool"), "#!/bin/sh\n");
  EXPECT_EQ(resolve_command(dir.file("tool").string()), dir.file("tool"));
  EXPECT_FALSE(resolve_command(dir.file("missing").string()));
}

TEST(ResolveCommand, SkipsFilesThatAreNotExecutable) {
  test::TempDir dir;
  fs::create_directories(dir.file("a"));
  fs::create_directories(dir.file("b"));
  write_file(dir.file("a/tool"), "#!/bin/sh\n", false);
  fs::permissions(dir.file("a/tool"), fs::perms::owner_read | fs::perms::owner_write);
  write_file(dir.file("b/tool"), "#!/bin/sh\n");
  const std::string saved = std::getenv("PATH") ? std::getenv("PATH") : "";
  setenv("PATH", (dir.file("a").string() + ":" + dir.file("b").string()).c_str(), 1);
  const auto found = resolve_command("tool");
  setenv("PATH", saved.c_str(), 1);
  EXPECT_EQ(found, dir.file("b/tool"));
}

}  // namespace
}  // namespace allocscope
