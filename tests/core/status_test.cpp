#include <gtest/gtest.h>

#include <string>
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

// describe(): the message, then the CUDA error's name and text, composed from the stored cudaError_t
// (cudaGetErrorName and cudaGetErrorString need no device, so this runs anywhere).
TEST(Status, DescribeAddsTheCudaErrorsNameAndText) {
  const ktune::Status s = fails_in_cuda();
  const std::string text = s.describe().c_str();
  EXPECT_EQ(text, std::string(s.message) + ": cudaErrorInvalidValue (" + cudaGetErrorString(cudaErrorInvalidValue) + ")");
  EXPECT_NE(text.find(" at tests/core/status_test.cpp:"), std::string::npos) << text;  // ktune's call site
  // Without a CUDA error, the message alone; ok says so.
  EXPECT_STREQ(ktune::Status::invalid("null pointer").describe().c_str(), "null pointer");
  EXPECT_STREQ(ktune::Status::success().describe().c_str(), "ok");
  // A code the runtime does not know still says what it is.
  const ktune::Status unknown = ktune::Status::from_cuda(static_cast<cudaError_t>(99999), "somewhere");
  EXPECT_EQ(std::string(unknown.describe().c_str()), std::string("somewhere: ") + cudaGetErrorName(unknown.cuda) + " (" +
                                                         cudaGetErrorString(unknown.cuda) + ")");
  // An internal error may carry a CUDA error too: it is named the same way.
  const ktune::Status internal{ktune::StatusCode::internal, "profiler", cudaErrorNotSupported};
  EXPECT_NE(std::string(internal.describe().c_str()).find("profiler: cudaErrorNotSupported ("), std::string::npos);
}

TEST(Status, DescribeCutsALongMessageButNeverTheCudaError) {
  static const std::string long_message(2000, 'm');
  const ktune::Status s = ktune::Status::from_cuda(cudaErrorLaunchOutOfResources, long_message.c_str());
  const std::string text = s.describe().c_str();
  const std::string tail = std::string(": cudaErrorLaunchOutOfResources (") + cudaGetErrorString(s.cuda) + ")";
  EXPECT_EQ(text.size(), ktune::StatusText::capacity - 1);
  ASSERT_GE(text.size(), tail.size() + 3);
  EXPECT_EQ(text.substr(text.size() - tail.size()), tail);
  EXPECT_EQ(text.substr(text.size() - tail.size() - 3, 3), "...");
  EXPECT_EQ(text.find_first_not_of('m'), text.size() - tail.size() - 3);
  // A message that fits exactly is kept whole.
  const std::string fits(ktune::StatusText::capacity - 1 - tail.size(), 'f');
  EXPECT_EQ(std::string(ktune::Status::from_cuda(cudaErrorLaunchOutOfResources, fits.c_str()).describe().c_str()),
            fits + tail);
  // from_cuda_call builds the same Status as from_cuda (what it does to the last error: GPU test).
  const ktune::Status c = ktune::Status::from_cuda_call(cudaErrorInvalidValue, "call");
  EXPECT_EQ(c.code, ktune::StatusCode::cuda_error);
  EXPECT_EQ(c.cuda, cudaErrorInvalidValue);
  EXPECT_STREQ(c.message, "call");
  EXPECT_TRUE(ktune::Status::from_cuda_call(cudaSuccess, "call").ok());
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
