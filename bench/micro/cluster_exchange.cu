// bench/micro/cluster_exchange.cu: ktune_cluster_exchange, an A/B of the two ways a row split over a
// thread-block cluster can combine its blocks' partial sums of squares, in one process on one GPU:
//
//   pull  the exchange the norms used until 2026-11-27: each block writes its partial to its own shared
//         memory, a cluster barrier (release/acquire), every block reads the others' partials through
//         distributed shared memory, and a second barrier keeps each block alive until all have read;
//   push  the exchange they use now (kernels/common/norm_rows/common.cuh, cluster_total): each block stores
//         its partial into every block's slot with st.async, completing on that block's mbarrier.
//
// Both run the same fp32 row kernel (register staging, 16-byte vectors, the residual kind optional) at
// launch-bound shapes (T = 1 and 16, h = 4096 and 8192), next to a 16-byte copy of the same bytes, each
// timed as the tune times a variant (ktune::time_kernel) over rotation sets that are three times the L2
// together; every variant's output is checked against a float64 reference first (exit 1 if not).
// Records: docs/gpu-log.md. Needs sm_90 (clusters); prints the device name first.
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

#include <ktune/timing.cuh>

#include "kernels/common/norm_rows/common.cuh"

namespace {

namespace nr = ktune::ops::norm_rows::detail;

void check(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return;
  std::fprintf(stderr, "ktune_cluster_exchange: %s: %s\n", what, cudaGetErrorString(e));
  std::exit(2);
}

enum class Exchange { pull, push };

/// The replaced exchange, for comparison: barrier, reads of the other blocks' partials, barrier.
template <int Cs>
__device__ float pull_total(float v, float* slot) {
  namespace cg = cooperative_groups;
  cg::cluster_group cluster = cg::this_cluster();
  if (threadIdx.x == 0) *slot = v;
  cluster.sync();
  const int lane = threadIdx.x & 31;
  const float partial = lane < Cs ? *cluster.map_shared_rank(slot, static_cast<unsigned>(lane)) : 0.f;
  v = nr::warp_allreduce(partial);
  asm volatile("barrier.cluster.arrive.release.aligned;" ::: "memory");
  return v;
}

/// out (or in, in place, with a residual) <- (in [+ res]) * rsqrt(mean((in [+ res])^2) + eps) * w, one
/// cluster of Cs blocks per row, each block Threads threads of Vpt float4 vectors.
template <Exchange X, int Cs, int Threads, int Vpt, bool Residual>
__global__ void __launch_bounds__(Threads) row_norm(float4* in, float4* res, const float4* w, float4* out, int h4) {
  __shared__ float warp_sums[32];
  __shared__ nr::ClusterPartials<Cs> partials;
  __shared__ float slot;
  if constexpr (X == Exchange::push) nr::cluster_partials_begin(partials);
  const int rank = static_cast<int>(blockIdx.x % Cs);
  const long row = blockIdx.x / Cs, begin = row * h4 + static_cast<long>(rank) * Threads * Vpt;
  float4 x[Vpt], r[Vpt], wv[Vpt];
#pragma unroll
  for (int k = 0; k < Vpt; ++k) {
    const long j = begin + threadIdx.x + k * Threads;
    x[k] = in[j];
    if constexpr (Residual) r[k] = res[j];
    wv[k] = w[j - row * h4];
  }
  float s = 0.f;
#pragma unroll
  for (int k = 0; k < Vpt; ++k) {
    if constexpr (Residual) x[k] = make_float4(x[k].x + r[k].x, x[k].y + r[k].y, x[k].z + r[k].z, x[k].w + r[k].w);
    s += x[k].x * x[k].x + x[k].y * x[k].y + x[k].z * x[k].z + x[k].w * x[k].w;
  }
  float total;
  if constexpr (X == Exchange::push) {
    total = nr::row_sum<Cs>(s, warp_sums, &partials);
  } else {
    total = nr::row_sum<1>(s, warp_sums, nullptr);
    total = pull_total<Cs>(total, &slot);
  }
  const float inv = rsqrtf(total / static_cast<float>(4 * h4) + 1e-6f);
  float4* dst = Residual ? in : out;
#pragma unroll
  for (int k = 0; k < Vpt; ++k) {
    const long j = begin + threadIdx.x + k * Threads;
    if constexpr (Residual) res[j] = x[k];
    const float4 c = wv[k];
    dst[j] = make_float4(x[k].x * inv * c.x, x[k].y * inv * c.y, x[k].z * inv * c.z, x[k].w * inv * c.w);
  }
  if constexpr (X == Exchange::pull) asm volatile("barrier.cluster.wait.acquire.aligned;" ::: "memory");
}

__global__ void copy16(const float4* __restrict__ a, float4* __restrict__ b, long n) {
  for (long i = blockIdx.x * static_cast<long>(blockDim.x) + threadIdx.x; i < n; i += static_cast<long>(gridDim.x) * blockDim.x)
    b[i] = a[i];
}

/// Median time per call of `launch(set, stream)` over `sets` rotation sets, timed as the tune times every
/// variant (ktune::time_kernel: graph replay, the events inside the graph, twice the L2 read before each).
template <class Launch>
double time_per_call(Launch&& launch, int sets, cudaStream_t stream) {
  ktune::TimingResult t;
  const ktune::Status st = ktune::time_kernel(
      [&](std::size_t set) {
        launch(static_cast<int>(set), stream);
        return ktune::Status::success();
      },
      static_cast<std::size_t>(sets), stream, ktune::TimingOptions{}, t);
  if (!st.ok()) {
    std::fprintf(stderr, "ktune_cluster_exchange: timing: %s (%s)\n", st.message, cudaGetErrorString(st.cuda));
    std::exit(2);
  }
  return t.median_us;
}

struct Shape {
  int tokens, h;
  bool residual;
};

/// One shape's buffers: `sets` rotation sets of input, residual and output, the weight, pristine copies.
struct Buffers {
  Shape s;
  int sets;
  long n;  // floats per set and tensor
  float4 *in, *res, *out, *w, *in0, *res0;
  std::vector<double> ref;

  Buffers(Shape shape, const cudaDeviceProp& prop) : s(shape), n(static_cast<long>(shape.tokens) * shape.h) {
    const long per_set = n * 4 * (s.residual ? 3 : 2);
    sets = static_cast<int>(std::max(64L, 3L * prop.l2CacheSize / per_set + 1));
    for (float4** p : {&in, &res, &out}) check(cudaMalloc(p, n * 4 * sets), "cudaMalloc");
    check(cudaMalloc(&w, s.h * 4), "cudaMalloc");
    check(cudaMalloc(&in0, n * 4), "cudaMalloc");
    check(cudaMalloc(&res0, n * 4), "cudaMalloc");
    std::mt19937 gen(1234);
    std::uniform_real_distribution<float> x(-2.f, 2.f), wd(0.5f, 1.5f);
    std::vector<float> hin(n), hres(n), hw(s.h);
    for (float& v : hin) v = x(gen);
    for (float& v : hres) v = x(gen);
    for (float& v : hw) v = wd(gen);
    ref.resize(n);
    for (int t = 0; t < s.tokens; ++t) {
      double ss = 0;
      for (int i = 0; i < s.h; ++i) {
        const double v = hin[t * s.h + i] + (s.residual ? hres[t * s.h + i] : 0.0);
        ss += v * v;
      }
      const double inv = 1.0 / std::sqrt(ss / s.h + 1e-6);
      for (int i = 0; i < s.h; ++i)
        ref[t * s.h + i] = (hin[t * s.h + i] + (s.residual ? hres[t * s.h + i] : 0.0)) * inv * hw[i];
    }
    for (int k = 0; k < sets; ++k) {
      check(cudaMemcpy(in + k * n / 4, hin.data(), n * 4, cudaMemcpyHostToDevice), "cudaMemcpy");
      check(cudaMemcpy(res + k * n / 4, hres.data(), n * 4, cudaMemcpyHostToDevice), "cudaMemcpy");
    }
    check(cudaMemcpy(in0, hin.data(), n * 4, cudaMemcpyHostToDevice), "cudaMemcpy");
    check(cudaMemcpy(res0, hres.data(), n * 4, cudaMemcpyHostToDevice), "cudaMemcpy");
    check(cudaMemcpy(w, hw.data(), s.h * 4, cudaMemcpyHostToDevice), "cudaMemcpy");
  }
  ~Buffers() {
    for (float4* p : {in, res, out, w, in0, res0}) cudaFree(p);
  }
  void restore_set0() {
    check(cudaMemcpy(in, in0, n * 4, cudaMemcpyDeviceToDevice), "cudaMemcpy");
    check(cudaMemcpy(res, res0, n * 4, cudaMemcpyDeviceToDevice), "cudaMemcpy");
  }
  /// The bytes a call moves: input (and residual) read and written, the weight read.
  long bytes() const { return n * 4 * (s.residual ? 4 : 2) + s.h * 4L; }
};

template <Exchange X, int Cs, int Threads, int Vpt, bool Residual>
double run_variant(Buffers& b, cudaStream_t stream) {
  const int h4 = b.s.h / 4;
  auto launch = [&](int set, cudaStream_t st) {
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = dim3(static_cast<unsigned>(b.s.tokens * Cs));
    cfg.blockDim = dim3(Threads);
    cfg.stream = st;
    cudaLaunchAttribute cluster[1];
    cluster[0].id = cudaLaunchAttributeClusterDimension;
    cluster[0].val.clusterDim.x = Cs;
    cluster[0].val.clusterDim.y = 1;
    cluster[0].val.clusterDim.z = 1;
    cfg.attrs = cluster;
    cfg.numAttrs = 1;
    const long off = static_cast<long>(set) * b.n / 4;
    check(cudaLaunchKernelEx(&cfg, row_norm<X, Cs, Threads, Vpt, Residual>, b.in + off, b.res + off,
                             static_cast<const float4*>(b.w), b.out + off, h4),
          "cudaLaunchKernelEx");
  };
  b.restore_set0();
  check(cudaMemset(b.out, 0xff, b.n * 4), "cudaMemset");  // NaN: an unwritten element fails the check
  launch(0, stream);
  check(cudaStreamSynchronize(stream), "the checked call");
  std::vector<float> got(b.n);
  check(cudaMemcpy(got.data(), Residual ? b.in : b.out, b.n * 4, cudaMemcpyDeviceToHost), "cudaMemcpy");
  for (long i = 0; i < b.n; ++i)
    if (!(std::fabs(got[i] - b.ref[i]) <= 1e-5 * std::max(1.0, std::fabs(b.ref[i])))) {
      std::fprintf(stderr, "ktune_cluster_exchange: wrong output at %ld: %g, expected %g\n", i, got[i], b.ref[i]);
      std::exit(1);
    }
  b.restore_set0();
  return time_per_call(launch, b.sets, stream);
}

/// Both exchanges of one configuration, if it covers the row exactly.
template <int Cs, int Threads, int Vpt, bool Residual>
void compare(Buffers& b, double copy_us, cudaStream_t stream) {
  if (Cs * Threads * Vpt * 4 != b.s.h) return;
  const double pull = run_variant<Exchange::pull, Cs, Threads, Vpt, Residual>(b, stream);
  const double push = run_variant<Exchange::push, Cs, Threads, Vpt, Residual>(b, stream);
  std::printf("| %s | %d | %d | %.3f | %d x %d, vpt %d | %.3f (%.2fx) | %.3f (%.2fx) | %+.3f |\n",
              Residual ? "residual" : "plain", b.s.tokens, b.s.h, copy_us, Cs, Threads, Vpt, pull, pull / copy_us, push,
              push / copy_us, push - pull);
}

template <bool Residual>
void shape_rows(Buffers& b, double copy_us, cudaStream_t stream) {
  compare<2, 512, 2, Residual>(b, copy_us, stream);
  compare<2, 256, 2, Residual>(b, copy_us, stream);
  compare<4, 256, 2, Residual>(b, copy_us, stream);
  compare<4, 128, 2, Residual>(b, copy_us, stream);
  compare<4, 512, 1, Residual>(b, copy_us, stream);
  compare<8, 128, 2, Residual>(b, copy_us, stream);
  compare<8, 64, 2, Residual>(b, copy_us, stream);
  compare<8, 256, 1, Residual>(b, copy_us, stream);
}

}  // namespace

int main() {
  cudaDeviceProp prop;
  check(cudaGetDeviceProperties(&prop, 0), "cudaGetDeviceProperties");
  if (prop.major < 9) {
    std::printf("ktune_cluster_exchange: %s (sm_%d%d) has no thread-block clusters\n", prop.name, prop.major, prop.minor);
    return 0;
  }
  std::printf("%s\n\n| kind | T | h | same-size copy us | blocks x threads | pull us (x copy) | push us (x copy) | "
              "push - pull us |\n| --- | ---: | ---: | ---: | --- | ---: | ---: | ---: |\n",
              prop.name);
  cudaStream_t stream;
  check(cudaStreamCreate(&stream), "cudaStreamCreate");
  for (const Shape s : {Shape{1, 4096, false}, Shape{1, 4096, true}, Shape{1, 8192, false}, Shape{1, 8192, true},
                        Shape{16, 4096, false}, Shape{16, 4096, true}, Shape{16, 8192, false}, Shape{16, 8192, true}}) {
    Buffers b(s, prop);
    // The same-size copy: half the call's bytes read, half written, 16 bytes per thread.
    const long half = b.bytes() / 2 / 16;
    const long span = b.n / 4 * b.sets - half;
    const double copy_us = time_per_call(
        [&](int set, cudaStream_t st) {
          const long off = static_cast<long>(set) * half % span;
          copy16<<<static_cast<unsigned>(std::min<long>((half + 255) / 256, 8L * prop.multiProcessorCount)), 256, 0, st>>>(
              b.in + off, b.out + off, half);
          check(cudaGetLastError(), "copy16");
        },
        b.sets, stream);
    if (s.residual) shape_rows<true>(b, copy_us, stream);
    else shape_rows<false>(b, copy_us, stream);
  }
  check(cudaStreamDestroy(stream), "cudaStreamDestroy");
  return 0;
}
