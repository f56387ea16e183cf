// generator/derive/emit.cpp: the derived files of a kernel folder (emit.hpp). Each text is written in the
// shape of the hand-written folders (kernels/silu_and_mul/), with the op's names and shapes filled in.
#include "generator/derive/emit.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <sstream>
#include <string>

namespace ktune::gen::derive {

namespace {

/// `text` as comment lines of at most `width` columns, each starting with `prefix` ("// ", "/// ");
/// words are never split, a '\n' starts a new line. Backslashes would continue a line comment onto the
/// next line of code, and control characters have no place in a comment: both are dropped.
std::string wrap(const std::string& text, const std::string& prefix, std::size_t width = 110) {
  std::string out;
  std::istringstream paragraphs(text);
  for (std::string para; std::getline(paragraphs, para);) {
    std::string line;
    std::istringstream words(para);
    for (std::string w; words >> w;) {
      std::string clean;
      for (char c : w)
        if (c != '\\' && static_cast<unsigned char>(c) >= 0x20) clean += c;
      if (!line.empty() && prefix.size() + line.size() + 1 + clean.size() > width) {
        out += prefix + line + "\n";
        line.clear();
      }
      line += (line.empty() ? "" : " ") + clean;
    }
    std::string last = prefix + line;
    while (!last.empty() && last.back() == ' ') last.pop_back();
    out += last + "\n";
  }
  return out;
}

std::string banner(const Model& m) {
  return wrap(fmt::format("Derived by ktune {} (`ktune derive`, `ktune agent`) for op {} from S ({}, {}) and spec.json ({}).\n"
                          "Do not edit: change S or spec.json and run `ktune derive` (or `ktune agent`) again.",
                          KTUNE_TOOL_VERSION, m.op, m.s_name, m.s_hash, m.spec_hash),
              "// ");
}

/// The banner, then the file's description: paragraphs separated by "\n\n".
std::string header(const Model& m, const std::string& description) {
  std::string o = banner(m) + "//\n";
  std::size_t pos = 0;
  while (pos <= description.size()) {
    std::size_t end = description.find("\n\n", pos);
    if (end == std::string::npos) end = description.size();
    if (pos) o += "//\n";
    o += wrap(description.substr(pos, end - pos), "// ");
    pos = end + 2;
  }
  return o;
}

/// `head` + the comma-separated `items` + `tail` as one line, or, beyond 120 columns, greedily filled lines
/// continuing under the first item (4 columns in when `head` is long).
std::string wrap_list(const std::string& head, const std::vector<std::string>& items, const std::string& tail) {
  std::string one = head;
  for (std::size_t i = 0; i < items.size(); ++i) one += (i ? ", " : "") + items[i];
  one += tail;
  if (one.size() <= 120) return one + "\n";
  const std::string indent(head.size() <= 60 ? head.size() : 4, ' ');
  std::vector<std::string> lines{head};
  for (std::size_t i = 0; i < items.size(); ++i) {
    const std::string piece = items[i] + (i + 1 < items.size() ? "," : tail);
    if (i == 0) lines.back() += piece;
    else if (lines.back().size() + 1 + piece.size() > 120) lines.push_back(indent + piece);
    else lines.back() += " " + piece;
  }
  std::string out;
  for (const std::string& l : lines) out += l + "\n";
  return out;
}

/// "  if (cond) ret;" on one line, or with `ret` on the next when that passes 120 columns.
std::string if_return(const std::string& cond, const std::string& ret) {
  const std::string one = "  if (" + cond + ") " + ret + "\n";
  return one.size() <= 121 ? one : "  if (" + cond + ")\n    " + ret + "\n";
}

std::string doc_lines(const std::string& text, const std::string& indent) { return wrap(text, indent + "/// ", 100); }

/// The tensor table of doc comments: "///   in   [tokens, 2*d]  E, read".
std::string tensor_table(const Model& m, const std::string& indent) {
  std::size_t nw = 0, sw = 0;
  for (const TensorModel& t : m.tensors) {
    nw = std::max(nw, t.name.size());
    sw = std::max(sw, t.shape.size());
  }
  std::string out;
  for (const TensorModel& t : m.tensors)
    out += fmt::format("{}///   {:<{}}  {:<{}}  {}, {}\n", indent, t.name, nw, t.shape, sw, t.element ? "E" : "fp32",
                       t.access_text());
  return out;
}

std::string summary_of(const Model& m) {
  return m.spec.summary.empty() ? m.op + " (spec.json gives no summary)." : m.spec.summary;
}

/// "tokens == 0 || d == 0" over `prefix` ("a." or "").
std::string empty_condition(const Model& m, const std::string& prefix) {
  std::string s;
  for (const std::string& d : m.empty_dims) s += (s.empty() ? "" : " || ") + prefix + d + " == 0";
  return s;
}

/// Parameters of the public API and of make_args: the tensors, then the dims (S's launcher order).
std::vector<std::string> api_params(const Model& m, const std::string& e, bool names) {
  std::vector<std::string> v;
  for (const TensorModel& t : m.tensors) v.push_back(t.pointer(e) + (names ? " " + t.name : ""));
  for (const std::string& d : m.dims) v.push_back(std::string("std::int64_t") + (names ? " " + d : ""));
  return v;
}

std::vector<std::string> with(std::vector<std::string> v, const std::string& last) {
  v.push_back(last);
  return v;
}

/// "tokens or d is 0", for doc comments.
std::string empty_words(const Model& m) {
  std::string s;
  for (std::size_t i = 0; i < m.empty_dims.size(); ++i)
    s += (i == 0 ? "" : i + 1 == m.empty_dims.size() ? " or " : ", ") + m.empty_dims[i];
  return s + " is 0";
}

std::vector<std::string> call_args(const Model& m) {
  std::vector<std::string> v;
  for (const TensorModel& t : m.tensors) v.push_back(t.name);
  for (const std::string& d : m.dims) v.push_back(d);
  return v;
}

// ---- args.hpp -------------------------------------------------------------------------------------

std::string args_hpp(const Model& m) {
  std::string o = header(m, fmt::format("kernels/{}/args.hpp: one call's arguments and the checks every kernel of the op "
                                        "shares, from spec.json. Host-only (g++ and nvcc); makes no CUDA call, so it runs "
                                        "before anything touches a device.",
                                        m.op));
  o += fmt::format(
      "#pragma once\n\n"
      "#include <cstddef>\n#include <cstdint>\n#include <limits>\n\n"
      "#include <ktune/dtype.hpp>\n#include <ktune/status.hpp>\n\n"
      "namespace ktune::ops::{0} {{\n\n",
      m.op);
  o += "/// Arguments of one call. Every tensor is contiguous (row-major, no strides), as S takes it:\n";
  o += tensor_table(m, "");
  o += "/// \\tparam E float, __half or __nv_bfloat16: the op's dtype (fp32 tensors are float whatever E is)\n";
  o += "template <class E>\nstruct Args {\n";
  std::size_t w = 0;
  for (const TensorModel& t : m.tensors) w = std::max(w, t.pointer().size() + 1 + t.name.size() + 11);
  for (const TensorModel& t : m.tensors)
    o += fmt::format("  {:<{}}  ///< {}, {}\n", t.pointer() + " " + t.name + " = nullptr;", w, t.shape, t.access_text());
  for (const std::string& d : m.dims) o += fmt::format("  std::int64_t {} = 0;\n", d);
  o += "};\n\n";
  o += fmt::format("/// Tensors of the op, in spec order: the order of Args, of S's launcher and of Harness::tensors().\n"
                   "inline constexpr int tensor_count = {};\n\n",
                   m.tensors.size());
  o += fmt::format("/// The shape key of tuned tables: the spec's tokens_dim ({}) and width_dim ({}).\n", m.spec.tokens_dim,
                   m.spec.width_dim);
  o += fmt::format("template <class E> constexpr std::int64_t tokens(const Args<E>& a) {{ return a.{}; }}\n", m.spec.tokens_dim);
  o += fmt::format("template <class E> constexpr std::int64_t width(const Args<E>& a) {{ return a.{}; }}\n\n", m.spec.width_dim);
  if (m.empty_dims.empty()) {
    o += "/// No element to compute: never, since no tensor's shape uses a dimension.\n"
         "template <class E> constexpr bool is_empty(const Args<E>&) { return false; }\n\n";
  } else {
    o += doc_lines(fmt::format("No element to compute: some tensor has no elements ({}). Such a call is a "
                               "successful no-op that launches nothing, whatever its pointers.",
                               empty_words(m)),
                   "");
    o += fmt::format("template <class E> constexpr bool is_empty(const Args<E>& a) {{ return {}; }}\n\n",
                     empty_condition(m, "a."));
  }
  o += "namespace detail {\n"
       "inline bool aligned_to(const void* p, std::size_t bytes) { return reinterpret_cast<std::uintptr_t>(p) % bytes == 0; }\n\n"
       "/// The product of the `count` non-negative `factors` into `n`; false (n = 0) when it overflows 64 bits.\n"
       "constexpr bool product(const std::int64_t* factors, int count, std::int64_t& n) {\n"
       "  n = 0;\n"
       "  for (int i = 0; i < count; ++i)\n"
       "    if (factors[i] == 0) return true;  // an empty tensor, however large the other factors\n"
       "  n = 1;\n"
       "  for (int i = 0; i < count; ++i) {\n"
       "    if (n > std::numeric_limits<std::int64_t>::max() / factors[i]) {\n"
       "      n = 0;\n"
       "      return false;\n"
       "    }\n"
       "    n *= factors[i];\n"
       "  }\n"
       "  return true;\n"
       "}\n"
       "}  // namespace detail\n\n";
  std::string order;
  for (std::size_t k = 0; k < m.tensors.size(); ++k) order += fmt::format("{}{} {}", k ? ", " : "", k, m.tensors[k].name);
  o += doc_lines(fmt::format("Elements of tensor `k` ({}) for the dims of `a` (non-negative): spec.json's shapes in "
                             "64-bit integers. False when the count overflows 64 bits.",
                             order),
                 "");
  o += "template <class E>\nconstexpr bool elements(const Args<E>& a, int k, std::int64_t& n) {\n  switch (k) {\n";
  for (std::size_t k = 0; k < m.tensors.size(); ++k) {
    const TensorModel& t = m.tensors[k];
    const auto count = std::count(t.factors.begin(), t.factors.end(), ',') + 1;
    o += fmt::format("    case {}: {{  // {} {}\n      const std::int64_t f[] = {{{}}};\n      return detail::product(f, {}, n);\n    }}\n",
                     k, t.name, t.shape, t.factors, count);
  }
  o += "    default: break;\n  }\n  n = 0;\n  return false;\n}\n\n";
  o += "/// Args from the public API's parameters: the tensors, then the dimensions, as S's launcher takes them.\n";
  o += "template <class E>\n" + wrap_list("constexpr Args<E> make_args(", api_params(m, "E", true), ") {");
  o += wrap_list("  return {", call_args(m), "};");
  o += "}\n\n";

  o += "/// Checks that hold for every kernel of the op: sizes, pointers, element alignment, and that every\n"
       "/// tensor's bytes fit a signed 64-bit offset. An empty call (is_empty) is valid whatever its pointers\n"
       "/// (an empty tensor may have a null data pointer).\n";
  o += "template <class E>\nStatus validate(const Args<E>& a) {\n";
  o += fmt::format("  static_assert(ktune::is_element_v<E>, \"{} supports float, __half and __nv_bfloat16 elements.\");\n",
                   m.op);
  for (const std::string& d : m.dims)
    o += if_return("a." + d + " < 0", fmt::format("return Status::invalid(\"{}: {} is negative\");", m.op, d));
  o += "  if (is_empty(a)) return Status::success();\n";
  for (const TensorModel& t : m.tensors)
    o += if_return("a." + t.name + " == nullptr", fmt::format("return Status::invalid(\"{}: {} is a null pointer\");", m.op, t.name));
  for (const TensorModel& t : m.tensors)
    o += if_return(fmt::format("!detail::aligned_to(a.{}, sizeof({}))", t.name, t.element ? "E" : "float"),
                   fmt::format("return Status::invalid(\"{}: {} is not aligned to its element size\");", m.op, t.name));
  o += "  std::int64_t n = 0;\n";
  for (std::size_t k = 0; k < m.tensors.size(); ++k) {
    const TensorModel& t = m.tensors[k];
    o += fmt::format("  if (!elements(a, {}, n) || n > std::numeric_limits<std::int64_t>::max() / "
                     "static_cast<std::int64_t>(sizeof({})))\n"
                     "    return Status::too_large(\"{}: {} {} has more bytes than a 64-bit offset addresses\");\n",
                     k, t.element ? "E" : "float", m.op, t.name, t.shape);
  }
  o += "  return Status::success();\n}\n\n";
  o += fmt::format("}}  // namespace ktune::ops::{}\n", m.op);
  return o;
}

// ---- original.cuh ---------------------------------------------------------------------------------

std::string original_cuh(const Model& m) {
  std::string launch_args;
  for (const TensorModel& t : m.tensors) launch_args += (launch_args.empty() ? "" : ", ") + ("a." + t.name);
  for (const std::string& d : m.dims) launch_args += ", a." + d;
  std::string o = header(
      m, fmt::format("kernels/{0}/original.cuh: the original kernel S ({1}), verbatim inside "
                     "ktune::ops::{0}::original::source, and the glue ktune reaches it through. S's leading block of "
                     "#include lines is hoisted above the namespace. S is opaque: ktune calls only its launcher "
                     "(source::launch<E>), so there is no kernel pointer for the device check, which the benchmark "
                     "skips for S.\n\n"
                     "Every translation unit of the kernel folder (each variant shard, the public API) includes this "
                     "file, so S sits in an unnamed namespace: its non-template functions, kernels and __device__ "
                     "variables get internal linkage and are never defined twice at link time.",
                     m.op, m.s_name));
  o += fmt::format(
      "#pragma once\n\n"
      "#include <cuda_runtime.h>\n\n"
      "#include <ktune/registry.hpp>\n#include <ktune/status.hpp>\n\n"
      "#include \"args.hpp\"\n\n",
      m.op, m.s_name);
  if (!m.source.leading.empty()) {
    o += fmt::format("// ---- {}: its leading block ----\n", m.s_name);
    o += m.source.leading;
    if (o.back() != '\n') o += "\n";
    o += "\n";
  }
  o += fmt::format("namespace ktune::ops::{}::original {{\nnamespace source {{\nnamespace {{\n\n", m.op);
  o += fmt::format("// ---- {} from line {} ----\n", m.s_name, m.source.body_line);
  o += m.source.body;
  if (!o.empty() && o.back() != '\n') o += "\n";
  o += fmt::format("// ---- end of {} ----\n\n", m.s_name);
  o += "}  // namespace\n}  // namespace source\n\n";
  o += "/// What S accepts: every call validate() accepts (the documented form of S: any valid contiguous call).\n"
       "template <class E>\n"
       "ktune::Status can_implement(const Args<E>& a) {\n"
       "  return validate(a);\n"
       "}\n\n";
  o += "/// validate(), then S's launcher on `stream`; an empty call succeeds without launching. A launcher that\n"
       "/// returns an error gives a Status carrying that cudaError_t.\n";
  o += fmt::format(
      "template <class E>\n"
      "ktune::Status run(const Args<E>& a, cudaStream_t stream) {{\n"
      "  KTUNE_TRY(validate(a));\n"
      "  if (is_empty(a)) return ktune::Status::success();\n"
      "  const cudaError_t e = source::launch<E>({}, stream);\n"
      "  return ktune::Status::from_cuda(e, \"{} original: S's launcher returned an error\");\n"
      "}}\n\n",
      launch_args, m.op);
  o += "/// S's kernels are behind its launcher: no kernel pointer (func = nullptr), so no device check.\n"
       "template <class E>\n"
       "ktune::KernelResources resources(const Args<E>&) {\n"
       "  return ktune::KernelResources{};\n"
       "}\n\n";
  o += fmt::format("}}  // namespace ktune::ops::{}::original\n", m.op);
  return o;
}

// ---- harness.hpp ----------------------------------------------------------------------------------

std::string harness_hpp(const Model& m) {
  std::string names, typed, access, order;
  for (const TensorModel& t : m.tensors) {
    names += (names.empty() ? "" : ", ") + ("\"" + t.name + "\"");
    typed += std::string(typed.empty() ? "" : ", ") + (t.element ? "true" : "false");
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
      "#include <cstddef>\n#include <cstdint>\n#include <memory>\n#include <stdexcept>\n#include <string>\n#include <vector>\n\n"
      "#include <ktune/dtype.hpp>\n#include <ktune/harness.hpp>\n#include <ktune/random.hpp>\n#include <ktune/status.hpp>\n\n"
      "#include \"args.hpp\"\n#include \"original.cuh\"\n\n"
      "namespace ktune::ops::{0} {{\n\n",
      m.op);
  o += fmt::format("/// Tensor order: {} (as in spec.json).\n", order);
  o += "class Harness final : public ktune::Harness {\n public:\n";
  o += fmt::format("  static constexpr const char* names[tensor_count] = {{{}}};\n", names);
  o += fmt::format("  static constexpr bool element_typed[tensor_count] = {{{}}};  ///< false: an fp32 tensor\n", typed);
  o += fmt::format("  static constexpr ktune::Access access[tensor_count] = {{{}}};\n\n", access);
  o += "  /// Inputs are uniform in [lo, hi): asymmetric, so 0 is no special point of the range, and the one draw\n"
       "  /// that rounds to exactly 0 (probability 2^-24) becomes `instead_of_zero`: no input is ever 0.\n"
       "  static constexpr float lo = -3.0f, hi = 3.125f, instead_of_zero = 0.125f;\n\n";
  o += "  /// Input value `i` of the stream `seed` (one stream over all inputs, in tensor order).\n"
       "  static float draw(std::uint64_t seed, std::uint64_t i) {\n"
       "    const float v = ktune::uniform_at(seed, i, lo, hi);\n"
       "    return v == 0.0f ? instead_of_zero : v;\n"
       "  }\n\n";
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
  o += "      out.push_back({names[k], static_cast<std::size_t>(n), element_typed[k] ? ktune::size_of(dtype) : 4, access[k]});\n"
       "    }\n"
       "    return out;\n"
       "  }\n\n";
  o += "  void fill_inputs(const ktune::Shape& shape, ktune::DType dtype, std::uint64_t seed,\n"
       "                   ktune::HostTensors& host) const override {\n"
       "    const std::vector<ktune::TensorInfo> info = tensors(shape, dtype);\n"
       "    host.resize(info.size());\n"
       "    std::uint64_t index = 0;\n"
       "    for (std::size_t k = 0; k < info.size(); ++k) {\n"
       "      host[k].resize(info[k].bytes());\n"
       "      if (info[k].access == ktune::Access::write) continue;\n"
       "      ktune::visit_dtype(element_typed[k] ? dtype : ktune::DType::f32, [&](auto element) {\n"
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
  o += "  /// The dims of `shape`, with null tensor pointers.\n"
       "  template <class E>\n"
       "  static Args<E> dims_of(const ktune::Shape& shape) {\n"
       "    Args<E> a{};\n";
  for (const std::string& d : m.dims) o += fmt::format("    a.{0} = shape.at(\"{0}\");\n", d);
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
       "      ktune::visit_dtype(element_typed[k] ? dtype : ktune::DType::f32, [&](auto element) {\n"
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

// ---- family_base.cuh ------------------------------------------------------------------------------

std::string family_base_cuh(const Model& m) {
  std::string o = header(m, fmt::format("kernels/{0}/family_base.cuh: what every family of {0} shares and the LLM does "
                                        "not write: the op's name, Args, Harness and S (original_*), on top of the LLM's "
                                        "Space (space.hpp). family.cuh derives `struct Family : FamilyBase` and adds the "
                                        "family's own can_implement, run, resources and enqueue (docs/kernel-folder.md; "
                                        "include/ktune/instantiate.hpp lists what a family provides).",
                                        m.op));
  o += fmt::format(
      "#pragma once\n\n"
      "#include <cuda_runtime.h>\n\n"
      "#include <cstddef>\n#include <cstdint>\n#include <limits>\n#include <type_traits>\n#include <utility>\n\n"
      "#include <ktune/arch.hpp>\n#include <ktune/dtype.hpp>\n#include <ktune/family.hpp>\n#include <ktune/intrinsics.cuh>\n"
      "#include <ktune/launch.hpp>\n"
      "#include <ktune/registry.hpp>\n#include <ktune/space.hpp>\n#include <ktune/status.hpp>\n\n"
      "#include \"args.hpp\"\n#include \"harness.hpp\"\n#include \"original.cuh\"\n#include \"space.hpp\"\n\n"
      "namespace ktune::ops::{0} {{\n\n",
      m.op);
  o += "namespace derived {\n"
       "template <class S, class = void>\n"
       "struct has_unaligned_function : std::false_type {};\n"
       "template <class S>\n"
       "struct has_unaligned_function<S, std::void_t<decltype(S::unaligned_point(4))>> : std::true_type {};\n\n"
       "/// Whether `p` is feasible on every architecture ktune supports, for one element size.\n"
       "constexpr bool feasible_everywhere(const Space::Point& p, int element_bytes) {\n"
       "  for (int arch : ktune::supported_archs)\n"
       "    if (!Space::feasible(p, ktune::arch_limits(arch), element_bytes).ok()) return false;\n"
       "  return true;\n"
       "}\n\n"
       "template <class S>\n"
       "constexpr bool unaligned_feasible_everywhere() {\n"
       "  if constexpr (has_unaligned_function<S>::value)\n"
       "    return feasible_everywhere(S::unaligned_point(4), 4) && feasible_everywhere(S::unaligned_point(2), 2);\n"
       "  else\n"
       "    return true;  // the assertion on its form fires instead\n"
       "}\n\n"
       "/// The configuration type of Space::unaligned_point(ElementBytes).\n"
       "template <int ElementBytes>\n"
       "struct UnalignedConfig {\n"
       "  static constexpr Space::Point point = Space::unaligned_point(ElementBytes);\n"
       "  using type = decltype(ktune::detail::config_of<Space, point>(std::make_index_sequence<Space::space.rank>{}));\n"
       "};\n"
       "}  // namespace derived\n\n";
  o += "// The public API relies on these two points on every GPU it runs on: say so at compile time, in words.\n"
       "static_assert(derived::has_unaligned_function<Space>::value,\n"
       "              \"space.hpp: Space::unaligned_point must be a function of the element size: \"\n"
       "              \"static constexpr Point unaligned_point(int element_bytes).\");\n"
       "static_assert(derived::feasible_everywhere(Space::default_point, 4) &&\n"
       "                  derived::feasible_everywhere(Space::default_point, 2),\n"
       "              \"space.hpp: Space::default_point must be feasible on every architecture of ktune::supported_archs for \"\n"
       "              \"4- and 2-byte elements (no PDL, no cluster, <= 48 KB of shared memory): it is the general \"\n"
       "              \"configuration wherever no tuned row applies.\");\n"
       "static_assert(derived::unaligned_feasible_everywhere<Space>(),\n"
       "              \"space.hpp: Space::unaligned_point(element_bytes) must be feasible on every architecture of \"\n"
       "              \"ktune::supported_archs for its element size: the public API runs it for calls no other \"\n"
       "              \"configuration can implement.\");\n\n";
  o += fmt::format(
      "/// The family's base: the LLM's Space plus what follows from S and spec.json. family.cuh adds, as\n"
      "/// static member templates of `struct Family : FamilyBase`:\n"
      "///   can_implement<Cfg, E>(const Args<E>&)          validate() plus what Cfg needs; no CUDA call\n"
      "///   enqueue<Cfg, E>(const Args<E>&, cudaStream_t)  the launch alone (ktune::launch), for a call\n"
      "///                                                  can_implement accepted and that is not empty\n"
      "///   resources<Cfg, E>(const Args<E>&)              kernel pointer, threads, dynamic smem, cluster\n"
      "/// A variant runs through ktune::run_variant<Family, Cfg, E> (ktune/family.hpp): can_implement, an\n"
      "/// empty call succeeds without launching, then enqueue.\n"
      "struct FamilyBase : Space {{\n"
      "  static constexpr const char* name = \"{0}\";\n"
      "  template <class E> using Args = ops::{0}::Args<E>;\n"
      "  using Harness = ops::{0}::Harness;\n\n"
      "  /// The configuration type of Space::unaligned_point(ElementBytes): the public API's fallback for calls\n"
      "  /// the tuned configuration cannot implement.\n"
      "  template <int ElementBytes> using unaligned_config = typename derived::UnalignedConfig<ElementBytes>::type;\n\n"
      "  template <class E>\n"
      "  static ktune::Status original_can_implement(const Args<E>& a) {{\n"
      "    return original::can_implement(a);\n"
      "  }}\n"
      "  template <class E>\n"
      "  static ktune::Status original_run(const Args<E>& a, cudaStream_t stream) {{\n"
      "    return original::run(a, stream);\n"
      "  }}\n"
      "  template <class E>\n"
      "  static ktune::KernelResources original_resources(const Args<E>& a) {{\n"
      "    return original::resources(a);\n"
      "  }}\n"
      "}};\n\n"
      "}}  // namespace ktune::ops::{0}\n",
      m.op);
  return o;
}

// ---- <op>.hpp -------------------------------------------------------------------------------------

std::string api_doc(const Model& m) {
  std::string o = doc_lines(summary_of(m), "");
  o += "///\n";
  o += tensor_table(m, "");
  o += "///\n";
  std::string text =
      "Raw device pointers on the current device; every tensor contiguous (row-major, no strides), as the "
      "original kernel S takes them.";
  if (!m.empty_dims.empty())
    text += " A call where some tensor has no elements (" + empty_words(m) + ") is a successful no-op.";
  text += " Errors (nothing launched, nothing written): null pointers, negative sizes, pointers misaligned to their "
          "element, tensors too large for 64-bit byte offsets. Calls the tuned variant cannot implement (alignment, "
          "sizes) run the family's unaligned configuration. Written tensors must not overlap other tensors. "
          "Graph-capturable (no synchronisation, no allocation, device facts cached per device).";
  o += doc_lines(text, "");
  return o;
}

std::string op_hpp(const Model& m) {
  std::string o = header(m, fmt::format("kernels/{0}/{0}.hpp: host-only declarations of the public API, for .cpp files "
                                        "compiled by a host compiler (a PyTorch binding, say). Link ktune::kernels, which "
                                        "compiles the definitions ({0}.cu) for fp32, fp16 and bf16. CUDA code includes "
                                        "{0}.cuh instead and needs nothing but the CUDA toolkit.",
                                        m.op));
  o += fmt::format(
      "#pragma once\n\n"
      "#include <cuda_runtime_api.h>\n\n"
      "#include <cstdint>\n\n"
      "#include <ktune/dtype.hpp>\n#include <ktune/status.hpp>\n#include <ktune/tuned.hpp>\n\n"
      "namespace ktune {{\n\n",
      m.op);
  o += api_doc(m);
  o += "/// \\tparam E float, __half or __nv_bfloat16\n";
  o += "template <class E>\n" +
       wrap_list("[[nodiscard]] Status " + m.op + "(", with(api_params(m, "E", true), "cudaStream_t stream = nullptr"), ");") +
       "\n";
  o += "/// The same with the element type given at run time (for bindings). An unknown dtype is refused\n"
       "/// before anything else happens.\n";
  std::vector<std::string> dtype_params = {"DType dtype"};
  for (const std::string& p : api_params(m, "void", true)) dtype_params.push_back(p);
  o += wrap_list("[[nodiscard]] Status " + m.op + "(", with(dtype_params, "cudaStream_t stream = nullptr"), ");") + "\n";
  o += doc_lines(fmt::format("Which variant a call would use on the current device, given its `tokens` (the spec's "
                             "tokens_dim, {}) and `width` (its width_dim, {}), and whether it is tuned (for this device "
                             "or architecture) or the general configuration. Calls that variant cannot implement "
                             "(alignment, sizes) run the family's unaligned configuration instead.",
                             m.spec.tokens_dim, m.spec.width_dim),
                 "");
  o += wrap_list("[[nodiscard]] Status " + m.op + "_choice(",
                 {"DType dtype", "std::int64_t tokens", "std::int64_t width", "TunedChoice& out"}, ");") +
       "\n";
  o += "}  // namespace ktune\n";
  return o;
}

// ---- <op>.cuh -------------------------------------------------------------------------------------

std::string op_cuh(const Model& m) {
  std::string o = header(m, fmt::format("kernels/{0}/{0}.cuh: the public API of {0} (DESIGN.md contract 4). Include it "
                                        "from CUDA code; it needs only the CUDA toolkit and the C++17 standard library. "
                                        "Declarations and documentation: {0}.hpp.",
                                        m.op));
  o += fmt::format(
      "#pragma once\n\n"
      "#include <cuda_runtime.h>\n\n"
      "#include <cstdint>\n\n"
      "#include <ktune/device_info.hpp>\n#include <ktune/dtype.hpp>\n#include <ktune/status.hpp>\n#include <ktune/tuned.hpp>\n\n"
      "#include \"args.hpp\"\n#include \"family.cuh\"\n#include \"{0}.hpp\"\n#include \"space.hpp\"\n#include \"tuned.cuh\"\n\n"
      "namespace ktune {{\n\n"
      "namespace ops::{0} {{\n\n"
      "/// validate -> current device (cached) -> tuned row -> its configuration, or the family's unaligned\n"
      "/// configuration when that one cannot implement the call. No allocation, no synchronisation.\n"
      "template <class E>\n"
      "Status dispatch(const Args<E>& a, cudaStream_t stream) {{\n"
      "  KTUNE_TRY(validate(a));\n"
      "  if (is_empty(a)) return Status::success();\n"
      "  const DeviceInfo* dev = nullptr;\n"
      "  KTUNE_TRY(current_device(dev));\n"
      "  const TunedChoice c = ktune::lookup(tuned::entries, dev->table_arch, dev->name, dtype_v<E>, tokens(a), width(a));\n"
      "  return tuned::with_variant<E>(c.variant, [&](auto cfg) -> Status {{\n"
      "    using Cfg = decltype(cfg);\n"
      "    if (Family::can_implement<Cfg, E>(a).ok()) return Family::enqueue<Cfg, E>(a, stream);\n"
      "    return run_variant<Family, Family::unaligned_config<static_cast<int>(sizeof(E))>, E>(a, stream);\n"
      "  }});\n"
      "}}\n\n"
      "/// The tuned row (or the general configuration) for a call; no launch.\n"
      "inline Status choice(DType dtype, std::int64_t tokens, std::int64_t width, TunedChoice& out) {{\n"
      "  if (dtype != DType::f32 && dtype != DType::f16 && dtype != DType::bf16)\n"
      "    return Status::unsupported(\"{0}: unsupported dtype (fp32, fp16 and bf16 are)\");\n"
      "  if (tokens < 0 || width < 0) return Status::invalid(\"{0}_choice: tokens or width is negative\");\n"
      "  const DeviceInfo* dev = nullptr;\n"
      "  KTUNE_TRY(current_device(dev));\n"
      "  out = ktune::lookup(tuned::entries, dev->table_arch, dev->name, dtype, tokens, width);\n"
      "  if (out.variant < 0) out.id = tuned::general_id;\n"
      "  return Status::success();\n"
      "}}\n\n"
      "}}  // namespace ops::{0}\n\n",
      m.op);
  o += "template <class E>\n" + wrap_list("Status " + m.op + "(", with(api_params(m, "E", true), "cudaStream_t stream"), ") {");
  o += fmt::format("  static_assert(ktune::is_element_v<E>, \"{} supports float, __half and __nv_bfloat16 elements.\");\n", m.op);
  o += wrap_list(fmt::format("  return ktune::ops::{0}::dispatch(ktune::ops::{0}::make_args<E>(", m.op), call_args(m),
                 "), stream);");
  o += "}\n\n";
  o += "}  // namespace ktune\n";
  return o;
}

// ---- <op>.cu --------------------------------------------------------------------------------------

std::string op_cu(const Model& m) {
  std::string o = header(m, fmt::format("kernels/{0}/{0}.cu: the public API compiled for fp32, fp16 and bf16, plus the "
                                        "runtime-dtype entry and the choice query, for ktune::kernels (host-compiler "
                                        "users of {0}.hpp).",
                                        m.op));
  o += fmt::format(
      "#include \"{0}.cuh\"\n\n"
      "namespace ktune {{\n\n",
      m.op);
  for (const char* e : {"float", "__half", "__nv_bfloat16"})
    o += wrap_list(fmt::format("template Status {}<{}>(", m.op, e), with(api_params(m, e, false), "cudaStream_t"), ");");
  o += "\n";
  std::vector<std::string> dtype_params = {"DType dtype"};
  for (const std::string& p : api_params(m, "void", true)) dtype_params.push_back(p);
  o += wrap_list("Status " + m.op + "(", with(dtype_params, "cudaStream_t stream"), ") {");
  o += "  switch (dtype) {\n";
  const std::pair<const char*, const char*> types[] = {{"f32", "float"}, {"f16", "__half"}, {"bf16", "__nv_bfloat16"}};
  for (const auto& [tag, type] : types) {
    std::vector<std::string> args;
    for (const TensorModel& t : m.tensors)
      args.push_back(t.element ? fmt::format("static_cast<{}>({})", t.pointer(type), t.name) : t.name);
    for (const std::string& d : m.dims) args.push_back(d);
    args.push_back("stream");
    o += fmt::format("    case ktune::DType::{}:\n", tag);
    o += wrap_list(fmt::format("      return ktune::{}<{}>(", m.op, type), args, ");");
  }
  o += fmt::format("  }}\n  return ktune::Status::unsupported(\"{}: unsupported dtype (fp32, fp16 and bf16 are)\");\n}}\n\n", m.op);
  o += fmt::format("Status {0}_choice(DType dtype, std::int64_t tokens, std::int64_t width, TunedChoice& out) {{\n"
                   "  return ops::{0}::choice(dtype, tokens, width, out);\n}}\n\n",
                   m.op);
  o += "}  // namespace ktune\n";
  return o;
}

}  // namespace

std::vector<DerivedFile> emit_files(const Model& m) {
  return {{"spec.json", m.spec_json},
          {"args.hpp", args_hpp(m)},
          {"original.cuh", original_cuh(m)},
          {"harness.hpp", harness_hpp(m)},
          {"family_base.cuh", family_base_cuh(m)},
          {m.op + ".hpp", op_hpp(m)},
          {m.op + ".cuh", op_cuh(m)},
          {m.op + ".cu", op_cu(m)}};
}

}  // namespace ktune::gen::derive
