// tests/generator/agents_test.cpp: the deterministic parts of the generation, testing and tuning agents
// that need no GPU: the answer's parsing and static check, the prompts, the edge shapes, the ranking
// read from a real results file, and the verdicts drawn from a ranking.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <filesystem>
#include <regex>
#include <string>

#include "agent_support.hpp"
#include "generator/agents/answer.hpp"
#include "generator/agents/prompts.hpp"
#include "generator/agents/testing.hpp"
#include "generator/agents/tuning.hpp"

using namespace ktune::gen;
using namespace ktune::gen::test;

namespace {

std::string slurp(const std::filesystem::path& p) {
  std::string err;
  std::string s = read_file(p, err);
  EXPECT_EQ(err, "") << p;
  return s;
}

Answer valid_answer() {
  Answer a;
  EXPECT_EQ(parse_answer(slurp(answer("faster")), a), "");
  return a;
}

}  // namespace

TEST(AgentsAnswer, StoredAnswersParseAndPassTheStaticCheck) {
  for (const char* name : {"does_not_compile", "wrong", "races", "slower", "faster"}) {
    Answer a;
    ASSERT_EQ(parse_answer(slurp(answer(name)), a), "") << name;
    EXPECT_EQ(check_answer(a), "") << name;
    EXPECT_FALSE(a.summary.empty());
    EXPECT_EQ(a.summary.find('\n'), std::string::npos);
  }
}

TEST(AgentsAnswer, MalformedAnswersSayWhatIsWrong) {
  Answer a;
  EXPECT_NE(parse_answer("   \n", a).find("blank"), std::string::npos);
  EXPECT_NE(parse_answer("here is my family: it is great", a).find("not a JSON object"), std::string::npos);
  EXPECT_NE(parse_answer(R"({"reasoning": "x", "summary": "y", "kind": "rewrite", "space_hpp": "struct Space {};"})", a)
                .find("family_cuh"),
            std::string::npos);
  EXPECT_NE(parse_answer(R"({"reasoning": "x", "summary": "y", "kind": "rename", "space_hpp": "struct Space", "family_cuh": "struct Family"})", a)
                .find("kind"),
            std::string::npos);
  // A fenced answer is accepted: models do that despite JSON mode.
  EXPECT_EQ(parse_answer("```json\n" + slurp(answer("faster")) + "\n```", a), "");
}

TEST(AgentsAnswer, StaticCheckRefusesReachingAroundTheJudge) {
  const Answer base = valid_answer();
  const std::pair<const char*, const char*> cheats[] = {
      {"static int r = (ktune::HarnessRegistry::global(), 0);", "registry"},
      {"KTUNE_REGISTER_ORIGINAL(Family, 90)", "registers"},
      {"return original::run(a, s);", "calls S"},
      {"cudaMemcpyAsync(a.out, a.in, 4, cudaMemcpyDeviceToDevice, s);", "memory"},
      {"std::system(\"nvidia-smi\");", "runs programs"},
      {"#include \"harness.hpp\"", "judge"},
      {"atomicAdd(p, 1.0f);", "atomics"},
  };
  for (const auto& [code, why] : cheats) {
    Answer a = base;
    a.family_cuh += std::string("\n") + code + "\n";
    const std::string verdict = check_answer(a);
    EXPECT_NE(verdict.find(why), std::string::npos) << code << " -> " << verdict;
  }
}

// ---- no state across calls, no clocks, no capture queries (issue 15, item 5) -----------------------
// Each attack is written as an LLM would write it, appended to an honest family; the refusal must quote
// the construct. The static check is a first filter: the GPU checks are the real defence.

TEST(AgentsAnswer, StaticCheckRefusesStateClocksAndCaptureQueries) {
  const Answer base = valid_answer();
  struct Attack {
    const char* code;
    const char* construct;  ///< what the refusal must quote
    const char* rule;       ///< and the words that name the rule
  };
  const Attack attacks[] = {
      // Mutable device state that survives between calls.
      {"namespace ktune::ops::gelu_tanh_and_mul::detail {\n"
       "// The input pointer of the last call: a repeated call finds its output already computed.\n"
       "__device__ const void* seen_in[1024];\n"
       "}\n",
       "__device__ const void* seen_in", "device state"},
      {"static __device__ unsigned long long memo_key[4096];  // hash of inputs already computed\n", "memo_key",
       "device state"},
      {"__managed__ int calls_so_far = 0;\n", "__managed__ int calls_so_far", "device state"},
      {"__device__ __align__(16) float cached_out[1 << 20];\n", "cached_out", "device state"},
      {"__device__ int next_ticket() {\n  static int ticket = 0;\n  return ticket++;\n}\n", "static int ticket",
       "device state"},
      // Time in device code (and in the adapter).
      {"__device__ bool late() { return clock64() > 1000000; }\n", "clock64(", "clock or timer"},
      {"__device__ bool skip() { return (clock() & 1) != 0; }\n", "clock(", "clock or timer"},
      {"__device__ unsigned long long now() {\n  unsigned long long t;\n"
       "  asm volatile(\"mov.u64 %0, %%globaltimer;\" : \"=l\"(t));\n  return t;\n}\n",
       "globaltimer", "clock or timer"},
      {"__device__ unsigned ticks() { unsigned c; asm volatile(\"mov.u32 %0, %%clock;\" : \"=r\"(c)); return c; }\n",
       "%clock", "clock or timer"},
      {"#include <cuda/std/chrono>\n__device__ long long stamp() {\n"
       "  return cuda::std::chrono::system_clock::now().time_since_epoch().count();\n}\n",
       "chrono", "clock or timer"},
      // Host-side state in the adapter.
      {"inline bool first_call() {\n  static bool warmed = false;\n  const bool first = !warmed;\n  warmed = true;\n"
       "  return first;\n}\n",
       "static bool warmed", "host-side state"},
      {"inline int calls() { static int calls = 0; return ++calls; }\n", "static int calls", "host-side state"},
      {"#include <map>\ninline bool seen_before(const void* in) {\n  static std::map<const void*, int> cache;\n"
       "  return cache[in]++ > 0;\n}\n",
       "static std::map<const void*, int> cache", "host-side state"},
      {"namespace ktune::ops::gelu_tanh_and_mul {\nint g_count;\n}\n", "int g_count", "host-side state"},
      {"std::unordered_map<std::uint64_t, bool> g_done;\n", "g_done", "host-side state"},
      {"inline int& depth() {\n  thread_local int depth = 0;\n  return depth;\n}\n", "thread_local int depth",
       "host-side state"},
      {"struct CallCounter {\n  static inline int calls = 0;\n};\n", "static inline int calls", "host-side state"},
      {"static const char* last_shape = nullptr;  // the pointee is const, the pointer is not\n",
       "static const char* last_shape", "host-side state"},
      {"inline char quote() { return '\"'; }\ninline int runs() {\n  static int n = 1'000;\n  return ++n;\n}\n",
       "static int n", "host-side state"},
      // A host adapter that behaves differently while a CUDA graph is captured.
      {"inline bool capturing(cudaStream_t s) {\n  cudaStreamCaptureStatus st;\n  cudaStreamIsCapturing(s, &st);\n"
       "  return st == cudaStreamCaptureStatusActive;\n}\n",
       "cudaStreamIsCapturing", "captured"},
      {"inline void info(cudaStream_t s) {\n  cudaStreamCaptureStatus st;\n  unsigned long long id;\n"
       "  cudaStreamGetCaptureInfo(s, &st, &id);\n}\n",
       "cudaStreamGetCaptureInfo", "captured"},
      {"inline void relax() {\n  cudaStreamCaptureMode m = cudaStreamCaptureModeRelaxed;\n"
       "  cudaThreadExchangeStreamCaptureMode(&m);\n}\n",
       "cudaThreadExchangeStreamCaptureMode", "captured"},
  };
  for (const Attack& at : attacks) {
    Answer a = base;
    a.family_cuh += std::string("\n") + at.code;
    const std::string verdict = check_answer(a);
    EXPECT_EQ(verdict.rfind("family.cuh ", 0), 0u) << at.code << " -> " << verdict;
    EXPECT_NE(verdict.find(at.construct), std::string::npos) << at.code << " -> " << verdict;
    EXPECT_NE(verdict.find(at.rule), std::string::npos) << at.code << " -> " << verdict;
  }
  // The same in space.hpp.
  Answer a = base;
  a.space_hpp += "\ninline int tuned_calls = 0;\n";
  const std::string verdict = check_answer(a);
  EXPECT_EQ(verdict.rfind("space.hpp ", 0), 0u) << verdict;
  EXPECT_NE(verdict.find("inline int tuned_calls"), std::string::npos) << verdict;
  EXPECT_NE(verdict.find("host-side state"), std::string::npos) << verdict;
}

// ---- nothing left in the caller's stream, context or device (issue 44) ------------------------------
// Each call written as an LLM would write it in an adapter; the refusal quotes it and says what to do instead.
// The GPU check (the caller's state compared after every checked call) is the real defence.

TEST(AgentsAnswer, StaticCheckRefusesStateLeftInTheCallersStreamContextOrDevice) {
  const Answer base = valid_answer();
  struct Call {
    const char* code;
    const char* construct;  ///< what the refusal must quote
    const char* rule;       ///< the words that name the rule
    const char* instead;    ///< and what to do instead
  };
  const Call calls[] = {
      {"inline void keep(cudaStream_t s, void* p, std::size_t n) {\n  cudaStreamAttrValue v{};\n"
       "  v.accessPolicyWindow.base_ptr = p;\n  v.accessPolicyWindow.num_bytes = n;\n"
       "  cudaStreamSetAttribute(s, cudaStreamAttributeAccessPolicyWindow, &v);\n}\n",
       "cudaStreamSetAttribute", "caller's stream", "leave L2 persistence to the caller"},
      {"inline void spin(CUstream s, const CUstreamAttrValue* v) {\n  cuStreamSetAttribute(s, "
       "CU_STREAM_ATTRIBUTE_SYNCHRONIZATION_POLICY, v);\n}\n",
       "cuStreamSetAttribute", "caller's stream", "ktune::LaunchShape"},
      {"inline void set_aside(std::size_t n) { cudaDeviceSetLimit(cudaLimitPersistingL2CacheSize, n); }\n",
       "cudaDeviceSetLimit", "caller's context or device", "cudaFuncSetAttribute"},
      {"inline void deeper() { cudaDeviceSetLimit(cudaLimitStackSize, 16384); }\n", "cudaDeviceSetLimit",
       "caller's context or device", "Configure your own kernels"},
      {"inline void heap() { cudaThreadSetLimit(cudaLimitMallocHeapSize, 1 << 26); }\n", "cudaThreadSetLimit",
       "caller's context or device", "cudaFuncSetAttribute"},
      {"inline void unpin() { cudaCtxResetPersistingL2Cache(); }\n", "cudaCtxResetPersistingL2Cache",
       "caller's context or device", "cudaFuncSetAttribute"},
      {"inline void prefer_shared() { cudaDeviceSetCacheConfig(cudaFuncCachePreferShared); }\n", "cudaDeviceSetCacheConfig",
       "caller's context or device", "cudaFuncSetCacheConfig"},
      {"inline void banks() { cudaDeviceSetSharedMemConfig(cudaSharedMemBankSizeEightByte); }\n",
       "cudaDeviceSetSharedMemConfig", "caller's context or device", "cudaFuncSetAttribute"},
      {"inline void pool(cudaMemPool_t p) { cudaDeviceSetMemPool(0, p); }\n", "cudaDeviceSetMemPool",
       "caller's context or device", "Configure your own kernels"},
      {"inline void stack() { cuCtxSetLimit(CU_LIMIT_STACK_SIZE, 4096); }\n", "cuCtxSetLimit", "driver API",
       "cudaFuncSetAttribute"},
      {"inline void l1() { cuCtxSetCacheConfig(CU_FUNC_CACHE_PREFER_L1); }\n", "cuCtxSetCacheConfig", "driver API",
       "cudaFuncSetCacheConfig"},
      {"inline void unpin2() { cuCtxResetPersistingL2Cache(); }\n", "cuCtxResetPersistingL2Cache", "driver API",
       "cudaFuncSetAttribute"},
      {"inline void pick(int d) { cudaSetDevice(d); }\n", "cudaSetDevice", "caller's device", "caller's current device"},
      {"inline void spin_wait() { cudaSetDeviceFlags(cudaDeviceScheduleSpin); }\n", "cudaSetDeviceFlags", "caller's device",
       "never select, create, reset or reconfigure"},
      {"inline void clean() { cudaDeviceReset(); }\n", "cudaDeviceReset", "caller's device", "never select"},
      {"inline void own(CUcontext c) { cuCtxSetCurrent(c); }\n", "cuCtxSetCurrent", "contexts", "caller's current device"},
      {"inline void push(CUcontext c) { cuCtxPushCurrent(c); }\n", "cuCtxPushCurrent", "contexts", "never select"},
      {"inline void fresh() { cuDevicePrimaryCtxReset(0); }\n", "cuDevicePrimaryCtxReset", "contexts", "never select"},
      {"inline void window(cudaLaunchAttribute* a) {\n  a[0].id = cudaLaunchAttributeAccessPolicyWindow;\n}\n",
       "cudaLaunchAttributeAccessPolicyWindow", "persisting in L2", "ktune::LaunchShape"},
  };
  for (const Call& c : calls) {
    Answer a = base;
    a.family_cuh += std::string("\n") + c.code;
    const std::string verdict = check_answer(a);
    EXPECT_EQ(verdict.rfind("family.cuh ", 0), 0u) << c.code << " -> " << verdict;
    EXPECT_NE(verdict.find(c.construct), std::string::npos) << c.code << " -> " << verdict;
    EXPECT_NE(verdict.find(c.rule), std::string::npos) << c.code << " -> " << verdict;
    EXPECT_NE(verdict.find(c.instead), std::string::npos) << c.code << " -> " << verdict;
  }
}

TEST(AgentsAnswer, StaticCheckLetsAFamilyConfigureItsOwnKernels) {
  // Attributes of the family's own kernels are its business, and reading the caller's settings changes nothing.
  const Answer base = valid_answer();
  const char* own[] = {
      "template <class K>\ninline cudaError_t more_smem(K kernel, int bytes) {\n"
      "  return cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes);\n}\n",
      "template <class K>\ninline cudaError_t carveout(K kernel) {\n"
      "  return cudaFuncSetAttribute(kernel, cudaFuncAttributePreferredSharedMemoryCarveout, 100);\n}\n",
      "template <class K>\ninline cudaError_t prefer_l1(K kernel) { return cudaFuncSetCacheConfig(kernel, cudaFuncCachePreferL1); }\n",
      "inline std::size_t stack_now() {\n  std::size_t v = 0;\n  cudaDeviceGetLimit(&v, cudaLimitStackSize);\n  return v;\n}\n",
      "inline int persisting_max() {\n  int d = 0, v = 0;\n  cudaGetDevice(&d);\n"
      "  cudaDeviceGetAttribute(&v, cudaDevAttrMaxPersistingL2CacheSize, d);\n  return v;\n}\n",
      "// cudaStreamSetAttribute(s, cudaStreamAttributeAccessPolicyWindow, &v) would replace the caller's window\n",
  };
  for (const char* code : own) {
    Answer a = base;
    a.family_cuh += std::string("\n") + code;
    EXPECT_EQ(check_answer(a), "") << code;
  }
}

TEST(AgentsAnswer, StaticCheckPassesConstantsCommentsAndStrings) {
  const Answer base = valid_answer();
  const char* honest[] = {
      "// static int calls = 0; clock64(); cudaStreamIsCapturing(s, &st); original::run(a, s);\n",
      "/* __device__ int seen[64];\n   asm(\"mov.u64 %0, %%globaltimer;\");  thread_local int depth; */\n",
      "inline constexpr int kWarp = 32;\n",
      "static constexpr float kCoeffs[4] = {1.f, 2.f, 3.f, 4.f};\n",
      "constexpr static int kThreads = 256;\n",
      "__constant__ float gelu_table[256];\n",
      "__device__ const float kScale = 0.7978845608f;\n",
      "static float* const kNowhere = nullptr;\n",
      "namespace ktune::ops::gelu_tanh_and_mul::detail {\nconst float kHalf = 0.5f;\nconstexpr int kLanes = 32;\n}\n",
      "static_assert(sizeof(float) == 4, \"static int calls = 0; clock() and std::chrono are refused\");\n",
      "struct Helper {\n  static int blocks(int n) { return (n + 255) / 256; }\n"
      "  static constexpr const char* name = \"helper\";\n  static const int lanes = 32;\n  int per_call = 0;\n};\n",
      "template <class E>\n__global__ void __launch_bounds__(256) scratch_kernel(E* out) {\n  __shared__ float tile[256];\n"
      "  static __shared__ float sums[32];\n  extern __shared__ float dynamic_tile[];\n  __shared__ alignas(16) float v[4];\n"
      "  tile[threadIdx.x] = dynamic_tile[0] + v[0];\n  sums[0] = tile[0];\n  out[0] = E(sums[0]);\n}\n",
      "inline std::size_t big(int n) {\n  const std::size_t k = n < 4 ? 1'000'000 : 2;\n  std::size_t s = 0;\n"
      "  for (std::size_t j = 0; j < k; ++j) s += j;\n  return s;\n}\n",
      "inline char quote() { return '\"'; }\ninline const char* text() { return \"clock() /* not a comment\"; }\n",
      "template <class T> constexpr int lanes_of = 32 / static_cast<int>(sizeof(T));\n",
  };
  for (const char* code : honest) {
    Answer a = base;
    a.family_cuh += std::string("\n") + code;
    EXPECT_EQ(check_answer(a), "") << code;
  }
}

namespace {
/// A shipped family.cuh as an LLM writes it: without the S hooks (original_*) and the judge's headers
/// that the three hand-written ops carry themselves, which an LLM's family gets from family_base.cuh.
std::string without_s_hooks(const std::string& family) {
  static const std::regex include(R"(#include\s*["<][^">]*(harness|registry|original)[^">]*[">]\n)");
  static const std::regex hook(R"((template\s*<class E>\s*)?static\s+[\w:]+\s+original_\w+\([^)]*\)\s*\{[^}]*\}\n)");
  return std::regex_replace(std::regex_replace(family, include, ""), hook, "");
}
}  // namespace

TEST(AgentsAnswer, StaticCheckPassesTheShippedFamilies) {
  auto folder_answer = [](const std::filesystem::path& dir, bool hand_written) {
    Answer a;
    a.space_hpp = slurp(dir / "space.hpp");
    a.family_cuh = slurp(dir / "family.cuh");
    if (hand_written) {
      a.family_cuh = without_s_hooks(a.family_cuh);
      EXPECT_EQ(a.family_cuh.find("original::"), std::string::npos) << dir;
    }
    return a;
  };
  for (const char* op : {"silu_and_mul", "merge_attn_states_lse"})
    EXPECT_EQ(check_answer(folder_answer(source_dir() / "kernels" / op, true)), "") << op;
  EXPECT_EQ(check_answer(folder_answer(source_dir() / "examples/03_your_own_kernel/kernels/add_bias", false)), "");
  for (const char* name : {"does_not_compile", "wrong", "races", "slower", "faster"})
    EXPECT_EQ(check_answer(folder_answer(sample_dir() / "answers" / name, false)), "") << name;

  // The norms' shared adapter (kernels/common/norm_rows, fused_add_rmsnorm's and the other norms' family)
  // caches, per device, the occupancy calculator's answer in a function-local static. Deterministic there,
  // but to a static check the same as a memo of calls, so an LLM's family that did this would be refused:
  // the check says so here.
  const std::string verdict = check_answer(folder_answer(source_dir() / "kernels/common/norm_rows", true));
  EXPECT_NE(verdict.find("host-side state"), std::string::npos) << verdict;
  EXPECT_NE(verdict.find("cache"), std::string::npos) << verdict;
}

TEST(AgentsPrompts, CarryTheConventionsTheTaskAndTheFindings) {
  const std::string sys = system_prompt("my_op", {"kernels/x/space.hpp", "struct Space { /*example*/ };"},
                                        {"kernels/x/family.cuh", "struct Family {};"}, {{"kernels/my_op/args.hpp", "struct Args;"}});
  for (const char* part : {"ktune::ops::my_op", "space.hpp", "family.cuh", "unaligned_point", "/*example*/",
                           "kernels/my_op/args.hpp", "\"space_hpp\"", "KTUNE_REGISTER",
                           // issue 44: the dependent chain and what a call leaves behind
                           "ktune::pdl_wait()", "writes its inputs late", "cudaStreamSetAttribute", "cudaDeviceSetLimit",
                           "cudaSetDevice", "cudaFuncSetAttribute"})
    EXPECT_NE(sys.find(part), std::string::npos) << part;
  RoundPrompt p;
  p.round = 3;
  p.action = "reparam";
  p.planner_reason = "its θ has not been searched yet";
  p.s_name = "s.cu";
  p.s_source = "__global__ void k() {}";
  p.spec_json = "{}";
  p.target_summary = "split tiling";
  p.target_space = "SPACE";
  p.target_family = "FAMILY";
  p.findings = "bf16 tokens=1: 1.2x";
  const std::string r = round_prompt(p);
  for (const char* part : {"Round 3", "re-parameterisation", "split tiling", "θ has not been searched", "SPACE", "FAMILY",
                           "bf16 tokens=1: 1.2x", "__global__ void k"})
    EXPECT_NE(r.find(part), std::string::npos) << part;
  EXPECT_NE(fix_prompt("compile", "x.cuh(3): error: nope").find("x.cuh(3): error: nope"), std::string::npos);
}

TEST(AgentsTesting, EdgeShapesFromTheSpecOrDerived) {
  std::string err;
  const std::string with = edge_spec(slurp(sample_dir() / "spec.json"), err);
  ASSERT_EQ(err, "");
  const nlohmann::ordered_json j = nlohmann::ordered_json::parse(with);
  EXPECT_FALSE(j.contains("edge_dims"));
  EXPECT_EQ(j["dims"].begin().key(), "tokens") << "the spec's order of dimensions is kept";

  const std::string plain = R"({"op": "x", "tokens_dim": "t", "width_dim": "w", "dims": {"t": [16, 4], "w": [4096, 1024]}})";
  const nlohmann::ordered_json k = nlohmann::ordered_json::parse(edge_spec(plain, err));
  ASSERT_EQ(err, "");
  EXPECT_EQ(k["dims"]["t"], nlohmann::ordered_json::array({1, 3}));
  EXPECT_EQ(k["dims"]["w"], nlohmann::ordered_json::array({1024}));
  edge_spec("{not json", err);
  EXPECT_NE(err, "");
}

TEST(AgentsTuning, RankingFromACommittedResultsFile) {
  Ranking r;
  ASSERT_EQ(read_ranking(nlohmann::json::parse(slurp(source_dir() / "reports/nvidia-h200/silu_and_mul.json")), r), "");
  EXPECT_EQ(r.gpu, "NVIDIA H200");
  // 3 dtypes x the catalogue's 14 token counts x 7 widths (shapes/catalogue.json), and the model tune's d = 18944.
  EXPECT_EQ(r.shapes.size(), 3u * 14u * 8u);
  EXPECT_EQ(r.measured_shapes, 3u * 14u * 8u);
  EXPECT_GT(r.geomean_speedup, 1.0);
  EXPECT_GE(r.band, 0.01);
  EXPECT_FALSE(r.best_id.empty());
  EXPECT_EQ(r.general.size(), 3u);
  const std::string text = describe_ranking(r);
  EXPECT_NE(text.find("bf16 tokens=1,d=4096: S"), std::string::npos) << text;
  EXPECT_NE(read_ranking(nlohmann::json::object(), r), "");
}

TEST(AgentsTesting, VerdictsFromARanking) {
  Ranking r;
  r.measured_shapes = 2;
  r.band = 0.02;
  r.best_id = "tpb_128";
  r.geomean_speedup = 1.5;
  EXPECT_EQ(judge_ranking(r).verdict, Node::measured);
  r.geomean_speedup = 0.99;  // inside the band: not "slower"
  EXPECT_EQ(judge_ranking(r).verdict, Node::measured);
  r.geomean_speedup = 0.5;
  EXPECT_EQ(judge_ranking(r).verdict, Node::slower);
  EXPECT_TRUE(judge_ranking(r).passed);
  r.excluded.push_back({"bf16", "tpb_256", "incorrect", "incorrect: out: rel_l2 0.3"});
  const Judgement j = judge_ranking(r);
  EXPECT_FALSE(j.passed);
  EXPECT_EQ(j.verdict, Node::incorrect);
  EXPECT_NE(j.reason.find("tpb_256"), std::string::npos);
  Ranking none;
  EXPECT_EQ(judge_ranking(none).verdict, Node::rejected);
}
