// ktune/dtype.hpp: the element types ktune kernels are instantiated for, and their run-time tags.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <cstring>
#include <string_view>
#include <type_traits>

namespace ktune {

/// Run-time tag of an element type, for bindings that only know the dtype at run time.
enum class DType : int { f32 = 0, f16 = 1, bf16 = 2 };

inline constexpr DType all_dtypes[] = {DType::f32, DType::f16, DType::bf16};

template <class T> struct dtype_of;
template <> struct dtype_of<float> { static constexpr DType value = DType::f32; };
template <> struct dtype_of<__half> { static constexpr DType value = DType::f16; };
template <> struct dtype_of<__nv_bfloat16> { static constexpr DType value = DType::bf16; };
template <class T> inline constexpr DType dtype_v = dtype_of<T>::value;

template <class T>
inline constexpr bool is_element_v =
    std::is_same_v<T, float> || std::is_same_v<T, __half> || std::is_same_v<T, __nv_bfloat16>;

/// Names as they appear in benchmark names and reports: fp32, fp16, bf16.
constexpr const char* name(DType t) noexcept {
  switch (t) {
    case DType::f32: return "fp32";
    case DType::f16: return "fp16";
    case DType::bf16: return "bf16";
  }
  return "unknown";
}

constexpr int size_of(DType t) noexcept { return t == DType::f32 ? 4 : 2; }

/// Parses "fp32" / "fp16" / "bf16"; returns false on anything else.
constexpr bool parse_dtype(std::string_view s, DType& out) noexcept {
  for (DType t : all_dtypes)
    if (s == name(t)) { out = t; return true; }
  return false;
}

/// Calls `f(T{})` with the element type named by `t` (f must accept float, __half, __nv_bfloat16).
template <class F>
decltype(auto) visit_dtype(DType t, F&& f) {
  switch (t) {
    case DType::f16: return f(__half{});
    case DType::bf16: return f(__nv_bfloat16{});
    case DType::f32: default: return f(float{});
  }
}

/// Host/device conversions that round to nearest even, identical on both sides.
template <class T> __host__ __device__ inline float to_float(T x);
template <> __host__ __device__ inline float to_float<float>(float x) { return x; }
template <> __host__ __device__ inline float to_float<__half>(__half x) { return __half2float(x); }
template <> __host__ __device__ inline float to_float<__nv_bfloat16>(__nv_bfloat16 x) {
  return __bfloat162float(x);
}

template <class T> __host__ __device__ inline T from_float(float x);
template <> __host__ __device__ inline float from_float<float>(float x) { return x; }
template <> __host__ __device__ inline __half from_float<__half>(float x) { return __float2half_rn(x); }
template <> __host__ __device__ inline __nv_bfloat16 from_float<__nv_bfloat16>(float x) {
  return __float2bfloat16_rn(x);
}

/// Raw bits of an element (for poison checks and bitwise determinism tests).
template <class T>
inline std::uint32_t bits_of(T x) {
  if constexpr (sizeof(T) == 4) {
    std::uint32_t b;
    std::memcpy(&b, &x, 4);
    return b;
  } else {
    std::uint16_t b;
    std::memcpy(&b, &x, 2);
    return b;
  }
}

template <class T>
inline T from_bits(std::uint32_t b) {
  T x;
  if constexpr (sizeof(T) == 4) {
    std::memcpy(&x, &b, 4);
  } else {
    const auto h = static_cast<std::uint16_t>(b);
    std::memcpy(&x, &h, 2);
  }
  return x;
}

}  // namespace ktune
