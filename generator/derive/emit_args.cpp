// generator/derive/emit_args.cpp: args.hpp (one call's arguments, the op's shared validation) and
// original.cuh (S verbatim, and the glue that validates a call and runs S's launcher).
#include <fmt/format.h>

#include <algorithm>
#include <string>

#include "generator/derive/emit_detail.hpp"

namespace ktune::gen::derive::detail {

namespace {

/// "  if (cond) ret;" on one line, or with `ret` on the next when that passes 120 columns.
std::string if_return(const std::string& cond, const std::string& ret) {
  const std::string one = "  if (" + cond + ") " + ret + "\n";
  return one.size() <= 121 ? one : "  if (" + cond + ")\n    " + ret + "\n";
}

bool any_float_scalar(const Model& m) {
  for (const ScalarModel& sc : m.scalars)
    if (sc.type == ScalarType::float_) return true;
  return false;
}

/// "tokens == 0 || d == 0" over `prefix` ("a." or "").
std::string empty_condition(const Model& m, const std::string& prefix) {
  std::string s;
  for (const std::string& d : m.empty_dims) s += (s.empty() ? "" : " || ") + prefix + d + " == 0";
  return s;
}

}  // namespace

// ---- args.hpp -------------------------------------------------------------------------------------

std::string args_hpp(const Model& m) {
  std::string o = header(m, fmt::format("kernels/{}/args.hpp: one call's arguments and the checks every kernel of the op "
                                        "shares, from spec.json. Host-only (g++ and nvcc); makes no CUDA call, so it runs "
                                        "before anything touches a device.",
                                        m.op));
  o += fmt::format(
      "#pragma once\n\n"
      "{1}#include <cstddef>\n#include <cstdint>\n#include <limits>\n\n"
      "#include <ktune/dtype.hpp>\n#include <ktune/status.hpp>\n\n"
      "namespace ktune::ops::{0} {{\n\n",
      m.op, any_float_scalar(m) ? "#include <cmath>\n" : "");
  o += "/// Arguments of one call. Every tensor is contiguous (row-major, no strides), as S takes it:\n";
  o += tensor_table(m, "");
  if (m.any_index())
    o += doc_lines("An index tensor's values must lie in its range: the caller's promise, which validate() cannot "
                   "check without reading device memory.",
                   "");
  if (!m.scalars.empty()) {
    o += "/// Scalars (spec.json's \"scalars\"), after the dimensions as in S's launcher:\n";
    o += scalar_table(m, "");
  }
  o += m.any_index() ? "/// \\tparam E float, __half or __nv_bfloat16: the op's dtype (fp32 and index tensors keep their dtype\n"
                       "///           whatever E is)\n"
                     : "/// \\tparam E float, __half or __nv_bfloat16: the op's dtype (fp32 tensors are float whatever E is)\n";
  o += "template <class E>\nstruct Args {\n";
  std::size_t w = 0;
  for (const TensorModel& t : m.tensors) w = std::max(w, t.pointer().size() + 1 + t.name.size() + 11);
  for (const TensorModel& t : m.tensors)
    o += fmt::format("  {:<{}}  ///< {}, {}\n", t.pointer() + " " + t.name + " = nullptr;", w, t.shape, t.access_text());
  for (const std::string& d : m.dims) o += fmt::format("  std::int64_t {} = 0;\n", d);
  for (const ScalarModel& sc : m.scalars) o += fmt::format("  {} {} = {};\n", sc.cpp_type, sc.name, sc.default_cpp);
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
                               "successful no-op that launches nothing, whatever its pointers{}.",
                               empty_words(m), m.scalars.empty() ? "" : " (validate() still refuses invalid scalars)"),
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
  o += m.scalars.empty()
           ? "/// Args from the public API's parameters: the tensors, then the dimensions, as S's launcher takes them.\n"
           : "/// Args from the public API's parameters: the tensors, the dimensions, then the scalars, as S's launcher\n"
             "/// takes them.\n";
  o += "template <class E>\n" + wrap_list("constexpr Args<E> make_args(", api_params(m, "E", true), ") {");
  o += wrap_list("  return {", call_args(m), "};");
  o += "}\n\n";

  o += m.scalars.empty()
           ? "/// Checks that hold for every kernel of the op: sizes, pointers, element alignment, and that every\n"
             "/// tensor's bytes fit a signed 64-bit offset. An empty call (is_empty) is valid whatever its pointers\n"
             "/// (an empty tensor may have a null data pointer).\n"
           : "/// Checks that hold for every kernel of the op: sizes, scalars (spec.json's \"valid\"; NaN never passes),\n"
             "/// pointers, element alignment, and that every tensor's bytes fit a signed 64-bit offset. An empty call\n"
             "/// (is_empty) with valid scalars is valid whatever its pointers (an empty tensor may have a null data\n"
             "/// pointer).\n";
  if (m.any_index())
    o += doc_lines("Index tensors' values are not checked: that they lie in their ranges is the caller's promise.", "");
  o += "template <class E>\nStatus validate(const Args<E>& a) {\n";
  o += fmt::format("  static_assert(ktune::is_element_v<E>, \"{} supports float, __half and __nv_bfloat16 elements.\");\n",
                   m.op);
  for (const std::string& d : m.dims)
    o += if_return("a." + d + " < 0", fmt::format("return Status::invalid(\"{}: {} is negative\");", m.op, d));
  // Written as !(valid) so that a NaN, for which every comparison is false, is refused.
  for (const ScalarModel& sc : m.scalars) {
    if (sc.valid_terms.empty()) continue;
    std::string cond;
    for (const std::string& t : sc.valid_terms) cond += (cond.empty() ? "" : " && ") + t;
    o += if_return("!(" + cond + ")",
                   fmt::format("return Status::invalid(\"{}: {} must be {}\");", m.op, sc.name, sc.valid_words));
  }
  o += "  if (is_empty(a)) return Status::success();\n";
  for (const TensorModel& t : m.tensors)
    o += if_return("a." + t.name + " == nullptr", fmt::format("return Status::invalid(\"{}: {} is a null pointer\");", m.op, t.name));
  for (const TensorModel& t : m.tensors)
    o += if_return(fmt::format("!detail::aligned_to(a.{}, sizeof({}))", t.name, t.value_type()),
                   fmt::format("return Status::invalid(\"{}: {} is not aligned to its element size\");", m.op, t.name));
  o += "  std::int64_t n = 0;\n";
  for (std::size_t k = 0; k < m.tensors.size(); ++k) {
    const TensorModel& t = m.tensors[k];
    o += fmt::format("  if (!elements(a, {}, n) || n > std::numeric_limits<std::int64_t>::max() / "
                     "static_cast<std::int64_t>(sizeof({})))\n"
                     "    return Status::too_large(\"{}: {} {} has more bytes than a 64-bit offset addresses\");\n",
                     k, t.value_type(), m.op, t.name, t.shape);
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
  for (const ScalarModel& sc : m.scalars) launch_args += ", a." + sc.name;
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

}  // namespace ktune::gen::derive::detail
