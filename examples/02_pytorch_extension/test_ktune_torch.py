#!/usr/bin/env python3
"""Checks ktune_torch against plain PyTorch, then times it (README.md beside this file).

    python3 test_ktune_torch.py [--quick] [--json PATH] [--no-bench] [--no-compile] [--verbose]

1. correctness: every op against a float64 PyTorch reference of the same stored inputs, for fp32, fp16
   and bf16, ragged shapes, strided rows (slices of wider rows, every other row, rows one element past
   alignment) and strided outputs; outputs are poisoned with NaN first, and every tensor sits in a
   guarded allocation, so an element not written, or written outside the tensor, is caught;
   1b. views of one buffer: views that interleave without sharing an element (q and k split from one packed
   qkv tensor, the halves of a [T, 2h] buffer, rows of different strides) are taken and computed right;
   views that share an element, and transposed pairs, are refused with ValueError and nothing written;
   the rope with fused_set_kv_buffer_arg also against the KV cache's float64 reference, every slot no token
   stores into checked bit for bit;
2. errors: wrong dtypes raise TypeError, wrong devices, shapes and layouts ValueError, and a call that
   raises has written nothing;
3. CUDA graphs: each op captured and replayed gives bitwise the eager result, also on new input data;
4. timing (unless --no-bench): ktune against the same op in eager PyTorch and under torch.compile, with
   a cold L2 (one call at a time, 256 MiB written between calls, launch overhead hidden) and inside a
   CUDA graph (20 calls back to back), median GPU times from CUDA events.

Exits 0 when every check passes, 1 otherwise; prints "SKIPPED: <reason>" and exits 0 where PyTorch or a
CUDA device is missing.
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import math
import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

EXAMPLE_DIR = Path(__file__).resolve().parent


def _load_beside(name: str, file: str):
    """A module of this folder, by path: a package of the same name on sys.path (PyPA's `build`) must not
    shadow it."""
    spec = importlib.util.spec_from_file_location(name, EXAMPLE_DIR / file)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up while the class is made
    spec.loader.exec_module(module)
    return module


spec_reader = _load_beside("ktune_torch_spec_reader", "spec_reader.py")  # plain Python: no PyTorch needed
Tolerance = spec_reader.Tolerance
SEED = 20240611
GUARD = 64            # elements either side of every tensor under test (128 bytes or more: keeps alignment)
NAN = float("nan")
INF = float("inf")
FLUSH_BYTES = 256 << 20
SLEEP_CYCLES = 1_000_000  # about 0.5 ms of GPU clock: longer than any call's CPU side

try:  # the whole script needs PyTorch; without it, it only says why it skips
    import torch
    import torch.nn.functional as F
    TORCH_ERROR = None
except Exception as e:  # not installed, or an install that fails to import
    torch = None
    F = None
    TORCH_ERROR = f"{type(e).__name__}: {e}"

DTYPE_NAMES = {"fp32": "float32", "fp16": "float16", "bf16": "bfloat16"}


def dtype_of(name: str):
    return getattr(torch, DTYPE_NAMES[name])


def name_of(dtype) -> str:
    return next(k for k, v in DTYPE_NAMES.items() if getattr(torch, v) == dtype)


# ---- results --------------------------------------------------------------------------------------

class Report:
    """Counts checks; a check passes when it returns no problems and raises nothing."""

    def __init__(self, verbose: bool):
        self.verbose = verbose
        self.passed = 0
        self.failures: list[str] = []
        self.mark = (0, 0)  # counts when the current group of checks began

    def section(self, title: str) -> None:
        print(f"\n== {title}", flush=True)
        self.mark = (self.passed, len(self.failures))

    def end_section(self, what: str) -> None:
        """Prints the counts of the checks since the last section() or end_section()."""
        passed, failed = self.passed - self.mark[0], len(self.failures) - self.mark[1]
        print(f"{what}: {passed} passed, {failed} failed", flush=True)
        self.mark = (self.passed, len(self.failures))

    def run(self, name: str, check: Callable[[], list[str]]) -> bool:
        try:
            problems = check()
        except Exception as e:
            problems = [f"raised {type(e).__name__}: {first_line(e)}"]
        if problems:
            self.failures.append(f"{name}: {'; '.join(problems)}")
            print(f"FAIL {name}: {'; '.join(problems)}", flush=True)
            return False
        self.passed += 1
        if self.verbose:
            print(f"ok   {name}", flush=True)
        return True


def first_line(e: BaseException) -> str:
    text = str(e).strip().splitlines()
    return text[0][:300] if text else type(e).__name__


# ---- tensors under test ---------------------------------------------------------------------------

@dataclass(frozen=True)
class Layout:
    """Where the rows of a tensor [..., width] lie inside the buffer that holds it."""
    pad: int = 0       # extra elements at the end of every buffer row
    offset: int = 0    # where the tensor's row starts inside the buffer row
    row_step: int = 1  # 2: every other buffer row

    def buffer_shape(self, shape: tuple) -> tuple:
        lead = shape[:-1]
        if self.row_step > 1:
            if not lead:
                raise ValueError("a 1-D tensor has no rows to skip")
            lead = (lead[0] * self.row_step,) + lead[1:]
        return lead + (shape[-1] + self.pad,)

    def view(self, buffer, shape: tuple):
        v = buffer[..., self.offset:self.offset + shape[-1]]
        return v[::self.row_step] if self.row_step > 1 else v


LAYOUTS = {
    "contiguous": Layout(),
    "wide_rows": Layout(pad=64),               # a slice of wider rows: torch.randn(T, w + 64)[:, :w]
    "every_other_row": Layout(row_step=2),     # x[::2]
    "offset_1": Layout(pad=8, offset=1),       # rows one element past 16-byte alignment
}


def normal(n: int, gen):
    return torch.randn(n, generator=gen, device="cuda")


class Buffer:
    """A tensor of `shape` in a layout, inside one flat allocation with GUARD elements before and after,
    so that a write anywhere outside the tensor (padding, skipped rows, guards) shows.

    fill: a function (n, generator) -> float32 values for the whole allocation, a constant (NaN poisons
    an output), or a tensor of `shape` copied into the view (the rest random)."""

    def __init__(self, shape, dtype, layout: str, fill, gen, split: tuple | None = None):
        self.shape = tuple(shape)
        self.layout = LAYOUTS[layout]
        self.split = split  # (heads, head_size): the last dimension seen as two
        self.buffer_shape = self.layout.buffer_shape(self.shape)
        n = math.prod(self.buffer_shape) + 2 * GUARD
        if callable(fill):
            self.flat = fill(n, gen).to(dtype)
        elif isinstance(fill, float):
            self.flat = torch.full((n,), fill, dtype=dtype, device="cuda")
        else:
            self.flat = normal(n, gen).to(dtype)
            self._view(self.flat).copy_(fill.reshape(self._view(self.flat).shape))
        self.tensor = self._view(self.flat)
        self.initial = self.flat.clone()

    def _view(self, flat):
        base = flat[GUARD:GUARD + math.prod(self.buffer_shape)].view(self.buffer_shape)
        v = self.layout.view(base, self.shape)
        return v.unflatten(-1, self.split) if self.split else v

    def unchanged(self) -> bool:
        return same_bits(self.flat, self.initial)

    def unchanged_outside(self) -> bool:
        probe = self.flat.clone()
        self._view(probe).copy_(self._view(self.initial))
        return same_bits(probe, self.initial)


def bits(t):
    return t.view({1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}[t.element_size()])


def same_bits(a, b) -> bool:
    return a.shape == b.shape and a.dtype == b.dtype and a.device == b.device and torch.equal(bits(a), bits(b))


def spec_tolerances(root: Path, kernel: str) -> dict:
    """The op's spec.json tolerances, by torch dtype: the ones ktune's own correctness gate applies, every field
    spec.hpp reads (spec_reader.py, which `make test` runs on every op's spec without PyTorch); a dtype the
    spec does not measure (rotary_embedding's fp32, which sgl_kernel does not dispatch) gets ktune's default."""
    return {dtype_of(name): tol for name, tol in spec_reader.spec_tolerances(root, kernel).items()}


def unravel(i: int, shape) -> list[int]:
    index = []
    for size in reversed(shape):
        index.append(i % size)
        i //= size
    return index[::-1]


def compare(what: str, got, ref, tol: Tolerance) -> list[str]:
    """ktune's rule (include/ktune/verify.hpp): NaN and ±inf must match the reference exactly; every finite
    element within atol + rtol * |ref|; the relative L2 error over finite pairs within rel_l2, the reference's
    root mean square taken as at least tol.l2_floor() (atol, or the spec's rms_floor)."""
    if tuple(got.shape) != tuple(ref.shape):
        return [f"{what}: shape {list(got.shape)}, expected {list(ref.shape)}"]
    o, r = got.double(), ref.double()
    o_nan, r_nan = o.isnan(), r.isnan()
    bad = o_nan != r_nan
    bad |= (o.isinf() | r.isinf()) & ~o_nan & ~r_nan & (o != r)
    finite = o.isfinite() & r.isfinite()
    diff = torch.where(finite, (o - r).abs(), 0.0)
    bad |= finite & (diff > tol.atol + tol.rtol * r.abs())
    err2 = diff.square().sum().item()
    ref2 = torch.where(finite, r, 0.0).square().sum().item()
    rel_l2 = spec_reader.relative_l2(err2, ref2, o.numel(), tol.l2_floor())
    mismatched = int(bad.sum().item())
    if mismatched == 0 and rel_l2 <= tol.rel_l2:
        return []
    max_abs = diff.max().item() if diff.numel() else 0.0
    message = (f"{what}: rel_l2 {rel_l2:.3g} (limit {tol.rel_l2:g}), max_abs {max_abs:.3g}, {mismatched} of {o.numel()} "
               f"elements beyond {tol.atol:g} + {tol.rtol:g}*|ref| or mismatched NaN/inf")
    if mismatched:
        i = int(bad.flatten().nonzero()[0].item())
        message += f"; first at {unravel(i, o.shape)}: got {o.flatten()[i].item():.6g}, want {r.flatten()[i].item():.6g}"
    return [message]


def expect_tensor(what: str, t, shape: tuple, dtype) -> list[str]:
    problems = []
    if tuple(t.shape) != tuple(shape):
        problems.append(f"{what} has shape {list(t.shape)}, expected {list(shape)}")
    if t.dtype != dtype:
        problems.append(f"{what} has dtype {t.dtype}, expected {dtype}")
    if not t.is_cuda:
        problems.append(f"{what} is on {t.device}")
    return problems


# ---- references: the ops' semantics (kernels/<op>/reference.hpp) in float64 ------------------------

def ref_silu_and_mul(x):
    x = x.double()
    d = x.shape[-1] // 2
    a, b = x[..., :d], x[..., d:]
    return a / (1.0 + torch.exp(-a)) * b


def ref_fused_add_rmsnorm(inp, residual, weight, eps: float, weight_offset: float = 0.0):
    """(normalised input, new residual). eps is an fp32 argument of the kernels: the same value here.
    weight_offset 1: the Gemma ops' (1 + weight)."""
    eps32 = torch.tensor(eps, dtype=torch.float32).item()
    x = inp.double() + residual.double()
    inv_rms = torch.rsqrt(x.square().mean(dim=-1, keepdim=True) + eps32)
    return x * inv_rms * (weight_offset + weight.double()), x


def ref_rmsnorm(inp, weight, eps: float, weight_offset: float = 0.0):
    """rmsnorm (weight_offset 0) and gemma_rmsnorm (1) in float64, over the last dimension."""
    eps32 = torch.tensor(eps, dtype=torch.float32).item()
    x = inp.double()
    return x * torch.rsqrt(x.square().mean(dim=-1, keepdim=True) + eps32) * (weight_offset + weight.double())


def ref_merge_state(v_a, s_a, v_b, s_b):
    """Natural-log LSEs; ±inf means no keys (counts as -inf); both sides empty give v = 0, s = -inf."""
    s_a, s_b = s_a.double(), s_b.double()
    s_a = torch.where(s_a.isinf(), -INF, s_a)
    s_b = torch.where(s_b.isinf(), -INF, s_b)
    empty = (s_a == -INF) & (s_b == -INF)
    m = torch.where(empty, 0.0, torch.maximum(s_a, s_b))
    w_a, w_b = torch.exp(s_a - m), torch.exp(s_b - m)
    total = torch.where(empty, 1.0, w_a + w_b)
    v = v_a.double() * (w_a / total).unsqueeze(-1) + v_b.double() * (w_b / total).unsqueeze(-1)
    v = torch.where(empty.unsqueeze(-1), 0.0, v)
    s = torch.where(empty, -INF, torch.log(total) + m)
    return v, s


def ref_rope(positions, query, key, head_size: int, cache, is_neox: bool):
    """(query, key) rotated in float64: pairs (j, j + R/2) (neox) or (2j, 2j + 1) (GPT-J), j < R/2, with
    cos = cache[p, j], sin = cache[p, R/2 + j]; elements from R on unchanged."""
    rot = cache.shape[1]
    half = rot // 2
    cos = cache.double()[positions.long(), :half].unsqueeze(1)
    sin = cache.double()[positions.long(), half:].unsqueeze(1)

    def one(x):
        x = x.double().reshape(x.shape[0], -1, head_size).clone()
        r = x[..., :rot]
        if is_neox:
            a, b = r[..., :half].clone(), r[..., half:].clone()
            r[..., :half], r[..., half:] = a * cos - b * sin, b * cos + a * sin
        else:
            a, b = r[..., 0::2].clone(), r[..., 1::2].clone()
            r[..., 0::2], r[..., 1::2] = a * cos - b * sin, b * cos + a * sin
        return x

    return one(query), one(key)


def ref_set_kv(key_out, value, k_buffer, v_buffer, cache_loc, k_scale, v_scale):
    """(k_buffer, v_buffer) after the fused store, in float64: slot cache_loc[t] of k_buffer holds token t's rotated
    k (key_out, ref_rope's float64 result) divided by k_scale; v_buffer's holds value[t] / v_scale (None: 1). Every
    other slot keeps what it held."""
    rows, heads, d = k_buffer.shape[0], key_out.shape[1], key_out.shape[2]
    kb = k_buffer.double().reshape(rows, heads, d).clone()
    vb = v_buffer.double().reshape(rows, heads, d).clone()
    loc = cache_loc.long()
    kb[loc] = key_out.double().reshape(-1, heads, d) / (1.0 if k_scale is None else k_scale)
    vb[loc] = value.double().reshape(-1, heads, d) / (1.0 if v_scale is None else v_scale)
    return kb, vb


@dataclass
class FusedSetKVBufferArg:
    """sgl_kernel's FusedSetKVBufferArg (sgl_kernel/elementwise.py): the binding reads these attributes by name."""
    value: object
    k_buffer: object
    v_buffer: object
    k_scale: float | None
    v_scale: float | None
    cache_loc: object


# ---- plain PyTorch versions, as a serving engine writes them natively (timed, not references) -------

def gelu_and_mul_torch(x):
    d = x.shape[-1] // 2
    return F.gelu(x[..., :d]) * x[..., d:]


def gelu_tanh_and_mul_torch(x):
    d = x.shape[-1] // 2
    return F.gelu(x[..., :d], approximate="tanh") * x[..., d:]


def silu_and_mul_torch(x):
    d = x.shape[-1] // 2
    return F.silu(x[..., :d]) * x[..., d:]


def fused_add_rmsnorm_torch(x, residual, weight, eps: float = 1e-6):
    dtype = x.dtype
    x = x.float() + residual.float()
    residual = x.to(dtype)
    variance = x.pow(2).mean(dim=-1, keepdim=True)
    return (x * torch.rsqrt(variance + eps)).to(dtype) * weight, residual


def rmsnorm_torch(x, weight, eps: float = 1e-6):
    # SGLang's RMSNorm.forward_native without a residual.
    dtype = x.dtype
    x = x.float()
    return (x * torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + eps)).to(dtype) * weight


def gemma_rmsnorm_torch(x, weight, eps: float = 1e-6):
    # SGLang's GemmaRMSNorm.forward_native: the product with (1 + w) in float32, then one rounding.
    dtype = x.dtype
    x = x.float()
    x = x * torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + eps)
    return (x * (1.0 + weight.float())).to(dtype)


def gemma_fused_add_rmsnorm_torch(x, residual, weight, eps: float = 1e-6):
    dtype = x.dtype
    x = x.float() + residual.float()
    residual = x.to(dtype)
    x = x * torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + eps)
    return (x * (1.0 + weight.float())).to(dtype), residual


def merge_state_torch(v_a, s_a, v_b, s_b):
    # Finite LSEs only (the timed inputs are): the ±inf rules would cost this version extra kernels.
    m = torch.maximum(s_a, s_b)
    w_a, w_b = torch.exp(s_a - m), torch.exp(s_b - m)
    total = w_a + w_b
    v = v_a.float() * (w_a / total).unsqueeze(-1) + v_b.float() * (w_b / total).unsqueeze(-1)
    return v.to(v_a.dtype), torch.log(total) + m


def rope_torch(positions, query, key, head_size: int, cache, is_neox: bool = True):
    # SGLang's RotaryEmbedding.forward_native: gather the cache rows, rotate in float32, cast back.
    cos, sin = cache.index_select(0, positions).chunk(2, dim=-1)
    rot = cache.shape[1]

    def one(x):
        shape = x.shape
        x = x.view(x.shape[0], -1, head_size)
        r, rest = x[..., :rot].float(), x[..., rot:]
        c, s = cos.unsqueeze(1), sin.unsqueeze(1)
        if is_neox:
            a, b = r.chunk(2, dim=-1)
            out = torch.cat((a * c - b * s, b * c + a * s), dim=-1)
        else:
            a, b = r[..., 0::2], r[..., 1::2]
            out = torch.stack((a * c - b * s, b * c + a * s), dim=-1).flatten(-2)
        return torch.cat((out.to(x.dtype), rest), dim=-1).reshape(shape)

    return one(query), one(key)


def set_kv_buffer_torch(key, value, k_buffer, v_buffer, cache_loc):
    # SGLang's MHATokenToKVPool.set_kv_buffer (no scales): the cache rows at the tokens' slots.
    k_buffer[cache_loc] = key.view(key.shape[0], *k_buffer.shape[1:])
    v_buffer[cache_loc] = value.view(value.shape[0], *v_buffer.shape[1:])


def rope_set_kv_torch(positions, query, key, head_size: int, cache, value, k_buffer, v_buffer, cache_loc):
    # The unfused pair in plain PyTorch: the rope, then the store of its k and of v.
    q, k = rope_torch(positions, query, key, head_size, cache)
    set_kv_buffer_torch(k, value, k_buffer, v_buffer, cache_loc)
    return q, k


# ---- input values ---------------------------------------------------------------------------------

def rms_input(n: int, gen):
    """|input| in [8, ~13]: with residual in [-4, 4] and |weight| <= 1.5, |x| >= 4 and every output differs
    from the value it overwrites (|normalised| < 8 <= |input|, new residual - old = input), so an
    element the kernel did not write is caught although in-place outputs cannot be poisoned."""
    u = torch.randn(n, generator=gen, device="cuda")
    return torch.where(u < 0, u - 8, u + 8)


def rms_residual(n: int, gen):
    return torch.randn(n, generator=gen, device="cuda").clamp_(-4, 4)


def rms_weight(n: int, gen):
    magnitude = 0.25 + 1.25 * torch.rand(n, generator=gen, device="cuda")
    return torch.where(torch.rand(n, generator=gen, device="cuda") < 0.5, -magnitude, magnitude)


def gemma_weight(n: int, gen):
    """Gemma stores its norm weights as w - 1: values near 0, here [-0.5, 0.5], so 1 + w in [0.5, 1.5]
    (the in-place bound of rms_input holds, and a kernel that used w instead of 1 + w is caught)."""
    return torch.rand(n, generator=gen, device="cuda") - 0.5


def norm_input(n: int, gen):
    """rmsnorm's input: never 0 (|x| >= 0.25), so a lost element or weight shows."""
    u = torch.randn(n, generator=gen, device="cuda")
    return torch.where(u < 0, u - 0.25, u + 0.25)


def lse_pair(tokens: int, heads: int, gen, edge_cases: bool = True):
    """Natural-log LSEs of two partial attention states, close to each other as in real use, with the
    spec's edge cases planted: no prefix keys (-inf), no suffix keys (+inf, which counts as -inf), neither,
    and a suffix 300 below its prefix (its weight underflows to 0 in fp32)."""
    s_a = torch.randn(tokens, heads, generator=gen, device="cuda") * 8
    s_b = s_a + torch.randn(tokens, heads, generator=gen, device="cuda") * 2
    if edge_cases:
        i = torch.arange(tokens * heads, device="cuda").view(tokens, heads)
        s_b = torch.where(i % 23 == 11, s_a - 300, s_b)
        s_a = torch.where(i % 13 == 3, -INF, s_a)
        s_b = torch.where(i % 17 == 5, INF, s_b)
        both = i % 19 == 7
        s_a = torch.where(both, -INF, s_a)
        s_b = torch.where(both, -INF, s_b)
    return s_a, s_b


def rope_cache(max_pos: int, rotary_dim: int, base: float = 10000.0):
    """A real float32 cos/sin cache [max_pos, rotary_dim], as SGLang's RotaryEmbedding builds it."""
    inv_freq = 1.0 / (base ** (torch.arange(0, rotary_dim, 2, dtype=torch.float32, device="cuda") / rotary_dim))
    freqs = torch.outer(torch.arange(max_pos, dtype=torch.float32, device="cuda"), inv_freq)
    return torch.cat((freqs.cos(), freqs.sin()), dim=-1).contiguous()


def rope_positions(tokens: int, max_pos: int, gen):
    """Random positions with the cache's first and last rows among them."""
    p = torch.randint(0, max_pos, (tokens,), generator=gen, device="cuda")
    p[0] = 0
    p[-1] = max_pos - 1
    return p


# ---- 1. correctness -------------------------------------------------------------------------------

SILU_SHAPES = [((1,), 11008), ((7,), 1000), ((128,), 4096), ((1000,), 5120), ((64,), 14336), ((3,), 1), ((5,), 13),
               ((2, 5), 512), ((), 64)]  # (leading dimensions, d): input [..., 2d]
SILU_LAYOUTS = [("contiguous", "contiguous"), ("contiguous", None), ("wide_rows", "wide_rows"),
                ("every_other_row", "contiguous"), ("contiguous", "every_other_row"), ("offset_1", "offset_1"),
                ("wide_rows", "offset_1")]  # (input, out); None: out allocated by the call
RMS_SHAPES = [(1, 4096), (7, 1000), (128, 5120), (1000, 8192), (64, 11008), (3, 1), (5, 13)]  # (tokens, hidden)
NORM_SHAPES = [(1, 4096), (7, 1000), (128, 5120), (1000, 8192), (70000, 64), (3, 1), (5, 13)]  # rmsnorm, gemma_rmsnorm
NORM_LAYOUTS = [("contiguous", None, "contiguous", None), ("contiguous", "contiguous", "contiguous", 1e-5),
                ("wide_rows", "every_other_row", "contiguous", 1e-6), ("every_other_row", "wide_rows", "contiguous", 1e-6),
                ("offset_1", "offset_1", "offset_1", 1e-6), ("contiguous", "in_place", "contiguous", 1e-6),
                ("wide_rows", "in_place", "contiguous", None)]
                # (input, out, weight, eps); out None: allocated by the call; "in_place": out is input
RMS_LAYOUTS = [("contiguous", "contiguous", "contiguous", None), ("wide_rows", "wide_rows", "contiguous", 1e-5),
               ("every_other_row", "contiguous", "contiguous", 1e-6), ("contiguous", "every_other_row", "contiguous", 1e-6),
               ("offset_1", "offset_1", "offset_1", 1e-6), ("wide_rows", "offset_1", "contiguous", 1e-6)]
               # (input, residual, weight, eps); None: eps left to its default
MERGE_SHAPES = [(1, 32, 128), (7, 40, 128), (128, 32, 64), (1000, 32, 128), (5, 40, 96), (3, 1, 1), (4, 3, 13)]
MERGE_LAYOUTS = [("contiguous", "contiguous", "contiguous", True), ("contiguous", "contiguous", None, False),
                 ("contiguous", "contiguous", "contiguous", False), ("wide_rows", "every_other_row", "wide_rows", True),
                 ("offset_1", "offset_1", "offset_1", True), ("every_other_row", "wide_rows", "every_other_row", True)]
                 # (v_a, v_b, v_merged, s_merged given); None: allocated by the call


ROPE_SHAPES = [(1, 32, 8, 128, 128, 4096), (7, 40, 8, 128, 128, 64), (128, 64, 8, 128, 128, 4096),
               (5, 16, 1, 64, 64, 100), (9, 4, 2, 128, 64, 33), (3, 5, 3, 37, 22, 9)]
# (tokens, q_heads, kv_heads, head_size, rotary_dim, max_pos): LLaMA-3-8B, Qwen2.5-14B, LLaMA-3-70B, a
# DeepSeek-V3-like rope part, partial rotary, odd sizes
ROPE_LAYOUTS = ["contiguous", "wide_rows", "offset_1", "qkv_slices", "qkv_slices_3d", "3d"]
# qkv_slices: q, k, v = qkv.split([q_heads * D, kv_heads * D, kv_heads * D], dim=-1) of one packed qkv
# tensor, as SGLang's attention layers pass them; qkv_slices_3d: the same split of qkv.view(T, heads, D)
# along the heads. q and k interleave in one buffer without sharing an element.


def rope_case(mod, dtype, shape: tuple, layout: str, is_neox: bool, gen, tol) -> list[str]:
    tokens, q_heads, kv_heads, head_size, rotary_dim, max_pos = shape
    cache = rope_cache(max_pos, rotary_dim)
    positions = rope_positions(tokens, max_pos, gen)
    qw, kw = q_heads * head_size, kv_heads * head_size
    if layout.startswith("qkv_slices"):  # q, k = qkv.split(...): the token stride is the qkv row, as in SGLang
        qkv = Buffer((tokens, qw + 2 * kw), dtype, "contiguous", normal, gen)
        if layout == "qkv_slices":
            q, k, _ = qkv.tensor.split([qw, kw, kw], dim=-1)
        else:
            q, k, _ = qkv.tensor.view(tokens, q_heads + 2 * kv_heads, head_size).split([q_heads, kv_heads, kv_heads], dim=1)
        watched = [(qkv, "qkv")]
    else:
        qb = Buffer((tokens, qw), dtype, "contiguous" if layout == "3d" else layout, normal, gen,
                    (q_heads, head_size) if layout == "3d" else None)
        kb = Buffer((tokens, kw), dtype, "contiguous" if layout == "3d" else layout, normal, gen,
                    (kv_heads, head_size) if layout == "3d" else None)
        q, k = qb.tensor, kb.tensor
        watched = [(qb, "query"), (kb, "key")]
    want_q, want_k = ref_rope(positions, q, k, head_size, cache, is_neox)
    ret = mod.apply_rope_with_cos_sin_cache_inplace(positions, q, k, head_size, cache, is_neox)
    torch.cuda.synchronize()
    problems = [] if ret is None else [f"returned {type(ret).__name__}, expected None (in place)"]
    problems += compare("query", q.reshape(tokens, q_heads, head_size), want_q.to(torch.float64), tol)
    problems += compare("key", k.reshape(tokens, kv_heads, head_size), want_k.to(torch.float64), tol)
    if layout.startswith("qkv_slices"):
        v = qkv.tensor[:, qw + kw:]
        if not same_bits(v, qkv._view(qkv.initial)[:, qw + kw:]):
            problems.append("the v slice of qkv changed")
    for buf, what in watched:
        if not buf.unchanged_outside():
            problems.append(f"wrote outside {what}")
    return problems


ROPE_KV_SHAPES = [(1, 32, 8, 128, 128, 4096, 64), (7, 40, 8, 128, 128, 64, 20), (128, 64, 8, 128, 128, 4096, 300),
                  (5, 16, 1, 64, 64, 100, 11), (9, 4, 2, 128, 64, 33, 9), (3, 5, 3, 37, 22, 9, 7)]
# (tokens, q_heads, kv_heads, head_size, rotary_dim, max_pos, cache slots): ROPE_SHAPES with a KV cache larger
# than the tokens (slots no token writes must keep their bits)
ROPE_KV_LAYOUTS = ["contiguous", "qkv_slices", "qkv_slices_3d", "kv_2d", "kv_interleaved", "offset_1"]
# qkv_slices(_3d): query, key, value split from one packed qkv tensor (2-D or [T, heads, D]); kv_2d: k_buffer and
# v_buffer as [slots, kv_heads * head_size]; kv_interleaved: both halves of one [slots, 2, kv_heads, head_size]
# buffer (slot stride twice the row); offset_1: every tensor one element past 16-byte alignment
ROPE_KV_SCALES = [(None, None), (0.5, 2.0)]


def rope_set_kv_case(mod, dtype, shape: tuple, layout: str, is_neox: bool, scales: tuple, gen, tol) -> list[str]:
    tokens, q_heads, kv_heads, head_size, rotary_dim, max_pos, slots = shape
    cache = rope_cache(max_pos, rotary_dim)
    positions = rope_positions(tokens, max_pos, gen)
    loc = torch.randperm(slots, generator=gen, device="cuda")[:tokens]
    qw, kw = q_heads * head_size, kv_heads * head_size
    base = "offset_1" if layout == "offset_1" else "contiguous"
    if layout.startswith("qkv_slices"):
        qkv = Buffer((tokens, qw + 2 * kw), dtype, "contiguous", normal, gen)
        if layout == "qkv_slices":
            q, k, v = qkv.tensor.split([qw, kw, kw], dim=-1)
        else:
            q, k, v = qkv.tensor.view(tokens, q_heads + 2 * kv_heads, head_size).split([q_heads, kv_heads, kv_heads], dim=1)
        watched = [(qkv, "qkv")]
    else:
        qb, kb_, vb_ = (Buffer((tokens, w), dtype, base, normal, gen) for w in (qw, kw, kw))
        q, k, v = qb.tensor, kb_.tensor, vb_.tensor
        watched = [(qb, "query"), (kb_, "key"), (vb_, "value")]
    big = lambda n, g: normal(n, g) * 16  # slots' old contents: far from anything a call stores
    if layout == "kv_interleaved":
        kvb = Buffer((slots, 2 * kw), dtype, "contiguous", big, gen)
        both = kvb.tensor.view(slots, 2, kv_heads, head_size)
        k_buffer, v_buffer = both[:, 0], both[:, 1]
        watched.append((kvb, "kv buffer"))
    else:
        kbb, vbb = (Buffer((slots, kw), dtype, base, big, gen, None if layout == "kv_2d" else (kv_heads, head_size))
                    for _ in range(2))
        k_buffer, v_buffer = kbb.tensor, vbb.tensor
        watched += [(kbb, "k_buffer"), (vbb, "v_buffer")]
    kb0, vb0 = k_buffer.clone(), v_buffer.clone()
    v0 = v.clone()
    want_q, want_k = ref_rope(positions, q, k, head_size, cache, is_neox)
    arg = FusedSetKVBufferArg(v, k_buffer, v_buffer, scales[0], scales[1], loc)
    ret = mod.apply_rope_with_cos_sin_cache_inplace(positions, q, k, head_size, cache, is_neox,
                                                    fused_set_kv_buffer_arg=arg)
    torch.cuda.synchronize()
    problems = [] if ret is None else [f"returned {type(ret).__name__}, expected None (in place)"]
    problems += compare("query", q.reshape(tokens, q_heads, head_size), want_q.to(torch.float64), tol)
    problems += compare("key", k.reshape(tokens, kv_heads, head_size), want_k.to(torch.float64), tol)
    want_kb, want_vb = ref_set_kv(want_k, v0, kb0, vb0, loc, *scales)
    problems += compare("k_buffer", k_buffer.reshape(slots, kv_heads, head_size), want_kb, tol)
    problems += compare("v_buffer", v_buffer.reshape(slots, kv_heads, head_size), want_vb, tol)
    untouched = torch.ones(slots, dtype=torch.bool, device="cuda")
    untouched[loc] = False
    if not (same_bits(k_buffer[untouched], kb0[untouched]) and same_bits(v_buffer[untouched], vb0[untouched])):
        problems.append("a cache slot no token stores into changed")
    if scales == (None, None):  # no scale: the slot holds bitwise what key holds
        if not same_bits(k_buffer[loc].reshape(tokens, -1), k.reshape(tokens, -1)):
            problems.append("k_buffer's slots are not bitwise the rotated key")
    if not same_bits(v, v0):
        problems.append("value changed")
    for buf, what in watched:
        if not buf.unchanged_outside():
            problems.append(f"wrote outside {what}")
    return problems


def ref_gelu_and_mul(x):
    x = x.double()
    d = x.shape[-1] // 2
    a, b = x[..., :d], x[..., d:]
    return 0.5 * a * torch.special.erfc(-a * 0.70710678118654752440) * b


def ref_gelu_tanh_and_mul(x):
    x = x.double()
    d = x.shape[-1] // 2
    a, b = x[..., :d], x[..., d:]
    u = 0.79788456080286535588 * (a + 0.044715 * a * a * a)
    return a / (1.0 + torch.exp(-2.0 * u)) * b


# The act-and-mul ops: name -> (float64 reference, what sgl_kernel's callers compare with in PyTorch).
ACT_AND_MUL = {
    "silu_and_mul": ref_silu_and_mul,
    "gelu_and_mul": ref_gelu_and_mul,
    "gelu_tanh_and_mul": ref_gelu_tanh_and_mul,
}


def silu_case(mod, dtype, lead: tuple, d: int, in_layout: str, out_layout, gen, tol, op: str = "silu_and_mul") -> list[str]:
    x = Buffer(lead + (2 * d,), dtype, in_layout, normal, gen)
    ref = ACT_AND_MUL[op](x.tensor)
    fn = getattr(mod, op)
    problems = []
    if out_layout is None:
        out = fn(x.tensor)
        problems += expect_tensor("out", out, lead + (d,), dtype)
    else:
        o = Buffer(lead + (d,), dtype, out_layout, NAN, gen)
        out = fn(x.tensor, o.tensor)
        if out.data_ptr() != o.tensor.data_ptr() or out.stride() != o.tensor.stride():
            problems.append("did not return the out tensor it was given")
        if not o.unchanged_outside():
            problems.append("wrote outside out")
        out = o.tensor
    problems += compare("out", out, ref, tol)
    if not x.unchanged():
        problems.append("changed its input")
    return problems


def rmsnorm_case(mod, dtype, tokens: int, hidden: int, layouts: tuple, gen, tol,
                 op: str = "fused_add_rmsnorm") -> list[str]:
    """fused_add_rmsnorm, or gemma_fused_add_rmsnorm (op): in place, against float64."""
    gemma = op.startswith("gemma")
    in_layout, res_layout, w_layout, eps = layouts
    inp = Buffer((tokens, hidden), dtype, in_layout, rms_input, gen)
    res = Buffer((tokens, hidden), dtype, res_layout, rms_residual, gen)
    w = Buffer((hidden,), dtype, w_layout, gemma_weight if gemma else rms_weight, gen)
    want_out, want_res = ref_fused_add_rmsnorm(inp.tensor, res.tensor, w.tensor, 1e-6 if eps is None else eps,
                                               1.0 if gemma else 0.0)
    call = getattr(mod, op)
    if eps is None:
        ret = call(inp.tensor, res.tensor, w.tensor)
    else:
        ret = call(inp.tensor, res.tensor, w.tensor, eps)
    problems = [] if ret is None else [f"returned {type(ret).__name__}, expected None (in place)"]
    problems += compare("input (normalised)", inp.tensor, want_out, tol)
    problems += compare("residual (sum)", res.tensor, want_res, tol)
    if not inp.unchanged_outside():
        problems.append("wrote outside input")
    if not res.unchanged_outside():
        problems.append("wrote outside residual")
    if not w.unchanged():
        problems.append("changed weight")
    return problems


def norm_case(mod, op: str, dtype, tokens: int, hidden: int, layouts: tuple, gen, tol) -> list[str]:
    """rmsnorm or gemma_rmsnorm (op) with sgl_kernel's signature (input, weight, eps, out, enable_pdl)."""
    gemma = op.startswith("gemma")
    in_layout, out_layout, w_layout, eps = layouts
    in_place = out_layout == "in_place"
    # In place the output cannot be poisoned: rms_input's |x| >= 8 makes every output differ from its input.
    x = Buffer((tokens, hidden), dtype, in_layout, rms_input if in_place else norm_input, gen)
    w = Buffer((hidden,), dtype, w_layout, gemma_weight if gemma else rms_weight, gen)
    want = ref_rmsnorm(x.tensor, w.tensor, 1e-6 if eps is None else eps, 1.0 if gemma else 0.0)
    o = None if out_layout in (None, "in_place") else Buffer((tokens, hidden), dtype, out_layout, NAN, gen)
    out_arg = x.tensor if in_place else (o.tensor if o else None)
    call = getattr(mod, op)
    if eps is None:
        ret = call(x.tensor, w.tensor) if out_arg is None else call(x.tensor, w.tensor, out=out_arg)
    else:
        ret = call(x.tensor, w.tensor, eps, out_arg, enable_pdl=True)
    problems = []
    if out_arg is not None and ret.data_ptr() != out_arg.data_ptr():
        problems.append("did not return the out it was given")
    problems += expect_tensor("returned out", ret, (tokens, hidden), dtype)
    problems += compare("out", ret, want, tol)
    if in_place:
        if not x.unchanged_outside():
            problems.append("wrote outside input (in place)")
    else:
        if not x.unchanged():
            problems.append("changed its input")
        if o and not o.unchanged_outside():
            problems.append("wrote outside out")
    if not w.unchanged():
        problems.append("changed weight")
    return problems


def merge_case(mod, dtype, tokens: int, heads: int, head_size: int, layouts: tuple, gen, tol, lse_tol) -> list[str]:
    la, lb, lo, s_given = layouts
    width, split = heads * head_size, (heads, head_size)
    v_a = Buffer((tokens, width), dtype, la, normal, gen, split)
    v_b = Buffer((tokens, width), dtype, lb, normal, gen, split)
    lse_a, lse_b = lse_pair(tokens, heads, gen)
    s_a = Buffer((tokens, heads), torch.float32, "contiguous", lse_a, gen)
    s_b = Buffer((tokens, heads), torch.float32, "contiguous", lse_b, gen)
    want_v, want_s = ref_merge_state(v_a.tensor, s_a.tensor, v_b.tensor, s_b.tensor)
    v_out = Buffer((tokens, width), dtype, lo, NAN, gen, split) if lo else None
    s_out = Buffer((tokens, heads), torch.float32, "contiguous", NAN, gen) if s_given else None
    ret = mod.merge_state_v2(v_a.tensor, s_a.tensor, v_b.tensor, s_b.tensor,
                             v_merged=v_out.tensor if v_out else None, s_merged=s_out.tensor if s_out else None)
    if not isinstance(ret, tuple) or len(ret) != 2:
        return [f"returned {type(ret).__name__}, expected (v_merged, s_merged)"]
    v, s = ret
    problems = expect_tensor("v_merged", v, (tokens, heads, head_size), dtype)
    problems += expect_tensor("s_merged", s, (tokens, heads), torch.float32)
    for given, got, what in ((v_out, v, "v_merged"), (s_out, s, "s_merged")):
        if given is None:
            continue
        if got.data_ptr() != given.tensor.data_ptr():
            problems.append(f"did not return the {what} it was given")
        if not given.unchanged_outside():
            problems.append(f"wrote outside {what}")
    problems += compare("v_merged", v, want_v, tol)
    problems += compare("s_merged", s, want_s, lse_tol)
    for buf, what in ((v_a, "v_a"), (v_b, "v_b"), (s_a, "s_a"), (s_b, "s_b")):
        if not buf.unchanged():
            problems.append(f"changed {what}")
    return problems


def other_cases(mod, gen) -> list[tuple[str, Callable[[], list[str]]]]:
    """Calls outside the main grids: empty inputs, sgl_kernel's positional forms, LSEs not in float32."""
    bf16 = torch.bfloat16

    def empty_inputs():
        problems = []
        out = mod.silu_and_mul(torch.randn(0, 256, device="cuda", dtype=bf16))
        problems += expect_tensor("silu out", out, (0, 128), bf16)
        inp, res = torch.randn(0, 64, device="cuda", dtype=bf16), torch.randn(0, 64, device="cuda", dtype=bf16)
        mod.fused_add_rmsnorm(inp, res, torch.randn(64, device="cuda", dtype=bf16))
        v = torch.randn(0, 4, 64, device="cuda", dtype=bf16)
        s = torch.randn(0, 4, device="cuda")
        v_m, s_m = mod.merge_state_v2(v, s, v, s)
        problems += expect_tensor("v_merged", v_m, (0, 4, 64), bf16) + expect_tensor("s_merged", s_m, (0, 4), torch.float32)
        torch.cuda.synchronize()
        return problems

    def sgl_kernel_forms():
        # silu_and_mul(input, out), fused_add_rmsnorm(input, residual, weight, eps, enable_pdl=...):
        # enable_pdl is accepted and changes nothing.
        x = torch.randn(16, 2 * 1024, generator=gen, device="cuda").to(bf16)
        out = torch.full((16, 1024), NAN, device="cuda", dtype=bf16)
        problems = [] if mod.silu_and_mul(x, out).data_ptr() == out.data_ptr() else ["silu_and_mul(x, out) returned another tensor"]
        if not same_bits(out, mod.silu_and_mul(x)):
            problems.append("silu_and_mul(x, out) differs from silu_and_mul(x)")
        inp = Buffer((16, 1024), bf16, "contiguous", rms_input, gen).tensor
        res = Buffer((16, 1024), bf16, "contiguous", rms_residual, gen).tensor
        w = Buffer((1024,), bf16, "contiguous", rms_weight, gen).tensor
        results = []
        for pdl in (None, True, False):
            a, b = inp.clone(), res.clone()
            mod.fused_add_rmsnorm(a, b, w, 1e-6, enable_pdl=pdl)
            results.append((a, b))
        if not all(same_bits(a, results[0][0]) and same_bits(b, results[0][1]) for a, b in results):
            problems.append("enable_pdl changed the result")
        return problems

    def lse_not_float32():
        # sgl_kernel takes the LSEs in float32 and converts others: the same result as converting first.
        v_a = torch.randn(8, 4, 64, generator=gen, device="cuda").to(bf16)
        v_b = torch.randn(8, 4, 64, generator=gen, device="cuda").to(bf16)
        s_a, s_b = (s.to(bf16) for s in lse_pair(8, 4, gen, edge_cases=False))
        got = mod.merge_state_v2(v_a, s_a, v_b, s_b)
        want = mod.merge_state_v2(v_a, s_a.float(), v_b, s_b.float())
        return [] if same_bits(got[0], want[0]) and same_bits(got[1], want[1]) else ["bfloat16 LSEs give another result"]

    return [("empty inputs", empty_inputs), ("sgl_kernel's call forms", sgl_kernel_forms),
            ("merge_state_v2 with bfloat16 LSEs", lse_not_float32)]


def test_correctness(mod, root: Path, report: Report) -> None:
    gen = torch.Generator(device="cuda").manual_seed(SEED)
    silu_tol = spec_tolerances(root, "silu_and_mul")
    rms_tol = spec_tolerances(root, "fused_add_rmsnorm")
    merge_tol = spec_tolerances(root, "merge_attn_states_lse")
    lse_tol = merge_tol[torch.float32]  # the LSEs are float32 whatever the values' dtype

    report.section("1. correctness against float64 PyTorch references (spec.json tolerances)")
    for name in DTYPE_NAMES:
        dtype = dtype_of(name)
        for lead, d in SILU_SHAPES:
            for in_layout, out_layout in SILU_LAYOUTS:
                if "every_other_row" in (in_layout, out_layout) and len(lead) != 1:
                    continue  # rows of a 3-D view with skipped rows are not evenly spaced: an error case below
                label = f"silu_and_mul {name} input {list(lead) + [2 * d]} {in_layout}, out {out_layout or 'allocated'}"
                report.run(label, lambda: silu_case(mod, dtype, lead, d, in_layout, out_layout, gen, silu_tol[dtype]))
    report.end_section("silu_and_mul")
    for op in ("gelu_and_mul", "gelu_tanh_and_mul"):
        op_tol = spec_tolerances(root, op)
        for name in DTYPE_NAMES:
            dtype = dtype_of(name)
            for lead, d in SILU_SHAPES:
                for in_layout, out_layout in SILU_LAYOUTS:
                    if "every_other_row" in (in_layout, out_layout) and len(lead) != 1:
                        continue
                    label = f"{op} {name} input {list(lead) + [2 * d]} {in_layout}, out {out_layout or 'allocated'}"
                    report.run(label, lambda op=op: silu_case(mod, dtype, lead, d, in_layout, out_layout, gen,
                                                              op_tol[dtype], op))
        report.end_section(op)
    for name in DTYPE_NAMES:
        dtype = dtype_of(name)
        for tokens, hidden in RMS_SHAPES:
            for layouts in RMS_LAYOUTS:
                label = (f"fused_add_rmsnorm {name} [{tokens}, {hidden}] input {layouts[0]}, residual {layouts[1]}, "
                         f"weight {layouts[2]}, eps {layouts[3] or 'default'}")
                report.run(label, lambda: rmsnorm_case(mod, dtype, tokens, hidden, layouts, gen, rms_tol[dtype]))
    report.end_section("fused_add_rmsnorm")
    for op in ("rmsnorm", "gemma_rmsnorm"):
        op_tol = spec_tolerances(root, op)
        for name in DTYPE_NAMES:
            dtype = dtype_of(name)
            for tokens, hidden in NORM_SHAPES:
                for layouts in NORM_LAYOUTS:
                    label = (f"{op} {name} [{tokens}, {hidden}] input {layouts[0]}, out {layouts[1] or 'allocated'}, "
                             f"weight {layouts[2]}, eps {layouts[3] or 'default'}")
                    report.run(label, lambda op=op: norm_case(mod, op, dtype, tokens, hidden, layouts, gen, op_tol[dtype]))
        report.end_section(op)
    gfa_tol = spec_tolerances(root, "gemma_fused_add_rmsnorm")
    for name in DTYPE_NAMES:
        dtype = dtype_of(name)
        for tokens, hidden in RMS_SHAPES:
            for layouts in RMS_LAYOUTS:
                label = (f"gemma_fused_add_rmsnorm {name} [{tokens}, {hidden}] input {layouts[0]}, residual {layouts[1]}, "
                         f"weight {layouts[2]}, eps {layouts[3] or 'default'}")
                report.run(label, lambda: rmsnorm_case(mod, dtype, tokens, hidden, layouts, gen, gfa_tol[dtype],
                                                       "gemma_fused_add_rmsnorm"))
    report.end_section("gemma_fused_add_rmsnorm")
    for name in DTYPE_NAMES:
        dtype = dtype_of(name)
        for tokens, heads, head_size in MERGE_SHAPES:
            for layouts in MERGE_LAYOUTS:
                label = (f"merge_state_v2 {name} [{tokens}, {heads}, {head_size}] v_a {layouts[0]}, v_b {layouts[1]}, "
                         f"v_merged {layouts[2] or 'allocated'}, s_merged {'given' if layouts[3] else 'allocated'}")
                report.run(label, lambda: merge_case(mod, dtype, tokens, heads, head_size, layouts, gen,
                                                     merge_tol[dtype], lse_tol))
    report.end_section("merge_state_v2")
    rope_tol = spec_tolerances(root, "rotary_embedding")
    for name in DTYPE_NAMES:
        dtype = dtype_of(name)
        for shape in ROPE_SHAPES:
            for layout in ROPE_LAYOUTS:
                for is_neox in (True, False):
                    label = (f"apply_rope_with_cos_sin_cache_inplace {name} {list(shape)} {layout} "
                             f"{'neox' if is_neox else 'gptj'}")
                    report.run(label, lambda: rope_case(mod, dtype, shape, layout, is_neox, gen, rope_tol[dtype]))
    report.end_section("apply_rope_with_cos_sin_cache_inplace")
    rope_kv_tol = spec_tolerances(root, "rotary_embedding_set_kv")
    for name in DTYPE_NAMES:
        dtype = dtype_of(name)
        for shape in ROPE_KV_SHAPES:
            for layout in ROPE_KV_LAYOUTS:
                for is_neox in (True, False):
                    for scales in ROPE_KV_SCALES:
                        label = (f"apply_rope_with_cos_sin_cache_inplace + fused_set_kv_buffer_arg {name} {list(shape)} "
                                 f"{layout} {'neox' if is_neox else 'gptj'} scales {scales}")
                        report.run(label, lambda: rope_set_kv_case(mod, dtype, shape, layout, is_neox, scales, gen,
                                                                   rope_kv_tol[dtype]))
    report.end_section("apply_rope_with_cos_sin_cache_inplace with fused_set_kv_buffer_arg")
    for label, check in other_cases(mod, gen):
        report.run(label, check)
    report.end_section("other calls")


# ---- 1b. views of one buffer ----------------------------------------------------------------------
# The binding decides whether two tensors share an element by element (include/ktune/overlap.hpp), not by
# the address ranges they span: views that interleave in one buffer are taken and computed right; views
# that share an element are refused with ValueError before anything is launched.

def shared(shape: tuple, dtype, gen, fills: list) -> Buffer:
    """One guarded buffer of `shape` holding several views; fills: (view function, value function) pairs
    applied in order (the rest random). Its `initial` is taken after the fills."""
    buf = Buffer(shape, dtype, "contiguous", normal, gen)
    for view, fill in fills:
        v = view(buf.tensor)
        v.copy_(fill(v.numel(), gen).to(dtype).view(v.shape))
    buf.initial = buf.flat.clone()
    return buf


def unchanged_except(buf: Buffer, written: list) -> bool:
    """Every element of the buffer (guards included) as it was, except those of the views in `written`."""
    probe = buf.flat.clone()
    for view in written:
        view(buf._view(probe)).copy_(view(buf._view(buf.initial)))
    return same_bits(probe, buf.initial)


def refused_untouched(call: Callable[[], object], buf: Buffer, why: str = "") -> list[str]:
    """The call raises ValueError (its message holding `why`) and the buffer, guards included, is bitwise
    as it was."""
    try:
        call()
    except ValueError as e:
        problems = [] if why in str(e) else [f"refused, but not for {why!r}: {first_line(e)}"]
    except Exception as e:
        return [f"raised {type(e).__name__} instead of ValueError: {first_line(e)}"]
    else:
        problems = ["did not raise ValueError"]
    torch.cuda.synchronize()
    if not buf.unchanged():
        problems.append("changed the buffer although it raised")
    return problems


def shared_buffer_cases(mod, dtype, root: Path, gen) -> list[tuple[str, Callable[[], list[str]]]]:
    """(label, check) for one dtype: interleaved views accepted and right, shared elements refused, and
    transposed pairs refused (the binding takes rows of contiguous elements only) with nothing written."""
    T, d, h = 6, 256, 512
    cases = []

    for op in ("silu_and_mul", "gelu_and_mul", "gelu_tanh_and_mul"):
        tol = spec_tolerances(root, op)[dtype]

        def act_interleaved(op=op, tol=tol):
            # buf [T, 3d]: input = buf[:, :2d], out = buf[:, 2d:] (out poisoned first).
            buf = shared((T, 3 * d), dtype, gen, [(lambda t: t[:, 2 * d:], lambda n, g: torch.full((n,), NAN, device="cuda"))])
            x, out = buf.tensor[:, :2 * d], buf.tensor[:, 2 * d:]
            ref = ACT_AND_MUL[op](x)
            ret = getattr(mod, op)(x, out)
            problems = [] if ret.data_ptr() == out.data_ptr() else ["did not return the out it was given"]
            problems += compare("out", out, ref, tol)
            if not unchanged_except(buf, [lambda t: t[:, 2 * d:]]):
                problems.append("wrote outside out (input or guards)")
            return problems

        def act_sharing(op=op):
            # out = buf[:, 2d - 1:3d - 1]: its first column is input's last.
            buf = shared((T, 3 * d), dtype, gen, [])
            return refused_untouched(lambda: getattr(mod, op)(buf.tensor[:, :2 * d], buf.tensor[:, 2 * d - 1:3 * d - 1]),
                                     buf, "shares elements")

        cases += [(f"{op}: input and out interleaved in one [T, 3d] buffer", act_interleaved),
                  (f"{op}: out sharing one column with input -> ValueError, nothing written", act_sharing)]

    for op in ("fused_add_rmsnorm", "gemma_fused_add_rmsnorm"):
        tol = spec_tolerances(root, op)[dtype]
        gemma = op.startswith("gemma")
        w = (gemma_weight if gemma else rms_weight)(h, gen).to(dtype)

        def add_norm(views: tuple, width: int, op=op, tol=tol, gemma=gemma, w=w):
            inp_view, res_view = views
            buf = shared((T, width), dtype, gen, [(inp_view, rms_input), (res_view, rms_residual)])
            inp, res = inp_view(buf.tensor), res_view(buf.tensor)
            want_out, want_res = ref_fused_add_rmsnorm(inp, res, w, 1e-6, 1.0 if gemma else 0.0)
            getattr(mod, op)(inp, res, w, 1e-6)
            problems = compare("input (normalised)", inp, want_out, tol) + compare("residual (sum)", res, want_res, tol)
            if not unchanged_except(buf, [inp_view, res_view]):
                problems.append("wrote outside input and residual")
            return problems

        # Halves of [T, 2h]; and rows of different strides: input = buf[:, :h] of rows of 4h, residual = rows of
        # 2h from h on (buf.view(2T, 2h)[:T, h:]): [h, 2h) and [3h, 4h) of buf's rows. Their extents intersect.
        halves = (lambda t: t[:, :h], lambda t: t[:, h:])
        strides = (lambda t: t[:, :h], lambda t: t.view(2 * T, 2 * h)[:T, h:])
        cases += [(f"{op}: input and residual the halves of one [T, 2h] buffer",
                   lambda f=add_norm, v=halves: f(v, 2 * h)),
                  (f"{op}: input and residual interleaved at row strides 4h and 2h",
                   lambda f=add_norm, v=strides: f(v, 4 * h))]

        def add_norm_sharing(op=op, w=w):
            buf = shared((T, 4 * h), dtype, gen, [])
            # residual's row 0 starts at input's last column: one shared element a row pair.
            return refused_untouched(lambda: getattr(mod, op)(buf.tensor[:, :h], buf.tensor.view(2 * T, 2 * h)[:T, h - 1:2 * h - 1], w),
                                     buf, "share elements")

        cases.append((f"{op}: residual sharing an element with input (row strides 4h and 2h) -> ValueError, "
                      "nothing written", add_norm_sharing))

    for op in ("rmsnorm", "gemma_rmsnorm"):
        tol = spec_tolerances(root, op)[dtype]
        gemma = op.startswith("gemma")
        w = (gemma_weight if gemma else rms_weight)(h, gen).to(dtype)

        def norm(views: tuple, width: int, op=op, tol=tol, gemma=gemma, w=w):
            in_view, out_view = views
            buf = shared((T, width), dtype, gen, [(in_view, norm_input), (out_view, lambda n, g: torch.full((n,), NAN, device="cuda"))])
            x, out = in_view(buf.tensor), out_view(buf.tensor)
            want = ref_rmsnorm(x, w, 1e-6, 1.0 if gemma else 0.0)
            ret = getattr(mod, op)(x, w, 1e-6, out)
            problems = [] if ret.data_ptr() == out.data_ptr() else ["did not return the out it was given"]
            problems += compare("out", out, want, tol)
            if not unchanged_except(buf, [out_view]):
                problems.append("wrote outside out (input or guards)")
            return problems

        halves = (lambda t: t[:, :h], lambda t: t[:, h:])
        strides = (lambda t: t[:, :h], lambda t: t.view(2 * T, 2 * h)[:T, h:])
        cases += [(f"{op}: input and out the halves of one [T, 2h] buffer", lambda f=norm, v=halves: f(v, 2 * h)),
                  (f"{op}: input and out interleaved at row strides 4h and 2h (ktune's own check)",
                   lambda f=norm, v=strides: f(v, 4 * h))]

        def norm_sharing(op=op, w=w):
            buf = shared((T, 2 * h), dtype, gen, [])
            return refused_untouched(lambda: getattr(mod, op)(buf.tensor[:, :h], w, 1e-6, buf.tensor[:, 1:h + 1]), buf,
                                     "overlaps input")

        cases.append((f"{op}: out one element to the right of input -> ValueError, nothing written", norm_sharing))

    merge_tol = spec_tolerances(root, "merge_attn_states_lse")
    H, D = 4, 64

    def merge_interleaved():
        # buf [T, 3, H, D]: v_a, v_b, v_merged = buf.unbind(1): every token's three states side by side.
        buf = shared((T, 3 * H * D), dtype, gen, [(lambda t: t[:, 2 * H * D:], lambda n, g: torch.full((n,), NAN, device="cuda"))])
        v_a, v_b, v_m = buf.tensor.view(T, 3, H, D).unbind(1)
        s_a, s_b = lse_pair(T, H, gen)
        want_v, want_s = ref_merge_state(v_a, s_a, v_b, s_b)
        v, s = mod.merge_state_v2(v_a, s_a, v_b, s_b, v_m)
        problems = [] if v.data_ptr() == v_m.data_ptr() else ["did not return the v_merged it was given"]
        problems += compare("v_merged", v, want_v, merge_tol[dtype]) + compare("s_merged", s, want_s, merge_tol[torch.float32])
        if not unchanged_except(buf, [lambda t: t[:, 2 * H * D:]]):
            problems.append("wrote outside v_merged (the inputs or guards)")
        return problems

    def merge_sharing():
        buf = shared((T, 3 * H * D), dtype, gen, [])
        v_a, v_b, _ = buf.tensor.view(T, 3, H, D).unbind(1)
        v_m = buf.tensor[:, H * D - D:2 * H * D - D].view(T, H, D)  # its first head is v_a's last
        s_a, s_b = lse_pair(T, H, gen, edge_cases=False)
        return refused_untouched(lambda: mod.merge_state_v2(v_a, s_a, v_b, s_b, v_m), buf, "shares elements")

    cases += [("merge_state_v2: v_a, v_b and v_merged interleaved in one [T, 3, H, D] buffer", merge_interleaved),
              ("merge_state_v2: v_merged sharing a head with v_a -> ValueError, nothing written", merge_sharing)]

    q_heads, kv_heads, head_size = 8, 2, 64
    qw, kw = q_heads * head_size, kv_heads * head_size

    def rope_sharing():
        # k taken one head to the left of its place in qkv: its first head is q's last.
        buf = shared((T, qw + 2 * kw), dtype, gen, [])
        positions, cache = rope_positions(T, 16, gen), rope_cache(16, head_size)
        q, k = buf.tensor[:, :qw], buf.tensor[:, qw - head_size:qw - head_size + kw]
        return refused_untouched(lambda: mod.apply_rope_with_cos_sin_cache_inplace(positions, q, k, head_size, cache),
                                 buf, "share elements")

    cases.append(("apply_rope_with_cos_sin_cache_inplace: k one head into q in one qkv buffer -> ValueError, "
                  "nothing written", rope_sharing))

    # Transposed pairs: the second tensor a transposed view of the first's buffer. The binding takes rows of
    # contiguous elements only, so the layout is refused (before the overlap is asked), nothing written.
    def transposed_pair(call: Callable[[Buffer], object]):
        buf = shared((64, 64), dtype, gen, [(lambda t: t, rms_input)])
        return lambda: refused_untouched(lambda: call(buf), buf, "contiguous")

    w64 = rms_weight(64, gen).to(dtype)
    cases += [
        ("rmsnorm: out the transpose of input -> ValueError, nothing written",
         transposed_pair(lambda b: mod.rmsnorm(b.tensor, w64, 1e-6, b.tensor.t()))),
        ("fused_add_rmsnorm: residual the transpose of input -> ValueError, nothing written",
         transposed_pair(lambda b: mod.fused_add_rmsnorm(b.tensor, b.tensor.t(), w64))),
        ("silu_and_mul: out a transposed block of input -> ValueError, nothing written",
         transposed_pair(lambda b: mod.silu_and_mul(b.tensor[:32], b.tensor[32:, :32].t()))),
        ("apply_rope_with_cos_sin_cache_inplace: key a transposed block of query's buffer -> ValueError, nothing written",
         transposed_pair(lambda b: mod.apply_rope_with_cos_sin_cache_inplace(
             torch.arange(32, device="cuda"), b.tensor[:32], b.tensor[32:, :32].t(), 32, rope_cache(32, 32)))),
    ]
    return cases


def test_shared_buffers(mod, root: Path, report: Report) -> None:
    report.section("1b. views of one buffer: interleaved views taken and right, shared elements refused, nothing written")
    gen = torch.Generator(device="cuda").manual_seed(SEED + 4)
    for name in DTYPE_NAMES:
        dtype = dtype_of(name)
        for label, check in shared_buffer_cases(mod, dtype, root, gen):
            report.run(f"{label} ({name})", check)
    report.end_section("views of one buffer")


# ---- 2. errors ------------------------------------------------------------------------------------

def raises(expected: type, call: Callable[[], object], watched: list) -> list[str]:
    """The call must raise `expected` with a message and leave every watched tensor as it was."""
    before = [t.clone() for t in watched]
    try:
        call()
    except expected as e:
        if not str(e).strip():
            return [f"{expected.__name__} without a message"]
    except Exception as e:
        return [f"raised {type(e).__name__} instead of {expected.__name__}: {first_line(e)}"]
    else:
        return [f"did not raise {expected.__name__}"]
    torch.cuda.synchronize()
    return [f"changed tensor {i} although it raised" for i, (t, b) in enumerate(zip(watched, before)) if not same_bits(t, b)]


def test_errors(mod, report: Report) -> None:
    report.section("2. errors: TypeError for dtypes, ValueError for devices, shapes and layouts; nothing written")
    gen = torch.Generator(device="cuda").manual_seed(SEED + 1)
    bf16, dev = torch.bfloat16, "cuda"

    def rnd(*shape, dtype=bf16):
        return torch.randn(*shape, generator=gen, device=dev).to(dtype)

    def nan(*shape, dtype=bf16):
        return torch.full(shape, NAN, device=dev, dtype=dtype)

    x, out = rnd(4, 128), nan(4, 64)
    silu = [
        ("int32 input", TypeError, lambda: mod.silu_and_mul(torch.randint(1, 9, (4, 128), device=dev, dtype=torch.int32), out), [out]),
        ("float64 input", TypeError, lambda: mod.silu_and_mul(x.double(), out), [out]),
        ("CPU input", ValueError, lambda: mod.silu_and_mul(x.cpu(), out), [out]),
        ("odd last dimension", ValueError, lambda: mod.silu_and_mul(rnd(4, 127), out), [out]),
        ("transposed input (last dimension not contiguous)", ValueError, lambda: mod.silu_and_mul(rnd(128, 4).t(), out), [out]),
        ("rows not evenly spaced (3-D, every other row)", ValueError,
         lambda: mod.silu_and_mul(rnd(4, 5, 128)[::2], nan(2, 5, 64)), []),
        ("broadcast rows (row stride 0)", ValueError, lambda: mod.silu_and_mul(rnd(1, 128).expand(4, 128), out), [out]),
        ("out of the wrong shape", ValueError, lambda: mod.silu_and_mul(x, nan(4, 65)), [x]),
        ("out of another dtype", TypeError, lambda: mod.silu_and_mul(x, out.half()), [x]),
        ("out on the CPU", ValueError, lambda: mod.silu_and_mul(x, out.cpu()), [x]),
        ("out overlapping input", ValueError, lambda: mod.silu_and_mul(x, x[:, :64]), [x]),
    ]
    inp, res, w = rnd(4, 256), rnd(4, 256), rnd(256)
    rmsnorm = [
        ("int32 input", TypeError,
         lambda: mod.fused_add_rmsnorm(torch.randint(1, 9, (4, 256), device=dev, dtype=torch.int32), res, w), [res]),
        ("float64 tensors", TypeError, lambda: mod.fused_add_rmsnorm(inp.double(), res.double(), w.double()), [inp, res]),
        ("CPU input", ValueError, lambda: mod.fused_add_rmsnorm(inp.cpu(), res, w), [inp, res]),
        ("CPU weight", ValueError, lambda: mod.fused_add_rmsnorm(inp, res, w.cpu()), [inp, res]),
        ("weight of the wrong length", ValueError, lambda: mod.fused_add_rmsnorm(inp, res, rnd(255)), [inp, res]),
        ("residual of another shape", ValueError, lambda: mod.fused_add_rmsnorm(inp, rnd(4, 255), w), [inp]),
        ("weight of another dtype", TypeError, lambda: mod.fused_add_rmsnorm(inp, res, w.half()), [inp, res]),
        ("transposed input", ValueError, lambda: mod.fused_add_rmsnorm(rnd(256, 4).t(), res, w), [res]),
        ("3-D input", ValueError, lambda: mod.fused_add_rmsnorm(rnd(2, 2, 256), res.view(2, 2, 256), w), [res]),
        ("input and residual the same tensor", ValueError, lambda: mod.fused_add_rmsnorm(inp, inp, w), [inp]),
        ("weight not contiguous", ValueError, lambda: mod.fused_add_rmsnorm(inp, res, rnd(512)[::2]), [inp, res]),
    ]
    v_a, v_b, s_a, s_b = rnd(4, 8, 64), rnd(4, 8, 64), rnd(4, 8, dtype=torch.float32), rnd(4, 8, dtype=torch.float32)
    v_m, s_m = nan(4, 8, 64), nan(4, 8, dtype=torch.float32)
    outs = [v_m, s_m]

    def merge(va=v_a, sa=s_a, vb=v_b, sb=s_b, vm=v_m, sm=s_m):
        return lambda: mod.merge_state_v2(va, sa, vb, sb, vm, sm)

    merge_cases = [
        ("int32 values", TypeError, merge(va=v_a.to(torch.int32), vb=v_b.to(torch.int32)), outs),
        ("float64 values", TypeError, merge(va=v_a.double(), vb=v_b.double(), vm=v_m.double()), outs),
        ("CPU v_a", ValueError, merge(va=v_a.cpu()), outs),
        ("CPU s_b", ValueError, merge(sb=s_b.cpu()), outs),
        ("v_b of another shape", ValueError, merge(vb=rnd(4, 8, 32)), outs),
        ("v_b of another dtype", TypeError, merge(vb=v_b.half()), outs),
        ("s_a of the wrong shape", ValueError, merge(sa=rnd(4, 7, dtype=torch.float32)), outs),
        ("integer LSE", TypeError, merge(sa=s_a.to(torch.int32)), outs),
        ("s_a not contiguous", ValueError, merge(sa=rnd(8, 4, dtype=torch.float32).t()), outs),
        ("heads and head_size not contiguous", ValueError, merge(va=rnd(4, 64, 8).transpose(1, 2)), outs),
        ("2-D v_a", ValueError, merge(va=rnd(4, 512)), outs),
        ("v_merged of the wrong shape", ValueError, merge(vm=nan(4, 8, 32)), [s_m]),
        ("s_merged in float16", TypeError, merge(sm=nan(4, 8, dtype=torch.float16)), [v_m]),
        ("v_merged overlapping v_a", ValueError, merge(vm=v_a), [v_a, s_m]),
    ]
    pos, cache = torch.arange(4, device=dev), rope_cache(16, 64)
    q, k = rnd(4, 8 * 64), rnd(4, 2 * 64)

    def rope(p=pos, qq=q, kk=k, head_size=64, c=cache, **kw):
        return lambda: mod.apply_rope_with_cos_sin_cache_inplace(p, qq, kk, head_size, c, **kw)

    v, kb, vb = rnd(4, 128), rnd(16, 2, 64), rnd(16, 2, 64)
    loc = torch.tensor([3, 0, 15, 7], device=dev)

    def kv_arg(**kw):
        fields = dict(value=v, k_buffer=kb, v_buffer=vb, k_scale=None, v_scale=None, cache_loc=loc)
        fields.update(kw)
        return FusedSetKVBufferArg(**fields)

    rope_cases = [
        ("float64 query and key", TypeError, rope(qq=q.double(), kk=k.double()), []),
        ("key of another dtype", TypeError, rope(kk=k.half()), [q]),
        ("float16 cache", ValueError, rope(c=cache.half()), [q, k]),
        ("float positions", TypeError, rope(p=pos.float()), [q, k]),
        ("CPU positions", ValueError, rope(p=pos.cpu()), [q, k]),
        ("CPU key", ValueError, rope(kk=k.cpu()), [q]),
        ("positions of the wrong length", ValueError, rope(p=torch.arange(3, device=dev)), [q, k]),
        ("key with another token count", ValueError, rope(kk=rnd(5, 128)), [q]),
        ("row not a whole number of heads", ValueError, rope(head_size=48), [q, k]),
        ("rotary_dim above head_size", ValueError, rope(c=rope_cache(16, 128), head_size=64), [q, k]),
        ("odd rotary_dim", ValueError, rope(c=torch.randn(16, 63, device=dev)), [q, k]),
        ("transposed query", ValueError, rope(qq=rnd(8 * 64, 4).t()), [k]),
        ("query and key the same tensor", ValueError, rope(kk=q[:, :128]), [q]),
        ("fused_set_kv_buffer_arg without its attributes", TypeError, rope(fused_set_kv_buffer_arg=object()), [q, k]),
        ("fused_set_kv_buffer_arg: value of another dtype", TypeError, rope(fused_set_kv_buffer_arg=kv_arg(value=v.half())),
         [q, k, kb, vb]),
        ("fused_set_kv_buffer_arg: CPU k_buffer", ValueError, rope(fused_set_kv_buffer_arg=kv_arg(k_buffer=kb.cpu())),
         [q, k, vb]),
        ("fused_set_kv_buffer_arg: float cache_loc", TypeError,
         rope(fused_set_kv_buffer_arg=kv_arg(cache_loc=loc.float())), [q, k, kb, vb]),
        ("fused_set_kv_buffer_arg: cache_loc of the wrong length", ValueError,
         rope(fused_set_kv_buffer_arg=kv_arg(cache_loc=loc[:3])), [q, k, kb, vb]),
        ("fused_set_kv_buffer_arg: k_buffer with other heads", ValueError,
         rope(fused_set_kv_buffer_arg=kv_arg(k_buffer=rnd(16, 3, 64))), [q, k, vb]),
        ("fused_set_kv_buffer_arg: v_buffer with fewer slots", ValueError,
         rope(fused_set_kv_buffer_arg=kv_arg(v_buffer=rnd(15, 2, 64))), [q, k, kb]),
        ("fused_set_kv_buffer_arg: k_buffer is v_buffer", ValueError,
         rope(fused_set_kv_buffer_arg=kv_arg(v_buffer=kb)), [q, k, kb]),
        ("fused_set_kv_buffer_arg: k_buffer is key", ValueError,
         rope(fused_set_kv_buffer_arg=kv_arg(k_buffer=k.view(4, 2, 64), v_buffer=vb[:4])), [q, k, vb]),
        ("fused_set_kv_buffer_arg: value is query", ValueError,
         rope(fused_set_kv_buffer_arg=kv_arg(value=q[:, :128])), [q, k, kb, vb]),
        ("fused_set_kv_buffer_arg: k_scale 0", ValueError, rope(fused_set_kv_buffer_arg=kv_arg(k_scale=0.0)),
         [q, k, kb, vb]),
        ("fused_set_kv_buffer_arg: k_scale a tensor", TypeError,
         rope(fused_set_kv_buffer_arg=kv_arg(k_scale=torch.ones(1, device=dev))), [q, k, kb, vb]),
    ]
    variant = [
        ("unknown op", ValueError, lambda: mod.variant("no_such_op", bf16, 1, 4096), []),
        ("int32 dtype", TypeError, lambda: mod.variant("silu_and_mul", torch.int32, 1, 4096), []),
    ]
    xs, ws = rnd(4, 256), rnd(256)
    big = rnd(5, 256)
    norm = [
        ("int32 input", TypeError,
         lambda: mod.rmsnorm(torch.randint(1, 9, (4, 256), device=dev, dtype=torch.int32), ws), []),
        ("CPU weight", ValueError, lambda: mod.rmsnorm(xs, ws.cpu()), [xs]),
        ("weight of the wrong length", ValueError, lambda: mod.rmsnorm(xs, rnd(255)), [xs]),
        ("weight of another dtype", TypeError, lambda: mod.gemma_rmsnorm(xs, ws.half()), [xs]),
        ("out of the wrong shape", ValueError, lambda: mod.rmsnorm(xs, ws, 1e-6, nan(4, 255)), [xs]),
        ("out of another dtype", TypeError, lambda: mod.gemma_rmsnorm(xs, ws, 1e-6, nan(4, 256, dtype=torch.half)), [xs]),
        ("out overlapping input one row down", ValueError, lambda: mod.rmsnorm(big[:4], ws, 1e-6, big[1:]), [big]),
        ("transposed input", ValueError, lambda: mod.rmsnorm(rnd(256, 4).t(), ws), []),
        ("weight not contiguous", ValueError, lambda: mod.gemma_rmsnorm(xs, rnd(512)[::2]), [xs]),
        ("gemma_fused_add_rmsnorm: input and residual the same tensor", ValueError,
         lambda: mod.gemma_fused_add_rmsnorm(inp, inp, w), [inp]),
        ("gemma_fused_add_rmsnorm: residual of another shape", ValueError,
         lambda: mod.gemma_fused_add_rmsnorm(inp, rnd(4, 255), w), [inp]),
    ]
    for op, cases in (("silu_and_mul", silu), ("fused_add_rmsnorm", rmsnorm), ("rmsnorm and gemma_*", norm),
                      ("merge_state_v2", merge_cases),
                      ("apply_rope_with_cos_sin_cache_inplace", rope_cases), ("variant", variant)):
        for label, expected, call, watched in cases:
            report.run(f"{op}: {label} -> {expected.__name__}", lambda: raises(expected, call, watched))
    report.end_section("errors")


# ---- 3. CUDA graphs -------------------------------------------------------------------------------

def capture(step: Callable[[], object]):
    """step() captured in a CUDA graph after warm-up calls on a side stream, as PyTorch asks."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(2):
            step()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        result = step()
    return graph, result


def graph_silu(mod, dtype, tokens: int, d: int, gen) -> list[str]:
    x = normal(tokens * 2 * d, gen).to(dtype).view(tokens, 2 * d)
    out = torch.full((tokens, d), NAN, device="cuda", dtype=dtype)
    graph, (_, allocated) = capture(lambda: (mod.silu_and_mul(x, out), mod.silu_and_mul(x)))
    problems = []
    for round_ in range(2):  # new values each round: the graph must read the inputs' current contents
        x.copy_(normal(x.numel(), gen).view_as(x))
        want = mod.silu_and_mul(x.clone())
        out.fill_(NAN)
        allocated.fill_(NAN)
        graph.replay()
        torch.cuda.synchronize()
        if not same_bits(out, want):
            problems.append(f"round {round_}: replay into out differs from eager")
        if not same_bits(allocated, want):
            problems.append(f"round {round_}: replay's allocated output differs from eager")
    return problems


def graph_rmsnorm(mod, dtype, tokens: int, hidden: int, gen, op: str = "fused_add_rmsnorm") -> list[str]:
    inp = torch.empty(tokens, hidden, device="cuda", dtype=dtype)
    res = torch.empty_like(inp)
    w = (gemma_weight if op.startswith("gemma") else rms_weight)(hidden, gen).to(dtype)
    inp.copy_(rms_input(inp.numel(), gen).view_as(inp))
    res.copy_(rms_residual(res.numel(), gen).view_as(res))
    call = getattr(mod, op)
    graph, _ = capture(lambda: call(inp, res, w))
    problems = []
    for round_ in range(2):
        a0 = rms_input(inp.numel(), gen).to(dtype).view_as(inp)
        b0 = rms_residual(res.numel(), gen).to(dtype).view_as(res)
        want_a, want_b = a0.clone(), b0.clone()
        call(want_a, want_b, w)
        inp.copy_(a0)
        res.copy_(b0)
        graph.replay()
        torch.cuda.synchronize()
        if not same_bits(inp, want_a):
            problems.append(f"round {round_}: replayed input differs from eager")
        if not same_bits(res, want_b):
            problems.append(f"round {round_}: replayed residual differs from eager")
    return problems


def graph_merge(mod, dtype, tokens: int, heads: int, head_size: int, gen) -> list[str]:
    shape = (tokens, heads, head_size)
    v_a = normal(math.prod(shape), gen).to(dtype).view(shape)
    v_b = normal(math.prod(shape), gen).to(dtype).view(shape)
    s_a, s_b = lse_pair(tokens, heads, gen)
    v_m = torch.full(shape, NAN, device="cuda", dtype=dtype)
    s_m = torch.full((tokens, heads), NAN, device="cuda")
    graph, (_, allocated) = capture(lambda: (mod.merge_state_v2(v_a, s_a, v_b, s_b, v_m, s_m),
                                             mod.merge_state_v2(v_a, s_a, v_b, s_b)))
    problems = []
    for round_ in range(2):
        v_a.copy_(normal(v_a.numel(), gen).view(shape))
        new_a, new_b = lse_pair(tokens, heads, gen)
        s_a.copy_(new_a)
        s_b.copy_(new_b)
        want = mod.merge_state_v2(v_a.clone(), s_a.clone(), v_b.clone(), s_b.clone())
        for t in (v_m, s_m, *allocated):
            t.fill_(NAN)
        graph.replay()
        torch.cuda.synchronize()
        for got, what in ((v_m, "v_merged"), (s_m, "s_merged")):
            if not same_bits(got, want[0 if what == "v_merged" else 1]):
                problems.append(f"round {round_}: replayed {what} differs from eager")
        if not (same_bits(allocated[0], want[0]) and same_bits(allocated[1], want[1])):
            problems.append(f"round {round_}: replay's allocated outputs differ from eager")
    return problems


def graph_rope(mod, dtype, tokens: int, q_heads: int, kv_heads: int, head_size: int, is_neox: bool, gen) -> list[str]:
    cache = rope_cache(4096, head_size)
    positions = rope_positions(tokens, 4096, gen)
    q = torch.empty(tokens, q_heads * head_size, device="cuda", dtype=dtype)
    k = torch.empty(tokens, kv_heads * head_size, device="cuda", dtype=dtype)
    graph, _ = capture(lambda: mod.apply_rope_with_cos_sin_cache_inplace(positions, q, k, head_size, cache, is_neox))
    problems = []
    for round_ in range(2):  # new values and positions each round: the graph reads the current contents
        q0 = normal(q.numel(), gen).to(dtype).view_as(q)
        k0 = normal(k.numel(), gen).to(dtype).view_as(k)
        positions.copy_(rope_positions(tokens, 4096, gen))
        want_q, want_k = q0.clone(), k0.clone()
        mod.apply_rope_with_cos_sin_cache_inplace(positions, want_q, want_k, head_size, cache, is_neox)
        q.copy_(q0)
        k.copy_(k0)
        graph.replay()
        torch.cuda.synchronize()
        if not (same_bits(q, want_q) and same_bits(k, want_k)):
            problems.append(f"round {round_}: replayed query or key differs from eager")
    return problems


def graph_rope_set_kv(mod, dtype, tokens: int, q_heads: int, kv_heads: int, head_size: int, is_neox: bool,
                      gen) -> list[str]:
    """The fused rope + KV-cache store captured once, replayed on new q, k, v, positions and slots."""
    cache = rope_cache(4096, head_size)
    positions = rope_positions(tokens, 4096, gen)
    slots = 3 * tokens
    q = torch.empty(tokens, q_heads * head_size, device="cuda", dtype=dtype)
    k = torch.empty(tokens, kv_heads * head_size, device="cuda", dtype=dtype)
    v = torch.empty_like(k)
    kb = torch.zeros(slots, kv_heads, head_size, device="cuda", dtype=dtype)
    vb = torch.zeros_like(kb)
    loc = torch.randperm(slots, generator=gen, device="cuda")[:tokens]
    arg = FusedSetKVBufferArg(v, kb, vb, None, None, loc)
    graph, _ = capture(lambda: mod.apply_rope_with_cos_sin_cache_inplace(positions, q, k, head_size, cache, is_neox,
                                                                         fused_set_kv_buffer_arg=arg))
    problems = []
    for round_ in range(2):
        q0, k0, v0 = (normal(t.numel(), gen).to(dtype).view_as(t) for t in (q, k, v))
        kb0, vb0 = (normal(t.numel(), gen).to(dtype).view_as(t) for t in (kb, vb))
        positions.copy_(rope_positions(tokens, 4096, gen))
        loc.copy_(torch.randperm(slots, generator=gen, device="cuda")[:tokens])
        want = [t.clone() for t in (q0, k0, kb0, vb0)]
        mod.apply_rope_with_cos_sin_cache_inplace(positions, want[0], want[1], head_size, cache, is_neox,
                                                  fused_set_kv_buffer_arg=FusedSetKVBufferArg(v0, want[2], want[3],
                                                                                              None, None, loc))
        for t, t0 in ((q, q0), (k, k0), (v, v0), (kb, kb0), (vb, vb0)):
            t.copy_(t0)
        graph.replay()
        torch.cuda.synchronize()
        for got, w, what in zip((q, k, kb, vb), want, ("query", "key", "k_buffer", "v_buffer")):
            if not same_bits(got, w):
                problems.append(f"round {round_}: replayed {what} differs from eager")
    return problems


def graph_norm(mod, op: str, dtype, tokens: int, hidden: int, gen) -> list[str]:
    """rmsnorm / gemma_rmsnorm into a given out, captured and replayed on fresh inputs."""
    x = norm_input(tokens * hidden, gen).to(dtype).view(tokens, hidden)
    out = torch.empty_like(x)
    w = (gemma_weight if op.startswith("gemma") else rms_weight)(hidden, gen).to(dtype)
    call = getattr(mod, op)
    graph, _ = capture(lambda: call(x, w, 1e-6, out))
    problems = []
    for round_ in range(2):
        x.copy_(norm_input(x.numel(), gen).to(dtype).view_as(x))
        want = call(x, w)
        graph.replay()
        torch.cuda.synchronize()
        if not same_bits(out, want):
            problems.append(f"round {round_}: replayed out differs from eager")
    return problems


def test_graphs(mod, report: Report) -> None:
    report.section("3. CUDA graphs: capture on a side stream, replay, compare bitwise with eager")
    gen = torch.Generator(device="cuda").manual_seed(SEED + 2)
    for name in DTYPE_NAMES:
        dtype = dtype_of(name)
        for tokens, d in ((64, 4096), (7, 1000)):
            report.run(f"silu_and_mul {name} [{tokens}, {2 * d}]", lambda: graph_silu(mod, dtype, tokens, d, gen))
        for tokens, hidden in ((64, 4096), (7, 1000)):
            report.run(f"fused_add_rmsnorm {name} [{tokens}, {hidden}]",
                       lambda: graph_rmsnorm(mod, dtype, tokens, hidden, gen))
            report.run(f"gemma_fused_add_rmsnorm {name} [{tokens}, {hidden}]",
                       lambda: graph_rmsnorm(mod, dtype, tokens, hidden, gen, "gemma_fused_add_rmsnorm"))
            for op in ("rmsnorm", "gemma_rmsnorm"):
                report.run(f"{op} {name} [{tokens}, {hidden}]",
                           lambda op=op: graph_norm(mod, op, dtype, tokens, hidden, gen))
        for tokens, heads, head_size in ((64, 32, 128), (7, 40, 96)):
            report.run(f"merge_state_v2 {name} [{tokens}, {heads}, {head_size}]",
                       lambda: graph_merge(mod, dtype, tokens, heads, head_size, gen))
        for tokens, q_heads, kv_heads, head_size, is_neox in ((64, 32, 8, 128, True), (7, 16, 1, 64, False)):
            report.run(f"apply_rope_with_cos_sin_cache_inplace {name} [{tokens}, {q_heads}/{kv_heads}, {head_size}]",
                       lambda: graph_rope(mod, dtype, tokens, q_heads, kv_heads, head_size, is_neox, gen))
            report.run(f"apply_rope_with_cos_sin_cache_inplace + fused_set_kv_buffer_arg {name} "
                       f"[{tokens}, {q_heads}/{kv_heads}, {head_size}]",
                       lambda: graph_rope_set_kv(mod, dtype, tokens, q_heads, kv_heads, head_size, is_neox, gen))
    report.end_section("CUDA graphs")


# ---- 4. timing ------------------------------------------------------------------------------------

@dataclass
class Timing:
    cold_reps: int
    cold_warmup: int
    graph_calls: int
    graph_replays: int


def time_cold(fn: Callable[[], object], t: Timing, flush) -> float:
    """Median microseconds of one call with a cold L2: 256 MiB written before each call, each call
    between its own pair of events. The GPU then spins for SLEEP_CYCLES, so that the call is enqueued
    before the start event is reached: the events time the GPU's work, not the CPU's launch overhead
    (which CUDA graphs remove in serving engines, and which the graph mode leaves out too)."""
    sleep = getattr(torch.cuda, "_sleep", None)  # private but long-standing; without it, launch overhead counts
    for _ in range(t.cold_warmup):
        fn()
    torch.cuda.synchronize()
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(t.cold_reps)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(t.cold_reps)]
    for i in range(t.cold_reps):
        flush.fill_(i & 0x7F)
        if sleep is not None:
            sleep(SLEEP_CYCLES)
        starts[i].record()
        fn()
        ends[i].record()
    torch.cuda.synchronize()
    return statistics.median(s.elapsed_time(e) for s, e in zip(starts, ends)) * 1000.0


def kernel_us_cold(fn: Callable[[], object], calls: int, flush) -> float:
    """Mean microseconds per call of the GPU's own work in time_cold's setting: the durations of the kernels one
    call runs (CUPTI's activity records, through torch.profiler), summed. time_cold's figure less this one is
    what lies between the start event and the call's first kernel and between its kernels: the launch."""
    from torch.autograd import DeviceType
    from torch.profiler import ProfilerActivity, profile

    sleep = getattr(torch.cuda, "_sleep", None)

    def kernels(work: Callable[[], None]) -> list:
        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            work()
            torch.cuda.synchronize()
        return [e for e in prof.events() if e.device_type == DeviceType.CUDA]

    def setting(i: int) -> None:
        flush.fill_(i & 0x7F)
        if sleep is not None:
            sleep(SLEEP_CYCLES)

    # The flush's and the wait's kernels, by name, so that only the calls' own remain below.
    not_the_call = {e.name for e in kernels(lambda: setting(0))}

    def cold_calls() -> None:
        for i in range(calls):
            setting(i)
            fn()

    fn()
    timed = [e for e in kernels(cold_calls) if e.name not in not_the_call]
    if not timed:
        raise RuntimeError("the profiler recorded no kernel of the call")
    return sum(e.time_range.elapsed_us() for e in timed) / calls


def time_graph(fn: Callable[[], object], t: Timing) -> float:
    """Median microseconds per call of a CUDA graph of graph_calls calls back to back (no launch
    overhead; the inputs may stay in L2 between calls, as in a model's layers)."""
    def calls():
        for _ in range(t.graph_calls):
            fn()  # outputs dropped at once, as a model's layers would reuse the memory

    graph, _ = capture(calls)
    for _ in range(3):
        graph.replay()
    torch.cuda.synchronize()
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(t.graph_replays)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(t.graph_replays)]
    for i in range(t.graph_replays):
        starts[i].record()
        graph.replay()
        ends[i].record()
    torch.cuda.synchronize()
    per_call = statistics.median(s.elapsed_time(e) for s, e in zip(starts, ends)) * 1000.0 / t.graph_calls
    del graph
    return per_call


@dataclass
class BenchCase:
    op: str            # the binding's name, as variant() takes it
    dtype: object
    shape: tuple
    tokens: int
    width: int         # d, hidden or heads: what variant() takes
    bytes: int         # bytes one call reads and writes
    ktune: Callable[[], object]
    plain: Callable    # the plain PyTorch function (eager, and what torch.compile compiles)
    args: tuple
    label: str = ""    # the table's name for the row, where it is not op


def bench_cases(mod, quick: bool, gen) -> list[BenchCase]:
    dtypes = [torch.bfloat16] if quick else [torch.bfloat16, torch.float16]
    silu_shapes = [(1, 11008), (2048, 11008)] if quick else [(1, 11008), (64, 11008), (2048, 11008), (8192, 14336)]
    rms_shapes = [(1, 4096), (2048, 4096)] if quick else [(1, 4096), (64, 4096), (2048, 4096), (2048, 8192)]
    merge_shapes = [(1, 32, 128), (8192, 32, 128)] if quick else [(1, 32, 128), (512, 32, 128), (8192, 32, 128)]
    rope_shapes = [(1, 32, 8), (8192, 32, 8)] if quick else [(1, 32, 8), (16, 64, 8), (2048, 40, 8), (8192, 64, 8)]
    cases = []
    for dtype in dtypes:
        e = torch.tensor([], dtype=dtype).element_size()
        for tokens, d in silu_shapes:
            x = normal(tokens * 2 * d, gen).to(dtype).view(tokens, 2 * d)
            cases.append(BenchCase("silu_and_mul", dtype, (tokens, 2 * d), tokens, d, 3 * tokens * d * e,
                                   lambda x=x: mod.silu_and_mul(x), silu_and_mul_torch, (x,)))
            cases.append(BenchCase("gelu_and_mul", dtype, (tokens, 2 * d), tokens, d, 3 * tokens * d * e,
                                   lambda x=x: mod.gelu_and_mul(x), gelu_and_mul_torch, (x,)))
            cases.append(BenchCase("gelu_tanh_and_mul", dtype, (tokens, 2 * d), tokens, d, 3 * tokens * d * e,
                                   lambda x=x: mod.gelu_tanh_and_mul(x), gelu_tanh_and_mul_torch, (x,)))
        for tokens, hidden in rms_shapes:
            x = rms_input(tokens * hidden, gen).to(dtype).view(tokens, hidden)
            r = rms_residual(tokens * hidden, gen).to(dtype).view(tokens, hidden)
            w = rms_weight(hidden, gen).to(dtype)
            kx, kr = x.clone(), r.clone()  # ktune works in place: its own copies of the same values
            cases.append(BenchCase("fused_add_rmsnorm", dtype, (tokens, hidden), tokens, hidden,
                                   (4 * tokens + 1) * hidden * e,
                                   lambda kx=kx, kr=kr, w=w: mod.fused_add_rmsnorm(kx, kr, w),
                                   fused_add_rmsnorm_torch, (x, r, w)))
            gw = gemma_weight(hidden, gen).to(dtype)
            gx, gr = x.clone(), r.clone()
            cases.append(BenchCase("gemma_fused_add_rmsnorm", dtype, (tokens, hidden), tokens, hidden,
                                   (4 * tokens + 1) * hidden * e,
                                   lambda gx=gx, gr=gr, w=gw: mod.gemma_fused_add_rmsnorm(gx, gr, w),
                                   gemma_fused_add_rmsnorm_torch, (x, r, gw)))
            nx = norm_input(tokens * hidden, gen).to(dtype).view(tokens, hidden)
            out = torch.empty_like(nx)
            cases.append(BenchCase("rmsnorm", dtype, (tokens, hidden), tokens, hidden, (2 * tokens + 1) * hidden * e,
                                   lambda nx=nx, w=w, out=out: mod.rmsnorm(nx, w, 1e-6, out), rmsnorm_torch, (nx, w)))
            cases.append(BenchCase("gemma_rmsnorm", dtype, (tokens, hidden), tokens, hidden,
                                   (2 * tokens + 1) * hidden * e,
                                   lambda nx=nx, w=gw, out=out: mod.gemma_rmsnorm(nx, w, 1e-6, out),
                                   gemma_rmsnorm_torch, (nx, gw)))
        for tokens, heads, head_size in merge_shapes:
            shape = (tokens, heads, head_size)
            v_a = normal(math.prod(shape), gen).to(dtype).view(shape)
            v_b = normal(math.prod(shape), gen).to(dtype).view(shape)
            s_a, s_b = lse_pair(tokens, heads, gen, edge_cases=False)
            cases.append(BenchCase("merge_state_v2", dtype, shape, tokens, heads,
                                   3 * math.prod(shape) * e + 3 * tokens * heads * 4,
                                   lambda v_a=v_a, s_a=s_a, v_b=v_b, s_b=s_b: mod.merge_state_v2(v_a, s_a, v_b, s_b),
                                   merge_state_torch, (v_a, s_a, v_b, s_b)))
        for tokens, q_heads, kv_heads in rope_shapes:  # head_size = rotary_dim = 128, a 4096-row cache
            cache = rope_cache(4096, 128)
            positions = rope_positions(tokens, 4096, gen)
            q = normal(tokens * q_heads * 128, gen).to(dtype).view(tokens, q_heads * 128)
            k = normal(tokens * kv_heads * 128, gen).to(dtype).view(tokens, kv_heads * 128)
            kq, kk = q.clone(), k.clone()  # ktune works in place: its own copies of the same values
            cases.append(BenchCase("apply_rope_with_cos_sin_cache_inplace", dtype, (tokens, q_heads, kv_heads, 128),
                                   tokens, q_heads, tokens * (2 * (q_heads + kv_heads) * 128 * e + 8 + 128 * 4),
                                   lambda p=positions, kq=kq, kk=kk, c=cache:
                                   mod.apply_rope_with_cos_sin_cache_inplace(p, kq, kk, 128, c),
                                   rope_torch, (positions, q, k, 128, cache)))
            # The rope with the KV cache store (a bf16 cache of 4 x tokens slots, the tokens' slots scattered): fused in
            # one ktune kernel, and the unfused pair, ktune's rope then SGLang's set_kv_buffer store in PyTorch. Both
            # rows' eager and compile columns are the same plain PyTorch rope + store.
            slots = 4 * tokens
            v = normal(tokens * kv_heads * 128, gen).to(dtype).view(tokens, kv_heads * 128)
            k_buffer = torch.zeros(slots, kv_heads, 128, dtype=dtype, device="cuda")
            v_buffer = torch.zeros_like(k_buffer)
            loc = torch.randperm(slots, generator=gen, device="cuda")[:tokens]
            fq, fk = q.clone(), k.clone()
            arg = FusedSetKVBufferArg(v, k_buffer, v_buffer, None, None, loc)
            kv_bytes = tokens * (2 * (q_heads + kv_heads) * 128 * e + 2 * 8 + 128 * 4 + 3 * kv_heads * 128 * e)
            plain_args = (positions, q, k, 128, cache, v, k_buffer.clone(), v_buffer.clone(), loc)
            cases.append(BenchCase("apply_rope_with_cos_sin_cache_inplace+set_kv_buffer", dtype,
                                   (tokens, q_heads, kv_heads, 128), tokens, q_heads, kv_bytes,
                                   lambda p=positions, fq=fq, fk=fk, c=cache, arg=arg:
                                   mod.apply_rope_with_cos_sin_cache_inplace(p, fq, fk, 128, c,
                                                                             fused_set_kv_buffer_arg=arg),
                                   rope_set_kv_torch, plain_args, label="rope+set_kv fused"))
            uq, uk = q.clone(), k.clone()

            def unfused(p=positions, uq=uq, uk=uk, c=cache, v=v, kb=k_buffer, vb=v_buffer, loc=loc):
                mod.apply_rope_with_cos_sin_cache_inplace(p, uq, uk, 128, c)
                set_kv_buffer_torch(uk, v, kb, vb, loc)

            cases.append(BenchCase("apply_rope_with_cos_sin_cache_inplace", dtype, (tokens, q_heads, kv_heads, 128),
                                   tokens, q_heads, kv_bytes, unfused, rope_set_kv_torch, plain_args,
                                   label="rope, then store"))
    return cases


# At small token counts a cold call is mostly its launch: there the table also splits each call's time into its
# kernels' own time and the rest (kernel_us_cold), which says whose cost a gap to torch.compile is.
KERNEL_SPLIT_MAX_TOKENS = 64


def split_cold_call(row: dict, impls: dict, flush) -> None:
    """Adds <impl>_kernel_us (and <impl>_launch_us, the cold time less it) for ktune and torch.compile to row."""
    for impl in ("ktune", "compile"):
        total = row.get(f"{impl}_us")
        if impl not in impls or total is None:
            continue
        try:
            kernel = kernel_us_cold(impls[impl], 20, flush)
        except Exception as e:  # the profiler is missing or refuses: the row keeps its times
            row["kernel_split_error"] = f"{type(e).__name__}: {first_line(e)}"
            return
        row[f"{impl}_kernel_us"], row[f"{impl}_launch_us"] = kernel, total - kernel


def allow_recompiles() -> None:
    """Every shape and dtype compiles its own graph (dynamic=False); the default limit of 8 per function
    would silently send the later ones back to eager."""
    config = torch._dynamo.config
    for name in ("recompile_limit", "cache_size_limit"):
        if hasattr(config, name):
            setattr(config, name, max(getattr(config, name), 256))


def cell(value, fmt: str, unit: str = "") -> str:
    return "n/a" if value is None else format(value, fmt) + unit


def test_timing(mod, args, report: Report, results: dict) -> None:
    report.section("4. timing: ktune vs eager PyTorch vs torch.compile (median microseconds per call)")
    t = Timing(cold_reps=30, cold_warmup=5, graph_calls=20, graph_replays=10) if args.quick else \
        Timing(cold_reps=100, cold_warmup=10, graph_calls=20, graph_replays=20)
    print(f"cold: {t.cold_reps} calls, each after {FLUSH_BYTES >> 20} MiB written to flush L2 and a GPU-side wait that "
          f"hides the launch, {t.cold_warmup} warm-up calls; graph: {t.graph_calls} calls per CUDA graph, "
          f"{t.graph_replays} timed replays")
    gen = torch.Generator(device="cuda").manual_seed(SEED + 3)
    flush = torch.empty(FLUSH_BYTES, dtype=torch.uint8, device="cuda")
    compile_error = "disabled by --no-compile" if args.no_compile else None
    compiled: dict[str, Callable] = {}
    if compile_error is None:
        try:
            allow_recompiles()
        except Exception as e:
            compile_error = f"{type(e).__name__}: {first_line(e)}"
            print(f"torch.compile unavailable: {compile_error}")

    header = (f"{'op':<18} {'dtype':<5} {'shape':<17} {'mode':<5} {'ktune us':>9} {'eager us':>9} {'compile us':>10} "
              f"{'ktune GB/s':>10} {'vs eager':>9} {'vs compile':>10}")
    print(header)
    print("-" * len(header))
    rows, variants = [], []
    for case in bench_cases(mod, args.quick, gen):
        dname = name_of(case.dtype)
        shape = "[" + ", ".join(map(str, case.shape)) + "]"
        name = case.label or case.op
        variant_id, source = mod.variant(case.op, case.dtype, case.tokens, case.width)
        variants.append(f"{name:<18} {dname:<5} {shape:<17} -> {variant_id or '(general configuration)'}: {source}")
        if compile_error is None and case.plain.__name__ not in compiled:
            compiled[case.plain.__name__] = torch.compile(case.plain, dynamic=False)
        impls = {"ktune": case.ktune, "eager": lambda c=case: c.plain(*c.args)}
        if compile_error is None:
            impls["compile"] = lambda c=case: compiled[c.plain.__name__](*c.args)
        for mode in ("cold", "graph"):
            times = {}
            for impl, fn in impls.items():
                if impl == "compile" and compile_error is not None:
                    continue
                try:
                    times[impl] = time_cold(fn, t, flush) if mode == "cold" else time_graph(fn, t)
                except Exception as e:
                    reason = f"{type(e).__name__}: {first_line(e)}"
                    if impl == "compile" and mode == "cold":  # compiling failed: the environment lacks something
                        compile_error = reason
                        print(f"torch.compile unavailable: {reason}")
                    elif impl == "compile":
                        times[impl] = None
                        print(f"torch.compile'd {name} could not be captured in a CUDA graph: {reason}")
                    else:
                        report.run(f"timing {impl} {name} {dname} {shape} {mode}", lambda r=reason: [f"raised {r}"])
            k, eg, cp = times.get("ktune"), times.get("eager"), times.get("compile")
            row = {"op": name, "dtype": dname, "shape": list(case.shape), "mode": mode, "ktune_us": k, "eager_us": eg,
                   "compile_us": cp, "ktune_GBps": case.bytes / (k * 1e3) if k else None,
                   "speedup_vs_eager": eg / k if k and eg else None, "speedup_vs_compile": cp / k if k and cp else None,
                   "variant": variant_id, "variant_source": source}
            if mode == "cold" and case.tokens <= KERNEL_SPLIT_MAX_TOKENS:
                split_cold_call(row, impls, flush)
            rows.append(row)

            print(f"{name:<18} {dname:<5} {shape:<17} {mode:<5} {cell(k, '.2f'):>9} {cell(eg, '.2f'):>9} "
                  f"{cell(cp, '.2f'):>10} {cell(row['ktune_GBps'], '.0f'):>10} "
                  f"{cell(row['speedup_vs_eager'], '.2f', 'x'):>9} {cell(row['speedup_vs_compile'], '.2f', 'x'):>10}",
                  flush=True)
    if compile_error is not None:
        print(f"torch.compile column: unavailable ({compile_error})")
    split = [r for r in rows if "ktune_kernel_us" in r]
    if split:
        print(f"\ncold calls at tokens <= {KERNEL_SPLIT_MAX_TOKENS}, split: the kernels' own time (CUPTI, through "
              "torch.profiler) + the rest of the cold time (the launch)")
        for r in split:
            shape = "[" + ", ".join(map(str, r["shape"])) + "]"
            parts = [f"{impl} {r[f'{impl}_kernel_us']:.2f} + {r[f'{impl}_launch_us']:.2f}"
                     for impl in ("ktune", "compile") if f"{impl}_kernel_us" in r]
            print(f"  {r['op']:<18} {r['dtype']:<5} {shape:<17} " + "; ".join(parts))
    print("\nktune variants (module.variant(op, dtype, tokens, width)):")
    for line in variants:
        print("  " + line)
    results["bench"] = rows
    results["bench_settings"] = vars(t)
    results["torch_compile"] = compile_error or "ok"


# ---- main -----------------------------------------------------------------------------------------

def environment() -> dict:
    props = torch.cuda.get_device_properties(0)
    return {
        "device": props.name,
        "capability": f"{props.major}.{props.minor}",
        "multiprocessors": props.multi_processor_count,
        "l2_bytes": getattr(props, "L2_cache_size", None),
        "torch": torch.__version__,
        "torch_cuda": torch.version.cuda,
        "python": sys.version.split()[0],
    }


def main() -> int:
    parser = argparse.ArgumentParser(description="Checks and times ktune_torch against plain PyTorch.")
    parser.add_argument("--quick", action="store_true", help="fewer timed shapes and repetitions (bf16 only)")
    parser.add_argument("--json", metavar="PATH", help="write the environment, the checks and the timings here")
    parser.add_argument("--no-bench", action="store_true", help="correctness, errors and graphs only")
    parser.add_argument("--no-compile", action="store_true", help="leave torch.compile out of the timing")
    parser.add_argument("--verbose", action="store_true", help="print every passing check and the build commands")
    args = parser.parse_args()

    if torch is None:
        print(f"SKIPPED: PyTorch is not importable ({TORCH_ERROR})")
        return 0
    if not torch.cuda.is_available():
        why = "PyTorch is built without CUDA" if torch.version.cuda is None else "torch.cuda.is_available() is False"
        print(f"SKIPPED: no CUDA device ({why}; PyTorch {torch.__version__})")
        return 0

    build = _load_beside("ktune_torch_build", "build.py")  # by path: PyPA's `build` package must not shadow it

    report = Report(args.verbose)
    results: dict = {"environment": environment()}
    env = results["environment"]
    print(f"device: {env['device']} (sm_{env['capability'].replace('.', '')}, {env['multiprocessors']} SMs), "
          f"PyTorch {env['torch']} (CUDA {env['torch_cuda']}), Python {env['python']}")
    started = time.perf_counter()
    try:
        root = build.source_dir()
        mod = build.load_ktune_torch(verbose=args.verbose)
    except Exception as e:
        print(f"FAIL build: {type(e).__name__}: {e}")
        print("0 passed, 1 failed")
        return 1

    test_correctness(mod, root, report)
    test_shared_buffers(mod, root, report)
    test_errors(mod, report)
    test_graphs(mod, report)
    if not args.no_bench:
        try:
            test_timing(mod, args, report, results)
        except Exception as e:  # a failure of the harness itself: say so, count it
            report.run("timing", lambda: [f"raised {type(e).__name__}: {first_line(e)}"])

    results["checks"] = {"passed": report.passed, "failed": report.failures}
    if args.json:
        try:
            Path(args.json).write_text(json.dumps(results, indent=2) + "\n")
            print(f"\nwrote {args.json}")
        except OSError as e:
            report.run(f"write {args.json}", lambda: [f"{type(e).__name__}: {e}"])
    print(f"\n{time.perf_counter() - started:.0f} s")
    if report.failures:
        print(f"{len(report.failures)} failed checks:")
        for failure in report.failures:
            print(f"  {failure}")
    print(f"{report.passed} passed, {len(report.failures)} failed")
    return 1 if report.failures else 0


if __name__ == "__main__":
    sys.exit(main())
