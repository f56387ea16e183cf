// tests/bench/caller_state_test.cpp: how the judge names what a call left in its caller's stream, context and
// device (bench/caller_state.hpp, docs/judge.md item 11), without a GPU: snapshots made by hand. The snapshot
// and the restore themselves run on the GPU (tests/bench/judge_chain_gpu_test.cu).
#include <gtest/gtest.h>

#include <string>

#include "bench/caller_state.hpp"

namespace {

using ktune::bench::caller_state_changes;
using ktune::bench::CallerState;
using ktune::bench::CallerStateQueries;

CallerStateQueries every_query() {
  CallerStateQueries q;
  q.probed = true;
  for (bool& b : q.limit) b = true;
  for (bool& b : q.stream_attribute) b = true;
  q.mem_pool = true;
  return q;
}

bool has(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

TEST(CallerState, TheSameStateSaysNothing) {
  const CallerState a;
  EXPECT_EQ(caller_state_changes(a, a, every_query()), "");
  CallerState b = a;
  // A window of no bytes is no window, whatever else it holds.
  b.stream_attribute[0].accessPolicyWindow.hitRatio = 0.5f;
  EXPECT_EQ(caller_state_changes(a, b, every_query()), "");
}

TEST(CallerState, AWindowLeftOnTheStreamIsNamedWithBothValues) {
  CallerState before, after;
  cudaAccessPolicyWindow& w = after.stream_attribute[0].accessPolicyWindow;
  w.base_ptr = reinterpret_cast<void*>(0x7f0000001000);
  w.num_bytes = 4096;
  w.hitRatio = 1.0f;
  w.hitProp = cudaAccessPropertyPersisting;
  w.missProp = cudaAccessPropertyStreaming;
  const std::string said = caller_state_changes(before, after, every_query());
  EXPECT_TRUE(has(said, "the stream's access-policy window (cudaStreamAttributeAccessPolicyWindow): no window before the call, "
                        "4096 bytes from 0x7f0000001000, hit ratio 1, hits persisting, misses streaming after it"))
      << said;
}

TEST(CallerState, LimitsConfigurationAndTheStreamAreEachNamed) {
  CallerState before, after;
  before.limit[cudaLimitPersistingL2CacheSize] = 0;
  after.limit[cudaLimitPersistingL2CacheSize] = 47185920;
  after.limit[cudaLimitStackSize] = before.limit[cudaLimitStackSize] + 1024;
  after.cache_config = cudaFuncCachePreferShared;
  after.stream_attribute[1].syncPolicy = cudaSyncPolicySpin;
  after.capture_mode = cudaStreamCaptureModeRelaxed;
  after.device_flags = 0x4;
  const std::string said = caller_state_changes(before, after, every_query());
  for (const char* part :
       {"the context's persisting-L2 set-aside (cudaLimitPersistingL2CacheSize): 0 bytes before the call, 47185920 bytes after it",
        "the context's stack size limit (cudaLimitStackSize): 0 bytes before the call, 1024 bytes after it",
        "the device's cache configuration (cudaDeviceSetCacheConfig): prefer none before the call, prefer shared after it",
        "the stream's synchronisation policy (cudaStreamAttributeSynchronizationPolicy): ", "spin after it",
        "the thread's stream-capture mode (cudaThreadExchangeStreamCaptureMode): global before the call, relaxed after it",
        "the device flags (cudaSetDeviceFlags): 0x0 before the call, 0x4 after it"})
    EXPECT_TRUE(has(said, part)) << part << "\n" << said;
  // One "; " between settings, none at the ends.
  EXPECT_NE(said.front(), ';');
  EXPECT_NE(said.back(), ' ');
}

TEST(CallerState, ADeviceChangeIsNamedAlone) {
  CallerState before, after;
  before.device = 0;
  after.device = 1;
  after.limit[cudaLimitStackSize] = 4096;  // the other device's: not compared
  EXPECT_EQ(caller_state_changes(before, after, every_query()),
            "the current device (cudaSetDevice): 0 before the call, 1 after it");
}

TEST(CallerState, WhatTheDeviceDoesNotAnswerIsNotCompared) {
  CallerState before, after;
  after.limit[cudaLimitDevRuntimeSyncDepth] = 3;
  after.stream_attribute[5].nvlinkUtilCentricScheduling = 1;
  CallerStateQueries q = every_query();
  q.limit[cudaLimitDevRuntimeSyncDepth] = false;
  q.stream_attribute[5] = false;
  EXPECT_EQ(caller_state_changes(before, after, q), "");
  q = every_query();
  EXPECT_TRUE(has(caller_state_changes(before, after, q), "device-runtime sync depth"));
  EXPECT_TRUE(has(caller_state_changes(before, after, q), "NVLink-centric scheduling"));
}

}  // namespace
