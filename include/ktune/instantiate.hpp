// ktune/instantiate.hpp: turns a family's feasible points into kernels and registers them.
//
// Needs Boost.Hana, so it is used by generated translation units and tests, never by the headers a
// user includes. The feasible points come from FeasibleSet (value-level, constexpr); Hana walks the
// indices of one shard and each index becomes one configuration type.
//
// A family (kernels/<op>/family.cuh) provides, besides what space.hpp lists:
//   static constexpr const char* name;
//   template <class E> using Args = ...;                                 // one call's arguments
//   template <class Cfg, class E> static Status can_implement(const Args<E>&);
//   template <class Cfg, class E> static Status enqueue(const Args<E>&, cudaStream_t); // the launch alone
//   (a variant runs through ktune::run_variant: can_implement, empty call, enqueue; ktune/family.hpp)
//   template <class Cfg, class E> static KernelResources resources(const Args<E>&);
//   template <class E> static Status original_can_implement(const Args<E>&);
//   template <class E> static Status original_run(const Args<E>&, cudaStream_t);
//   template <class E> static KernelResources original_resources(const Args<E>&);
//   using Harness = ...;                                                 // a ktune::Harness (harness.hpp)
#pragma once

#include <boost/hana.hpp>

#include <type_traits>
#include <vector>

#include "dtype.hpp"
#include "family.hpp"
#include "harness.hpp"
#include "registry.hpp"
#include "space.hpp"

namespace ktune {

namespace detail {
template <class Family, class Cfg, class E>
Status run_erased(const void* a, cudaStream_t s) {
  return run_variant<Family, Cfg, E>(*static_cast<const typename Family::template Args<E>*>(a), s);
}
template <class Family, class Cfg, class E>
Status can_implement_erased(const void* a) {
  return Family::template can_implement<Cfg, E>(*static_cast<const typename Family::template Args<E>*>(a));
}
template <class Family, class Cfg, class E>
KernelResources resources_erased(const void* a) {
  return Family::template resources<Cfg, E>(*static_cast<const typename Family::template Args<E>*>(a));
}
template <class Family, class E>
Status original_run_erased(const void* a, cudaStream_t s) {
  return Family::template original_run<E>(*static_cast<const typename Family::template Args<E>*>(a), s);
}
template <class Family, class E>
Status original_can_implement_erased(const void* a) {
  return Family::template original_can_implement<E>(*static_cast<const typename Family::template Args<E>*>(a));
}
template <class Family, class E>
KernelResources original_resources_erased(const void* a) {
  return Family::template original_resources<E>(*static_cast<const typename Family::template Args<E>*>(a));
}
/// Whether the family names a DevicePreparation (ktune/harness.hpp) for its op.
template <class Family, class = void>
struct has_device_preparation : std::false_type {};
template <class Family>
struct has_device_preparation<Family, std::void_t<typename Family::DevicePreparation>> : std::true_type {};
}  // namespace detail

/// Calls f(hana::type_c<Cfg>, point) for the feasible points of index Shard, Shard + Shards, ... of
/// the family's space for (Arch, sizeof(E)).
template <class Family, int Arch, class E, std::size_t Shard, std::size_t Shards, class F>
void for_each_feasible(F&& f) {
  namespace hana = boost::hana;
  using Set = FeasibleSet<Family, Arch, static_cast<int>(sizeof(E))>;
  constexpr std::size_t in_shard = Set::count > Shard ? (Set::count - Shard + Shards - 1) / Shards : 0;
  hana::for_each(hana::make_range(hana::size_c<0>, hana::size_c<in_shard>), [&](auto k) {
    constexpr std::size_t index = Shard + decltype(k)::value * Shards;
    f(hana::type_c<config_at_t<Set, index>>, Set::points[index]);
  });
}

/// Registers one shard of the family's feasible variants for every element type.
template <class Family, int Arch, std::size_t Shard, std::size_t Shards>
void register_shard(Registry& registry = Registry::global()) {
  auto for_dtype = [&](auto element) {
    using E = decltype(element);
    for_each_feasible<Family, Arch, E, Shard, Shards>([&](auto cfg, const auto& point) {
      using Cfg = typename decltype(cfg)::type;
      Variant v;
      v.op = Family::name;
      v.id = Family::space.id(point);
      v.dtype = dtype_v<E>;
      v.arch = Arch;
      v.point.assign(point.begin(), point.end());
      v.run = &detail::run_erased<Family, Cfg, E>;
      v.can_implement = &detail::can_implement_erased<Family, Cfg, E>;
      v.resources = &detail::resources_erased<Family, Cfg, E>;
      registry.add(std::move(v));
    });
  };
  for_dtype(float{});
  for_dtype(__half{});
  for_dtype(__nv_bfloat16{});
}

/// Registers the family's original kernel S (id "original") for every element type, and the op's
/// Harness (Family::Harness) for the benchmark and generic checks, with its DevicePreparation when the
/// family names one.
template <class Family, int Arch>
void register_original(Registry& registry = Registry::global()) {
  HarnessRegistry::global().add(std::make_unique<typename Family::Harness>());
  if constexpr (detail::has_device_preparation<Family>::value)
    HarnessRegistry::global().add_device_preparation(Family::name, std::make_unique<typename Family::DevicePreparation>());
  auto for_dtype = [&](auto element) {
    using E = decltype(element);
    Variant v;
    v.op = Family::name;
    v.id = "original";
    v.dtype = dtype_v<E>;
    v.arch = Arch;
    v.run = &detail::original_run_erased<Family, E>;
    v.can_implement = &detail::original_can_implement_erased<Family, E>;
    v.resources = &detail::original_resources_erased<Family, E>;
    registry.add(std::move(v));
  };
  for_dtype(float{});
  for_dtype(__half{});
  for_dtype(__nv_bfloat16{});
}

}  // namespace ktune

/// Used by the generated translation units (bench/shard.cu.in): one line per shard.
#define KTUNE_REGISTER_SHARD(FAMILY, ARCH, SHARD, SHARDS)                                        \
  namespace {                                                                                    \
  const bool ktune_shard_registered_ = (::ktune::register_shard<FAMILY, ARCH, SHARD, SHARDS>(), true); \
  }

#define KTUNE_REGISTER_ORIGINAL(FAMILY, ARCH)                                                    \
  namespace {                                                                                    \
  const bool ktune_original_registered_ = (::ktune::register_original<FAMILY, ARCH>(), true);    \
  }
