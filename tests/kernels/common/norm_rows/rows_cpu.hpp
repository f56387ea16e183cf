// tests/kernels/common/norm_rows/rows_cpu.hpp: what the host-side tests of every RMS norm op share, of
// either row kind: the two uses of the weight, and the checks of validate() and spec.json that do not
// depend on the kind. Op is a traits struct of op_traits.hpp with Weight (PlainWeight or GemmaWeight).
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include <ktune/dtype.hpp>
#include <ktune/harness.hpp>
#include <ktune/spec.hpp>
#include <ktune/status.hpp>

#include "kernels/common/norm_rows/kind.hpp"

namespace ktune::test::norm_rows {

/// rmsnorm and fused_add_rmsnorm scale by the weight as stored.
struct PlainWeight {
  /// The stored weight that scales by `factor`.
  static constexpr double stored(double factor) { return factor; }
  /// The harness's weights: |w| in [0.25, 1.5], never near 0.
  static ::testing::AssertionResult harness_value(float w) {
    if (std::fabs(w) < 0.25f || std::fabs(w) > 1.5f)
      return ::testing::AssertionFailure() << "weight " << w << ": |w| outside [0.25, 1.5]";
    return ::testing::AssertionSuccess();
  }
};

/// The Gemma ops scale by 1 + weight (Gemma stores w - 1).
struct GemmaWeight {
  static constexpr double stored(double factor) { return factor - 1; }
  /// The harness's weights: in [-0.5, 0.5], so the factor is in [0.5, 1.5], never 0.
  static ::testing::AssertionResult harness_value(float w) {
    if (std::fabs(w) > 0.5f)
      return ::testing::AssertionFailure() << "weight " << w << ": Gemma's weights lie near 0 (stored w - 1)";
    if (1.f + w < 0.5f) return ::testing::AssertionFailure() << "weight " << w << ": the factor 1 + w comes near 0";
    return ::testing::AssertionSuccess();
  }
};

inline std::string spec_path(const char* op) { return std::string(KTUNE_SOURCE_DIR "/kernels/") + op + "/spec.json"; }

// ---- validate -----------------------------------------------------------------------------------

template <class Op>
void check_stride_zero_refused() {
  // Every ktune op spells "contiguous rows" -1; 0 is refused (with a message saying so), even for one row.
  // Fake, never dereferenced addresses: validate only looks at their values.
  auto* first = reinterpret_cast<float*>(0x100000);
  auto* second = reinterpret_cast<float*>(0x200000);
  const auto* weight = reinterpret_cast<const float*>(0x300000);
  for (std::int64_t tokens : {1, 4}) {
    const auto first0 = Op::make_args(first, second, weight, tokens, 64, 1e-6f, 0, -1);
    const auto second0 = Op::make_args(first, second, weight, tokens, 64, 1e-6f, -1, 0);
    for (const Status s : {Op::validate(first0), Op::validate(second0)}) {
      EXPECT_EQ(s.code, StatusCode::invalid_argument);
      EXPECT_NE(std::string(s.message).find("pass -1"), std::string::npos) << s.message;
    }
  }
}

template <class Op>
void check_zero_tokens_valid() {
  auto* none = static_cast<__nv_bfloat16*>(nullptr);
  auto a = Op::make_args(none, none, none, 0, 4096, 1e-6f, -1, -1);
  EXPECT_TRUE(Op::validate(a).ok()) << "an empty batch may have no storage";
  a.h = 0;
  EXPECT_EQ(Op::validate(a).code, StatusCode::invalid_argument) << "sizes are still checked at T = 0";
}

// ---- the GPU's preparation ---------------------------------------------------------------------

/// What the GPU's preparation of a group assumes of the harness (kernels/common/norm_rows/device_preparation.cuh,
/// checked against the host's on the GPU): the tensors where Kind places them, and each input tensor k's element
/// i as fill_inputs stores it is Draw{}(k, seed, i) rounded to the storage type.
template <class Op, class Kind>
void check_draw_is_what_fill_inputs_stores() {
  const Shape shape{{{"tokens", 3}, {"h", 72}}, {}};
  const typename Op::Harness harness;
  for (const DType dtype : {DType::f32, DType::f16, DType::bf16}) {
    SCOPED_TRACE(name(dtype));
    const std::vector<TensorInfo> tensors = harness.tensors(shape, dtype);
    ASSERT_EQ(tensors.size(), 3u);
    EXPECT_EQ(tensors[Kind::input_tensor].name, "input");
    if constexpr (Kind::residual) EXPECT_EQ(tensors[Kind::residual_tensor].name, "residual");
    EXPECT_EQ(tensors[Kind::weight_tensor].name, "weight");
    const std::uint64_t seed = 0x5eed;
    HostTensors host;
    harness.fill_inputs(shape, dtype, seed, host);
    ASSERT_EQ(host.size(), tensors.size());
    visit_dtype(dtype, [&](auto element) {
      using E = decltype(element);
      for (std::size_t k = 0; k < tensors.size(); ++k) {
        if (tensors[k].access == Access::write) continue;
        ASSERT_EQ(host[k].size(), tensors[k].bytes());
        for (std::size_t i = 0; i < tensors[k].elements; ++i) {
          const E drawn = from_float<E>(typename Op::Draw{}(static_cast<int>(k), seed, i));
          ASSERT_EQ(std::memcmp(&drawn, host[k].data() + i * sizeof(E), sizeof(E)), 0) << tensors[k].name << "[" << i << "]";
        }
      }
    });
  }
}

// ---- spec ---------------------------------------------------------------------------------------

template <class Op>
void check_spec_loads() {
  std::ifstream f(spec_path(Op::name));
  ASSERT_TRUE(f) << "cannot open spec.json";
  const Spec spec = parse_spec(nlohmann::ordered_json::parse(f), std::string(Op::name) + "/spec.json");
  EXPECT_EQ(spec.schema, 2);
  EXPECT_EQ(spec.op, Op::name);
  const auto shapes = spec.shapes();
  // The grid of shapes/catalogue.json (tests/tools/shapes_test.cpp): every token count at every width.
  ASSERT_EQ(shapes.size(), spec.values(spec.tokens_dim).size() * spec.values(spec.width_dim).size());
  EXPECT_EQ(shapes.front().scalar("eps", 0), 1e-6) << "every spec shape carries eps' default";
  // The harness describes the spec's tensors, in the spec's order, with the same sizes and access.
  const auto want = spec.tensor_infos(shapes.back(), DType::bf16);
  const auto got = typename Op::Harness{}.tensors(shapes.back(), DType::bf16);
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(got[i].name, want[i].name);
    EXPECT_EQ(got[i].elements, want[i].elements);
    EXPECT_EQ(got[i].access, want[i].access);
  }
}

}  // namespace ktune::test::norm_rows
