// kernels/gelu_tanh_and_mul/harness.hpp: what the benchmark and the generic GPU checks need to run any
// gelu_tanh_and_mul variant on a spec shape (ktune/harness.hpp). Host-only (g++ and nvcc).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include <ktune/dtype.hpp>
#include <ktune/harness.hpp>
#include <ktune/random.hpp>

#include "args.hpp"
#include "reference.hpp"
#include "../common/act_and_mul/reference_rows.hpp"

namespace ktune::ops::gelu_tanh_and_mul {

/// Tensor order: in, out (as in spec.json).
class Harness final : public ktune::Harness {
 public:
  enum Tensor : std::size_t { in = 0, out, count };

  /// Input ranges: x covers both tails of gelu_tanh (Phi(-6) ~ 1e-9: saturated to 0 below, to x above, with the
  /// curved part around zero in between) and y is O(1). The ranges are asymmetric so a draw landing exactly
  /// on 0 is as unlikely as any value.
  static constexpr float x_lo = -6.0f, x_hi = 6.25f, y_lo = -3.0f, y_hi = 3.125f;

  /// in [tokens, 2*d] with row stride in_stride: element (t, c) depends only on (seed, t * 2d + c), so a
  /// strided copy of a shape holds the same values as the contiguous one.
  template <class E>
  static void random_input(E* dst, std::int64_t tokens, std::int64_t d, std::int64_t in_stride, std::uint64_t seed) {
    for (std::int64_t t = 0; t < tokens; ++t)
      for (std::int64_t c = 0; c < 2 * d; ++c) {
        const auto i = static_cast<std::uint64_t>(t * 2 * d + c);
        const float v = c < d ? ktune::uniform_at(seed, i, x_lo, x_hi) : ktune::uniform_at(seed, i, y_lo, y_hi);
        dst[t * in_stride + c] = ktune::from_float<E>(v);
      }
  }

  const char* op() const override { return "gelu_tanh_and_mul"; }

  std::vector<ktune::TensorInfo> tensors(const ktune::Shape& shape, ktune::DType dtype) const override {
    const auto t = static_cast<std::size_t>(shape.at("tokens"));
    const auto d = static_cast<std::size_t>(shape.at("d"));
    const int eb = ktune::size_of(dtype);
    return {{"in", t * 2 * d, eb, ktune::Access::read}, {"out", t * d, eb, ktune::Access::write}};
  }

  void fill_inputs(const ktune::Shape& shape, ktune::DType dtype, std::uint64_t seed,
                   ktune::HostTensors& host) const override {
    const auto info = tensors(shape, dtype);
    host.resize(info.size());
    for (std::size_t i = 0; i < info.size(); ++i) host[i].resize(info[i].bytes());
    const std::int64_t t = shape.at("tokens"), d = shape.at("d");
    ktune::visit_dtype(dtype, [&](auto element) {
      using E = decltype(element);
      random_input(reinterpret_cast<E*>(host[in].data()), t, d, 2 * d, seed);
    });
  }

  std::vector<std::vector<double>> reference(const ktune::Shape& shape, ktune::DType dtype,
                                             const ktune::HostTensors& inputs) const override {
    const std::int64_t t = shape.at("tokens"), d = shape.at("d");
    return ktune::visit_dtype(dtype, [&](auto element) {
      using E = decltype(element);
      return std::vector<std::vector<double>>{
          act_and_mul::reference_in_row_blocks(t, d, [&](std::int64_t first, std::int64_t rows) {
            return gelu_tanh_and_mul::reference(reinterpret_cast<const E*>(inputs[in].data()) + first * 2 * d, rows, d, 2 * d);
          })};
    });
  }

  std::shared_ptr<const void> make_args(const ktune::Shape& shape, ktune::DType dtype,
                                        const std::vector<void*>& device) const override {
    const std::int64_t t = shape.at("tokens"), d = shape.at("d");
    return ktune::visit_dtype(dtype, [&](auto element) -> std::shared_ptr<const void> {
      using E = decltype(element);
      return std::make_shared<const Args<E>>(
          Args<E>{static_cast<E*>(device[out]), static_cast<const E*>(device[in]), t, d, d, 2 * d});
    });
  }
};

}  // namespace ktune::ops::gelu_tanh_and_mul
