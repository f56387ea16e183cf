// CPU test of graceful failure without a GPU: profiling returns a clear status and records why, and
// the CUPTI wrappers neither crash nor hang. On a machine with a GPU there is nothing to test here.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include <ktune/profile/profile.cuh>

#include "support/gpu.hpp"

namespace {

namespace kp = ktune::profile;

TEST(ProfileNoDevice, ProfileCallReportsNoDevice) {
  if (ktune::test::gpu_unavailable_reason().empty()) GTEST_SKIP() << "a GPU is present: covered by ProfileGpu.*";
  int launches = 0;
  kp::ProfileRecord rec;
  rec.op = "copy";
  const ktune::Status st = kp::profile_call(
      [&](std::size_t) {
        ++launches;
        return ktune::Status::success();
      },
      1, nullptr, kp::Options{}, rec);
  EXPECT_EQ(st.code, ktune::StatusCode::unsupported);
  EXPECT_NE(std::string(st.message).find("no usable CUDA device"), std::string::npos) << st.message;
  EXPECT_EQ(launches, 0) << "nothing is launched without a device";
  EXPECT_EQ(rec.metrics_status, "no usable CUDA device");
  EXPECT_EQ(rec.activity_status, "no usable CUDA device");
  EXPECT_EQ(rec.op, "copy") << "the caller's fields are kept";
}

TEST(ProfileNoDevice, CollectMetricsFailsCleanly) {
  if (ktune::test::gpu_unavailable_reason().empty()) GTEST_SKIP() << "a GPU is present: covered by ProfileGpu.*";
  std::vector<kp::RangeValues> ranges;
  std::size_t passes = 0;
  std::string why;
  int launches = 0;
  const ktune::Status st = kp::collect_metrics(
      [&]() {
        ++launches;
        return ktune::Status::success();
      },
      nullptr, kp::default_metric_names(), ranges, passes, why);
  EXPECT_FALSE(st.ok());
  EXPECT_EQ(launches, 0);
  EXPECT_TRUE(ranges.empty());
}

}  // namespace
