// The judge's device checks (bench/buffer_checks.cuh): the first differing byte of two buffers and of a
// guard zone is found exactly wherever it lies (aligned or not, in the vector body or the tail, with
// any phase of the guard word), equal bytes digest equally wherever they lie while one flipped bit or
// two swapped words change the digest, a tensor checked in every rotation set at once gives the set and byte
// that changed, and the shared-memory scribble runs on this device. Fresh random bytes per run.
#include <gtest/gtest.h>

#include <algorithm>
#include <climits>
#include <cstdint>
#include <random>
#include <utility>
#include <vector>

#include "bench/buffer_checks.cuh"
#include "support/gpu.hpp"

namespace {

using namespace ktune::bench;

struct DeviceBytes {
  unsigned char* p = nullptr;
  explicit DeviceBytes(std::size_t n) { EXPECT_EQ(cudaMalloc(&p, n), cudaSuccess); }
  ~DeviceBytes() { cudaFree(p); }
};

class BufferChecksGpu : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!ktune::test::gpu_unavailable_reason().empty()) GTEST_SKIP() << ktune::test::gpu_unavailable_reason();
    ASSERT_EQ(cudaStreamCreate(&stream), cudaSuccess);
  }
  void TearDown() override {
    if (stream) cudaStreamDestroy(stream);
  }
  cudaStream_t stream = nullptr;
  CheckScratch scratch;
};

TEST_F(BufferChecksGpu, FirstDifferenceFindsTheExactByte) {
  const std::uint64_t seed = ktune::test::test_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937_64 rng(seed);
  const std::size_t n = 1 << 20;
  std::vector<unsigned char> host(n + 64);
  for (auto& b : host) b = static_cast<unsigned char>(rng());
  DeviceBytes a(n + 64), b(n + 64);
  ASSERT_EQ(cudaMemcpy(a.p, host.data(), host.size(), cudaMemcpyHostToDevice), cudaSuccess);
  for (std::size_t skew : {0, 1, 3, 16}) {  // unaligned starts take the byte path
    for (std::size_t at : {std::size_t{0}, std::size_t{15}, std::size_t{16}, n / 2 + 5, n - 1, std::size_t(-1)}) {
      ASSERT_EQ(cudaMemcpy(b.p, host.data(), host.size(), cudaMemcpyHostToDevice), cudaSuccess);
      if (at != std::size_t(-1)) {
        const unsigned char flipped = static_cast<unsigned char>(host[skew + at] ^ 0x10);
        ASSERT_EQ(cudaMemcpy(b.p + skew + at, &flipped, 1, cudaMemcpyHostToDevice), cudaSuccess);
        // A second difference further on: the first must win.
        if (at + 7 < n) ASSERT_EQ(cudaMemcpy(b.p + skew + at + 7, &flipped, 1, cudaMemcpyHostToDevice), cudaSuccess);
      }
      std::size_t first = 0;
      ASSERT_TRUE(first_difference(a.p + skew, b.p + skew, n, stream, scratch, first).ok());
      EXPECT_EQ(first, at == std::size_t(-1) ? SIZE_MAX : at) << "skew " << skew;
    }
  }
}

TEST_F(BufferChecksGpu, CheckGuardsNamesTheFirstBrokenZone) {
  const std::size_t n = 4096;
  std::vector<unsigned char> guard(3 * n);
  for (std::size_t i = 0; i < guard.size(); ++i) guard[i] = static_cast<unsigned char>(guard_word >> (8 * (i % 4)));
  DeviceBytes z(3 * n);
  ASSERT_EQ(cudaMemcpy(z.p, guard.data(), guard.size(), cudaMemcpyHostToDevice), cudaSuccess);
  CheckBatch batch;  // the gate checks its zones so, in one batch with the digests
  for (const Span& zone : {Span{z.p, n, 0}, Span{z.p + n + 1, n - 1, 1}, Span{z.p + 2 * n, n, 0}}) batch.first_difference(zone);
  std::size_t zone = 0, offset = 0;
  auto check = [&] {  // the first zone that changed, and where
    std::vector<unsigned long long> r;
    ASSERT_TRUE(batch.run(stream, scratch, r).ok());
    const auto broken = std::find_if(r.begin(), r.end(), [](unsigned long long v) { return v != ULLONG_MAX; });
    zone = broken == r.end() ? SIZE_MAX : static_cast<std::size_t>(broken - r.begin());
    offset = broken == r.end() ? SIZE_MAX : static_cast<std::size_t>(*broken);
  };
  check();
  EXPECT_EQ(zone, SIZE_MAX);
  const unsigned char x = 0;
  ASSERT_EQ(cudaMemcpy(z.p + 2 * n + 9, &x, 1, cudaMemcpyHostToDevice), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(z.p + n + 1 + 77, &x, 1, cudaMemcpyHostToDevice), cudaSuccess);
  check();
  EXPECT_EQ(zone, 1u);
  EXPECT_EQ(offset, 77u);
}

TEST_F(BufferChecksGpu, GuardZonesAreCheckedAtEveryPhase) {
  const std::size_t n = 4096 + 64;
  std::vector<unsigned char> guard(n);
  for (std::size_t i = 0; i < n; ++i) guard[i] = static_cast<unsigned char>(guard_word >> (8 * (i % 4)));
  DeviceBytes z(n);
  for (std::size_t phase = 0; phase < 4; ++phase) {
    ASSERT_EQ(cudaMemcpy(z.p, guard.data(), n, cudaMemcpyHostToDevice), cudaSuccess);
    std::size_t first = 0;
    // The zone starting `phase` bytes into the pattern is intact ...
    ASSERT_TRUE(first_difference(z.p + phase, nullptr, n - 8, stream, scratch, first, phase).ok());
    EXPECT_EQ(first, SIZE_MAX) << "phase " << phase;
    // ... and read with the wrong phase it is not (the check does look at the bytes).
    ASSERT_TRUE(first_difference(z.p + phase, nullptr, n - 8, stream, scratch, first, (phase + 1) % 4).ok());
    EXPECT_EQ(first, 0u) << "phase " << phase;
    // One byte written past a tensor's end lands in the zone and is found.
    const unsigned char x = static_cast<unsigned char>(guard[phase + 100] ^ 0xFF);
    ASSERT_EQ(cudaMemcpy(z.p + phase + 100, &x, 1, cudaMemcpyHostToDevice), cudaSuccess);
    ASSERT_TRUE(first_difference(z.p + phase, nullptr, n - 8, stream, scratch, first, phase).ok());
    EXPECT_EQ(first, 100u) << "phase " << phase;
  }
}

TEST_F(BufferChecksGpu, DigestsAreEqualForEqualBytesAndDifferForOneBit) {
  const std::uint64_t seed = ktune::test::test_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937_64 rng(seed ^ 0xd16e57);
  for (std::size_t n : {std::size_t{2}, std::size_t{6}, std::size_t{4096}, (std::size_t{1} << 22) + 2}) {
    std::vector<unsigned char> host(n);
    for (auto& b : host) b = static_cast<unsigned char>(rng());
    DeviceBytes a(n), b(n);
    ASSERT_EQ(cudaMemcpy(a.p, host.data(), n, cudaMemcpyHostToDevice), cudaSuccess);
    ASSERT_EQ(cudaMemcpy(b.p, host.data(), n, cudaMemcpyHostToDevice), cudaSuccess);
    std::vector<std::uint64_t> d;
    ASSERT_TRUE(digests({{a.p, n, 0}, {b.p, n, 0}, {a.p, 0, 0}}, stream, scratch, d).ok());
    ASSERT_EQ(d.size(), 3u);
    EXPECT_EQ(d[0], d[1]) << n;
    EXPECT_EQ(d[2], 0u) << "an empty span digests to 0";
    const std::uint64_t da = d[0];
    const std::size_t at = rng() % n;
    const unsigned char flipped = static_cast<unsigned char>(host[at] ^ (1u << (rng() % 8)));
    ASSERT_EQ(cudaMemcpy(b.p + at, &flipped, 1, cudaMemcpyHostToDevice), cudaSuccess);
    ASSERT_TRUE(digests({{b.p, n, 0}}, stream, scratch, d).ok());
    EXPECT_NE(da, d[0]) << n << " bytes, bit flipped at " << at;
  }
}

TEST_F(BufferChecksGpu, DigestsDoNotDependOnWhereTheBytesLie) {
  // A span that is not 16-byte aligned is read word by word, an aligned one 16 bytes at a time with a
  // tail: the same bytes must digest the same either way, at every size the unrolled loop splits.
  const std::uint64_t seed = ktune::test::test_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937_64 rng(seed ^ 0xa11e9);
  for (std::size_t n : {std::size_t{15}, std::size_t{16}, std::size_t{17}, std::size_t{1000}, std::size_t{5000017}}) {
    std::vector<unsigned char> host(n);
    for (auto& b : host) b = static_cast<unsigned char>(rng());
    DeviceBytes aligned(n), shifted(n + 16);
    ASSERT_EQ(cudaMemcpy(aligned.p, host.data(), n, cudaMemcpyHostToDevice), cudaSuccess);
    for (std::size_t at : {1, 4, 8, 13}) {
      ASSERT_EQ(cudaMemcpy(shifted.p + at, host.data(), n, cudaMemcpyHostToDevice), cudaSuccess);
      std::vector<std::uint64_t> d;
      ASSERT_TRUE(digests({{aligned.p, n, 0}, {shifted.p + at, n, 0}}, stream, scratch, d).ok());
      EXPECT_EQ(d[0], d[1]) << n << " bytes, the copy at offset " << at;
    }
    // The digest depends on where each word is: two words swapped give another.
    if (n < 16 || std::equal(host.begin(), host.begin() + 8, host.begin() + 8)) continue;
    std::vector<std::uint64_t> before, after;
    ASSERT_TRUE(digests({{aligned.p, n, 0}}, stream, scratch, before).ok());
    std::swap_ranges(host.begin(), host.begin() + 8, host.begin() + 8);
    ASSERT_EQ(cudaMemcpy(aligned.p, host.data(), 16, cudaMemcpyHostToDevice), cudaSuccess);
    ASSERT_TRUE(digests({{aligned.p, n, 0}}, stream, scratch, after).ok());
    EXPECT_NE(before[0], after[0]) << n << " bytes, the first two words swapped";
  }
}

TEST_F(BufferChecksGpu, ChecksOverRotationSetsFindTheSetAndByteThatDiffer) {
  // After every timing check_rotation digests a tensor in every rotation set at once (sets x one copy's
  // digest when none changed) and, when one did, finds the first set and byte that differ from the pristine
  // copy. Sets past 65,535 take the grid's y loop; a tensor whose size is not a multiple of 16 takes the tail.
  const std::uint64_t seed = ktune::test::test_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937_64 rng(seed ^ 0x5e75);
  struct Layout {
    std::size_t n, stride, sets;
  };
  for (const Layout& l : {Layout{1003, 1280, 7}, Layout{40, 256, 70001}, Layout{(std::size_t{1} << 20) + 8, (std::size_t{1} << 20) + 256, 3}}) {
    SCOPED_TRACE(std::to_string(l.n) + " bytes in " + std::to_string(l.sets) + " sets");
    std::vector<unsigned char> one(l.n), all(l.stride * l.sets);
    for (auto& b : one) b = static_cast<unsigned char>(rng());
    for (auto& b : all) b = static_cast<unsigned char>(rng());  // what lies between the copies is not read
    for (std::size_t s = 0; s < l.sets; ++s) std::copy(one.begin(), one.end(), all.begin() + static_cast<std::ptrdiff_t>(s * l.stride));
    DeviceBytes sets(all.size()), pristine(l.n);
    ASSERT_EQ(cudaMemcpy(sets.p, all.data(), all.size(), cudaMemcpyHostToDevice), cudaSuccess);
    ASSERT_EQ(cudaMemcpy(pristine.p, one.data(), l.n, cudaMemcpyHostToDevice), cudaSuccess);
    auto check = [&](std::vector<unsigned long long>& r) {
      CheckBatch batch;
      EXPECT_EQ(batch.digest({pristine.p, l.n, 0}), 0u);
      EXPECT_EQ(batch.digest({sets.p, l.n, 0, l.sets, l.stride}), 1u);
      EXPECT_EQ(batch.first_difference({sets.p, l.n, 0, l.sets, l.stride}, pristine.p), 2u);
      ASSERT_TRUE(batch.run(stream, scratch, r).ok());
    };
    std::vector<unsigned long long> r;
    check(r);
    ASSERT_EQ(r.size(), 3u);
    EXPECT_EQ(r[1], static_cast<unsigned long long>(l.sets) * r[0]);
    EXPECT_EQ(r[2], ULLONG_MAX);
    // Two sets changed: the earlier one (and its earlier byte) is reported, and the digest moves.
    const std::size_t set = l.sets / 2, at = rng() % l.n;
    for (const auto& [s, k] : {std::pair{l.sets - 1, std::size_t{0}}, std::pair{set, at}}) {
      const unsigned char flipped = static_cast<unsigned char>(one[k] ^ 0x01);
      ASSERT_EQ(cudaMemcpy(sets.p + s * l.stride + k, &flipped, 1, cudaMemcpyHostToDevice), cudaSuccess);
    }
    check(r);
    EXPECT_NE(r[1], static_cast<unsigned long long>(l.sets) * r[0]);
    EXPECT_EQ(r[2], static_cast<unsigned long long>(set * l.n + at));
  }
}

TEST_F(BufferChecksGpu, SharedMemoryScribbleRuns) {
  ASSERT_TRUE(scribble_shared_memory(smem_scribble_first, stream).ok());
  ASSERT_TRUE(scribble_shared_memory(smem_scribble_second, stream).ok());
  ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
}

}  // namespace
