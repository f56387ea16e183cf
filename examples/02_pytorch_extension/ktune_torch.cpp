// examples/02_pytorch_extension/ktune_torch.cpp: ktune's tuned kernels as a PyTorch extension
// whose Python functions take sgl_kernel's signatures, so a serving engine can swap them in:
//
//   silu_and_mul(input, out=None) -> out
//   gelu_and_mul(input, out=None) -> out          (erf GELU)
//   gelu_tanh_and_mul(input, out=None) -> out     (tanh GELU)
//   rmsnorm(input, weight, eps=1e-6, out=None, enable_pdl=None) -> out
//   gemma_rmsnorm(input, weight, eps=1e-6, out=None, enable_pdl=None) -> out      (weight used as 1 + w)
//   fused_add_rmsnorm(input, residual, weight, eps=1e-6, enable_pdl=None) -> None   (in place)
//   gemma_fused_add_rmsnorm(input, residual, weight, eps=1e-6, enable_pdl=None) -> None   (in place, 1 + w)
//   merge_state_v2(v_a, s_a, v_b, s_b, v_merged=None, s_merged=None) -> (v_merged, s_merged)
//   apply_rope_with_cos_sin_cache_inplace(positions, query, key, head_size, cos_sin_cache, is_neox=True,
//                                         fused_set_kv_buffer_arg=None, enable_pdl=None) -> None   (in place;
//                                         with fused_set_kv_buffer_arg, k and v are also stored in the KV cache)
//
// This file is compiled by the host compiler: it includes only the host-only declarations
// (kernels/<op>/<op>.hpp) and calls the runtime-dtype entry points, which the extension's .cu sources
// (kernels/<op>/<op>.cu of the ktune checkout, as in ktune::kernels) define. Every check below runs
// before anything is launched, so a call that raises has written nothing. Calls run on PyTorch's
// current stream of the tensors' device, allocate only the outputs they were not given (from PyTorch's
// allocator), and never synchronise: they can be captured in a CUDA graph.
//
// Exceptions: a wrong dtype raises TypeError; a wrong device, shape or layout, or tensors that share an
// element where one of them is written, ValueError (with what to do about it); a CUDA failure RuntimeError,
// with the CUDA error's name and text, and no error left behind for PyTorch's own cudaGetLastError() check
// (ktune takes its error out again: include/ktune/status.hpp).
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>
#include <torch/extension.h>

#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include <kernels/fused_add_rmsnorm/fused_add_rmsnorm.hpp>
#include <kernels/gelu_and_mul/gelu_and_mul.hpp>
#include <kernels/gemma_fused_add_rmsnorm/gemma_fused_add_rmsnorm.hpp>
#include <kernels/gemma_rmsnorm/gemma_rmsnorm.hpp>
#include <kernels/gelu_tanh_and_mul/gelu_tanh_and_mul.hpp>
#include <kernels/merge_attn_states_lse/merge_attn_states_lse.hpp>
#include <kernels/rmsnorm/rmsnorm.hpp>
#include <kernels/rotary_embedding/rotary_embedding.hpp>
#include <kernels/rotary_embedding_set_kv/rotary_embedding_set_kv.hpp>
#include <kernels/silu_and_mul/silu_and_mul.hpp>
#include <ktune/overlap.hpp>

namespace {

ktune::DType element_type(const at::Tensor& t, const char* op, const char* name) {
  switch (t.scalar_type()) {
    case at::kFloat: return ktune::DType::f32;
    case at::kHalf: return ktune::DType::f16;
    case at::kBFloat16: return ktune::DType::bf16;
    default: break;
  }
  TORCH_CHECK_TYPE(false, op, ": ", name, " has dtype ", t.scalar_type(),
                   "; ktune's kernels take float32, float16 and bfloat16");
  return ktune::DType::f32;  // not reached
}

void same_dtype(const at::Tensor& t, const at::Tensor& ref, const char* op, const char* name, const char* ref_name) {
  TORCH_CHECK_TYPE(t.scalar_type() == ref.scalar_type(), op, ": ", name, " has dtype ", t.scalar_type(), " but ",
                   ref_name, " has ", ref.scalar_type(), "; they must match");
}

void on_device(const at::Tensor& t, const at::Tensor& ref, const char* op, const char* name, const char* ref_name) {
  TORCH_CHECK_VALUE(t.is_cuda(), op, ": ", name, " is on ", t.device(), "; ktune's kernels take CUDA tensors");
  TORCH_CHECK_VALUE(t.device() == ref.device(), op, ": ", name, " is on ", t.device(), " but ", ref_name, " is on ",
                    ref.device());
}

void same_shape(const at::Tensor& t, at::IntArrayRef want, const char* op, const char* name) {
  TORCH_CHECK_VALUE(t.sizes() == want, op, ": ", name, " has shape ", t.sizes(), ", expected ", want);
}

/// A tensor [..., width] as `rows` rows of `width` elements, `stride` elements apart (ktune's row
/// stride; -1 where there is at most one row). The last dimension must be contiguous and the leading
/// dimensions must collapse into one row stride (a slice of wider rows, every other row, a contiguous
/// tensor of any rank); anything else is refused with the advice to call .contiguous().
struct Rows {
  std::int64_t rows = 0, width = 0, stride = -1;
};

Rows rows_of(const at::Tensor& t, const char* op, const char* name) {
  TORCH_CHECK_VALUE(t.dim() >= 1, op, ": ", name, " must have at least one dimension");
  Rows r;
  r.width = t.size(-1);
  r.rows = t.numel() / std::max<std::int64_t>(r.width, 1);
  if (r.width == 0) r.rows = 1;
  for (std::int64_t i = 0; i + 1 < t.dim(); ++i)
    if (t.size(i) == 0) r.rows = 0;
  TORCH_CHECK_VALUE(r.width <= 1 || t.stride(-1) == 1, op, ": the last dimension of ", name,
                    " is not contiguous (stride ", t.stride(-1), "); pass ", name, ".contiguous()");
  std::int64_t stride = -1, next = -1;  // next: the stride the next-outer dimension must have
  for (std::int64_t i = t.dim() - 2; i >= 0; --i) {
    if (t.size(i) == 1) continue;
    if (stride == -1) {
      stride = t.stride(i);
    } else {
      TORCH_CHECK_VALUE(t.stride(i) == next, op, ": the rows of ", name, " (shape ", t.sizes(), ", strides ",
                        t.strides(), ") are not evenly spaced; pass ", name, ".contiguous()");
    }
    next = t.stride(i) * t.size(i);
  }
  if (r.rows > 1) {
    TORCH_CHECK_VALUE(stride >= r.width, op, ": the rows of ", name, " overlap (row stride ", stride,
                      " is shorter than the row, ", r.width, " elements; a broadcast tensor?); pass ", name,
                      ".contiguous()");
    r.stride = stride;
  }
  return r;
}

/// Whether two tensors share an element (so writing one could change the other), decided by element, not by
/// the address ranges they span (ktune/overlap.hpp): views that interleave in one buffer share none, as q
/// and k split from one packed qkv tensor (SGLang's `q, k, v = qkv.split(...)`), the halves of a [T, 2h]
/// buffer, or rows of one view between the rows of another. Exact for every layout these functions take
/// (rows of contiguous elements, evenly spaced, in any order of dimensions); for a layout they refuse anyway,
/// whether the extents intersect. Call it after the layout checks, so that a refusal names the layout.
bool overlaps(const at::Tensor& a, const at::Tensor& b) {
  auto address = [](const at::Tensor& t) {
    return static_cast<std::int64_t>(reinterpret_cast<std::uintptr_t>(t.data_ptr()));
  };
  return ktune::may_share_an_element(address(a), static_cast<std::int64_t>(a.element_size()), static_cast<int>(a.dim()),
                                     a.sizes().data(), a.strides().data(), address(b),
                                     static_cast<std::int64_t>(b.element_size()), static_cast<int>(b.dim()),
                                     b.sizes().data(), b.strides().data());
}

void check(const ktune::Status& st, const char* op) {
  if (st.ok()) return;
  // describe(): ktune's message, and for a CUDA failure the error's name and text.
  if (st.code == ktune::StatusCode::cuda_error || st.code == ktune::StatusCode::internal)
    TORCH_CHECK(false, "ktune ", op, ": ", st.describe().c_str());
  TORCH_CHECK_VALUE(false, "ktune ", op, ": ", st.describe().c_str());
}

cudaStream_t current_stream(const at::Tensor& t) { return at::cuda::getCurrentCUDAStream(t.device().index()).stream(); }

// ---- silu_and_mul, gelu_and_mul, gelu_tanh_and_mul: act(input[..., :d]) * input[..., d:] --------

/// The runtime-dtype entry of one act-and-mul op (they share a signature).
using ActAndMulEntry = ktune::Status (*)(ktune::DType, void*, const void*, std::int64_t, std::int64_t, cudaStream_t,
                                         std::int64_t, std::int64_t);

at::Tensor act_and_mul(const char* op, ActAndMulEntry entry, const at::Tensor& input, std::optional<at::Tensor> out) {
  const ktune::DType dt = element_type(input, op, "input");
  on_device(input, input, op, "input", "input");
  TORCH_CHECK_VALUE(input.dim() >= 1 && input.size(-1) % 2 == 0, op, ": input's last dimension (",
                    input.dim() >= 1 ? input.size(-1) : 0, ") must be even: [..., 2 * d]");
  const std::int64_t d = input.size(-1) / 2;
  std::vector<std::int64_t> out_shape = input.sizes().vec();
  out_shape.back() = d;
  const Rows in = rows_of(input, op, "input");
  if (out) {
    same_dtype(*out, input, op, "out", "input");
    on_device(*out, input, op, "out", "input");
    same_shape(*out, out_shape, op, "out");
  }
  at::Tensor result = out ? *out : at::empty(out_shape, input.options());
  const Rows o = rows_of(result, op, "out");
  TORCH_CHECK_VALUE(!out || !overlaps(*out, input), op, ": out shares elements with input");
  if (in.rows == 0 || d == 0) return result;
  const c10::cuda::CUDAGuard guard(input.device());
  check(entry(dt, result.data_ptr(), input.data_ptr(), in.rows, d, current_stream(input), o.stride, in.stride), op);
  return result;
}

at::Tensor silu_and_mul(const at::Tensor& input, std::optional<at::Tensor> out) {
  return act_and_mul("silu_and_mul", &ktune::silu_and_mul, input, std::move(out));
}
at::Tensor gelu_and_mul(const at::Tensor& input, std::optional<at::Tensor> out) {
  return act_and_mul("gelu_and_mul", &ktune::gelu_and_mul, input, std::move(out));
}
at::Tensor gelu_tanh_and_mul(const at::Tensor& input, std::optional<at::Tensor> out) {
  return act_and_mul("gelu_tanh_and_mul", &ktune::gelu_tanh_and_mul, input, std::move(out));
}

// ---- rmsnorm, gemma_rmsnorm: out = input * rsqrt(mean(input^2) + eps) * (weight or 1 + weight) ---------

/// The runtime-dtype entry of one RMS norm op with a separate output (they share a signature).
using NormEntry = ktune::Status (*)(ktune::DType, void*, const void*, const void*, std::int64_t, std::int64_t, float,
                                    cudaStream_t, std::int64_t, std::int64_t);

/// input [..., hidden] (rows as rows_of takes them: sgl_kernel's [tokens, hidden], or FlashInfer's
/// [tokens, heads, head_dim] per-head norm), weight [hidden]; out: the same shape, or input itself.
at::Tensor norm_out(const char* op, NormEntry entry, const at::Tensor& input, const at::Tensor& weight, double eps,
                    std::optional<at::Tensor> out) {
  const ktune::DType dt = element_type(input, op, "input");
  same_dtype(weight, input, op, "weight", "input");
  on_device(input, input, op, "input", "input");
  on_device(weight, input, op, "weight", "input");
  TORCH_CHECK_VALUE(input.dim() >= 1, op, ": input must be [..., hidden]");
  const std::int64_t h = input.size(-1);
  TORCH_CHECK_VALUE(weight.dim() == 1 && weight.size(0) == h, op, ": weight must be [hidden] = [", h,
                    "], it has shape ", weight.sizes());
  TORCH_CHECK_VALUE(h <= 1 || weight.stride(0) == 1, op, ": weight is not contiguous; pass weight.contiguous()");
  const Rows in = rows_of(input, op, "input");
  if (out) {
    same_dtype(*out, input, op, "out", "input");
    on_device(*out, input, op, "out", "input");
    same_shape(*out, input.sizes(), op, "out");
  }
  at::Tensor result = out ? *out : at::empty_like(input);
  const Rows o = rows_of(result, op, "out");
  TORCH_CHECK_VALUE(!out || !overlaps(*out, weight), op, ": out shares elements with weight");
  // out may be input itself (in place, as sgl_kernel allows); any other shared element is refused by ktune's
  // own check (kernels/common/norm_rows/checks.hpp, by element as here).
  if (in.rows == 0 || h == 0) return result;
  const c10::cuda::CUDAGuard guard(input.device());
  check(entry(dt, result.data_ptr(), input.data_ptr(), weight.data_ptr(), in.rows, h, static_cast<float>(eps),
              current_stream(input), o.stride, in.stride),
        op);
  return result;
}

at::Tensor rmsnorm(const at::Tensor& input, const at::Tensor& weight, double eps, std::optional<at::Tensor> out,
                   std::optional<bool> /*enable_pdl: accepted for sgl_kernel's signature; the tuned variant decides*/) {
  return norm_out("rmsnorm", &ktune::rmsnorm, input, weight, eps, std::move(out));
}
at::Tensor gemma_rmsnorm(const at::Tensor& input, const at::Tensor& weight, double eps, std::optional<at::Tensor> out,
                         std::optional<bool> /*enable_pdl: accepted for sgl_kernel's signature*/) {
  return norm_out("gemma_rmsnorm", &ktune::gemma_rmsnorm, input, weight, eps, std::move(out));
}

// ---- fused_add_rmsnorm, gemma_fused_add_rmsnorm: in place, residual += input; input = norm(residual) ---

/// The runtime-dtype entry of one in-place RMS norm op with a residual (they share a signature).
using FusedAddEntry = ktune::Status (*)(ktune::DType, void*, void*, const void*, std::int64_t, std::int64_t, float,
                                        cudaStream_t, std::int64_t, std::int64_t);

void fused_add_norm(const char* op, FusedAddEntry entry, at::Tensor input, at::Tensor residual, const at::Tensor& weight,
                    double eps) {
  const ktune::DType dt = element_type(input, op, "input");
  same_dtype(residual, input, op, "residual", "input");
  same_dtype(weight, input, op, "weight", "input");
  on_device(input, input, op, "input", "input");
  on_device(residual, input, op, "residual", "input");
  on_device(weight, input, op, "weight", "input");
  TORCH_CHECK_VALUE(input.dim() == 2, op, ": input must be 2-D [tokens, hidden], it has shape ", input.sizes());
  same_shape(residual, input.sizes(), op, "residual");
  const std::int64_t h = input.size(1);
  TORCH_CHECK_VALUE(weight.dim() == 1 && weight.size(0) == h, op, ": weight must be [hidden] = [", h,
                    "], it has shape ", weight.sizes());
  TORCH_CHECK_VALUE(h <= 1 || weight.stride(0) == 1, op, ": weight is not contiguous; pass weight.contiguous()");
  const Rows in = rows_of(input, op, "input");
  const Rows res = rows_of(residual, op, "residual");
  TORCH_CHECK_VALUE(!overlaps(input, residual), op, ": input and residual share elements (both are written)");
  TORCH_CHECK_VALUE(!overlaps(input, weight) && !overlaps(residual, weight), op,
                    ": weight shares elements with input or residual (they are written)");
  if (in.rows == 0) return;
  const c10::cuda::CUDAGuard guard(input.device());
  check(entry(dt, input.data_ptr(), residual.data_ptr(), weight.data_ptr(), in.rows, h, static_cast<float>(eps),
              current_stream(input), in.stride, res.stride),
        op);
}

void fused_add_rmsnorm(at::Tensor input, at::Tensor residual, const at::Tensor& weight, double eps,
                       std::optional<bool> /*enable_pdl: accepted for sgl_kernel's signature; the tuned variant decides*/) {
  fused_add_norm("fused_add_rmsnorm", &ktune::fused_add_rmsnorm, std::move(input), std::move(residual), weight, eps);
}
void gemma_fused_add_rmsnorm(at::Tensor input, at::Tensor residual, const at::Tensor& weight, double eps,
                             std::optional<bool> /*enable_pdl: accepted for sgl_kernel's signature*/) {
  fused_add_norm("gemma_fused_add_rmsnorm", &ktune::gemma_fused_add_rmsnorm, std::move(input), std::move(residual),
                 weight, eps);
}

// ---- merge_state_v2 -------------------------------------------------------------------------------

/// v [tokens, heads, head_size] with heads and head_size contiguous: its token stride (-1 for one token).
std::int64_t token_stride(const at::Tensor& v, const char* op, const char* name) {
  const std::int64_t heads = v.size(1), head_size = v.size(2);
  TORCH_CHECK_VALUE((head_size <= 1 || v.stride(2) == 1) && (heads <= 1 || v.stride(1) == head_size), op, ": ", name,
                    " must have contiguous heads and head_size (strides [*, ", head_size, ", 1]), it has strides ",
                    v.strides(), "; pass ", name, ".contiguous()");
  if (v.size(0) <= 1) return -1;
  TORCH_CHECK_VALUE(v.stride(0) >= heads * head_size, op, ": the tokens of ", name, " overlap (token stride ",
                    v.stride(0), " < heads * head_size); pass ", name, ".contiguous()");
  return v.stride(0);
}

std::tuple<at::Tensor, at::Tensor> merge_state_v2(const at::Tensor& v_a, at::Tensor s_a, const at::Tensor& v_b,
                                                  at::Tensor s_b, std::optional<at::Tensor> v_merged,
                                                  std::optional<at::Tensor> s_merged) {
  constexpr const char* op = "merge_state_v2";
  const ktune::DType dt = element_type(v_a, op, "v_a");
  same_dtype(v_b, v_a, op, "v_b", "v_a");
  for (const auto& [t, name] : {std::pair<const at::Tensor&, const char*>{v_b, "v_b"}, {s_a, "s_a"}, {s_b, "s_b"}})
    on_device(t, v_a, op, name, "v_a");
  on_device(v_a, v_a, op, "v_a", "v_a");
  TORCH_CHECK_VALUE(v_a.dim() == 3, op, ": v_a must be 3-D [tokens, heads, head_size], it has shape ", v_a.sizes());
  same_shape(v_b, v_a.sizes(), op, "v_b");
  const std::int64_t tokens = v_a.size(0), heads = v_a.size(1), head_size = v_a.size(2);
  const std::vector<std::int64_t> lse_shape = {tokens, heads};
  same_shape(s_a, lse_shape, op, "s_a");
  same_shape(s_b, lse_shape, op, "s_b");
  // As sgl_kernel does: the LSEs are taken in float32 (a float16 or bfloat16 one is converted first).
  for (at::Tensor* s : {&s_a, &s_b}) {
    TORCH_CHECK_TYPE(at::isFloatingType(s->scalar_type()), op, ": an LSE (s_a, s_b) has dtype ", s->scalar_type(),
                     "; it must be floating point (it is taken in float32)");
    if (s->scalar_type() != at::kFloat) *s = s->to(at::kFloat);
  }
  TORCH_CHECK_VALUE(s_a.is_contiguous() && s_b.is_contiguous(), op,
                    ": s_a and s_b must be contiguous [tokens, heads]; pass s.contiguous()");
  TORCH_CHECK_VALUE(heads >= 1 && head_size >= 1, op, ": heads and head_size must be at least 1, v_a has shape ",
                    v_a.sizes());
  const std::int64_t a_stride = token_stride(v_a, op, "v_a"), b_stride = token_stride(v_b, op, "v_b");
  if (v_merged) {
    same_dtype(*v_merged, v_a, op, "v_merged", "v_a");
    on_device(*v_merged, v_a, op, "v_merged", "v_a");
    same_shape(*v_merged, v_a.sizes(), op, "v_merged");
  }
  if (s_merged) {
    TORCH_CHECK_TYPE(s_merged->scalar_type() == at::kFloat, op, ": s_merged has dtype ", s_merged->scalar_type(),
                     "; it must be float32");
    on_device(*s_merged, v_a, op, "s_merged", "v_a");
    same_shape(*s_merged, lse_shape, op, "s_merged");
    TORCH_CHECK_VALUE(s_merged->is_contiguous(), op, ": s_merged must be contiguous [tokens, heads]");
  }
  const std::int64_t out_stride = v_merged ? token_stride(*v_merged, op, "v_merged") : -1;
  // s_a and s_b are non-const copies (converted to float32 above): name the element type.
  for (const at::Tensor* in : std::initializer_list<const at::Tensor*>{&v_a, &v_b, &s_a, &s_b}) {
    TORCH_CHECK_VALUE(!v_merged || !overlaps(*v_merged, *in), op, ": v_merged shares elements with an input");
    TORCH_CHECK_VALUE(!s_merged || !overlaps(*s_merged, *in), op, ": s_merged shares elements with an input");
  }
  TORCH_CHECK_VALUE(!v_merged || !s_merged || !overlaps(*v_merged, *s_merged), op,
                    ": v_merged shares elements with s_merged");
  at::Tensor v_out = v_merged ? *v_merged : at::empty(v_a.sizes(), v_a.options());
  at::Tensor s_out = s_merged ? *s_merged : at::empty(lse_shape, s_a.options());
  if (tokens == 0) return {v_out, s_out};
  const c10::cuda::CUDAGuard guard(v_a.device());
  check(ktune::merge_attn_states_lse(dt, v_out.data_ptr(), s_out.data_ptr<float>(), v_a.data_ptr(),
                                     s_a.data_ptr<float>(), v_b.data_ptr(), s_b.data_ptr<float>(), tokens, heads,
                                     head_size, current_stream(v_a), out_stride, a_stride, b_stride),
        op);
  return {v_out, s_out};
}

// ---- apply_rope_with_cos_sin_cache_inplace --------------------------------------------------------

/// query or key [tokens, ...] seen as sgl_kernel views it, [tokens, heads, head_size]: everything after the
/// token dimension must be one contiguous row of heads * head_size elements. Sets heads and the token
/// stride (-1 for at most one token).
void rope_rows(const at::Tensor& t, std::int64_t head_size, const char* op, const char* name, std::int64_t& heads,
               std::int64_t& stride) {
  TORCH_CHECK_VALUE(t.dim() >= 2, op, ": ", name, " must be [tokens, heads * head_size] or [tokens, heads, head_size], "
                    "it has shape ", t.sizes());
  std::int64_t row = 1, expected = 1;
  for (std::int64_t i = t.dim() - 1; i >= 1; --i) {
    row *= t.size(i);
    if (t.size(i) == 1) continue;
    TORCH_CHECK_VALUE(t.stride(i) == expected, op, ": each token's row of ", name, " (shape ", t.sizes(), ", strides ",
                      t.strides(), ") is not contiguous; pass ", name, ".contiguous()");
    expected *= t.size(i);
  }
  TORCH_CHECK_VALUE(row % head_size == 0 && row > 0, op, ": ", name, "'s row of ", row,
                    " elements is no whole number of heads of head_size ", head_size);
  heads = row / head_size;
  stride = -1;
  if (t.size(0) > 1) {
    TORCH_CHECK_VALUE(t.stride(0) >= row, op, ": the tokens of ", name, " overlap (token stride ", t.stride(0), " < ",
                      row, "); pass ", name, ".contiguous()");
    stride = t.stride(0);
  }
}

/// sgl_kernel's FusedSetKVBufferArg, read from the Python object by attribute name (a dataclass there; any object
/// with these attributes here): value [tokens, kv_heads * head_size] or [tokens, kv_heads, head_size], k_buffer and
/// v_buffer [cache_rows, kv_heads, head_size] or [cache_rows, kv_heads * head_size], k_scale and v_scale None or a
/// number, cache_loc [tokens] of an integer type.
struct SetKvBufferArg {
  at::Tensor value, k_buffer, v_buffer, cache_loc;
  float k_scale = 1.f, v_scale = 1.f;  // None: 1, no division (x / 1 is x exactly)
};

SetKvBufferArg set_kv_buffer_arg(const pybind11::object& arg, const char* op) {
  namespace py = pybind11;
  SetKvBufferArg r;
  auto tensor = [&](const char* name) {
    TORCH_CHECK_TYPE(py::hasattr(arg, name), op, ": fused_set_kv_buffer_arg has no attribute '", name,
                     "' (sgl_kernel's FusedSetKVBufferArg: value, k_buffer, v_buffer, k_scale, v_scale, cache_loc)");
    const py::object v = arg.attr(name);
    TORCH_CHECK_TYPE(THPVariable_Check(v.ptr()), op, ": fused_set_kv_buffer_arg.", name, " must be a torch.Tensor");
    return THPVariable_Unpack(v.ptr());
  };
  auto scale = [&](const char* name) {
    if (!py::hasattr(arg, name)) return 1.f;
    const py::object v = arg.attr(name);
    if (v.is_none()) return 1.f;
    TORCH_CHECK_TYPE(py::isinstance<py::float_>(v) || py::isinstance<py::int_>(v), op, ": fused_set_kv_buffer_arg.",
                     name, " must be None or a number");
    const double x = v.cast<double>();
    TORCH_CHECK_VALUE(std::isfinite(x) && x > 0, op, ": fused_set_kv_buffer_arg.", name, " must be finite and > 0, it is ", x);
    return static_cast<float>(x);
  };
  r.value = tensor("value");
  r.k_buffer = tensor("k_buffer");
  r.v_buffer = tensor("v_buffer");
  r.cache_loc = tensor("cache_loc");
  r.k_scale = scale("k_scale");
  r.v_scale = scale("v_scale");
  return r;
}

/// The fused path: q and k rotated, k and v stored at cache_loc's slots, in one kernel
/// (ktune::rotary_embedding_set_kv). Checked as the rope's call, plus the KV cache's tensors.
void rope_set_kv(const at::Tensor& pos, at::Tensor& query, at::Tensor& key, std::int64_t head_size,
                 const at::Tensor& cos_sin_cache, bool is_neox, const SetKvBufferArg& kv, ktune::DType dt,
                 std::int64_t tokens, std::int64_t q_heads, std::int64_t kv_heads, std::int64_t q_stride,
                 std::int64_t k_stride, const char* op) {
  const at::Tensor& value = kv.value;
  same_dtype(value, query, op, "fused_set_kv_buffer_arg.value", "query");
  same_dtype(kv.k_buffer, query, op, "fused_set_kv_buffer_arg.k_buffer", "query");
  same_dtype(kv.v_buffer, query, op, "fused_set_kv_buffer_arg.v_buffer", "query");
  on_device(value, query, op, "fused_set_kv_buffer_arg.value", "query");
  on_device(kv.k_buffer, query, op, "fused_set_kv_buffer_arg.k_buffer", "query");
  on_device(kv.v_buffer, query, op, "fused_set_kv_buffer_arg.v_buffer", "query");
  on_device(kv.cache_loc, query, op, "fused_set_kv_buffer_arg.cache_loc", "query");
  TORCH_CHECK_TYPE(!at::isFloatingType(kv.cache_loc.scalar_type()) && kv.cache_loc.scalar_type() != at::kBool, op,
                   ": fused_set_kv_buffer_arg.cache_loc has dtype ", kv.cache_loc.scalar_type(),
                   "; it must be an integer type");
  TORCH_CHECK_VALUE(kv.cache_loc.dim() == 1 && kv.cache_loc.size(0) == tokens, op,
                    ": fused_set_kv_buffer_arg.cache_loc must be [tokens] = [", tokens, "], it has shape ",
                    kv.cache_loc.sizes());
  TORCH_CHECK_VALUE(value.dim() >= 1 && value.size(0) == tokens, op, ": fused_set_kv_buffer_arg.value has ",
                    value.dim() >= 1 ? value.size(0) : 0, " tokens, query ", tokens);
  std::int64_t v_heads = 0, v_stride = -1, kb_heads = 0, kb_stride = -1, vb_heads = 0, vb_stride = -1;
  rope_rows(value, head_size, op, "fused_set_kv_buffer_arg.value", v_heads, v_stride);
  rope_rows(kv.k_buffer, head_size, op, "fused_set_kv_buffer_arg.k_buffer", kb_heads, kb_stride);
  rope_rows(kv.v_buffer, head_size, op, "fused_set_kv_buffer_arg.v_buffer", vb_heads, vb_stride);
  TORCH_CHECK_VALUE(v_heads == kv_heads && kb_heads == kv_heads && vb_heads == kv_heads, op,
                    ": value, k_buffer and v_buffer must have key's ", kv_heads, " heads of ", head_size,
                    " per row; they have ", v_heads, ", ", kb_heads, " and ", vb_heads);
  const std::int64_t cache_rows = kv.k_buffer.size(0);
  TORCH_CHECK_VALUE(kv.v_buffer.size(0) == cache_rows, op, ": k_buffer has ", cache_rows, " slots, v_buffer ",
                    kv.v_buffer.size(0));
  // Nothing a call writes may share an element with anything else it touches (by element: slices of one qkv or
  // one KV buffer are fine).
  const std::pair<const at::Tensor*, const char*> written[] = {
      {&query, "query"}, {&key, "key"}, {&kv.k_buffer, "k_buffer"}, {&kv.v_buffer, "v_buffer"}};
  const std::pair<const at::Tensor*, const char*> read[] = {
      {&value, "value"}, {&cos_sin_cache, "cos_sin_cache"}, {&pos, "positions"}, {&kv.cache_loc, "cache_loc"}};
  for (std::size_t i = 0; i < 4; ++i) {
    for (std::size_t j = i + 1; j < 4; ++j)
      TORCH_CHECK_VALUE(!overlaps(*written[i].first, *written[j].first), op, ": ", written[i].second, " and ",
                        written[j].second, " share elements (both are written)");
    for (const auto& [t, name] : read)
      TORCH_CHECK_VALUE(!overlaps(*written[i].first, *t), op, ": ", written[i].second, " shares elements with ", name,
                        " (", written[i].second, " is written)");
  }
  if (tokens == 0) return;
  const c10::cuda::CUDAGuard guard(query.device());
  const at::Tensor loc = kv.cache_loc.scalar_type() == at::kLong ? kv.cache_loc.contiguous()
                                                                  : kv.cache_loc.to(at::kLong).contiguous();
  check(ktune::rotary_embedding_set_kv(dt, pos.data_ptr<std::int64_t>(), query.data_ptr(), key.data_ptr(), head_size,
                                       cos_sin_cache.data_ptr<float>(), is_neox, value.data_ptr(), kv.k_buffer.data_ptr(),
                                       kv.v_buffer.data_ptr(), kv.k_scale, kv.v_scale, loc.data_ptr<std::int64_t>(),
                                       tokens, q_heads, kv_heads, cos_sin_cache.size(1), cos_sin_cache.size(0),
                                       cache_rows, current_stream(query), q_stride, k_stride, v_stride,
                                       kb_stride, vb_stride),
        op);
}

void apply_rope_with_cos_sin_cache_inplace(const at::Tensor& positions, at::Tensor query, at::Tensor key,
                                           std::int64_t head_size, const at::Tensor& cos_sin_cache, bool is_neox,
                                           const pybind11::object& fused_set_kv_buffer_arg,
                                           std::optional<bool> /*enable_pdl: accepted for sgl_kernel's signature*/) {
  constexpr const char* op = "apply_rope_with_cos_sin_cache_inplace";
  const ktune::DType dt = element_type(query, op, "query");
  same_dtype(key, query, op, "key", "query");
  on_device(query, query, op, "query", "query");
  on_device(key, query, op, "key", "query");
  on_device(positions, query, op, "positions", "query");
  on_device(cos_sin_cache, query, op, "cos_sin_cache", "query");
  // As sgl_kernel: the cache must be float32, positions of any integer type are taken as int64.
  TORCH_CHECK_VALUE(cos_sin_cache.scalar_type() == at::kFloat, op, ": cos_sin_cache should be float32, it is ",
                    cos_sin_cache.scalar_type());
  TORCH_CHECK_TYPE(!at::isFloatingType(positions.scalar_type()) && positions.scalar_type() != at::kBool, op,
                   ": positions has dtype ", positions.scalar_type(), "; it must be an integer type");
  TORCH_CHECK_VALUE(head_size >= 1, op, ": head_size must be at least 1, it is ", head_size);
  const std::int64_t tokens = query.size(0);
  TORCH_CHECK_VALUE(key.dim() >= 1 && key.size(0) == tokens, op, ": key has ", key.dim() >= 1 ? key.size(0) : 0,
                    " tokens, query ", tokens);
  TORCH_CHECK_VALUE(positions.dim() == 1 && positions.size(0) == tokens, op, ": positions must be [tokens] = [",
                    tokens, "], it has shape ", positions.sizes());
  TORCH_CHECK_VALUE(cos_sin_cache.dim() == 2 && cos_sin_cache.is_contiguous(), op,
                    ": cos_sin_cache must be a contiguous [max_pos, rotary_dim], it has shape ", cos_sin_cache.sizes());
  std::int64_t q_heads = 0, kv_heads = 0, q_stride = -1, k_stride = -1;
  rope_rows(query, head_size, op, "query", q_heads, q_stride);
  rope_rows(key, head_size, op, "key", kv_heads, k_stride);
  if (!fused_set_kv_buffer_arg.is_none()) {
    const SetKvBufferArg kv = set_kv_buffer_arg(fused_set_kv_buffer_arg, op);
    const at::Tensor pos = positions.scalar_type() == at::kLong ? positions.contiguous() : positions.to(at::kLong).contiguous();
    rope_set_kv(pos, query, key, head_size, cos_sin_cache, is_neox, kv, dt, tokens, q_heads, kv_heads, q_stride,
                k_stride, op);
    return;
  }
  // By element: q and k split from one packed qkv tensor interleave without sharing one.
  TORCH_CHECK_VALUE(!overlaps(query, key), op, ": query and key share elements (both are written)");
  TORCH_CHECK_VALUE(!overlaps(query, cos_sin_cache) && !overlaps(key, cos_sin_cache), op,
                    ": cos_sin_cache shares elements with query or key (they are written)");
  if (tokens == 0) return;
  const c10::cuda::CUDAGuard guard(query.device());
  const at::Tensor pos = positions.scalar_type() == at::kLong ? positions.contiguous() : positions.to(at::kLong).contiguous();
  check(ktune::rotary_embedding(dt, pos.data_ptr<std::int64_t>(), query.data_ptr(), key.data_ptr(), head_size,
                                cos_sin_cache.data_ptr<float>(), is_neox, tokens, q_heads, kv_heads,
                                cos_sin_cache.size(1), cos_sin_cache.size(0), current_stream(query), q_stride, k_stride),
        op);
}

// ---- which variant a call uses --------------------------------------------------------------------

std::tuple<std::string, std::string> variant(const std::string& op, const at::ScalarType dtype, std::int64_t tokens,
                                             std::int64_t width) {
  const at::Tensor probe = at::empty({0}, at::TensorOptions().dtype(dtype));
  const ktune::DType dt = element_type(probe, "variant", "dtype");
  ktune::TunedChoice c;
  ktune::Status st = ktune::Status::invalid(
      "unknown op (silu_and_mul, gelu_and_mul, gelu_tanh_and_mul, rmsnorm, gemma_rmsnorm, fused_add_rmsnorm, "
      "gemma_fused_add_rmsnorm, merge_state_v2, apply_rope_with_cos_sin_cache_inplace, "
      "apply_rope_with_cos_sin_cache_inplace+set_kv_buffer)");
  if (op == "silu_and_mul") st = ktune::silu_and_mul_choice(dt, tokens, width, c);
  if (op == "gelu_and_mul") st = ktune::gelu_and_mul_choice(dt, tokens, width, c);
  if (op == "gelu_tanh_and_mul") st = ktune::gelu_tanh_and_mul_choice(dt, tokens, width, c);
  if (op == "rmsnorm") st = ktune::rmsnorm_choice(dt, tokens, width, c);
  if (op == "gemma_rmsnorm") st = ktune::gemma_rmsnorm_choice(dt, tokens, width, c);
  if (op == "fused_add_rmsnorm") st = ktune::fused_add_rmsnorm_choice(dt, tokens, width, c);
  if (op == "gemma_fused_add_rmsnorm") st = ktune::gemma_fused_add_rmsnorm_choice(dt, tokens, width, c);
  if (op == "merge_state_v2") st = ktune::merge_attn_states_lse_choice(dt, tokens, width, c);
  if (op == "apply_rope_with_cos_sin_cache_inplace") st = ktune::rotary_embedding_choice(dt, tokens, width, c);
  if (op == "apply_rope_with_cos_sin_cache_inplace+set_kv_buffer")
    st = ktune::rotary_embedding_set_kv_choice(dt, tokens, width, c);
  check(st, "variant");
  return {c.id ? c.id : "", ktune::to_string(c.source)};
}

}  // namespace

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  namespace py = pybind11;
  m.doc() = "ktune's tuned activation-and-mul, RMS norm, merge_state_v2 and apply_rope_with_cos_sin_cache_inplace "
            "kernels with sgl_kernel's signatures";
  m.def("silu_and_mul", &silu_and_mul, py::arg("input"), py::arg("out") = py::none(),
        "out[..., i] = silu(input[..., i]) * input[..., d + i] for input [..., 2d]; returns out [..., d]");
  m.def("gelu_and_mul", &gelu_and_mul, py::arg("input"), py::arg("out") = py::none(),
        "out[..., i] = gelu(input[..., i]) * input[..., d + i] (erf GELU) for input [..., 2d]; returns out [..., d]");
  m.def("gelu_tanh_and_mul", &gelu_tanh_and_mul, py::arg("input"), py::arg("out") = py::none(),
        "out[..., i] = gelu_tanh(input[..., i]) * input[..., d + i] (tanh GELU) for input [..., 2d]; returns out [..., d]");
  m.def("rmsnorm", &rmsnorm, py::arg("input"), py::arg("weight"), py::arg("eps") = 1e-6, py::arg("out") = py::none(),
        py::arg("enable_pdl") = py::none(),
        "out = input * rsqrt(mean(input^2) + eps) * weight per row of input [..., hidden]; returns out (may be input)");
  m.def("gemma_rmsnorm", &gemma_rmsnorm, py::arg("input"), py::arg("weight"), py::arg("eps") = 1e-6,
        py::arg("out") = py::none(), py::arg("enable_pdl") = py::none(),
        "out = input * rsqrt(mean(input^2) + eps) * (1 + weight) per row of input [..., hidden]; returns out");
  m.def("fused_add_rmsnorm", &fused_add_rmsnorm, py::arg("input"), py::arg("residual"), py::arg("weight"),
        py::arg("eps") = 1e-6, py::arg("enable_pdl") = py::none(),
        "In place: residual += input; input = rmsnorm(residual) * weight. input, residual [tokens, hidden]");
  m.def("gemma_fused_add_rmsnorm", &gemma_fused_add_rmsnorm, py::arg("input"), py::arg("residual"), py::arg("weight"),
        py::arg("eps") = 1e-6, py::arg("enable_pdl") = py::none(),
        "In place: residual += input; input = rmsnorm(residual) * (1 + weight). input, residual [tokens, hidden]");
  m.def("merge_state_v2", &merge_state_v2, py::arg("v_a"), py::arg("s_a"), py::arg("v_b"), py::arg("s_b"),
        py::arg("v_merged") = py::none(), py::arg("s_merged") = py::none(),
        "Merges two attention states v [tokens, heads, head_size] by their LSEs s [tokens, heads]; returns "
        "(v_merged, s_merged)");
  m.def("apply_rope_with_cos_sin_cache_inplace", &apply_rope_with_cos_sin_cache_inplace, py::arg("positions"),
        py::arg("query"), py::arg("key"), py::arg("head_size"), py::arg("cos_sin_cache"), py::arg("is_neox") = true,
        py::arg("fused_set_kv_buffer_arg") = py::none(), py::arg("enable_pdl") = py::none(),
        "In place: rotary embedding of query [tokens, q_heads * head_size] and key [tokens, kv_heads * head_size] at "
        "positions [tokens], with cos_sin_cache [max_pos, rotary_dim] (float32, cos then sin); neox or GPT-J pairs. "
        "With fused_set_kv_buffer_arg (value, k_buffer, v_buffer, k_scale, v_scale, cache_loc), the same kernel also "
        "stores the rotated k and value / scale at k_buffer[cache_loc] and v_buffer[cache_loc]");
  m.def("variant", &variant, py::arg("op"), py::arg("dtype"), py::arg("tokens"), py::arg("width"),
        "(variant id, why) for a call of op with this dtype and size on the current device; width is d, hidden, "
        "heads or query heads");
}
