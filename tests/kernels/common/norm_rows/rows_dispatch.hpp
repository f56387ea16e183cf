// tests/kernels/common/norm_rows/rows_dispatch.hpp: the CPU tests of the dispatch of every RMS norm op,
// compiled by nvcc but needing no GPU: the runtime-dtype entry and the configurations' can_implement
// refuse what they must before any CUDA call (on a machine without a device a CUDA call would fail with
// cuda_error, so the status codes prove the order), S's checks, and the launch geometry of each kind.
//
// An op's *_api_test.cu defines its traits (KTUNE_NORM_ROWS_DISPATCH_OP) and instantiates its kind's
// tests with KTUNE_OUTPUT_NORM_DISPATCH_TESTS(Op) or KTUNE_RESIDUAL_NORM_DISPATCH_TESTS(Op); the residual
// kind's ops write the tests of their S with Dispatch<Op>'s checks and helpers.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>

#include <ktune/dtype.hpp>
#include <ktune/status.hpp>
#include <ktune/tuned.hpp>

#include "op_traits.hpp"

namespace ktune::test::norm_rows {

/// The checks, with the family's templates at hand as in a test of one op. Only the checks an op's tests
/// call are instantiated, so those of the other kind never meet its Args.
template <class Op>
struct Dispatch {
  using F = typename Op::Family;
  using Space = typename Op::Space;
  template <class E>
  using Args = typename Op::template Args<E>;
  template <int Vb, int Vpt, int Stage, int Cs = 1, int Pdl = 0>
  using Cfg = typename Space::template Config<Vb, Vpt, Stage, Cs, Pdl>;
  using unaligned_config_t = typename Op::unaligned_config_t;
  using original_config_t = typename Op::original_config_t;
  using Plan = typename F::Plan;

  template <class Config, class E>
  static Status can_implement(const Args<E>& a) {
    return F::template can_implement<Config, E>(a);
  }
  template <class E>
  static Status original_can_implement(const Args<E>& a) {
    return F::template original_can_implement<E>(a);
  }
  template <class Config, class E>
  static Status plan(const Args<E>& a, Plan& p) {
    return F::template plan<Config, E>(a, p);
  }

  /// Fake, never dereferenced, 256-byte-aligned addresses.
  static void* fake(std::uintptr_t address) { return reinterpret_cast<void*>(address); }
  static inline const void* const w_p = fake(0x300000);

  /// The second row tensor (input or residual) 16 TB away: calls of 2^30 rows must pass validate's
  /// overlap test to reach the checks after it.
  template <class E>
  static Args<E> args_for(std::int64_t tokens, std::int64_t h, std::uintptr_t misalign = 0) {
    return Op::make_args(reinterpret_cast<E*>(0x100000 + misalign), reinterpret_cast<E*>(0x100000000000),
                         reinterpret_cast<const E*>(0x300000), tokens, h, 1e-6f, -1, -1);
  }

  /// The runtime-dtype entry checks the dtype first, then the arguments, before any CUDA call.
  static void check_dtype_entry() {
    // The row tensor written (output; input where a residual is added) and the other (input; residual).
    void* const first_p = fake(0x100000);
    void* const second_p = fake(0x200000);
    EXPECT_EQ(Op::run_dtype(static_cast<DType>(3), first_p, second_p, w_p, 4, 64, 1e-6f, nullptr, -1, -1).code,
              StatusCode::unsupported);
    EXPECT_EQ(Op::run_dtype(static_cast<DType>(-1), nullptr, nullptr, nullptr, 0, 64, 1e-6f, nullptr, -1, -1).code,
              StatusCode::unsupported)
        << "the dtype is checked first, even for a no-op";
    for (DType dt : ktune::all_dtypes) {
      SCOPED_TRACE(ktune::name(dt));
      auto code = [&](auto... a) { return Op::run_dtype(dt, a...).code; };
      EXPECT_EQ(code(nullptr, second_p, w_p, 4, 64, 1e-6f, nullptr, -1, -1), StatusCode::invalid_argument);
      EXPECT_EQ(code(first_p, second_p, nullptr, 4, 64, 1e-6f, nullptr, -1, -1), StatusCode::invalid_argument);
      EXPECT_EQ(code(first_p, second_p, w_p, -2, 64, 1e-6f, nullptr, -1, -1), StatusCode::invalid_argument);
      EXPECT_EQ(code(first_p, second_p, w_p, 4, 0, 1e-6f, nullptr, -1, -1), StatusCode::invalid_argument);
      EXPECT_EQ(code(first_p, second_p, w_p, 4, 64, 1e-6f, nullptr, 32, -1), StatusCode::invalid_argument);
      EXPECT_EQ(code(first_p, second_p, w_p, 4, 64, -1.f, nullptr, -1, -1), StatusCode::invalid_argument);
      EXPECT_EQ(code(static_cast<char*>(first_p) + 1, second_p, w_p, 4, 64, 1e-6f, nullptr, -1, -1),
                StatusCode::invalid_argument);
      if constexpr (!Space::Kind::residual)
        EXPECT_EQ(code(first_p, static_cast<const char*>(first_p) + 64, w_p, 4, 64, 1e-6f, nullptr, -1, -1),
                  StatusCode::invalid_argument)
            << "output overlapping input other than in place";
      EXPECT_EQ(code(first_p, second_p, w_p, 4, std::int64_t{1} << 31, 1e-6f, nullptr, -1, -1), StatusCode::too_large);
      EXPECT_TRUE(Op::run_dtype(dt, nullptr, nullptr, nullptr, 0, 4096, 1e-6f, nullptr, -1, -1).ok())
          << "T = 0 returns before touching the device";
    }
    ktune::TunedChoice c;
    EXPECT_EQ(Op::choose(static_cast<DType>(5), 1, 4096, c).code, StatusCode::unsupported);
    EXPECT_EQ(Op::choose(DType::f32, 1, 0, c).code, StatusCode::invalid_argument);
  }

  // ---- the kind with a separate output ------------------------------------------------------------

  static void check_output_vectors_need_alignment() {
    EXPECT_TRUE((can_implement<Cfg<16, 1, Space::reread>, __half>(args_for<__half>(4, 4096)).ok()));
    EXPECT_EQ((can_implement<Cfg<16, 1, Space::reread>, __half>(args_for<__half>(4, 4096, 2)).code),
              StatusCode::unsupported)
        << "output 2 bytes off its 16";
    EXPECT_EQ((can_implement<Cfg<16, 1, Space::reread>, __half>(args_for<__half>(4, 4100)).code),
              StatusCode::unsupported);
    auto strided = args_for<float>(4, 4096);
    strided.output_stride = 4098;
    EXPECT_EQ((can_implement<Cfg<16, 2, Space::registers>, float>(strided).code), StatusCode::unsupported)
        << "the output's stride is checked as the residual's is for fused_add_rmsnorm";
    EXPECT_TRUE((can_implement<unaligned_config_t, __half>(args_for<__half>(4, 4101, 2)).ok()));
    EXPECT_TRUE((can_implement<unaligned_config_t, float>(strided).ok()));
    // fp32 h = 8192: 2048 vectors. vpt 1 would need 2048 threads; vpt 2 needs 1024.
    EXPECT_EQ((can_implement<Cfg<16, 1, Space::registers>, float>(args_for<float>(8, 8192)).code),
              StatusCode::unsupported);
    EXPECT_TRUE((can_implement<Cfg<16, 2, Space::registers>, float>(args_for<float>(8, 8192)).ok()));
  }

  static void check_original_takes_its_gcd_vector() {
    // h = 4100 bf16: gcd(8, 4100) = 4 elements, 8-byte accesses: 8-byte alignment is enough.
    EXPECT_TRUE(original_can_implement<__nv_bfloat16>(args_for<__nv_bfloat16>(2, 4100, 8)).ok());
    EXPECT_EQ(original_can_implement<__nv_bfloat16>(args_for<__nv_bfloat16>(2, 4100, 4)).code, StatusCode::unsupported);
    // h = 4096: 16-byte vectors.
    EXPECT_EQ(original_can_implement<__nv_bfloat16>(args_for<__nv_bfloat16>(2, 4096, 8)).code, StatusCode::unsupported);
    // An odd h: one element per access, any element-aligned pointers.
    EXPECT_TRUE(original_can_implement<__half>(args_for<__half>(3, 77, 2)).ok());
    auto strided = args_for<float>(4, 4096);
    strided.input_stride = 4098;
    EXPECT_EQ(original_can_implement<float>(strided).code, StatusCode::unsupported) << "stride not a whole vector";
    // 32-bit offsets: (T - 1) * stride + h < 2^32.
    EXPECT_EQ(original_can_implement<__half>(args_for<__half>(1 << 20, 4096)).code, StatusCode::too_large);
  }

  static void check_output_plan_geometry() {
    Plan p;
    // S's sizing for the reread point: min(1024, h / vec) threads in whole warps; no shared memory.
    ASSERT_TRUE((plan<original_config_t, __half>(args_for<__half>(1, 5120), p).ok()));
    EXPECT_EQ(p.threads, 640);
    EXPECT_EQ(p.smem, 0u);
    // Shared-memory staging keeps x as part * vec floats.
    ASSERT_TRUE((plan<Cfg<16, 1, Space::smem>, float>(args_for<float>(1, 8192), p).ok()));
    EXPECT_EQ(p.smem, 8192u * 4);
    // Bulk rows: a ring stage holds one row (input only): bf16 h = 4096 is 8 KB a stage, 8 stages fit 108 KB.
    ASSERT_TRUE((plan<Cfg<16, 2, Space::bulk_rows, 1, 1>, __nv_bfloat16>(args_for<__nv_bfloat16>(64, 4096), p).ok()));
    EXPECT_EQ(p.ring, 8);
    EXPECT_EQ(p.smem, 8u * 8192);
    // fp32 h = 8192: 32 KB a stage, 3 fit.
    ASSERT_TRUE((plan<Cfg<16, 4, Space::bulk_rows, 1, 1>, float>(args_for<float>(64, 8192), p).ok()));
    EXPECT_EQ(p.ring, 3);
  }

  // ---- the kind with a residual -------------------------------------------------------------------

  static void check_residual_vectors_need_alignment() {
    // 16-byte vectors: pointers, h and strides must line up.
    EXPECT_TRUE((can_implement<Cfg<16, 1, Space::reread>, __half>(args_for<__half>(4, 4096)).ok()));
    EXPECT_EQ((can_implement<Cfg<16, 1, Space::reread>, __half>(args_for<__half>(4, 4096, 2)).code),
              StatusCode::unsupported);
    EXPECT_EQ((can_implement<Cfg<16, 1, Space::reread>, __half>(args_for<__half>(4, 4100)).code),
              StatusCode::unsupported);
    auto strided = args_for<float>(4, 4096);
    strided.residual_stride = 4098;
    EXPECT_EQ((can_implement<Cfg<16, 2, Space::registers>, float>(strided).code), StatusCode::unsupported);
    // Element accesses take anything valid.
    EXPECT_TRUE((can_implement<unaligned_config_t, __half>(args_for<__half>(4, 4101, 2)).ok()));
    EXPECT_TRUE((can_implement<unaligned_config_t, float>(strided).ok()));
    EXPECT_TRUE((can_implement<unaligned_config_t, float>(args_for<float>(3, 1 << 30)).ok()))
        << "reread staging has no row-length limit";
  }

  static void check_register_staging_covers_the_row() {
    // fp32 h = 8192: 2048 vectors. vpt 1 would need 2048 threads; vpt 2 needs 1024; vpt 8 fits 256.
    EXPECT_EQ((can_implement<Cfg<16, 1, Space::registers>, float>(args_for<float>(8, 8192)).code),
              StatusCode::unsupported);
    EXPECT_TRUE((can_implement<Cfg<16, 2, Space::registers>, float>(args_for<float>(8, 8192)).ok()));
    EXPECT_TRUE((can_implement<Cfg<16, 8, Space::registers>, float>(args_for<float>(8, 8192)).ok()));
    // A cluster split shares the row: vpt 1 over 2 blocks needs 1024 threads each.
    EXPECT_TRUE((can_implement<Cfg<16, 1, Space::registers, 2, 1>, float>(args_for<float>(8, 8192)).ok()));
    // fp16 vpt 8 is compiled for 384 threads: 384 * 8 * 8 = 24576 elements.
    EXPECT_TRUE((can_implement<Cfg<16, 8, Space::registers>, __half>(args_for<__half>(1, 24576)).ok()));
    EXPECT_EQ((can_implement<Cfg<16, 8, Space::registers>, __half>(args_for<__half>(1, 24576 + 8)).code),
              StatusCode::unsupported);
    // The grid: tokens * cs blocks.
    EXPECT_EQ((can_implement<Cfg<16, 1, Space::reread, 8, 0>, __half>(args_for<__half>(1 << 30, 64)).code),
              StatusCode::too_large);
  }

  static void check_residual_plan_sizing() {
    Plan p;
    // S's point: min(1024, h / vec) threads in whole warps; x staged as part * vec floats.
    ASSERT_TRUE((plan<original_config_t, __half>(args_for<__half>(1, 5120), p).ok()));
    EXPECT_EQ(p.threads, 640);
    EXPECT_EQ(p.part, 640);
    EXPECT_EQ(p.smem, 5120u * 4);
    ASSERT_TRUE((plan<original_config_t, float>(args_for<float>(1, 8192), p).ok()));
    EXPECT_EQ(p.threads, 1024) << "2048 vectors: 1024 threads, two rounds";
    // Register staging: ceil(part / vpt) threads. Cluster of 8 over h = 4096 fp16: 64 vectors each.
    ASSERT_TRUE((plan<Cfg<16, 1, Space::registers, 8, 1>, __half>(args_for<__half>(16, 4096), p).ok()));
    EXPECT_EQ(p.part, 64);
    EXPECT_EQ(p.threads, 64);
    EXPECT_EQ(p.smem, 0u);
    ASSERT_TRUE((plan<Cfg<16, 4, Space::registers>, __half>(args_for<__half>(16, 5120), p).ok()));
    EXPECT_EQ(p.threads, 160);
    // A row shorter than a warp's worth still gets one warp.
    ASSERT_TRUE((plan<unaligned_config_t, float>(args_for<float>(1, 7), p).ok()));
    EXPECT_EQ(p.threads, 32);
    // Uneven split: 77 elements over 8 blocks: 10 each, the last gets 7.
    ASSERT_TRUE((plan<Cfg<0, 1, Space::registers, 8, 0>, float>(args_for<float>(1, 77), p).ok()));
    EXPECT_EQ(p.part, 10);
  }

  static void check_plan_of_stages_3_to_6() {
    Plan p;
    // Persistent rows (stage 3): a block fits the row as stage 0 does; bf16 h = 8192 at vpt 1 needs 1024
    // threads, which its register estimate (64) allows; fp32 h = 8192 at vpt 2 would need 1024, beyond
    // the 768 its estimate (80) allows, so it refuses; vpt 4 takes 512.
    ASSERT_TRUE((plan<Cfg<16, 1, Space::persistent_rows, 1, 1>, __nv_bfloat16>(args_for<__nv_bfloat16>(2048, 8192), p).ok()));
    EXPECT_EQ(p.threads, 1024);
    EXPECT_EQ(p.smem, 0u);
    EXPECT_EQ((can_implement<Cfg<16, 2, Space::persistent_rows, 1, 1>, float>(args_for<float>(8, 8192)).code),
              StatusCode::unsupported);
    ASSERT_TRUE((plan<Cfg<16, 4, Space::persistent_rows, 1, 1>, float>(args_for<float>(8, 8192), p).ok()));
    EXPECT_EQ(p.threads, 512);
    // Warp rows (stage 4): blocks of 4 warps, rows of at most 32 * vpt vectors.
    ASSERT_TRUE((plan<Cfg<16, 4, Space::warp_rows, 1, 0>, __half>(args_for<__half>(100, 1024), p).ok()));
    EXPECT_EQ(p.threads, 128);
    EXPECT_EQ((can_implement<Cfg<16, 4, Space::warp_rows, 1, 0>, __half>(args_for<__half>(100, 1032)).code),
              StatusCode::unsupported);
    EXPECT_EQ((can_implement<Cfg<16, 8, Space::warp_rows, 1, 1>, float>(args_for<float>(1, 4096)).code),
              StatusCode::unsupported) << "spec widths are beyond a warp row";
    // Bulk rows (stage 6): a ring of as many row pairs (input + residual) as fit in 108 KB, 2 to 8.
    ASSERT_TRUE((plan<Cfg<16, 2, Space::bulk_rows, 1, 1>, __nv_bfloat16>(args_for<__nv_bfloat16>(64, 4096), p).ok()));
    EXPECT_EQ(p.ring, 6);  // 16 KB pairs
    EXPECT_EQ(p.smem, 6u * 16384);
    EXPECT_EQ(p.threads, 256);
    ASSERT_TRUE((plan<Cfg<16, 4, Space::bulk_rows, 1, 1>, float>(args_for<float>(64, 8192), p).ok()));
    EXPECT_EQ(p.ring, 2) << "64 KB pairs: at least two stages";
    ASSERT_TRUE((plan<Cfg<16, 2, Space::bulk_rows, 1, 0>, __half>(args_for<__half>(64, 256), p).ok()));
    EXPECT_EQ(p.ring, 8) << "at most 8 stages";
    // Late stores (stage 5): stage 0's cluster split.
    ASSERT_TRUE((plan<Cfg<16, 1, Space::cluster_late_stores, 8, 1>, float>(args_for<float>(1, 8192), p).ok()));
    EXPECT_EQ(p.part, 256);
    EXPECT_EQ(p.threads, 256);
  }
};

}  // namespace ktune::test::norm_rows

/// Every dispatch test of an op with a separate output, Op its traits struct.
#define KTUNE_OUTPUT_NORM_DISPATCH_TESTS(Op)                                                        \
  KTUNE_NORM_ROWS_TEST(Op##DtypeEntry, RefusesBeforeAnyCudaCall, Dispatch<Op>::check_dtype_entry()) \
  KTUNE_NORM_ROWS_TEST(Op##CanImplement, VectorsNeedAlignmentAndWholeVectors,                       \
                       Dispatch<Op>::check_output_vectors_need_alignment())                         \
  KTUNE_NORM_ROWS_TEST(Op##CanImplement, OriginalTakesItsGcdVector,                                 \
                       Dispatch<Op>::check_original_takes_its_gcd_vector())                         \
  KTUNE_NORM_ROWS_TEST(Op##Plan, GeometryOfTheKindWithoutResidual, Dispatch<Op>::check_output_plan_geometry())

/// The dispatch tests both ops with a residual have, Op its traits struct.
#define KTUNE_RESIDUAL_NORM_DISPATCH_TESTS(Op)                                                      \
  KTUNE_NORM_ROWS_TEST(Op##DtypeEntry, RefusesBeforeAnyCudaCall, Dispatch<Op>::check_dtype_entry()) \
  KTUNE_NORM_ROWS_TEST(Op##CanImplement, RegisterStagingCoversTheRowOrRefuses,                      \
                       Dispatch<Op>::check_register_staging_covers_the_row())                       \
  KTUNE_NORM_ROWS_TEST(Op##Plan, PersistentWarpRowsAndLateStoreStages,                              \
                       Dispatch<Op>::check_plan_of_stages_3_to_6())
