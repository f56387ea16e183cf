// tests/kernels/common/act_and_mul/act_and_mul_op.hpp: the per-op traits the shared act-and-mul tests
// (act_and_mul_tests.hpp, act_and_mul_api_tests.cuh, act_and_mul_gpu_tests.cuh) are written against.
//
// silu_and_mul, gelu_and_mul and gelu_tanh_and_mul declare the same names, each in its own namespace
// ktune::ops::<op> (kernels/<op>/), and the same public API under its own name (ktune::<op>,
// ktune::<op>_choice). A namespace cannot be a template argument, so these macros bind one op's names
// inside its traits struct (HOST_NAMES for the host compiler's tests, CUDA_NAMES for nvcc's, TABLE_NAMES
// for the tuned table's); the op's test file adds what really differs, e.g.
//
//   struct GeluAndMul {
//     KTUNE_ACT_AND_MUL_HOST_NAMES(gelu_and_mul)
//     static double activation(double x) { return ktune::ops::gelu_and_mul::gelu_reference(x); }
//   };
//
// The struct's name is also the prefix of the op's test suites (GeluAndMulVariants, GeluAndMulApi, ...).
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include <ktune/dtype.hpp>
#include <ktune/status.hpp>
#include <ktune/tuned.hpp>

/// What the host compiler sees of op `ns` (kernels/<ns>/args.hpp, space.hpp, harness.hpp, reference.hpp):
/// its name, Args, make_args and the checks on them, the space and its named configurations, the harness
/// and the float64 reference.
#define KTUNE_ACT_AND_MUL_HOST_NAMES(ns)                                                                       \
  static constexpr const char* name = #ns;                                                                     \
  template <class E>                                                                                           \
  using Args = ::ktune::ops::ns::Args<E>;                                                                      \
  using Space = ::ktune::ops::ns::Space;                                                                       \
  using Harness = ::ktune::ops::ns::Harness;                                                                   \
  using OriginalConfig = ::ktune::ops::ns::original_config_t;                                                  \
  template <int ElementBytes>                                                                                  \
  using UnalignedConfig = ::ktune::ops::ns::unaligned_config_t<ElementBytes>;                                  \
  static constexpr std::int64_t max_d = ::ktune::ops::ns::max_d;                                               \
  template <class E>                                                                                           \
  static constexpr Args<E> make_args(E* out, const E* in, std::int64_t tokens, std::int64_t d,                 \
                                     std::int64_t out_stride, std::int64_t in_stride) {                        \
    return ::ktune::ops::ns::make_args(out, in, tokens, d, out_stride, in_stride);                             \
  }                                                                                                            \
  template <class E>                                                                                           \
  static ::ktune::Status validate(const Args<E>& a) {                                                          \
    return ::ktune::ops::ns::validate(a);                                                                      \
  }                                                                                                            \
  template <class E>                                                                                           \
  static bool is_empty(const Args<E>& a) {                                                                     \
    return ::ktune::ops::ns::is_empty(a);                                                                      \
  }                                                                                                            \
  template <class E>                                                                                           \
  static std::int64_t tokens(const Args<E>& a) {                                                               \
    return ::ktune::ops::ns::tokens(a);                                                                        \
  }                                                                                                            \
  template <class E>                                                                                           \
  static std::int64_t width(const Args<E>& a) {                                                                \
    return ::ktune::ops::ns::width(a);                                                                         \
  }                                                                                                            \
  /** out [tokens, d] dense, from in [tokens, 2*d] with row stride in_stride. */                               \
  template <class E>                                                                                           \
  static std::vector<double> reference(const E* in, std::int64_t tokens, std::int64_t d,                       \
                                       std::int64_t in_stride) {                                               \
    return ::ktune::ops::ns::reference(in, tokens, d, in_stride);                                              \
  }

/// The host names plus what nvcc sees of op `ns` (kernels/<ns>/<ns>.cuh): the family's host adapter, the
/// public API and the name of the general configuration. For CUDA translation units only (cudaStream_t).
#define KTUNE_ACT_AND_MUL_CUDA_NAMES(ns)                                                                       \
  KTUNE_ACT_AND_MUL_HOST_NAMES(ns)                                                                             \
  using Family = ::ktune::ops::ns::Family;                                                                     \
  template <class E>                                                                                           \
  static ::ktune::Status call(E* out, const E* in, std::int64_t tokens, std::int64_t d,                        \
                              cudaStream_t stream = nullptr, std::int64_t out_stride = -1,                     \
                              std::int64_t in_stride = -1) {                                                   \
    return ::ktune::ns(out, in, tokens, d, stream, out_stride, in_stride);                                     \
  }                                                                                                            \
  /** The runtime-dtype entry. */                                                                              \
  static ::ktune::Status call(::ktune::DType dtype, void* out, const void* in, std::int64_t tokens,            \
                              std::int64_t d, cudaStream_t stream = nullptr, std::int64_t out_stride = -1,     \
                              std::int64_t in_stride = -1) {                                                   \
    return ::ktune::ns(dtype, out, in, tokens, d, stream, out_stride, in_stride);                              \
  }                                                                                                            \
  static ::ktune::Status choice(::ktune::DType dtype, std::int64_t tokens, std::int64_t d,                     \
                                ::ktune::TunedChoice& out) {                                                   \
    return ::ktune::ns##_choice(dtype, tokens, d, out);                                                        \
  }                                                                                                            \
  static constexpr const char* general_id = ::ktune::ops::ns::tuned::general_id;

/// The rest of op `ns`'s committed tuned table (kernels/<ns>/tuned.cuh), for the tests of the table itself;
/// apart from CUDA_NAMES because nvcc warns about a traits member a translation unit leaves unused.
#define KTUNE_ACT_AND_MUL_TABLE_NAMES(ns)                                                                      \
  static constexpr std::uint64_t tuned_space_hash = ::ktune::ops::ns::tuned::space_hash;                       \
  using GeneralConfig = ::ktune::ops::ns::tuned::general_config;                                               \
  /** The table's rows: an array, or nullptr before the first tune. */                                         \
  static constexpr const auto& tuned_entries = ::ktune::ops::ns::tuned::entries;                               \
  template <class E, class F>                                                                                  \
  static ::ktune::Status with_variant(int variant, F&& f) {                                                    \
    return ::ktune::ops::ns::tuned::with_variant<E>(variant, std::forward<F>(f));                              \
  }
