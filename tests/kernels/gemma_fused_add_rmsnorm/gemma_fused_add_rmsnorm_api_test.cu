// CPU tests of gemma_fused_add_rmsnorm's dispatch, compiled by nvcc but needing no GPU: the runtime-dtype
// entry and every configuration's can_implement refuse what they must before any CUDA call (on a
// machine without a device a CUDA call would fail with cuda_error, so the status codes prove the
// order), and the launch geometry follows S's sizing rule.
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>

#include "kernels/gemma_fused_add_rmsnorm/gemma_fused_add_rmsnorm.cuh"

namespace {
namespace op = ktune::ops::gemma_fused_add_rmsnorm;
using ktune::DType;
using ktune::StatusCode;
using op::Space;

// Fake, never dereferenced, 256-byte-aligned addresses.
void* const in_p = reinterpret_cast<void*>(0x100000);
void* const res_p = reinterpret_cast<void*>(0x200000);
const void* const w_p = reinterpret_cast<const void*>(0x300000);

TEST(GemmaFusedAddRmsnormDtypeEntry, RefusesBeforeAnyCudaCall) {
  EXPECT_EQ(op::run_dtype(static_cast<DType>(3), in_p, res_p, w_p, 4, 64, 1e-6f, nullptr, -1, -1).code,
            StatusCode::unsupported);
  EXPECT_EQ(op::run_dtype(static_cast<DType>(-1), nullptr, nullptr, nullptr, 0, 64, 1e-6f, nullptr, -1, -1).code,
            StatusCode::unsupported)
      << "the dtype is checked first, even for a no-op";
  for (DType dt : ktune::all_dtypes) {
    SCOPED_TRACE(ktune::name(dt));
    EXPECT_EQ(op::run_dtype(dt, nullptr, res_p, w_p, 4, 64, 1e-6f, nullptr, -1, -1).code, StatusCode::invalid_argument);
    EXPECT_EQ(op::run_dtype(dt, in_p, res_p, nullptr, 4, 64, 1e-6f, nullptr, -1, -1).code, StatusCode::invalid_argument);
    EXPECT_EQ(op::run_dtype(dt, in_p, res_p, w_p, -2, 64, 1e-6f, nullptr, -1, -1).code, StatusCode::invalid_argument);
    EXPECT_EQ(op::run_dtype(dt, in_p, res_p, w_p, 4, 0, 1e-6f, nullptr, -1, -1).code, StatusCode::invalid_argument);
    EXPECT_EQ(op::run_dtype(dt, in_p, res_p, w_p, 4, 64, 1e-6f, nullptr, 32, -1).code, StatusCode::invalid_argument);
    EXPECT_EQ(op::run_dtype(dt, in_p, res_p, w_p, 4, 64, -1.f, nullptr, -1, -1).code, StatusCode::invalid_argument);
    EXPECT_EQ(op::run_dtype(dt, static_cast<char*>(in_p) + 1, res_p, w_p, 4, 64, 1e-6f, nullptr, -1, -1).code,
              StatusCode::invalid_argument);
    EXPECT_EQ(op::run_dtype(dt, in_p, res_p, w_p, 4, std::int64_t{1} << 31, 1e-6f, nullptr, -1, -1).code,
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

// residual 16 TB away: calls of 2^30 rows must pass validate's overlap test to reach the checks after it.
template <class E>
op::Args<E> args_for(std::int64_t tokens, std::int64_t h, std::uintptr_t misalign = 0) {
  return op::make_args(reinterpret_cast<E*>(0x100000 + misalign), reinterpret_cast<E*>(0x100000000000),
                       reinterpret_cast<const E*>(0x300000), tokens, h, 1e-6f, -1, -1);
}

TEST(GemmaFusedAddRmsnormCanImplement, VectorsNeedAlignmentAndWholeVectors) {
  using F = op::Family;
  // 16-byte vectors: pointers, h and strides must line up.
  EXPECT_TRUE((F::can_implement<Cfg<16, 1, Space::reread>, __half>(args_for<__half>(4, 4096)).ok()));
  EXPECT_EQ((F::can_implement<Cfg<16, 1, Space::reread>, __half>(args_for<__half>(4, 4096, 2)).code),
            StatusCode::unsupported);
  EXPECT_EQ((F::can_implement<Cfg<16, 1, Space::reread>, __half>(args_for<__half>(4, 4100)).code),
            StatusCode::unsupported);
  auto strided = args_for<float>(4, 4096);
  strided.residual_stride = 4098;
  EXPECT_EQ((F::can_implement<Cfg<16, 2, Space::registers>, float>(strided).code), StatusCode::unsupported);
  // Element accesses take anything valid.
  EXPECT_TRUE((F::can_implement<op::unaligned_config_t, __half>(args_for<__half>(4, 4101, 2)).ok()));
  EXPECT_TRUE((F::can_implement<op::unaligned_config_t, float>(strided).ok()));
  EXPECT_TRUE((F::can_implement<op::unaligned_config_t, float>(args_for<float>(3, 1 << 30)).ok()))
      << "reread staging has no row-length limit";
  // S: its vector is gcd(16 / sizeof(E), h) elements; pointers and strides must line up with it.
  EXPECT_EQ(F::original_can_implement<__nv_bfloat16>(args_for<__nv_bfloat16>(2, 4096, 2)).code, StatusCode::unsupported);
  EXPECT_EQ(F::original_can_implement<__nv_bfloat16>(args_for<__nv_bfloat16>(2, 100, 4)).code, StatusCode::unsupported)
      << "h = 100: 4-element (8-byte) vectors";
  auto s_strided = args_for<float>(4, 4096);
  s_strided.residual_stride = 4098;
  EXPECT_EQ(F::original_can_implement<float>(s_strided).code, StatusCode::unsupported);
}

TEST(GemmaFusedAddRmsnormCanImplement, RegisterStagingCoversTheRowOrRefuses) {
  using F = op::Family;
  // fp32 h = 8192: 2048 vectors. vpt 1 would need 2048 threads; vpt 2 needs 1024; vpt 8 fits 256.
  EXPECT_EQ((F::can_implement<Cfg<16, 1, Space::registers>, float>(args_for<float>(8, 8192)).code),
            StatusCode::unsupported);
  EXPECT_TRUE((F::can_implement<Cfg<16, 2, Space::registers>, float>(args_for<float>(8, 8192)).ok()));
  EXPECT_TRUE((F::can_implement<Cfg<16, 8, Space::registers>, float>(args_for<float>(8, 8192)).ok()));
  // A cluster split shares the row: vpt 1 over 2 blocks needs 1024 threads each.
  EXPECT_TRUE((F::can_implement<Cfg<16, 1, Space::registers, 2, 1>, float>(args_for<float>(8, 8192)).ok()));
  // fp16 vpt 8 is compiled for 384 threads: 384 * 8 * 8 = 24576 elements.
  EXPECT_TRUE((F::can_implement<Cfg<16, 8, Space::registers>, __half>(args_for<__half>(1, 24576)).ok()));
  EXPECT_EQ((F::can_implement<Cfg<16, 8, Space::registers>, __half>(args_for<__half>(1, 24576 + 8)).code),
            StatusCode::unsupported);
  // The grid: tokens * cs blocks.
  EXPECT_EQ((F::can_implement<Cfg<16, 1, Space::reread, 8, 0>, __half>(args_for<__half>(1 << 30, 64)).code),
            StatusCode::too_large);
}

TEST(GemmaFusedAddRmsnormPlan, FollowsSsSizingRule) {
  using F = op::Family;
  F::Plan p;
  // S's point: min(1024, h / vec) threads in whole warps; x staged as part * vec floats.
  ASSERT_TRUE((F::plan<op::original_config_t, __half>(args_for<__half>(1, 5120), p).ok()));
  EXPECT_EQ(p.threads, 640);
  EXPECT_EQ(p.part, 640);
  EXPECT_EQ(p.smem, 5120u * 4);
  ASSERT_TRUE((F::plan<op::original_config_t, float>(args_for<float>(1, 8192), p).ok()));
  EXPECT_EQ(p.threads, 1024) << "2048 vectors: 1024 threads, two rounds";
  const ktune::ops::norm_rows::flashinfer::Geometry s(8192, sizeof(float));
  EXPECT_EQ(s.num_warps * 32, 1024u);
  const ktune::ops::norm_rows::flashinfer::Geometry s16(5120, sizeof(__half));
  EXPECT_EQ(s16.vec, 8u);
  EXPECT_EQ(s16.num_warps * 32, 640u);
  EXPECT_EQ(s16.smem_fused_add, (20u + 5120u) * 4);
  const ktune::ops::norm_rows::flashinfer::Geometry odd(4100, sizeof(__half));
  EXPECT_EQ(odd.vec, 4u) << "gcd(8, 4100)";
  EXPECT_EQ(odd.num_warps, 32u) << "min(1024, 4100 / 4) = 1024 threads";
  // Register staging: ceil(part / vpt) threads. Cluster of 8 over h = 4096 fp16: 64 vectors each.
  ASSERT_TRUE((F::plan<Cfg<16, 1, Space::registers, 8, 1>, __half>(args_for<__half>(16, 4096), p).ok()));
  EXPECT_EQ(p.part, 64);
  EXPECT_EQ(p.threads, 64);
  EXPECT_EQ(p.smem, 0u);
  ASSERT_TRUE((F::plan<Cfg<16, 4, Space::registers>, __half>(args_for<__half>(16, 5120), p).ok()));
  EXPECT_EQ(p.threads, 160);
  // A row shorter than a warp's worth still gets one warp.
  ASSERT_TRUE((F::plan<op::unaligned_config_t, float>(args_for<float>(1, 7), p).ok()));
  EXPECT_EQ(p.threads, 32);
  // Uneven split: 77 elements over 8 blocks: 10 each, the last gets 7.
  ASSERT_TRUE((F::plan<Cfg<0, 1, Space::registers, 8, 0>, float>(args_for<float>(1, 77), p).ok()));
  EXPECT_EQ(p.part, 10);
}

TEST(GemmaFusedAddRmsnormPlan, PersistentWarpRowsAndLateStoreStages) {
  using F = op::Family;
  F::Plan p;
  // Persistent rows (stage 3): a block fits the row as stage 0 does; bf16 h = 8192 at vpt 1 needs 1024
  // threads, which its register estimate (64) allows; fp32 h = 8192 at vpt 2 would need 1024, beyond
  // the 768 its estimate (80) allows, so it refuses; vpt 4 takes 512.
  ASSERT_TRUE((F::plan<Cfg<16, 1, Space::persistent_rows, 1, 1>, __nv_bfloat16>(args_for<__nv_bfloat16>(2048, 8192), p).ok()));
  EXPECT_EQ(p.threads, 1024);
  EXPECT_EQ(p.smem, 0u);
  EXPECT_EQ((F::can_implement<Cfg<16, 2, Space::persistent_rows, 1, 1>, float>(args_for<float>(8, 8192)).code),
            StatusCode::unsupported);
  ASSERT_TRUE((F::plan<Cfg<16, 4, Space::persistent_rows, 1, 1>, float>(args_for<float>(8, 8192), p).ok()));
  EXPECT_EQ(p.threads, 512);
  // Warp rows (stage 4): blocks of 4 warps, rows of at most 32 * vpt vectors.
  ASSERT_TRUE((F::plan<Cfg<16, 4, Space::warp_rows, 1, 0>, __half>(args_for<__half>(100, 1024), p).ok()));
  EXPECT_EQ(p.threads, 128);
  EXPECT_EQ((F::can_implement<Cfg<16, 4, Space::warp_rows, 1, 0>, __half>(args_for<__half>(100, 1032)).code),
            StatusCode::unsupported);
  EXPECT_EQ((F::can_implement<Cfg<16, 8, Space::warp_rows, 1, 1>, float>(args_for<float>(1, 4096)).code),
            StatusCode::unsupported) << "spec widths are beyond a warp row";
  // Bulk rows (stage 6): a ring of as many row pairs (input + residual) as fit in 108 KB, 2 to 8.
  ASSERT_TRUE((F::plan<Cfg<16, 2, Space::bulk_rows, 1, 1>, __nv_bfloat16>(args_for<__nv_bfloat16>(64, 4096), p).ok()));
  EXPECT_EQ(p.ring, 6);  // 16 KB pairs
  EXPECT_EQ(p.smem, 6u * 16384);
  EXPECT_EQ(p.threads, 256);
  ASSERT_TRUE((F::plan<Cfg<16, 4, Space::bulk_rows, 1, 1>, float>(args_for<float>(64, 8192), p).ok()));
  EXPECT_EQ(p.ring, 2) << "64 KB pairs: at least two stages";
  ASSERT_TRUE((F::plan<Cfg<16, 2, Space::bulk_rows, 1, 0>, __half>(args_for<__half>(64, 256), p).ok()));
  EXPECT_EQ(p.ring, 8) << "at most 8 stages";
  // Late stores (stage 5): stage 0's cluster split.
  ASSERT_TRUE((F::plan<Cfg<16, 1, Space::cluster_late_stores, 8, 1>, float>(args_for<float>(1, 8192), p).ok()));
  EXPECT_EQ(p.part, 256);
  EXPECT_EQ(p.threads, 256);
}

}  // namespace
