// Derived by ktune 0.1.0 (`ktune derive`, `ktune agent`) for op add_bias from S (add_bias.cu,
// 0xbac3b0043287fa13) and spec.json (0xef37ef904008cb27).
// Do not edit: change S or spec.json and run `ktune derive` (or `ktune agent`) again.
//
// kernels/add_bias/family_base.cuh: what every family of add_bias shares and the LLM does not write: the op's
// name, Args, Harness and S (original_*), on top of the LLM's Space (space.hpp). family.cuh derives `struct
// Family : FamilyBase` and adds the family's own can_implement, run, resources and enqueue
// (docs/kernel-folder.md; include/ktune/instantiate.hpp lists what a family provides).
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <limits>
#include <type_traits>
#include <utility>

#include <ktune/arch.hpp>
#include <ktune/dtype.hpp>
#include <ktune/family.hpp>
#include <ktune/intrinsics.cuh>
#include <ktune/launch.hpp>
#include <ktune/registry.hpp>
#include <ktune/space.hpp>
#include <ktune/status.hpp>

#include "args.hpp"
#include "harness.hpp"
#include "original.cuh"
#include "space.hpp"

namespace ktune::ops::add_bias {

namespace derived {
template <class S, class = void>
struct has_unaligned_function : std::false_type {};
template <class S>
struct has_unaligned_function<S, std::void_t<decltype(S::unaligned_point(4))>> : std::true_type {};

/// Whether `p` is feasible on every architecture ktune supports, for one element size.
constexpr bool feasible_everywhere(const Space::Point& p, int element_bytes) {
  for (int arch : ktune::supported_archs)
    if (!Space::feasible(p, ktune::arch_limits(arch), element_bytes).ok()) return false;
  return true;
}

template <class S>
constexpr bool unaligned_feasible_everywhere() {
  if constexpr (has_unaligned_function<S>::value)
    return feasible_everywhere(S::unaligned_point(4), 4) && feasible_everywhere(S::unaligned_point(2), 2);
  else
    return true;  // the assertion on its form fires instead
}

/// The configuration type of Space::unaligned_point(ElementBytes).
template <int ElementBytes>
struct UnalignedConfig {
  static constexpr Space::Point point = Space::unaligned_point(ElementBytes);
  using type = decltype(ktune::detail::config_of<Space, point>(std::make_index_sequence<Space::space.rank>{}));
};
}  // namespace derived

// The public API relies on these two points on every GPU it runs on: say so at compile time, in words.
static_assert(derived::has_unaligned_function<Space>::value,
              "space.hpp: Space::unaligned_point must be a function of the element size: "
              "static constexpr Point unaligned_point(int element_bytes).");
static_assert(derived::feasible_everywhere(Space::default_point, 4) &&
                  derived::feasible_everywhere(Space::default_point, 2),
              "space.hpp: Space::default_point must be feasible on every architecture of ktune::supported_archs for "
              "4- and 2-byte elements (no PDL, no cluster, <= 48 KB of shared memory): it is the general "
              "configuration wherever no tuned row applies.");
static_assert(derived::unaligned_feasible_everywhere<Space>(),
              "space.hpp: Space::unaligned_point(element_bytes) must be feasible on every architecture of "
              "ktune::supported_archs for its element size: the public API runs it for calls no other "
              "configuration can implement.");

/// The family's base: the LLM's Space plus what follows from S and spec.json. family.cuh adds, as
/// static member templates of `struct Family : FamilyBase`:
///   can_implement<Cfg, E>(const Args<E>&)          validate() plus what Cfg needs; no CUDA call
///   enqueue<Cfg, E>(const Args<E>&, cudaStream_t)  the launch alone (ktune::launch), for a call
///                                                  can_implement accepted and that is not empty
///   resources<Cfg, E>(const Args<E>&)              kernel pointer, threads, dynamic smem, cluster
/// A variant runs through ktune::run_variant<Family, Cfg, E> (ktune/family.hpp): can_implement, an
/// empty call succeeds without launching, then enqueue.
struct FamilyBase : Space {
  static constexpr const char* name = "add_bias";
  template <class E> using Args = ops::add_bias::Args<E>;
  using Harness = ops::add_bias::Harness;

  /// The configuration type of Space::unaligned_point(ElementBytes): the public API's fallback for calls
  /// the tuned configuration cannot implement.
  template <int ElementBytes> using unaligned_config = typename derived::UnalignedConfig<ElementBytes>::type;

  template <class E>
  static ktune::Status original_can_implement(const Args<E>& a) {
    return original::can_implement(a);
  }
  template <class E>
  static ktune::Status original_run(const Args<E>& a, cudaStream_t stream) {
    return original::run(a, stream);
  }
  template <class E>
  static ktune::KernelResources original_resources(const Args<E>& a) {
    return original::resources(a);
  }
};

}  // namespace ktune::ops::add_bias
