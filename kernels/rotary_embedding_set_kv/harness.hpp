// kernels/rotary_embedding_set_kv/harness.hpp: what the benchmark and the generic GPU checks need to run any
// rotary_embedding_set_kv variant on a spec shape (ktune/harness.hpp). Host code (g++ and nvcc) but for the
// element draws, which the GPU's preparation of a group calls too (device_preparation.cuh).
//
// The KV cache has 2 * tokens slots and cache_loc is a seeded injection of the tokens into them, so half the
// slots are written by no call: they hold drawn values (k_buffer and v_buffer are read_write tensors, never
// poisoned) that the reference keeps, and the judge's output check sees any write to them. The spec's
// "moved" counts only the slots a call writes (spec.json).
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
#include "kernels/rotary_embedding/harness.hpp"
#include "reference.hpp"

namespace ktune::ops::rotary_embedding_set_kv {

using rotary_embedding::cache_value;
using rotary_embedding::cos_value;
using rotary_embedding::draw_positions;
using rotary_embedding::head_value;
using rotary_embedding::sin_value;

/// The spec's defaults (the public API's, as sgl_kernel's: neox, scales None).
inline constexpr bool default_is_neox = true;
inline bool is_neox_of(const Shape& shape) { return shape.scalar("is_neox", default_is_neox ? 1.0 : 0.0) != 0.0; }
inline float k_scale_of(const Shape& shape) { return static_cast<float>(shape.scalar("k_scale", 1.0)); }
inline float v_scale_of(const Shape& shape) { return static_cast<float>(shape.scalar("v_scale", 1.0)); }

/// Slots of the KV cache for `tokens` tokens: twice as many, so that half of them are written by no call.
inline constexpr std::int64_t cache_rows_per_token = 2;

/// A slot's drawn contents before the call: |x| in [16, 32], far from any value a call stores there (|k'| <=
/// 2 * 1.75 + 2 * 0.5 = 4.5, |v| <= 2, each divided by a scale the judge tries, >= 0.5), so that a slot a
/// kernel forgot to write fails the check.
__host__ __device__ inline float slot_value(std::uint64_t seed, std::uint64_t i) { return 16.f * head_value(seed, i); }

/// The streams of a group's draws for its `seed`: rotary_embedding's (positions, query, key, cache), then
/// value, the two buffers and cache_loc.
struct DrawSeeds : rotary_embedding::DrawSeeds {
  std::uint64_t value, k_buffer, v_buffer, cache_loc;
  __host__ __device__ explicit DrawSeeds(std::uint64_t seed)
      : rotary_embedding::DrawSeeds(seed),
        value(mix64(seed * 5 + 3)),
        k_buffer(mix64(seed * 7 + 4)),
        v_buffer(mix64(seed * 7 + 5)),
        cache_loc(mix64(seed + 41)) {}
};

/// cache_loc for `tokens` tokens over `rows` >= tokens slots: the first `tokens` of a seeded shuffle of 0 ..
/// rows - 1 (distinct slots, scattered as a serving engine's allocator leaves them); token 0 gets the last slot
/// and, when there are two or more tokens and rows > tokens, the last token slot 0 (both ends of the buffers).
inline std::vector<std::int64_t> draw_cache_loc(std::int64_t tokens, std::int64_t rows, std::uint64_t seed) {
  std::vector<std::int64_t> perm(static_cast<std::size_t>(rows));
  std::iota(perm.begin(), perm.end(), std::int64_t{0});
  for (std::int64_t i = rows - 1; i > 0; --i)
    std::swap(perm[static_cast<std::size_t>(i)], perm[static_cast<std::size_t>(mix64(seed + static_cast<std::uint64_t>(i)) %
                                                                              static_cast<std::uint64_t>(i + 1))]);
  // Put the planted slots at the front positions they take, keeping the values distinct.
  auto plant = [&](std::int64_t t, std::int64_t slot) {
    for (auto& x : perm)
      if (x == slot) x = perm[static_cast<std::size_t>(t)];
    perm[static_cast<std::size_t>(t)] = slot;
  };
  if (tokens > 0) plant(0, rows - 1);
  if (tokens > 1 && rows > tokens) plant(tokens - 1, 0);
  perm.resize(static_cast<std::size_t>(tokens));
  return perm;
}

/// Tensor order: positions, query, key, cos_sin_cache, value, k_buffer, v_buffer, cache_loc (as in spec.json).
class Harness final : public ktune::Harness {
 public:
  enum Tensor : std::size_t { positions = 0, query, key, cos_sin_cache, value, k_buffer, v_buffer, cache_loc, count };

  const char* op() const override { return "rotary_embedding_set_kv"; }

  /// The cos/sin cache has `tokens` rows (rotary_embedding's), the KV cache 2 * tokens slots of which a call
  /// writes `tokens`: k_buffer and v_buffer move those slots' bytes, written once (part_moved).
  std::vector<TensorInfo> tensors(const Shape& shape, DType dtype) const override {
    const auto t = static_cast<std::size_t>(shape.at("tokens"));
    const auto hq = static_cast<std::size_t>(shape.at("q_heads"));
    const auto hk = static_cast<std::size_t>(shape.at("kv_heads"));
    const auto d = static_cast<std::size_t>(shape.at("head_size"));
    const auto r = static_cast<std::size_t>(shape.at("rotary_dim"));
    const auto rows = static_cast<std::size_t>(cache_rows_per_token) * t;
    const int eb = size_of(dtype);
    const auto written = static_cast<std::int64_t>(t * hk * d) * eb;
    return {{"positions", t, 8, Access::read},
            {"query", t * hq * d, eb, Access::read_write},
            {"key", t * hk * d, eb, Access::read_write},
            {"cos_sin_cache", t * r, 4, Access::read},
            {"value", t * hk * d, eb, Access::read},
            {"k_buffer", rows * hk * d, eb, Access::read_write, written},
            {"v_buffer", rows * hk * d, eb, Access::read_write, written},
            {"cache_loc", t, 8, Access::read}};
  }

  void fill_inputs(const Shape& shape, DType dtype, std::uint64_t seed, HostTensors& host) const override {
    const std::vector<TensorInfo> info = tensors(shape, dtype);
    host.resize(info.size());
    for (std::size_t k = 0; k < info.size(); ++k) host[k].resize(info[k].bytes());
    const std::int64_t t = shape.at("tokens"), r = shape.at("rotary_dim");
    const DrawSeeds seeds(seed);
    const std::vector<std::int64_t> pos = draw_positions(t, t, seeds.positions);
    std::copy(pos.begin(), pos.end(), reinterpret_cast<std::int64_t*>(host[positions].data()));
    const std::vector<std::int64_t> loc = draw_cache_loc(t, cache_rows_per_token * t, seeds.cache_loc);
    std::copy(loc.begin(), loc.end(), reinterpret_cast<std::int64_t*>(host[cache_loc].data()));
    visit_dtype(dtype, [&](auto element) {
      using E = decltype(element);
      for (const auto& [k, s] : {std::pair{std::size_t{query}, seeds.query}, std::pair{std::size_t{key}, seeds.key},
                                 std::pair{std::size_t{value}, seeds.value}}) {
        auto* v = reinterpret_cast<E*>(host[k].data());
        for (std::size_t i = 0; i < info[k].elements; ++i) v[i] = from_float<E>(head_value(s, i));
      }
      for (const auto& [k, s] : {std::pair{std::size_t{k_buffer}, seeds.k_buffer}, std::pair{std::size_t{v_buffer}, seeds.v_buffer}}) {
        auto* v = reinterpret_cast<E*>(host[k].data());
        for (std::size_t i = 0; i < info[k].elements; ++i) v[i] = from_float<E>(slot_value(s, i));
      }
    });
    auto* cache = reinterpret_cast<float*>(host[cos_sin_cache].data());
    for (std::size_t i = 0; i < info[cos_sin_cache].elements; ++i) cache[i] = cache_value(seeds.cache, r, i);
  }

  std::vector<std::vector<double>> reference(const Shape& shape, DType dtype, const HostTensors& in) const override {
    const std::vector<TensorInfo> info = tensors(shape, dtype);
    if (in.size() != info.size()) throw std::invalid_argument("rotary_embedding_set_kv harness: expected 8 tensors");
    for (std::size_t k = 0; k < info.size(); ++k)
      if (in[k].size() != info[k].bytes())
        throw std::invalid_argument("rotary_embedding_set_kv harness: a tensor has the wrong size");
    const std::int64_t t = shape.at("tokens"), hq = shape.at("q_heads"), hk = shape.at("kv_heads");
    const std::int64_t d = shape.at("head_size"), r = shape.at("rotary_dim"), rows = cache_rows_per_token * t;
    std::vector<std::vector<double>> ref(4);
    ref[0].resize(info[query].elements);
    ref[1].resize(info[key].elements);
    ref[2].resize(info[k_buffer].elements);
    ref[3].resize(info[v_buffer].elements);
    visit_dtype(dtype, [&](auto element) {
      using E = decltype(element);
      auto el = [&](std::size_t k) { return reinterpret_cast<const E*>(in[k].data()); };
      rotary_embedding_set_kv::reference(
          reinterpret_cast<const std::int64_t*>(in[positions].data()), el(query), el(key), d,
          reinterpret_cast<const float*>(in[cos_sin_cache].data()), is_neox_of(shape), el(value), el(k_buffer),
          el(v_buffer), k_scale_of(shape), v_scale_of(shape), reinterpret_cast<const std::int64_t*>(in[cache_loc].data()),
          t, hq, hk, r, t, rows, hq * d, hk * d, hk * d, hk * d, hk * d, ref[0].data(), ref[1].data(), ref[2].data(),
          ref[3].data());
    });
    return ref;
  }

  std::shared_ptr<const void> make_args(const Shape& shape, DType dtype, const std::vector<void*>& device) const override {
    if (device.size() != count) throw std::invalid_argument("rotary_embedding_set_kv harness: expected 8 device buffers");
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
      a->value = static_cast<const E*>(device[value]);
      a->k_buffer = static_cast<E*>(device[k_buffer]);
      a->v_buffer = static_cast<E*>(device[v_buffer]);
      a->k_scale = k_scale_of(shape);
      a->v_scale = v_scale_of(shape);
      a->cache_loc = static_cast<const std::int64_t*>(device[cache_loc]);
      a->tokens = t;
      a->q_heads = hq;
      a->kv_heads = hk;
      a->rotary_dim = r;
      a->max_pos = t;
      a->cache_rows = cache_rows_per_token * t;
      a->query_stride = hq * d;
      a->key_stride = hk * d;
      a->value_stride = hk * d;
      a->k_buffer_stride = hk * d;
      a->v_buffer_stride = hk * d;
      return a;
    });
  }
};

}  // namespace ktune::ops::rotary_embedding_set_kv
