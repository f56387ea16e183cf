// Derived by ktune 0.1.0 (`ktune derive`, `ktune agent`) for op add_bias from S (add_bias.cu,
// 0xbac3b0043287fa13) and spec.json (0xef37ef904008cb27).
// Do not edit: change S or spec.json and run `ktune derive` (or `ktune agent`) again.
//
// kernels/add_bias/harness.hpp: what the benchmark and the generic GPU checks need to run any add_bias
// variant on a spec shape (ktune/harness.hpp). The reference is S itself, run on the GPU (the method's check
// against S, within the spec's tolerance): nvcc only, since it launches S.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include <ktune/dtype.hpp>
#include <ktune/harness.hpp>
#include <ktune/random.hpp>
#include <ktune/status.hpp>

#include "args.hpp"
#include "original.cuh"

namespace ktune::ops::add_bias {

/// Tensor order: x, bias, out (as in spec.json).
class Harness final : public ktune::Harness {
 public:
  static constexpr const char* names[tensor_count] = {"x", "bias", "out"};
  /// A tensor's dtype (spec.json's "dtype"): the op's (E) or a fixed one.
  enum class TensorType { element, fp32, int32, int64 };
  static constexpr TensorType types[tensor_count] = {TensorType::element, TensorType::element, TensorType::element};
  static constexpr ktune::Access access[tensor_count] = {ktune::Access::read, ktune::Access::read, ktune::Access::write};

  static int value_bytes(TensorType t, ktune::DType dtype) {
    return t == TensorType::element ? ktune::size_of(dtype) : t == TensorType::int64 ? 8 : 4;
  }

  /// Inputs are uniform in [lo, hi): asymmetric, so 0 is no special point of the range, and the one draw
  /// that rounds to exactly 0 (probability 2^-24) becomes `instead_of_zero`: no input is ever 0.
  static constexpr float lo = -3.0f, hi = 3.125f, instead_of_zero = 0.125f;

  /// Input value `i` of the stream `seed` (one stream over all inputs, in tensor order).
  static float draw(std::uint64_t seed, std::uint64_t i) {
    const float v = ktune::uniform_at(seed, i, lo, hi);
    return v == 0.0f ? instead_of_zero : v;
  }

  const char* op() const override { return "add_bias"; }

  std::vector<ktune::TensorInfo> tensors(const ktune::Shape& shape, ktune::DType dtype) const override {
    const Args<float> dims = dims_of<float>(shape);
    std::vector<ktune::TensorInfo> out;
    for (int k = 0; k < tensor_count; ++k) {
      std::int64_t n = 0;
      if (!elements(dims, k, n))
        throw std::runtime_error(std::string("add_bias: tensor ") + names[k] +
                                 " has more than 2^63 elements at " + shape.key());
      out.push_back({names[k], static_cast<std::size_t>(n), value_bytes(types[k], dtype), access[k]});
    }
    return out;
  }

  void fill_inputs(const ktune::Shape& shape, ktune::DType dtype, std::uint64_t seed,
                   ktune::HostTensors& host) const override {
    const std::vector<ktune::TensorInfo> info = tensors(shape, dtype);
    host.resize(info.size());
    std::uint64_t index = 0;
    for (std::size_t k = 0; k < info.size(); ++k) {
      host[k].resize(info[k].bytes());
      if (info[k].access == ktune::Access::write) continue;
      ktune::visit_dtype(types[k] == TensorType::element ? dtype : ktune::DType::f32, [&](auto element) {
        using T = decltype(element);
        T* dst = reinterpret_cast<T*>(host[k].data());
        for (std::size_t i = 0; i < info[k].elements; ++i) dst[i] = ktune::from_float<T>(draw(seed, index + i));
      });
      index += info[k].elements;
    }
  }

  /// S runs on the GPU: the bench computes this reference on its measuring thread, never ahead.
  bool reference_uses_gpu() const override { return true; }

  /// S's outputs for `inputs`, run on the current GPU.
  std::vector<std::vector<double>> reference(const ktune::Shape& shape, ktune::DType dtype,
                                             const ktune::HostTensors& inputs) const override {
    return ktune::visit_dtype(dtype, [&](auto element) {
      return run_original<decltype(element)>(shape, dtype, inputs);
    });
  }

  std::shared_ptr<const void> make_args(const ktune::Shape& shape, ktune::DType dtype,
                                        const std::vector<void*>& device) const override {
    return ktune::visit_dtype(dtype, [&](auto element) -> std::shared_ptr<const void> {
      using E = decltype(element);
      return std::make_shared<const Args<E>>(args_for<E>(shape, device));
    });
  }

  /// The dims of `shape`, with null tensor pointers.
  template <class E>
  static Args<E> dims_of(const ktune::Shape& shape) {
    Args<E> a{};
    a.tokens = shape.at("tokens");
    a.d = shape.at("d");
    return a;
  }

  /// Args for `shape` pointing at `device` buffers (tensors() order), contiguous.
  template <class E>
  static Args<E> args_for(const ktune::Shape& shape, const std::vector<void*>& device) {
    if (device.size() != static_cast<std::size_t>(tensor_count))
      throw std::runtime_error("add_bias: 3 device buffers expected (x, bias, out)");
    Args<E> a = dims_of<E>(shape);
    a.x = static_cast<const E*>(device[0]);
    a.bias = static_cast<const E*>(device[1]);
    a.out = static_cast<E*>(device[2]);
    return a;
  }

 private:
  /// Frees the reference run's buffers however it ends.
  struct DeviceBuffers {
    std::vector<void*> p;
    ~DeviceBuffers() {
      for (void* q : p)
        if (q) cudaFree(q);
    }
  };

  [[noreturn]] static void fail(const std::string& what, cudaError_t e) {
    throw std::runtime_error("add_bias reference (S on the GPU): " + what + ": " + cudaGetErrorName(e) + ": " +
                             cudaGetErrorString(e));
  }

  template <class E>
  std::vector<std::vector<double>> run_original(const ktune::Shape& shape, ktune::DType dtype,
                                                const ktune::HostTensors& inputs) const {
    const std::vector<ktune::TensorInfo> info = tensors(shape, dtype);
    if (inputs.size() != info.size())
      throw std::runtime_error("add_bias reference: " + std::to_string(inputs.size()) +
                               " host tensors, 3 expected");
    (void)cudaGetLastError();  // an earlier, unrelated launch error must not be blamed on S
    DeviceBuffers buf;
    buf.p.assign(info.size(), nullptr);
    for (std::size_t k = 0; k < info.size(); ++k) {
      const std::size_t bytes = info[k].bytes();
      cudaError_t e = cudaMalloc(&buf.p[k], bytes ? bytes : 1);
      if (e != cudaSuccess) fail("cudaMalloc of " + info[k].name + " (" + std::to_string(bytes) + " bytes)", e);
      if (info[k].access == ktune::Access::write) {
        // All bits set is NaN in fp32, fp16 and bf16: an element S leaves unwritten reads NaN in the
        // reference, so no variant passes by matching stale memory.
        e = cudaMemset(buf.p[k], 0xff, bytes);
      } else {
        if (inputs[k].size() != bytes)
          throw std::runtime_error("add_bias reference: host tensor " + info[k].name + " has " +
                                   std::to_string(inputs[k].size()) + " bytes, " + std::to_string(bytes) + " expected");
        e = cudaMemcpy(buf.p[k], inputs[k].data(), bytes, cudaMemcpyHostToDevice);
      }
      if (e != cudaSuccess) fail("preparing " + info[k].name, e);
    }
    const ktune::Status st = original::run<E>(args_for<E>(shape, buf.p), nullptr);
    if (!st.ok()) {
      if (st.cuda != cudaSuccess) fail(std::string("S's launch: ") + st.message, st.cuda);
      throw std::runtime_error(std::string("add_bias reference: S refused the call: ") + st.message);
    }
    if (const cudaError_t e = cudaDeviceSynchronize(); e != cudaSuccess) fail("running S", e);
    std::vector<std::vector<double>> out;
    for (std::size_t k = 0; k < info.size(); ++k) {
      if (!info[k].is_output()) continue;
      std::vector<std::byte> host(info[k].bytes());
      const cudaError_t e = cudaMemcpy(host.data(), buf.p[k], host.size(), cudaMemcpyDeviceToHost);
      if (e != cudaSuccess) fail("copying " + info[k].name + " back", e);
      std::vector<double> ref(info[k].elements);
      ktune::visit_dtype(types[k] == TensorType::element ? dtype : ktune::DType::f32, [&](auto element) {
        using T = decltype(element);
        const T* v = reinterpret_cast<const T*>(host.data());
        for (std::size_t i = 0; i < ref.size(); ++i) ref[i] = static_cast<double>(ktune::to_float(v[i]));
      });
      out.push_back(std::move(ref));
    }
    return out;
  }
};

}  // namespace ktune::ops::add_bias
