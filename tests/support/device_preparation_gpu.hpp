// tests/support/device_preparation_gpu.hpp: the GPU check of an op's DevicePreparation (ktune/harness.hpp)
// against its Harness, shared by the ops that have one (act-and-mul, RMS norms).
#pragma once

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <ktune/dtype.hpp>
#include <ktune/harness.hpp>

#include "bench/host_inputs.hpp"
#include "support/gpu.hpp"

namespace ktune::test {

/// The op's DevicePreparation, which the benchmark uses instead of the host's (bench/README.md, "Inputs and
/// references on the GPU"), on `shapes` in every dtype: what the benchmark's own check of its small groups asks
/// (bench::preparation_disagreement: the host's inputs bit for bit, its float64 reference within 1e-12 of the
/// output's scale), on any size, and nothing written past an input, into a write-only tensor or past a reference
/// (every buffer starts poisoned, with 4 KiB past its end).
inline void expect_device_preparation_is_the_hosts(const std::string& op, const std::vector<Shape>& shapes) {
  const Harness* harness = HarnessRegistry::global().find(op);
  const DevicePreparation* prep = HarnessRegistry::global().device_preparation(op);
  ASSERT_NE(harness, nullptr) << op << " registers no harness";
  ASSERT_NE(prep, nullptr) << op << " registers no device preparation";
  Stream stream;
  ASSERT_NE(stream.s, nullptr);
  constexpr std::size_t slack = 4096;
  constexpr unsigned char poison = 0xA5;
  auto poisoned = [](const std::vector<std::byte>& v, std::size_t from) {
    return std::all_of(v.begin() + static_cast<std::ptrdiff_t>(from), v.end(), [](std::byte b) { return b == std::byte{poison}; });
  };
  auto fetch = [](const DeviceBuffer<std::byte>& b, std::vector<std::byte>& v) {
    v.resize(b.n);
    return cudaMemcpy(v.data(), b.ptr, b.n, cudaMemcpyDeviceToHost);
  };
  double worst = 0;
  std::size_t compared = 0, exact = 0;
  for (const DType dtype : {DType::f32, DType::f16, DType::bf16})
    for (const Shape& shape : shapes) {
      SCOPED_TRACE(op + "/" + name(dtype) + "/" + shape.key());
      const std::uint64_t seed = 0x5eed0000u + std::hash<std::string>{}(shape.key());
      const std::vector<TensorInfo> tensors = harness->tensors(shape, dtype);
      HostTensors host;
      harness->fill_inputs(shape, dtype, seed, host);
      const std::vector<std::vector<double>> ref = harness->reference(shape, dtype, host);
      ASSERT_EQ(host.size(), tensors.size());

      std::vector<std::unique_ptr<DeviceBuffer<std::byte>>> dev_tensors, dev_refs;
      std::vector<void*> tensor_ptrs;
      std::vector<double*> ref_ptrs;
      for (const TensorInfo& t : tensors) {
        dev_tensors.push_back(std::make_unique<DeviceBuffer<std::byte>>(t.bytes() + slack));
        tensor_ptrs.push_back(dev_tensors.back()->ptr);
      }
      for (const std::vector<double>& r : ref) {
        dev_refs.push_back(std::make_unique<DeviceBuffer<std::byte>>(r.size() * sizeof(double) + slack));
        ref_ptrs.push_back(reinterpret_cast<double*>(dev_refs.back()->ptr));
      }
      for (const auto* group : {&dev_tensors, &dev_refs})
        for (const auto& b : *group) {
          ASSERT_NE(b->ptr, nullptr);
          KTUNE_ASSERT_CUDA(cudaMemset(b->ptr, poison, b->n));
        }
      KTUNE_ASSERT_OK(prep->prepare(shape, dtype, seed, tensor_ptrs, ref_ptrs, stream.s));
      KTUNE_ASSERT_CUDA(cudaStreamSynchronize(stream.s));

      // What the benchmark compares (bench/host_inputs.hpp), then what it leaves to this test: the bytes
      // around and inside the buffers the preparation must not write.
      HostTensors gpu_inputs(tensors.size());
      std::vector<std::vector<double>> gpu_ref(ref.size());
      std::vector<std::byte> back;
      for (std::size_t t = 0; t < tensors.size(); ++t) {
        KTUNE_ASSERT_CUDA(fetch(*dev_tensors[t], back));
        const std::size_t bytes = tensors[t].bytes();
        if (tensors[t].access == Access::write) {
          EXPECT_TRUE(poisoned(back, 0)) << "written into the write-only " << tensors[t].name;
          continue;
        }
        EXPECT_TRUE(poisoned(back, bytes)) << "written past " << tensors[t].name;
        gpu_inputs[t].assign(back.begin(), back.begin() + static_cast<std::ptrdiff_t>(bytes));
      }
      for (std::size_t o = 0; o < ref.size(); ++o) {
        KTUNE_ASSERT_CUDA(fetch(*dev_refs[o], back));
        const std::size_t bytes = ref[o].size() * sizeof(double);
        EXPECT_TRUE(poisoned(back, bytes)) << "written past reference " << o;
        gpu_ref[o].resize(ref[o].size());
        std::memcpy(gpu_ref[o].data(), back.data(), bytes);
        for (std::size_t i = 0; i < ref[o].size(); ++i) {
          const double a = gpu_ref[o][i], b = ref[o][i];
          ++compared;
          if (a == b || (std::isnan(a) && std::isnan(b))) ++exact;
          else worst = std::max(worst, std::fabs(a - b) / std::max(std::fabs(a), std::fabs(b)));
        }
      }
      EXPECT_EQ(bench::preparation_disagreement(tensors, host, ref, gpu_inputs, gpu_ref), "");
    }
  std::printf("%s: the GPU's reference is the host's bitwise at %zu of %zu elements, elsewhere within %.3g of itself\n", op.c_str(),
              exact, compared, worst);
}

}  // namespace ktune::test
