// kernels/rotary_embedding/harness.hpp: what the benchmark and the generic GPU checks need to run any
// rotary_embedding variant on a spec shape (ktune/harness.hpp). Host code (g++ and nvcc) but for the element
// draws, which the GPU's preparation of a group calls too (device_preparation.cuh).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <numeric>
#include <stdexcept>
#include <utility>
#include <vector>

#include <ktune/dtype.hpp>
#include <ktune/harness.hpp>
#include <ktune/random.hpp>

#include "args.hpp"
#include "reference.hpp"

namespace ktune::ops::rotary_embedding {

/// The spec's default is_neox (the public API's default, as sgl_kernel's); a shape may carry the other.
inline constexpr bool default_is_neox = true;
inline bool is_neox_of(const Shape& shape) { return shape.scalar("is_neox", default_is_neox ? 1.0 : 0.0) != 0.0; }

/// Element `i` of the random values for `seed`, before rounding to the storage type. In-place outputs
/// cannot be poisoned, so the ranges make every rotated element differ from what it overwrites: |x| in
/// [1, 2], cos in [-1.75, -1.25], |sin| in [0.05, 0.5]; then |x' - x| = |x (cos - 1) - y sin| >= 2.25 - 1,
/// and likewise for y'. The cache is no true rotation (cos^2 + sin^2 != 1): the op is defined for any
/// cache, and a cos near 1 would hide an element a kernel forgot to write. Never zero.
__host__ __device__ inline float head_value(std::uint64_t seed, std::uint64_t i) {
  const float u = uniform_at(seed, i, -1.f, 1.f);
  return u + (u < 0.f ? -1.f : 1.f);
}
__host__ __device__ inline float cos_value(std::uint64_t seed, std::uint64_t i) { return uniform_at(seed, i, -1.75f, -1.25f); }
__host__ __device__ inline float sin_value(std::uint64_t seed, std::uint64_t i) {
  const float u = uniform_at(seed, i, -0.45f, 0.45f);
  return u + (u < 0.f ? -0.05f : 0.05f);
}

/// Element i of a cache of rows of rotary_dim floats: cos in the first half of a row, sin in the second.
__host__ __device__ inline float cache_value(std::uint64_t seed, std::int64_t rotary_dim, std::uint64_t i) {
  return static_cast<std::int64_t>(i % static_cast<std::uint64_t>(rotary_dim)) < rotary_dim / 2 ? cos_value(seed, i)
                                                                                                 : sin_value(seed, i);
}

/// The streams of a group's draws for its `seed`: positions (draw_positions), query and key (head_value), the
/// cache (cache_value).
struct DrawSeeds {
  std::uint64_t positions, query, key, cache;
  __host__ __device__ explicit DrawSeeds(std::uint64_t seed)
      : positions(mix64(seed + 11)), query(mix64(seed * 5 + 1)), key(mix64(seed * 5 + 2)), cache(mix64(seed + 29)) {}
};

/// Positions for `tokens` tokens over a cache of `rows` rows: a seeded shuffle of 0 .. rows - 1 (each
/// cache row read once when rows == tokens, so the spec's bytes are exact), repeated when tokens > rows;
/// token 0 gets position 0 and the last token rows - 1 (the cache's last row).
inline std::vector<std::int64_t> draw_positions(std::int64_t tokens, std::int64_t rows, std::uint64_t seed) {
  std::vector<std::int64_t> perm(static_cast<std::size_t>(rows));
  std::iota(perm.begin(), perm.end(), std::int64_t{0});
  for (std::int64_t i = rows - 1; i > 0; --i)
    std::swap(perm[static_cast<std::size_t>(i)], perm[static_cast<std::size_t>(mix64(seed + static_cast<std::uint64_t>(i)) %
                                                                              static_cast<std::uint64_t>(i + 1))]);
  std::vector<std::int64_t> p(static_cast<std::size_t>(tokens));
  for (std::int64_t t = 0; t < tokens; ++t) p[static_cast<std::size_t>(t)] = perm[static_cast<std::size_t>(t % rows)];
  if (tokens > 0) {
    // Swap the planted values in rather than overwrite them, so the draw stays a permutation.
    auto plant = [&](std::int64_t t, std::int64_t value) {
      for (auto& x : p)
        if (x == value) x = p[static_cast<std::size_t>(t)];
      p[static_cast<std::size_t>(t)] = value;
    };
    plant(0, 0);
    if (tokens > 1) plant(tokens - 1, rows - 1);
  }
  return p;
}

/// Tensor order: positions, query, key, cos_sin_cache (as in spec.json).
class Harness final : public ktune::Harness {
 public:
  enum Tensor : std::size_t { positions = 0, query, key, cos_sin_cache, count };

  const char* op() const override { return "rotary_embedding"; }

  /// The cache has `tokens` rows (spec.json): a larger one would not be read more.
  std::vector<TensorInfo> tensors(const Shape& shape, DType dtype) const override {
    const auto t = static_cast<std::size_t>(shape.at("tokens"));
    const auto hq = static_cast<std::size_t>(shape.at("q_heads"));
    const auto hk = static_cast<std::size_t>(shape.at("kv_heads"));
    const auto d = static_cast<std::size_t>(shape.at("head_size"));
    const auto r = static_cast<std::size_t>(shape.at("rotary_dim"));
    const int eb = size_of(dtype);
    return {{"positions", t, 8, Access::read},
            {"query", t * hq * d, eb, Access::read_write},
            {"key", t * hk * d, eb, Access::read_write},
            {"cos_sin_cache", t * r, 4, Access::read}};
  }

  void fill_inputs(const Shape& shape, DType dtype, std::uint64_t seed, HostTensors& host) const override {
    const std::vector<TensorInfo> info = tensors(shape, dtype);
    host.resize(info.size());
    for (std::size_t k = 0; k < info.size(); ++k) host[k].resize(info[k].bytes());
    const std::int64_t t = shape.at("tokens"), r = shape.at("rotary_dim");
    const DrawSeeds seeds(seed);
    const std::vector<std::int64_t> pos = draw_positions(t, t, seeds.positions);
    std::copy(pos.begin(), pos.end(), reinterpret_cast<std::int64_t*>(host[positions].data()));
    visit_dtype(dtype, [&](auto element) {
      using E = decltype(element);
      for (const auto& [k, s] : {std::pair{std::size_t{query}, seeds.query}, std::pair{std::size_t{key}, seeds.key}}) {
        auto* v = reinterpret_cast<E*>(host[k].data());
        for (std::size_t i = 0; i < info[k].elements; ++i) v[i] = from_float<E>(head_value(s, i));
      }
    });
    auto* cache = reinterpret_cast<float*>(host[cos_sin_cache].data());
    for (std::size_t i = 0; i < info[cos_sin_cache].elements; ++i) cache[i] = cache_value(seeds.cache, r, i);
  }

  std::vector<std::vector<double>> reference(const Shape& shape, DType dtype, const HostTensors& in) const override {
    const std::vector<TensorInfo> info = tensors(shape, dtype);
    if (in.size() != info.size()) throw std::invalid_argument("rotary_embedding harness: expected 4 tensors");
    for (std::size_t k = 0; k < info.size(); ++k)
      if (in[k].size() != info[k].bytes()) throw std::invalid_argument("rotary_embedding harness: a tensor has the wrong size");
    const std::int64_t t = shape.at("tokens"), hq = shape.at("q_heads"), hk = shape.at("kv_heads");
    const std::int64_t d = shape.at("head_size"), r = shape.at("rotary_dim");
    std::vector<std::vector<double>> ref(2);
    ref[0].resize(info[query].elements);
    ref[1].resize(info[key].elements);
    visit_dtype(dtype, [&](auto element) {
      using E = decltype(element);
      rotary_embedding::reference(reinterpret_cast<const std::int64_t*>(in[positions].data()),
                                  reinterpret_cast<const E*>(in[query].data()), reinterpret_cast<const E*>(in[key].data()),
                                  d, reinterpret_cast<const float*>(in[cos_sin_cache].data()), is_neox_of(shape), t, hq,
                                  hk, r, t, hq * d, hk * d, ref[0].data(), ref[1].data());
    });
    return ref;
  }

  std::shared_ptr<const void> make_args(const Shape& shape, DType dtype, const std::vector<void*>& device) const override {
    if (device.size() != count) throw std::invalid_argument("rotary_embedding harness: expected 4 device buffers");
    const std::int64_t t = shape.at("tokens"), hq = shape.at("q_heads"), hk = shape.at("kv_heads");
    const std::int64_t d = shape.at("head_size"), r = shape.at("rotary_dim");
    return visit_dtype(dtype, [&](auto element) -> std::shared_ptr<const void> {
      using E = decltype(element);
      auto a = std::make_shared<Args<E>>();
      a->positions = static_cast<const std::int64_t*>(device[positions]);
      a->query = static_cast<E*>(device[query]);
      a->key = static_cast<E*>(device[key]);
      a->head_size = d;
      a->cos_sin_cache = static_cast<const float*>(device[cos_sin_cache]);
      a->is_neox = is_neox_of(shape);
      a->tokens = t;
      a->q_heads = hq;
      a->kv_heads = hk;
      a->rotary_dim = r;
      a->max_pos = t;
      a->query_stride = hq * d;
      a->key_stride = hk * d;
      return a;
    });
  }
};

}  // namespace ktune::ops::rotary_embedding
