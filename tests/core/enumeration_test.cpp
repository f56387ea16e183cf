// The Hana half of enumeration: every feasible point of a 3840-point space becomes a configuration
// type. This file's compile time is the number to watch (tools/gpu.sh and CI print it via ninja's log).
#include <gtest/gtest.h>

#include <set>

#include <ktune/instantiate.hpp>

#include "core/test_family.hpp"

namespace {
using ktune::test::TestSpace;

template <std::size_t Shard, std::size_t Shards>
std::size_t count_shard(std::set<int>& threads_seen) {
  std::size_t n = 0;
  ktune::for_each_feasible<TestSpace, 90, __half, Shard, Shards>([&](auto cfg, const auto& point) {
    using Cfg = typename decltype(cfg)::type;
    static_assert(Cfg::threads <= 1024, "every instantiated configuration passed the thread rule");
    EXPECT_EQ(Cfg::threads, point[TestSpace::kTpb] * point[TestSpace::kRpb]);
    threads_seen.insert(Cfg::threads);
    ++n;
  });
  return n;
}

TEST(Enumeration, ShardsPartitionTheFeasibleSet) {
  std::set<int> threads;
  const std::size_t a = count_shard<0, 3>(threads);
  const std::size_t b = count_shard<1, 3>(threads);
  const std::size_t c = count_shard<2, 3>(threads);
  EXPECT_EQ(a + b + c, 1080u);
  EXPECT_EQ(a, 360u);
  EXPECT_EQ(threads, (std::set<int>{32, 64, 128, 256, 512, 1024}));
}
}  // namespace
