#include <gtest/gtest.h>

#include <ktune/arch.hpp>

namespace {
TEST(Arch, EveryListedArchitectureHasARow) {
  for (int sm : ktune::supported_archs) {
    const auto a = ktune::arch_limits(sm);
    EXPECT_TRUE(a.known()) << sm;
    EXPECT_EQ(a.sm, sm);
    EXPECT_EQ(a.warp_size, 32);
    EXPECT_EQ(a.max_threads_per_block, 1024);
    EXPECT_LE(a.smem_per_block_optin, a.smem_per_sm);
    EXPECT_EQ(a.clusters, sm >= 90);
    EXPECT_EQ(a.pdl, sm >= 90);
  }
  EXPECT_FALSE(ktune::arch_limits(75).known());
}

TEST(Arch, HopperRowFromTheProgrammingGuide) {
  constexpr auto h = ktune::arch_limits(90);
  static_assert(h.max_threads_per_sm == 2048 && h.max_blocks_per_sm == 32, "sm_90 residency limits");
  EXPECT_EQ(h.smem_per_block_optin, 232448);  // 227 KB
  EXPECT_EQ(h.smem_per_sm, 233472);           // 228 KB
  EXPECT_EQ(h.regs_per_sm, 65536);
  EXPECT_EQ(h.max_regs_per_thread, 255);
  EXPECT_EQ(h.warps_per_sm(), 64);
  EXPECT_EQ(h.max_cluster_size, 8);
  EXPECT_EQ(ktune::arch_limits(86).max_threads_per_sm, 1536);
  EXPECT_EQ(ktune::arch_limits(100).max_vector_bytes, 32);
}

TEST(Arch, UnknownMinorRevisionsUseTheirFamilyRow) {
  EXPECT_EQ(ktune::nearest_known_arch(90), 90);
  EXPECT_EQ(ktune::nearest_known_arch(87), 86);
  EXPECT_EQ(ktune::nearest_known_arch(103), 100);
  EXPECT_EQ(ktune::nearest_known_arch(121), 120);
  EXPECT_EQ(ktune::nearest_known_arch(75), 0);
}
}  // namespace
