// kernels/common/norm_rows/device_preparation.cuh: an RMS norm op's inputs and float64 reference drawn and
// computed on the GPU (ktune::DevicePreparation): what its Harness's fill_inputs and reference compute on the
// host, so that the benchmark uploads neither (bench/README.md, "Inputs and references on the GPU").
//
// A group of 8192 x 8192 is 0.5-1 GB of float64 references per output, which the host computed and the GPU
// waited to receive. Here one block per row draws the row with the host's uniform_at (bitwise the same
// values: ktune/random.hpp, through the op's input_value), sums the squares of the stored values in float64
// and writes the reference with the host's formula (kernels/<op>/reference.hpp, the products in its order).
// Only the sum's order differs from the host's, a tree instead of a loop: the references agree within a few
// ulp, far inside the 1e-12 the benchmark's check of the small groups allows and any spec tolerance.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include <ktune/dtype.hpp>
#include <ktune/harness.hpp>
#include <ktune/launch.hpp>
#include <ktune/status.hpp>

namespace ktune::ops::norm_rows {

namespace detail {

inline constexpr int prepare_threads = 256;

/// The sum of every thread's v, the same on every thread and, for one block size, the same bits on every run.
__device__ inline double block_sum(double v, double* scratch /* [prepare_threads / 32] */) {
  for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_down_sync(0xffffffffu, v, offset);
  if (threadIdx.x % 32 == 0) scratch[threadIdx.x / 32] = v;
  __syncthreads();
  double total = 0;
  for (int w = 0; w < prepare_threads / 32; ++w) total += scratch[w];
  __syncthreads();  // the next row's partial sums overwrite scratch
  return total;
}

/// What the op's reference.hpp's as_stored does: beyond the storage type's range, the rounded store is ±inf.
__device__ inline double as_stored(double v, double overflow_threshold) {
  if (fabs(v) >= overflow_threshold) return v > 0 ? HUGE_VAL : -HUGE_VAL;
  return v;
}

/// Tensors in Harness::tensors() order (Kind's layout): input [tokens, h], the residual [tokens, h] where there
/// is one, weight [h]; ref_out [tokens, h] is the normalised output's reference (out_input in place), and
/// ref_residual [tokens, h] the new residual's. Grid-stride over rows, one block each.
template <class Kind, class E, class Draw>
__global__ void __launch_bounds__(prepare_threads)
    prepare_rows_kernel(E* __restrict__ input, E* __restrict__ residual, E* __restrict__ weight, double* __restrict__ ref_out,
                        double* __restrict__ ref_residual, std::int64_t tokens, std::int64_t h, std::uint64_t seed, double eps,
                        double overflow_threshold) {
  __shared__ double scratch[prepare_threads / 32];
  // Tensor k's element `at` as fill_inputs stores it, and as the host's reference reads it (in float64).
  auto stored = [seed](int k, std::int64_t at) { return from_float<E>(Draw{}(k, seed, static_cast<std::uint64_t>(at))); };
  auto value = [](E v) { return static_cast<double>(to_float(v)); };

  const std::int64_t grid_threads = static_cast<std::int64_t>(gridDim.x) * prepare_threads;
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * prepare_threads + threadIdx.x; i < h; i += grid_threads)
    weight[i] = stored(Kind::weight_tensor, i);

  for (std::int64_t t = blockIdx.x; t < tokens; t += gridDim.x) {
    double sum = 0;
    for (std::int64_t i = threadIdx.x; i < h; i += prepare_threads) {
      const std::int64_t at = t * h + i;
      const E in = stored(Kind::input_tensor, at);
      input[at] = in;
      double x = value(in);
      if constexpr (Kind::residual) {
        const E r = stored(Kind::residual_tensor, at);
        residual[at] = r;
        x += value(r);
      }
      sum += x * x;
    }
    const double inv_rms = 1.0 / sqrt(block_sum(sum, scratch) / static_cast<double>(h) + eps);
    for (std::int64_t i = threadIdx.x; i < h; i += prepare_threads) {
      const std::int64_t at = t * h + i;
      // x again, the input (plus the residual) added in float64 as the host's reference adds them: drawn again
      // (a few integer operations) rather than read back.
      double x = value(stored(Kind::input_tensor, at));
      if constexpr (Kind::residual) x += value(stored(Kind::residual_tensor, at));
      const double w = Kind::weight_offset + value(stored(Kind::weight_tensor, i));
      ref_out[at] = as_stored(x * inv_rms * w, overflow_threshold);
      if constexpr (Kind::residual) ref_residual[at] = as_stored(x, overflow_threshold);
    }
  }
}

}  // namespace detail

/// The DevicePreparation of the RMS norm op of kind `Kind` (kind.hpp), whose Harness has Kind's tensors
/// (shape tokens, h; contiguous rows) and draws tensor k's element i as Draw{}(k, seed, i), a functor callable
/// on host and device (the op's input_value). Eps and OverflowThreshold are the op's eps_of and
/// overflow_threshold (harness.hpp, reference.hpp).
template <class Kind, class Draw, float (*Eps)(const Shape&), double (*OverflowThreshold)(DType)>
class DevicePreparation final : public ktune::DevicePreparation {
 public:
  Status prepare(const Shape& shape, DType dtype, std::uint64_t seed, const std::vector<void*>& tensors,
                 const std::vector<double*>& reference, cudaStream_t stream) const override {
    constexpr std::size_t outputs = Kind::residual ? 2 : 1;
    if (tensors.size() != 3 || reference.size() != outputs)
      return Status::invalid(Kind::residual ? "norm_rows device preparation: expected the tensors input, residual and "
                                              "weight and two references"
                                            : "norm_rows device preparation: expected the tensors input, weight and "
                                              "output and one reference");
    std::int64_t size[2];
    KTUNE_TRY(sizes_of(shape, {"tokens", "h"}, size));
    const std::int64_t tokens = size[0], h = size[1];
    if (h == 0) return Status::success();  // every tensor is empty
    // One block per row, up to 8 per SM; with no rows, one still draws the weight.
    unsigned blocks = 0;
    KTUNE_TRY(grid_blocks(tokens, 1, 8, blocks));
    return visit_dtype(dtype, [&](auto element) -> Status {
      using E = decltype(element);
      E* input = static_cast<E*>(tensors[Kind::input_tensor]);
      E* residual = nullptr;
      if constexpr (Kind::residual) residual = static_cast<E*>(tensors[Kind::residual_tensor]);
      E* weight = static_cast<E*>(tensors[Kind::weight_tensor]);
      return ::ktune::launch(detail::prepare_rows_kernel<Kind, E, Draw>,
                             LaunchShape{dim3(blocks), dim3(detail::prepare_threads)}, stream, input, residual, weight,
                             reference[0], Kind::residual ? reference[1] : nullptr, tokens, h, seed,
                             static_cast<double>(Eps(shape)), OverflowThreshold(dtype));
    });
  }
};

}  // namespace ktune::ops::norm_rows
