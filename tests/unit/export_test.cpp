// Symbols, call sites and exports of synthetic profiles whose stacks point into real objects:
// this test program itself (symbol tables) and a fixture built with debug information (addr2line).
#include <dlfcn.h>
#include <elf.h>
#include <gtest/gtest.h>
#include <link.h>
#include <zlib.h>

#include <cstdio>
#include <fstream>
#include <sstream>

#include "allocscope/ops.h"
#include "model/callsites.h"
#include "render/callsites.h"
#include "symbols/elf_symbols.h"
#include "export/export.h"
#include "mini_json.h"
#include "symbols/symbolize.h"
#include "temp_dir.h"
#include "util/text_table.h"
#include "test_profile_writer.h"

extern "C" __attribute__((noinline, used)) int allocscope_test_alpha_site(int x) {
  asm volatile("" ::: "memory");
  return x + 1;
}
extern "C" __attribute__((noinline, used)) int allocscope_test_beta_site(int x) {
  asm volatile("" ::: "memory");
  return allocscope_test_alpha_site(x) * 2;
}

namespace allocscope {
namespace {

using test::make_record;
using test::TestProfileWriter;

constexpr unsigned kMalloc = static_cast<unsigned>(Op::Malloc);
constexpr unsigned kFree = static_cast<unsigned>(Op::Free);

// Where this program is mapped.
struct Self {
  uint64_t bias = 0, start = ~uint64_t{0}, end = 0;
};

Self self_mapping() {
  Self s;
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* data) {
        auto* self = static_cast<Self*>(data);
        if (info->dlpi_name && info->dlpi_name[0]) return 0;  // the main program has no name
        self->bias = info->dlpi_addr;
        for (int i = 0; i < info->dlpi_phnum; ++i) {
          const auto& ph = info->dlpi_phdr[i];
          if (ph.p_type != PT_LOAD) continue;
          self->start = std::min<uint64_t>(self->start, info->dlpi_addr + ph.p_vaddr);
          self->end = std::max<uint64_t>(self->end, info->dlpi_addr + ph.p_vaddr + ph.p_memsz - 1);
        }
        return 1;
      },
      &s);
  return s;
}

uint64_t address_of(int (*fn)(int)) { return reinterpret_cast<uint64_t>(fn); }

std::string self_path() { return std::filesystem::read_symlink("/proc/self/exe").string(); }

bool on_path(const std::string& program) {
  return run_capturing_stdout({"sh", "-c", "command -v " + program}).has_value();
}

std::string gunzip(const std::string& data) {
  z_stream z{};
  EXPECT_EQ(inflateInit2(&z, 15 + 16), Z_OK);
  std::string out;
  char buf[65536];
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  z.avail_in = static_cast<uInt>(data.size());
  int rc;
  do {
    z.next_out = reinterpret_cast<Bytef*>(buf);
    z.avail_out = sizeof buf;
    rc = inflate(&z, Z_NO_FLUSH);
    out.append(buf, sizeof buf - z.avail_out);
  } while (rc == Z_OK);
  inflateEnd(&z);
  EXPECT_EQ(rc, Z_STREAM_END);
  return out;
}

// A minimal protobuf reader: the (field, wire type, value) list of one message.
struct ProtoField {
  uint32_t field;
  unsigned wire;
  uint64_t number;
  std::string bytes;
};

std::vector<ProtoField> parse_proto(const std::string& data) {
  std::vector<ProtoField> out;
  size_t i = 0;
  auto varint = [&]() {
    uint64_t v = 0;
    for (unsigned shift = 0;; shift += 7) {
      if (i >= data.size() || shift > 63) throw std::runtime_error("bad varint");
      const auto b = static_cast<unsigned char>(data[i++]);
      v |= uint64_t{b & 0x7fu} << shift;
      if (!(b & 0x80)) return v;
    }
  };
  while (i < data.size()) {
    const uint64_t tag = varint();
    ProtoField f{static_cast<uint32_t>(tag >> 3), static_cast<unsigned>(tag & 7), 0, {}};
    if (f.wire == 0) {
      f.number = varint();
    } else if (f.wire == 2) {
      const uint64_t n = varint();
      if (n > data.size() - i) throw std::runtime_error("bad length");
      f.bytes = data.substr(i, n);
      i += n;
    } else {
      throw std::runtime_error("unexpected wire type");
    }
    out.push_back(std::move(f));
  }
  return out;
}

std::vector<uint64_t> packed(const std::string& bytes) {
  std::vector<uint64_t> out;
  std::string tagged;
  for (size_t i = 0; i < bytes.size();) {
    uint64_t v = 0;
    for (unsigned shift = 0;; shift += 7) {
      const auto b = static_cast<unsigned char>(bytes.at(i++));
      v |= uint64_t{b & 0x7fu} << shift;
      if (!(b & 0x80)) break;
    }
    out.push_back(v);
  }
  return out;
}

class ExportTest : public ::testing::Test {
 protected:
  // Thread 1 allocates through two stacks: shim → allocator → alpha → beta, and shim → beta.
  void SetUp() override {
    const Self self = self_mapping();
    alpha_ = address_of(allocscope_test_alpha_site);
    beta_ = address_of(allocscope_test_beta_site);
    TestProfileWriter w;
    format::ProcessInfo info{};
    info.pid = 77;
    info.libc = static_cast<uint8_t>(format::Libc::Glibc);
    w.process(info, self_path(), "unit", "/nonexistent/libc.so.6", "2.36");
    format::Calibration c = test::make_calibration(1'000'000'000, format::Clock::Monotonic);
    c.mode_flags |= format::kModeTrace | format::kModeStacks;
    w.calibration(c);
    w.modules({{self.bias, self.start, self.end, ""},
               {0x1000, 0x1000, 0x1fff, "/nonexistent/liballocscope.so"},
               {0x3000, 0x3000, 0x3fff, "/nonexistent/libc.so.6"}});
    w.trace(1, 0,
            {make_record(kMalloc, 1000, 100, 0x10, 64, 0, 1), make_record(kMalloc, 2000, 200, 0x20, 64, 0, 1),
             make_record(kMalloc, 3000, 50, 0x30, 5000, 0, 2), make_record(kFree, 4000, 30, 0x10, 0, 0, 2),
             make_record(kFree, 5000, 7, 0x20)},
            1000);
    w.stacks(1, {{1, {0x1100, 0x3100, alpha_ + 1, beta_ + 1}}, {2, {0x1100, beta_ + 1}}});
    path_ = dir_.file("e.asp");
    w.save(path_);
  }

  test::TempDir dir_;
  std::filesystem::path path_;
  uint64_t alpha_ = 0, beta_ = 0;
};

TEST_F(ExportTest, ElfSymbolsOfThisProgram) {
  const auto syms = ElfSymbols::load(self_path());
  ASSERT_TRUE(syms);
  EXPECT_TRUE(syms->from_symtab());
  const Self self = self_mapping();
  const ElfSymbol* s = syms->find(alpha_ - self.bias);
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->name, "allocscope_test_alpha_site");
  EXPECT_EQ(s->value, alpha_ - self.bias);
  EXPECT_EQ(syms->find(0), nullptr);
}

TEST_F(ExportTest, NonElfFilesHaveNoSymbols) {
  const auto junk = dir_.file("junk");
  std::ofstream(junk) << "\x7f" "ELF but not really, just text that goes on for a while........";
  EXPECT_FALSE(ElfSymbols::load(junk));
  EXPECT_FALSE(ElfSymbols::load(dir_.file("missing")));
  EXPECT_FALSE(ElfSymbols::load(dir_.path()));
}

TEST_F(ExportTest, DemanglesCxxNames) {
  EXPECT_EQ(demangle("_Znwm"), "operator new(unsigned long)");
  EXPECT_EQ(demangle("malloc"), "malloc");
  EXPECT_EQ(demangle("_Znot_valid"), "_Znot_valid");
}

TEST_F(ExportTest, CallSitesSkipTheShimAndTheAllocator) {
  CallSiteOptions o;
  o.source_lines = false;
  const CallSiteReport r = analyze_callsites(path_, o);
  EXPECT_TRUE(r.trace);
  EXPECT_EQ(r.calls, 5u);
  EXPECT_EQ(r.calls_with_stack, 4u);
  EXPECT_EQ(r.calls_without_stack, 1u);
  EXPECT_EQ(r.time_without_stack_ns, 7u);
  EXPECT_EQ(r.stacks, 2u);
  EXPECT_EQ(r.sites, 2u);
  ASSERT_EQ(r.rows.size(), 3u);
  // Class of 64 B: alpha's two mallocs (300 ns) before beta's free (30 ns); then 5000 B.
  EXPECT_EQ(r.rows[0].site, "allocscope_test_alpha_site");
  EXPECT_EQ(r.rows[0].chain, (std::vector<std::string>{"allocscope_test_alpha_site", "allocscope_test_beta_site"}));
  EXPECT_EQ(r.rows[0].calls, 2u);
  EXPECT_EQ(r.rows[0].time_ns, 300u);
  EXPECT_EQ(r.rows[0].bytes, 128u);
  EXPECT_EQ(r.rows[0].calls_by_op[kMalloc], 2u);
  EXPECT_EQ(r.rows[1].site, "allocscope_test_beta_site");
  EXPECT_EQ(r.rows[1].calls_by_op[kFree], 1u);
  EXPECT_EQ(r.rows[1].lo, r.rows[0].lo);
  EXPECT_EQ(r.rows[2].site, "allocscope_test_beta_site");
  EXPECT_EQ(r.rows[2].leaked_blocks, 1u);
  EXPECT_EQ(r.rows[2].leaked_bytes, 5000u);
  EXPECT_GT(r.rows[2].lo, r.rows[0].hi);
  const test::Json j = test::parse_json(callsites_json(r));
  EXPECT_EQ(j["callsites"].array().size(), 3u);
  EXPECT_EQ(j["callsites"].array()[0]["ops"]["malloc"].as_u64(), 2u);
  EXPECT_NE(callsites_text(r).find("allocscope_test_alpha_site ← allocscope_test_beta_site"), std::string::npos);
}

TEST_F(ExportTest, FoldedStacksOutermostFirst) {
  ExportOptions o;
  o.source_lines = false;
  const std::string folded = export_folded(load_stack_costs(path_), o);
  EXPECT_EQ(folded,
            "[no stack];free 7\n"
            "allocscope_test_beta_site;allocscope_test_alpha_site;libc.so.6+0x100;malloc 300\n"
            "allocscope_test_beta_site;free 30\n"
            "allocscope_test_beta_site;malloc 50\n");
  o.weight = ExportWeight::Calls;
  const std::string calls = export_folded(load_stack_costs(path_), o);
  EXPECT_NE(calls.find("libc.so.6+0x100;malloc 2\n"), std::string::npos) << calls;
}

TEST_F(ExportTest, PprofMessageHasSamplesLocationsAndFunctions) {
  ExportOptions o;
  o.source_lines = false;
  const std::string raw = export_pprof_raw(load_stack_costs(path_), o);
  EXPECT_EQ(gunzip(gzip_bytes(raw)), raw);
  const auto fields = parse_proto(raw);
  std::vector<std::string> strings;
  uint64_t samples = 0, calls = 0, time = 0, locations = 0, functions = 0, mappings = 0;
  int64_t default_type = -1;
  for (const ProtoField& f : fields) {
    if (f.field == 6) strings.push_back(f.bytes);
    if (f.field == 3) ++mappings;
    if (f.field == 4) ++locations;
    if (f.field == 5) ++functions;
    if (f.field == 14) default_type = static_cast<int64_t>(f.number);
    if (f.field == 2) {
      ++samples;
      for (const ProtoField& s : parse_proto(f.bytes)) {
        if (s.field == 2) {
          const auto v = packed(s.bytes);
          ASSERT_EQ(v.size(), 2u);
          calls += v[0];
          time += v[1];
        }
      }
    }
  }
  ASSERT_FALSE(strings.empty());
  EXPECT_EQ(strings[0], "");
  EXPECT_EQ(samples, 4u);
  EXPECT_EQ(calls, 5u);
  EXPECT_EQ(time, 387u);
  EXPECT_EQ(mappings, 2u);   // this program and the allocator's object; the shim's frames are left out
  EXPECT_EQ(locations, 3u + 2u);  // alpha, beta, the allocator frame; malloc and free leaves
  EXPECT_EQ(functions, 5u);
  ASSERT_GE(default_type, 0);
  EXPECT_EQ(strings.at(static_cast<size_t>(default_type)), "time");
  EXPECT_NE(std::find(strings.begin(), strings.end(), "allocscope_test_alpha_site"), strings.end());
  EXPECT_NE(std::find(strings.begin(), strings.end(), "size_class"), strings.end());
}

TEST_F(ExportTest, PprofDecodesWithProtoc) {
  if (!on_path("protoc")) GTEST_SKIP() << "protoc (protobuf-compiler) is not installed";
  const auto pb = dir_.file("p.pb");
  {
    ExportOptions o;
    o.source_lines = false;
    std::ofstream(pb, std::ios::binary) << export_pprof_raw(load_stack_costs(path_), o);
  }
  const std::string proto_dir = std::string(ALLOCSCOPE_SOURCE_DIR) + "/tests";
  const auto out = run_capturing_stdout({"sh", "-c", "protoc --proto_path=" + proto_dir +
                                                         " --decode=perftools.profiles.Profile profile.proto < " +
                                                         pb.string()});
  ASSERT_TRUE(out) << "protoc could not decode the profile";
  EXPECT_NE(out->find("string_table: \"allocscope_test_alpha_site\""), std::string::npos) << *out;
  size_t samples = 0;
  for (size_t at = 0; (at = out->find("\nsample {", at)) != std::string::npos; ++at) ++samples;
  EXPECT_EQ(samples, 4u) << *out;
}

TEST_F(ExportTest, ChromeTraceHasCallsThreadsAndTheInsideCounter) {
  const auto json = dir_.file("c.json");
  {
    std::FILE* f = std::fopen(json.c_str(), "w");
    ASSERT_NE(f, nullptr);
    ExportOptions o;
    o.source_lines = false;
    export_chrome(load_profile(path_), f, o);
    std::fclose(f);
  }
  std::stringstream text;
  text << std::ifstream(json).rdbuf();
  const test::Json j = test::parse_json(text.str());
  EXPECT_EQ(j["displayTimeUnit"].string(), "ns");
  std::vector<std::string> names;
  std::vector<uint64_t> counter;
  bool thread_named = false;
  for (const test::Json& e : j["traceEvents"].array()) {
    const std::string ph = e["ph"].string();
    if (ph == "X") {
      names.push_back(e["name"].string());
      EXPECT_EQ(e["pid"].as_u64(), 77u);
      EXPECT_EQ(e["tid"].as_u64(), 1u);
    } else if (ph == "C") {
      counter.push_back(e["args"]["threads"].as_u64());
    } else if (ph == "M" && e["name"].string() == "thread_name") {
      thread_named = true;
    }
  }
  EXPECT_EQ(names, (std::vector<std::string>{"malloc", "malloc", "malloc", "free", "free"}));
  EXPECT_EQ(counter, (std::vector<uint64_t>{1, 0, 1, 0, 1, 0, 1, 0, 1, 0}));
  EXPECT_TRUE(thread_named);
  const test::Json& first = j["traceEvents"].array()[0];
  EXPECT_EQ(first["ph"].string(), "C");  // the counter rises at the first call's start
  const test::Json& call = j["traceEvents"].array()[1];
  EXPECT_EQ(call["ph"].string(), "X");
  EXPECT_EQ(std::get<test::JsonNumber>(call["ts"].value).text, "1.000");  // µs from the process start
  EXPECT_EQ(std::get<test::JsonNumber>(call["dur"].value).text, "0.100");
  EXPECT_EQ(call["args"]["size"].as_u64(), 64u);
  EXPECT_EQ(call["args"]["site"].string(), "allocscope_test_alpha_site");
}

// The line of `text` in the fixture's source.
int fixture_line(const std::string& text) {
  std::ifstream in(std::string(ALLOCSCOPE_SOURCE_DIR) + "/tests/unit/symbolize_fixture.c");
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    if (line.find(text) != std::string::npos) return n;
  }
  return -1;
}

// The rows of a PHP run (glibc classes): wide class labels, libraries' names and leaks. In 100
// columns the chains give way to 20 characters, the objects' names to 10, then the class labels.
TEST(CallSitesText, FitsInTheReportsWidthWithLeaksAndWideClasses) {
  CallSiteReport r;
  r.trace = true;
  r.calls = r.calls_with_stack = 1126800;
  r.stacks = 52701;
  r.sites = 557;
  auto row = [](uint64_t lo, uint64_t hi, std::vector<std::string> chain, std::string module, uint64_t calls,
                uint64_t leaked) {
    CallSiteRow c;
    c.site = chain[0];
    c.chain = std::move(chain);
    c.module = std::move(module);
    c.lo = lo;
    c.hi = hi;
    c.calls = calls;
    c.time_ns = 5960000;
    c.bytes = 9751756;
    c.leaked_blocks = leaked;
    c.leaked_bytes = leaked * 40;
    return c;
  };
  r.rows.push_back(row(25, 40, {"__zend_malloc", "zend_string_alloc", "execute_ex"}, "php8.2", 277327, 2353));
  r.rows.push_back(row(10729, 12264, {"destroy_op_array", "zend_hash_destroy", "shutdown_executor"}, "php8.2", 9, 0));
  r.rows.push_back(row(10729, 12264, {"OPENSSL_LH_insert", "OBJ_NAME_add", "EVP_add_cipher"}, "libcrypto.so.3", 112, 0));
  const std::string text = callsites_body_text(r, 100);
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) EXPECT_LE(display_width(line), 100u) << line;
  EXPECT_NE(text.find("__zend_malloc ← "), std::string::npos) << text;  // the site itself is kept
  EXPECT_NE(text.find("2,353 (91.91 KiB)"), std::string::npos) << text;
  EXPECT_NE(text.find("libcrypto…"), std::string::npos) << text;
  // Without a width, nothing is cut.
  EXPECT_NE(callsites_body_text(r).find("OPENSSL_LH_insert ← OBJ_NAME_add ← EVP_add_cipher"), std::string::npos);
}

TEST(SymbolizeTest, Addr2lineGivesLinesAndInlinedChains) {
  if (!on_path("addr2line")) GTEST_SKIP() << "addr2line (binutils) is not installed";
  const std::string fixture = ALLOCSCOPE_SYMBOLIZE_FIXTURE;
  const auto syms = ElfSymbols::load(fixture);
  ASSERT_TRUE(syms);
  EXPECT_TRUE(syms->has_debug_info());
  const ElfSymbol *alpha = nullptr, *outer = nullptr;
  for (const ElfSymbol& s : syms->symbols()) {
    if (s.name == "fixture_alpha") alpha = &s;
    if (s.name == "fixture_outer") outer = &s;
  }
  ASSERT_TRUE(alpha && outer);
  ModuleMap modules;
  ModuleEntry entry;
  entry.record.start = 0;
  entry.record.end = ~uint64_t{0} - 1;
  entry.path = fixture;
  modules.add(entry);
  Symbolizer symbolizer(modules, {});
  const FrameInfo& f = symbolizer.frame(alpha->value + 1);  // a "return address" at the function's start
  EXPECT_EQ(f.function, "fixture_alpha");
  EXPECT_EQ(f.module_name, std::filesystem::path(fixture).filename().string());
  EXPECT_EQ(f.location(), "symbolize_fixture.c:" + std::to_string(fixture_line("int fixture_alpha(int x) {")));
  std::vector<uint64_t> inside;
  for (uint64_t off = 1; off <= outer->size; ++off) inside.push_back(outer->value + off);
  symbolizer.prepare(inside);
  bool inlined = false;
  for (uint64_t a : inside) {
    const FrameInfo& g = symbolizer.frame(a);
    EXPECT_EQ(g.function, "fixture_outer");
    if (g.source.size() == 2 && g.source[0].function == "fixture_inner" && g.source[1].function == "fixture_outer") {
      inlined = true;
      EXPECT_EQ(g.location(), "symbolize_fixture.c:" + std::to_string(fixture_line("fixture_inner body")));
    }
  }
  EXPECT_TRUE(inlined) << "no address of fixture_outer resolved to fixture_inner inlined in it";
}

}  // namespace
}  // namespace allocscope
