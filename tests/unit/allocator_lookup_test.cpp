// Allocator name/path -> library lookup (analyzer/run/allocator_lookup.h).
#include "run/allocator_lookup.h"

#include <gtest/gtest.h>

#include <fstream>

#include "temp_dir.h"

namespace allocscope {
namespace {

namespace fs = std::filesystem;

void touch(const fs::path& path) {
  fs::create_directories(path.parent_path());
  std::ofstream(path) << "not really a library";
}

TEST(AllocatorLookup, LibcAllocatorsPreloadNothing) {
  for (const char* name : {"glibc", "system", "musl"}) {
    const AllocatorChoice choice = find_allocator(name);
    EXPECT_EQ(choice.name, name);
    EXPECT_FALSE(choice.library) << name;
  }
}

TEST(AllocatorLookup, AnExistingPathIsItself) {
  test::TempDir dir;
  const fs::path lib = dir.file("libcustom.so");
  touch(lib);
  const AllocatorChoice choice = find_allocator(lib.string());
  ASSERT_TRUE(choice.library);
  EXPECT_EQ(*choice.library, lib);
}

TEST(AllocatorLookup, RelativePathBecomesAbsolute) {
  test::TempDir dir;
  touch(dir.file("libcustom.so"));
  const fs::path previous = fs::current_path();
  fs::current_path(dir.path());
  const AllocatorChoice choice = find_allocator("./libcustom.so");
  fs::current_path(previous);
  ASSERT_TRUE(choice.library);
  EXPECT_EQ(*choice.library, dir.file("libcustom.so"));
}

TEST(AllocatorLookup, AMissingPathIsAnError) {
  try {
    find_allocator("/nonexistent/libnothing.so");
    FAIL() << "accepted a missing library";
  } catch (const UnknownAllocatorName&) {
    FAIL() << "a missing library is not an unknown name";
  } catch (const AllocatorLookupError&) {
  }
}

TEST(AllocatorLookup, AnUnknownNameIsAnErrorListingTheKnownOnes) {
  try {
    find_allocator("bogusmalloc");
    FAIL() << "accepted an unknown name";
  } catch (const UnknownAllocatorName& error) {
    const std::string message = error.what();
    EXPECT_NE(message.find("unknown allocator 'bogusmalloc'"), std::string::npos) << message;
    EXPECT_NE(message.find("jemalloc"), std::string::npos) << message;
  }
}

TEST(AllocatorLookup, SearchesTheGivenDirectoriesInOrder) {
  test::TempDir dir;
  touch(dir.file("second/libjemalloc.so.2"));
  touch(dir.file("third/libjemalloc.so.2"));
  const AllocatorSearch search{{dir.file("first"), dir.file("second"), dir.file("third")}, {}};
  const AllocatorChoice choice = find_allocator("jemalloc", search);
  ASSERT_TRUE(choice.library);
  EXPECT_EQ(*choice.library, dir.file("second/libjemalloc.so.2"));
}

TEST(AllocatorLookup, PrefersEarlierFileNames) {
  test::TempDir dir;
  touch(dir.file("lib/libtcmalloc.so.4"));
  touch(dir.file("lib/libtcmalloc_minimal.so.4"));
  const AllocatorChoice choice = find_allocator("tcmalloc", AllocatorSearch{{dir.file("lib")}, {}});
  EXPECT_EQ(choice.library->filename(), "libtcmalloc_minimal.so.4");
}

TEST(AllocatorLookup, ScudoIsFoundInTheNewestRuntimeDirectory) {
  test::TempDir dir;
  const std::string scudo = std::string("libclang_rt.scudo_standalone-") +
#if defined(__x86_64__)
                            "x86_64"
#else
                            "aarch64"
#endif
                            ".so";
  touch(dir.file("llvm-9/lib/clang/9/lib/linux/" + scudo));
  touch(dir.file("llvm-14/lib/clang/14.0.6/lib/linux/" + scudo));
  const AllocatorSearch search{{}, {(dir.path() / "llvm-*/lib/clang/*/lib/linux").string()}};
  const AllocatorChoice choice = find_allocator("scudo", search);
  ASSERT_TRUE(choice.library);
  EXPECT_EQ(*choice.library, dir.file("llvm-14/lib/clang/14.0.6/lib/linux/" + scudo));
}

TEST(AllocatorLookup, NotFoundNamesWhatWasSearched) {
  test::TempDir dir;
  try {
    find_allocator("mimalloc", AllocatorSearch{{dir.file("empty")}, {}});
    FAIL() << "found mimalloc in an empty directory";
  } catch (const AllocatorLookupError& error) {
    const std::string message = error.what();
    EXPECT_NE(message.find("libmimalloc.so.2"), std::string::npos) << message;
    EXPECT_NE(message.find(dir.file("empty").string()), std::string::npos) << message;
  }
}

TEST(AllocatorLookup, BareLibraryFileNamesAreSearched) {
  test::TempDir dir;
  touch(dir.file("lib/libfancy.so.3"));
  const AllocatorChoice choice = find_allocator("libfancy.so.3", AllocatorSearch{{dir.file("lib")}, {}});
  EXPECT_EQ(*choice.library, dir.file("lib/libfancy.so.3"));
}

TEST(AllocatorLookup, SystemLibrariesWhenInstalled) {
  for (const char* name : {"jemalloc", "tcmalloc", "mimalloc", "scudo"}) {
    try {
      const AllocatorChoice choice = find_allocator(name);
      ASSERT_TRUE(choice.library) << name;
      EXPECT_TRUE(fs::is_regular_file(*choice.library)) << *choice.library;
      EXPECT_TRUE(choice.library->is_absolute());
    } catch (const AllocatorLookupError&) {
      // not installed here: the lookup itself is covered by the tests above
    }
  }
}

}  // namespace
}  // namespace allocscope
