// generator/derive/emit_api.cpp: family_base.cuh (what every family of the op shares) and the public API:
// <op>.hpp (host-only declarations), <op>.cuh (dispatch through the tuned table), <op>.cu (its instantiations).
#include <fmt/format.h>

#include <string>
#include <utility>
#include <vector>

#include "generator/derive/emit_detail.hpp"

namespace ktune::gen::derive::detail {

namespace {

std::string summary_of(const Model& m) {
  return m.spec.summary.empty() ? m.op + " (spec.json gives no summary)." : m.spec.summary;
}

std::vector<std::string> with(std::vector<std::string> v, const std::string& last) {
  v.push_back(last);
  return v;
}

/// The public API's doc comment (<op>.hpp): the summary, the tensor table, what is valid, what errors.
std::string api_doc(const Model& m) {
  std::string o = doc_lines(summary_of(m), "");
  o += "///\n";
  o += tensor_table(m, "");
  if (!m.scalars.empty()) {
    o += "/// Scalars, after the dimensions (a value outside its rule is an error):\n";
    o += scalar_table(m, "");
  }
  o += "///\n";
  std::string text =
      "Raw device pointers on the current device; every tensor contiguous (row-major, no strides), as the "
      "original kernel S takes them.";
  if (!m.empty_dims.empty())
    text += " A call where some tensor has no elements (" + empty_words(m) + ")" +
            (m.scalars.empty() ? "" : " and every scalar is valid") + " is a successful no-op.";
  text += std::string(" Errors (nothing launched, nothing written): null pointers, negative sizes, ") +
          (m.scalars.empty() ? "" : "scalars outside their rules (NaN included), ") +
          "pointers misaligned to their element, tensors too large for 64-bit byte offsets.";
  if (m.any_index())
    text += " Index tensors' values must lie in their ranges: the caller's promise, which is not checked (that would "
            "read device memory).";
  text += " Calls the tuned variant cannot implement (alignment, "
          "sizes) run the family's unaligned configuration. Written tensors must not overlap other tensors. "
          "Graph-capturable (no synchronisation, no allocation, device facts cached per device).";
  o += doc_lines(text, "");
  return o;
}

}  // namespace

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
       wrap_list("[[nodiscard]] Status " + m.op + "(", with(api_params(m, "E", true, true), "cudaStream_t stream = nullptr"),
                 ");") +
       "\n";
  o += "/// The same with the element type given at run time (for bindings). An unknown dtype is refused\n"
       "/// before anything else happens.\n";
  std::vector<std::string> dtype_params = {"DType dtype"};
  for (const std::string& p : api_params(m, "void", true, true)) dtype_params.push_back(p);
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
      args.push_back(t.element() ? fmt::format("static_cast<{}>({})", t.pointer(type), t.name) : t.name);
    for (const std::string& d : m.dims) args.push_back(d);
    for (const ScalarModel& sc : m.scalars) args.push_back(sc.name);
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

}  // namespace ktune::gen::derive::detail
