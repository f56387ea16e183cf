// The ops' DevicePreparations (bench/README.md, "Inputs and references on the GPU") on calls they must refuse:
// a shape lacking one of the op's sizes or with a negative one, and the wrong count of tensors or references. They
// refuse before any CUDA call: these tests run without a GPU, where any CUDA call would fail as a CUDA error, not as
// an invalid argument. What they draw and compute is checked on the GPU (DevicePreparationIsTheHosts).
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include <ktune/harness.hpp>
#include <ktune/status.hpp>

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

}  // namespace
