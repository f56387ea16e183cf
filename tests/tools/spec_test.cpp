// include/ktune/spec.hpp: spec.json loading, shapes in the order written, bytes moved, clear errors.
#include <gtest/gtest.h>

#include <filesystem>
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
  { auto j = toy(); j["tolerance"]["fp32"]["rms_floor"] = -1; expect_error(j, "tolerance.fp32: \"rms_floor\" must be a finite number >= 0"); }
  { auto j = toy(); j["tolerance"]["fp32"]["rms_floor"] = "1"; expect_error(j, "\"rms_floor\""); }
  { auto j = toy(); j["original_build"] = "nvidia"; expect_error(j, "\"original_build\" must be \"sgl-kernel\""); }
  { auto j = toy(); j["original_build"] = 1; expect_error(j, "\"original_build\""); }
}

// Every shipped op re-expresses a kernel SGLang runs and names sgl-kernel's build, so its S runs as SGLang's
// does (bench/upstream: S / upstream 0.99-1.07 for the eight ops it compares); kernels/ holds nothing else.
TEST(Spec, EveryShippedOpCompilesItsSAsSglKernelDoes) {
  int ops = 0;
  for (const auto& dir : std::filesystem::directory_iterator(KTUNE_SOURCE_DIR "/kernels")) {
    const auto spec = dir.path() / "spec.json";
    if (!std::filesystem::exists(spec)) continue;
    EXPECT_EQ(ktune::load_spec(spec.string()).original_build, "sgl-kernel") << spec;
    ++ops;
  }
  EXPECT_EQ(ops, 10);
}

TEST(Spec, RmsFloorAndOriginalBuildAreOptional) {
  auto j = toy();
  j["tolerance"]["fp32"]["rms_floor"] = 0.5;
  const ktune::Spec s = ktune::parse_spec(j);
  EXPECT_DOUBLE_EQ(s.tolerance.at(ktune::DType::f32).rms_floor, 0.5);
  EXPECT_DOUBLE_EQ(s.tolerance.at(ktune::DType::f32).l2_floor(), 0.5);
  EXPECT_DOUBLE_EQ(s.tolerance.at(ktune::DType::bf16).rms_floor, 0.0);
  EXPECT_DOUBLE_EQ(s.tolerance.at(ktune::DType::bf16).l2_floor(), 1e-2) << "atol without a floor";
  EXPECT_EQ(s.original_build, "") << "S compiled with ktune's flags";
  j["original_build"] = "sgl-kernel";
  EXPECT_EQ(ktune::parse_spec(j).original_build, "sgl-kernel");
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

namespace {
// Schema 2: the rotary embedding's spec, cut down (int64 positions with a range, an fp32 cache, scalars).
ojson rope() {
  return ojson::parse(R"({
    "schema": 2, "op": "rope", "dims": {"tokens": [1, 16], "heads": [32], "max_pos": [4096]},
    "tokens_dim": "tokens", "width_dim": "heads", "dtypes": ["bf16"],
    "tolerance": {"bf16": {"rel_l2": 1e-2, "atol": 1e-2, "rtol": 1e-2}},
    "scalars": [
      {"name": "eps", "type": "float", "default": 1e-6, "valid": "> 0 and < 1", "values": [1e-5]},
      {"name": "is_neox", "type": "bool", "default": true},
      {"name": "rotary_dim", "type": "int", "default": 128, "valid": ">= 2"}
    ],
    "tensors": [
      {"name": "positions", "shape": ["tokens"], "dtype": "int64", "access": "read", "range": [0, "max_pos"]},
      {"name": "cache", "shape": ["max_pos", "128"], "dtype": "fp32", "access": "read"},
      {"name": "query", "shape": ["tokens", "heads", "128"], "dtype": "element", "access": "read_write"}
    ]})");
}

TEST(Spec, SchemaTwoReadsScalarsAndFixedDtypeTensors) {
  const ktune::Spec s = ktune::parse_spec(rope());
  EXPECT_EQ(s.schema, 2);
  ASSERT_EQ(s.scalars.size(), 3u);
  const ktune::SpecScalar& eps = s.scalars[0];
  EXPECT_EQ(eps.type, ktune::ScalarType::float_);
  EXPECT_DOUBLE_EQ(eps.default_value, 1e-6);
  EXPECT_EQ(eps.values, (std::vector<double>{1e-5, 1e-6}));  // the spec's values, then the default
  EXPECT_TRUE(eps.admits(0.5));
  EXPECT_FALSE(eps.admits(0));
  EXPECT_FALSE(eps.admits(1));
  EXPECT_FALSE(eps.admits(std::nan("")));
  const ktune::SpecScalar& neox = *s.find_scalar("is_neox");
  EXPECT_EQ(neox.values, (std::vector<double>{1, 0}));  // a bool's both values
  EXPECT_FALSE(neox.admits(2));
  EXPECT_FALSE(s.find_scalar("rotary_dim")->admits(2.5));  // an int scalar takes integers
  EXPECT_FALSE(s.find_scalar("rotary_dim")->admits(1));

  // Every shape carries the scalars' defaults, and no scalar is part of its name.
  const ktune::Shape shape = s.shapes()[1];
  EXPECT_EQ(shape.key(), "tokens=16,heads=32,max_pos=4096");
  EXPECT_DOUBLE_EQ(shape.scalar("eps", 0), 1e-6);
  EXPECT_DOUBLE_EQ(shape.scalar("is_neox", 0), 1);
  EXPECT_DOUBLE_EQ(shape.scalar("absent", 7), 7);

  const ktune::SpecTensor& pos = s.tensors[0];
  EXPECT_TRUE(pos.is_index());
  EXPECT_EQ(pos.range_lo.value(shape), 0);
  EXPECT_EQ(pos.range_hi.value(shape), 4096);
  // positions 16 * 8 bytes, cache 4096 * 128 * 4, query 16 * 32 * 128 * 2 read and written.
  EXPECT_EQ(s.bytes(shape, ktune::DType::bf16), 16 * 8 + 4096 * 128 * 4 + 2 * 16 * 32 * 128 * 2);
  EXPECT_EQ(s.tensor_infos(shape, ktune::DType::bf16)[0].element_bytes, 8);
}

TEST(Spec, MalformedSchemaTwoFieldsFailNamingTheFieldAndTheReason) {
  auto scalar = [](int i, const char* key, const ojson& v) {
    auto j = rope();
    j["scalars"][i][key] = v;
    return j;
  };
  expect_error(scalar(0, "type", "double"), "scalars[0]: \"type\" must be float, int or bool");
  expect_error(scalar(0, "default", 0), "scalars[0]: \"default\" is not valid (> 0 and < 1)");
  expect_error(scalar(0, "valid", "positive"), "\"valid\": 'positive' is not a comparison");
  expect_error(scalar(0, "valid", "> x"), "'x' in '> x' is not a finite number");
  expect_error(scalar(0, "values", ojson::array({1e-5, 1e-5})), "is listed twice");
  expect_error(scalar(0, "values", ojson::array({2.0})), "\"values\": 2.0 is not valid");
  expect_error(scalar(0, "name", "tokens"), "scalar name 'tokens' is already a dimension");
  expect_error(scalar(0, "name", "query"), "scalar name 'query' is already a tensor");
  expect_error(scalar(1, "default", 1), "scalars[1]: \"default\" must be true or false");
  expect_error(scalar(1, "valid", "> 0"), "\"valid\" is for float and int scalars");
  expect_error(scalar(2, "default", 1.5), "\"default\" must be an integer");
  { auto j = rope(); j["scalars"][0].erase("default"); expect_error(j, "scalars[0]: missing \"default\""); }
  { auto j = rope(); j["tensors"][0].erase("range"); expect_error(j, "tensors[0]: an int64 tensor needs \"range\""); }
  { auto j = rope(); j["tensors"][0]["range"] = ojson::array({0, "seq"}); expect_error(j, "'seq' is not a dimension"); }
  { auto j = rope(); j["tensors"][0]["access"] = "write"; expect_error(j, "is an index input"); }
  { auto j = rope(); j["tensors"][1]["range"] = ojson::array({0, 1}); expect_error(j, "\"range\" is for int32 and int64"); }
  { auto j = rope(); j["tensors"][0]["dtype"] = "int8"; expect_error(j, "\"dtype\" must be \"element\", \"fp32\", \"int32\" or \"int64\""); }
  { auto j = rope(); j["schema"] = 3; expect_error(j, "\"schema\" must be 1 or 2"); }
  // Schema 1 (no "schema") keeps its meaning: no scalars, no index tensors.
  { auto j = rope(); j.erase("schema"); expect_error(j, "needs \"schema\": 2"); }
  { auto j = toy(); j["scalars"] = ojson::array(); expect_error(j, "\"scalars\" needs \"schema\": 2"); }
  // A range bound names at most one dimension; a tensor's moved part has one extent per axis and a valid access.
  { auto j = rope(); j["tensors"][0]["range"] = ojson::array({0, "tokens*heads"}); expect_error(j, "at most one dimension"); }
  { auto j = rope(); j["tensors"][0]["range"] = ojson::array({0, "2*3"}); expect_error(j, "names a dimension"); }
  {
    auto j = rope();
    j["tensors"][2]["moved"] = ojson::parse(R"({"shape": ["tokens"], "access": "write"})");
    expect_error(j, "one extent per axis");
  }
  {
    auto j = rope();
    j["tensors"][2]["moved"] = ojson::parse(R"({"shape": ["tokens", "heads", "128"], "access": "scatter"})");
    expect_error(j, "\"access\" must be read, write or read_write, not \"scatter\"");
  }
  {
    auto j = rope();
    j["tensors"][1]["moved"] = ojson::parse(R"({"shape": ["tokens", "128"], "access": "write"})");
    expect_error(j, "a read-only tensor's moved part is read too");
  }
}

// A cache written at scattered rows (rotary_embedding_set_kv's k_buffer): the tensor is larger than what a call
// writes, its range bound a multiple of a dimension, and the bytes moved count only the moved part.
TEST(Spec, MovedPartAndMultipleOfADimensionRange) {
  auto j = rope();
  j["tensors"].push_back(ojson::parse(R"({"name": "slots", "shape": ["tokens"], "dtype": "int64", "access": "read",
                                          "range": [0, "2*tokens"]})"));
  j["tensors"].push_back(ojson::parse(R"({"name": "buffer", "shape": ["2*tokens", "128"], "dtype": "element",
      "access": "read_write", "moved": {"shape": ["tokens", "128"], "access": "write"}})"));
  const ktune::Spec s = ktune::parse_spec(j);
  const ktune::Shape shape = s.shapes()[1];  // tokens 16
  EXPECT_EQ(s.tensors[3].range_hi.value(shape), 32);
  const auto infos = s.tensor_infos(shape, ktune::DType::bf16);
  EXPECT_EQ(infos[4].elements, 32u * 128);
  EXPECT_EQ(infos[4].part_moved, 16 * 128 * 2);
  EXPECT_EQ(infos[4].moved_bytes(), 16u * 128 * 2);
  EXPECT_EQ(infos[2].part_moved, -1);
  EXPECT_EQ(infos[2].moved_bytes(), 2u * 16 * 32 * 128 * 2);
  EXPECT_EQ(s.bytes(shape, ktune::DType::bf16), 16 * 8 + 4096 * 128 * 4 + 2 * 16 * 32 * 128 * 2 + 16 * 8 + 16 * 128 * 2);
}
}  // namespace
