// kernels/common/act_and_mul/family.cuh: the tunable family shared by the act-and-mul ops, written once and
// parameterised by the op (its name and its activation). silu_and_mul, gelu_and_mul and gelu_tanh_and_mul
// run the same memory-bound structure (read x and y, one activation per element, write out), so they share
// its kernel, its tiling and its host adapter; each op's kernels/<op>/family.cuh supplies only the
// activation (a functor type) and its own Args, spec, S and tuned table.
//
// This folder is no op (it has no spec.json, so the build's kernels/*/spec.json glob passes it by); it is
// installed with the kernels/ headers because the ops' public headers include it.
//
//   in  [tokens, 2*d]  E, row stride in_stride: x = in[t, 0:d], y = in[t, d:2d]
//   out [tokens, d]    E, row stride out_stride
//   out[t, i] = Op::Activation{}(x[t, i], y[t, i]) in fp32, rounded once to E.
//
// Work is counted in vectors of vb bytes (pack = vb / sizeof(E) elements); row t has dv = d / pack of
// them in each half. space.hpp describes the two tilings (whole rows per block, or one step per block
// over the flattened [tokens, dv] space). Every element is computed independently, once, by one thread:
// no reduction, no atomics, so a variant's output is bitwise the same on every run.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <limits>
#include <type_traits>

#include <ktune/dtype.hpp>
#include <ktune/intrinsics.cuh>
#include <ktune/launch.hpp>
#include <ktune/registry.hpp>
#include <ktune/status.hpp>

#include "space.hpp"

namespace ktune::ops::act_and_mul {

/// A NUL-terminated string built at compile time: an op's name joined with a message, so a shared
/// check can return a Status whose (static) message names the op.
template <std::size_t N>
struct Text {
  char c[N] = {};
};

template <std::size_t A, std::size_t B>
constexpr Text<A + B - 1> join(const char (&a)[A], const char (&b)[B]) {
  Text<A + B - 1> t{};
  for (std::size_t i = 0; i + 1 < A; ++i) t.c[i] = a[i];
  for (std::size_t i = 0; i < B; ++i) t.c[A - 1 + i] = b[i];
  return t;
}

/// tanh.approx.f32 (sm_75 and later): what tanhf compiles to under -use_fast_math (CUDA 13) and what
/// FlashInfer's math::tanh wraps; maximum relative error 2^-10.987 (PTX ISA). gelu_tanh_and_mul's S and
/// family both use it, as SGLang does.
__device__ __forceinline__ float tanh_approx(float x) {
  float y;
  asm("tanh.approx.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}

/// Position of one vector in the flattened [tokens, dv] space: its row and its column in vectors.
struct VectorCoord {
  std::int64_t row;
  int col;
};

/// The index arithmetic of a configuration, shared by the kernel and the host (grid size, CPU tests).
/// Column indices are 32-bit: each op's validate() caps d at 2^28, so a column plus one block step, or
/// rpb rows of columns, stays below 2^31. Row indices and offsets are 64-bit.
/// \tparam Cfg an act_and_mul::Config
template <class Cfg>
struct Tiling {
  /// Vectors a block moves per step (per half of the row).
  static constexpr int step = Cfg::threads * Cfg::vectors_per_thread;
  static_assert(step <= (1 << 14), "A block step must stay within the 2^14 vectors of headroom that max_d leaves in "
                                   "32-bit column indices.");

  /// Blocks of the grid for `tokens` rows of `dv` vectors.
  __host__ __device__ static constexpr std::int64_t blocks(std::int64_t tokens, int dv) {
    if constexpr (Cfg::split) return (tokens * dv + step - 1) / step;
    else return (tokens + Cfg::rows_per_block - 1) / Cfg::rows_per_block;
  }

  /// Split mode: the coordinates of flat vector index `flat` (one division per thread; the 32-bit
  /// path avoids the ~70-instruction 64-bit division whenever the index fits).
  __host__ __device__ static VectorCoord locate(std::int64_t flat, int dv) {
    const auto n = static_cast<std::uint32_t>(dv);
    if (static_cast<std::uint64_t>(flat) <= 0xffffffffull) {
      const auto f = static_cast<std::uint32_t>(flat);
      const std::uint32_t q = f / n;
      return {static_cast<std::int64_t>(q), static_cast<int>(f - q * n)};
    }
    return {flat / dv, static_cast<int>(flat % dv)};
  }

  /// `at` moved forward by `off` vectors (off < 2^30), crossing row ends; most calls wrap at most once.
  __host__ __device__ static VectorCoord advance(VectorCoord at, int off, int dv) {
    const auto n = static_cast<std::uint32_t>(dv);
    const std::uint32_t c = static_cast<std::uint32_t>(at.col) + static_cast<std::uint32_t>(off);
    if (c < n) return {at.row, static_cast<int>(c)};
    if (c < 2u * n) return {at.row + 1, static_cast<int>(c - n)};
    const std::uint32_t q = c / n;
    return {at.row + q, static_cast<int>(c - q * n)};
  }

  /// Whole-row mode: vector `local` of the range that starts at row `first_row` (local < rpb * dv).
  /// At most rpb - 1 subtractions, no division.
  __host__ __device__ static VectorCoord in_rows(std::int64_t first_row, int local, int dv) {
    int row = 0;
#pragma unroll
    for (int i = 1; i < Cfg::rows_per_block; ++i) {
      if (local >= dv) {
        local -= dv;
        ++row;
      }
    }
    return {first_row + row, local};
  }

  /// Whole-row mode: vectors of the block whose first row is `first_row` (at most rpb * dv <= 2^30).
  __host__ __device__ static int block_vectors(std::int64_t first_row, std::int64_t tokens, int dv) {
    const std::int64_t left = tokens - first_row;
    const int rows = left < Cfg::rows_per_block ? static_cast<int>(left) : Cfg::rows_per_block;
    return rows * dv;
  }
};

/// The kernel's one parameter struct.
template <class E>
struct Params {
  E* out;
  const E* in;
  std::int64_t tokens;
  std::int64_t total;       ///< tokens * dv: vectors in the flattened [tokens, dv] space
  std::int64_t out_stride;  ///< elements between rows of out
  std::int64_t in_stride;   ///< elements between rows of in
  int d;                    ///< elements per half-row
  int dv;                   ///< vectors per half-row, d / pack
};

namespace detail {

/// out = Act{}(x, y) element-wise, converted a vector at a time (16-bit types two elements per instruction).
template <class Act, class E, int N>
__device__ __forceinline__ void act_mul_vector(const ktune::AlignedVector<E, N>& x, const ktune::AlignedVector<E, N>& y,
                                               ktune::AlignedVector<E, N>& out) {
  float xf[N], yf[N];
  ktune::to_floats(xf, x);
  ktune::to_floats(yf, y);
#pragma unroll
  for (int i = 0; i < N; ++i) xf[i] = Act{}(xf[i], yf[i]);
  out = ktune::from_floats<E>(xf);
}

inline bool aligned_to(const void* p, std::size_t bytes) { return reinterpret_cast<std::uintptr_t>(p) % bytes == 0; }

}  // namespace detail

/// One kernel per (activation, configuration, element type). Each thread loads vectors x and y at
/// 2 * vpt independent addresses before using any (the loads of a step are all in flight at once),
/// computes, then stores.
/// \tparam Act a functor type: `float operator()(float x, float y) const`, __device__, the op's
///             activation of x times y in fp32
/// \tparam Cfg an act_and_mul::Config
/// \tparam E   float, __half or __nv_bfloat16
template <class Act, class Cfg, class E>
__global__ void __launch_bounds__(Cfg::threads) act_and_mul_kernel(const Params<E> p) {
  constexpr int Tpb = Cfg::threads;
  constexpr int Vpt = Cfg::vectors_per_thread;
  constexpr int Pack = Cfg::vector_bytes / static_cast<int>(sizeof(E));
  static_assert(ktune::is_element_v<E>, "The act-and-mul ops support float, __half and __nv_bfloat16 elements.");
  static_assert(Cfg::vector_bytes % static_cast<int>(sizeof(E)) == 0 && Pack >= 1,
                "The vector width must be a whole, non-zero number of elements.");
  static_assert(Cfg::vector_bytes <= 16, "Global accesses are at most 16 bytes wide on sm_80 and sm_90.");
  static_assert(Tpb % 32 == 0 && Tpb <= 1024, "Threads per block must be whole warps, at most 1024.");
  static_assert(Vpt >= 1, "Each thread moves at least one vector per step.");
  static_assert(!Cfg::split || Cfg::rows_per_block == 1,
                "A one-step (split) block covers part of the flattened space and has no rows to group: rpb must be 1.");
  using Vec = ktune::AlignedVector<E, Pack>;
  using Tile = Tiling<Cfg>;
  const E* __restrict__ in = p.in;
  E* __restrict__ out = p.out;

  // Before the first global access: with PDL the preceding kernel may still be writing `in` or reading `out`.
  if constexpr (Cfg::pdl) ktune::pdl_wait();

  if constexpr (Cfg::split) {
    const std::int64_t first = static_cast<std::int64_t>(blockIdx.x) * Tile::step;
    const VectorCoord origin = Tile::locate(first, p.dv);
    Vec x[Vpt], y[Vpt];
    VectorCoord at[Vpt];
#pragma unroll
    for (int k = 0; k < Vpt; ++k) {
      const int off = static_cast<int>(threadIdx.x) + k * Tpb;
      at[k] = Tile::advance(origin, off, p.dv);
      if (first + off < p.total) {
        const E* row = in + at[k].row * p.in_stride + static_cast<std::int64_t>(at[k].col) * Pack;
        x[k] = *reinterpret_cast<const Vec*>(row);
        y[k] = *reinterpret_cast<const Vec*>(row + p.d);
      }
    }
    // Every load of this block is issued: the next kernel may start its prologue.
    if constexpr (Cfg::pdl) ktune::pdl_launch_dependents();
#pragma unroll
    for (int k = 0; k < Vpt; ++k) {
      const int off = static_cast<int>(threadIdx.x) + k * Tpb;
      if (first + off < p.total) {
        Vec o;
        detail::act_mul_vector<Act>(x[k], y[k], o);
        *reinterpret_cast<Vec*>(out + at[k].row * p.out_stride + static_cast<std::int64_t>(at[k].col) * Pack) = o;
      }
    }
  } else {
    const std::int64_t first_row = static_cast<std::int64_t>(blockIdx.x) * Cfg::rows_per_block;
    const int count = Tile::block_vectors(first_row, p.tokens, p.dv);
#pragma unroll 1
    for (int base = static_cast<int>(threadIdx.x); base < count; base += Tile::step) {
      Vec x[Vpt], y[Vpt];
      VectorCoord at[Vpt];
#pragma unroll
      for (int k = 0; k < Vpt; ++k) {
        const int local = base + k * Tpb;
        at[k] = Tile::in_rows(first_row, local, p.dv);
        if (local < count) {
          const E* row = in + at[k].row * p.in_stride + static_cast<std::int64_t>(at[k].col) * Pack;
          x[k] = *reinterpret_cast<const Vec*>(row);
          y[k] = *reinterpret_cast<const Vec*>(row + p.d);
        }
      }
#pragma unroll
      for (int k = 0; k < Vpt; ++k) {
        if (base + k * Tpb < count) {
          Vec o;
          detail::act_mul_vector<Act>(x[k], y[k], o);
          *reinterpret_cast<Vec*>(out + at[k].row * p.out_stride + static_cast<std::int64_t>(at[k].col) * Pack) = o;
        }
      }
    }
    if constexpr (Cfg::pdl) ktune::pdl_launch_dependents();
  }
}

/// The host adapter every act-and-mul op's Family inherits (docs/kernel-folder.md): can_implement,
/// the launch and the kernel's resources for any configuration. The op's Args<E> (the same fields in
/// every op) and its validate() / is_empty(), found by argument-dependent lookup in the op's namespace,
/// are the only things it takes from the op besides `Op`.
/// \tparam Op the op's traits: `static constexpr char name[]` (the op's name, for messages) and
///            `using Activation = ...` (the functor act_and_mul_kernel applies)
template <class Op>
struct Adapter {
  using Activation = typename Op::Activation;

  /// Elements per vector of a configuration.
  template <class Cfg, class E> static constexpr int pack = Cfg::vector_bytes / static_cast<int>(sizeof(E));

  struct Messages {
    static constexpr auto misaligned = join(Op::name, ": out or in is not aligned to the variant's vector width");
    static constexpr auto not_multiple =
        join(Op::name, ": d or a row stride is not a multiple of the variant's vector width");
    static constexpr auto grid = join(Op::name, ": the variant's grid would exceed 2^31 - 1 blocks");
  };

  /// validate() plus what this configuration needs: pointers aligned to its vector, d and both row
  /// strides multiples of its pack (so every row's x, y and out vectors are aligned), a grid within
  /// 2^31 - 1 blocks. Makes no CUDA call.
  template <class Cfg, class E, template <class> class A>
  static Status can_implement(const A<E>& a) {
    KTUNE_TRY(validate(a));
    if (is_empty(a)) return Status::success();
    constexpr int n = pack<Cfg, E>;
    if constexpr (n > 1) {
      if (!detail::aligned_to(a.out, Cfg::vector_bytes) || !detail::aligned_to(a.in, Cfg::vector_bytes))
        return Status::unsupported(Messages::misaligned.c);
      if (a.d % n != 0 || a.out_stride % n != 0 || a.in_stride % n != 0)
        return Status::unsupported(Messages::not_multiple.c);
    }
    if (Tiling<Cfg>::blocks(a.tokens, static_cast<int>(a.d / n)) > std::numeric_limits<std::int32_t>::max())
      return Status::too_large(Messages::grid.c);
    return Status::success();
  }

  /// Grid and block of a call that can_implement accepted (and that is not empty).
  template <class Cfg, class E, template <class> class A>
  static ktune::LaunchShape launch_shape(const A<E>& a) {
    ktune::LaunchShape s;
    s.grid = dim3(static_cast<unsigned>(Tiling<Cfg>::blocks(a.tokens, static_cast<int>(a.d / pack<Cfg, E>))));
    s.block = dim3(Cfg::threads);
    s.pdl = Cfg::pdl;
    return s;
  }

  template <class Cfg, class E, template <class> class A>
  static Params<E> params(const A<E>& a) {
    const int dv = static_cast<int>(a.d / pack<Cfg, E>);
    return {a.out, a.in, a.tokens, a.tokens * dv, a.out_stride, a.in_stride, static_cast<int>(a.d), dv};
  }

  /// Launches without checking: the caller has seen can_implement<Cfg, E>(a) succeed on a non-empty call.
  template <class Cfg, class E, template <class> class A>
  static Status enqueue(const A<E>& a, cudaStream_t stream) {
    return ktune::launch(act_and_mul_kernel<Activation, Cfg, E>, launch_shape<Cfg, E>(a), stream, params<Cfg, E>(a));
  }

  template <class Cfg, class E, template <class> class A>
  static ktune::KernelResources resources(const A<E>&) {
    return {reinterpret_cast<const void*>(&act_and_mul_kernel<Activation, Cfg, E>), Cfg::threads, 0, 1};
  }
};

}  // namespace ktune::ops::act_and_mul
