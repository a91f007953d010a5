#!/usr/bin/env python3
"""Measure GPU kernel latencies with PyTorch on one GPU (written for an H200).

This produces measured inputs for clustersim's H200 profile:
  1. attention   - causal SDPA (bf16, GQA) forward and backward-only latency, so the
                   profile can use a measured flash-attention backward/forward ratio
                   instead of an assumed one.  Files: context_attention_perf.csv,
                   context_attention_bwd_perf.csv, context_attention_fwdbwd_ratio.csv,
                   attention_backend.txt (which SDPA backend ran per shape).
  2. elementwise - memory-bound kernels as eager PyTorch runs them (RMSNorm, SwiGLU,
                   residual add, RoPE, cross-entropy fwd+bwd, fused AdamW step, plain
                   copy as the reference rate) with a byte count of the HBM traffic
                   the op needs at minimum.  File: elementwise_perf.csv.
  3. layer       - one Llama-style decoder layer (8B and 70B dims) forward and
                   forward+backward, as an end-to-end check of the per-layer model,
                   plus a torch.profiler kernel breakdown of one 70B fwd+bwd.
                   Files: layer_perf.csv, layer_kernels.csv.
  4. gemm-check  - torch.matmul bf16 and torch._scaled_mm fp8 for a few shapes.
                   File: gemm_torch_perf.csv.
Optional sections (run only when named in --sections):
  5. attention_cudnn - the attention section's causal bf16 GQA SDPA forced onto the cuDNN
                   backend (no other backend), plus q/k head_dim 192 with v head_dim 128
                   (DeepSeek MLA training form).  Files: context_attention_cudnn_perf.csv,
                   context_attention_cudnn_bwd_perf.csv, context_attention_cudnn_ratio.csv,
                   attention_cudnn_backend.txt.
  6. grouped_gemm  - routed-expert MoE GEMMs (bf16) three ways: torch._grouped_mm, a Python
                   loop of per-expert torch.matmul, one stacked torch.matmul of the same FLOPs.
                   File: grouped_gemm_perf.csv.
meta.json records versions, device, timing method, byte-count conventions and
per-section measured/skipped/failed counts; it is always written, even on errors.

Usage: python3 measure_kernels.py --out DIR [--budget-s 240] [--sections LIST] [--dry-run]
--sections: comma-separated section names (default: attention,elementwise,layer,gemm).
Sections run in the fixed order above; each gets budget share weight / (sum of the weights of
the named sections), see WEIGHTS (the default four: 45/15/30/10%; attention_cudnn,grouped_gemm:
60/40%).
--dry-run prints the planned shapes per section without importing torch.
"""
import argparse
import gc
import json
import math
import os
import shutil
import signal
import statistics
import subprocess
import sys
import time

WARMUP, MIN_REPS, MAX_REPS, TARGET_MS = 3, 5, 50, 20.0
L2_CYCLE_BELOW = 200e6   # input sets smaller than this are cycled among copies
L2_CYCLE_TARGET = 128e6  # ... so that the cycled working set is at least this
MAX_COPIES = 64
ATTN_MAX_BYTES = 8e9
BACKENDS = ("FLASH_ATTENTION", "CUDNN_ATTENTION", "EFFICIENT_ATTENTION")
# Budget weights in run order; the named sections share --budget-s in proportion to these.
WEIGHTS = [("attention", 0.45), ("elementwise", 0.15), ("layer", 0.30), ("gemm", 0.10),
           ("attention_cudnn", 0.60), ("grouped_gemm", 0.40), ("host", 0.15)]
DEFAULT_SECTIONS = ("attention", "elementwise", "layer", "gemm")
T0 = time.time()


def log(msg):
    print(f"[{time.time() - T0:7.1f}s] {msg}", flush=True)


def fmt(x):
    return "%.6g" % x


# ----------------------------------------------------------------------------- plans
def attention_plan():
    seqs = [(1, 4096), (1, 8192), (2, 4096), (1, 2048), (1, 16384), (4, 2048), (1, 1024)]
    heads = [(64, 8), (32, 4), (16, 2), (8, 1), (32, 8), (128, 128), (40, 8), (96, 8)]
    shapes = [(b, s, h, kv, 128) for (b, s) in seqs for (h, kv) in heads]
    shapes += [(b, s, h, kv, 64) for (b, s) in [(1, 4096), (1, 8192)]
               for (h, kv) in [(64, 8), (32, 32)]]
    keep, dropped = [], []
    for (b, s, h, kv, d) in shapes:  # q + k + v + grad(out), bf16
        (keep if 2 * b * s * d * (2 * h + 2 * kv) <= ATTN_MAX_BYTES else dropped).append(
            (b, s, h, kv, d))
    return keep, dropped


def elementwise_plan():
    items = []
    for kern in ("rmsnorm_fwd", "swiglu_fwd", "residual_add", "rope_fwd"):
        items += [(kern, t, h) for t in (4096, 8192, 16384) for h in (4096, 8192)]
    items += [("cross_entropy_fwd_bwd", t, v) for v in (32000, 128256, 151936) for t in (4096, 8192)]
    items += [("adamw_fused_step", int(p), 0) for p in (1e8, 5e8)]
    items += [("copy", gib, 0) for gib in (1, 4)]
    return items


LAYER_MODELS = {"llama3-8b": (4096, 32, 8, 14336), "llama3-70b": (8192, 64, 8, 28672)}


def layer_plan():
    return [("llama3-8b", 4096), ("llama3-8b", 8192), ("llama3-70b", 4096),
            ("profile:llama3-70b", 4096), ("llama3-70b", 8192)]


def gemm_plan():
    mnk = [(4096, 8192, 8192), (4096, 28672, 8192), (4096, 8192, 28672), (4096, 10240, 8192),
           (8192, 8192, 8192), (16, 8192, 8192), (128, 8192, 8192), (4096, 4096, 4096),
           (4096, 14336, 4096), (4096, 4096, 14336)]
    return [(dt, m, n, k) for (m, n, k) in mnk for dt in ("bfloat16", "fp8")]


def attn_set_bytes(b, s, h, kv, d, dv):  # q + k + v + grad(out), bf16
    return 2 * b * s * (h * d + kv * d + kv * dv + h * dv)


def attention_cudnn_plan():
    """(batch, isl, heads, kv_heads, qk_head_dim, v_head_dim)."""
    seqs = [(1, 4096), (1, 8192), (2, 4096), (1, 2048), (1, 16384), (1, 1024), (4, 4096),
            (8, 2048), (1, 32768)]
    heads = [(64, 8), (32, 4), (16, 2), (8, 1), (32, 8), (128, 128), (40, 8), (96, 8),
             (128, 8), (16, 16), (8, 8)]
    shapes = [(b, s, h, kv, 128, 128) for (b, s) in seqs for (h, kv) in heads]
    shapes += [(b, s, h, h, 192, 128) for (b, s) in [(1, 4096), (1, 8192), (2, 4096), (1, 2048)]
               for h in (128, 64, 32, 16)]
    keep, dropped = [], []
    for sh in shapes:
        (keep if attn_set_bytes(*sh) <= ATTN_MAX_BYTES else dropped).append(sh)
    return keep, dropped


# name, hidden, expert_ffn, [(ep label, experts on one GPU, [rows per expert, ...])]
MOE_MODELS = [
    ("dsv2", 5120, 1536, [("ep8", 20, [1229]), ("ep4", 40, [614])]),
    ("qwen3-30b", 2048, 768, [("ep8", 16, [1024, 4096])]),
    ("mixtral", 4096, 14336, [("ep8", 1, [8192]), ("ep1", 8, [1024, 4096])]),
    ("dsv3", 7168, 2048, [("ep64", 4, [4096]), ("ep8", 32, [512, 2048])]),
    ("gptoss120b", 2880, 2880, [("ep8", 16, [1024, 4096])]),
]
GG_METHODS = ("grouped_mm", "loop", "stacked")


def grouped_gemm_plan():
    """(case, experts, rows_per_expert, n, k): up GEMM n = 2*ffn, k = hidden; down n = hidden,
    k = ffn.  The case name gets -r<rows> only where one EP config has several row counts."""
    items = []
    for model, hidden, ffn, eps in MOE_MODELS:
        for ep, experts, rows_list in eps:
            for rows in rows_list:
                base = f"{model}-{ep}" + (f"-r{rows}" if len(rows_list) > 1 else "")
                items.append((base + "-up", experts, rows, 2 * ffn, hidden))
                items.append((base + "-down", experts, rows, hidden, ffn))
    return items


# ----------------------------------------------------------------------------- helpers
def csv_writer(path, header):
    """Returns row(*vals) for a plain CSV flushed row by row (a kill keeps what was measured)."""
    f = open(path, "w")

    def row(*vals):
        f.write(",".join(fmt(v) if isinstance(v, float) else str(v) for v in vals) + "\n")
        f.flush()
    row(header)
    return row


def n_copies(set_bytes):
    if set_bytes >= L2_CYCLE_BELOW:
        return 1
    return int(min(MAX_COPIES, max(1, math.ceil(L2_CYCLE_TARGET / max(set_bytes, 1)))))


def bench(torch, fns):
    """Median ms of one call, cycling through fns (one per input copy)."""
    k = len(fns)
    for i in range(WARMUP):
        fns[i % k]()
    torch.cuda.synchronize()
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    s.record()
    fns[WARMUP % k]()
    e.record()
    torch.cuda.synchronize()
    est = max(s.elapsed_time(e), 1e-4)
    n = int(min(MAX_REPS, max(MIN_REPS, math.ceil(TARGET_MS / est))))
    evs = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
           for _ in range(n)]
    torch.cuda.synchronize()
    for i, (a, b) in enumerate(evs):
        a.record()
        fns[(WARMUP + 1 + i) % k]()
        b.record()
    torch.cuda.synchronize()
    return statistics.median([a.elapsed_time(b) for a, b in evs])


def rms_norm(x, w):
    import torch
    if hasattr(torch.nn.functional, "rms_norm"):
        return torch.nn.functional.rms_norm(x, (x.shape[-1],), w, eps=1e-5)
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-5) * w


def rope_apply(x, cos, sin):  # x * cos + rotate_half(x) * sin
    import torch
    half = x.shape[-1] // 2
    return x * cos + torch.cat((-x[..., half:], x[..., :half]), -1) * sin


def randn(torch, *shape, dtype=None):
    return torch.randn(*shape, device="cuda", dtype=dtype or torch.bfloat16) * 0.1


def run_shapes(torch, name, items, deadline, stats, measure):
    st = stats[name]
    st["planned"] = len(items)
    for i, item in enumerate(items):
        if time.time() > deadline:
            st["skipped"] = len(items) - i
            log(f"{name}: section budget spent, skipping {len(items) - i} remaining")
            break
        try:
            measure(item)
            st["measured"] += 1
            continue
        except Exception as e:  # includes torch.cuda.OutOfMemoryError
            st["failed"] += 1
            text = str(e).strip().splitlines()
            msg = f"{item}: {type(e).__name__}: {text[0][:300] if text else ''}"
            if len(st["errors"]) < 5:
                st["errors"].append(msg)
            log(f"{name}: FAILED {msg}")
        gc.collect()  # after the except block, so the traceback no longer pins the tensors
        torch.cuda.empty_cache()


# ----------------------------------------------------------------------------- sections
def section_attention(torch, out, deadline, stats, notes):
    import torch.nn.functional as F
    from torch.nn.attention import sdpa_kernel, SDPBackend
    cols = "batch_size,isl,num_heads,num_key_value_heads,head_dim,window_size,attn_dtype,kv_cache_dtype,latency"
    fwd_csv = csv_writer(os.path.join(out, "context_attention_perf.csv"), cols)
    bwd_csv = csv_writer(os.path.join(out, "context_attention_bwd_perf.csv"), cols)
    ratio_csv = csv_writer(os.path.join(out, "context_attention_fwdbwd_ratio.csv"),
                           "batch_size,isl,num_heads,num_key_value_heads,head_dim,fwd_ms,bwd_ms,ratio")
    backend_txt = open(os.path.join(out, "attention_backend.txt"), "w")
    shapes, dropped = attention_plan()
    notes["attention_dropped_over_8GB"] = [list(s) for s in dropped]

    def measure(shape):
        b, s, h, kv, d = shape

        def make_sets(kvh):  # [(q, k, v, grad_out)] * copies
            return [tuple(randn(torch, b, n, s, d).requires_grad_(True) for n in (h, kvh, kvh))
                    + (randn(torch, b, h, s, d),)
                    for _ in range(n_copies(2 * b * s * d * (2 * h + 2 * kvh)))]

        # Native GQA first; if no backend takes enable_gqa, fall back to k/v repeated to h heads.
        cands = [(n, False) for n in BACKENDS] + [(n, True) for n in BACKENDS if kv < h]
        sets, chosen, why = make_sets(kv), None, []
        for bname, rep in cands:
            be = getattr(SDPBackend, bname, None)
            if be is None:
                continue
            if rep and sets[0][1].shape[1] != h:
                sets = None
                sets = make_sets(h)
            gqa = kv < h and not rep
            try:
                with sdpa_kernel([be]):
                    q, k, v, g = sets[0]
                    o = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=gqa)
                    torch.autograd.grad(o, (q, k, v), g)
                torch.cuda.synchronize()
                chosen = (bname + ("+repeat_kv" if rep else ""), be)
                break
            except torch.cuda.OutOfMemoryError:
                raise
            except Exception as e:
                why.append(f"{bname}{'+rep' if rep else ''}: {str(e).strip()[:100]}")
        if chosen is None:
            raise RuntimeError("no SDPA backend ran: " + " | ".join(why))
        if why:
            log(f"attention {shape}: not used: {' | '.join(why)}")
        nc = len(sets)
        with sdpa_kernel([chosen[1]]):
            fwd = bench(torch, [
                (lambda q=q, k=k, v=v: F.scaled_dot_product_attention(
                    q, k, v, is_causal=True, enable_gqa=gqa)) for q, k, v, _ in sets])
            outs = [F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=gqa)
                    for q, k, v, _ in sets]
        bwd = bench(torch, [
            (lambda o=o, q=q, k=k, v=v, g=g: torch.autograd.grad(o, (q, k, v), g, retain_graph=True))
            for o, (q, k, v, g) in zip(outs, sets)])
        fwd_csv(b, s, h, kv, d, 0, "bfloat16", "bfloat16", fwd)
        bwd_csv(b, s, h, kv, d, 0, "bfloat16", "bfloat16", bwd)
        ratio_csv(b, s, h, kv, d, fwd, bwd, bwd / fwd)
        backend_txt.write(f"{b},{s},{h},{kv},{d} {chosen[0]}\n")
        backend_txt.flush()
        log(f"attention b={b} s={s} h={h} kv={kv} d={d} {chosen[0]} copies={nc} "
            f"fwd={fwd:.4f}ms bwd={bwd:.4f}ms ratio={bwd / fwd:.3f}")

    run_shapes(torch, "attention", shapes, deadline, stats, measure)


def section_elementwise(torch, out, deadline, stats, notes):
    import torch.nn.functional as F
    row = csv_writer(os.path.join(out, "elementwise_perf.csv"), "kernel,elements,bytes_moved,latency")
    notes["rmsnorm_impl"] = "F.rms_norm" if hasattr(F, "rms_norm") else "eager x*rsqrt(mean(x^2)+eps)*w"

    def measure(item):
        kern, a, c = item
        if kern in ("rmsnorm_fwd", "swiglu_fwd", "residual_add", "rope_fwd"):
            t, h = a, c
            elems, label = t * h, f"{kern}@{t}x{h}"
            if kern == "rmsnorm_fwd":
                w = randn(torch, h)
                nbytes, in_bytes = 2 * (2 * t * h + h), 2 * t * h
                xs = [randn(torch, t, h) for _ in range(n_copies(in_bytes))]
                fns = [(lambda x=x: rms_norm(x, w)) for x in xs]
            elif kern == "swiglu_fwd":
                nbytes, in_bytes = 2 * 3 * t * h, 2 * 2 * t * h
                xs = [randn(torch, t, 2 * h) for _ in range(n_copies(in_bytes))]
                fns = [(lambda x=x: F.silu(x[:, :h]) * x[:, h:]) for x in xs]
            elif kern == "residual_add":
                nbytes, in_bytes = 2 * 3 * t * h, 2 * 2 * t * h
                xs = [(randn(torch, t, h), randn(torch, t, h)) for _ in range(n_copies(in_bytes))]
                fns = [(lambda x=x, y=y: x + y) for x, y in xs]
            else:
                d = 128
                cos, sin = randn(torch, t, 1, d), randn(torch, t, 1, d)
                nbytes, in_bytes = 2 * (2 * t * h + 2 * t * d), 2 * t * h
                xs = [randn(torch, t, h // d, d) for _ in range(n_copies(in_bytes))]
                fns = [(lambda x=x: rope_apply(x, cos, sin)) for x in xs]
        elif kern == "cross_entropy_fwd_bwd":
            t, v = a, c
            elems, label, nbytes = t * v, f"{kern}@{t}x{v}", 2 * 3 * t * v
            logits = randn(torch, t, v).requires_grad_(True)
            labels = torch.randint(0, v, (t,), device="cuda")
            fns = [lambda: torch.autograd.grad(F.cross_entropy(logits, labels), logits)]
        elif kern == "adamw_fused_step":
            p_total, chunk = a, 50_000_000
            params = []
            for off in range(0, p_total, chunk):
                p = torch.nn.Parameter(randn(torch, min(chunk, p_total - off), dtype=torch.float32))
                p.grad = randn(torch, p.numel(), dtype=torch.float32)
                params.append(p)
            opt = torch.optim.AdamW(params, lr=1e-4, fused=True)
            elems, label, nbytes = p_total, f"{kern}@{p_total}", 28 * p_total
            fns = [opt.step]
        else:  # copy
            n = a * (1 << 30) // 2
            src = randn(torch, n)
            dst = torch.empty_like(src)
            elems, label, nbytes = n, f"copy@{a}GiB", 2 * a * (1 << 30)
            fns = [lambda: dst.copy_(src)]
        ms = bench(torch, fns)
        row(label, elems, nbytes, ms)
        log(f"elementwise {label} copies={len(fns)} {ms:.4f}ms {nbytes / ms / 1e9:.1f} TB/s")

    run_shapes(torch, "elementwise", elementwise_plan(), deadline, stats, measure)


def build_layer(torch, hidden, nh, nkv, ffn):
    """Llama decoder layer as a closure over bf16 weights; returns (forward, params)."""
    import torch.nn.functional as F
    hd = hidden // nh

    def w(*shape):
        return (torch.randn(*shape, device="cuda", dtype=torch.bfloat16) * 0.02).requires_grad_(True)

    p = dict(n1=torch.ones(hidden, device="cuda", dtype=torch.bfloat16).requires_grad_(True),
             n2=torch.ones(hidden, device="cuda", dtype=torch.bfloat16).requires_grad_(True),
             q=w(nh * hd, hidden), k=w(nkv * hd, hidden), v=w(nkv * hd, hidden),
             o=w(hidden, nh * hd), gate=w(ffn, hidden), up=w(ffn, hidden), down=w(hidden, ffn))

    def forward(x, cos, sin):
        b, s, _ = x.shape
        y = rms_norm(x, p["n1"])
        q = F.linear(y, p["q"]).view(b, s, nh, hd).transpose(1, 2)
        k = F.linear(y, p["k"]).view(b, s, nkv, hd).transpose(1, 2)
        v = F.linear(y, p["v"]).view(b, s, nkv, hd).transpose(1, 2)
        q, k = rope_apply(q, cos, sin), rope_apply(k, cos, sin)
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=nkv < nh)
        x = x + F.linear(a.transpose(1, 2).reshape(b, s, nh * hd), p["o"])
        y = rms_norm(x, p["n2"])
        return x + F.linear(F.silu(F.linear(y, p["gate"])) * F.linear(y, p["up"]), p["down"])

    return forward, list(p.values())


def evt_ms(e):  # profiler attribute names changed across torch versions; values are in us
    for attr in ("self_device_time_total", "device_time_total", "self_cuda_time_total",
                 "cuda_time_total"):
        v = getattr(e, attr, 0) or 0
        if v:
            return v / 1000.0
    return 0.0


def section_layer(torch, out, deadline, stats, notes):
    row = csv_writer(os.path.join(out, "layer_perf.csv"),
                     "model,hidden,heads,kv_heads,ffn,seq,batch,fwd_ms,fwd_bwd_ms,params")

    def measure(item):
        model, seq = item
        profile = model.startswith("profile:")
        model = model.split(":")[-1]
        hidden, nh, nkv, ffn = LAYER_MODELS[model]
        layer, params = build_layer(torch, hidden, nh, nkv, ffn)
        hd = hidden // nh
        x = randn(torch, 1, seq, hidden).requires_grad_(True)
        g = randn(torch, 1, seq, hidden)
        cos, sin = randn(torch, 1, 1, seq, hd), randn(torch, 1, 1, seq, hd)

        def fwd_bwd():
            return torch.autograd.grad(layer(x, cos, sin), params + [x], g)

        if profile:
            from torch.profiler import profile as prof_ctx, ProfilerActivity
            fwd_bwd()
            fwd_bwd()
            torch.cuda.synchronize()
            with prof_ctx(activities=[ProfilerActivity.CUDA]) as prof:
                fwd_bwd()
                torch.cuda.synchronize()
            rows = [(str(e.key), e.count, evt_ms(e)) for e in prof.key_averages()]
            rows = sorted((r for r in rows if r[2] > 0), key=lambda r: -r[2])
            notes["layer_kernels_profiled_total_ms"] = sum(r[2] for r in rows)
            krow = csv_writer(os.path.join(out, "layer_kernels.csv"), "name,calls,cuda_total_ms")
            for name, calls, ms in rows[:60]:
                krow(name.replace(",", ";").replace("\n", " ").replace('"', "'")[:300], calls, ms)
            log(f"layer profile {model} seq={seq}: {len(rows)} kernels, "
                f"{notes['layer_kernels_profiled_total_ms']:.2f} ms total")
            return
        fwd = bench(torch, [lambda: layer(x, cos, sin)])
        fb = bench(torch, [fwd_bwd])
        n_params = sum(p.numel() for p in params)
        row(model, hidden, nh, nkv, ffn, seq, 1, fwd, fb, n_params)
        log(f"layer {model} seq={seq} fwd={fwd:.3f}ms fwd+bwd={fb:.3f}ms params={n_params}")

    run_shapes(torch, "layer", layer_plan(), deadline, stats, measure)


def section_gemm(torch, out, deadline, stats, notes):
    row = csv_writer(os.path.join(out, "gemm_torch_perf.csv"), "gemm_dtype,m,n,k,latency")
    fp8 = getattr(torch, "float8_e4m3fn", None)

    def measure(item):
        dt, m, n, k = item
        nc = n_copies(2 * (m * k + k * n))
        if dt == "bfloat16":
            sets = [(randn(torch, m, k), randn(torch, k, n)) for _ in range(nc)]
            fns = [(lambda a=a, b=b: torch.matmul(a, b)) for a, b in sets]
        else:
            if fp8 is None or not hasattr(torch, "_scaled_mm"):
                raise RuntimeError("no float8_e4m3fn / _scaled_mm in this torch")
            one = torch.ones((), device="cuda", dtype=torch.float32)
            # a: [m,k] row-major; b: [k,n] column-major (transpose of a contiguous [n,k]).
            sets = [(randn(torch, m, k).to(fp8), randn(torch, n, k).to(fp8).t()) for _ in range(nc)]
            fns = [(lambda a=a, b=b: torch._scaled_mm(a, b, scale_a=one, scale_b=one,
                                                      out_dtype=torch.bfloat16)) for a, b in sets]
        ms = bench(torch, fns)
        row(dt, m, n, k, ms)
        log(f"gemm {dt} {m}x{n}x{k} copies={nc} {ms:.4f}ms {2 * m * n * k / ms / 1e9:.1f} TFLOP/s")

    run_shapes(torch, "gemm", gemm_plan(), deadline, stats, measure)


def top_kernels(torch, fn, n=8):
    """[(kernel name, device ms)] of one profiled call of fn, largest first."""
    from torch.profiler import profile as prof_ctx, ProfilerActivity
    torch.cuda.synchronize()
    with prof_ctx(activities=[ProfilerActivity.CUDA]) as prof:
        fn()
        torch.cuda.synchronize()
    rows = [(str(e.key), evt_ms(e)) for e in prof.key_averages()]
    rows = sorted((r for r in rows if r[1] > 0), key=lambda r: -r[1])
    return [[k.replace("\n", " ")[:200], round(ms, 4)] for k, ms in rows[:n]]


def section_attention_cudnn(torch, out, deadline, stats, notes):
    import torch.nn.functional as F
    from torch.nn.attention import sdpa_kernel, SDPBackend
    be = getattr(SDPBackend, "CUDNN_ATTENTION", None)
    if be is None:
        raise RuntimeError("SDPBackend.CUDNN_ATTENTION missing in this torch")
    cols = "batch_size,isl,num_heads,num_key_value_heads,head_dim,window_size,attn_dtype,kv_cache_dtype,latency"
    fwd_csv = csv_writer(os.path.join(out, "context_attention_cudnn_perf.csv"), cols)
    bwd_csv = csv_writer(os.path.join(out, "context_attention_cudnn_bwd_perf.csv"), cols)
    ratio_csv = csv_writer(os.path.join(out, "context_attention_cudnn_ratio.csv"),
                           "batch_size,isl,num_heads,num_key_value_heads,head_dim,fwd_ms,bwd_ms,ratio")
    backend_txt = open(os.path.join(out, "attention_cudnn_backend.txt"), "w")
    shapes, dropped = attention_cudnn_plan()
    notes["attention_cudnn_dropped_over_8GB"] = [list(s) for s in dropped]
    notes["attention_cudnn_v_head_dim"] = {"head_dim 128 rows": 128, "head_dim 192 rows": 128}
    gqa_refused = notes.setdefault("attention_cudnn_native_gqa_refused", {"count": 0, "first": []})
    kernels = notes.setdefault("attention_cudnn_kernels", {})

    def fwd_bwd_prof(q, k, v, g):
        with sdpa_kernel([be]):
            o = F.scaled_dot_product_attention(q, k, v, is_causal=True,
                                               enable_gqa=k.shape[1] < q.shape[1])
            torch.autograd.grad(o, (q, k, v), g)

    def measure(shape):
        b, s, h, kv, d, dv = shape

        def make_sets(kvh):  # [(q, k, v, grad_out)] * copies
            return [(randn(torch, b, h, s, d).requires_grad_(True),
                     randn(torch, b, kvh, s, d).requires_grad_(True),
                     randn(torch, b, kvh, s, dv).requires_grad_(True),
                     randn(torch, b, h, s, dv))
                    for _ in range(n_copies(attn_set_bytes(b, s, h, kvh, d, dv)))]

        def fwd_bwd(sets, gqa):  # one fwd + bwd on the cuDNN backend only (raises if refused)
            with sdpa_kernel([be]):
                q, k, v, g = sets[0]
                o = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=gqa)
                torch.autograd.grad(o, (q, k, v), g)
            torch.cuda.synchronize()

        # Native GQA first; if cuDNN refuses enable_gqa, k/v materialized with h heads, still
        # cuDNN only (labelled '+repeat_kv').  No other backend is ever tried here.
        sets, gqa, label = make_sets(kv), kv < h, "CUDNN_ATTENTION"
        try:
            fwd_bwd(sets, gqa)
        except torch.cuda.OutOfMemoryError:
            raise
        except Exception as e:
            if not gqa:
                raise
            gqa_refused["count"] += 1
            if len(gqa_refused["first"]) < 3:
                gqa_refused["first"].append(f"{shape}: {type(e).__name__}: {str(e).strip()[:200]}")
            log(f"attention_cudnn {shape}: native GQA refused ({str(e).strip()[:100]}); "
                f"trying cuDNN with k/v repeated to {h} heads")
            sets = None
            gc.collect()
            sets, gqa, label = make_sets(h), False, "CUDNN_ATTENTION+repeat_kv"
            fwd_bwd(sets, gqa)
        nc = len(sets)
        with sdpa_kernel([be]):
            fwd = bench(torch, [
                (lambda q=q, k=k, v=v: F.scaled_dot_product_attention(
                    q, k, v, is_causal=True, enable_gqa=gqa)) for q, k, v, _ in sets])
            outs = [F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=gqa)
                    for q, k, v, _ in sets]
        bwd = bench(torch, [
            (lambda o=o, q=q, k=k, v=v, g=g: torch.autograd.grad(o, (q, k, v), g, retain_graph=True))
            for o, (q, k, v, g) in zip(outs, sets)])
        fwd_csv(b, s, h, kv, d, 0, "bfloat16", "bfloat16", fwd)
        bwd_csv(b, s, h, kv, d, 0, "bfloat16", "bfloat16", bwd)
        ratio_csv(b, s, h, kv, d, fwd, bwd, bwd / fwd)
        backend_txt.write(f"{b},{s},{h},{kv},{d},v_head_dim={dv} {label}\n")
        backend_txt.flush()
        log(f"attention_cudnn b={b} s={s} h={h} kv={kv} d={d} dv={dv} {label} copies={nc} "
            f"fwd={fwd:.4f}ms bwd={bwd:.4f}ms ratio={bwd / fwd:.3f}")
        key = f"head_dim={d},v_head_dim={dv}"
        if key not in kernels:  # which kernels actually ran, once per head-dim form
            try:
                q, k, v, g = sets[0]
                kernels[key] = {"shape": list(shape), "backend": label, "fwd_bwd_top": top_kernels(
                    torch, lambda: fwd_bwd_prof(q, k, v, g))}
            except Exception as e:
                kernels[key] = f"profile failed: {type(e).__name__}: {str(e)[:200]}"

    run_shapes(torch, "attention_cudnn", shapes, deadline, stats, measure)


def grouped_mm_candidates(torch):
    """[(label, fn)] of grouped-GEMM entry points present in this torch."""
    cands = []
    if hasattr(torch, "_grouped_mm"):
        cands.append(("torch._grouped_mm", torch._grouped_mm))
    f = getattr(torch.nn.functional, "grouped_mm", None)
    if f is not None:
        cands.append(("torch.nn.functional.grouped_mm", f))
    return cands


def section_grouped_gemm(torch, out, deadline, stats, notes):
    row = csv_writer(os.path.join(out, "grouped_gemm_perf.csv"),
                     "case,experts,rows_per_expert,n,k,method,latency")
    cands = grouped_mm_candidates(torch)
    info = notes.setdefault("grouped_gemm_probe", {})
    info["entry_points"] = [c[0] for c in cands]
    try:
        info["aten_schema"] = str(torch.ops.aten._grouped_mm.default._schema)
    except Exception as e:
        info["aten_schema"] = f"unavailable: {type(e).__name__}: {str(e)[:150]}"
    forms_used = info.setdefault("form_per_case", {})
    form_ms = info.setdefault("all_working_forms_ms", {})
    probe_fail = info.setdefault("failed_forms_first", [])
    no_grouped = info.setdefault("cases_without_grouped_mm", [])

    def call_variants(fn, a, b, offs):
        return [("offs=kw", lambda: fn(a, b, offs=offs)), ("offs=positional", lambda: fn(a, b, offs))]

    def probe_grouped(case, experts, rows, n, k):
        """Returns (form label, [fns]) of every form that runs and matches per-expert matmul
        at the first row padding that works, or (None, reasons)."""
        reasons = []
        for pad in (1, 8, 16):
            rows_p = -(-rows // pad) * pad
            if pad > 1 and rows_p == rows:
                continue
            total = experts * rows_p
            offs = torch.tensor([rows_p * (i + 1) for i in range(experts)], device="cuda",
                                dtype=torch.int32)
            set_bytes = 2 * (total * k + experts * k * n)
            working = []
            for fname, fn in cands:
                for layout in ("b=[E,n,k].transpose(-2,-1)", "b=[E,k,n] contiguous"):
                    col = layout.startswith("b=[E,n,k]")
                    sets = []
                    for _ in range(n_copies(set_bytes)):
                        a = randn(torch, total, k)
                        b = randn(torch, experts, n, k).transpose(-2, -1) if col \
                            else randn(torch, experts, k, n)
                        sets.append((a, b))
                    ok = None
                    for vname, call in call_variants(fn, sets[0][0], sets[0][1], offs):
                        try:
                            o = call()
                            torch.cuda.synchronize()
                            a, b = sets[0]
                            for e in sorted({0, experts - 1}):
                                lo = e * rows_p
                                ref = torch.matmul(a[lo:lo + rows], b[e]).float()
                                err = (o[lo:lo + rows].float() - ref).abs().max().item()
                                scale = ref.abs().max().item()
                                if not err <= 0.02 * scale + 1e-3:
                                    raise RuntimeError(f"wrong result: expert {e} max err {err:.3g}"
                                                       f" vs max |ref| {scale:.3g}")
                            ok = vname
                            break
                        except torch.cuda.OutOfMemoryError:
                            raise
                        except Exception as e:
                            reasons.append(f"{fname} {layout} {vname} pad={pad}: "
                                           f"{type(e).__name__}: {str(e).strip()[:150]}")
                            if not isinstance(e, TypeError):
                                break  # positional only retried after a keyword TypeError
                    if ok is None:
                        continue
                    label = f"{fname}(a=[rows,k], {layout}, {ok} int32 cumulative ends" + \
                        (f", rows padded to {rows_p}/expert)" if pad > 1 else ")")
                    if ok == "offs=kw":
                        fns = [(lambda a=a, b=b, fn=fn, o=offs: fn(a, b, offs=o)) for a, b in sets]
                    else:
                        fns = [(lambda a=a, b=b, fn=fn, o=offs: fn(a, b, o)) for a, b in sets]
                    working.append((label, fns))
            if working:
                return working, reasons
        return None, reasons

    def measure(item):
        case, experts, rows, n, k = item
        flops = 2.0 * experts * rows * n * k
        res = {}
        # (a) grouped_mm: every working form timed, the fastest goes to the CSV.
        if cands:
            working, reasons = probe_grouped(case, experts, rows, n, k)
            for r in reasons:
                if len(probe_fail) < 8 and r.split(": ")[0] not in [p.split(": ")[0] for p in probe_fail]:
                    probe_fail.append(r)
            if working:
                times = {label: bench(torch, fns) for label, fns in working}
                best = min(times, key=times.get)
                forms_used[case], form_ms[case] = best, times
                res["grouped_mm"] = times[best]
            else:
                no_grouped.append(case)
                msg = f"{item}: grouped_mm: no form ran: {' | '.join(reasons)[:300]}"
                if len(stats["grouped_gemm"]["errors"]) < 5:
                    stats["grouped_gemm"]["errors"].append(msg)
                log(f"grouped_gemm {msg}")
            working = None
            gc.collect()
        else:
            no_grouped.append(case)
        stats["grouped_gemm"]["cases_without_grouped_mm"] = len(no_grouped)
        # (b) loop of per-expert torch.matmul into one output buffer, one stream.
        total = experts * rows
        nc = n_copies(2 * (total * k + experts * k * n))
        sets = [(randn(torch, total, k), randn(torch, experts, k, n),
                 torch.empty(total, n, device="cuda", dtype=torch.bfloat16)) for _ in range(nc)]

        def loop(a, w, o):
            for e in range(experts):
                torch.matmul(a[e * rows:(e + 1) * rows], w[e], out=o[e * rows:(e + 1) * rows])
        res["loop"] = bench(torch, [(lambda a=a, w=w, o=o: loop(a, w, o)) for a, w, o in sets])
        sets = None
        gc.collect()
        # (c) one GEMM of the stacked rows with one expert's weight: same FLOPs.
        nc = n_copies(2 * (total * k + k * n))
        sets = [(randn(torch, total, k), randn(torch, k, n)) for _ in range(nc)]
        res["stacked"] = bench(torch, [(lambda a=a, w=w: torch.matmul(a, w)) for a, w in sets])
        for m in GG_METHODS:
            if m in res:
                row(case, experts, rows, n, k, m, res[m])
        log(f"grouped_gemm {case} E={experts} rows={rows} n={n} k={k}: " + " ".join(
            f"{m}={res[m]:.4f}ms({flops / res[m] / 1e9:.0f}TF/s)" for m in GG_METHODS if m in res))

    run_shapes(torch, "grouped_gemm", grouped_gemm_plan(), deadline, stats, measure)


# ----------------------------------------------------------------------------- main
NOTES = {
    "timing": (f"CUDA events; torch.cuda.synchronize before/after; {WARMUP} warm-ups, then one "
               f"timed call to size N = clamp(ceil({TARGET_MS:g} ms / t), {MIN_REPS}, {MAX_REPS}); "
               "each rep timed by its own event pair; latency = median (ms). Eager PyTorch: "
               "multi-kernel ops include launch gaps between their kernels."),
    "l2": (f"input sets < {L2_CYCLE_BELOW / 1e6:g} MB are replicated (<= {MAX_COPIES} copies) and "
           f"cycled so the working set is >= {L2_CYCLE_TARGET / 1e6:g} MB (H200 L2 = 60 MB)."),
    "inputs": "torch.manual_seed(0); randn * 0.1; bf16 unless stated.",
    "budget": ("the named sections run in a fixed order with cumulative deadlines (see "
               "budget_shares / budget_deadlines_s; default four: 45/60/90/100% of --budget-s); "
               "time a section leaves unused passes to the next; checked before every shape."),
    "attention": ("SDPA (batch, heads, seq, head_dim), is_causal=True, enable_gqa=kv<heads; "
                  "backend probed FLASH, CUDNN, EFFICIENT (fwd+bwd must run); if none takes "
                  "enable_gqa, k/v are materialized with h heads ('+repeat_kv' in "
                  "attention_backend.txt; kv_heads column keeps the GQA value); fwd timed with "
                  "requires_grad inputs; bwd = torch.autograd.grad(out,(q,k,v),grad,"
                  "retain_graph=True) only; ratio = bwd/fwd."),
    "elementwise_bytes": ("minimum HBM bytes of a fused kernel, bf16 = 2 B: rmsnorm 2*(2TH+H) "
                          "(read x,w; write y); swiglu 2*3TH (read [T,2H], write [T,H]); "
                          "residual_add 2*3TH; rope 2*(2TH + 2T*128) (read x,cos,sin; write); "
                          "cross_entropy 2*3TV (fwd read logits, bwd read logits + write dlogits; "
                          "labels/loss ignored; bf16 logits); adamw 28 B/param (read fp32 "
                          "param,grad,exp_avg,exp_avg_sq; write param,exp_avg,exp_avg_sq), "
                          "params in 5e7-element tensors; copy 2*size (read+write). Eager PyTorch "
                          "may move more (e.g. silu temp). kernel column is name@shape "
                          "(TxH, TxV, P or GiB); elements = T*H, T*V, P, size/2."),
    "layer": ("Llama decoder layer, plain torch bf16: RMSNorm, q/k/v/o Linear no bias, rotary on "
              "q/k, SDPA causal GQA (default backend), RMSNorm, SwiGLU (gate/up/down), two "
              "residual adds; micro-batch 1; fwd with autograd on; fwd_bwd = fwd + "
              "autograd.grad w.r.t. all params and the input. layer_kernels.csv: one 70B seq 4096 "
              "fwd+bwd, torch.profiler CUDA activity, key_averages self device time, top 60; "
              "commas in kernel names replaced by ';', names cut at 300 chars."),
    "gemm": ("bf16: torch.matmul(A[m,k], B[k,n]). fp8: torch._scaled_mm(a e4m3 [m,k] row-major, "
             "b e4m3 [k,n] column-major, per-tensor fp32 scales = 1, out bf16, use_fast_accum "
             "default False); only the _scaled_mm call is timed, activation quantization NOT "
             "included."),
}
SECTION_NOTES = {  # added to meta notes only when the section is named
    "attention_cudnn": (
        "as 'attention' but sdpa_kernel([SDPBackend.CUDNN_ATTENTION]) only, never another "
        "backend; a shape cuDNN refuses is a failed shape. GQA: enable_gqa=True first; if cuDNN "
        "refuses that, k/v are materialized with h heads and run on cuDNN ('+repeat_kv' in "
        "attention_cudnn_backend.txt, refusals in attention_cudnn_native_gqa_refused; "
        "num_key_value_heads column keeps the GQA value). Rows with head_dim 192 have q/k "
        "head_dim 192 and v head_dim 128 (DeepSeek MLA training form; grad(out) is 128 wide); "
        "all other rows v_head_dim = head_dim = 128. attention_cudnn_kernels: torch.profiler "
        "top kernels of one fwd+bwd of the first measured shape per head-dim form."),
    "grouped_gemm": (
        "routed-expert GEMM, bf16, E experts x R rows each (balanced), C[E*R, n] = per-expert "
        "A_e[R,k] x W_e[k,n]; up GEMM n = 2*expert_ffn (gate+up), k = hidden; down n = hidden, "
        "k = expert_ffn. grouped_mm: torch._grouped_mm (or F.grouped_mm if _grouped_mm is "
        "absent) with a [E*R,k], b [E,k,n] as either the transpose(-2,-1) of a contiguous "
        "[E,n,k] (column-major, torchtitan's form) or contiguous [E,k,n], offs int32 cumulative "
        "row ends; a form counts only if experts 0 and E-1 match torch.matmul; if none runs "
        "with R rows, R is padded up to a multiple of 8, then 16 (timed with the padded rows); "
        "every working form is timed and the fastest is the CSV row (grouped_gemm_probe."
        "form_per_case / all_working_forms_ms). loop: per expert torch.matmul(A[eR:(e+1)R], "
        "W[e], out=C[eR:(e+1)R]) on the current stream (no torch.cat, no allocation). stacked: "
        "one torch.matmul(A[E*R,k], W[k,n]), the same FLOPs as one dense GEMM."),
}


def section_shares(names):
    """[(name, share)] in run order for the named sections; shares sum to 1."""
    sel = [(n, w) for n, w in WEIGHTS if n in names]
    tot = sum(w for _, w in sel)
    return [(n, w / tot) for n, w in sel]


def parse_sections(text):
    names = [t.strip() for t in text.split(",") if t.strip()]
    known = [n for n, _ in WEIGHTS]
    bad = [n for n in names if n not in known]
    if bad or not names:
        raise SystemExit(f"--sections: unknown or empty {bad or text!r}; known: {','.join(known)}")
    return set(names)


def device_info(torch):
    info = {"torch": torch.__version__, "cuda": torch.version.cuda}
    try:
        p = torch.cuda.get_device_properties(0)
        info.update(device=p.name, sm_count=p.multi_processor_count,
                    total_memory_bytes=p.total_memory,
                    l2_cache_bytes=getattr(p, "L2_cache_size", None))
        info["cudnn"] = torch.backends.cudnn.version()
    except Exception as e:
        info["device_error"] = str(e)
    return info


def section_host(torch, out, deadline, stats, notes):
    """Host cost per launched kernel in eager PyTorch: work so small the GPU finishes each kernel
    at once, so wall time over kernels launched is what the CPU side (Python, dispatcher, autograd,
    the CUDA launch) costs per kernel. The layer rows use the same decoder layer as section 3 with
    4 tokens; their kernel count comes from torch.profiler."""
    import torch.nn.functional as F
    row = csv_writer(os.path.join(out, "host_overhead.csv"), "case,kernels_per_call,calls,wall_ms_per_call,us_per_kernel")
    notes["host"] = ("wall time of N calls after warm-up (torch.cuda.synchronize before and after), divided by N and by "
                     "the kernels one call launches (profiler count, CUDA kernels and memsets); GPU work negligible")

    def kernels_of(fn):
        try:
            from torch.profiler import profile, ProfilerActivity
            with profile(activities=[ProfilerActivity.CUDA]) as prof:
                fn()
                torch.cuda.synchronize()
            n = 0
            for e in prof.events():
                dt = str(getattr(e, "device_type", ""))
                if "CUDA" in dt:
                    n += 1
            return max(n, 1)
        except Exception as e:
            notes.setdefault("host_profiler_errors", []).append(str(e)[:200])
            return None

    def wall(fn, calls):
        for _ in range(5):
            fn()
        torch.cuda.synchronize()
        t = time.perf_counter()
        for _ in range(calls):
            fn()
        torch.cuda.synchronize()
        return (time.perf_counter() - t) / calls

    x = torch.randn(8, 8, device="cuda", dtype=torch.bfloat16)
    cases = [("add_small", lambda: x + x, 1, 2000)]
    lin = torch.nn.Linear(64, 64, bias=False, device="cuda", dtype=torch.bfloat16)
    xi = torch.randn(4, 64, device="cuda", dtype=torch.bfloat16, requires_grad=True)

    def linear_fwd_bwd():
        y = lin(xi)
        torch.autograd.grad(y.sum(), (xi, lin.weight))
    cases.append(("linear_fwd_bwd_small", linear_fwd_bwd, None, 500))
    for name, hidden, nh, nkv, ffn in (("layer_small", 256, 4, 2, 512),):
        fwd, params = build_layer(torch, hidden, nh, nkv, ffn)
        xl = randn(torch, 1, 4, hidden).requires_grad_(True)
        hd = hidden // nh
        cos, sin = randn(torch, 4, hd), randn(torch, 4, hd)

        def layer_fwd(fwd=fwd, xl=xl, cos=cos, sin=sin):
            with torch.no_grad():
                fwd(xl, cos, sin)

        def layer_fwd_bwd(fwd=fwd, xl=xl, cos=cos, sin=sin, params=params):
            y = fwd(xl, cos, sin)
            torch.autograd.grad(y.float().sum(), [xl] + params)
        cases.append((name + "_fwd", layer_fwd, None, 300))
        cases.append((name + "_fwd_bwd", layer_fwd_bwd, None, 200))

    def measure(case):
        name, fn, kernels, calls = case
        k = kernels or kernels_of(fn) or 1
        w = wall(fn, calls)
        row(name, k, calls, fmt(w * 1e3), fmt(w / k * 1e6))
        log(f"host {name}: {w * 1e6:.1f} us per call, {k} kernels, {w / k * 1e6:.2f} us per kernel")

    run_shapes(torch, "host", cases, deadline, stats, measure)


def nvidia_smi():
    if not shutil.which("nvidia-smi"):
        return None
    try:
        q = "name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,clocks.max.mem,power.limit"
        r = subprocess.run(["nvidia-smi", f"--query-gpu={q}", "--format=csv"],
                           capture_output=True, text=True, timeout=5)
        return r.stdout.strip()
    except Exception as e:
        return f"error: {e}"


def dry_run(budget, names):
    plans = {"attention": lambda: attention_plan()[0], "elementwise": elementwise_plan,
             "layer": layer_plan, "gemm": gemm_plan,
             "attention_cudnn": lambda: attention_cudnn_plan()[0],
             "grouped_gemm": grouped_gemm_plan,
             "host": lambda: ["add_small", "linear_fwd_bwd_small", "layer_small_fwd", "layer_small_fwd_bwd"]}
    cum, total = 0.0, 0
    for name, share in section_shares(names):
        cum += share
        plan = plans[name]()
        total += len(plan)
        extra = {"attention_cudnn": " (batch, isl, heads, kv_heads, head_dim, v_head_dim)",
                 "grouped_gemm": f" (case, experts, rows_per_expert, n, k) x methods "
                                 f"{','.join(GG_METHODS)} = {len(plan) * len(GG_METHODS)} timings"
                 }.get(name, "")
        print(f"== {name}: {len(plan)} shapes, share {share:.0%}, "
              f"deadline {budget * cum:.0f}s{extra}")
        for s in plan:
            print(f"   {s}")
    if "attention" in names:
        print(f"attention dropped (> 8 GB q/k/v/grad): {attention_plan()[1]}")
    if "attention_cudnn" in names:
        print(f"attention_cudnn dropped (> 8 GB q/k/v/grad): {attention_cudnn_plan()[1]}")
    print(f"total shapes: {total}")
    rest = [n for n, _ in WEIGHTS if n not in names]
    if rest:
        print(f"not named in --sections (not run): {','.join(rest)}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--budget-s", type=float, default=240.0)
    ap.add_argument("--sections", default=",".join(DEFAULT_SECTIONS),
                    help="comma-separated, from: " + ",".join(n for n, _ in WEIGHTS) +
                    " (default: %(default)s)")
    ap.add_argument("--dry-run", action="store_true")
    args = ap.parse_args()
    names = parse_sections(args.sections)
    shares = section_shares(names)
    if args.dry_run:
        dry_run(args.budget_s, names)
        return 0
    os.makedirs(args.out, exist_ok=True)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # so finally still writes meta
    stats = {n: {"planned": 0, "measured": 0, "skipped": 0, "failed": 0, "errors": [],
                 "elapsed_s": 0.0} for n, _ in shares}
    notes = dict(NOTES)
    notes.update({n: SECTION_NOTES[n] for n, _ in shares if n in SECTION_NOTES})
    cum, deadlines = 0.0, {}
    for n, share in shares:
        cum += share
        deadlines[n] = round(args.budget_s * cum, 1)
    meta = {"budget_s": args.budget_s, "sections_run": [n for n, _ in shares],
            "budget_shares": {n: round(w, 4) for n, w in shares},
            "budget_deadlines_s": deadlines, "notes": notes, "sections": stats}

    def write_meta():
        meta["total_elapsed_s"] = round(time.time() - T0, 2)
        try:
            with open(os.path.join(args.out, "meta.json"), "w") as f:
                json.dump(meta, f, indent=2, default=str)
        except Exception as e:
            log(f"could not write meta.json: {e}")

    try:
        log("importing torch")
        import warnings
        warnings.filterwarnings("ignore")
        import torch
        meta.update(device_info(torch))
        meta["nvidia_smi_start"] = nvidia_smi()
        log(f"torch {meta.get('torch')} cuda {meta.get('cuda')} on {meta.get('device')}")
        funcs = {"attention": section_attention, "elementwise": section_elementwise,
                 "layer": section_layer, "gemm": section_gemm,
                 "attention_cudnn": section_attention_cudnn,
                 "grouped_gemm": section_grouped_gemm, "host": section_host}
        for name, _ in shares:
            deadline = T0 + deadlines[name]
            t_sec = time.time()
            log(f"== {name} (deadline at {deadline - T0:.0f}s)")
            try:
                torch.manual_seed(0)
                funcs[name](torch, args.out, deadline, stats, meta["notes"])
            except Exception as e:
                stats[name]["errors"].append(f"section aborted: {type(e).__name__}: {e}"[:400])
                log(f"{name}: section aborted: {type(e).__name__}: {e}")
            finally:
                stats[name]["elapsed_s"] = round(time.time() - t_sec, 2)
                gc.collect()
                try:
                    torch.cuda.empty_cache()
                except Exception:
                    pass
                write_meta()
    except BaseException as e:
        meta["fatal"] = f"{type(e).__name__}: {e}"[:400]
        log(f"fatal: {meta['fatal']}")
    finally:
        write_meta()
        log(f"done; wrote {args.out}/meta.json")
    return 0


if __name__ == "__main__":
    sys.exit(main())
