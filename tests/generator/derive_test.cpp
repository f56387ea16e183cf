// tests/generator/derive_test.cpp: the kernel folder derived from S and spec.json (generator/derive/),
// on the sample op gelu_tanh_and_mul (tests/generator/data/gelu_tanh_and_mul/): determinism, banners,
// the shapes the spec implies, clear errors for inputs it cannot take, and, with nvcc, that the derived
// folder compiles with the scripted LLM answers (all but does_not_compile.json) and fails with that one.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "generator/derive/derive.hpp"
#include "generator/derive/source.hpp"
#include "generator/record/files.hpp"
#include "generator/toolchain/process.hpp"

namespace fs = std::filesystem;
using namespace ktune::gen;

namespace {

const std::string op = "gelu_tanh_and_mul";
const fs::path sample = fs::path(KTUNE_TEST_DATA_DIR) / op;

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  EXPECT_TRUE(in.good()) << p;
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string sample_s() { return slurp(sample / "original.cu"); }
std::string sample_spec() { return slurp(sample / "spec.json"); }

DeriveResult derive_sample() { return derive_kernel_folder(op, sample_s(), "original.cu", sample_spec()); }

const DerivedFile* find(const DeriveResult& r, const std::string& name) {
  for (const DerivedFile& f : r.files)
    if (f.name == name) return &f;
  return nullptr;
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

/// The sample's spec with one replacement applied (the text must occur).
std::string spec_with(const std::string& from, const std::string& to) {
  std::string s = sample_spec();
  const auto at = s.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos) s.replace(at, from.size(), to);
  return s;
}

std::string derive_error(const std::string& name, const std::string& s, const std::string& spec) {
  const DeriveResult r = derive_kernel_folder(name, s, "my_kernel.cu", spec);
  EXPECT_FALSE(r.ok()) << "derivation of " << name << " should fail";
  EXPECT_TRUE(r.files.empty());
  return r.error;
}

/// A small S in the documented form for the error cases: `params` replaces the launcher's parameters.
std::string tiny_s(const std::string& params = "const T* in, T* out, int64_t tokens, int64_t d, cudaStream_t stream") {
  return "#include <cuda_runtime.h>\n#include <cstdint>\n\n"
         "template <typename T>\n__global__ void k(const T* in, T* out, int64_t n) {}\n\n"
         "template <typename T>\ncudaError_t launch(" + params + ") {\n"
         "  k<T><<<1, 32, 0, stream>>>(in, out, tokens * d);\n  return cudaGetLastError();\n}\n";
}

}  // namespace

// ---- what is derived ----------------------------------------------------------------------------

TEST(DeriveFolder, IsDeterministicAndEveryFileHasTheBanner) {
  const DeriveResult a = derive_sample();
  ASSERT_TRUE(a.ok()) << a.error;
  const DeriveResult b = derive_sample();
  ASSERT_EQ(a.files.size(), b.files.size());
  for (std::size_t i = 0; i < a.files.size(); ++i) {
    EXPECT_EQ(a.files[i].name, b.files[i].name);
    EXPECT_EQ(a.files[i].content, b.files[i].content) << a.files[i].name << " differs between two derivations";
    if (a.files[i].name == "spec.json") continue;  // the user's file, verbatim: JSON has no comments
    const std::string& text = a.files[i].content;
    EXPECT_EQ(text.rfind("// Derived by ktune ", 0), 0u) << a.files[i].name;
    EXPECT_TRUE(contains(text.substr(0, 400), "original.cu")) << a.files[i].name << ": the banner names S";
    EXPECT_TRUE(contains(text.substr(0, 400), "Do not edit")) << a.files[i].name;
    EXPECT_FALSE(contains(text, "\r")) << a.files[i].name;
  }
}

TEST(DeriveFolder, WritesTheContractsFilesAndLeavesTheLlmsAlone) {
  const DeriveResult r = derive_sample();
  ASSERT_TRUE(r.ok()) << r.error;
  std::vector<std::string> names;
  for (const DerivedFile& f : r.files) names.push_back(f.name);
  const std::vector<std::string> want = {"spec.json",       "args.hpp",           "original.cuh",       "harness.hpp",
                                         "family_base.cuh", op + ".hpp",          op + ".cuh",          op + ".cu"};
  EXPECT_EQ(names, want);
  for (const char* llm : llm_written_files) EXPECT_EQ(find(r, llm), nullptr) << llm;
  EXPECT_EQ(find(r, "spec.json")->content, sample_spec());
}

TEST(DeriveFolder, BannersNameTheInputsByHash) {
  const DeriveResult r = derive_sample();
  ASSERT_TRUE(r.ok()) << r.error;
  const std::string& args = find(r, "args.hpp")->content;
  const DeriveResult other = derive_kernel_folder(op, sample_s() + "\n// changed\n", "original.cu", sample_spec());
  ASSERT_TRUE(other.ok()) << other.error;
  EXPECT_NE(args.substr(0, 200), find(other, "args.hpp")->content.substr(0, 200)) << "S's hash is in the banner";
}

TEST(DeriveFolder, ArgsFollowTheSpec) {
  const DeriveResult r = derive_sample();
  ASSERT_TRUE(r.ok()) << r.error;
  const std::string& a = find(r, "args.hpp")->content;
  EXPECT_TRUE(contains(a, "namespace ktune::ops::gelu_tanh_and_mul {"));
  EXPECT_TRUE(contains(a, "  const E* in = nullptr;  ///< [tokens, 2*d], read\n"));
  EXPECT_TRUE(contains(a, "  E* out = nullptr;       ///< [tokens, d], written\n"));
  EXPECT_TRUE(contains(a, "  std::int64_t tokens = 0;\n  std::int64_t d = 0;\n"));
  EXPECT_TRUE(contains(a, "const std::int64_t f[] = {a.tokens, 2, a.d};"));
  EXPECT_TRUE(contains(a, "const std::int64_t f[] = {a.tokens, a.d};"));
  EXPECT_TRUE(contains(a, "return a.tokens == 0 || a.d == 0;"));
  EXPECT_TRUE(contains(a, "constexpr std::int64_t width(const Args<E>& a) { return a.d; }"));
  EXPECT_TRUE(contains(a, "constexpr Args<E> make_args(const E* in, E* out, std::int64_t tokens, std::int64_t d)"));
  EXPECT_TRUE(contains(a, "Status::invalid(\"gelu_tanh_and_mul: d is negative\")"));
  EXPECT_TRUE(contains(a, "Status::too_large(\"gelu_tanh_and_mul: in [tokens, 2*d] has more bytes"));

  const std::string& api = find(r, op + ".hpp")->content;
  EXPECT_TRUE(contains(api, "template <class E>\n[[nodiscard]] Status gelu_tanh_and_mul(const E* in, E* out, "
                            "std::int64_t tokens, std::int64_t d,\n"
                            "                                       cudaStream_t stream = nullptr);"));
  EXPECT_TRUE(contains(api, "[[nodiscard]] Status gelu_tanh_and_mul(DType dtype, const void* in, void* out,"));
  EXPECT_TRUE(contains(api, "gelu_tanh_and_mul_choice(DType dtype, std::int64_t tokens, std::int64_t width"));
  EXPECT_TRUE(contains(api, "///   in   [tokens, 2*d]  E, read\n///   out  [tokens, d]    E, written\n"));
  EXPECT_TRUE(contains(api, "/// out[t, i] = gelu_tanh(in[t, i]) * in[t, d + i]"));
}

TEST(DeriveFolder, OriginalWrapsSVerbatim) {
  const DeriveResult r = derive_sample();
  ASSERT_TRUE(r.ok()) << r.error;
  const std::string& o = find(r, "original.cuh")->content;
  const std::string s = sample_s();
  // The leading #include block sits above the namespace, the rest of S inside it, byte for byte.
  const auto include_at = o.find("#include <cuda_bf16.h>");
  const auto ns_at = o.find("namespace ktune::ops::gelu_tanh_and_mul::original {\nnamespace source {\nnamespace {\n");
  ASSERT_NE(include_at, std::string::npos);
  ASSERT_NE(ns_at, std::string::npos);
  EXPECT_LT(include_at, ns_at);
  const std::string body = s.substr(s.find("template <typename T>\n__device__ __forceinline__ float to_f32"));
  const auto body_at = o.find(body);
  ASSERT_NE(body_at, std::string::npos) << "S's body is not verbatim in original.cuh";
  EXPECT_GT(body_at, ns_at);
  EXPECT_TRUE(contains(o, "source::launch<E>(a.in, a.out, a.tokens, a.d, stream)"));
  EXPECT_TRUE(contains(o, "return ktune::KernelResources{};"));
}

TEST(DeriveFolder, TensorsOfFp32AndReadWriteAccess) {
  const std::string spec = R"({"op": "scale_lse", "dims": {"tokens": [1, 16], "heads": [8]},
    "tokens_dim": "tokens", "width_dim": "heads", "dtypes": ["bf16"],
    "tolerance": {"bf16": {"rel_l2": 1e-2, "atol": 1e-2, "rtol": 1e-2}},
    "tensors": [{"name": "x", "shape": ["tokens", "heads", "128"], "dtype": "element", "access": "read_write"},
                {"name": "lse", "shape": ["tokens", "heads"], "dtype": "fp32", "access": "read"}]})";
  const std::string body = "#include <cuda_runtime.h>\n#include <cstdint>\n"
                           "template <typename T>\ncudaError_t launch(T* __restrict__ x, const float* lse, "
                           "const int64_t tokens, std::int64_t heads, cudaStream_t stream) { return cudaSuccess; }\n";
  const DeriveResult r = derive_kernel_folder("scale_lse", body, "scale_lse.cu", spec);
  ASSERT_TRUE(r.ok()) << r.error;
  const std::string& a = find(r, "args.hpp")->content;
  EXPECT_TRUE(contains(a, "  E* x = nullptr;"));
  EXPECT_TRUE(contains(a, "  const float* lse = nullptr;"));
  EXPECT_TRUE(contains(a, "const std::int64_t f[] = {a.tokens, a.heads, 128};"));
  EXPECT_TRUE(contains(a, "aligned_to(a.lse, sizeof(float))"));
  const std::string& h = find(r, "harness.hpp")->content;
  EXPECT_TRUE(contains(h, "element_typed[tensor_count] = {true, false}"));
  EXPECT_TRUE(contains(h, "{ktune::Access::read_write, ktune::Access::read}"));
  const std::string& cu = find(r, "scale_lse.cu")->content;
  EXPECT_TRUE(contains(cu, "Status scale_lse(DType dtype, void* x, const float* lse, std::int64_t tokens, std::int64_t heads"));
  EXPECT_TRUE(contains(cu, "static_cast<__nv_bfloat16*>(x), lse, tokens, heads, stream"));
}

TEST(DeriveFolder, OneDimensionalOpWithUpperCaseNames) {
  const std::string spec = R"({"op": "axpy", "dims": {"N": [1024, 4096]}, "tokens_dim": "N", "width_dim": "N",
    "dtypes": ["fp32"], "tolerance": {"fp32": {"rel_l2": 1e-6, "atol": 1e-6, "rtol": 1e-6}},
    "tensors": [{"name": "X", "shape": ["N"], "dtype": "element", "access": "read"},
                {"name": "Y", "shape": ["N"], "dtype": "element", "access": "read_write"}]})";
  const std::string s = "#include <cuda_runtime.h>\n#include <cstdint>\ntemplate <class T>\n"
                        "cudaError_t launch(const T* X, T* Y, int64_t N, cudaStream_t stream) { return cudaSuccess; }\n";
  const DeriveResult r = derive_kernel_folder("axpy", s, "axpy.cu", spec);
  ASSERT_TRUE(r.ok()) << r.error;
  const std::string& a = find(r, "args.hpp")->content;
  EXPECT_TRUE(contains(a, "constexpr std::int64_t tokens(const Args<E>& a) { return a.N; }"));
  EXPECT_TRUE(contains(a, "constexpr std::int64_t width(const Args<E>& a) { return a.N; }"));
  EXPECT_TRUE(contains(a, "return a.N == 0;"));
  EXPECT_TRUE(contains(find(r, "axpy.cuh")->content, "Status axpy(const E* X, E* Y, std::int64_t N, cudaStream_t stream) {"));
}

TEST(DeriveFolder, DefaultTunedTableHasTheShapeOfATunedOne) {
  const DerivedFile t = default_tuned_table(op, 0x0123456789abcdefull);
  EXPECT_EQ(t.name, "tuned.cuh");
  EXPECT_EQ(t.content, default_tuned_table(op, 0x0123456789abcdefull).content);
  EXPECT_EQ(t.content.rfind("// Generated by `ktune tables` (ktune ", 0), 0u);
  EXPECT_TRUE(contains(t.content, "before its first tune"));
  EXPECT_TRUE(contains(t.content, "namespace ktune::ops::gelu_tanh_and_mul::tuned {"));
  EXPECT_TRUE(contains(t.content, "inline constexpr std::uint64_t space_hash = 0x0123456789abcdefull;"));
  EXPECT_TRUE(contains(t.content, "inline constexpr std::nullptr_t entries = nullptr;"));
  EXPECT_TRUE(contains(t.content, "inline constexpr Space::Point general_point = Space::default_point;"));
  EXPECT_TRUE(contains(t.content, "using general_config = "));
  EXPECT_TRUE(contains(t.content, "inline constexpr const char* general_id = "));
  EXPECT_TRUE(contains(t.content, "ktune::Status with_variant(int variant, F&& f) {"));
}

// ---- inputs it cannot take ------------------------------------------------------------------------

TEST(DeriveErrors, OpNameMustBeAUsableIdentifier) {
  const std::string s = sample_s();
  EXPECT_TRUE(contains(derive_error("3d_op", s, sample_spec()), "starts with a letter"));
  EXPECT_TRUE(contains(derive_error("my-op", s, sample_spec()), "[A-Za-z_][A-Za-z0-9_]*"));
  EXPECT_TRUE(contains(derive_error("class", s, sample_spec()), "C++ keyword"));
  EXPECT_TRUE(contains(derive_error("_op", s, sample_spec()), "reserved"));
  EXPECT_TRUE(contains(derive_error("gelu__op", s, sample_spec()), "reserved"));
  EXPECT_TRUE(contains(derive_error("", s, sample_spec()), "empty"));
  EXPECT_TRUE(contains(derive_error("launch", s, sample_spec()), "namespace ktune"));
}

TEST(DeriveErrors, SpecMustBeValidAndNameTheOp) {
  const std::string s = sample_s();
  EXPECT_TRUE(contains(derive_error(op, s, "{not json"), "not valid JSON"));
  EXPECT_TRUE(contains(derive_error(op, s, spec_with("\"dims\"", "\"dimensions\"")), "missing \"dims\""));
  EXPECT_TRUE(contains(derive_error(op, s, spec_with("\"2*d\"", "\"2*e\"")), "'e' is not a dimension"));
  const std::string e = derive_error("other_op", s, sample_spec());
  EXPECT_TRUE(contains(e, "spec.json names op 'gelu_tanh_and_mul'")) << e;
}

TEST(DeriveErrors, TensorAndDimensionNamesMustBeParameters) {
  const std::string s = sample_s();
  EXPECT_TRUE(contains(derive_error(op, s, spec_with("\"name\": \"out\"", "\"name\": \"float\"")), "C++ keyword"));
  EXPECT_TRUE(contains(derive_error(op, s, spec_with("\"name\": \"out\"", "\"name\": \"stream\"")), "public API"));
  EXPECT_TRUE(contains(derive_error(op, s, spec_with("\"name\": \"out\"", "\"name\": \"d\"")),
                       "names both a dimension and a tensor"));
  EXPECT_TRUE(contains(derive_error(op, s, spec_with("\"name\": \"out\"", "\"name\": \"gelu_tanh_and_mul\"")),
                       "the op's name"));
  EXPECT_TRUE(contains(derive_error(op, s, spec_with("\"name\": \"out\"", "\"name\": \"a b\"")), "C++ identifier"));
  std::string fp32_only = sample_spec();
  for (auto at = fp32_only.find("\"element\""); at != std::string::npos; at = fp32_only.find("\"element\""))
    fp32_only.replace(at, 9, "\"fp32\"");
  const std::string e = derive_error(op, s, fp32_only);
  EXPECT_TRUE(contains(e, "no tensor has dtype \"element\"")) << e;
}

TEST(DeriveErrors, SMustHaveTheLauncher) {
  const std::string spec = sample_spec();
  std::string e = derive_error(op, "#include <cuda_runtime.h>\n__global__ void k() {}\n", spec);
  EXPECT_TRUE(contains(e, "S (my_kernel.cu): S has no launcher")) << e;
  e = derive_error(op, "#include <cstdint>\ncudaError_t launch(const float* in, float* out, int64_t t, int64_t d, "
                       "cudaStream_t s) { return cudaSuccess; }\n", spec);
  EXPECT_TRUE(contains(e, "line 2: launch is not declared as `template <typename T> cudaError_t launch(...)`")) << e;
  e = derive_error(op, "namespace mine {\ntemplate <typename T>\ncudaError_t launch(const T* in, T* out, int64_t t, "
                       "int64_t d, cudaStream_t s) { return cudaSuccess; }\n}\n", spec);
  EXPECT_TRUE(contains(e, "line 3: launch is declared inside a namespace")) << e;
  // A launcher in a comment or a string is no launcher.
  e = derive_error(op, "// template <typename T> cudaError_t launch(const T* in, T* out, int64_t t, int64_t d, "
                       "cudaStream_t s);\nconst char* doc = \"template <typename T> cudaError_t launch(\";\n", spec);
  EXPECT_TRUE(contains(e, "S has no launcher")) << e;
}

TEST(DeriveErrors, LauncherParametersMustFollowTheSpec) {
  const std::string spec = sample_spec();
  std::string e = derive_error(op, tiny_s("const T* in, T* out, int64_t tokens, cudaStream_t stream"), spec);
  EXPECT_TRUE(contains(e, "launch takes 4 parameters, spec.json asks for 5: (const T* in, T* out, int64_t tokens, "
                          "int64_t d, cudaStream_t stream)")) << e;
  e = derive_error(op, tiny_s("T* in, T* out, int64_t tokens, int64_t d, cudaStream_t stream"), spec);
  EXPECT_TRUE(contains(e, "parameter 1 of launch (`T* in`) should be `const T* in`")) << e;
  e = derive_error(op, tiny_s("const T* in, const T* out, int64_t tokens, int64_t d, cudaStream_t stream"), spec);
  EXPECT_TRUE(contains(e, "parameter 2 of launch")) << e;
  e = derive_error(op, tiny_s("const T* in, T* out, int tokens, int64_t d, cudaStream_t stream"), spec);
  EXPECT_TRUE(contains(e, "parameter 3 of launch (`int tokens`) should be `int64_t tokens`")) << e;
  e = derive_error(op, tiny_s("const T* in, T* out, int64_t d, int64_t tokens, cudaStream_t stream"), spec);
  EXPECT_TRUE(contains(e, "is named `d`, but spec.json puts `tokens` there")) << e;
  e = derive_error(op, tiny_s("const T* in, T* out, int64_t tokens, int64_t d, int stream"), spec);
  EXPECT_TRUE(contains(e, "should be `cudaStream_t stream`")) << e;
  e = derive_error(op, tiny_s("const float* in, T* out, int64_t tokens, int64_t d, cudaStream_t stream"), spec);
  EXPECT_TRUE(contains(e, "should be `const T* in`")) << e;
  // Qualifiers, std::, default arguments and other names are fine.
  const DeriveResult ok = derive_kernel_folder(
      op, tiny_s("const T* __restrict__ x, T* __restrict__ y, const std::int64_t t, ::int64_t width, "
                 "cudaStream_t s = nullptr"),
      "my_kernel.cu", spec);
  EXPECT_TRUE(ok.ok()) << ok.error;
}

TEST(DeriveErrors, ConstructsANamespaceBreaks) {
  const std::string spec = sample_spec();
  std::string e = derive_error(op, tiny_s() + "#include <vector>\n", spec);
  EXPECT_TRUE(contains(e, "line 12: #include after the first line of code")) << e;
  e = derive_error(op, tiny_s() + "extern \"C\" __global__ void k_c() {}\n", spec);
  EXPECT_TRUE(contains(e, "line 12: extern \"C\"")) << e;
  // Conditional and commented includes at the top are part of the leading block.
  const DeriveResult ok = derive_kernel_folder(
      op, "/* S */\n#pragma once\n#if 1\n#include <cuda_fp16.h>\n#endif\n// #include <not_this>\n" + tiny_s(),
      "my_kernel.cu", spec);
  ASSERT_TRUE(ok.ok()) << ok.error;
  const std::string& o = find(ok, "original.cuh")->content;
  EXPECT_LT(o.find("#include <cuda_fp16.h>"), o.find("namespace source {"));
  EXPECT_EQ(o.find("#pragma once", o.find("#pragma once") + 1), std::string::npos) << "S's #pragma once is dropped";
}

TEST(DeriveSource, MaskBlanksCommentsAndLiteralsAndKeepsLines) {
  const std::string text =
      "int a = 1'000'000; // launch(\n"
      "/* launch(\n */ const char* s = \"launch(\\\"\";\n"
      "auto r = R\"x(launch( \" )x\"; char c = '\\'';\n"
      "auto u = u8'a'; int launch(int);\n";
  const std::string m = derive::mask_source(text);
  ASSERT_EQ(m.size(), text.size());
  EXPECT_EQ(std::count(m.begin(), m.end(), '\n'), std::count(text.begin(), text.end(), '\n'));
  EXPECT_EQ(m.find("launch("), m.rfind("launch(")) << m;  // only the declaration on the last line is left
  EXPECT_NE(m.find("int launch(int);"), std::string::npos) << m;
  EXPECT_NE(m.find("int a = 1'000'000;"), std::string::npos) << m;
  EXPECT_EQ(derive::line_of(text, text.find("auto r")), 4);
}

// ---- the scripted LLM answers ---------------------------------------------------------------------

TEST(DeriveAnswers, EachJsonHoldsItsFolder) {
  const fs::path dir = sample / "answers";
  for (const char* name : {"does_not_compile", "wrong", "races", "slower", "faster"}) {
    SCOPED_TRACE(name);
    const nlohmann::json j = nlohmann::json::parse(slurp(dir / (std::string(name) + ".json")));
    const nlohmann::json meta = nlohmann::json::parse(slurp(dir / name / "meta.json"));
    EXPECT_EQ(j.at("space_hpp").get<std::string>(), slurp(dir / name / "space.hpp"))
        << "stale: run tests/generator/data/gelu_tanh_and_mul/answers/assemble.py";
    EXPECT_EQ(j.at("family_cuh").get<std::string>(), slurp(dir / name / "family.cuh"));
    EXPECT_EQ(j.at("reasoning"), meta.at("reasoning"));
    EXPECT_EQ(j.at("summary"), meta.at("summary"));
    const std::string kind = j.at("kind").get<std::string>();
    EXPECT_TRUE(kind == "rewrite" || kind == "reparam") << kind;
    EXPECT_FALSE(j.at("summary").get<std::string>().empty());
    EXPECT_EQ(j.at("summary").get<std::string>().find('\n'), std::string::npos) << "the summary is one line";
  }
}

// ---- the derived folder compiles ------------------------------------------------------------------

namespace {

struct Candidate {
  std::string answer;
  fs::path root;  ///< root/kernels/<op>/ holds the folder
};

/// Writes the derived folder plus an answer's space.hpp and family.cuh under the work directory.
Candidate write_candidate(const std::string& answer) {
  Candidate c{answer, fs::path(KTUNE_TEST_WORK_DIR) / "derive" / answer};
  std::error_code ec;
  fs::remove_all(c.root, ec);
  const fs::path folder = c.root / "kernels" / op;
  const DeriveResult r = derive_sample();
  EXPECT_TRUE(r.ok()) << r.error;
  const nlohmann::json j = nlohmann::json::parse(slurp(sample / "answers" / (answer + ".json")));
  for (const DerivedFile& f : r.files) EXPECT_EQ(write_file_atomic(folder / f.name, f.content), "");
  EXPECT_EQ(write_file_atomic(folder / "space.hpp", j.at("space_hpp").get<std::string>()), "");
  EXPECT_EQ(write_file_atomic(folder / "family.cuh", j.at("family_cuh").get<std::string>()), "");
  return c;
}

/// -I flags for a CMake list of folders ("a;b").
void add_includes(std::vector<std::string>& flags, const std::string& list) {
  for (std::size_t pos = 0; pos < list.size();) {
    std::size_t end = list.find(';', pos);
    if (end == std::string::npos) end = list.size();
    if (end > pos) flags.push_back("-I" + list.substr(pos, end - pos));
    pos = end + 1;
  }
}

std::vector<std::string> include_flags(const fs::path& root) {
  // The candidate first: a kernels/<op>/ of the same name in the repository must not shadow it.
  std::vector<std::string> flags = {"-I" + root.string(), "-I" KTUNE_SOURCE_DIR "/include", "-I" KTUNE_SOURCE_DIR};
  add_includes(flags, KTUNE_TEST_BOOST_INCLUDE);
  return flags;
}

std::vector<std::string> nvcc_command(const fs::path& root, const fs::path& source) {
  std::vector<std::string> cmd = {KTUNE_TEST_NVCC, "-std=c++17", "-arch=sm_90", "--expt-relaxed-constexpr"};
  for (const std::string& f : include_flags(root)) cmd.push_back(f);
  cmd.insert(cmd.end(), {"-c", source.string(), "-o", source.string() + ".o"});
  return cmd;
}

const char* const register_tu =
    "#include <ktune/instantiate.hpp>\n\n"
    "#include \"kernels/gelu_tanh_and_mul/family.cuh\"\n\n"
    "KTUNE_REGISTER_ORIGINAL(ktune::ops::gelu_tanh_and_mul::Family, 90)\n"
    "KTUNE_REGISTER_SHARD(ktune::ops::gelu_tanh_and_mul::Family, 90, 0, 1)\n";

// What must compile without CUDA's compiler: the space, as the `ktune` tool takes it in (tools/ktune/list.hpp:
// no original_point needed), the Args and the host-only API declarations.
const char* const host_tu =
    "#include <cstdio>\n\n"
    "#include \"kernels/gelu_tanh_and_mul/args.hpp\"\n"
    "#include \"kernels/gelu_tanh_and_mul/gelu_tanh_and_mul.hpp\"\n"
    "#include \"kernels/gelu_tanh_and_mul/space.hpp\"\n"
    "#include \"ktune/list.hpp\"\n\n"
    "int main() {\n"
    "  using Space = ktune::ops::gelu_tanh_and_mul::Space;\n"
    "  const ktune::tool::SpaceInfo info = ktune::tool::make_space_info<Space>(\"gelu_tanh_and_mul\");\n"
    "  if (info.hash != Space::space.hash() || info.default_id.empty()) return 1;\n"
    "  std::printf(\"%llu\\n\", static_cast<unsigned long long>(info.hash));\n"
    "}\n";

bool have_compilers() { return fs::exists(KTUNE_TEST_NVCC) && fs::exists(KTUNE_TEST_CXX); }

}  // namespace

TEST(DeriveCompile, FolderCompilesWithEachAnswerButTheBrokenOne) {
  if (!have_compilers()) GTEST_SKIP() << "no nvcc at " KTUNE_TEST_NVCC;
  const std::vector<std::string> answers = {"faster", "wrong", "races", "slower", "does_not_compile"};
  std::vector<Candidate> candidates;
  for (const std::string& a : answers) candidates.push_back(write_candidate(a));

  // 1. Host compiler, C++20 like the `ktune` tool: space.hpp, args.hpp and <op>.hpp need no CUDA compiler.
  //    The program prints Space::space.hash(), which the default-only tuned table records.
  ProcessOptions opt;
  opt.timeout_s = 120;
  for (const Candidate& c : candidates) {
    SCOPED_TRACE(c.answer);
    ASSERT_EQ(write_file_atomic(c.root / "host.cpp", host_tu), "");
    std::vector<std::string> cmd = {KTUNE_TEST_CXX, "-std=c++20"};
    for (const std::string& f : include_flags(c.root)) cmd.push_back(f);
    cmd.push_back("-I" KTUNE_SOURCE_DIR "/tools");
    add_includes(cmd, KTUNE_TEST_CUDA_INCLUDE);  // ktune/dtype.hpp names the CUDA half types
    cmd.insert(cmd.end(), {(c.root / "host.cpp").string(), "-o", (c.root / "host").string()});
    const ProcessResult built = run_process(cmd, opt);
    ASSERT_TRUE(built.ok()) << command_line(cmd) << "\n" << built.output << built.error;
    const ProcessResult hash = run_process({(c.root / "host").string()}, opt);
    ASSERT_TRUE(hash.ok()) << hash.output << hash.error;
    const DerivedFile table = default_tuned_table(op, std::stoull(hash.output));
    ASSERT_EQ(write_file_atomic(c.root / "kernels" / op / table.name, table.content), "");
  }

  // 2. nvcc, as the build compiles a kernel folder: the variant registration of every answer, and for the
  //    answer that wins the scripted run also <op>.cu, the public API as ktune::kernels compiles it (it
  //    includes <op>.cuh and calls the typed API for the three dtypes from the runtime-dtype entry).
  std::vector<std::vector<std::string>> commands;
  std::vector<std::string> labels;
  for (const Candidate& c : candidates) {
    ASSERT_EQ(write_file_atomic(c.root / "register.cu", register_tu), "");
    commands.push_back(nvcc_command(c.root, c.root / "register.cu"));
    labels.push_back(c.answer + ": register.cu");
  }
  const Candidate& faster = candidates.front();
  commands.push_back(nvcc_command(faster.root, faster.root / "kernels" / op / (op + ".cu")));
  labels.push_back("faster: " + op + ".cu");

  const std::vector<ProcessResult> results = run_processes(commands, 2, opt);
  for (std::size_t i = 0; i < results.size(); ++i) {
    SCOPED_TRACE(labels[i]);
    EXPECT_FALSE(results[i].timed_out);
    if (labels[i].rfind("does_not_compile", 0) == 0) {
      EXPECT_FALSE(results[i].ok()) << "does_not_compile.json compiled";
      EXPECT_TRUE(contains(results[i].output, "too few arguments for class template")) << results[i].output;
    } else {
      EXPECT_TRUE(results[i].ok()) << command_line(commands[i]) << "\n" << results[i].output << results[i].error;
    }
  }
}
