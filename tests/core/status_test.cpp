#include <gtest/gtest.h>

#include <string_view>

#include <ktune/dtype.hpp>
#include <ktune/status.hpp>
#include <ktune/tuned.hpp>

namespace {
ktune::Status fails_in_cuda() {
  KTUNE_CUDA_TRY(cudaErrorInvalidValue);
  return ktune::Status::success();
}
ktune::Status propagates() {
  KTUNE_TRY(ktune::Status::invalid("null pointer"));
  return ktune::Status::success();
}

TEST(Status, CarriesCodeMessageAndCudaError) {
  constexpr ktune::Status ok{};
  static_assert(ok.ok(), "default Status is success");
  const ktune::Status s = fails_in_cuda();
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(s.code, ktune::StatusCode::cuda_error);
  EXPECT_EQ(s.cuda, cudaErrorInvalidValue);
  EXPECT_NE(std::string_view(s.message).find("cudaErrorInvalidValue"), std::string_view::npos);
  EXPECT_NE(std::string_view(s.message).find("status_test.cpp:"), std::string_view::npos);
  // The place is relative to the checkout (CMakeLists.txt: -fmacro-prefix-map), so results carry no machine's paths.
  EXPECT_NE(std::string_view(s.message).find(" at tests/core/status_test.cpp:"), std::string_view::npos) << s.message;
  const ktune::Status p = propagates();
  EXPECT_EQ(p.code, ktune::StatusCode::invalid_argument);
  EXPECT_STREQ(p.message, "null pointer");
}

TEST(DType, NamesParseAndVisit) {
  ktune::DType t{};
  EXPECT_TRUE(ktune::parse_dtype("bf16", t));
  EXPECT_EQ(t, ktune::DType::bf16);
  EXPECT_FALSE(ktune::parse_dtype("fp8", t));
  EXPECT_EQ(ktune::size_of(ktune::DType::f16), 2);
  EXPECT_EQ(ktune::visit_dtype(ktune::DType::f32, [](auto x) { return static_cast<int>(sizeof(x)); }), 4);
  EXPECT_EQ(ktune::visit_dtype(ktune::DType::bf16, [](auto x) { return static_cast<int>(sizeof(x)); }), 2);
}

constexpr ktune::TunedEntry table[] = {
    // H200 rows: two token buckets for d in [1, 12000], one open bucket above.
    {90, "NVIDIA H200", ktune::DType::bf16, 16, 1, 12000, 0, "a"},
    {90, "NVIDIA H200", ktune::DType::bf16, INT64_MAX, 1, 12000, 1, "b"},
    {90, "NVIDIA H200", ktune::DType::bf16, INT64_MAX, 12001, INT64_MAX, 2, "c"},
    // H100 row: any shape.
    {90, "NVIDIA H100 80GB HBM3", ktune::DType::bf16, INT64_MAX, 1, INT64_MAX, 3, "d"},
};

TEST(Tuned, LookupPrefersDeviceThenArchThenFallback) {
  using ktune::TunedSource;
  auto pick = [](int arch, const char* dev, ktune::DType t, std::int64_t tokens, std::int64_t width) {
    return ktune::lookup(table, arch, dev, t, tokens, width);
  };
  EXPECT_EQ(pick(90, "NVIDIA H200", ktune::DType::bf16, 1, 11008).variant, 0);
  EXPECT_EQ(pick(90, "NVIDIA H200", ktune::DType::bf16, 16, 11008).variant, 0);
  EXPECT_EQ(pick(90, "NVIDIA H200", ktune::DType::bf16, 17, 11008).variant, 1);
  EXPECT_EQ(pick(90, "NVIDIA H200", ktune::DType::bf16, 17, 28672).variant, 2);
  EXPECT_EQ(pick(90, "NVIDIA H200", ktune::DType::bf16, 17, 28672).source, TunedSource::device);
  const auto other = pick(90, "NVIDIA H800", ktune::DType::bf16, 1, 11008);  // same arch, other name
  EXPECT_EQ(other.variant, 0);
  EXPECT_EQ(other.source, TunedSource::arch);
  const auto none = pick(80, "NVIDIA A100", ktune::DType::bf16, 1, 11008);
  EXPECT_EQ(none.variant, -1);
  EXPECT_EQ(none.source, TunedSource::fallback);
  EXPECT_EQ(pick(90, "NVIDIA H200", ktune::DType::f16, 1, 11008).variant, -1) << "no fp16 rows";
  static_assert(ktune::lookup(table, 90, "NVIDIA H100 80GB HBM3", ktune::DType::bf16, 9, 9).variant == 3,
                "lookup is constexpr");
  EXPECT_EQ(ktune::lookup(nullptr, 90, "x", ktune::DType::f32, 1, 1).variant, -1);
}
}  // namespace
