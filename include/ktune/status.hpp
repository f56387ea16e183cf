// ktune/status.hpp: the one error model of ktune.
//
// Every host function that can fail returns a `ktune::Status`: a code, a static message (never
// allocated, so a Status is cheap to return from a hot path) and, when CUDA itself failed, the
// `cudaError_t`. `describe()` composes the whole text on demand, the CUDA error's name and text after
// the message, into a buffer it returns by value (still no allocation). Library code never prints and
// never exits; the caller decides.
//
// The thread's last CUDA error (cudaGetLastError / cudaPeekAtLastError) is the caller's, and ktune
// leaves it as it found it wherever CUDA lets it:
//   - a ktune call that succeeds does not touch it: an error the caller had pending before the call is
//     still pending after it, and is not reported as ktune's (ktune's launches take the launch's error
//     from cudaLaunchKernelEx's result, never from cudaGetLastError);
//   - a ktune call that fails in a CUDA call takes the error that call left out again
//     (Status::from_cuda_call, KTUNE_CUDA_TRY), so the caller's next cudaGetLastError() does not report
//     ktune's failure against unrelated work (PyTorch checks it after each of its own launches). The
//     failing runtime call itself replaced any error the caller had pending (the runtime keeps one, the
//     last), and CUDA has no call that sets it back: that one is lost, as it would be after any failing
//     CUDA call of the caller's own. A sticky error (the context is unusable) cannot be taken out at all.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>

namespace ktune {

/// A Status as text (Status::describe): a fixed buffer, so composing it allocates nothing.
struct StatusText {
  static constexpr std::size_t capacity = 512;
  char text[capacity] = {};
  const char* c_str() const noexcept { return text; }
};

enum class StatusCode : int {
  ok = 0,
  invalid_argument,   // null pointer, negative size, stride shorter than a row, ...
  unsupported,        // dtype, alignment or size this variant (or the API) does not handle
  too_large,          // element counts beyond what the indexing of the chosen kernel allows
  cuda_error,         // a CUDA runtime call or a launch failed; see Status::cuda
  internal,
};

/// The result of a ktune call. `message` always points to a string literal: what failed and, for a CUDA
/// error, the call and its place; `describe()` adds the CUDA error's name and text.
struct [[nodiscard]] Status {
  StatusCode code = StatusCode::ok;
  const char* message = "ok";
  cudaError_t cuda = cudaSuccess;

  constexpr bool ok() const noexcept { return code == StatusCode::ok; }
  constexpr explicit operator bool() const noexcept { return ok(); }

  /// The message, and where CUDA failed its error's name and text: "<message>: <cudaGetErrorName>
  /// (<cudaGetErrorString>)". Composed now, from the stored cudaError_t; a message too long for the buffer
  /// is cut (ending in "...") before the CUDA error's part is.
  [[nodiscard]] StatusText describe() const noexcept;

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
  /// from_cuda for the result `e` of a CUDA runtime call ktune has just made: on failure it also takes
  /// out the thread's last error where that is `e`, the error the call left (see the file comment).
  static Status from_cuda_call(cudaError_t e, const char* where) noexcept;
};

namespace detail {
/// Appends the C string `s` to `out` at `n`, at most up to `cap` - 1 characters; returns the new length.
inline std::size_t append_text(char* out, std::size_t n, std::size_t cap, const char* s) noexcept {
  for (; s && *s && n + 1 < cap; ++s) out[n++] = *s;
  out[n] = '\0';
  return n;
}
inline std::size_t text_length(const char* s) noexcept {
  std::size_t n = 0;
  while (s && s[n]) ++n;
  return n;
}
}  // namespace detail

inline StatusText Status::describe() const noexcept {
  StatusText t;
  constexpr std::size_t cap = StatusText::capacity;
  if (cuda == cudaSuccess) {
    detail::append_text(t.text, 0, cap, message);
    return t;
  }
  const char* name = cudaGetErrorName(cuda);
  const char* what = cudaGetErrorString(cuda);
  // The CUDA error's part, ": name (text)", is kept whole; the message gets what room is left.
  const std::size_t tail = 2 + detail::text_length(name) + 2 + detail::text_length(what) + 1;
  const std::size_t room = cap - 1 > tail ? cap - 1 - tail : 0;
  std::size_t n = 0;
  if (detail::text_length(message) <= room) {
    n = detail::append_text(t.text, n, cap, message);
  } else if (room > 3) {
    n = detail::append_text(t.text, n, room - 3 + 1, message);
    n = detail::append_text(t.text, n, cap, "...");
  }
  n = detail::append_text(t.text, n, cap, ": ");
  n = detail::append_text(t.text, n, cap, name);
  n = detail::append_text(t.text, n, cap, " (");
  n = detail::append_text(t.text, n, cap, what);
  detail::append_text(t.text, n, cap, ")");
  return t;
}

namespace detail {
/// Takes `e`, the failed result of a CUDA runtime call ktune has just made, out of the thread's last error:
/// only where the last error is `e` (a result kept from an earlier call, or one that never set the last
/// error, leaves the caller's pending error alone).
inline void take_last_error(cudaError_t e) noexcept {
  if (e != cudaSuccess && cudaPeekAtLastError() == e) (void)cudaGetLastError();
}

/// For a sequence of CUDA calls whose failures are handled without a Status (a capture that may not work):
/// remembers the last error pending before them, and settle() takes out what they left in its place.
/// A pending error a failing call replaced is lost all the same (see the file comment).
class LastErrorScope {
 public:
  LastErrorScope() noexcept : pending_(cudaPeekAtLastError()) {}
  void settle() const noexcept {
    if (cudaPeekAtLastError() != pending_) (void)cudaGetLastError();
  }

 private:
  cudaError_t pending_;
};
}  // namespace detail

inline Status Status::from_cuda_call(cudaError_t e, const char* where) noexcept {
  if (e == cudaSuccess) return Status{};
  detail::take_last_error(e);
  return Status{StatusCode::cuda_error, where, e};
}

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

/// Evaluate a CUDA runtime call; on failure take its error out of the thread's last error and return a
/// Status naming the call and its place (Status::from_cuda_call).
#define KTUNE_CUDA_TRY(call)                                                        \
  do {                                                                              \
    const cudaError_t ktune_err_ = (call);                                          \
    if (ktune_err_ != cudaSuccess)                                                  \
      return ::ktune::Status::from_cuda_call(ktune_err_, #call " at " KTUNE_HERE);  \
  } while (0)

/// Propagate a failed Status.
#define KTUNE_TRY(expr)                                   \
  do {                                                    \
    const ::ktune::Status ktune_st_ = (expr);             \
    if (!ktune_st_.ok()) return ktune_st_;                \
  } while (0)

/// With KTUNE_DEBUG_SYNC defined: waits for the device and returns the kernel's own execution error (a
/// synchronising check, so never on in production builds); nothing otherwise. ktune::launch runs it.
#ifdef KTUNE_DEBUG_SYNC
#define KTUNE_DEBUG_SYNC_CHECK() KTUNE_CUDA_TRY(cudaDeviceSynchronize())
#else
#define KTUNE_DEBUG_SYNC_CHECK() \
  do {                           \
  } while (0)
#endif

/// After a `kernel<<<...>>>` launch, whose error only the thread's last error holds: takes it out
/// (cudaGetLastError) and returns it, then KTUNE_DEBUG_SYNC_CHECK. An error the caller left pending
/// before the launch is taken and reported too, as this launch's: ktune's own launches go through
/// ktune::launch (launch.hpp), which reads cudaLaunchKernelEx's result instead and leaves it alone.
#define KTUNE_CHECK_LAUNCH()                \
  do {                                      \
    KTUNE_CUDA_TRY(cudaGetLastError());     \
    KTUNE_DEBUG_SYNC_CHECK();               \
  } while (0)
