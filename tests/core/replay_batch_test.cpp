// CPU tests of the replay batch rule (ktune/replay_batch.hpp): calls of one shape given one figure replay
// the same batch whatever their probes, unless a probe says the call is far slower; a batch of at least one
// rotation is a whole number of rotations, which needs no flush. And the sampler's stop rule (ktune/median.hpp).
#include <gtest/gtest.h>

#include <cstdlib>
#include <limits>
#include <vector>

#include <ktune/median.hpp>
#include <ktune/replay_batch.hpp>

namespace {

TEST(ReplayBatch, TheProbeSizesTheBatchWithoutAFigure) {
  EXPECT_EQ(ktune::replay_batch(250, 256, 0, 5.0), 50);
  EXPECT_EQ(ktune::replay_batch(250, 256, 0, 20.0), 12);   // a disturbed probe of the same call
  EXPECT_EQ(ktune::replay_batch(250, 256, 0, 0.1), 250);   // a probe under 1 us counts as 1 us
  EXPECT_EQ(ktune::replay_batch(250, 64, 0, 0.5), 64);     // at most max_batch
  EXPECT_EQ(ktune::replay_batch(250, 256, 0, 1000.0), 2);  // at least two launches
}

TEST(ReplayBatch, OneFigureGivesEveryComparableCallTheSameBatch) {
  const double figure = 6.25;  // 250 / 6.25 = 40 launches
  for (const double probe : {3.0, 5.0, 6.25, 8.0, 12.0, 20.0, 25.0})
    EXPECT_EQ(ktune::replay_batch(250, 256, figure, probe), 40) << "probe " << probe;
  // Past slow_call_factor x 250 us at 40 launches (probe > 25 us): the probe sizes it, for about 1 ms.
  EXPECT_EQ(ktune::replay_batch(250, 256, figure, 50.0), 20);
  EXPECT_EQ(ktune::replay_batch(250, 256, figure, 400.0), 2);
  // A slow call never gets more launches than the shape's batch.
  EXPECT_LE(ktune::replay_batch(250, 256, 100.0, 120.0), ktune::graph_batch(250, 100.0, 256));
}

TEST(ReplayBatch, TheBatchNeverGrowsAsTheProbeSlows) {
  int previous = ktune::replay_batch(250, 256, 4.0, 0.5);
  for (double probe = 0.5; probe < 2000; probe *= 1.1) {
    const int b = ktune::replay_batch(250, 256, 4.0, probe);
    EXPECT_LE(b, previous) << "probe " << probe;
    EXPECT_GE(b, 2);
    previous = b;
  }
}

TEST(ReplayBatch, ABatchOfAtLeastOneRotationIsAWholeNumberOfThem) {
  EXPECT_EQ(ktune::rotation_batch(40, 1, 256), 40);    // no rotation
  EXPECT_EQ(ktune::rotation_batch(40, 962, 256), 40);  // shorter than one rotation: kept, and flushed
  EXPECT_TRUE(ktune::replay_needs_flush(40, 962));
  EXPECT_EQ(ktune::rotation_batch(62, 17, 256), 68);   // 3.6 rotations: 4
  EXPECT_EQ(ktune::rotation_batch(58, 17, 256), 51);   // 3.4: 3
  EXPECT_EQ(ktune::rotation_batch(17, 17, 256), 17);
  EXPECT_EQ(ktune::rotation_batch(20, 17, 256), 17);   // never below one rotation
  EXPECT_EQ(ktune::rotation_batch(250, 100, 256), 200);  // 2.5 rotations, but 300 is past max_batch
  EXPECT_EQ(ktune::rotation_batch(2, 2, 256), 2);      // the largest sets: two launches, two sets
  EXPECT_EQ(ktune::rotation_batch(3, 2, 256), 4);
  for (int batch = 2; batch <= 256; ++batch)
    for (std::size_t rotations : {2u, 3u, 5u, 17u, 100u, 255u}) {
      const int b = ktune::rotation_batch(batch, rotations, 256);
      EXPECT_LE(b, 256);
      EXPECT_EQ(ktune::replay_needs_flush(b, rotations), static_cast<std::size_t>(batch) < rotations)
          << batch << " launches over " << rotations << " sets";
      EXPECT_LT(std::abs(b - batch), static_cast<int>(rotations)) << "the nearest whole number, or the most under 256";
    }
  EXPECT_FALSE(ktune::replay_needs_flush(7, 1)) << "one set: no rotation to keep cold";
}

TEST(Median, OfOddAndEvenCounts) {
  EXPECT_EQ(ktune::median_of({}), 0);
  EXPECT_EQ(ktune::median_of({3, 1, 2}), 2);
  EXPECT_EQ(ktune::median_of({4, 1, 3, 2}), 2.5);
}

TEST(Median, SettledWhenNoNextRoundCouldMoveIt) {
  // Six samples, the next round three: the median of nine is the fifth, between the second and fifth of
  // the six taken.
  const std::vector<double> tight{100.0, 100.2, 100.4, 100.5, 100.7, 130.0};  // one outlier
  EXPECT_TRUE(ktune::median_settled(tight, 3, 0.01));
  EXPECT_FALSE(ktune::median_settled(tight, 3, 0.001));
  const std::vector<double> loose{100.0, 98.0, 97.5, 100.4, 102.0, 100.3};
  EXPECT_FALSE(ktune::median_settled(loose, 3, 0.01)) << "the second lowest (98) is 2.1% below the median";
  EXPECT_FALSE(ktune::median_settled({100.0, 100.0, 100.0}, 3, 0.5)) << "as many more as taken: unbounded";
  EXPECT_FALSE(ktune::median_settled({}, 1, 0.5));
  // Settled means settled: no three further samples move the median further than the bound.
  const double m = ktune::median_of(tight);
  for (double a : {0.0, 99.0, 100.45, 101.0, 1e9})
    for (double b : {0.0, 100.3, 1e9})
      for (double c : {-std::numeric_limits<double>::infinity(), 100.6, 200.0}) {
        std::vector<double> more(tight);
        more.insert(more.end(), {a, b, c});
        EXPECT_LE(std::abs(ktune::median_of(more) - m), 0.01 * m);
      }
}

}  // namespace

