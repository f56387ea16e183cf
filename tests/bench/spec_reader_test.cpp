// The benchmark's reading of spec.json: shape order, bytes moved, tolerances, and the real specs.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "bench/spec_reader.hpp"

namespace ktune::bench {
namespace {

constexpr const char* silu_like = R"({
  "op": "silu_and_mul",
  "dims": {"tokens": [1, 16], "d": [11008, 13824, 28672]},
  "dtypes": ["fp32", "bf16"],
  "tolerance": {"bf16": {"rel_l2": 1.6e-2, "atol": 8e-3, "rtol": 3.2e-2}},
  "tensors": [
    {"name": "in", "shape": ["tokens", "2*d"], "dtype": "element", "access": "read"},
    {"name": "out", "shape": ["tokens", "d"], "dtype": "element", "access": "write"}
  ]
})";

TEST(BenchSpec, ShapesAreTheProductInTheOrderWritten) {
  const OpSpec s = parse_spec(silu_like, "test");
  const std::vector<Shape> shapes = s.shapes();
  ASSERT_EQ(shapes.size(), 6u);
  EXPECT_EQ(shapes[0].key(), "tokens=1,d=11008");   // "d" after "tokens" although 'd' < 't'
  EXPECT_EQ(shapes[2].key(), "tokens=1,d=28672");
  EXPECT_EQ(shapes[3].key(), "tokens=16,d=11008");
  EXPECT_TRUE(s.same_dims(shapes[4]));
}

TEST(BenchSpec, BytesMoved) {
  const OpSpec s = parse_spec(silu_like, "test");
  Shape sh;
  sh.dims = {{"tokens", 16}, {"d", 11008}};
  EXPECT_EQ(s.bytes_moved(sh, DType::bf16), 16 * 2 * 11008 * 2 + 16 * 11008 * 2);
  EXPECT_EQ(s.bytes_moved(sh, DType::f32), 16 * 3 * 11008 * 4);
}

TEST(BenchSpec, ReadWriteCountsTwiceAndFp32TensorsStayFourBytes) {
  const OpSpec s = parse_spec(R"({"op": "x", "dims": {"n": [10], "h": [4]}, "dtypes": ["fp16"],
    "tensors": [{"name": "a", "shape": ["n", "h"], "dtype": "element", "access": "read_write"},
                {"name": "lse", "shape": ["n"], "dtype": "fp32", "access": "write"},
                {"name": "w", "shape": [4], "access": "read"}]})",
                              "test");
  Shape sh;
  sh.dims = {{"n", 10}, {"h", 4}};
  EXPECT_EQ(s.bytes_moved(sh, DType::f16), 2 * 40 * 2 + 10 * 4 + 4 * 2);
}

TEST(BenchSpec, Tolerances) {
  const OpSpec s = parse_spec(silu_like, "test");
  EXPECT_DOUBLE_EQ(s.tolerance_for(DType::bf16).rtol, 3.2e-2);
  EXPECT_DOUBLE_EQ(s.tolerance_for(DType::f32).rel_l2, default_tolerance(DType::f32).rel_l2);
}

TEST(BenchSpec, MalformedSpecsNameTheProblem) {
  auto error_of = [](const std::string& text) {
    try {
      (void)parse_spec(text, "f.json");
    } catch (const std::runtime_error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(error_of("{").find("f.json: not valid JSON"), std::string::npos);
  EXPECT_NE(error_of(R"({"op": "x", "dims": {}, "dtypes": [], "tensors": []})").find("dims is empty"), std::string::npos);
  EXPECT_NE(error_of(R"({"op": "x", "dims": {"n": [1]}, "dtypes": ["fp8"], "tensors": []})").find("unknown dtype"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"op": "x", "dims": {"n": [1]}, "dtypes": ["fp32"],
                        "tensors": [{"name": "a", "shape": ["m"], "access": "read"}]})")
                .find("unknown dimension 'm'"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"op": "x", "dims": {"n": [1]}, "dtypes": ["fp32"],
                        "tensors": [{"name": "a", "shape": ["n"], "access": "modify"}]})")
                .find("access must be"),
            std::string::npos);
}

// Every kernel folder's spec.json reads; its shapes are the issue's spec shapes (6 token counts x widths).
TEST(BenchSpec, RepositorySpecsRead) {
  namespace fs = std::filesystem;
  int seen = 0;
  for (const auto& e : fs::directory_iterator(fs::path(KTUNE_SOURCE_DIR) / "kernels")) {
    const fs::path p = e.path() / "spec.json";
    if (!fs::exists(p)) continue;
    std::ifstream in(p);
    std::stringstream text;
    text << in.rdbuf();
    const OpSpec s = parse_spec(text.str(), p.string());
    EXPECT_EQ(s.op, e.path().filename().string());
    EXPECT_EQ(s.shapes().size() % 6, 0u) << p;
    EXPECT_EQ(s.dims.front().first, "tokens") << p;
    ++seen;
  }
  if (seen == 0) GTEST_SKIP() << "no kernel folder has a spec.json yet";
}

}  // namespace
}  // namespace ktune::bench
