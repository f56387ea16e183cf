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
#include <ktune/status.hpp>

#include "harness.hpp"
#include "reference.hpp"

namespace ktune::ops::merge_attn_states_lse {

namespace detail {

/// pairs = tokens * heads (LSEs, out_lse), pairs * head_size elements (values, out); contiguous rows.
template <class E>
__global__ void prepare_kernel(E* __restrict__ prefix_out, float* __restrict__ prefix_lse, E* __restrict__ suffix_out,
                               float* __restrict__ suffix_lse, double* __restrict__ ref_out, double* __restrict__ ref_lse,
                               std::int64_t pairs, std::int64_t head_size, std::uint64_t seed) {
  const DrawSeeds seeds(seed);
  const std::int64_t first = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t i = first; i < pairs; i += stride) {
    const LsePair l = lse_pair(seeds.lses, static_cast<std::uint64_t>(i));
    prefix_lse[i] = l.prefix;
    suffix_lse[i] = l.suffix;
    ref_lse[i] = reference_weights(l.prefix, l.suffix).lse;
  }
  for (std::int64_t e = first; e < pairs * head_size; e += stride) {
    const LsePair l = lse_pair(seeds.lses, static_cast<std::uint64_t>(e / head_size));
    const E a = from_float<E>(value_at(seeds.prefix_values, static_cast<std::uint64_t>(e)));
    const E b = from_float<E>(value_at(seeds.suffix_values, static_cast<std::uint64_t>(e)));
    prefix_out[e] = a;
    suffix_out[e] = b;
    ref_out[e] = reference_value(l.prefix, l.suffix, static_cast<double>(to_float(a)), static_cast<double>(to_float(b)));
  }
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
      detail::prepare_kernel<E><<<blocks, 256, 0, stream>>>(
          static_cast<E*>(tensors[Harness::prefix_out]), static_cast<float*>(tensors[Harness::prefix_lse]),
          static_cast<E*>(tensors[Harness::suffix_out]), static_cast<float*>(tensors[Harness::suffix_lse]), reference[0],
          reference[1], pairs, head_size, seed);
      KTUNE_CHECK_LAUNCH();
      return Status::success();
    });
  }
};

}  // namespace ktune::ops::merge_attn_states_lse
