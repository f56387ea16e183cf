// Example 01, host side: the three kernels called from a .cpp file compiled by the host compiler,
// through the host-only declarations (<op>.hpp) and the precompiled ktune::kernels library, with the
// dtype given at run time: the shape a PyTorch or other binding takes. fp32 here, checked against the
// plain host computation of host_reference.hpp. Bad arguments are refused before any CUDA call, so
// the first checks run on any machine; the GPU part says so and stops where there is no device.
#include <cuda_runtime_api.h>

#include <cstdint>
#include <cstdio>
#include <limits>
#include <vector>

#include <kernels/fused_add_rmsnorm/fused_add_rmsnorm.hpp>
#include <kernels/merge_attn_states_lse/merge_attn_states_lse.hpp>
#include <kernels/silu_and_mul/silu_and_mul.hpp>

#include "host_reference.hpp"

namespace {

bool expect_refused(const char* what, ktune::Status st) {
  const bool ok = st.code == ktune::StatusCode::invalid_argument;
  std::printf("  %-36s -> %s: %s\n", what, ktune::to_string(st.code), st.message);
  return ok;
}

// A float device buffer. A CUDA failure is remembered (first error wins) and makes the run fail, so no
// result is ever read from a buffer that was not written.
cudaError_t first_error = cudaSuccess;
void note(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return;
  std::fprintf(stderr, "host_consumer: %s failed: %s\n", what, cudaGetErrorString(e));
  if (first_error == cudaSuccess) first_error = e;
}

struct Buffer {
  float* p = nullptr;
  std::size_t n = 0;
  explicit Buffer(std::size_t count) : n(count) {
    note(cudaMalloc(reinterpret_cast<void**>(&p), n * sizeof(float)), "cudaMalloc");
    if (p) note(cudaMemset(p, 0xFF, n * sizeof(float)), "cudaMemset");  // poison: NaN, never a pass
  }
  explicit Buffer(const std::vector<double>& v) : Buffer(v.size()) {
    const std::vector<float> f(v.begin(), v.end());
    if (p) note(cudaMemcpy(p, f.data(), n * sizeof(float), cudaMemcpyHostToDevice), "cudaMemcpy to the device");
  }
  std::vector<double> get() const {
    std::vector<float> f(n, std::numeric_limits<float>::quiet_NaN());
    if (p) note(cudaMemcpy(f.data(), p, n * sizeof(float), cudaMemcpyDeviceToHost), "cudaMemcpy to the host");
    return {f.begin(), f.end()};
  }
  ~Buffer() { cudaFree(p); }
};

// Inputs rounded to fp32, as the device sees them.
std::vector<double> f32(std::vector<double> v) {
  for (double& e : v) e = static_cast<float>(e);
  return v;
}

bool report(const char* what, double worst) {
  const bool ok = worst <= 1.0;
  std::printf("  %-44s %s (worst error %.3f of the tolerance)\n", what, ok ? "PASS" : "FAIL", worst);
  return ok;
}

}  // namespace

int main() {
  using ktune::DType;
  bool all_ok = true;
  std::printf("host_consumer: argument checks (no CUDA call is made for these)\n");
  all_ok &= expect_refused("silu_and_mul, null pointers", ktune::silu_and_mul(DType::bf16, nullptr, nullptr, 4, 11008));
  auto fake = [](std::uintptr_t a) { return reinterpret_cast<void*>(a); };
  all_ok &= expect_refused("silu_and_mul, out_stride 0",
                           ktune::silu_and_mul(DType::f32, fake(0x1000), fake(0x2000), 4, 64, nullptr, 0, -1));
  all_ok &= expect_refused("fused_add_rmsnorm, residual_stride 0",
                           ktune::fused_add_rmsnorm(DType::f16, fake(0x1000), fake(0x2000), fake(0x3000), 4, 64, 1e-6f,
                                                    nullptr, -1, 0));
  all_ok &= expect_refused("merge_attn_states_lse, out_stride 0",
                           ktune::merge_attn_states_lse(DType::f32, fake(0x1000), nullptr, fake(0x2000),
                                                        static_cast<const float*>(fake(0x3000)), fake(0x4000),
                                                        static_cast<const float*>(fake(0x5000)), 4, 8, 64, nullptr, 0));

  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::printf("host_consumer: no CUDA device here, so the kernels were not run\n");
    return all_ok ? 0 : 1;
  }
  std::printf("host_consumer: fp32 through ktune::kernels (runtime dtype)\n");
  ktune::TunedChoice c;

  const std::int64_t T = 7, d = 1000;  // ragged sizes: the variants' tails and the unaligned fallback
  const std::vector<double> in = f32(example::values(static_cast<std::size_t>(T * 2 * d), 11, -4, 4));
  Buffer in_d(in), out_d(static_cast<std::size_t>(T * d));
  ktune::Status st = ktune::silu_and_mul(DType::f32, out_d.p, in_d.p, T, d);
  std::printf("silu_and_mul T=%lld d=%lld: %s\n", (long long)T, (long long)d, st.message);
  all_ok &= st.ok() && report("out vs host reference", example::worst_error(out_d.get(), example::silu_and_mul(in, T, d, 2 * d), 1e-5, 1e-5));
  if (ktune::silu_and_mul_choice(DType::f32, T, d, c).ok()) std::printf("  variant %s (%s)\n", c.id, ktune::to_string(c.source));

  const std::int64_t h = 5120;
  const std::vector<double> x = f32(example::values(static_cast<std::size_t>(T * h), 12, -2, 2));
  const std::vector<double> r = f32(example::values(static_cast<std::size_t>(T * h), 13, -2, 2));
  const std::vector<double> w = f32(example::values(static_cast<std::size_t>(h), 14, 0.5, 1.5));
  Buffer x_d(x), r_d(r), w_d(w);
  st = ktune::fused_add_rmsnorm(DType::f32, x_d.p, r_d.p, w_d.p, T, h, 1e-6f);
  std::printf("fused_add_rmsnorm T=%lld h=%lld: %s\n", (long long)T, (long long)h, st.message);
  std::vector<double> x_ref, r_ref;
  example::fused_add_rmsnorm(x, r, w, T, h, 1e-6, x_ref, r_ref);
  all_ok &= st.ok() && report("input (normalised) vs host reference", example::worst_error(x_d.get(), x_ref, 1e-5, 1e-5));
  all_ok &= st.ok() && report("residual vs host reference", example::worst_error(r_d.get(), r_ref, 1e-5, 1e-5));
  if (ktune::fused_add_rmsnorm_choice(DType::f32, T, h, c).ok()) std::printf("  variant %s (%s)\n", c.id, ktune::to_string(c.source));

  const std::int64_t heads = 40, head_size = 128;
  const std::size_t nv = static_cast<std::size_t>(T * heads * head_size), ns = static_cast<std::size_t>(T * heads);
  const std::vector<double> va = f32(example::values(nv, 15, -1, 1)), vb = f32(example::values(nv, 16, -1, 1));
  const std::vector<double> sa = f32(example::values(ns, 17, -8, 8)), sb = f32(example::values(ns, 18, -8, 8));
  Buffer va_d(va), vb_d(vb), sa_d(sa), sb_d(sb), vm_d(nv), sm_d(ns);
  st = ktune::merge_attn_states_lse(DType::f32, vm_d.p, sm_d.p, va_d.p, sa_d.p, vb_d.p, sb_d.p, T, heads, head_size);
  std::printf("merge_attn_states_lse T=%lld heads=%lld head_size=%lld: %s\n", (long long)T, (long long)heads,
              (long long)head_size, st.message);
  std::vector<double> vm_ref, sm_ref;
  example::merge_attn_states(va, sa, vb, sb, T, heads, head_size, vm_ref, sm_ref);
  all_ok &= st.ok() && report("merged values vs host reference", example::worst_error(vm_d.get(), vm_ref, 1e-5, 1e-5));
  all_ok &= st.ok() && report("merged LSE vs host reference", example::worst_error(sm_d.get(), sm_ref, 1e-5, 1e-5));
  if (ktune::merge_attn_states_lse_choice(DType::f32, T, heads, c).ok())
    std::printf("  variant %s (%s)\n", c.id, ktune::to_string(c.source));

  note(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
  all_ok &= first_error == cudaSuccess;
  std::printf("host_consumer: %s\n", all_ok ? "all checks passed" : "SOME CHECKS FAILED");
  return all_ok ? 0 : 1;
}
