// bench/caller_state.hpp: what a call could leave behind in its caller's stream, context or device
// (docs/judge.md, item 11): a snapshot of every such setting the CUDA runtime can report, the differences
// of two snapshots in words, and putting a snapshot's settings back.
//
// A variant is a kernel and its adapter: setting attributes of its own kernels (cudaFuncSetAttribute,
// cudaFuncSetCacheConfig) is its business and is not looked at. What it must not change is the caller's: the
// stream's attributes (an access-policy window marking memory persisting in L2 replaces the caller's own, and
// stays), the context's limits (the persisting-L2 set-aside, the stack, the printf FIFO, the malloc heap, ...),
// the cache configuration, the device flags, the current memory pool, the current device and the thread's
// stream-capture mode.
//
// Host-only (the CUDA runtime API); g++ and nvcc both compile it. The snapshot is about twenty queries that
// the runtime answers on the host: it runs after every checked call (tests/bench/judge_state_gpu_test.cu
// measures it).
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>

#include <ktune/status.hpp>

namespace ktune::bench {

/// The caller's settings a call could change. Which queries this device answers is found by the first
/// snapshot (CallerStateQueries); a setting it does not answer is not compared.
struct CallerState {
  /// The context limits compared, by cudaLimit value (0 .. 6: stack, printf FIFO, malloc heap, device-runtime
  /// sync depth and pending launches, L2 fetch granularity, persisting-L2 set-aside).
  static constexpr int limits = 7;
  /// The stream attributes CUDA lets a stream hold (cudaLaunchAttributeID values "valid for streams").
  static constexpr int stream_attributes = 6;
  static constexpr cudaLaunchAttributeID stream_attribute_ids[stream_attributes] = {
      cudaLaunchAttributeAccessPolicyWindow, cudaLaunchAttributeSynchronizationPolicy, cudaLaunchAttributePriority,
      cudaLaunchAttributeMemSyncDomainMap,   cudaLaunchAttributeMemSyncDomain,         cudaLaunchAttributeNvlinkUtilCentricScheduling};

  int device = -1;
  unsigned device_flags = 0;
  cudaFuncCache cache_config = cudaFuncCachePreferNone;
  std::size_t limit[limits] = {};
  cudaMemPool_t mem_pool = nullptr;
  cudaStreamCaptureMode capture_mode = cudaStreamCaptureModeGlobal;
  int stream_priority = 0;
  unsigned stream_flags = 0;
  cudaLaunchAttributeValue stream_attribute[stream_attributes] = {};
};

/// Which of CallerState's queries this process's device answers, found by the first snapshot.
struct CallerStateQueries {
  bool probed = false;
  bool limit[CallerState::limits] = {};
  bool stream_attribute[CallerState::stream_attributes] = {};
  bool mem_pool = false;
};

namespace detail {

inline const char* limit_name(int l) {
  switch (l) {
    case cudaLimitStackSize: return "the context's stack size limit (cudaLimitStackSize)";
    case cudaLimitPrintfFifoSize: return "the context's printf FIFO size (cudaLimitPrintfFifoSize)";
    case cudaLimitMallocHeapSize: return "the context's malloc heap size (cudaLimitMallocHeapSize)";
    case cudaLimitDevRuntimeSyncDepth: return "the context's device-runtime sync depth (cudaLimitDevRuntimeSyncDepth)";
    case cudaLimitDevRuntimePendingLaunchCount:
      return "the context's device-runtime pending launch count (cudaLimitDevRuntimePendingLaunchCount)";
    case cudaLimitMaxL2FetchGranularity: return "the context's L2 fetch granularity (cudaLimitMaxL2FetchGranularity)";
    case cudaLimitPersistingL2CacheSize: return "the context's persisting-L2 set-aside (cudaLimitPersistingL2CacheSize)";
    default: return "a context limit";
  }
}

inline const char* access_property(cudaAccessProperty p) {
  switch (p) {
    case cudaAccessPropertyNormal: return "normal";
    case cudaAccessPropertyStreaming: return "streaming";
    case cudaAccessPropertyPersisting: return "persisting";
  }
  return "unknown";
}

inline std::string hex(const void* p) {
  char b[32];
  std::snprintf(b, sizeof b, "%p", p);
  return b;
}

/// Whether stream attribute `k` holds the same value in both (the member its id names, not the union's pad).
inline bool same_attribute(int k, const cudaLaunchAttributeValue& a, const cudaLaunchAttributeValue& b) {
  switch (CallerState::stream_attribute_ids[k]) {
    case cudaLaunchAttributeAccessPolicyWindow: {
      const cudaAccessPolicyWindow &x = a.accessPolicyWindow, &y = b.accessPolicyWindow;
      // A window of no bytes is no window, whatever its other fields say.
      if (x.num_bytes == 0 && y.num_bytes == 0) return true;
      return x.base_ptr == y.base_ptr && x.num_bytes == y.num_bytes && x.hitRatio == y.hitRatio && x.hitProp == y.hitProp &&
             x.missProp == y.missProp;
    }
    case cudaLaunchAttributeSynchronizationPolicy: return a.syncPolicy == b.syncPolicy;
    case cudaLaunchAttributePriority: return a.priority == b.priority;
    case cudaLaunchAttributeMemSyncDomainMap:
      return a.memSyncDomainMap.default_ == b.memSyncDomainMap.default_ && a.memSyncDomainMap.remote == b.memSyncDomainMap.remote;
    case cudaLaunchAttributeMemSyncDomain: return a.memSyncDomain == b.memSyncDomain;
    case cudaLaunchAttributeNvlinkUtilCentricScheduling: return a.nvlinkUtilCentricScheduling == b.nvlinkUtilCentricScheduling;
    default: return std::memcmp(&a, &b, sizeof a) == 0;
  }
}

inline std::string attribute_name(int k) {
  switch (CallerState::stream_attribute_ids[k]) {
    case cudaLaunchAttributeAccessPolicyWindow: return "the stream's access-policy window (cudaStreamAttributeAccessPolicyWindow)";
    case cudaLaunchAttributeSynchronizationPolicy:
      return "the stream's synchronisation policy (cudaStreamAttributeSynchronizationPolicy)";
    case cudaLaunchAttributePriority: return "the stream's priority attribute (cudaLaunchAttributePriority)";
    case cudaLaunchAttributeMemSyncDomainMap: return "the stream's memory-sync domain map (cudaLaunchAttributeMemSyncDomainMap)";
    case cudaLaunchAttributeMemSyncDomain: return "the stream's memory-sync domain (cudaLaunchAttributeMemSyncDomain)";
    case cudaLaunchAttributeNvlinkUtilCentricScheduling:
      return "the stream's NVLink-centric scheduling (cudaLaunchAttributeNvlinkUtilCentricScheduling)";
    default: return "a stream attribute";
  }
}

inline std::string attribute_value(int k, const cudaLaunchAttributeValue& v) {
  switch (CallerState::stream_attribute_ids[k]) {
    case cudaLaunchAttributeAccessPolicyWindow: {
      const cudaAccessPolicyWindow& w = v.accessPolicyWindow;
      if (w.num_bytes == 0) return "no window";
      char b[200];
      std::snprintf(b, sizeof b, "%zu bytes from %s, hit ratio %g, hits %s, misses %s", w.num_bytes, hex(w.base_ptr).c_str(),
                    static_cast<double>(w.hitRatio), access_property(w.hitProp), access_property(w.missProp));
      return b;
    }
    case cudaLaunchAttributeSynchronizationPolicy:
      switch (v.syncPolicy) {
        case cudaSyncPolicyAuto: return "auto";
        case cudaSyncPolicySpin: return "spin";
        case cudaSyncPolicyYield: return "yield";
        case cudaSyncPolicyBlockingSync: return "blocking sync";
      }
      return std::to_string(static_cast<int>(v.syncPolicy));
    case cudaLaunchAttributePriority: return std::to_string(v.priority);
    case cudaLaunchAttributeMemSyncDomainMap:
      return "default " + std::to_string(v.memSyncDomainMap.default_) + ", remote " + std::to_string(v.memSyncDomainMap.remote);
    case cudaLaunchAttributeMemSyncDomain: return std::to_string(static_cast<int>(v.memSyncDomain));
    case cudaLaunchAttributeNvlinkUtilCentricScheduling: return std::to_string(v.nvlinkUtilCentricScheduling);
    default: return "?";
  }
}

inline const char* cache_config_name(cudaFuncCache c) {
  switch (c) {
    case cudaFuncCachePreferNone: return "prefer none";
    case cudaFuncCachePreferShared: return "prefer shared";
    case cudaFuncCachePreferL1: return "prefer L1";
    case cudaFuncCachePreferEqual: return "prefer equal";
  }
  return "unknown";
}

inline const char* capture_mode_name(cudaStreamCaptureMode m) {
  switch (m) {
    case cudaStreamCaptureModeGlobal: return "global";
    case cudaStreamCaptureModeThreadLocal: return "thread-local";
    case cudaStreamCaptureModeRelaxed: return "relaxed";
  }
  return "unknown";
}

/// Whether a query's failure means "this device or driver does not have it", not a broken context.
inline bool unsupported(cudaError_t e) {
  return e == cudaErrorUnsupportedLimit || e == cudaErrorNotSupported || e == cudaErrorInvalidValue ||
         e == cudaErrorInvalidDeviceFunction;
}

}  // namespace detail

/// The settings of `stream`, its context and device now, into `out`. The first call (q.probed false) finds
/// which queries the device answers and leaves the others out of this and every later snapshot; call it first
/// where no error of an earlier call is pending (it clears the errors of the queries it drops).
inline Status snapshot_caller_state(cudaStream_t stream, CallerStateQueries& q, CallerState& out) {
  KTUNE_CUDA_TRY(cudaGetDevice(&out.device));
  KTUNE_CUDA_TRY(cudaGetDeviceFlags(&out.device_flags));
  KTUNE_CUDA_TRY(cudaDeviceGetCacheConfig(&out.cache_config));
  KTUNE_CUDA_TRY(cudaStreamGetPriority(stream, &out.stream_priority));
  KTUNE_CUDA_TRY(cudaStreamGetFlags(stream, &out.stream_flags));
  // The thread's capture mode is read by exchanging it twice.
  cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
  KTUNE_CUDA_TRY(cudaThreadExchangeStreamCaptureMode(&mode));
  out.capture_mode = mode;
  KTUNE_CUDA_TRY(cudaThreadExchangeStreamCaptureMode(&mode));
  const bool probe = !q.probed;
  auto optional = [&](bool& have, cudaError_t e) -> Status {
    if (e == cudaSuccess) {
      if (probe) have = true;
      return Status::success();
    }
    if (probe && detail::unsupported(e)) {
      (void)cudaGetLastError();  // the query's own error, not a kernel's: it is not sticky
      have = false;
      return Status::success();
    }
    return Status::from_cuda(e, "a query of the caller's state (bench/caller_state.hpp)");
  };
  for (int l = 0; l < CallerState::limits; ++l) {
    out.limit[l] = 0;
    if (probe || q.limit[l]) KTUNE_TRY(optional(q.limit[l], cudaDeviceGetLimit(&out.limit[l], static_cast<cudaLimit>(l))));
  }
  out.mem_pool = nullptr;
  if (probe || q.mem_pool) KTUNE_TRY(optional(q.mem_pool, cudaDeviceGetMemPool(&out.mem_pool, out.device)));
  for (int k = 0; k < CallerState::stream_attributes; ++k) {
    std::memset(&out.stream_attribute[k], 0, sizeof out.stream_attribute[k]);
    if (probe || q.stream_attribute[k])
      KTUNE_TRY(optional(q.stream_attribute[k],
                         cudaStreamGetAttribute(stream, CallerState::stream_attribute_ids[k], &out.stream_attribute[k])));
  }
  // A stream that never had a synchronisation policy reads 0, which is no policy cudaStreamSetAttribute takes
  // (refused on an H200): it means the default, Auto, and is recorded as that, so compare and restore need no case.
  for (int k = 0; k < CallerState::stream_attributes; ++k)
    if (CallerState::stream_attribute_ids[k] == cudaLaunchAttributeSynchronizationPolicy &&
        out.stream_attribute[k].syncPolicy == 0)
      out.stream_attribute[k].syncPolicy = cudaSyncPolicyAuto;
  q.probed = true;
  return Status::success();
}

/// What differs between `before` and `after`, one "<what>: <before> before the call, <after> after it" per
/// setting, joined by "; "; empty when nothing does. A setting `q` says the device does not answer is not
/// compared. Host-only, no CUDA call.
inline std::string caller_state_changes(const CallerState& before, const CallerState& after, const CallerStateQueries& q) {
  std::string out;
  auto add = [&](const std::string& what, const std::string& b, const std::string& a) {
    out += (out.empty() ? "" : "; ") + what + ": " + b + " before the call, " + a + " after it";
  };
  if (before.device != after.device) {
    // Everything else read after a change of device is the other device's: name the device alone.
    add("the current device (cudaSetDevice)", std::to_string(before.device), std::to_string(after.device));
    return out;
  }
  if (before.device_flags != after.device_flags) {
    char b[16], a[16];
    std::snprintf(b, sizeof b, "0x%x", before.device_flags);
    std::snprintf(a, sizeof a, "0x%x", after.device_flags);
    add("the device flags (cudaSetDeviceFlags)", b, a);
  }
  if (before.cache_config != after.cache_config)
    add("the device's cache configuration (cudaDeviceSetCacheConfig)", detail::cache_config_name(before.cache_config),
        detail::cache_config_name(after.cache_config));
  for (int l = 0; l < CallerState::limits; ++l)
    if (q.limit[l] && before.limit[l] != after.limit[l])
      add(detail::limit_name(l), std::to_string(before.limit[l]) + " bytes", std::to_string(after.limit[l]) + " bytes");
  if (q.mem_pool && before.mem_pool != after.mem_pool)
    add("the device's current memory pool (cudaDeviceSetMemPool)", detail::hex(before.mem_pool), detail::hex(after.mem_pool));
  if (before.capture_mode != after.capture_mode)
    add("the thread's stream-capture mode (cudaThreadExchangeStreamCaptureMode)", detail::capture_mode_name(before.capture_mode),
        detail::capture_mode_name(after.capture_mode));
  if (before.stream_priority != after.stream_priority)
    add("the stream's priority (cudaStreamGetPriority)", std::to_string(before.stream_priority), std::to_string(after.stream_priority));
  if (before.stream_flags != after.stream_flags)
    add("the stream's flags (cudaStreamGetFlags)", std::to_string(before.stream_flags), std::to_string(after.stream_flags));
  for (int k = 0; k < CallerState::stream_attributes; ++k)
    if (q.stream_attribute[k] && !detail::same_attribute(k, before.stream_attribute[k], after.stream_attribute[k]))
      add(detail::attribute_name(k), detail::attribute_value(k, before.stream_attribute[k]),
          detail::attribute_value(k, after.stream_attribute[k]));
  return out;
}

/// Puts back every setting of `want` (a snapshot of `stream`'s caller, taken with `q`) that differs now, and
/// flushes L2's persisting lines where a window or the set-aside was changed; then snapshots again: `left` gets
/// what still differs (empty when everything is back; the stream's flags cannot be changed at all).
inline Status restore_caller_state(cudaStream_t stream, const CallerState& want, CallerStateQueries& q, std::string& left) {
  int device = -1;
  KTUNE_CUDA_TRY(cudaGetDevice(&device));
  if (device != want.device) KTUNE_CUDA_TRY(cudaSetDevice(want.device));
  CallerState now;
  KTUNE_TRY(snapshot_caller_state(stream, q, now));
  bool persisting = false;
  if (now.device_flags != want.device_flags) KTUNE_CUDA_TRY(cudaSetDeviceFlags(want.device_flags));
  if (now.cache_config != want.cache_config) KTUNE_CUDA_TRY(cudaDeviceSetCacheConfig(want.cache_config));
  for (int l = 0; l < CallerState::limits; ++l)
    if (q.limit[l] && now.limit[l] != want.limit[l]) {
      KTUNE_CUDA_TRY(cudaDeviceSetLimit(static_cast<cudaLimit>(l), want.limit[l]));
      persisting |= l == cudaLimitPersistingL2CacheSize;
    }
  if (q.mem_pool && now.mem_pool != want.mem_pool) KTUNE_CUDA_TRY(cudaDeviceSetMemPool(want.device, want.mem_pool));
  if (now.capture_mode != want.capture_mode) {
    cudaStreamCaptureMode mode = want.capture_mode;
    KTUNE_CUDA_TRY(cudaThreadExchangeStreamCaptureMode(&mode));
  }
  // A stream attribute the runtime will not set to the caller's value (a synchronisation policy never set reads
  // as none, and setting Auto back may be refused) is put back by copying every attribute of a fresh stream,
  // which holds the never-set values, and then setting the others again.
  auto put_back_attributes = [&] {
    bool refused = false;
    for (int k = 0; k < CallerState::stream_attributes; ++k)
      if (q.stream_attribute[k] && !detail::same_attribute(k, now.stream_attribute[k], want.stream_attribute[k])) {
        cudaLaunchAttributeValue v = want.stream_attribute[k];
        persisting |= CallerState::stream_attribute_ids[k] == cudaLaunchAttributeAccessPolicyWindow;
        if (cudaStreamSetAttribute(stream, CallerState::stream_attribute_ids[k], &v) != cudaSuccess) {
          (void)cudaGetLastError();
          refused = true;
        }
      }
    return refused;
  };
  if (put_back_attributes()) {
    cudaStream_t fresh = nullptr;
    KTUNE_CUDA_TRY(cudaStreamCreateWithFlags(&fresh, cudaStreamNonBlocking));
    const cudaError_t copied = cudaStreamCopyAttributes(stream, fresh);
    KTUNE_CUDA_TRY(cudaStreamDestroy(fresh));
    KTUNE_CUDA_TRY(copied);
    KTUNE_TRY(snapshot_caller_state(stream, q, now));
    (void)put_back_attributes();  // what still differs is named in `left` below
  }
  // Lines the call marked persisting stay so until they are reset: the next variant must not find them.
  if (persisting) KTUNE_CUDA_TRY(cudaCtxResetPersistingL2Cache());
  KTUNE_TRY(snapshot_caller_state(stream, q, now));
  left = caller_state_changes(want, now, q);
  return Status::success();
}

}  // namespace ktune::bench
