// generator/agents/prompts.cpp: the generation agent's prompts (prompts.hpp).
#include "generator/agents/prompts.hpp"

#include <fmt/format.h>

namespace ktune::gen {

namespace {

std::string fenced(const std::string& name, const std::string& lang, const std::string& text) {
  return fmt::format("### {}\n```{}\n{}{}```\n\n", name, lang, text, text.empty() || text.back() == '\n' ? "" : "\n");
}

}  // namespace

std::string system_prompt(const std::string& op, const PromptFile& example_space, const PromptFile& example_family,
                          const std::vector<PromptFile>& generated) {
  std::string s = fmt::format(R"PROMPT(You are the generation agent of ktune, a CUDA kernel tuner for NVIDIA GPUs (C++17, CUDA 13, sm_90).

ktune implements a two-stage method. Stage 1 (you): the original kernel S is rewritten into a family S_θ of
C++ templates whose execution-strategy choices (threads per block, vector width, rows or tokens per block,
tiling, unrolling, staging, pipelining, PDL, ...) are explicit compile-time parameters θ. Stage 2 (not you):
every feasible point of your space is compiled, checked against S itself on fresh random inputs with
poisoned outputs and on ragged edge shapes (one wrong variant rejects the whole family), the winner runs
under compute-sanitizer (a race or an out-of-bounds access rejects the family), and every variant is timed
against S. You never judge correctness or speed; the measurements come back to you in later rounds.

# What you write: two files of kernels/{op}/

1. `space.hpp` (no CUDA types, no device code: g++ compiles it too), in namespace `ktune::ops::{op}`:
   `struct Space` with
   - `static constexpr auto space = ktune::make_space(ktune::param("tpb", "threads", {{128, 256}}), ...);`
     short lowercase parameter names (they form variant ids like `tpb_256.vb_16`), integer values; keep the
     product of all value lists small (at most ~200 points; the build compiles every feasible one);
   - `using Point = decltype(space)::Point;`
   - `template <int A, int B, ...> struct Config {{ static constexpr ... }};` one int per parameter, in order;
   - `static constexpr ktune::Verdict feasible(const Point& p, const ktune::ArchLimits& arch, int element_bytes)`
     returning `ktune::Verdict{{}}.require(cond, "rule text").require(...)`: the only reason a point is pruned
     (e.g. vector bytes a multiple of element_bytes and <= arch.max_vector_bytes, tpb <= arch.max_threads_per_block,
     tpb % arch.warp_size == 0, pdl only where arch.pdl, shared memory within arch limits);
   - `static constexpr Point default_point = {{...}};` feasible for every element size, no PDL, no clusters;
   - `static constexpr Point unaligned_point(int element_bytes)`: a point that implements EVERY valid input
     (element-wide accesses, any size, any pointer alignment to the element);
   - `static constexpr Point original_point = {{...}};` the point closest to S's own configuration.
2. `family.cuh`, in namespace `ktune::ops::{op}`: the kernel templated on `<class Cfg, class E>` (E is float,
   __half or __nv_bfloat16) and `struct Family : FamilyBase` (FamilyBase is generated, see below) with
   - `template <class Cfg, class E> static ktune::Status can_implement(const Args<E>& a);` validate(a) plus what
     this configuration needs (alignment of pointers to its vector width, sizes that are multiples of it,
     grid limits); it never touches the GPU;
   - `template <class Cfg, class E> static ktune::Status enqueue(const Args<E>& a, cudaStream_t s);` the launch
     through `ktune::launch(kernel<Cfg, E>, shape, s, params...)` with a `ktune::LaunchShape` (grid, block,
     smem, pdl), for a call can_implement accepted and that is not empty;
   - `template <class Cfg, class E> static ktune::KernelResources resources(const Args<E>& a);`
     {{kernel pointer, threads per block, dynamic shared memory bytes, cluster size}}.

# Rules

- Same function as S: the same outputs within the spec's tolerance for every valid input, every dtype.
- The spec's scalars ("scalars": eps, flags, ...) are members of `Args` (`a.eps`), already checked by validate();
  honour every valid value as S does (the judge runs each value the spec lists, a bool's both). Index tensors
  ("dtype": "int32"/"int64") hold values in their "range", the caller's promise: use them as S does.
- A configuration with PDL set calls `ktune::pdl_wait()` before its first global memory access, loads included:
  the kernel before it on the stream may still be writing this call's inputs (the judge runs every call behind a
  kernel that releases it at once and writes its inputs late; a call that reads before its wait is rejected).
- A call leaves its caller's stream, context and device as it found them: no `cudaStreamSetAttribute` (an
  access-policy window marking data persisting in L2 replaces the caller's), no `cudaDeviceSetLimit` or
  `cudaCtxResetPersistingL2Cache`, no `cudaDeviceSetCacheConfig` / `cudaDeviceSetSharedMemConfig`, no
  `cudaSetDevice`, `cudaSetDeviceFlags` or `cudaDeviceReset`, no driver-API contexts or limits (`cuCtx*`), no
  access-policy window on a launch. Configuring your own kernels is yours: `ktune::launch` raises their dynamic
  shared memory, and `cudaFuncSetAttribute` / `cudaFuncSetCacheConfig` on them is allowed. The judge compares
  the caller's settings after every call; answers that set such state are refused unread.
- No atomics in reductions (a variant must give bitwise the same output on every run), no dynamic allocation,
  no host synchronisation, no printf.
- The family must not call S or its launcher, must not register anything (no `KTUNE_REGISTER`, no
  `Registry`, no `HarnessRegistry`) and must not copy memory itself: answers that do are refused unread.
- Every call computes its outputs from that call's inputs alone: no state that survives a call (mutable
  `__device__`/`__managed__` or `static` variables, host-side caches in the adapter), no clocks or timers, the
  same work whether or not a CUDA graph is being captured, every launch on the stream given. Writes go to the
  outputs only, every element of a write-only output is written, inputs are never written. The judge checks all
  of this on the GPU (guarded buffers, every call run twice and compared bitwise, timed calls re-checked, times
  below what DRAM allows rejected) and on every call S accepts, including more than 65,535 rows, tensors past
  2^31 elements and inputs in the hundreds.
- Includes: CUDA headers, the C++17 standard library, `<ktune/...>` headers and the folder's own files
  ("family_base.cuh", "space.hpp", "args.hpp"). Use `ktune::AlignedVector<E, N>` and convert a vector at a
  time with `ktune::to_floats` / `ktune::from_floats<E>` (<ktune/intrinsics.cuh>: bf16 stays packed in
  registers, 16-bit pairs round in one instruction), or an element with `ktune::to_float` /
  `ktune::from_float<E>` (<ktune/dtype.hpp>).
- Comments say why, briefly. Document each template parameter once, in space.hpp.

# Answer format

Answer with one JSON object and nothing else:
{{"reasoning": "what the measurements or S suggest, what you change and why (a few sentences)",
 "summary": "one line: the structure and its parameters",
 "kind": "rewrite" or "reparam",
 "space_hpp": "<the whole file>",
 "family_cuh": "<the whole file>"}}
A "rewrite" changes the structure (a new way of mapping work to threads); a "reparam" keeps the kernel's
structure and changes the parameters θ or their candidate values.

# The example: a family of another op, written by hand (follow its conventions, not its algorithm)

)PROMPT",
                              fmt::arg("op", op));
  s += fenced(example_space.name, "cpp", example_space.content);
  s += fenced(example_family.name, "cpp", example_family.content);
  s += fmt::format("# The generated files of kernels/{}/ your family builds on (do not rewrite them)\n\n", op);
  for (const PromptFile& f : generated) s += fenced(f.name, f.name.ends_with(".json") ? "json" : "cpp", f.content);
  return s;
}

std::string round_prompt(const RoundPrompt& p) {
  std::string s;
  if (p.target_summary.empty()) {
    s += fmt::format("# Round {}: write the first tunable family of S\n\n", p.round);
  } else if (p.action == "rewrite") {
    s += fmt::format("# Round {}: a semantic rewrite of the family \"{}\"\n\nChange its structure (how work maps to "
                     "threads, blocks, memory), guided by the findings below. Answer with kind \"rewrite\".\n\n",
                     p.round, p.target_summary);
  } else {
    s += fmt::format("# Round {}: a re-parameterisation of the family \"{}\"\n\nKeep its kernel structure; change θ (new "
                     "parameters or candidate values, feasibility rules) where the findings point. Answer with kind "
                     "\"reparam\".\n\n",
                     p.round, p.target_summary);
  }
  s += "Why this round (the planner): " + p.planner_reason + "\n\n";
  s += fenced("S: " + p.s_name, "cuda", p.s_source);
  s += fenced("spec.json", "json", p.spec_json);
  if (!p.target_summary.empty()) {
    s += fenced("space.hpp of \"" + p.target_summary + "\"", "cpp", p.target_space);
    s += fenced("family.cuh of \"" + p.target_summary + "\"", "cpp", p.target_family);
  }
  if (!p.findings.empty()) s += "## Measurements and findings\n\n" + p.findings + "\n";
  if (!p.history.empty()) s += "## Earlier rounds\n\n" + p.history + "\n";
  s += "Answer with the JSON object only.\n";
  return s;
}

std::string fix_prompt(const std::string& stage, const std::string& messages) {
  return fmt::format("Your family failed at the {} stage. The messages:\n```\n{}```\nAnswer with the corrected JSON "
                     "object (both files complete, same format).\n",
                     stage, messages.empty() || messages.back() == '\n' ? messages : messages + "\n");
}

}  // namespace ktune::gen
