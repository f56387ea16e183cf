// CPU tests of the replay batch rule (ktune/replay_batch.hpp): calls of one shape given one figure replay
// the same batch whatever their probes, unless a probe says the call is far slower.
#include <gtest/gtest.h>

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

}  // namespace
