// Calls silu_and_mul from a host-compiler translation unit through the precompiled ktune::kernels
// library: the host-only declarations need no nvcc (what a PyTorch or other binding does).
#include <cstdio>

#include <kernels/silu_and_mul/silu_and_mul.hpp>

int main() {
  // Bad arguments are refused before any CUDA call, so this runs on any machine.
  const ktune::Status st = ktune::silu_and_mul(ktune::DType::bf16, nullptr, nullptr, 4, 11008);
  std::printf("host_consumer: null pointers -> %s: %s\n", ktune::to_string(st.code), st.message);
  return st.code == ktune::StatusCode::invalid_argument ? 0 : 1;
}
