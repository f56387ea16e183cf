// The gate's comparison on the device (bench/device_compare.cuh) says what ktune::compare says on the host:
// the same pass/fail, counts, first bad element and max_abs, and rel_l2 up to summation order, on fresh
// random outputs with unwritten, NaN, inf and out-of-tolerance elements mixed in.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include <ktune/dtype.hpp>
#include <ktune/verify.hpp>

#include "bench/device_compare.cuh"
#include "support/gpu.hpp"

namespace {

template <class T>
class DeviceCompareGpu : public ::testing::Test {};
using Elements = ::testing::Types<float, __half, __nv_bfloat16>;
TYPED_TEST_SUITE(DeviceCompareGpu, Elements);

enum class Damage { none, few, many };

template <class T>
void check(Damage damage, std::size_t n, std::uint64_t seed) {
  SCOPED_TRACE("seed " + std::to_string(seed) + ", n " + std::to_string(n) + ", damage " + std::to_string(static_cast<int>(damage)));
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(-4, 4);
  const ktune::Tolerance tol = ktune::default_tolerance(ktune::dtype_v<T>);
  std::vector<double> ref(n);
  std::vector<T> out(n);
  for (std::size_t i = 0; i < n; ++i) {
    ref[i] = u(rng);
    out[i] = ktune::from_float<T>(static_cast<float>(ref[i]));
  }
  // Specials that must pass: NaN where the reference is NaN, a matching infinity.
  ref[n / 3] = std::numeric_limits<double>::quiet_NaN();
  out[n / 3] = ktune::from_float<T>(std::numeric_limits<float>::quiet_NaN());
  ref[n / 2] = std::numeric_limits<double>::infinity();
  out[n / 2] = ktune::from_float<T>(std::numeric_limits<float>::infinity());
  if (damage != Damage::none) {
    const std::size_t count = damage == Damage::few ? 4 : n / 50;
    std::uniform_int_distribution<std::size_t> at(0, n - 1);
    for (std::size_t k = 0; k < count; ++k) {
      const std::size_t i = at(rng);
      switch (k % 4) {
        case 0: out[i] = ktune::from_bits<T>(ktune::poison_bits<T>()); break;                    // unwritten
        case 1: out[i] = ktune::from_float<T>(std::numeric_limits<float>::quiet_NaN()); break;   // NaN for a number
        case 2: out[i] = ktune::from_float<T>(static_cast<float>(ref[i] + 0.5)); break;          // out of tolerance
        case 3: out[i] = ktune::from_float<T>(-std::numeric_limits<float>::infinity()); break;   // inf for a number
      }
    }
  }
  const ktune::Comparison host = ktune::compare(out.data(), ref.data(), n, tol);

  T* out_dev = nullptr;
  double* ref_dev = nullptr;
  cudaStream_t stream = nullptr;
  KTUNE_ASSERT_CUDA(cudaMalloc(&out_dev, n * sizeof(T)));
  KTUNE_ASSERT_CUDA(cudaMalloc(&ref_dev, n * sizeof(double)));
  KTUNE_ASSERT_CUDA(cudaStreamCreate(&stream));
  KTUNE_ASSERT_CUDA(cudaMemcpy(out_dev, out.data(), n * sizeof(T), cudaMemcpyHostToDevice));
  KTUNE_ASSERT_CUDA(cudaMemcpy(ref_dev, ref.data(), n * sizeof(double), cudaMemcpyHostToDevice));
  ktune::bench::DeviceCompareScratch scratch;
  ktune::Comparison dev;
  KTUNE_EXPECT_OK(ktune::bench::device_compare(out_dev, ref_dev, n, tol, stream, scratch, dev));
  // Twice: the scratch is reused.
  ktune::Comparison again;
  KTUNE_EXPECT_OK(ktune::bench::device_compare(out_dev, ref_dev, n, tol, stream, scratch, again));
  cudaFree(out_dev);
  cudaFree(ref_dev);
  cudaStreamDestroy(stream);

  for (const ktune::Comparison* d : {&dev, &again}) {
    EXPECT_EQ(d->passed, host.passed) << host.summary() << " vs " << d->summary();
    EXPECT_EQ(d->count, host.count);
    EXPECT_EQ(d->unwritten, host.unwritten);
    EXPECT_EQ(d->mismatched, host.mismatched);
    EXPECT_EQ(d->first_bad, host.first_bad);
    EXPECT_EQ(d->max_abs, host.max_abs);
    EXPECT_NEAR(d->rel_l2, host.rel_l2, 1e-9 * host.rel_l2 + 1e-300);
    if (host.first_bad != static_cast<std::size_t>(-1)) {
      EXPECT_TRUE(d->first_bad_value == host.first_bad_value ||
                  (std::isnan(d->first_bad_value) && std::isnan(host.first_bad_value)));
      EXPECT_EQ(d->first_bad_ref, host.first_bad_ref);
    }
  }
  if (damage == Damage::none) EXPECT_TRUE(dev.passed) << dev.summary();
  else EXPECT_FALSE(dev.passed) << dev.summary();
}

TYPED_TEST(DeviceCompareGpu, SaysWhatTheHostComparisonSays) {
  KTUNE_REQUIRE_GPU();
  const std::uint64_t seed = ktune::test::test_seed();
  for (std::size_t n : {std::size_t{1000}, (std::size_t{3} << 20) + 123})
    for (Damage d : {Damage::none, Damage::few, Damage::many}) check<TypeParam>(d, n, seed + n);
}

}  // namespace
