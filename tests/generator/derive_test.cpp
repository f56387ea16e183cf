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
  EXPECT_TRUE(contains(h, "types[tensor_count] = {TensorType::element, TensorType::fp32}"));
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
  // The spec itself refuses a tensor named after a dimension (ktune/spec.hpp), naming the field.
  EXPECT_TRUE(contains(derive_error(op, s, spec_with("\"name\": \"out\"", "\"name\": \"d\"")),
                       "tensors[1]: tensor name 'd' is also a dimension"));
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

// ---- schema 2: scalars and index tensors ---------------------------------------------------------

namespace {

// gather_scale: out[t, i] = scale * table[idx[t], i] (negated when `negate`), idx an int64 index tensor whose
// values the caller promises in [0, rows).
const std::string gather_op = "gather_scale";
const std::string gather_spec = R"({"schema": 2, "op": "gather_scale", "summary": "out[t, i] = scale * table[idx[t], i]",
  "dims": {"tokens": [1, 16], "d": [64], "rows": [128]}, "tokens_dim": "tokens", "width_dim": "d",
  "dtypes": ["fp32", "bf16"],
  "tolerance": {"fp32": {"rel_l2": 1e-6, "atol": 1e-6, "rtol": 1e-6}, "bf16": {"rel_l2": 8e-3, "atol": 8e-3, "rtol": 8e-3}},
  "tensors": [{"name": "table", "shape": ["rows", "d"], "dtype": "element", "access": "read"},
              {"name": "idx", "shape": ["tokens"], "dtype": "int64", "range": [0, "rows"], "access": "read"},
              {"name": "out", "shape": ["tokens", "d"], "dtype": "element", "access": "write"}],
  "scalars": [{"name": "scale", "type": "float", "default": 0.5, "valid": "> 0 and <= 8", "values": [2]},
              {"name": "negate", "type": "bool", "default": false}]})";

std::string gather_s(const std::string& params = "const T* table, const int64_t* idx, T* out, int64_t tokens, "
                                                 "int64_t d, int64_t rows, float scale, bool negate, cudaStream_t stream") {
  return "#include <cuda_runtime.h>\n#include <cstdint>\n\n"
         "template <typename T>\n__global__ void gather_k(const T* table, const int64_t* idx, T* out, int64_t d, "
         "float scale, bool negate) {\n"
         "  const int64_t t = blockIdx.x;\n"
         "  for (int64_t i = threadIdx.x; i < d; i += blockDim.x) {\n"
         "    const float v = scale * static_cast<float>(table[idx[t] * d + i]);\n"
         "    out[t * d + i] = static_cast<T>(negate ? -v : v);\n  }\n}\n\n"
         "template <typename T>\ncudaError_t launch(" + params + ") {\n"
         "  gather_k<T><<<static_cast<unsigned>(tokens), 64, 0, stream>>>(table, idx, out, d, scale, negate);\n"
         "  return cudaGetLastError();\n}\n";
}

// A one-point family of gather_scale written by hand, so the derived folder compiles as a whole.
const char* const gather_space =
    "#pragma once\n#include <ktune/arch.hpp>\n#include <ktune/space.hpp>\n"
    "namespace ktune::ops::gather_scale {\n"
    "struct Space {\n"
    "  static constexpr auto space = ktune::make_space(ktune::param(\"tpb\", \"threads\", {64}));\n"
    "  using Point = decltype(space)::Point;\n"
    "  template <int Tpb> struct Config { static constexpr int tpb = Tpb; static constexpr Point point = {Tpb}; };\n"
    "  static constexpr ktune::Verdict feasible(const Point&, const ktune::ArchLimits&, int) { return ktune::Verdict{}; }\n"
    "  static constexpr Point default_point = {64};\n"
    "  static constexpr Point unaligned_point(int) { return {64}; }\n"
    "};\n}  // namespace ktune::ops::gather_scale\n";

const char* const gather_family =
    "#pragma once\n#include <cuda_runtime.h>\n#include \"family_base.cuh\"\n"
    "namespace ktune::ops::gather_scale {\n"
    "template <class Cfg, class E>\n"
    "__global__ void family_k(const Args<E> a) {\n"
    "  const std::int64_t t = blockIdx.x;\n"
    "  for (std::int64_t i = threadIdx.x; i < a.d; i += Cfg::tpb) {\n"
    "    const float v = a.scale * ktune::to_float(a.table[a.idx[t] * a.d + i]);\n"
    "    a.out[t * a.d + i] = ktune::from_float<E>(a.negate ? -v : v);\n  }\n}\n"
    "struct Family : FamilyBase {\n"
    "  template <class Cfg, class E> static Status can_implement(const Args<E>& a) { return validate(a); }\n"
    "  template <class Cfg, class E> static Status enqueue(const Args<E>& a, cudaStream_t s) {\n"
    "    ktune::LaunchShape shape;\n    shape.grid = dim3(static_cast<unsigned>(a.tokens));\n"
    "    shape.block = dim3(Cfg::tpb);\n    return ktune::launch(family_k<Cfg, E>, shape, s, a);\n  }\n"
    "  template <class Cfg, class E> static ktune::KernelResources resources(const Args<E>&) {\n"
    "    return {reinterpret_cast<const void*>(&family_k<Cfg, E>), Cfg::tpb, 0, 1};\n  }\n};\n"
    "}  // namespace ktune::ops::gather_scale\n";

}  // namespace

TEST(DeriveScalars, ScalarsAndIndexTensorsFollowTheSpec) {
  const DeriveResult r = derive_kernel_folder(gather_op, gather_s(), "gather_scale.cu", gather_spec);
  ASSERT_TRUE(r.ok()) << r.error;
  const std::string& a = find(r, "args.hpp")->content;
  EXPECT_TRUE(contains(a, "  const std::int64_t* idx = nullptr;")) << a;
  EXPECT_TRUE(contains(a, "  std::int64_t rows = 0;\n  float scale = 0.5f;\n  bool negate = false;\n")) << a;
  EXPECT_TRUE(contains(a, "std::int64_t rows, float scale, bool negate) {")) << a;
  // NaN fails every comparison: the check is the negation of the rule.
  EXPECT_TRUE(contains(a, "if (!(std::isfinite(a.scale) && a.scale > 0.0 && a.scale <= 8.0))")) << a;
  EXPECT_TRUE(contains(a, "Status::invalid(\"gather_scale: scale must be finite and > 0 and <= 8\")")) << a;
  EXPECT_TRUE(contains(a, "aligned_to(a.idx, sizeof(std::int64_t))")) << a;
  EXPECT_TRUE(contains(a, "caller's promise")) << a;
  EXPECT_TRUE(contains(a, "///   idx    [tokens]     int64, read, values in [0, rows)")) << a;
  const std::string& o = find(r, "original.cuh")->content;
  EXPECT_TRUE(contains(o, "source::launch<E>(a.table, a.idx, a.out, a.tokens, a.d, a.rows, a.scale, a.negate, stream)"));
  const std::string& api = find(r, "gather_scale.hpp")->content;
  EXPECT_TRUE(contains(api, "std::int64_t rows, float scale = 0.5f, bool negate = false,")) << api;
  EXPECT_TRUE(contains(api, "cudaStream_t stream = nullptr);")) << api;
  EXPECT_TRUE(contains(api, "const std::int64_t* idx")) << api;
  EXPECT_TRUE(contains(api, "///   scale   float  default 0.5f, valid: finite and > 0 and <= 8\n")) << api;
  std::string doc = api;  // the doc comment as one line, whatever its wrapping
  for (auto at = doc.find("\n/// "); at != std::string::npos; at = doc.find("\n/// ")) doc.replace(at, 5, " ");
  EXPECT_TRUE(contains(doc, "Index tensors' values must lie in their ranges: the caller's promise, which is not checked"))
      << api;
  EXPECT_TRUE(contains(doc, "scalars outside their rules (NaN included)")) << api;
  EXPECT_TRUE(contains(doc, "and every scalar is valid is a successful no-op")) << api;
  const std::string& cuh = find(r, "gather_scale.cuh")->content;
  EXPECT_FALSE(contains(cuh, "= 0.5f")) << "the definition repeats no default";
  EXPECT_TRUE(contains(cuh, "make_args<E>(table, idx, out, tokens, d, rows,\n    scale, negate), stream);")) << cuh;
  const std::string& cu = find(r, "gather_scale.cu")->content;
  EXPECT_TRUE(contains(cu, "Status gather_scale(DType dtype, const void* table, const std::int64_t* idx, void* out,")) << cu;
  EXPECT_TRUE(contains(cu, "(static_cast<const float*>(table), idx, static_cast<float*>(out), tokens, d,\n"
                           "                                        rows, scale, negate, stream);"))
      << cu;
  const std::string& h = find(r, "harness.hpp")->content;
  EXPECT_TRUE(contains(h, "types[tensor_count] = {TensorType::element, TensorType::int64, TensorType::element}")) << h;
  EXPECT_TRUE(contains(h, "a.scale = static_cast<float>(shape.scalar(\"scale\", 0.5f));")) << h;
  EXPECT_TRUE(contains(h, "a.negate = shape.scalar(\"negate\", 0.0) != 0;")) << h;
  EXPECT_TRUE(contains(h, "high = a.rows;")) << h;

  // Spec values of every type, as C++ literals.
  std::string spec = gather_spec;
  spec.replace(spec.find("\"default\": 0.5"), 14, "\"default\": 3");
  spec.replace(spec.find("\"default\": false"), 16, "\"default\": true");
  const DeriveResult r2 = derive_kernel_folder(gather_op, gather_s(), "gather_scale.cu", spec);
  ASSERT_TRUE(r2.ok()) << r2.error;
  EXPECT_TRUE(contains(find(r2, "args.hpp")->content, "  float scale = 3.0f;\n  bool negate = true;\n"));
}

TEST(DeriveScalars, TheLauncherTakesScalarsAfterTheDimsAndBeforeTheStream) {
  // eps before the dims: rejected, naming the scalar and where it goes.
  std::string e = derive_error(gather_op, gather_s("const T* table, const int64_t* idx, T* out, float scale, int64_t tokens, "
                                                   "int64_t d, int64_t rows, bool negate, cudaStream_t stream"),
                               gather_spec);
  EXPECT_TRUE(contains(e, "parameter 4 of launch (`float scale`) is scalar `scale`, but spec.json puts `tokens` there")) << e;
  EXPECT_TRUE(contains(e, "after the dimensions and before the stream")) << e;
  // After the stream.
  e = derive_error(gather_op, gather_s("const T* table, const int64_t* idx, T* out, int64_t tokens, int64_t d, int64_t rows, "
                                       "cudaStream_t stream, float scale, bool negate"),
                   gather_spec);
  EXPECT_TRUE(contains(e, "parameter 7 of launch (`cudaStream_t stream`)")) << e;
  // Unnamed, in the wrong place: the type says so.
  e = derive_error(gather_op, gather_s("const T* table, const int64_t* idx, T* out, int64_t tokens, int64_t d, float, "
                                       "int64_t rows, bool negate, cudaStream_t stream"),
                   gather_spec);
  EXPECT_TRUE(contains(e, "parameter 6 of launch (`float`) should be `int64_t rows`")) << e;
  EXPECT_TRUE(contains(e, "scalars in spec order (after the dimensions, before the stream)")) << e;
  // The wrong type, and a missing scalar.
  e = derive_error(gather_op, gather_s("const T* table, const int64_t* idx, T* out, int64_t tokens, int64_t d, int64_t rows, "
                                       "double scale, bool negate, cudaStream_t stream"),
                   gather_spec);
  EXPECT_TRUE(contains(e, "parameter 7 of launch (`double scale`) should be `float scale` (scalar `scale` of spec.json")) << e;
  e = derive_error(gather_op, gather_s("const T* table, const int64_t* idx, T* out, int64_t tokens, int64_t d, int64_t rows, "
                                       "float scale, cudaStream_t stream"),
                   gather_spec);
  EXPECT_TRUE(contains(e, "launch takes 8 parameters, spec.json asks for 9: (const T* table, const std::int64_t* idx, T* out, "
                          "int64_t tokens, int64_t d, int64_t rows, float scale, bool negate, cudaStream_t stream)"))
      << e;
  // An index tensor's pointee is its dtype.
  e = derive_error(gather_op, gather_s("const T* table, const int* idx, T* out, int64_t tokens, int64_t d, int64_t rows, "
                                       "float scale, bool negate, cudaStream_t stream"),
                   gather_spec);
  EXPECT_TRUE(contains(e, "parameter 2 of launch (`const int* idx`) should be `const std::int64_t* idx`")) << e;
  EXPECT_TRUE(contains(e, "dtype \"int64\"")) << e;
  // std:: spellings and const by-value scalars are fine.
  const DeriveResult ok = derive_kernel_folder(
      gather_op, gather_s("const T* table, const std::int64_t* __restrict__ idx, T* out, int64_t tokens, int64_t d, "
                          "int64_t rows, const float scale, const bool negate = false, cudaStream_t stream = nullptr"),
      "gather_scale.cu", gather_spec);
  EXPECT_TRUE(ok.ok()) << ok.error;
}

TEST(DeriveScalars, MalformedScalarsNameTheFieldAndTheReason) {
  auto with = [](const std::string& from, const std::string& to) {
    std::string s = gather_spec;
    const auto at = s.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    if (at != std::string::npos) s.replace(at, from.size(), to);
    return s;
  };
  const std::string s = gather_s();
  std::string e = derive_error(gather_op, s, with("\"type\": \"bool\"", "\"type\": \"double\""));
  EXPECT_TRUE(contains(e, "scalars[1]: \"type\" must be float, int or bool")) << e;
  e = derive_error(gather_op, s, with("\"default\": 0.5", "\"default\": 9"));
  EXPECT_TRUE(contains(e, "scalars[0]: \"default\" is not valid (> 0 and <= 8)")) << e;
  e = derive_error(gather_op, s, with("\"values\": [2]", "\"values\": [-1]"));
  EXPECT_TRUE(contains(e, "scalars[0]: \"values\": -1 is not valid")) << e;
  e = derive_error(gather_op, s, with("\"valid\": \"> 0 and <= 8\"", "\"valid\": \"positive\""));
  EXPECT_TRUE(contains(e, "scalars[0]: \"valid\": 'positive' is not a comparison")) << e;
  e = derive_error(gather_op, s, with("\"range\": [0, \"rows\"], ", ""));
  EXPECT_TRUE(contains(e, "tensors[1]: an int64 tensor needs \"range\"")) << e;
  e = derive_error(gather_op, s, with("\"name\": \"negate\"", "\"name\": \"rows\""));
  EXPECT_TRUE(contains(e, "scalars[1]: scalar name 'rows' is already a dimension")) << e;
  e = derive_error(gather_op, s, with("\"name\": \"negate\"", "\"name\": \"class\""));
  EXPECT_TRUE(contains(e, "scalar name 'class' cannot be a C++ parameter: it is a C++ keyword")) << e;
  e = derive_error(gather_op, s, with("\"name\": \"negate\"", "\"name\": \"stream\""));
  EXPECT_TRUE(contains(e, "scalar name 'stream' is taken by the public API")) << e;
  // Valid as a double, 0 as the float the API passes: refused by name.
  e = derive_error(gather_op, s, with("\"valid\": \"> 0 and <= 8\", \"values\": [2]", "\"valid\": \"> 0\", \"values\": [1e-50]"));
  EXPECT_TRUE(contains(e, "spec.json: scalars[0] (scale): the value 1e-50 rounds to 0.0f as a C++ float")) << e;
  e = derive_error(gather_op, s, with("\"schema\": 2, ", ""));
  EXPECT_TRUE(contains(e, "needs \"schema\": 2")) << e;
}

TEST(DeriveScalars, DerivedFolderCompilesValidatesScalarsAndKeepsIndexRanges) {
  if (!have_compilers()) GTEST_SKIP() << "no nvcc at " KTUNE_TEST_NVCC;
  const fs::path root = fs::path(KTUNE_TEST_WORK_DIR) / "derive" / "gather_scale";
  std::error_code ec;
  fs::remove_all(root, ec);
  const fs::path folder = root / "kernels" / gather_op;
  const DeriveResult r = derive_kernel_folder(gather_op, gather_s(), "gather_scale.cu", gather_spec);
  ASSERT_TRUE(r.ok()) << r.error;
  for (const DerivedFile& f : r.files) ASSERT_EQ(write_file_atomic(folder / f.name, f.content), "");
  ASSERT_EQ(write_file_atomic(folder / "space.hpp", gather_space), "");
  ASSERT_EQ(write_file_atomic(folder / "family.cuh", gather_family), "");
  ProcessOptions opt;
  opt.timeout_s = 180;

  // 1. Host compiler: args.hpp's validate() on scalars (a bad one is refused before any pointer is looked at,
  //    empty calls included), and the space hash for the default tuned table.
  const std::string host =
      "#include <cmath>\n#include <cstdio>\n#include <cstring>\n#include <limits>\n\n"
      "#include \"kernels/gather_scale/args.hpp\"\n#include \"kernels/gather_scale/gather_scale.hpp\"\n"
      "#include \"kernels/gather_scale/space.hpp\"\n\n"
      "using namespace ktune::ops::gather_scale;\n"
      "static int fails = 0;\n"
      "static void expect(bool ok, const char* what) { if (!ok) { std::fprintf(stderr, \"FAILED: %s\\n\", what); ++fails; } }\n"
      "int main() {\n"
      "  alignas(16) static float table[128 * 64], out[16 * 64];\n"
      "  alignas(16) static std::int64_t idx[16];\n"
      "  const Args<float> good = make_args<float>(table, idx, out, 16, 64, 128, 0.5f, true);\n"
      "  expect(validate(good).ok(), \"scale 0.5 is valid\");\n"
      "  expect(Args<float>{}.scale == 0.5f && !Args<float>{}.negate, \"Args holds the defaults\");\n"
      "  for (float bad : {0.0f, -1.0f, 8.5f, std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity()}) {\n"
      "    const ktune::Status st = validate(make_args<float>(table, idx, out, 16, 64, 128, bad, false));\n"
      "    expect(!st.ok() && std::strstr(st.message, \"scale must be finite and > 0 and <= 8\"), \"a bad scale is refused\");\n"
      "    expect(!validate(make_args<float>(nullptr, nullptr, nullptr, 0, 64, 128, bad, false)).ok(), \"even when empty\");\n"
      "  }\n"
      "  expect(validate(make_args<float>(table, idx, out, 16, 64, 128, 8.0f, false)).ok(), \"<= 8 holds at 8\");\n"
      "  expect(!validate(make_args<float>(table, idx + 0, reinterpret_cast<float*>(reinterpret_cast<char*>(out) + 2), 16, 64, 128, 1.0f, false)).ok(), \"misaligned out\");\n"
      "  expect(!validate(make_args<float>(table, reinterpret_cast<const std::int64_t*>(reinterpret_cast<const char*>(idx) + 4), out, 16, 64, 128, 1.0f, false)).ok(), \"idx aligned to 8 bytes\");\n"
      "  if (fails) return 1;\n"
      "  std::printf(\"%llu\\n\", static_cast<unsigned long long>(Space::space.hash()));\n"
      "}\n";
  ASSERT_EQ(write_file_atomic(root / "host.cpp", host), "");
  std::vector<std::string> cmd = {KTUNE_TEST_CXX, "-std=c++20"};
  for (const std::string& f : include_flags(root)) cmd.push_back(f);
  add_includes(cmd, KTUNE_TEST_CUDA_INCLUDE);
  cmd.insert(cmd.end(), {(root / "host.cpp").string(), "-o", (root / "host").string()});
  const ProcessResult built = run_process(cmd, opt);
  ASSERT_TRUE(built.ok()) << command_line(cmd) << "\n" << built.output << built.error;
  const ProcessResult hash = run_process({(root / "host").string()}, opt);
  ASSERT_TRUE(hash.ok()) << hash.output << hash.error;
  const DerivedFile table = default_tuned_table(gather_op, std::stoull(hash.output));
  ASSERT_EQ(write_file_atomic(folder / table.name, table.content), "");

  // 2. nvcc: the public API as ktune::kernels compiles it, and a program that runs the harness's input fill
  //    (no GPU needed): every idx value inside [0, rows), the scalars of a shape reaching Args.
  const std::string check =
      "#include <cstdio>\n#include <set>\n\n#include \"kernels/gather_scale/harness.hpp\"\n\n"
      "int main() {\n"
      "  ktune::ops::gather_scale::Harness h;\n"
      "  int fails = 0;\n"
      "  for (std::int64_t rows : {1, 3, 1000}) {\n"
      "    ktune::Shape shape;\n"
      "    shape.dims = {{\"tokens\", 5000}, {\"d\", 1}, {\"rows\", rows}};\n"
      "    for (std::uint64_t seed : {1ull, 2ull, 0x9e3779b97f4a7c15ull}) {\n"
      "      ktune::HostTensors host;\n"
      "      h.fill_inputs(shape, ktune::DType::bf16, seed, host);\n"
      "      const auto* idx = reinterpret_cast<const std::int64_t*>(host[1].data());\n"
      "      std::set<std::int64_t> seen;\n"
      "      for (int i = 0; i < 5000; ++i) {\n"
      "        if (idx[i] < 0 || idx[i] >= rows) { std::fprintf(stderr, \"idx[%d] = %lld outside [0, %lld)\\n\", i, (long long)idx[i], (long long)rows); ++fails; }\n"
      "        seen.insert(idx[i]);\n"
      "      }\n"
      "      if (rows <= 3 && static_cast<std::int64_t>(seen.size()) != rows) { std::fprintf(stderr, \"rows %lld: only %zu values drawn\\n\", (long long)rows, seen.size()); ++fails; }\n"
      "      if (host[1].size() != 5000 * 8) { std::fprintf(stderr, \"idx has %zu bytes\\n\", host[1].size()); ++fails; }\n"
      "    }\n"
      "  }\n"
      "  ktune::Shape shape;\n"
      "  shape.dims = {{\"tokens\", 2}, {\"d\", 64}, {\"rows\", 0}};\n"
      "  ktune::HostTensors host;\n"
      "  bool threw = false;\n"
      "  try { h.fill_inputs(shape, ktune::DType::f32, 1, host); } catch (const std::exception& e) { threw = std::string(e.what()).find(\"range [0, 0) is empty\") != std::string::npos; }\n"
      "  if (!threw) { std::fprintf(stderr, \"an empty range must be an error\\n\"); ++fails; }\n"
      "  shape.dims = {{\"tokens\", 2}, {\"d\", 64}, {\"rows\", 8}};\n"
      "  shape.scalars = {{\"scale\", 2.0}, {\"negate\", 1.0}};\n"
      "  auto a = ktune::ops::gather_scale::Harness::dims_of<float>(shape);\n"
      "  if (a.scale != 2.0f || !a.negate || a.rows != 8) { std::fprintf(stderr, \"shape's scalars not in Args\\n\"); ++fails; }\n"
      "  shape.scalars.clear();\n"
      "  a = ktune::ops::gather_scale::Harness::dims_of<float>(shape);\n"
      "  if (a.scale != 0.5f || a.negate) { std::fprintf(stderr, \"defaults not in Args\\n\"); ++fails; }\n"
      "  if (h.tensors(shape, ktune::DType::bf16)[1].element_bytes != 8) { std::fprintf(stderr, \"idx is 8 bytes a value\\n\"); ++fails; }\n"
      "  return fails ? 1 : 0;\n"
      "}\n";
  ASSERT_EQ(write_file_atomic(root / "check.cu", check), "");
  std::vector<std::string> link = {KTUNE_TEST_NVCC, "-std=c++17", "-arch=sm_90", "--expt-relaxed-constexpr"};
  for (const std::string& f : include_flags(root)) link.push_back(f);
  link.insert(link.end(), {(root / "check.cu").string(), "-o", (root / "check").string()});
  const std::vector<std::vector<std::string>> commands = {nvcc_command(root, folder / (gather_op + ".cu")), link};
  const std::vector<ProcessResult> results = run_processes(commands, 2, opt);
  for (std::size_t i = 0; i < results.size(); ++i)
    ASSERT_TRUE(results[i].ok()) << command_line(commands[i]) << "\n" << results[i].output << results[i].error;
  const ProcessResult ran = run_process({(root / "check").string()}, opt);
  EXPECT_TRUE(ran.ok()) << ran.output << ran.error;
}
