// ktune/arch.hpp: the hardware model r(h) that compile-time feasibility rules are checked against.
//
// One constexpr row per supported architecture, from the CUDA C++ Programming Guide's table of
// technical specifications per compute capability. The sm_90 row is checked against the device in
// tests/core/gpu_arch_test.cu. Rules receive the architecture explicitly (DESIGN.md contract 9):
// never infer it from __CUDA_ARCH__ on the host side.
#pragma once

namespace ktune {

struct ArchLimits {
  int sm = 0;                           ///< compute capability as 10*major+minor (90 for sm_90)
  int warp_size = 32;
  int max_threads_per_block = 1024;
  int max_threads_per_sm = 0;
  int max_blocks_per_sm = 0;
  int regs_per_sm = 65536;              ///< 32-bit registers
  int max_regs_per_block = 65536;
  int max_regs_per_thread = 255;
  int smem_per_sm = 0;                  ///< bytes
  int smem_per_block_default = 48 * 1024;  ///< without cudaFuncSetAttribute
  int smem_per_block_optin = 0;         ///< bytes, after raising the dynamic limit
  int max_vector_bytes = 16;            ///< widest global load/store per thread
  bool clusters = false;                ///< thread-block clusters and distributed shared memory
  int max_cluster_size = 1;             ///< portable cluster size
  bool pdl = false;                     ///< programmatic dependent launch

  constexpr bool known() const noexcept { return sm != 0; }
  constexpr int warps_per_sm() const noexcept { return max_threads_per_sm / warp_size; }
};

namespace detail {
constexpr ArchLimits arch_table[] = {
    //  sm  warp tpb   tpSM  bSM  regsSM regsB  rT   smemSM       default   optin        vec clus  csz pdl
    {80, 32, 1024, 2048, 32, 65536, 65536, 255, 164 * 1024, 48 * 1024, 163 * 1024, 16, false, 1, false},
    {86, 32, 1024, 1536, 16, 65536, 65536, 255, 100 * 1024, 48 * 1024, 99 * 1024, 16, false, 1, false},
    {89, 32, 1024, 1536, 24, 65536, 65536, 255, 100 * 1024, 48 * 1024, 99 * 1024, 16, false, 1, false},
    {90, 32, 1024, 2048, 32, 65536, 65536, 255, 228 * 1024, 48 * 1024, 227 * 1024, 16, true, 8, true},
    // sm_100 adds 32-byte (256-bit) global loads and stores.
    {100, 32, 1024, 2048, 32, 65536, 65536, 255, 228 * 1024, 48 * 1024, 227 * 1024, 32, true, 8, true},
    {120, 32, 1024, 1536, 32, 65536, 65536, 255, 128 * 1024, 48 * 1024, 99 * 1024, 16, true, 8, true},
};
}  // namespace detail

/// Architectures with a row in the table, oldest first.
inline constexpr int supported_archs[] = {80, 86, 89, 90, 100, 120};

/// The limits of `sm` (e.g. 90); an unknown architecture gives a row with known() == false.
constexpr ArchLimits arch_limits(int sm) noexcept {
  for (const ArchLimits& a : detail::arch_table)
    if (a.sm == sm) return a;
  return ArchLimits{};
}

/// The row used for a device of compute capability `sm` that the table does not list: the newest
/// known row of the same major version, else the newest older one. Lets a new minor revision run the
/// tables of its family instead of failing.
constexpr int nearest_known_arch(int sm) noexcept {
  int best = 0;
  for (const ArchLimits& a : detail::arch_table)
    if (a.sm <= sm && a.sm > best) best = a.sm;
  return best;
}

}  // namespace ktune
