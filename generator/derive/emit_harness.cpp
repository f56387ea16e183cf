// generator/derive/emit_harness.cpp: harness.hpp, the op's ktune::Harness: tensors, inputs, and S run on
// the GPU as the reference.
#include <fmt/format.h>

#include <string>

#include "generator/derive/emit_detail.hpp"

namespace ktune::gen::derive::detail {

// ---- harness.hpp ----------------------------------------------------------------------------------

std::string harness_hpp(const Model& m) {
  std::string names, types, access, order;
  for (const TensorModel& t : m.tensors) {
    names += (names.empty() ? "" : ", ") + ("\"" + t.name + "\"");
    types += std::string(types.empty() ? "" : ", ") + "TensorType::" + ktune::name(t.dtype);
    access += std::string(access.empty() ? "" : ", ") + "ktune::Access::" +
              (t.access == Access::read ? "read" : t.access == Access::write ? "write" : "read_write");
    order += (order.empty() ? "" : ", ") + t.name;
  }
  std::string o = header(m, fmt::format("kernels/{0}/harness.hpp: what the benchmark and the generic GPU checks need to "
                                        "run any {0} variant on a spec shape (ktune/harness.hpp). The reference is S "
                                        "itself, run on the GPU (the method's check against S, within the spec's "
                                        "tolerance): nvcc only, since it launches S.",
                                        m.op));
  o += fmt::format(
      "#pragma once\n\n"
      "#include <cuda_runtime.h>\n\n"
      "#include <algorithm>\n#include <cstddef>\n#include <cstdint>\n#include <limits>\n#include <memory>\n#include <stdexcept>\n#include <string>\n#include <vector>\n\n"
      "#include <ktune/dtype.hpp>\n#include <ktune/harness.hpp>\n#include <ktune/random.hpp>\n#include <ktune/status.hpp>\n\n"
      "#include \"args.hpp\"\n#include \"original.cuh\"\n\n"
      "namespace ktune::ops::{0} {{\n\n",
      m.op);
  o += fmt::format("/// Tensor order: {} (as in spec.json).\n", order);
  o += "class Harness final : public ktune::Harness {\n public:\n";
  o += fmt::format("  static constexpr const char* names[tensor_count] = {{{}}};\n", names);
  o += "  /// A tensor's dtype (spec.json's \"dtype\"): the op's (E) or a fixed one.\n"
       "  enum class TensorType { element, fp32, int32, int64 };\n";
  o += fmt::format("  static constexpr TensorType types[tensor_count] = {{{}}};\n", types);
  o += fmt::format("  static constexpr ktune::Access access[tensor_count] = {{{}}};\n\n", access);
  o += "  static int value_bytes(TensorType t, ktune::DType dtype) {\n"
       "    return t == TensorType::element ? ktune::size_of(dtype) : t == TensorType::int64 ? 8 : 4;\n"
       "  }\n\n";
  o += "  /// Inputs are uniform in [lo, hi): asymmetric, so 0 is no special point of the range, and the one draw\n"
       "  /// that rounds to exactly 0 (probability 2^-24) becomes `instead_of_zero`: no input is ever 0.\n"
       "  static constexpr float lo = -3.0f, hi = 3.125f, instead_of_zero = 0.125f;\n\n";
  o += "  /// Input value `i` of the stream `seed` (one stream over all inputs, in tensor order).\n"
       "  static float draw(std::uint64_t seed, std::uint64_t i) {\n"
       "    const float v = ktune::uniform_at(seed, i, lo, hi);\n"
       "    return v == 0.0f ? instead_of_zero : v;\n"
       "  }\n\n";
  if (m.any_index()) {
    o += "  /// Index value `i` of the stream `seed`: uniform in [low, high) (low < high). The modulo's bias, at\n"
         "  /// most (high - low) / 2^64, is far below anything a test sees; the value never leaves the range.\n"
         "  static std::int64_t draw_index(std::uint64_t seed, std::uint64_t i, std::int64_t low, std::int64_t high) {\n"
         "    const std::uint64_t r = ktune::mix64(seed * 0x2545f4914f6cdd1dull + i);\n"
         "    return low + static_cast<std::int64_t>(r % static_cast<std::uint64_t>(high - low));\n"
         "  }\n\n";
    o += "  /// The values index tensor `k` holds at the dims of `a` (spec.json's \"range\"): [low, high), the\n"
         "  /// caller's promise, which the inputs keep. An int32 tensor's range ends at 2^31 whatever the dims.\n"
         "  template <class E>\n"
         "  static void range_of(int k, const Args<E>& a, std::int64_t& low, std::int64_t& high) {\n"
         "    (void)a;  // unused when every range is constant\n"
         "    switch (k) {\n";
    for (std::size_t k = 0; k < m.tensors.size(); ++k) {
      const TensorModel& t = m.tensors[k];
      if (!t.index()) continue;
      o += fmt::format("      case {}:  // {} {}\n        low = {};\n        high = {};\n        break;\n", k, t.name, t.range_text,
                       t.range_lo, t.range_hi);
    }
    o += "      default:\n"
         "        low = high = 0;\n"
         "        return;\n"
         "    }\n"
         "    if (types[k] == TensorType::int32)\n"
         "      high = std::min<std::int64_t>(high, std::int64_t{std::numeric_limits<std::int32_t>::max()} + 1);\n"
         "  }\n\n";
  }
  o += fmt::format("  const char* op() const override {{ return \"{}\"; }}\n\n", m.op);
  o += "  std::vector<ktune::TensorInfo> tensors(const ktune::Shape& shape, ktune::DType dtype) const override {\n"
       "    const Args<float> dims = dims_of<float>(shape);\n"
       "    std::vector<ktune::TensorInfo> out;\n"
       "    for (int k = 0; k < tensor_count; ++k) {\n"
       "      std::int64_t n = 0;\n"
       "      if (!elements(dims, k, n))\n";
  o += fmt::format("        throw std::runtime_error(std::string(\"{}: tensor \") + names[k] +\n"
                   "                                 \" has more than 2^63 elements at \" + shape.key());\n",
                   m.op);
  o += "      out.push_back({names[k], static_cast<std::size_t>(n), value_bytes(types[k], dtype), access[k]});\n"
       "    }\n"
       "    return out;\n"
       "  }\n\n";
  o += "  void fill_inputs(const ktune::Shape& shape, ktune::DType dtype, std::uint64_t seed,\n"
       "                   ktune::HostTensors& host) const override {\n"
       "    const std::vector<ktune::TensorInfo> info = tensors(shape, dtype);\n";
  if (m.any_index()) o += "    const Args<float> dims = dims_of<float>(shape);\n";
  o += "    host.resize(info.size());\n"
       "    std::uint64_t index = 0;\n"
       "    for (std::size_t k = 0; k < info.size(); ++k) {\n"
       "      host[k].resize(info[k].bytes());\n"
       "      if (info[k].access == ktune::Access::write) continue;\n";
  if (m.any_index()) {
    o += "      if (types[k] == TensorType::int32 || types[k] == TensorType::int64) {\n"
         "        std::int64_t low = 0, high = 0;\n"
         "        range_of(static_cast<int>(k), dims, low, high);\n"
         "        if (info[k].elements > 0 && !(low < high))\n";
    o += fmt::format("          throw std::runtime_error(std::string(\"{}: index tensor \") + names[k] + \" has no value to \" +\n"
                     "                                   \"hold: its range [\" + std::to_string(low) + \", \" + std::to_string(high) +\n"
                     "                                   \") is empty at \" + shape.key());\n",
                     m.op);
    o += "        for (std::size_t i = 0; i < info[k].elements; ++i) {\n"
         "          const std::int64_t v = draw_index(seed, index + i, low, high);\n"
         "          if (types[k] == TensorType::int64) reinterpret_cast<std::int64_t*>(host[k].data())[i] = v;\n"
         "          else reinterpret_cast<std::int32_t*>(host[k].data())[i] = static_cast<std::int32_t>(v);\n"
         "        }\n"
         "        index += info[k].elements;\n"
         "        continue;\n"
         "      }\n";
  }
  o += "      ktune::visit_dtype(types[k] == TensorType::element ? dtype : ktune::DType::f32, [&](auto element) {\n"
       "        using T = decltype(element);\n"
       "        T* dst = reinterpret_cast<T*>(host[k].data());\n"
       "        for (std::size_t i = 0; i < info[k].elements; ++i) dst[i] = ktune::from_float<T>(draw(seed, index + i));\n"
       "      });\n"
       "      index += info[k].elements;\n"
       "    }\n"
       "  }\n\n";
  o += "  /// S runs on the GPU: the bench computes this reference on its measuring thread, never ahead.\n"
       "  bool reference_uses_gpu() const override { return true; }\n\n";
  o += "  /// S's outputs for `inputs`, run on the current GPU.\n"
       "  std::vector<std::vector<double>> reference(const ktune::Shape& shape, ktune::DType dtype,\n"
       "                                             const ktune::HostTensors& inputs) const override {\n"
       "    return ktune::visit_dtype(dtype, [&](auto element) {\n"
       "      return run_original<decltype(element)>(shape, dtype, inputs);\n"
       "    });\n"
       "  }\n\n";
  o += "  std::shared_ptr<const void> make_args(const ktune::Shape& shape, ktune::DType dtype,\n"
       "                                        const std::vector<void*>& device) const override {\n"
       "    return ktune::visit_dtype(dtype, [&](auto element) -> std::shared_ptr<const void> {\n"
       "      using E = decltype(element);\n"
       "      return std::make_shared<const Args<E>>(args_for<E>(shape, device));\n"
       "    });\n"
       "  }\n\n";
  o += m.scalars.empty() ? "  /// The dims of `shape`, with null tensor pointers.\n"
                         : "  /// The dims and the scalars of `shape` (a scalar it does not set: spec.json's default), with null\n"
                           "  /// tensor pointers.\n";
  o += "  template <class E>\n"
       "  static Args<E> dims_of(const ktune::Shape& shape) {\n"
       "    Args<E> a{};\n";
  for (const std::string& d : m.dims) o += fmt::format("    a.{0} = shape.at(\"{0}\");\n", d);
  for (const ScalarModel& sc : m.scalars) {
    if (sc.type == ScalarType::bool_)
      o += fmt::format("    a.{0} = shape.scalar(\"{0}\", {1}) != 0;\n", sc.name, sc.default_cpp == "true" ? "1.0" : "0.0");
    else
      o += fmt::format("    a.{0} = static_cast<{1}>(shape.scalar(\"{0}\", {2}));\n", sc.name, sc.cpp_type, sc.default_cpp);
  }
  o += "    return a;\n  }\n\n";
  o += "  /// Args for `shape` pointing at `device` buffers (tensors() order), contiguous.\n"
       "  template <class E>\n"
       "  static Args<E> args_for(const ktune::Shape& shape, const std::vector<void*>& device) {\n"
       "    if (device.size() != static_cast<std::size_t>(tensor_count))\n";
  o += fmt::format("      throw std::runtime_error(\"{}: {} device buffers expected ({})\");\n", m.op, m.tensors.size(), order);
  o += "    Args<E> a = dims_of<E>(shape);\n";
  for (std::size_t k = 0; k < m.tensors.size(); ++k) {
    const TensorModel& t = m.tensors[k];
    o += fmt::format("    a.{} = static_cast<{}>(device[{}]);\n", t.name, t.pointer(), k);
  }
  o += "    return a;\n  }\n\n";
  o += " private:\n"
       "  /// Frees the reference run's buffers however it ends.\n"
       "  struct DeviceBuffers {\n"
       "    std::vector<void*> p;\n"
       "    ~DeviceBuffers() {\n"
       "      for (void* q : p)\n"
       "        if (q) cudaFree(q);\n"
       "    }\n"
       "  };\n\n";
  o += "  [[noreturn]] static void fail(const std::string& what, cudaError_t e) {\n";
  o += fmt::format("    throw std::runtime_error(\"{} reference (S on the GPU): \" + what + \": \" + cudaGetErrorName(e) + \": \" +\n"
                   "                             cudaGetErrorString(e));\n",
                   m.op);
  o += "  }\n\n";
  o += "  template <class E>\n"
       "  std::vector<std::vector<double>> run_original(const ktune::Shape& shape, ktune::DType dtype,\n"
       "                                                const ktune::HostTensors& inputs) const {\n"
       "    const std::vector<ktune::TensorInfo> info = tensors(shape, dtype);\n"
       "    if (inputs.size() != info.size())\n";
  o += fmt::format("      throw std::runtime_error(\"{} reference: \" + std::to_string(inputs.size()) +\n"
                   "                               \" host tensors, {} expected\");\n",
                   m.op, m.tensors.size());
  o += "    (void)cudaGetLastError();  // an earlier, unrelated launch error must not be blamed on S\n"
       "    DeviceBuffers buf;\n"
       "    buf.p.assign(info.size(), nullptr);\n"
       "    for (std::size_t k = 0; k < info.size(); ++k) {\n"
       "      const std::size_t bytes = info[k].bytes();\n"
       "      cudaError_t e = cudaMalloc(&buf.p[k], bytes ? bytes : 1);\n"
       "      if (e != cudaSuccess) fail(\"cudaMalloc of \" + info[k].name + \" (\" + std::to_string(bytes) + \" bytes)\", e);\n"
       "      if (info[k].access == ktune::Access::write) {\n"
       "        // All bits set is NaN in fp32, fp16 and bf16: an element S leaves unwritten reads NaN in the\n"
       "        // reference, so no variant passes by matching stale memory.\n"
       "        e = cudaMemset(buf.p[k], 0xff, bytes);\n"
       "      } else {\n"
       "        if (inputs[k].size() != bytes)\n";
  o += fmt::format("          throw std::runtime_error(\"{} reference: host tensor \" + info[k].name + \" has \" +\n"
                   "                                   std::to_string(inputs[k].size()) + \" bytes, \" + std::to_string(bytes) + \" expected\");\n",
                   m.op);
  o += "        e = cudaMemcpy(buf.p[k], inputs[k].data(), bytes, cudaMemcpyHostToDevice);\n"
       "      }\n"
       "      if (e != cudaSuccess) fail(\"preparing \" + info[k].name, e);\n"
       "    }\n"
       "    const ktune::Status st = original::run<E>(args_for<E>(shape, buf.p), nullptr);\n"
       "    if (!st.ok()) {\n"
       "      if (st.cuda != cudaSuccess) fail(std::string(\"S's launch: \") + st.message, st.cuda);\n";
  o += fmt::format("      throw std::runtime_error(std::string(\"{} reference: S refused the call: \") + st.message);\n", m.op);
  o += "    }\n"
       "    if (const cudaError_t e = cudaDeviceSynchronize(); e != cudaSuccess) fail(\"running S\", e);\n"
       "    std::vector<std::vector<double>> out;\n"
       "    for (std::size_t k = 0; k < info.size(); ++k) {\n"
       "      if (!info[k].is_output()) continue;\n"
       "      std::vector<std::byte> host(info[k].bytes());\n"
       "      const cudaError_t e = cudaMemcpy(host.data(), buf.p[k], host.size(), cudaMemcpyDeviceToHost);\n"
       "      if (e != cudaSuccess) fail(\"copying \" + info[k].name + \" back\", e);\n"
       "      std::vector<double> ref(info[k].elements);\n"
       "      ktune::visit_dtype(types[k] == TensorType::element ? dtype : ktune::DType::f32, [&](auto element) {\n"
       "        using T = decltype(element);\n"
       "        const T* v = reinterpret_cast<const T*>(host.data());\n"
       "        for (std::size_t i = 0; i < ref.size(); ++i) ref[i] = static_cast<double>(ktune::to_float(v[i]));\n"
       "      });\n"
       "      out.push_back(std::move(ref));\n"
       "    }\n"
       "    return out;\n"
       "  }\n"
       "};\n\n";
  o += fmt::format("}}  // namespace ktune::ops::{}\n", m.op);
  return o;
}

}  // namespace ktune::gen::derive::detail
