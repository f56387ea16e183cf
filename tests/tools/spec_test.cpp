// include/ktune/spec.hpp: spec.json loading, shapes in the order written, bytes moved, clear errors.
#include <gtest/gtest.h>

#include <string>

#include <ktune/spec.hpp>

namespace {

using ojson = nlohmann::ordered_json;

ojson toy() {
  return ojson::parse(R"({
    "op": "toy", "dims": {"tokens": [1, 16], "d": [8, 4]}, "tokens_dim": "tokens", "width_dim": "d",
    "dtypes": ["fp32", "bf16"],
    "tolerance": {"fp32": {"rel_l2": 1e-6, "atol": 1e-6, "rtol": 1e-6}, "bf16": {"rel_l2": 1e-2, "atol": 1e-2, "rtol": 1e-2}},
    "tensors": [
      {"name": "in", "shape": ["tokens", "2*d"], "dtype": "element", "access": "read"},
      {"name": "lse", "shape": ["tokens"], "dtype": "fp32", "access": "read_write"},
      {"name": "out", "shape": ["tokens", "d"], "dtype": "element", "access": "write"}
    ]})");
}

TEST(Spec, ShapesFollowTheOrderWrittenFirstDimensionSlowest) {
  const ktune::Spec s = ktune::parse_spec(toy());
  const auto shapes = s.shapes();
  ASSERT_EQ(shapes.size(), 4u);
  EXPECT_EQ(shapes[0].key(), "tokens=1,d=8");
  EXPECT_EQ(shapes[1].key(), "tokens=1,d=4");
  EXPECT_EQ(shapes[2].key(), "tokens=16,d=8");
  EXPECT_EQ(shapes[3].key(), "tokens=16,d=4");
}

TEST(Spec, BytesCountReadWriteTwiceAndFp32TensorsAtFourBytes) {
  const ktune::Spec s = ktune::parse_spec(toy());
  const ktune::Shape shape = s.shapes()[2];  // tokens=16, d=8
  // in: 16*16 elements, out: 16*8, lse: 16 fp32 read and written.
  EXPECT_EQ(s.bytes(shape, ktune::DType::bf16), 16 * 16 * 2 + 16 * 8 * 2 + 2 * 16 * 4);
  EXPECT_EQ(s.bytes(shape, ktune::DType::f32), 16 * 16 * 4 + 16 * 8 * 4 + 2 * 16 * 4);
  const auto infos = s.tensor_infos(shape, ktune::DType::bf16);
  ASSERT_EQ(infos.size(), 3u);
  EXPECT_EQ(infos[1].element_bytes, 4);
  EXPECT_TRUE(infos[2].is_output());
  EXPECT_DOUBLE_EQ(s.tolerance.at(ktune::DType::bf16).rel_l2, 1e-2);
}

void expect_error(ojson j, const std::string& fragment) {
  try {
    (void)ktune::parse_spec(j, "toy/spec.json");
    ADD_FAILURE() << "accepted a spec that should fail with: " << fragment;
  } catch (const ktune::SpecError& e) {
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("toy/spec.json"), std::string::npos) << e.what();
  }
}

TEST(Spec, MalformedSpecsFailNamingTheField) {
  { auto j = toy(); j["tensors"][0]["shape"][1] = "2*h"; expect_error(j, "'h' is not a dimension"); }
  { auto j = toy(); j["tolerance"].erase("bf16"); expect_error(j, "tolerance.bf16"); }
  { auto j = toy(); j["dtypes"].push_back("fp64"); expect_error(j, "not one of fp32, fp16, bf16"); }
  { auto j = toy(); j["width_dim"] = "heads"; expect_error(j, "width_dim 'heads'"); }
  { auto j = toy(); j["dims"]["d"] = ojson::array({8, 8}); expect_error(j, "listed twice"); }
  { auto j = toy(); j["tensors"][2]["access"] = "read"; j["tensors"][1]["access"] = "read"; expect_error(j, "no tensor is written"); }
  { auto j = toy(); j["dims"]["tokens"] = ojson::array({0}); expect_error(j, "positive integers"); }
}

TEST(Spec, TheToolFixtureSpecLoads) {
  const ktune::Spec s = ktune::load_spec(std::string(KTUNE_TOOL_TEST_DATA) + "/kernels/toyop/spec.json");
  EXPECT_EQ(s.op, "toyop");
  EXPECT_EQ(s.shapes().size(), 6u);
  EXPECT_THROW(ktune::load_spec("/nonexistent/spec.json"), ktune::SpecError);
}

}  // namespace

namespace {
TEST(Spec, ToleranceFallsBackToTheDefaultAndShapesMustNameTheDims) {
  ktune::Spec s = ktune::parse_spec(toy());
  EXPECT_DOUBLE_EQ(s.tolerance_for(ktune::DType::bf16).rtol, 1e-2);
  s.tolerance.erase(ktune::DType::f32);
  EXPECT_DOUBLE_EQ(s.tolerance_for(ktune::DType::f32).rel_l2, ktune::default_tolerance(ktune::DType::f32).rel_l2);
  EXPECT_TRUE(s.same_dims(s.shapes()[3]));
  ktune::Shape swapped;
  swapped.dims = {{"d", 8}, {"tokens", 1}};
  EXPECT_FALSE(s.same_dims(swapped));
  ktune::Shape fewer;
  fewer.dims = {{"tokens", 1}};
  EXPECT_FALSE(s.same_dims(fewer));
}

TEST(Spec, TextFormNamesItsOriginOnBadJson) {
  try {
    (void)ktune::parse_spec_text("{", "built-in/spec.json");
    FAIL() << "no error";
  } catch (const ktune::SpecError& e) {
    EXPECT_NE(std::string(e.what()).find("built-in/spec.json: not valid JSON"), std::string::npos);
  }
  EXPECT_EQ(ktune::parse_spec_text(toy().dump(), "toy").op, "toy");
}
}  // namespace
