// bench/upstream/calls.hpp: for each op ktune_vs_flashinfer compares, its three calls on one set of
// tensors: sgl-kernel's launch of FlashInfer's kernel (upstream), ktune's original kernel S (as the tune
// runs it: ops::<op>::original::run) and ktune's tuned dispatch (the public API a user calls). Each takes
// the op's Args<E> as its ktune::Harness builds them, so one driver serves every op.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <ktune/dtype.hpp>
#include <ktune/harness.hpp>
#include <ktune/status.hpp>
#include <ktune/tuned.hpp>

namespace ktune::upstream {

enum CallKind : int { upstream_call = 0, original_call = 1, tuned_call = 2 };
inline constexpr int call_kinds = 3;
/// As flashinfer.json names them, and as flashinfer.md and the progress lines do.
inline constexpr const char* call_names[call_kinds] = {"upstream", "original", "tuned"};
inline constexpr const char* call_labels[call_kinds] = {"upstream", "S", "tuned"};

/// Enqueues one call on `stream`; `args` points at the op's Args<E> for `dtype`.
using Call = Status (*)(DType dtype, const void* args, cudaStream_t stream);

struct OpCalls {
  std::string op;
  std::vector<DType> dtypes;  ///< the dtypes sgl-kernel dispatches for the op
  std::string upstream;       ///< what the upstream call runs, for the reports
  std::shared_ptr<const Harness> harness;
  Call calls[call_kinds] = {};
  /// <op>_choice: the variant the tuned dispatch picks for (tokens, width) on the current device.
  Status (*choice)(DType dtype, std::int64_t tokens, std::int64_t width, TunedChoice& out) = nullptr;
};

/// The ops compared, in the order the reports list them.
const std::vector<OpCalls>& compared_ops();

/// ktune ops with an SGLang kernel but no FlashInfer one to compare with.
struct LeftOut {
  const char* op;
  const char* why;
};
inline constexpr LeftOut left_out_ops[] = {
    {"merge_attn_states_lse",
     "sgl-kernel's own kernel (merge_state_v2, csrc/attention/merge_attn_states.cu), not FlashInfer's"},
};

}  // namespace ktune::upstream
