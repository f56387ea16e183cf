// kernels/rmsnorm/family.cuh: the tunable family S_θ of rmsnorm, the file the build and the tools
// include. Its device code and host adapter are the row structures every RMS norm op shares
// (kernels/common/norm_rows/, for the kind without a residual: output <- input * rsqrt(sum(input^2) / h +
// eps) * weight); this file adds the op's name, arguments, harness and S.
#pragma once

#include <ktune/registry.hpp>
#include <ktune/status.hpp>

#include "../common/norm_rows/device_preparation.cuh"
#include "../common/norm_rows/family.cuh"
#include "args.hpp"
#include "harness.hpp"
#include "original.cuh"
#include "space.hpp"

namespace ktune::ops::rmsnorm {

/// The host adapter of the family (docs/kernel-folder.md).
struct Family : norm_rows::RowFamily<norm_rows::Plain, Space, Args> {
  static constexpr const char* name = "rmsnorm";
  using Harness = ops::rmsnorm::Harness;
  using DevicePreparation = norm_rows::DevicePreparation<norm_rows::Plain, Draw, eps_of, overflow_threshold>;

  template <class E>
  static Status original_can_implement(const Args<E>& a) {
    return original::can_implement(a);
  }
  template <class E>
  static Status original_run(const Args<E>& a, cudaStream_t stream) {
    return original::run(a, stream);
  }
  template <class E>
  static KernelResources original_resources(const Args<E>& a) {
    return original::resources(a);
  }
};

/// The configuration type of a named point of the space.
template <const Space::Point& P>
using config_of_t = Space::Config<P[0], P[1], P[2], P[3], P[4]>;
using unaligned_config_t = config_of_t<Space::unaligned_point>;
using original_config_t = config_of_t<Space::original_point>;

}  // namespace ktune::ops::rmsnorm
