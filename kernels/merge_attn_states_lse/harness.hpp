// kernels/merge_attn_states_lse/harness.hpp: what the benchmark and the generic GPU checks need to run
// any merge variant on a spec shape (ktune/harness.hpp). Host code (g++ and nvcc) but for the draws, which the
// GPU's preparation of a group calls too (device_preparation.cuh).
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

#include <ktune/dtype.hpp>
#include <ktune/harness.hpp>
#include <ktune/random.hpp>

#include "args.hpp"
#include "reference.hpp"

namespace ktune::ops::merge_attn_states_lse {

/// The streams of the draws below, one per tensor drawn, for the group's `seed`.
struct DrawSeeds {
  std::uint64_t prefix_values, suffix_values, lses;
  __host__ __device__ explicit DrawSeeds(std::uint64_t seed)
      : prefix_values(ktune::mix64(seed + 1)), suffix_values(ktune::mix64(seed + 2)), lses(ktune::mix64(seed + 3)) {}
};

/// Element i of prefix_out or suffix_out (its stream of DrawSeeds) before rounding: uniform in [-1, 1).
__host__ __device__ inline float value_at(std::uint64_t stream, std::uint64_t i) { return ktune::uniform_at(stream, i, -1.f, 1.f); }

/// The LSEs of (token, head) i: uniform in [-30, 30), with planted edge cases: some heads have no prefix keys
/// (-inf), some no suffix keys (+inf, which counts as -inf), some both, and some suffixes trail their prefix by
/// 300 (exp underflows to 0 in fp32).
struct LsePair {
  float prefix, suffix;
};
__host__ __device__ inline LsePair lse_pair(std::uint64_t stream, std::uint64_t i) {
  LsePair l{ktune::uniform_at(stream, 2 * i, -30.f, 30.f), ktune::uniform_at(stream, 2 * i + 1, -30.f, 30.f)};
  if (i % 61 == 7) l.prefix = -HUGE_VALF;
  if (i % 67 == 11) l.suffix = HUGE_VALF;
  if (i % 71 == 3) l.suffix = l.prefix - 300.f;
  return l;
}

/// Tensor order: prefix_out, prefix_lse, suffix_out, suffix_lse, out, out_lse (as in spec.json).
class Harness final : public ktune::Harness {
 public:
  enum Tensor : std::size_t { prefix_out = 0, prefix_lse, suffix_out, suffix_lse, out, out_lse, count };

  const char* op() const override { return "merge_attn_states_lse"; }

  std::vector<ktune::TensorInfo> tensors(const ktune::Shape& shape, ktune::DType dtype) const override {
    const auto n = static_cast<std::size_t>(shape.at("tokens"));
    const auto h = static_cast<std::size_t>(shape.at("heads"));
    const auto d = static_cast<std::size_t>(shape.at("head_size"));
    const int eb = ktune::size_of(dtype);
    using ktune::Access;
    return {{"prefix_out", n * h * d, eb, Access::read}, {"prefix_lse", n * h, 4, Access::read},
            {"suffix_out", n * h * d, eb, Access::read}, {"suffix_lse", n * h, 4, Access::read},
            {"out", n * h * d, eb, Access::write},       {"out_lse", n * h, 4, Access::write}};
  }

  /// Values (value_at) and LSEs (lse_pair) of the streams of DrawSeeds(seed).
  void fill_inputs(const ktune::Shape& shape, ktune::DType dtype, std::uint64_t seed,
                   ktune::HostTensors& host) const override {
    const auto info = tensors(shape, dtype);
    host.resize(info.size());
    for (std::size_t i = 0; i < info.size(); ++i) host[i].resize(info[i].bytes());
    const DrawSeeds seeds(seed);
    ktune::visit_dtype(dtype, [&](auto element) {
      using E = decltype(element);
      fill_values(reinterpret_cast<E*>(host[prefix_out].data()), info[prefix_out].elements, seeds.prefix_values);
      fill_values(reinterpret_cast<E*>(host[suffix_out].data()), info[suffix_out].elements, seeds.suffix_values);
    });
    auto* p = reinterpret_cast<float*>(host[prefix_lse].data());
    auto* s = reinterpret_cast<float*>(host[suffix_lse].data());
    for (std::size_t i = 0; i < info[prefix_lse].elements; ++i) {
      const LsePair l = lse_pair(seeds.lses, i);
      p[i] = l.prefix;
      s[i] = l.suffix;
    }
  }

  std::vector<std::vector<double>> reference(const ktune::Shape& shape, ktune::DType dtype,
                                             const ktune::HostTensors& in) const override {
    const std::int64_t n = shape.at("tokens"), h = shape.at("heads"), d = shape.at("head_size");
    std::vector<std::vector<double>> ref(2);
    ref[0].resize(static_cast<std::size_t>(n * h * d));
    ref[1].resize(static_cast<std::size_t>(n * h));
    ktune::visit_dtype(dtype, [&](auto element) {
      using E = decltype(element);
      merge_attn_states_lse::reference(reinterpret_cast<const E*>(in[prefix_out].data()),
                                       reinterpret_cast<const float*>(in[prefix_lse].data()),
                                       reinterpret_cast<const E*>(in[suffix_out].data()),
                                       reinterpret_cast<const float*>(in[suffix_lse].data()), n, h, d, h * d, h * d,
                                       ref[0].data(), ref[1].data());
    });
    return ref;
  }

  std::shared_ptr<const void> make_args(const ktune::Shape& shape, ktune::DType dtype,
                                        const std::vector<void*>& device) const override {
    const std::int64_t n = shape.at("tokens"), h = shape.at("heads"), d = shape.at("head_size");
    return ktune::visit_dtype(dtype, [&](auto element) -> std::shared_ptr<const void> {
      using E = decltype(element);
      auto a = std::make_shared<Args<E>>();
      a->out = static_cast<E*>(device[out]);
      a->out_lse = static_cast<float*>(device[out_lse]);
      a->prefix_out = static_cast<const E*>(device[prefix_out]);
      a->prefix_lse = static_cast<const float*>(device[prefix_lse]);
      a->suffix_out = static_cast<const E*>(device[suffix_out]);
      a->suffix_lse = static_cast<const float*>(device[suffix_lse]);
      a->tokens = n;
      a->heads = h;
      a->head_size = d;
      a->out_stride = a->prefix_stride = a->suffix_stride = h * d;
      return a;
    });
  }

 private:
  template <class E>
  static void fill_values(E* v, std::size_t n, std::uint64_t seed) {
    for (std::size_t i = 0; i < n; ++i) v[i] = ktune::from_float<E>(value_at(seed, i));
  }
};

}  // namespace ktune::ops::merge_attn_states_lse
