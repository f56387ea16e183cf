// kernels/merge_attn_states_lse/device_preparation.cuh: a group's inputs and float64 references drawn and computed
// on the GPU (ktune::DevicePreparation): what the Harness's fill_inputs and reference compute on the host, so that
// the benchmark uploads neither (bench/README.md, "Inputs and references on the GPU").
//
// One thread per element: the harness's draws (value_at, lse_pair: bitwise the host's, ktune/random.hpp) and the
// reference's element functions (reference.hpp, __host__ __device__), with the device's exp and log in their last
// bits. Where the weighted values cancel, those bits are lifted above 1e-12 of a small result, never of the
// output's scale, which is what the benchmark's check of its small groups allows (bench/host_inputs.hpp).
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include <ktune/dtype.hpp>
#include <ktune/harness.hpp>
#include <ktune/launch.hpp>
#include <ktune/status.hpp>

#include "harness.hpp"
#include "reference.hpp"

namespace ktune::ops::merge_attn_states_lse {

/// What the preparation writes at (token, head) pair i and at element e of a group with contiguous rows: the same
/// code on host and device, so that a CPU test runs it over a group as the kernel does (device_preparation_test.cu).
template <class E>
struct PreparationWrites {
  E* prefix_out;
  float* prefix_lse;
  E* suffix_out;
  float* suffix_lse;
  double* ref_out;   ///< [pairs * head_size]
  double* ref_lse;   ///< [pairs]
  std::int64_t pairs;  ///< tokens * heads
  std::int64_t head_size;
  DrawSeeds seeds;

  __host__ __device__ std::int64_t elements() const { return pairs * head_size; }
  __host__ __device__ void pair(std::int64_t i) const {
    const LsePair l = lse_pair(seeds.lses, static_cast<std::uint64_t>(i));
    prefix_lse[i] = l.prefix;
    suffix_lse[i] = l.suffix;
    ref_lse[i] = reference_weights(l.prefix, l.suffix).lse;
  }
  __host__ __device__ void element(std::int64_t e) const {
    const LsePair l = lse_pair(seeds.lses, static_cast<std::uint64_t>(e / head_size));
    const E a = from_float<E>(value_at(seeds.prefix_values, static_cast<std::uint64_t>(e)));
    const E b = from_float<E>(value_at(seeds.suffix_values, static_cast<std::uint64_t>(e)));
    prefix_out[e] = a;
    suffix_out[e] = b;
    ref_out[e] = reference_value(l.prefix, l.suffix, static_cast<double>(to_float(a)), static_cast<double>(to_float(b)));
  }
};

namespace detail {

template <class E>
__global__ void prepare_kernel(PreparationWrites<E> w) {
  const std::int64_t first = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t i = first; i < w.pairs; i += stride) w.pair(i);
  for (std::int64_t e = first; e < w.elements(); e += stride) w.element(e);
}

}  // namespace detail

/// The op's DevicePreparation (Family::DevicePreparation).
class DevicePreparation final : public ktune::DevicePreparation {
 public:
  Status prepare(const Shape& shape, DType dtype, std::uint64_t seed, const std::vector<void*>& tensors,
                 const std::vector<double*>& reference, cudaStream_t stream) const override {
    if (tensors.size() != Harness::count || reference.size() != 2)
      return Status::invalid("merge_attn_states_lse device preparation: expected its six tensors and two references");
    std::int64_t size[3];
    KTUNE_TRY(sizes_of(shape, {"tokens", "heads", "head_size"}, size));
    const std::int64_t tokens = size[0], heads = size[1], head_size = size[2];
    const std::int64_t pairs = tokens * heads;
    if (pairs == 0) return Status::success();  // every tensor is empty
    unsigned blocks = 0;
    KTUNE_TRY(grid_blocks(pairs * std::max<std::int64_t>(head_size, 1), 256, 16, blocks));
    return visit_dtype(dtype, [&](auto element) -> Status {
      using E = decltype(element);
      const PreparationWrites<E> w{static_cast<E*>(tensors[Harness::prefix_out]), static_cast<float*>(tensors[Harness::prefix_lse]),
                                   static_cast<E*>(tensors[Harness::suffix_out]), static_cast<float*>(tensors[Harness::suffix_lse]),
                                   reference[0], reference[1], pairs, head_size, DrawSeeds(seed)};
      return ::ktune::launch(detail::prepare_kernel<E>, LaunchShape{dim3(blocks), dim3(256)}, stream, w);
    });
  }
};

}  // namespace ktune::ops::merge_attn_states_lse
