// Calls the tuned silu_and_mul from CUDA code: include the public API, pass raw device pointers.
#include <cuda_bf16.h>

#include <cmath>
#include <cstdio>
#include <vector>

#include <kernels/silu_and_mul/silu_and_mul.cuh>

int main() {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::printf("cuda_consumer: built against ktune; no CUDA device here, so nothing to run\n");
    return 0;
  }
  const std::int64_t tokens = 4, d = 11008;
  std::vector<__nv_bfloat16> in(tokens * 2 * d);
  for (std::size_t i = 0; i < in.size(); ++i) in[i] = __float2bfloat16(std::sin(0.001f * i));
  __nv_bfloat16 *d_in = nullptr, *d_out = nullptr;
  if (cudaMalloc(&d_in, in.size() * sizeof(in[0])) != cudaSuccess ||
      cudaMalloc(&d_out, tokens * d * sizeof(in[0])) != cudaSuccess) {
    std::fprintf(stderr, "cuda_consumer: cudaMalloc failed\n");
    return 1;
  }
  cudaMemcpy(d_in, in.data(), in.size() * sizeof(in[0]), cudaMemcpyHostToDevice);

  const ktune::Status st = ktune::silu_and_mul(d_out, d_in, tokens, d);
  if (!st.ok()) {
    std::fprintf(stderr, "cuda_consumer: %s\n", st.message);
    return 1;
  }
  std::vector<__nv_bfloat16> out(tokens * d);
  if (cudaMemcpy(out.data(), d_out, out.size() * sizeof(out[0]), cudaMemcpyDeviceToHost) != cudaSuccess) return 1;
  const float x = __bfloat162float(in[7]), y = __bfloat162float(in[d + 7]);
  std::printf("cuda_consumer: out[0, 7] = %g (expected %g)\n", __bfloat162float(out[7]), x / (1 + std::exp(-x)) * y);

  ktune::TunedChoice choice;
  if (ktune::silu_and_mul_choice(ktune::DType::bf16, tokens, d, choice).ok())
    std::printf("cuda_consumer: variant %s (%s)\n", choice.id ? choice.id : "general", ktune::to_string(choice.source));
  cudaFree(d_in);
  cudaFree(d_out);
  return 0;
}
