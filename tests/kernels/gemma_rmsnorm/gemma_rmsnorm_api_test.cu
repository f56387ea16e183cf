// CPU tests of gemma_rmsnorm's dispatch, compiled by nvcc but needing no GPU: the runtime-dtype entry and the
// configurations' can_implement refuse what they must before any CUDA call (on a machine without a
// device a CUDA call would fail with cuda_error, so the status codes prove the order), S's checks follow
// its gcd vector, and the launch geometry of the kind without a residual.
#include <gtest/gtest.h>

#include <cstdint>

#include "kernels/gemma_rmsnorm/gemma_rmsnorm.cuh"

namespace {
namespace op = ktune::ops::gemma_rmsnorm;
using ktune::DType;
using ktune::StatusCode;
using op::Space;

// Fake, never dereferenced, 256-byte-aligned addresses.
void* const out_p = reinterpret_cast<void*>(0x100000);
const void* const in_p = reinterpret_cast<const void*>(0x200000);
const void* const w_p = reinterpret_cast<const void*>(0x300000);

TEST(GemmaRmsnormDtypeEntry, RefusesBeforeAnyCudaCall) {
  EXPECT_EQ(op::run_dtype(static_cast<DType>(3), out_p, in_p, w_p, 4, 64, 1e-6f, nullptr, -1, -1).code,
            StatusCode::unsupported);
  EXPECT_EQ(op::run_dtype(static_cast<DType>(-1), nullptr, nullptr, nullptr, 0, 64, 1e-6f, nullptr, -1, -1).code,
            StatusCode::unsupported)
      << "the dtype is checked first, even for a no-op";
  for (DType dt : ktune::all_dtypes) {
    SCOPED_TRACE(ktune::name(dt));
    EXPECT_EQ(op::run_dtype(dt, nullptr, in_p, w_p, 4, 64, 1e-6f, nullptr, -1, -1).code, StatusCode::invalid_argument);
    EXPECT_EQ(op::run_dtype(dt, out_p, in_p, nullptr, 4, 64, 1e-6f, nullptr, -1, -1).code, StatusCode::invalid_argument);
    EXPECT_EQ(op::run_dtype(dt, out_p, in_p, w_p, -2, 64, 1e-6f, nullptr, -1, -1).code, StatusCode::invalid_argument);
    EXPECT_EQ(op::run_dtype(dt, out_p, in_p, w_p, 4, 64, 1e-6f, nullptr, 32, -1).code, StatusCode::invalid_argument);
    EXPECT_EQ(op::run_dtype(dt, out_p, in_p, w_p, 4, 64, -1.f, nullptr, -1, -1).code, StatusCode::invalid_argument);
    EXPECT_EQ(op::run_dtype(dt, static_cast<char*>(out_p) + 1, in_p, w_p, 4, 64, 1e-6f, nullptr, -1, -1).code,
              StatusCode::invalid_argument);
    EXPECT_EQ(op::run_dtype(dt, out_p, static_cast<const char*>(out_p) + 64, w_p, 4, 64, 1e-6f, nullptr, -1, -1).code,
              StatusCode::invalid_argument)
        << "output overlapping input other than in place";
    EXPECT_EQ(op::run_dtype(dt, out_p, in_p, w_p, 4, std::int64_t{1} << 31, 1e-6f, nullptr, -1, -1).code,
              StatusCode::too_large);
    EXPECT_TRUE(op::run_dtype(dt, nullptr, nullptr, nullptr, 0, 4096, 1e-6f, nullptr, -1, -1).ok())
        << "T = 0 returns before touching the device";
  }
  ktune::TunedChoice c;
  EXPECT_EQ(op::choose(static_cast<DType>(5), 1, 4096, c).code, StatusCode::unsupported);
  EXPECT_EQ(op::choose(DType::f32, 1, 0, c).code, StatusCode::invalid_argument);
}

template <int Vb, int Vpt, int Stage, int Cs = 1, int Pdl = 0>
using Cfg = Space::Config<Vb, Vpt, Stage, Cs, Pdl>;

// input 1 TB away: calls of 2^20 rows must pass validate's overlap test to reach the checks after it.
template <class E>
op::Args<E> args_for(std::int64_t tokens, std::int64_t h, std::uintptr_t misalign = 0) {
  return op::make_args(reinterpret_cast<E*>(0x100000 + misalign), reinterpret_cast<const E*>(0x10000000000),
                       reinterpret_cast<const E*>(0x300000), tokens, h, 1e-6f, -1, -1);
}

TEST(GemmaRmsnormCanImplement, VectorsNeedAlignmentAndWholeVectors) {
  using F = op::Family;
  EXPECT_TRUE((F::can_implement<Cfg<16, 1, Space::reread>, __half>(args_for<__half>(4, 4096)).ok()));
  EXPECT_EQ((F::can_implement<Cfg<16, 1, Space::reread>, __half>(args_for<__half>(4, 4096, 2)).code),
            StatusCode::unsupported)
      << "output 2 bytes off its 16";
  EXPECT_EQ((F::can_implement<Cfg<16, 1, Space::reread>, __half>(args_for<__half>(4, 4100)).code),
            StatusCode::unsupported);
  auto strided = args_for<float>(4, 4096);
  strided.output_stride = 4098;
  EXPECT_EQ((F::can_implement<Cfg<16, 2, Space::registers>, float>(strided).code), StatusCode::unsupported)
      << "the output's stride is checked as the residual's is for fused_add_rmsnorm";
  EXPECT_TRUE((F::can_implement<op::unaligned_config_t, __half>(args_for<__half>(4, 4101, 2)).ok()));
  EXPECT_TRUE((F::can_implement<op::unaligned_config_t, float>(strided).ok()));
  // fp32 h = 8192: 2048 vectors. vpt 1 would need 2048 threads; vpt 2 needs 1024.
  EXPECT_EQ((F::can_implement<Cfg<16, 1, Space::registers>, float>(args_for<float>(8, 8192)).code),
            StatusCode::unsupported);
  EXPECT_TRUE((F::can_implement<Cfg<16, 2, Space::registers>, float>(args_for<float>(8, 8192)).ok()));
}

TEST(GemmaRmsnormCanImplement, OriginalTakesItsGcdVector) {
  using F = op::Family;
  // h = 4100 bf16: gcd(8, 4100) = 4 elements, 8-byte accesses: 8-byte alignment is enough.
  EXPECT_TRUE(F::original_can_implement<__nv_bfloat16>(args_for<__nv_bfloat16>(2, 4100, 8)).ok());
  EXPECT_EQ(F::original_can_implement<__nv_bfloat16>(args_for<__nv_bfloat16>(2, 4100, 4)).code, StatusCode::unsupported);
  // h = 4096: 16-byte vectors.
  EXPECT_EQ(F::original_can_implement<__nv_bfloat16>(args_for<__nv_bfloat16>(2, 4096, 8)).code, StatusCode::unsupported);
  // An odd h: one element per access, any element-aligned pointers.
  EXPECT_TRUE(F::original_can_implement<__half>(args_for<__half>(3, 77, 2)).ok());
  auto strided = args_for<float>(4, 4096);
  strided.input_stride = 4098;
  EXPECT_EQ(F::original_can_implement<float>(strided).code, StatusCode::unsupported) << "stride not a whole vector";
  // 32-bit offsets: (T - 1) * stride + h < 2^32.
  EXPECT_EQ(F::original_can_implement<__half>(args_for<__half>(1 << 20, 4096)).code, StatusCode::too_large);
}

TEST(GemmaRmsnormPlan, GeometryOfTheKindWithoutResidual) {
  using F = op::Family;
  F::Plan p;
  // S's sizing for the reread point: min(1024, h / vec) threads in whole warps; no shared memory.
  ASSERT_TRUE((F::plan<op::original_config_t, __half>(args_for<__half>(1, 5120), p).ok()));
  EXPECT_EQ(p.threads, 640);
  EXPECT_EQ(p.smem, 0u);
  // Shared-memory staging keeps x as part * vec floats.
  ASSERT_TRUE((F::plan<Cfg<16, 1, Space::smem>, float>(args_for<float>(1, 8192), p).ok()));
  EXPECT_EQ(p.smem, 8192u * 4);
  // Bulk rows: a ring stage holds one row (input only): bf16 h = 4096 is 8 KB a stage, 8 stages fit 108 KB.
  ASSERT_TRUE((F::plan<Cfg<16, 2, Space::bulk_rows, 1, 1>, __nv_bfloat16>(args_for<__nv_bfloat16>(64, 4096), p).ok()));
  EXPECT_EQ(p.ring, 8);
  EXPECT_EQ(p.smem, 8u * 8192);
  // fp32 h = 8192: 32 KB a stage, 3 fit.
  ASSERT_TRUE((F::plan<Cfg<16, 4, Space::bulk_rows, 1, 1>, float>(args_for<float>(64, 8192), p).ok()));
  EXPECT_EQ(p.ring, 3);
}

}  // namespace
