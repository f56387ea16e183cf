// ktune/status.hpp: the one error model of ktune.
//
// Every host function that can fail returns a `ktune::Status`: a code, a static message (never
// allocated, so a Status is cheap to return from a hot path) and, when CUDA itself failed, the
// `cudaError_t`. Library code never prints and never exits; the caller decides.
#pragma once

#include <cuda_runtime_api.h>

namespace ktune {

enum class StatusCode : int {
  ok = 0,
  invalid_argument,   // null pointer, negative size, stride shorter than a row, ...
  unsupported,        // dtype, alignment or size this variant (or the API) does not handle
  too_large,          // element counts beyond what the indexing of the chosen kernel allows
  cuda_error,         // a CUDA runtime call or a launch failed; see Status::cuda
  internal,
};

/// The result of a ktune call. `message` always points to a string literal.
struct [[nodiscard]] Status {
  StatusCode code = StatusCode::ok;
  const char* message = "ok";
  cudaError_t cuda = cudaSuccess;

  constexpr bool ok() const noexcept { return code == StatusCode::ok; }
  constexpr explicit operator bool() const noexcept { return ok(); }

  static constexpr Status success() noexcept { return {}; }
  static constexpr Status invalid(const char* why) noexcept {
    return {StatusCode::invalid_argument, why, cudaSuccess};
  }
  static constexpr Status unsupported(const char* why) noexcept {
    return {StatusCode::unsupported, why, cudaSuccess};
  }
  static constexpr Status too_large(const char* why) noexcept {
    return {StatusCode::too_large, why, cudaSuccess};
  }
  static constexpr Status from_cuda(cudaError_t e, const char* where) noexcept {
    return e == cudaSuccess ? Status{} : Status{StatusCode::cuda_error, where, e};
  }
};

constexpr const char* to_string(StatusCode c) noexcept {
  switch (c) {
    case StatusCode::ok: return "ok";
    case StatusCode::invalid_argument: return "invalid argument";
    case StatusCode::unsupported: return "unsupported";
    case StatusCode::too_large: return "too large";
    case StatusCode::cuda_error: return "CUDA error";
    case StatusCode::internal: return "internal error";
  }
  return "unknown";
}

}  // namespace ktune

#define KTUNE_STRINGIFY_IMPL(x) #x
#define KTUNE_STRINGIFY(x) KTUNE_STRINGIFY_IMPL(x)
#define KTUNE_HERE __FILE__ ":" KTUNE_STRINGIFY(__LINE__)

/// Evaluate a CUDA runtime call; on failure return a Status naming the call and its place.
#define KTUNE_CUDA_TRY(call)                                                       \
  do {                                                                             \
    const cudaError_t ktune_err_ = (call);                                         \
    if (ktune_err_ != cudaSuccess)                                                 \
      return ::ktune::Status::from_cuda(ktune_err_, #call " at " KTUNE_HERE);      \
  } while (0)

/// Propagate a failed Status.
#define KTUNE_TRY(expr)                                   \
  do {                                                    \
    const ::ktune::Status ktune_st_ = (expr);             \
    if (!ktune_st_.ok()) return ktune_st_;                \
  } while (0)

/// After every launch: the launch error, and with KTUNE_DEBUG_SYNC defined also the kernel's own
/// execution error (a synchronising check, so never on in production builds).
#ifdef KTUNE_DEBUG_SYNC
#define KTUNE_CHECK_LAUNCH()                                     \
  do {                                                           \
    KTUNE_CUDA_TRY(cudaGetLastError());                          \
    KTUNE_CUDA_TRY(cudaDeviceSynchronize());                     \
  } while (0)
#else
#define KTUNE_CHECK_LAUNCH() KTUNE_CUDA_TRY(cudaGetLastError())
#endif
