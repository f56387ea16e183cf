// kernels/rotary_embedding/device_preparation.cuh: a group's inputs and float64 references drawn and computed on
// the GPU (ktune::DevicePreparation): what the Harness's fill_inputs and reference compute on the host, so that the
// benchmark uploads the positions alone (bench/README.md, "Inputs and references on the GPU").
//
// The positions are a shuffle, one swap after another: the host draws them (draw_positions, tokens values) and
// copies them in. Everything else is one thread per element: the harness's draws (head_value, cache_value: bitwise
// the host's, ktune/random.hpp) and reference.hpp's rotated_element, the same source as the host's reference. The
// device may fuse x cos - y sin into one multiply-add, which moves the last bits of a result whose terms cancel;
// the benchmark's check of its small groups allows that much of the output's scale (bench/host_inputs.hpp).
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

namespace ktune::ops::rotary_embedding {

/// What the preparation writes at element i of the cache and at element e of query and key in one index space
/// (query's first), for a group with contiguous rows and the positions already in place: the same code on host and
/// device, so that a CPU test runs it over a group as the kernel does (device_preparation_test.cu).
template <class E>
struct PreparationWrites {
  const std::int64_t* positions;
  E* query;
  E* key;
  float* cache;
  double* ref_query;
  double* ref_key;
  std::int64_t tokens, q_heads, kv_heads, head_size, rotary_dim;
  bool is_neox;
  DrawSeeds seeds;

  /// A head's elements as stored, from their draws (rotated_element's value).
  struct DrawnHead {
    std::uint64_t stream;
    std::int64_t first;
    __host__ __device__ double operator()(std::int64_t k) const {
      return static_cast<double>(to_float(from_float<E>(head_value(stream, static_cast<std::uint64_t>(first + k)))));
    }
  };
  /// A cache row, from its draws (rotated_element's cache).
  struct DrawnRow {
    std::uint64_t stream;
    std::int64_t first, rotary_dim;
    __host__ __device__ double operator()(std::int64_t k) const {
      return static_cast<double>(cache_value(stream, rotary_dim, static_cast<std::uint64_t>(first + k)));
    }
  };

  __host__ __device__ std::int64_t cache_elements() const { return tokens * rotary_dim; }
  __host__ __device__ std::int64_t q_elements() const { return tokens * q_heads * head_size; }
  __host__ __device__ std::int64_t head_elements() const { return q_elements() + tokens * kv_heads * head_size; }

  __host__ __device__ void cache_element(std::int64_t i) const {
    cache[i] = cache_value(seeds.cache, rotary_dim, static_cast<std::uint64_t>(i));
  }
  __host__ __device__ void head_element(std::int64_t e) const {
    const bool is_query = e < q_elements();
    const std::int64_t at = is_query ? e : e - q_elements();  // in its own tensor
    const std::int64_t t = at / ((is_query ? q_heads : kv_heads) * head_size), i = at % head_size;
    // The head's elements, its own and those it pairs with, drawn again (a few integer operations) rather than read.
    const DrawnHead head{is_query ? seeds.query : seeds.key, at - i};
    (is_query ? query : key)[at] = from_float<E>(head_value(head.stream, static_cast<std::uint64_t>(at)));
    const std::int64_t p = positions[t];
    const bool valid = p >= 0 && p < tokens;  // the cache has one row per token (Harness::tensors)
    (is_query ? ref_query : ref_key)[at] =
        valid ? rotated_element(head, DrawnRow{seeds.cache, p * rotary_dim, rotary_dim}, is_neox, rotary_dim, i) : head(i);
  }
};

namespace detail {

template <class E>
__global__ void prepare_kernel(PreparationWrites<E> w) {
  const std::int64_t first = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t i = first; i < w.cache_elements(); i += stride) w.cache_element(i);
  for (std::int64_t e = first; e < w.head_elements(); e += stride) w.head_element(e);
}

}  // namespace detail

/// The op's DevicePreparation (Family::DevicePreparation).
class DevicePreparation final : public ktune::DevicePreparation {
 public:
  Status prepare(const Shape& shape, DType dtype, std::uint64_t seed, const std::vector<void*>& tensors,
                 const std::vector<double*>& reference, cudaStream_t stream) const override {
    if (tensors.size() != Harness::count || reference.size() != 2)
      return Status::invalid("rotary_embedding device preparation: expected its four tensors and two references");
    std::int64_t size[5];
    KTUNE_TRY(sizes_of(shape, {"tokens", "q_heads", "kv_heads", "head_size", "rotary_dim"}, size));
    const std::int64_t tokens = size[0], q_heads = size[1], kv_heads = size[2], head_size = size[3], rotary_dim = size[4];
    if (rotary_dim > head_size) return Status::invalid("rotary_embedding device preparation: rotary_dim past head_size");
    if (tokens == 0) return Status::success();  // every tensor is empty
    const DrawSeeds seeds(seed);
    const std::vector<std::int64_t> positions = draw_positions(tokens, tokens, seeds.positions);
    // From pageable memory: the copy has taken the bytes when it returns, so the vector may go.
    KTUNE_CUDA_TRY(cudaMemcpyAsync(tensors[Harness::positions], positions.data(), positions.size() * sizeof(std::int64_t),
                                   cudaMemcpyHostToDevice, stream));
    unsigned blocks = 0;
    KTUNE_TRY(grid_blocks(std::max(tokens * (q_heads + kv_heads) * head_size, tokens * rotary_dim), 256, 16, blocks));
    return visit_dtype(dtype, [&](auto element) -> Status {
      using E = decltype(element);
      const PreparationWrites<E> w{static_cast<const std::int64_t*>(tensors[Harness::positions]),
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
      return ::ktune::launch(detail::prepare_kernel<E>, LaunchShape{dim3(blocks), dim3(256)}, stream, w);
    });
  }
};

}  // namespace ktune::ops::rotary_embedding
