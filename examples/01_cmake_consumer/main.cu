// Example 01, CUDA side: the three tuned kernels called from a .cu file through the header-only public
// API (typed templates on raw device pointers), checked against a plain host computation
// (host_reference.hpp), then captured in a CUDA graph and timed. Prints which variant each call used
// (<op>_choice, compiled into ktune::kernels) and exits 1 if any result is wrong.
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <vector>

#include <kernels/fused_add_rmsnorm/fused_add_rmsnorm.cuh>
#include <kernels/merge_attn_states_lse/merge_attn_states_lse.cuh>
#include <kernels/silu_and_mul/silu_and_mul.cuh>

#include "host_reference.hpp"

using bf16 = __nv_bfloat16;

#define CHECK_CUDA(call)                                                                       \
  do {                                                                                         \
    const cudaError_t e_ = (call);                                                             \
    if (e_ != cudaSuccess) {                                                                   \
      std::fprintf(stderr, "cuda_consumer: %s failed: %s\n", #call, cudaGetErrorString(e_));   \
      return 1;                                                                                \
    }                                                                                          \
  } while (0)
#define CHECK_KTUNE(call)                                                                      \
  do {                                                                                         \
    const ktune::Status s_ = (call);                                                           \
    if (!s_.ok()) {                                                                            \
      std::fprintf(stderr, "cuda_consumer: %s failed: %s\n", #call, s_.describe().c_str());    \
      return 1;                                                                                \
    }                                                                                          \
  } while (0)

namespace {

// bf16 tolerance of the kernels' spec (kernels/<op>/spec.json): |got - want| <= atol + rtol * |want|.
constexpr double bf16_atol = 8e-3, bf16_rtol = 3.2e-2;
constexpr double f32_atol = 1e-5, f32_rtol = 1e-5;

std::vector<bf16> to_bf16(const std::vector<double>& v) {
  std::vector<bf16> out(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) out[i] = __float2bfloat16(static_cast<float>(v[i]));
  return out;
}
std::vector<double> to_double(const std::vector<bf16>& v) {
  std::vector<double> out(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) out[i] = __bfloat162float(v[i]);
  return out;
}
std::vector<double> to_double(const std::vector<float>& v) { return {v.begin(), v.end()}; }

template <class T>
struct DeviceBuffer {
  T* p = nullptr;
  std::size_t n = 0;
  cudaError_t alloc(std::size_t count) {  // poisoned (all-ones bits: NaN), so an unwritten output never passes
    n = count;
    const cudaError_t e = cudaMalloc(&p, count * sizeof(T));
    return e != cudaSuccess ? e : cudaMemset(p, 0xFF, count * sizeof(T));
  }
  cudaError_t upload(const std::vector<T>& v) { return cudaMemcpy(p, v.data(), v.size() * sizeof(T), cudaMemcpyHostToDevice); }
  cudaError_t download(std::vector<T>& v) const {
    v.resize(n);
    return cudaMemcpy(v.data(), p, n * sizeof(T), cudaMemcpyDeviceToHost);
  }
  ~DeviceBuffer() { cudaFree(p); }
};

bool report(const char* what, double worst) {
  const bool ok = worst <= 1.0;
  std::printf("  %-44s %s (worst error %.3f of the tolerance)\n", what, ok ? "PASS" : "FAIL", worst);
  return ok;
}

void print_choice(const char* op, ktune::Status st, const ktune::TunedChoice& c) {
  if (!st.ok()) {
    std::printf("  %s: no choice: %s\n", op, st.message);
    return;
  }
  std::printf("  variant %s (%s)\n", c.id ? c.id : "?", ktune::to_string(c.source));
}

}  // namespace

int main() {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::printf("cuda_consumer: built against ktune; no CUDA device here, so nothing to run\n");
    return 0;
  }
  cudaDeviceProp prop{};
  CHECK_CUDA(cudaGetDeviceProperties(&prop, 0));
  std::printf("cuda_consumer: %s (sm_%d%d, %d SMs), bf16, header-only API\n", prop.name, prop.major, prop.minor,
              prop.multiProcessorCount);
  cudaStream_t stream = nullptr;
  CHECK_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  bool all_ok = true;

  // ---- silu_and_mul: in [T, 2d] with padded rows (row stride 2d + 64), out [T, d] contiguous (-1) ----
  const std::int64_t T = 16, d = 11008, in_stride = 2 * d + 64;
  const std::vector<bf16> silu_in = to_bf16(example::values(static_cast<std::size_t>(T * in_stride), 1, -4, 4));
  DeviceBuffer<bf16> silu_in_d, silu_out_d;
  CHECK_CUDA(silu_in_d.alloc(silu_in.size()));
  CHECK_CUDA(silu_out_d.alloc(static_cast<std::size_t>(T * d)));
  CHECK_CUDA(silu_in_d.upload(silu_in));
  CHECK_KTUNE(ktune::silu_and_mul(silu_out_d.p, silu_in_d.p, T, d, stream, /*out_stride=*/-1, in_stride));
  std::vector<bf16> silu_out;
  CHECK_CUDA(cudaStreamSynchronize(stream));
  CHECK_CUDA(silu_out_d.download(silu_out));
  std::printf("silu_and_mul      T=%lld d=%lld, input rows strided (%lld elements)\n", (long long)T, (long long)d,
              (long long)in_stride);
  all_ok &= report("out vs host reference",
                   example::worst_error(to_double(silu_out), example::silu_and_mul(to_double(silu_in), T, d, in_stride),
                                        bf16_atol, bf16_rtol));
  ktune::TunedChoice choice;
  print_choice("silu_and_mul", ktune::silu_and_mul_choice(ktune::DType::bf16, T, d, choice), choice);

  // The stride convention: -1 means contiguous; 0 is an error, and nothing is written.
  const ktune::Status zero = ktune::silu_and_mul(silu_out_d.p, silu_in_d.p, T, d, stream, /*out_stride=*/0);
  std::vector<bf16> after;
  CHECK_CUDA(cudaStreamSynchronize(stream));
  CHECK_CUDA(silu_out_d.download(after));
  const bool untouched = std::memcmp(after.data(), silu_out.data(), after.size() * sizeof(bf16)) == 0;
  std::printf("  out_stride = 0 -> %s: \"%s\"; output %s\n", ktune::to_string(zero.code), zero.message,
              untouched ? "untouched" : "WRITTEN");
  all_ok &= zero.code == ktune::StatusCode::invalid_argument && untouched;

  // ---- fused_add_rmsnorm: input, residual [T, h] in place, weight [h] ----
  const std::int64_t h = 4096;
  const float eps = 1e-6f;
  const std::vector<bf16> x_in = to_bf16(example::values(static_cast<std::size_t>(T * h), 2, -2, 2));
  const std::vector<bf16> r_in = to_bf16(example::values(static_cast<std::size_t>(T * h), 3, -2, 2));
  const std::vector<bf16> w_in = to_bf16(example::values(static_cast<std::size_t>(h), 4, 0.5, 1.5));
  DeviceBuffer<bf16> x_d, r_d, w_d;
  CHECK_CUDA(x_d.alloc(x_in.size()));
  CHECK_CUDA(r_d.alloc(r_in.size()));
  CHECK_CUDA(w_d.alloc(w_in.size()));
  CHECK_CUDA(x_d.upload(x_in));
  CHECK_CUDA(r_d.upload(r_in));
  CHECK_CUDA(w_d.upload(w_in));
  CHECK_KTUNE(ktune::fused_add_rmsnorm(x_d.p, r_d.p, w_d.p, T, h, eps, stream));
  std::vector<bf16> x_out, r_out;
  CHECK_CUDA(cudaStreamSynchronize(stream));
  CHECK_CUDA(x_d.download(x_out));
  CHECK_CUDA(r_d.download(r_out));
  std::vector<double> x_ref, r_ref;
  example::fused_add_rmsnorm(to_double(x_in), to_double(r_in), to_double(w_in), T, h, eps, x_ref, r_ref);
  std::printf("fused_add_rmsnorm T=%lld h=%lld, in place\n", (long long)T, (long long)h);
  all_ok &= report("input (normalised) vs host reference", example::worst_error(to_double(x_out), x_ref, bf16_atol, bf16_rtol));
  all_ok &= report("residual (input + residual) vs host reference",
                   example::worst_error(to_double(r_out), r_ref, bf16_atol, bf16_rtol));
  print_choice("fused_add_rmsnorm", ktune::fused_add_rmsnorm_choice(ktune::DType::bf16, T, h, choice), choice);

  // ---- merge_attn_states_lse: v [T, heads, head_size] bf16, lse [T, heads] fp32 ----
  const std::int64_t heads = 32, head_size = 128;
  const std::size_t nv = static_cast<std::size_t>(T * heads * head_size), ns = static_cast<std::size_t>(T * heads);
  const std::vector<bf16> va = to_bf16(example::values(nv, 5, -1, 1)), vb = to_bf16(example::values(nv, 6, -1, 1));
  std::vector<float> sa(ns), sb(ns);
  const std::vector<double> sa_d = example::values(ns, 7, -8, 8), sb_d = example::values(ns, 8, -8, 8);
  for (std::size_t i = 0; i < ns; ++i) sa[i] = static_cast<float>(sa_d[i]), sb[i] = static_cast<float>(sb_d[i]);
  DeviceBuffer<bf16> va_d, vb_d, vm_d;
  DeviceBuffer<float> sa_dev, sb_dev, sm_dev;
  CHECK_CUDA(va_d.alloc(nv));
  CHECK_CUDA(vb_d.alloc(nv));
  CHECK_CUDA(vm_d.alloc(nv));
  CHECK_CUDA(sa_dev.alloc(ns));
  CHECK_CUDA(sb_dev.alloc(ns));
  CHECK_CUDA(sm_dev.alloc(ns));
  CHECK_CUDA(va_d.upload(va));
  CHECK_CUDA(vb_d.upload(vb));
  CHECK_CUDA(sa_dev.upload(sa));
  CHECK_CUDA(sb_dev.upload(sb));
  CHECK_KTUNE(ktune::merge_attn_states_lse(vm_d.p, sm_dev.p, va_d.p, sa_dev.p, vb_d.p, sb_dev.p, T, heads, head_size,
                                           stream));
  std::vector<bf16> vm;
  std::vector<float> sm;
  CHECK_CUDA(cudaStreamSynchronize(stream));
  CHECK_CUDA(vm_d.download(vm));
  CHECK_CUDA(sm_dev.download(sm));
  std::vector<double> vm_ref, sm_ref;
  example::merge_attn_states(to_double(va), to_double(sa), to_double(vb), to_double(sb), T, heads, head_size, vm_ref,
                             sm_ref);
  std::printf("merge_attn_states_lse T=%lld heads=%lld head_size=%lld\n", (long long)T, (long long)heads,
              (long long)head_size);
  all_ok &= report("merged values vs host reference", example::worst_error(to_double(vm), vm_ref, bf16_atol, bf16_rtol));
  all_ok &= report("merged LSE vs host reference", example::worst_error(to_double(sm), sm_ref, f32_atol, f32_rtol));
  print_choice("merge_attn_states_lse", ktune::merge_attn_states_lse_choice(ktune::DType::bf16, T, heads, choice),
               choice);

  // ---- the same calls captured in a CUDA graph on `stream`: replayed, bitwise the eager results ----
  constexpr int calls = 20;
  auto capture = [&](auto&& enqueue, cudaGraphExec_t& exec) -> bool {
    cudaGraph_t graph = nullptr;
    if (cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal) != cudaSuccess) return false;
    bool ok = true;
    for (int i = 0; i < calls; ++i) ok &= enqueue().ok();
    ok &= cudaStreamEndCapture(stream, &graph) == cudaSuccess;
    ok = ok && cudaGraphInstantiate(&exec, graph, 0) == cudaSuccess;
    cudaGraphDestroy(graph);
    return ok;
  };
  cudaGraphExec_t g_silu = nullptr, g_norm = nullptr, g_merge = nullptr;
  const bool captured =
      capture([&] { return ktune::silu_and_mul(silu_out_d.p, silu_in_d.p, T, d, stream, -1, in_stride); }, g_silu) &&
      capture([&] { return ktune::fused_add_rmsnorm(x_d.p, r_d.p, w_d.p, T, h, eps, stream); }, g_norm) &&
      capture([&] {
        return ktune::merge_attn_states_lse(vm_d.p, sm_dev.p, va_d.p, sa_dev.p, vb_d.p, sb_dev.p, T, heads, head_size,
                                            stream);
      }, g_merge);
  std::printf("CUDA graph of %d calls each: %s\n", calls, captured ? "captured" : "FAILED to capture");
  all_ok &= captured;
  if (captured) {
    CHECK_CUDA(cudaMemsetAsync(silu_out_d.p, 0xFF, silu_out_d.n * sizeof(bf16), stream));  // poison: NaN
    CHECK_CUDA(cudaMemsetAsync(vm_d.p, 0xFF, vm_d.n * sizeof(bf16), stream));
    CHECK_CUDA(cudaGraphLaunch(g_silu, stream));
    CHECK_CUDA(cudaGraphLaunch(g_merge, stream));
    CHECK_CUDA(cudaStreamSynchronize(stream));
    std::vector<bf16> silu_replay, vm_replay;
    CHECK_CUDA(silu_out_d.download(silu_replay));
    CHECK_CUDA(vm_d.download(vm_replay));
    const bool same = std::memcmp(silu_replay.data(), silu_out.data(), silu_out.size() * sizeof(bf16)) == 0 &&
                      std::memcmp(vm_replay.data(), vm.data(), vm.size() * sizeof(bf16)) == 0;
    std::printf("  replayed silu_and_mul and merge_attn_states_lse: %s\n",
                same ? "PASS (bitwise the eager results)" : "FAIL (differs from the eager results)");
    all_ok &= same;

    // Time per call: the median of 15 replays of each graph (warm L2: these buffers are a few MB).
    cudaEvent_t start, stop;
    CHECK_CUDA(cudaEventCreate(&start));
    CHECK_CUDA(cudaEventCreate(&stop));
    // Returns a negative time if CUDA failed (the run then fails).
    auto time_graph = [&](cudaGraphExec_t g) -> double {
      std::vector<float> ms;
      for (int rep = 0; rep < 16; ++rep) {
        float t = 0;
        if (cudaEventRecord(start, stream) != cudaSuccess || cudaGraphLaunch(g, stream) != cudaSuccess ||
            cudaEventRecord(stop, stream) != cudaSuccess || cudaEventSynchronize(stop) != cudaSuccess ||
            cudaEventElapsedTime(&t, start, stop) != cudaSuccess)
          return -1;
        if (rep > 0) ms.push_back(t);  // the first replay warms up
      }
      std::sort(ms.begin(), ms.end());
      return 1000.0 * ms[ms.size() / 2] / calls;
    };
    const double us_silu = time_graph(g_silu), us_norm = time_graph(g_norm), us_merge = time_graph(g_merge);
    all_ok &= us_silu > 0 && us_norm > 0 && us_merge > 0;
    const double b_silu = 3.0 * T * d * 2, b_norm = (4.0 * T * h + h) * 2,
                 b_merge = 3.0 * nv * 2 + 3.0 * ns * 4;  // bytes read + written per call
    std::printf("  per call in the graph (median of 15 replays of %d calls, warm L2):\n", calls);
    std::printf("    silu_and_mul          %7.2f us  %6.0f GB/s\n", us_silu, b_silu / us_silu / 1e3);
    std::printf("    fused_add_rmsnorm     %7.2f us  %6.0f GB/s\n", us_norm, b_norm / us_norm / 1e3);
    std::printf("    merge_attn_states_lse %7.2f us  %6.0f GB/s\n", us_merge, b_merge / us_merge / 1e3);
    cudaEventDestroy(start);
    cudaEventDestroy(stop);
  }
  cudaGraphExecDestroy(g_silu);
  cudaGraphExecDestroy(g_norm);
  cudaGraphExecDestroy(g_merge);
  CHECK_CUDA(cudaGetLastError());
  cudaStreamDestroy(stream);
  std::printf("cuda_consumer: %s\n", all_ok ? "all checks passed" : "SOME CHECKS FAILED");
  return all_ok ? 0 : 1;
}
