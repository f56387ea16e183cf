// bench/micro/exit_on_error.hpp: the micro-benchmarks' error handling: a failed CUDA call (CHECK) or ktune
// call (TRY) prints where and exits 1, so no figure is printed from a measurement that did not run.
#pragma once

#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>

#include <ktune/status.hpp>

#define CHECK(x)                                                                               \
  do {                                                                                         \
    const cudaError_t e_ = (x);                                                                \
    if (e_ != cudaSuccess) {                                                                   \
      std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
      std::exit(1);                                                                            \
    }                                                                                          \
  } while (0)

#define TRY(x)                                                                  \
  do {                                                                          \
    const ktune::Status s_ = (x);                                               \
    if (!s_.ok()) {                                                             \
      std::fprintf(stderr, "%s:%d: %s failed\n", __FILE__, __LINE__, #x);       \
      std::exit(1);                                                             \
    }                                                                           \
  } while (0)
