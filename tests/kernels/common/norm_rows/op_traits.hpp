// tests/kernels/common/norm_rows/op_traits.hpp: the members of an RMS norm op's test traits that its name
// gives, and the macro that makes a shared check an op's TEST. Every norm op names its pieces alike
// (docs/kernel-folder.md): namespace ktune::ops::<op>, public API ktune::<op>, registry name "<op>"; a
// traits struct opens with the macro of its test's kind (host, dispatch or GPU) and adds what sets the op
// apart (its row kind, its weight, its S).
#pragma once

#include <utility>

/// A static member f forwarding to the op's function of that name.
#define KTUNE_NORM_ROWS_FORWARD(op, f)                 \
  template <class... A>                                \
  static auto f(A&&... a) {                            \
    return ::ktune::ops::op::f(std::forward<A>(a)...); \
  }

/// What every test's traits use: the arguments and the space.
#define KTUNE_NORM_ROWS_TYPES(op)         \
  template <class E>                      \
  using Args = ::ktune::ops::op::Args<E>; \
  using Space = ::ktune::ops::op::Space;  \
  KTUNE_NORM_ROWS_FORWARD(op, make_args)

/// The pieces of <op>.cuh the dispatch is made of: the family, its named configurations, the runtime-dtype
/// entry and the tuned choice.
#define KTUNE_NORM_ROWS_FAMILY(op)                                 \
  using Family = ::ktune::ops::op::Family;                         \
  using unaligned_config_t = ::ktune::ops::op::unaligned_config_t; \
  using original_config_t = ::ktune::ops::op::original_config_t;   \
  KTUNE_NORM_ROWS_FORWARD(op, run_dtype)                           \
  KTUNE_NORM_ROWS_FORWARD(op, choose)

/// The traits of a host-compiled test (args.hpp, harness.hpp, reference.hpp, space.hpp).
#define KTUNE_NORM_ROWS_HOST_OP(op)                                   \
  KTUNE_NORM_ROWS_TYPES(op)                                           \
  static constexpr const char* name = #op;                            \
  using Tensor = ::ktune::ops::op::Tensor;                            \
  using Harness = ::ktune::ops::op::Harness;                          \
  using Draw = ::ktune::ops::op::Draw;                                \
  static constexpr float default_eps = ::ktune::ops::op::default_eps; \
  KTUNE_NORM_ROWS_FORWARD(op, input_value)                            \
  KTUNE_NORM_ROWS_FORWARD(op, reference)                              \
  KTUNE_NORM_ROWS_FORWARD(op, as_stored)                              \
  KTUNE_NORM_ROWS_FORWARD(op, overflow_threshold)                     \
  KTUNE_NORM_ROWS_FORWARD(op, validate)                               \
  KTUNE_NORM_ROWS_FORWARD(op, tokens)                                 \
  KTUNE_NORM_ROWS_FORWARD(op, width)

/// The traits of a dispatch test (<op>.cuh, no GPU): no more than it uses, as nvcc warns of the rest.
#define KTUNE_NORM_ROWS_DISPATCH_OP(op) \
  KTUNE_NORM_ROWS_TYPES(op)             \
  KTUNE_NORM_ROWS_FAMILY(op)

/// The traits of a GPU test: the host pieces, the family, the public API (typed) and the tuned table.
#define KTUNE_NORM_ROWS_OP(op)                                                       \
  KTUNE_NORM_ROWS_HOST_OP(op)                                                        \
  KTUNE_NORM_ROWS_FAMILY(op)                                                         \
  template <class... A>                                                              \
  static ::ktune::Status call(A&&... a) {                                            \
    return ::ktune::op(std::forward<A>(a)...);                                       \
  }                                                                                  \
  template <class... A>                                                              \
  static ::ktune::TunedChoice lookup(A&&... a) {                                     \
    return ::ktune::lookup(::ktune::ops::op::tuned::entries, std::forward<A>(a)...); \
  }                                                                                  \
  static const char* general_id() { return ::ktune::ops::op::tuned::general_id; }

/// TEST(Suite, Test) running a shared check of ktune::test::norm_rows (its failures name the header's lines).
#define KTUNE_NORM_ROWS_TEST(Suite, Test, ...) \
  TEST(Suite, Test) { ::ktune::test::norm_rows::__VA_ARGS__; }
