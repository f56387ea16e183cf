#!/usr/bin/env python3
"""One decoder layer of LLaMA-3-8B (and one of Gemma-2-2B) in PyTorch, its memory-bound ops through
ktune_torch, against the same layer in eager PyTorch and under torch.compile, in CUDA graphs, at decode
(T = 1, 16, 64 sequences of one new token) and prefill (one sequence of T = 2048, 8192 tokens). README.md
beside this file says what is measured and how.

    python3 decoder_layer.py [--models llama3-8b,gemma2-2b] [--tokens 1,16,64,2048,8192] [--context 1024]
                             [--json decoder-layer.json] [--quick] [--no-compile] [--compile-mode MODE]

The GEMMs go through torch (F.linear), the attention through F.scaled_dot_product_attention, in every
variant alike; only the memory-bound ops differ (layer_report.Model.memory_bound_ops): ktune_torch's, or
SGLang's forward_native versions of them in eager PyTorch, or those under torch.compile (the whole layer
compiled). Prints three markdown tables (the layer; its memory-bound ops; the output against a float64 run
of the same layer) and writes them with every measurement to the JSON file. Exits 1 when an output check
fails, 0 otherwise; prints "SKIPPED: <reason>" and exits 0 without PyTorch or a CUDA device.
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import math
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
EXAMPLE_02 = ROOT / "examples" / "02_pytorch_extension"
SEED = 20240612


def _load(name: str, path: Path):
    """A module by path (a package of the same name on sys.path must not shadow it)."""
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up while the class is made
    spec.loader.exec_module(module)
    return module


report = _load("decoder_layer_report", HERE / "layer_report.py")  # plain Python: no PyTorch needed

try:  # the measurements need PyTorch; without it the script only says why it skips
    import torch
    import torch.nn.functional as F
    TORCH_ERROR = None
except Exception as e:  # not installed, or an install that fails to import
    torch = None
    F = None
    TORCH_ERROR = f"{type(e).__name__}: {e}"


# ---- the memory-bound ops, four ways ----------------------------------------------------------------
# Each has add_norm(x, residual, w) -> (x, residual), norm(x, w) -> x, rope(positions, q, k, cache) -> (q, k)
# and act(gate_up) -> x; the layer calls them in the same places whatever they are.

class KtuneOps:
    """ktune_torch's ops (sgl_kernel's signatures). add_norm and rope work in place."""
    name = "ktune"

    def __init__(self, mod, gemma: bool, eps: float, head_dim: int):
        self.add_norm_op = mod.gemma_fused_add_rmsnorm if gemma else mod.fused_add_rmsnorm
        self.norm_op = mod.gemma_rmsnorm
        self.rope_op = mod.apply_rope_with_cos_sin_cache_inplace
        self.act_op = mod.gelu_tanh_and_mul if gemma else mod.silu_and_mul
        self.eps, self.head_dim = eps, head_dim

    def add_norm(self, x, residual, w):
        self.add_norm_op(x, residual, w, self.eps)
        return x, residual

    def norm(self, x, w):
        return self.norm_op(x, w, self.eps)

    def rope(self, positions, q, k, cache):
        self.rope_op(positions, q, k, self.head_dim, cache, True)
        return q, k

    # The decode KV-cache store fused into the rope (sgl_kernel's fused_set_kv_buffer_arg): the layer calls this
    # instead of rope() where it has a cache, and leaves the store to it.
    stores_kv = True

    def rope_and_store(self, positions, q, k, v, cache, k_buffer, v_buffer, cache_loc):
        arg = FusedSetKVBufferArg(v, k_buffer, v_buffer, None, None, cache_loc)
        self.rope_op(positions, q, k, self.head_dim, cache, True, fused_set_kv_buffer_arg=arg)
        return q, k

    def act(self, gate_up):
        return self.act_op(gate_up)


@dataclass
class FusedSetKVBufferArg:
    """sgl_kernel's FusedSetKVBufferArg: ktune_torch reads these attributes by name."""
    value: object
    k_buffer: object
    v_buffer: object
    k_scale: float | None
    v_scale: float | None
    cache_loc: object


class NativeOps:
    """SGLang's forward_native versions (RMSNorm, GemmaRMSNorm, RotaryEmbedding, SiluAndMul, GeluAndMul): what
    eager PyTorch runs, and what torch.compile compiles. Norms in float32, rounded to the storage type once."""
    name = "eager"

    def __init__(self, gemma: bool, eps: float, head_dim: int):
        self.gemma, self.eps, self.head_dim = gemma, eps, head_dim

    def _weighted(self, x, w):
        return x * (1.0 + w.float()) if self.gemma else x * w.float()

    def add_norm(self, x, residual, w):
        dtype = x.dtype
        s = x.float() + residual.float()
        residual = s.to(dtype)
        s = s * torch.rsqrt(s.pow(2).mean(dim=-1, keepdim=True) + self.eps)
        return self._weighted(s, w).to(dtype), residual

    def norm(self, x, w):
        dtype = x.dtype
        s = x.float()
        s = s * torch.rsqrt(s.pow(2).mean(dim=-1, keepdim=True) + self.eps)
        return self._weighted(s, w).to(dtype)

    def rope(self, positions, q, k, cache):
        cos, sin = cache.index_select(0, positions).chunk(2, dim=-1)
        cos, sin = cos.unsqueeze(1), sin.unsqueeze(1)

        def rotate(x):
            tokens = x.shape[0]
            x = x.reshape(tokens, -1, self.head_dim)
            a, b = x.float().chunk(2, dim=-1)
            return torch.cat((a * cos - b * sin, b * cos + a * sin), dim=-1).to(x.dtype).reshape(tokens, -1)

        return rotate(q), rotate(k)

    def act(self, gate_up):
        d = gate_up.shape[-1] // 2
        a = gate_up[..., :d]
        return (F.gelu(a, approximate="tanh") if self.gemma else F.silu(a)) * gate_up[..., d:]


class SkeletonOps:
    """No memory-bound op at all: the layer's GEMMs, attention, KV-cache store and layout copies alone (the
    activation's place taken by a view of the gate half). Its time, subtracted from a variant's layer, is that
    variant's memory-bound ops' time in the layer."""
    name = "skeleton"

    def add_norm(self, x, residual, w):
        return x, residual

    def norm(self, x, w):
        return x

    def rope(self, positions, q, k, cache):
        return q, k

    def act(self, gate_up):
        return gate_up[..., :gate_up.shape[-1] // 2]


class Float64Ops:
    """The same layer's semantics in float64 (ktune's kernels/<op>/reference.hpp): the check's reference."""
    name = "float64"

    def __init__(self, gemma: bool, eps: float, head_dim: int):
        self.gemma, self.head_dim = gemma, head_dim
        self.eps = torch.tensor(eps, dtype=torch.float32).item()  # the kernels take eps as a float

    def _weighted(self, x, w):
        return x * (1.0 + w) if self.gemma else x * w

    def add_norm(self, x, residual, w):
        s = x + residual
        return self._weighted(s * torch.rsqrt(s.square().mean(dim=-1, keepdim=True) + self.eps), w), s

    def norm(self, x, w):
        return self._weighted(x * torch.rsqrt(x.square().mean(dim=-1, keepdim=True) + self.eps), w)

    def rope(self, positions, q, k, cache):
        half = cache.shape[1] // 2
        cos = cache.double()[positions, :half].unsqueeze(1)
        sin = cache.double()[positions, half:].unsqueeze(1)

        def rotate(x):
            tokens = x.shape[0]
            x = x.reshape(tokens, -1, self.head_dim)
            a, b = x[..., :half], x[..., half:]
            return torch.cat((a * cos - b * sin, b * cos + a * sin), dim=-1).reshape(tokens, -1)

        return rotate(q), rotate(k)

    def act(self, gate_up):
        d = gate_up.shape[-1] // 2
        a, b = gate_up[..., :d], gate_up[..., d:]
        if self.gemma:
            return 0.5 * a * (1.0 + torch.tanh(0.79788456080286535588 * (a + 0.044715 * a * a * a))) * b
        return a / (1.0 + torch.exp(-a)) * b


# ---- the layer ------------------------------------------------------------------------------------

def torch_at_least(major: int, minor: int) -> bool:
    parts = torch.__version__.split("+")[0].split(".")
    return (int(parts[0]), int(parts[1])) >= (major, minor)


def rope_cache(max_pos: int, rotary_dim: int, theta: float):
    """cos then sin, float32 [max_pos, rotary_dim], as SGLang's RotaryEmbedding builds it."""
    inv_freq = 1.0 / (theta ** (torch.arange(0, rotary_dim, 2, dtype=torch.float32, device="cuda") / rotary_dim))
    freqs = torch.outer(torch.arange(max_pos, dtype=torch.float32, device="cuda"), inv_freq)
    return torch.cat((freqs.cos(), freqs.sin()), dim=-1).contiguous()


class Layer:
    """One decoder layer with random weights (scaled so that activations stay of order one), its inputs, and
    for a decode step the KV caches of T sequences of `context` tokens (the new token's k and v are stored at
    the last position, then attended to with the others).

    LLaMA:   residual += x; x = norm(residual)            input_layernorm (fused add)
             q, k, v = qkv_proj(x).split(...); rope(q, k); x = o_proj(attention(q, k, v))
             residual += x; x = norm(residual)            post_attention_layernorm (fused add)
             x = down_proj(silu_and_mul(gate_up_proj(x)))
    Gemma-2: the same with (1 + w) norms, x = norm(o_proj(...)) (post_attention_layernorm) before the second
             fused add (pre_feedforward_layernorm), gelu_tanh_and_mul, and x = norm(down_proj(...))
             (post_feedforward_layernorm) last."""

    def __init__(self, model, tokens: int, context: int, dtype, gen):
        m = model
        self.model, self.tokens, self.context = m, tokens, context
        self.phase = report.phase_of(tokens)
        self.gemma = m.gemma
        self.heads, self.kv_heads, self.head_dim = m.heads, m.kv_heads, m.head_dim
        self.q_width, self.kv_width, self.intermediate = m.q_width, m.kv_width, m.intermediate
        self.gqa = torch_at_least(2, 5)  # scaled_dot_product_attention(enable_gqa=...) is there

        def randn(*shape, std=1.0):
            return (torch.randn(*shape, generator=gen, device="cuda") * std).to(dtype)

        def norm_weight():  # Gemma stores w - 1 (near 0); LLaMA w (near 1)
            w = 0.1 * torch.randn(m.hidden, generator=gen, device="cuda")
            return (w if m.gemma else 1.0 + w).to(dtype)

        self.w = {
            "qkv": randn(m.q_width + 2 * m.kv_width, m.hidden, std=m.hidden ** -0.5),
            "o": randn(m.hidden, m.q_width, std=m.q_width ** -0.5),
            "gate_up": randn(2 * m.intermediate, m.hidden, std=m.hidden ** -0.5),
            "down": randn(m.hidden, m.intermediate, std=m.intermediate ** -0.5),
        }
        for name in ("input", "post_attention", "pre_feedforward", "post_feedforward"):
            self.w[name] = norm_weight()
        self.cache = rope_cache(max(tokens, context) + 1, m.head_dim, m.rope_theta)
        if self.phase == "decode":
            self.positions = torch.full((tokens,), context - 1, dtype=torch.int64, device="cuda")
            # Token-major, as SGLang's KV pool: [sequence, position, kv_heads, head_dim], so that a position's slot
            # is one [kv_heads, head_dim] row of the flat [T * C, kv_heads, head_dim] buffer (the fused store's
            # k_buffer); attention reads it as [T, kv_heads, C, head_dim] (a transposed view). Each sequence's new
            # token goes to its last position: slot t * C + C - 1.
            self.kv_cache = (randn(tokens, context, m.kv_heads, m.head_dim), randn(tokens, context, m.kv_heads, m.head_dim))
            self.cache_loc = torch.arange(tokens, dtype=torch.int64, device="cuda") * context + (context - 1)
        else:
            self.positions = torch.arange(tokens, dtype=torch.int64, device="cuda")
            self.kv_cache = None
        self.hidden_in = randn(tokens, m.hidden)
        self.residual_in = randn(tokens, m.hidden)

    def sdpa(self, q, k, v, causal: bool):
        if self.gqa:
            return F.scaled_dot_product_attention(q, k, v, is_causal=causal, enable_gqa=True)
        rep = self.heads // self.kv_heads
        return F.scaled_dot_product_attention(q, k.repeat_interleave(rep, dim=1), v.repeat_interleave(rep, dim=1),
                                              is_causal=causal)

    def attention(self, q, k, v, kv_cache, stored: bool = False):
        """q [T, H D], k and v [T, KV D] -> [T, H D]. Prefill: causal over the T tokens of one sequence. Decode:
        each of the T sequences' new token, stored in its KV cache at the last position (by PyTorch here unless
        the rope `stored` it already), against its cache."""
        t, h, kv, d = q.shape[0], self.heads, self.kv_heads, self.head_dim
        if kv_cache is None:
            o = self.sdpa(q.reshape(1, t, h, d).transpose(1, 2), k.reshape(1, t, kv, d).transpose(1, 2),
                          v.reshape(1, t, kv, d).transpose(1, 2), causal=True)
            return o.transpose(1, 2).reshape(t, h * d)
        k_cache, v_cache = kv_cache
        if not stored:
            k_cache[:, -1] = k.reshape(t, kv, d)
            v_cache[:, -1] = v.reshape(t, kv, d)
        return self.sdpa(q.reshape(t, h, 1, d), k_cache.transpose(1, 2), v_cache.transpose(1, 2),
                         causal=False).reshape(t, h * d)

    def forward(self, ops, hidden, residual, w=None, kv_cache=None, attention=None):
        w = self.w if w is None else w
        kv_cache = self.kv_cache if kv_cache is None else kv_cache
        attention = self.attention if attention is None else attention
        hidden, residual = ops.add_norm(hidden, residual, w["input"])
        qkv = F.linear(hidden, w["qkv"])
        q, k, v = qkv.split([self.q_width, self.kv_width, self.kv_width], dim=-1)
        stored = kv_cache is not None and getattr(ops, "stores_kv", False)
        if stored:  # ktune: the rope stores k and v in the cache in the same kernel
            t, kv, d = q.shape[0], self.kv_heads, self.head_dim
            q, k = ops.rope_and_store(self.positions, q, k, v, self.cache, kv_cache[0].view(-1, kv, d),
                                      kv_cache[1].view(-1, kv, d), self.cache_loc)
            hidden = F.linear(attention(q, k, v, kv_cache, stored=True), w["o"])
        else:
            q, k = ops.rope(self.positions, q, k, self.cache)
            hidden = F.linear(attention(q, k, v, kv_cache), w["o"])
        if self.gemma:
            hidden = ops.norm(hidden, w["post_attention"])
        hidden, residual = ops.add_norm(hidden, residual, w["pre_feedforward" if self.gemma else "post_attention"])
        hidden = F.linear(ops.act(F.linear(hidden, w["gate_up"])), w["down"])
        if self.gemma:
            hidden = ops.norm(hidden, w["post_feedforward"])
        return hidden, residual

    # -- the float64 run of the same layer, from the same stored inputs and weights --

    def attention64(self, q, k, v, kv_cache):
        """Attention in float64, by blocks of queries (an [H, T, T] float64 score matrix at T = 8192 would take
        17 GB): softmax(q k^T / sqrt(D)) v over the keys each query sees."""
        t, h, kv, d = q.shape[0], self.heads, self.kv_heads, self.head_dim
        if kv_cache is None:
            qh, kh, vh = (x.reshape(t, n, d).transpose(0, 1) for x, n in ((q, h), (k, kv), (v, kv)))  # [n, T, D]
        else:
            k_cache, v_cache = kv_cache
            k_cache[:, -1] = k.reshape(t, kv, d)
            v_cache[:, -1] = v.reshape(t, kv, d)
            k_cache, v_cache = k_cache.transpose(1, 2), v_cache.transpose(1, 2)  # [T, KV, C, D]
        out = torch.empty(t, h, d, dtype=torch.float64, device="cuda")
        scale = d ** -0.5
        rep = h // kv
        block = 512
        if kv_cache is None:
            kh, vh = kh.repeat_interleave(rep, dim=0), vh.repeat_interleave(rep, dim=0)  # [H, T, D]
            for start in range(0, t, block):
                stop = min(t, start + block)
                s = torch.matmul(qh[:, start:stop], kh[:, :stop].transpose(1, 2)) * scale  # [H, b, stop]
                rows = torch.arange(start, stop, device="cuda").unsqueeze(1)
                s = s.masked_fill(torch.arange(stop, device="cuda").unsqueeze(0) > rows, -math.inf)
                out[start:stop] = torch.matmul(torch.softmax(s, dim=-1), vh[:, :stop]).transpose(0, 1)
        else:
            k_all = k_cache.repeat_interleave(rep, dim=1)  # [T, H, C, D]
            v_all = v_cache.repeat_interleave(rep, dim=1)
            s = torch.matmul(q.reshape(t, h, 1, d), k_all.transpose(-1, -2)) * scale  # [T, H, 1, C]
            out = torch.matmul(torch.softmax(s, dim=-1), v_all).reshape(t, h, d)
        return out.reshape(t, h * d)

    def reference(self):
        """(hidden, residual) of the layer computed in float64 from the stored inputs."""
        w64 = {name: t.double() for name, t in self.w.items()}
        kv64 = None if self.kv_cache is None else tuple(c.double() for c in self.kv_cache)
        ops = Float64Ops(self.gemma, self.model.eps, self.head_dim)
        return self.forward(ops, self.hidden_in.double(), self.residual_in.double(), w=w64, kv_cache=kv64,
                            attention=self.attention64)


# ---- measurement ----------------------------------------------------------------------------------

def capture(step: Callable[[], object]):
    """step() captured in a CUDA graph after two warm-up calls on a side stream (which also compile a
    torch.compile'd step), as PyTorch asks."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(2):
            step()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        step()
    return graph


def timed_in_turns(steps: dict[str, tuple[Callable[[], object], int]], replays: int, errors: dict,
                   suffix: str = "") -> dict[str, float | None]:
    """Median microseconds per call of each name's graph, the graph of `calls` calls of its step()'s work.
    The graphs are replayed in turns, one replay of each per round: a drift of the GPU's clock over the run
    moves them all alike, so their differences (the layer less its skeleton) keep only their own noise.
    A step that cannot be captured gets None, and its error in errors[name + suffix]."""
    graphs = {}
    for name, (step, calls) in steps.items():
        try:
            graphs[name] = (capture(step), calls)
        except Exception as e:
            errors[name + suffix] = f"{type(e).__name__}: {first_line(e)}"
    for graph, _ in graphs.values():
        for _ in range(3):
            graph.replay()
    torch.cuda.synchronize()
    events = {name: [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
                     for _ in range(replays)] for name in graphs}
    for i in range(replays):
        for name, (graph, _) in graphs.items():
            start, end = events[name][i]
            start.record()
            graph.replay()
            end.record()
    torch.cuda.synchronize()
    times: dict[str, float | None] = {name: None for name in steps}
    for name, (_, calls) in graphs.items():
        times[name] = statistics.median(s.elapsed_time(e) for s, e in events[name]) * 1000.0 / calls
    return times


def repeated(step: Callable[[], object], calls: int) -> Callable[[], None]:
    """step() `calls` times: one graph replay's fixed cost spread over as many calls as the layer's graphs."""
    def steps():
        for _ in range(calls):
            step()

    return steps


def kernel_count(step: Callable[[], object], errors: dict, what: str) -> int | None:
    """How many kernels one call of step() runs (CUPTI's records, through torch.profiler): torch.compile may
    fuse the ops alone into fewer kernels than the serving engine's separate calls."""
    try:
        from torch.autograd import DeviceType
        from torch.profiler import ProfilerActivity, profile

        step()
        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            step()
            torch.cuda.synchronize()
        return sum(1 for e in prof.events() if e.device_type == DeviceType.CUDA)
    except Exception as e:
        errors[what] = f"{type(e).__name__}: {first_line(e)}"
        return None


def chained(layer: Layer, fn: Callable, calls: int) -> Callable[[], object]:
    """`calls` layers back to back, each one's output the next one's input (one weight set, as the layers
    of a model would pass the hidden state and residual on), from the layer's inputs copied once."""
    hidden, residual = layer.hidden_in.clone(), layer.residual_in.clone()

    def step():
        h, r = hidden, residual
        for _ in range(calls):
            h, r = fn(h, r)
        return h, r

    return step


def ops_alone(layer: Layer, ops) -> Callable[[], object]:
    """The layer's memory-bound ops alone, in its order, on tensors of the layer's shapes (inputs written
    once: the values do not change their cost)."""
    m, t = layer.model, layer.tokens
    gen = torch.Generator(device="cuda").manual_seed(SEED + 7)
    dtype = layer.hidden_in.dtype

    def randn(*shape):
        return torch.randn(*shape, generator=gen, device="cuda").to(dtype)

    hidden, residual = randn(t, m.hidden), randn(t, m.hidden)
    qkv, o, gate_up, down = randn(t, m.q_width + 2 * m.kv_width), randn(t, m.hidden), randn(t, 2 * m.intermediate), \
        randn(t, m.hidden)
    w = layer.w

    def step():
        h, r = ops.add_norm(hidden, residual, w["input"])
        q, k, _ = qkv.split([m.q_width, m.kv_width, m.kv_width], dim=-1)
        q, k = ops.rope(layer.positions, q, k, layer.cache)
        x = ops.norm(o, w["post_attention"]) if layer.gemma else o
        x, r = ops.add_norm(x, r, w["pre_feedforward" if layer.gemma else "post_attention"])
        a = ops.act(gate_up)
        y = ops.norm(down, w["post_feedforward"]) if layer.gemma else down
        return h, q, k, x, r, a, y

    return step


def relative_l2(got, ref) -> float:
    d = (got.double() - ref).square().sum().item()
    return report.relative_error(d, ref.square().sum().item())


def first_line(e: BaseException) -> str:
    text = str(e).strip().splitlines()
    return (text[0][:300] if text else type(e).__name__)


def allow_recompiles() -> None:
    """One compiled graph per model and token count (dynamic=False): the default limit of 8 per function
    would silently send the later ones back to eager."""
    config = torch._dynamo.config
    for name in ("recompile_limit", "cache_size_limit"):
        if hasattr(config, name):
            setattr(config, name, max(getattr(config, name), 256))


def measure(mod, model, tokens: int, args, dtype, notes: list) -> dict:
    gen = torch.Generator(device="cuda").manual_seed(SEED + tokens)
    layer = Layer(model, tokens, args.context, dtype, gen)
    phase = layer.phase
    ktune_ops = KtuneOps(mod, model.gemma, model.eps, model.head_dim)
    native = NativeOps(model.gemma, model.eps, model.head_dim)
    impls: dict[str, Callable] = {
        "ktune": lambda h, r: layer.forward(ktune_ops, h, r),
        "eager": lambda h, r: layer.forward(native, h, r),
    }
    alone: dict[str, Callable] = {"ktune": ops_alone(layer, ktune_ops), "eager": ops_alone(layer, native)}
    errors: dict[str, str] = {}
    if not args.no_compile:
        try:
            impls["compile"] = torch.compile(lambda h, r: layer.forward(native, h, r), dynamic=False,
                                             mode=args.compile_mode)
            alone["compile"] = torch.compile(ops_alone(layer, native), dynamic=False, mode=args.compile_mode)
        except Exception as e:  # torch.compile itself unavailable
            errors["compile"] = f"{type(e).__name__}: {first_line(e)}"

    # 1. the output of one layer call of each variant against the float64 run, from the same inputs
    started = time.perf_counter()
    ref_hidden, ref_residual = layer.reference()
    rel, rel_residual = {}, {}
    for name, fn in impls.items():
        try:
            h, r = fn(layer.hidden_in.clone(), layer.residual_in.clone())
            torch.cuda.synchronize()
            rel[name] = relative_l2(h, ref_hidden)
            rel_residual[name] = relative_l2(r, ref_residual)
        except Exception as e:
            errors[name] = f"{type(e).__name__}: {first_line(e)}"
            rel[name] = rel_residual[name] = None
    del ref_hidden, ref_residual
    torch.cuda.empty_cache()

    # 2. times in CUDA graphs: the layer (chained calls) of each variant and its skeleton, replayed in turns;
    # then the memory-bound ops alone, in turns too. A step that cannot be captured is timed no further.
    calls = (2 if tokens >= 2048 else 8) if args.quick else (4 if tokens >= 2048 else 16)
    replays = 5 if args.quick else (20 if tokens >= 2048 else 60)
    steps = {name: (chained(layer, fn, calls), calls) for name, fn in impls.items() if name not in errors}
    steps["skeleton"] = (chained(layer, lambda h, r: layer.forward(SkeletonOps(), h, r), calls), calls)
    layer_us = timed_in_turns(steps, replays, errors)
    skeleton_us = layer_us.pop("skeleton", None)
    alone_us = timed_in_turns({name: (repeated(step, calls), calls) for name, step in alone.items()}, replays, errors,
                              " ops alone")
    for name in ("ktune", "eager", "compile"):
        layer_us.setdefault(name, None)
        alone_us.setdefault(name, None)
    alone_kernels = {name: kernel_count(step, errors, name + " kernel count") for name, step in alone.items()}

    variants = {}
    for op in dict.fromkeys(model.memory_bound_ops()):
        width = {"apply_rope_with_cos_sin_cache_inplace": model.heads,
                 "silu_and_mul": model.intermediate, "gelu_tanh_and_mul": model.intermediate}.get(op, model.hidden)
        try:
            variants[op] = list(mod.variant(op, dtype, tokens, width))
        except Exception as e:
            variants[op] = ["", f"{type(e).__name__}: {first_line(e)}"]
    for name, why in errors.items():
        notes.append(f"{model.name} T={tokens} {name}: {why}")
    row = {"model": model.name, "phase": phase, "tokens": tokens, "context": args.context if phase == "decode" else None,
           "layer_us": layer_us, "skeleton_us": skeleton_us, "ops_alone_us": alone_us, "rel_l2": rel,
           "rel_l2_residual": rel_residual, "ops_alone_kernels": alone_kernels, "chained_calls": calls,
           "replays": replays, "ktune_variants": variants, "errors": errors, "seconds": round(time.perf_counter() - started, 1)}
    del layer, impls, alone
    torch.cuda.empty_cache()
    return row


def environment() -> dict:
    props = torch.cuda.get_device_properties(0)
    try:
        commit = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True,
                                text=True, check=False).stdout.strip() or None
    except OSError:
        commit = None
    return {"device": props.name, "capability": f"{props.major}.{props.minor}", "multiprocessors": props.multi_processor_count,
            "torch": torch.__version__, "torch_cuda": torch.version.cuda, "python": sys.version.split()[0],
            "ktune_commit": commit}


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default=",".join(report.MODELS),
                        help=f"comma-separated, of {', '.join(report.MODELS)} (default: both)")
    parser.add_argument("--tokens", default=",".join(map(str, report.TOKENS)),
                        help=f"comma-separated token counts; <= {report.DECODE_MAX_TOKENS}: a decode step of that many "
                             "sequences, above: one prefill (default: %(default)s)")
    parser.add_argument("--context", type=int, default=1024,
                        help="decode: tokens in each sequence's KV cache, the new one included (default: %(default)s)")
    parser.add_argument("--json", default="decoder-layer.json", metavar="PATH",
                        help="where to write every measurement (default: %(default)s)")
    parser.add_argument("--quick", action="store_true", help="fewer chained calls and replays")
    parser.add_argument("--no-compile", action="store_true", help="leave torch.compile out")
    parser.add_argument("--compile-mode", default="default",
                        help="torch.compile's mode (SGLang's --enable-torch-compile uses max-autotune-no-cudagraphs)")
    args = parser.parse_args(argv)
    try:
        args.model_names = report.parse_list(args.models, report.MODELS)
        args.token_counts = report.parse_list(args.tokens, None, int)
    except ValueError as e:
        parser.error(str(e))
    if any(t < 1 for t in args.token_counts) or args.context < 1:
        parser.error("token counts and --context must be at least 1")
    return args


def main(argv=None) -> int:
    args = parse_args(argv)
    if torch is None:
        print(f"SKIPPED: PyTorch is not importable ({TORCH_ERROR})")
        return 0
    if not torch.cuda.is_available():
        why = "PyTorch is built without CUDA" if torch.version.cuda is None else "torch.cuda.is_available() is False"
        print(f"SKIPPED: no CUDA device ({why}; PyTorch {torch.__version__})")
        return 0
    build = _load("ktune_torch_build", EXAMPLE_02 / "build.py")  # by path: PyPA's `build` must not shadow it
    mod = build.load_ktune_torch()
    env = environment()
    print(f"device: {env['device']} (sm_{env['capability'].replace('.', '')}), PyTorch {env['torch']} "
          f"(CUDA {env['torch_cuda']}), ktune {env['ktune_commit'] or '(not a git checkout)'}", flush=True)
    if not args.no_compile:
        allow_recompiles()
    dtype = torch.bfloat16
    rows, notes = [], []
    started = time.perf_counter()
    for name in args.model_names:
        model = report.MODELS[name]
        for tokens in args.token_counts:
            raw = measure(mod, model, tokens, args, dtype, notes)
            row = report.derive(raw)
            rows.append(row)
            lay = row["layer_us"]
            print(f"{name} T={tokens} ({row['phase']}): layer ktune {report.fmt_us(lay.get('ktune'))} us, eager "
                  f"{report.fmt_us(lay.get('eager'))} us, compile {report.fmt_us(lay.get('compile'))} us; memory-bound ops "
                  f"ktune/compile {report.fmt_ratio(row['memory_bound_ratio'].get('compile'))} in the layer, "
                  f"{report.fmt_ratio(row['ops_alone_ratio'].get('compile'))} alone; rel_l2 ktune "
                  f"{report.fmt_err(row['rel_l2'].get('ktune'))} ({'pass' if row['accurate'] else 'FAIL'}); "
                  f"{row['seconds']} s", flush=True)
    print()
    print(report.markdown(rows))
    for note in notes:
        print(f"note: {note}")
    results = {"environment": env,
               "settings": {"dtype": "bf16", "context": args.context, "quick": args.quick,
                            "compile": None if args.no_compile else args.compile_mode, "seed": SEED},
               "models": {name: report.model_dict(report.MODELS[name]) for name in args.model_names},
               "rows": rows, "summary": report.summary(rows), "notes": notes}
    Path(args.json).write_text(json.dumps(results, indent=2) + "\n")
    failed = [f"{r['model']} T={r['tokens']}" for r in rows if not r["accurate"]]
    print(f"wrote {args.json}; {time.perf_counter() - started:.0f} s")
    print(f"{len(rows) - len(failed)} passed, {len(failed)} failed" + (f": {', '.join(failed)}" if failed else ""))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
