// The result cache: what its key depends on (and what not), persistence across runs, torn lines, and
// the build-time source hash that keys it (bench/source_hash.cmake, run as CMake runs it).
#include <gtest/gtest.h>

#include <unistd.h>

#include <array>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>

#include "bench/cache.hpp"

namespace ktune::bench {
namespace {

namespace fs = std::filesystem;

CacheKeyInputs inputs() {
  return {"silu_and_mul", "bf16", "tokens=16,d=11008", "tpb_256.vb_16", "0123456789abcdef",
          "nvcc 13.0.88; flags -O3", "NVIDIA H200", "ktune-bench-1;cold-l2;full"};
}

TEST(BenchCache, KeyIsStableAndDependsOnEveryInput) {
  const std::string base = cache_key(inputs());
  EXPECT_EQ(base.size(), 16u);
  EXPECT_EQ(base, cache_key(inputs()));
  std::string CacheKeyInputs::*fields[] = {&CacheKeyInputs::op,          &CacheKeyInputs::dtype,
                                           &CacheKeyInputs::shape,       &CacheKeyInputs::id,
                                           &CacheKeyInputs::source_hash, &CacheKeyInputs::toolchain,
                                           &CacheKeyInputs::device,      &CacheKeyInputs::method};
  for (auto f : fields) {
    CacheKeyInputs in = inputs();
    in.*f += "x";
    EXPECT_NE(cache_key(in), base);
  }
}

TEST(BenchCache, FieldsDoNotRunTogether) {
  CacheKeyInputs a = inputs(), b = inputs();
  a.op = "ab";
  a.dtype = "c";
  b.op = "a";
  b.dtype = "bc";
  EXPECT_NE(cache_key(a), cache_key(b));
}

class TempDir : public ::testing::Test {
 protected:
  void SetUp() override {
    dir = fs::temp_directory_path() /
          ("ktune_bench_test_" + std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()) + "_" +
           std::to_string(::getpid()));
    fs::remove_all(dir);
    fs::create_directories(dir);
  }
  void TearDown() override { fs::remove_all(dir); }
  fs::path dir;
};

using BenchCacheFile = TempDir;

BenchResult sample(const std::string& id, double median) {
  BenchResult r;
  r.name = "silu_and_mul/bf16/tokens=16,d=11008/" + id;
  r.op = "silu_and_mul";
  r.dtype = "bf16";
  r.shape = "tokens=16,d=11008";
  r.id = id;
  r.median_us = median;
  r.min_us = median * 0.99;
  r.max_us = median * 1.02;
  r.samples = 17;
  r.batch = 64;
  r.bytes = 1056768;
  r.registers = 32;
  r.occupancy = 0.75;
  r.rel_l2 = 1e-3;
  r.seed = (std::uint64_t{1} << 53) - 1;
  r.copy_gbps = 4281.5;
  return r;
}

TEST_F(BenchCacheFile, StoredResultsAreFoundByANewRun) {
  const std::string path = (dir / "sub" / "cache.jsonl").string();
  {
    ResultCache c(path);
    ASSERT_EQ(c.load(), "");
    EXPECT_EQ(c.size(), 0u);
    ASSERT_EQ(c.store("k1", sample("tpb_256", 3.5)), "");
    BenchResult bad = sample("tpb_512", 0);
    bad.error = "incorrect: out: FAIL ... (seed 7)";
    ASSERT_EQ(c.store("k2", bad), "");
    ASSERT_EQ(c.store("k1", sample("tpb_256", 3.25)), "");  // a later line wins
  }
  ResultCache c(path);
  ASSERT_EQ(c.load(), "");
  EXPECT_EQ(c.size(), 2u);
  const BenchResult* r = c.find("k1");
  ASSERT_NE(r, nullptr);
  EXPECT_DOUBLE_EQ(r->median_us, 3.25);
  EXPECT_EQ(r->samples, 17);
  EXPECT_EQ(r->batch, 64);
  EXPECT_EQ(r->seed, (std::uint64_t{1} << 53) - 1);
  EXPECT_EQ(r->name, "silu_and_mul/bf16/tokens=16,d=11008/tpb_256");
  ASSERT_NE(c.find("k2"), nullptr);
  EXPECT_EQ(c.find("k2")->error, "incorrect: out: FAIL ... (seed 7)");
  EXPECT_EQ(c.find("k3"), nullptr);
}

TEST_F(BenchCacheFile, ATornLastLineIsSkippedAndTheNextAppendStartsClean) {
  const std::string path = (dir / "cache.jsonl").string();
  {
    ResultCache c(path);
    ASSERT_EQ(c.store("k1", sample("a", 1)), "");
  }
  {
    std::ofstream out(path, std::ios::app);
    out << R"({"key": "k2", "result": {"name": "torn)";  // killed mid-line
  }
  {
    ResultCache c(path);
    ASSERT_EQ(c.load(), "");
    EXPECT_EQ(c.size(), 1u);
    EXPECT_EQ(c.skipped_lines(), 1u);
    ASSERT_EQ(c.store("k3", sample("c", 3)), "");
  }
  ResultCache c(path);
  ASSERT_EQ(c.load(), "");
  EXPECT_NE(c.find("k1"), nullptr);
  EXPECT_NE(c.find("k3"), nullptr);
  EXPECT_EQ(c.skipped_lines(), 1u);
}

TEST(BenchCacheOff, AnEmptyPathStoresNothing) {
  ResultCache c;
  EXPECT_FALSE(c.enabled());
  EXPECT_EQ(c.load(), "");
  EXPECT_EQ(c.store("k", sample("a", 1)), "");
  EXPECT_EQ(c.find("k"), nullptr);
}

// ---- the source hash, computed by the same CMake script the build runs ----------------------------

std::string source_hash(const fs::path& dir, const std::string& extra = "") {
  std::string cmd = std::string("\"") + KTUNE_TEST_CMAKE + "\" -DKTUNE_HASH_DIR=\"" + dir.string() + "\"";
  if (!extra.empty()) cmd += " \"-DKTUNE_HASH_EXTRA=" + extra + "\"";
  cmd += " -P \"" KTUNE_SOURCE_DIR "/bench/source_hash.cmake\" 2>&1";
  std::unique_ptr<FILE, int (*)(FILE*)> p(popen(cmd.c_str(), "r"), pclose);
  std::string out;
  std::array<char, 256> buf{};
  while (p && fgets(buf.data(), buf.size(), p.get())) out += buf.data();
  while (!out.empty() && (out.back() == '\n' || out.back() == '\r')) out.pop_back();
  return out;
}

void write(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  std::ofstream(p) << text;
}

using BenchSourceHash = TempDir;

TEST_F(BenchSourceHash, ChangesWithTheSourcesAndNothingElse) {
  const fs::path op = dir / "kernels" / "toy";
  write(op / "family.cuh", "template <int N> __global__ void k() {}\n");
  write(op / "space.hpp", "// space\n");
  write(op / "spec.json", "{}\n");
  write(op / "tuned.cuh", "// generated table v1\n");
  const std::string h0 = source_hash(op);
  ASSERT_EQ(h0.size(), 16u) << h0;
  EXPECT_EQ(source_hash(op), h0);

  // Not sources of any variant: timestamps, the generated table, editor dotfiles.
  fs::last_write_time(op / "family.cuh", fs::last_write_time(op / "family.cuh") + std::chrono::hours(1));
  write(op / "tuned.cuh", "// generated table v2, after a tune\n");
  write(op / ".family.cuh.swp", "junk");
  EXPECT_EQ(source_hash(op), h0);

  // Sources: an edit, a new file, a rename, a file in a subfolder.
  write(op / "family.cuh", "template <int N> __global__ void k() { }\n");
  const std::string h1 = source_hash(op);
  EXPECT_NE(h1, h0);
  write(op / "harness.hpp", "// harness\n");
  const std::string h2 = source_hash(op);
  EXPECT_NE(h2, h1);
  fs::rename(op / "harness.hpp", op / "harness2.hpp");
  const std::string h3 = source_hash(op);
  EXPECT_NE(h3, h2);
  write(op / "detail" / "x.cuh", "// x\n");
  EXPECT_NE(source_hash(op), h3);
}

TEST_F(BenchSourceHash, SharedHeadersCountAndOneOpsEditLeavesAnotherAlone) {
  const fs::path a = dir / "kernels" / "a", b = dir / "kernels" / "b", shared = dir / "include" / "launch.hpp";
  write(a / "family.cuh", "// a\n");
  write(b / "family.cuh", "// b\n");
  write(shared, "// launch v1\n");
  const std::string a0 = source_hash(a, shared.string()), b0 = source_hash(b, shared.string());
  EXPECT_NE(a0, b0);
  EXPECT_NE(source_hash(a), a0);  // the shared header is part of the hash

  write(a / "family.cuh", "// a, edited\n");
  EXPECT_NE(source_hash(a, shared.string()), a0);
  EXPECT_EQ(source_hash(b, shared.string()), b0);  // only the edited op is re-timed

  write(shared, "// launch v2\n");
  EXPECT_NE(source_hash(b, shared.string()), b0);
}

}  // namespace
}  // namespace ktune::bench
