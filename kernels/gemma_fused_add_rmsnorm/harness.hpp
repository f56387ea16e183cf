// kernels/gemma_fused_add_rmsnorm/harness.hpp: what the benchmark and the generic GPU checks need to run any
// gemma_fused_add_rmsnorm variant on a spec shape (ktune::Harness). Host code (g++ and nvcc)
// but for input_value and Draw, which the GPU's preparation of a group calls too (family.cuh).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <vector>

#include <ktune/dtype.hpp>
#include <ktune/harness.hpp>
#include <ktune/random.hpp>

#include "args.hpp"
#include "reference.hpp"

namespace ktune::ops::gemma_fused_add_rmsnorm {

enum class Tensor { input = 0, residual = 1, weight = 2 };

/// Element `i` of a tensor's random values for `seed` (before rounding to the storage type).
///
/// The ranges make every output differ from the input it overwrites, so an element a kernel forgot to
/// write is caught although in-place outputs cannot be poisoned: |input| in [8, 16], residual in
/// [-4, 4], weight in [-0.5, 0.5] as Gemma's (stored w - 1), so the factor 1 + weight is in [0.5, 1.5].
/// Then |x| is in [4, 20], so rms(x) >= 4, |x| / rms(x) <= 5 and the normalised output has
/// |.| <= 7.5 < 8 <= |input|; the new residual x differs from the old by the input, at least 8. A kernel
/// that used the weight as w instead of 1 + w is caught. Inputs never zero.
__host__ __device__ inline float input_value(Tensor t, std::uint64_t seed, std::uint64_t i) {
  const std::uint64_t stream = seed * 3 + static_cast<std::uint64_t>(t);
  switch (t) {
    case Tensor::input: {
      const float u = uniform_at(stream, i, -8.f, 8.f);
      return u + (u < 0.f ? -8.f : 8.f);
    }
    case Tensor::residual: return uniform_at(stream, i, -4.f, 4.f);
    case Tensor::weight: default: return uniform_at(stream, i, -0.5f, 0.5f);
  }
}

/// input_value by the tensors() index k, as fill_inputs draws tensor k: on the GPU too (family.cuh's
/// DevicePreparation draws the same bits).
struct Draw {
  __host__ __device__ float operator()(int k, std::uint64_t seed, std::uint64_t i) const {
    return input_value(static_cast<Tensor>(k), seed, i);
  }
};

/// The spec's default eps (the public API's default); a shape may carry another (spec.json's "values").
inline constexpr float default_eps = 1e-6f;

/// eps for `shape`, as the kernels take it (fp32).
inline float eps_of(const Shape& shape) { return static_cast<float>(shape.scalar("eps", default_eps)); }

class Harness final : public ktune::Harness {
 public:
  const char* op() const override { return "gemma_fused_add_rmsnorm"; }

  /// input [tokens, h] (read_write), residual [tokens, h] (read_write), weight [h] (read).
  std::vector<TensorInfo> tensors(const Shape& shape, DType dtype) const override {
    const auto t = static_cast<std::size_t>(shape.at("tokens"));
    const auto h = static_cast<std::size_t>(shape.at("h"));
    const int eb = size_of(dtype);
    return {{"input", t * h, eb, Access::read_write},
            {"residual", t * h, eb, Access::read_write},
            {"weight", h, eb, Access::read}};
  }

  void fill_inputs(const Shape& shape, DType dtype, std::uint64_t seed, HostTensors& host) const override {
    const std::vector<TensorInfo> info = tensors(shape, dtype);
    host.resize(info.size());
    visit_dtype(dtype, [&](auto element) {
      using E = decltype(element);
      for (std::size_t k = 0; k < info.size(); ++k) {
        host[k].resize(info[k].bytes());
        auto* p = reinterpret_cast<E*>(host[k].data());
        for (std::size_t i = 0; i < info[k].elements; ++i)
          p[i] = from_float<E>(input_value(static_cast<Tensor>(k), seed, i));
      }
    });
  }

  std::vector<std::vector<double>> reference(const Shape& shape, DType dtype, const HostTensors& inputs) const override {
    const std::int64_t t = shape.at("tokens");
    const std::int64_t h = shape.at("h");
    const std::vector<TensorInfo> info = tensors(shape, dtype);
    if (inputs.size() != info.size()) throw std::invalid_argument("gemma_fused_add_rmsnorm harness: expected 3 tensors");
    std::vector<std::vector<double>> v(3);
    visit_dtype(dtype, [&](auto element) {
      using E = decltype(element);
      for (std::size_t k = 0; k < 3; ++k) {
        if (inputs[k].size() != info[k].bytes())
          throw std::invalid_argument("gemma_fused_add_rmsnorm harness: a tensor has the wrong size");
        const auto* p = reinterpret_cast<const E*>(inputs[k].data());
        v[k].resize(info[k].elements);
        for (std::size_t i = 0; i < info[k].elements; ++i) v[k][i] = static_cast<double>(to_float(p[i]));
      }
    });
    std::vector<std::vector<double>> out(2, std::vector<double>(static_cast<std::size_t>(t * h)));
    ops::gemma_fused_add_rmsnorm::reference(v[0].data(), v[1].data(), v[2].data(), t, h, h, h, eps_of(shape), dtype,
                                      out[0].data(), out[1].data());
    return out;
  }

  std::shared_ptr<const void> make_args(const Shape& shape, DType dtype, const std::vector<void*>& device) const override {
    if (device.size() != 3) throw std::invalid_argument("gemma_fused_add_rmsnorm harness: expected 3 device buffers");
    const std::int64_t t = shape.at("tokens");
    const std::int64_t h = shape.at("h");
    return visit_dtype(dtype, [&](auto element) -> std::shared_ptr<const void> {
      using E = decltype(element);
      return std::make_shared<const Args<E>>(Args<E>{static_cast<E*>(device[0]), static_cast<E*>(device[1]),
                                                     static_cast<const E*>(device[2]), t, h, h, h, eps_of(shape)});
    });
  }
};

}  // namespace ktune::ops::gemma_fused_add_rmsnorm
