// The ops' DevicePreparations (bench/README.md, "Inputs and references on the GPU") on calls they must refuse:
// a shape lacking one of the op's sizes or with a negative one, and the wrong count of tensors or references. They
// refuse before any CUDA call: these tests run without a GPU, where any CUDA call would fail as a CUDA error, not as
// an invalid argument. What they draw and compute is checked on the GPU (DevicePreparationIsTheHosts); the writes of
// the ops whose kernels are one thread per element are also run here, on the host, as their kernels run them.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <ktune/dtype.hpp>
#include <ktune/harness.hpp>
#include <ktune/status.hpp>

#include "bench/host_inputs.hpp"

#include "kernels/fused_add_rmsnorm/family.cuh"
#include "kernels/gelu_and_mul/family.cuh"
#include "kernels/gelu_tanh_and_mul/family.cuh"
#include "kernels/gemma_fused_add_rmsnorm/family.cuh"
#include "kernels/gemma_rmsnorm/family.cuh"
#include "kernels/merge_attn_states_lse/family.cuh"
#include "kernels/rmsnorm/family.cuh"
#include "kernels/rotary_embedding/family.cuh"
#include "kernels/silu_and_mul/family.cuh"

namespace {

using ktune::Shape;
using ktune::StatusCode;

/// Family's preparation on its Harness's tensors and references for `shape` (the count that shape has), each
/// pointer null: only a refusal may come back.
template <class Family>
ktune::Status prepare(const Shape& shape, int tensors_off = 0, int references_off = 0) {
  const typename Family::Harness harness;
  std::size_t tensors = 0, outputs = 0;
  for (const ktune::TensorInfo& t : harness.tensors(Shape{{{"tokens", 1}, {"d", 1}, {"h", 1}, {"heads", 1}, {"head_size", 1},
                                                            {"q_heads", 1}, {"kv_heads", 1}, {"rotary_dim", 1}}, {}},
                                                      ktune::DType::f32)) {
    ++tensors;
    outputs += t.is_output();
  }
  const std::vector<void*> t(tensors + tensors_off, nullptr);
  const std::vector<double*> r(outputs + references_off, nullptr);
  return typename Family::DevicePreparation{}.prepare(shape, ktune::DType::f32, 1, t, r, nullptr);
}

/// Every size of `names` missing in turn, then negative in turn: each refused as an invalid argument.
template <class Family>
void refuses_bad_shapes(const std::vector<std::string>& names) {
  SCOPED_TRACE(Family::name);
  for (std::size_t drop = 0; drop < names.size(); ++drop)
    for (const bool negative : {false, true}) {
      Shape shape;
      for (std::size_t k = 0; k < names.size(); ++k)
        if (k != drop || negative) shape.dims.push_back({names[k], k == drop ? -1 : 4});
      const ktune::Status s = prepare<Family>(shape);
      EXPECT_EQ(s.code, StatusCode::invalid_argument) << names[drop] << (negative ? " negative" : " missing") << ": " << s.message;
    }
  Shape whole;
  for (const std::string& n : names) whole.dims.push_back({n, 4});
  for (const auto& [tensors_off, references_off] : {std::pair{1, 0}, std::pair{-1, 0}, std::pair{0, 1}, std::pair{0, -1}})
    EXPECT_EQ(prepare<Family>(whole, tensors_off, references_off).code, StatusCode::invalid_argument)
        << "tensors " << tensors_off << ", references " << references_off;
}

TEST(DevicePreparation, ActAndMulRefusesBadShapesAndCountsBeforeAnyCudaCall) {
  refuses_bad_shapes<ktune::ops::gelu_and_mul::Family>({"tokens", "d"});
  refuses_bad_shapes<ktune::ops::gelu_tanh_and_mul::Family>({"tokens", "d"});
  refuses_bad_shapes<ktune::ops::silu_and_mul::Family>({"tokens", "d"});
}

TEST(DevicePreparation, NormsRefuseBadShapesAndCountsBeforeAnyCudaCall) {
  refuses_bad_shapes<ktune::ops::rmsnorm::Family>({"tokens", "h"});
  refuses_bad_shapes<ktune::ops::gemma_rmsnorm::Family>({"tokens", "h"});
  refuses_bad_shapes<ktune::ops::fused_add_rmsnorm::Family>({"tokens", "h"});
  refuses_bad_shapes<ktune::ops::gemma_fused_add_rmsnorm::Family>({"tokens", "h"});
}

TEST(DevicePreparation, MergeAndRotaryRefuseBadShapesAndCountsBeforeAnyCudaCall) {
  refuses_bad_shapes<ktune::ops::merge_attn_states_lse::Family>({"tokens", "heads", "head_size"});
  refuses_bad_shapes<ktune::ops::rotary_embedding::Family>({"tokens", "q_heads", "kv_heads", "head_size", "rotary_dim"});
  // A rotation longer than its head.
  const Shape longer{{{"tokens", 4}, {"q_heads", 4}, {"kv_heads", 4}, {"head_size", 8}, {"rotary_dim", 16}}, {}};
  EXPECT_EQ(prepare<ktune::ops::rotary_embedding::Family>(longer).code, StatusCode::invalid_argument);
}

/// An op's group as its harness draws and computes it, and buffers of its sizes for the preparation's writes
/// (poisoned), compared as the benchmark compares (bench::preparation_disagreement).
struct Group {
  std::vector<ktune::TensorInfo> tensors;
  ktune::HostTensors host, prepared;
  std::vector<std::vector<double>> reference, prepared_reference;

  Group(const ktune::Harness& harness, const Shape& shape, ktune::DType dtype, std::uint64_t seed)
      : tensors(harness.tensors(shape, dtype)) {
    harness.fill_inputs(shape, dtype, seed, host);
    reference = harness.reference(shape, dtype, host);
    for (const ktune::TensorInfo& t : tensors) prepared.emplace_back(t.bytes(), std::byte{0xA5});
    for (const std::vector<double>& r : reference) prepared_reference.emplace_back(r.size(), -1.0);
  }
  template <class T>
  T* at(std::size_t t) {
    return reinterpret_cast<T*>(prepared[t].data());
  }
  std::string disagreement() const {
    return ktune::bench::preparation_disagreement(tensors, host, reference, prepared, prepared_reference);
  }
};

template <class E>
void merge_writes_on_the_host(const Shape& shape) {
  namespace op = ktune::ops::merge_attn_states_lse;
  using H = op::Harness;
  const std::uint64_t seed = 0x5eed + static_cast<std::uint64_t>(shape.at("tokens"));
  Group g(H{}, shape, ktune::dtype_v<E>, seed);
  const op::PreparationWrites<E> w{g.at<E>(H::prefix_out), g.at<float>(H::prefix_lse), g.at<E>(H::suffix_out),
                                   g.at<float>(H::suffix_lse), g.prepared_reference[0].data(), g.prepared_reference[1].data(),
                                   shape.at("tokens") * shape.at("heads"), shape.at("head_size"), op::DrawSeeds(seed)};
  for (std::int64_t i = 0; i < w.pairs; ++i) w.pair(i);
  for (std::int64_t e = 0; e < w.elements(); ++e) w.element(e);
  EXPECT_EQ(g.disagreement(), "") << shape.key();
}

template <class E>
void rotary_writes_on_the_host(const Shape& shape) {
  namespace op = ktune::ops::rotary_embedding;
  using H = op::Harness;
  const std::uint64_t seed = 0x5eed + static_cast<std::uint64_t>(shape.at("tokens"));
  Group g(H{}, shape, ktune::dtype_v<E>, seed);
  const std::int64_t tokens = shape.at("tokens");
  const op::DrawSeeds seeds(seed);
  // What prepare() copies in: the host's shuffle.
  const std::vector<std::int64_t> positions = op::draw_positions(tokens, tokens, seeds.positions);
  std::copy(positions.begin(), positions.end(), g.at<std::int64_t>(H::positions));
  const op::PreparationWrites<E> w{g.at<std::int64_t>(H::positions), g.at<E>(H::query), g.at<E>(H::key),
                                   g.at<float>(H::cos_sin_cache), g.prepared_reference[0].data(),
                                   g.prepared_reference[1].data(), tokens, shape.at("q_heads"), shape.at("kv_heads"),
                                   shape.at("head_size"), shape.at("rotary_dim"), op::is_neox_of(shape), seeds};
  for (std::int64_t i = 0; i < w.cache_elements(); ++i) w.cache_element(i);
  for (std::int64_t e = 0; e < w.head_elements(); ++e) w.head_element(e);
  EXPECT_EQ(g.disagreement(), "") << shape.key();
}

TEST(DevicePreparation, MergeWritesRunOnTheHostAreTheHarnesss) {
  for (const auto& [tokens, heads, head_size] : std::vector<std::array<std::int64_t, 3>>{{1, 1, 8}, {3, 37, 72}, {5, 64, 128}}) {
    const Shape shape{{{"tokens", tokens}, {"heads", heads}, {"head_size", head_size}}, {}};
    merge_writes_on_the_host<float>(shape);
    merge_writes_on_the_host<__half>(shape);
    merge_writes_on_the_host<__nv_bfloat16>(shape);
  }
}

TEST(DevicePreparation, RotaryWritesRunOnTheHostAreTheHarnesss) {
  for (const bool neox : {true, false})
    for (const auto& [tokens, q_heads, kv_heads, head_size, rotary_dim] :
         std::vector<std::array<std::int64_t, 5>>{{1, 2, 1, 128, 128}, {5, 3, 1, 128, 128}, {7, 4, 2, 256, 64}}) {
      const Shape shape{{{"tokens", tokens}, {"q_heads", q_heads}, {"kv_heads", kv_heads}, {"head_size", head_size},
                         {"rotary_dim", rotary_dim}},
                        {{"is_neox", neox ? 1.0 : 0.0}}};
      rotary_writes_on_the_host<float>(shape);
      rotary_writes_on_the_host<__half>(shape);
      rotary_writes_on_the_host<__nv_bfloat16>(shape);
    }
}

}  // namespace
