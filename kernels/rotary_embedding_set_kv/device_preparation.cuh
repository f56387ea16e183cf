// kernels/rotary_embedding_set_kv/device_preparation.cuh: a group's inputs and float64 references drawn and
// computed on the GPU (ktune::DevicePreparation): what the Harness's fill_inputs and reference compute on the
// host, so that the benchmark uploads only the positions and the slots (bench/README.md, "Inputs and
// references on the GPU").
//
// q, k and the cos/sin cache are rotary_embedding's preparation, element for element (the same draws: this op's
// DrawSeeds extend that op's). value and the buffers are one thread per element, each slot's reference first
// its drawn contents; a second kernel then writes the reference of the slots the tokens store into, from the
// first kernel's reference of k (divided by k_scale) and value's draws.
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
#include "kernels/rotary_embedding/device_preparation.cuh"
#include "reference.hpp"

namespace ktune::ops::rotary_embedding_set_kv {

/// What the preparation writes beyond rotary_embedding's: value, the buffers and their references.
template <class E>
struct StoreWrites {
  const std::int64_t* cache_loc;
  E* value;
  E* k_buffer;
  E* v_buffer;
  const double* ref_key;
  double* ref_k_buffer;
  double* ref_v_buffer;
  std::int64_t tokens, row, rows;  ///< row = kv_heads * head_size; rows = slots
  double k_scale, v_scale;
  DrawSeeds seeds;

  __host__ __device__ std::int64_t value_elements() const { return tokens * row; }
  __host__ __device__ std::int64_t buffer_elements() const { return rows * row; }

  __host__ __device__ void value_element(std::int64_t i) const {
    value[i] = from_float<E>(head_value(seeds.value, static_cast<std::uint64_t>(i)));
  }
  __host__ __device__ void buffer_element(std::int64_t i) const {
    const E k = from_float<E>(slot_value(seeds.k_buffer, static_cast<std::uint64_t>(i)));
    const E v = from_float<E>(slot_value(seeds.v_buffer, static_cast<std::uint64_t>(i)));
    k_buffer[i] = k;
    v_buffer[i] = v;
    ref_k_buffer[i] = static_cast<double>(to_float(k));
    ref_v_buffer[i] = static_cast<double>(to_float(v));
  }
  /// Element i of the tokens' rows: its slot's reference (after buffer_element, in a later kernel).
  __host__ __device__ void stored_element(std::int64_t i) const {
    const std::int64_t t = i / row, c = i - t * row, s = cache_loc[t];
    if (s < 0 || s >= rows) return;
    ref_k_buffer[s * row + c] = ref_key[i] / k_scale;
    ref_v_buffer[s * row + c] =
        static_cast<double>(to_float(from_float<E>(head_value(seeds.value, static_cast<std::uint64_t>(i))))) / v_scale;
  }
};

namespace detail {

template <class E>
__global__ void prepare_store_kernel(rotary_embedding::PreparationWrites<E> w, StoreWrites<E> s) {
  const std::int64_t first = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t i = first; i < w.cache_elements(); i += stride) w.cache_element(i);
  for (std::int64_t e = first; e < w.head_elements(); e += stride) w.head_element(e);
  for (std::int64_t i = first; i < s.value_elements(); i += stride) s.value_element(i);
  for (std::int64_t i = first; i < s.buffer_elements(); i += stride) s.buffer_element(i);
}

template <class E>
__global__ void prepare_stored_kernel(StoreWrites<E> s) {
  const std::int64_t first = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t i = first; i < s.value_elements(); i += stride) s.stored_element(i);
}

}  // namespace detail

/// The op's DevicePreparation (Family::DevicePreparation).
class DevicePreparation final : public ktune::DevicePreparation {
 public:
  Status prepare(const Shape& shape, DType dtype, std::uint64_t seed, const std::vector<void*>& tensors,
                 const std::vector<double*>& reference, cudaStream_t stream) const override {
    if (tensors.size() != Harness::count || reference.size() != 4)
      return Status::invalid("rotary_embedding_set_kv device preparation: expected its eight tensors and four references");
    std::int64_t size[5];
    KTUNE_TRY(sizes_of(shape, {"tokens", "q_heads", "kv_heads", "head_size", "rotary_dim"}, size));
    const std::int64_t tokens = size[0], q_heads = size[1], kv_heads = size[2], head_size = size[3], rotary_dim = size[4];
    if (rotary_dim > head_size) return Status::invalid("rotary_embedding_set_kv device preparation: rotary_dim past head_size");
    if (tokens == 0) return Status::success();  // every tensor is empty
    const std::int64_t rows = cache_rows_per_token * tokens, row = kv_heads * head_size;
    const DrawSeeds seeds(seed);
    const std::vector<std::int64_t> positions = draw_positions(tokens, tokens, seeds.positions);
    const std::vector<std::int64_t> slots = draw_cache_loc(tokens, rows, seeds.cache_loc);
    // From pageable memory: the copy has taken the bytes when it returns, so the vectors may go.
    KTUNE_CUDA_TRY(cudaMemcpyAsync(tensors[Harness::positions], positions.data(), positions.size() * sizeof(std::int64_t),
                                   cudaMemcpyHostToDevice, stream));
    KTUNE_CUDA_TRY(cudaMemcpyAsync(tensors[Harness::cache_loc], slots.data(), slots.size() * sizeof(std::int64_t),
                                   cudaMemcpyHostToDevice, stream));
    unsigned blocks = 0;
    KTUNE_TRY(grid_blocks(std::max({tokens * (q_heads + kv_heads) * head_size, tokens * rotary_dim, rows * row}), 256, 16, blocks));
    return visit_dtype(dtype, [&](auto element) -> Status {
      using E = decltype(element);
      const rotary_embedding::PreparationWrites<E> w{static_cast<const std::int64_t*>(tensors[Harness::positions]),
                                                     static_cast<E*>(tensors[Harness::query]),
                                                     static_cast<E*>(tensors[Harness::key]),
                                                     static_cast<float*>(tensors[Harness::cos_sin_cache]),
                                                     reference[0],
                                                     reference[1],
                                                     tokens,
                                                     q_heads,
                                                     kv_heads,
                                                     head_size,
                                                     rotary_dim,
                                                     is_neox_of(shape),
                                                     seeds};
      const StoreWrites<E> s{static_cast<const std::int64_t*>(tensors[Harness::cache_loc]),
                             static_cast<E*>(tensors[Harness::value]),
                             static_cast<E*>(tensors[Harness::k_buffer]),
                             static_cast<E*>(tensors[Harness::v_buffer]),
                             reference[1],
                             reference[2],
                             reference[3],
                             tokens,
                             row,
                             rows,
                             static_cast<double>(k_scale_of(shape)),
                             static_cast<double>(v_scale_of(shape)),
                             seeds};
      KTUNE_TRY(::ktune::launch(detail::prepare_store_kernel<E>, LaunchShape{dim3(blocks), dim3(256)}, stream, w, s));
      return ::ktune::launch(detail::prepare_stored_kernel<E>, LaunchShape{dim3(blocks), dim3(256)}, stream, s);
    });
  }
};

}  // namespace ktune::ops::rotary_embedding_set_kv
