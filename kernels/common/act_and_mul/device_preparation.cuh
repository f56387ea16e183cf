// kernels/common/act_and_mul/device_preparation.cuh: an act-and-mul op's inputs and float64 reference drawn and
// computed on the GPU (ktune::DevicePreparation): what its Harness's random_input and reference compute on the
// host, for the groups too large to compute there while the GPU times the one before.
//
// The largest groups (8192 x 28672 outputs, an erfc or an exp per element) took the host workers seconds
// each, and a ten-op tune's GPU waited 0.1-6.9 s for them; their float64 references, 1.9 GB a group, were
// 60% of the bytes uploaded (docs/scale.md). Here one kernel draws each input with the host's uniform_at
// (bitwise the same values: ktune/random.hpp) and computes the op's reference function, the same source
// as the host's (kernels/<op>/reference.hpp, __host__ __device__), with the device's libm: erfc and exp
// within a few ulp of the host's, far below any spec tolerance. tests/kernels/common/act_and_mul checks
// both against the host on the GPU, and the benchmark checks every group small enough for the host too
// (bench/README.md, "Inputs and references on the GPU").
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include <ktune/dtype.hpp>
#include <ktune/harness.hpp>
#include <ktune/launch.hpp>
#include <ktune/random.hpp>
#include <ktune/status.hpp>

namespace ktune::ops::act_and_mul {

namespace detail {

/// in[t, c] as Harness::random_input draws it (x in [x_lo, x_hi) for c < d, y in [y_lo, y_hi) after) and
/// ref[t, i] = Reference{}(x, y) in float64 from the stored (rounded) x and y.
template <class E, class Reference>
__global__ void prepare_kernel(E* __restrict__ in, double* __restrict__ ref, std::int64_t tokens, std::int64_t d,
                               std::uint64_t seed, float x_lo, float x_hi, float y_lo, float y_hi) {
  const std::int64_t n = tokens * d, stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n; i += stride) {
    const std::int64_t t = i / d, at = i + t * d;  // (t, c) of in, whose rows hold 2d elements
    const E x = from_float<E>(uniform_at(seed, static_cast<std::uint64_t>(at), x_lo, x_hi));
    const E y = from_float<E>(uniform_at(seed, static_cast<std::uint64_t>(at + d), y_lo, y_hi));
    in[at] = x;
    in[at + d] = y;
    ref[i] = Reference{}(static_cast<double>(to_float(x)), static_cast<double>(to_float(y)));
  }
}

}  // namespace detail

/// The DevicePreparation of an act-and-mul op whose Harness has the shared layout (tensors in, out; shape
/// tokens, d; the static ranges x_lo, x_hi, y_lo, y_hi) and whose Reference is a functor double(double x,
/// double y) callable on host and device.
template <class Harness, class Reference>
class DevicePreparation final : public ktune::DevicePreparation {
 public:
  Status prepare(const Shape& shape, DType dtype, std::uint64_t seed, const std::vector<void*>& tensors,
                 const std::vector<double*>& reference, cudaStream_t stream) const override {
    if (tensors.size() != Harness::count || reference.size() != 1)
      return Status::invalid("act_and_mul device preparation: expected the tensors in and out and one reference");
    std::int64_t size[2];
    KTUNE_TRY(sizes_of(shape, {"tokens", "d"}, size));
    const std::int64_t tokens = size[0], d = size[1];
    if (tokens == 0 || d == 0) return Status::success();
    unsigned blocks = 0;
    KTUNE_TRY(grid_blocks(tokens * d, 256, 16, blocks));
    return visit_dtype(dtype, [&](auto element) -> Status {
      using E = decltype(element);
      return ::ktune::launch(detail::prepare_kernel<E, Reference>, LaunchShape{dim3(blocks), dim3(256)}, stream,
                             static_cast<E*>(tensors[Harness::in]), reference[0], tokens, d, seed, Harness::x_lo,
                             Harness::x_hi, Harness::y_lo, Harness::y_hi);
    });
  }
};

}  // namespace ktune::ops::act_and_mul
