"""Benchmark: mpsgraph's torch backend on an NVIDIA GPU vs PyTorch (cuDNN), CUDA graphs and JAX.

Run (from the repository root)::

    PYTHONPATH=src python3 benchmarks/gpu.py                 # everything (~minutes on an H200)
    PYTHONPATH=src python3 benchmarks/gpu.py --quick         # first conv shape, first LSTM shape
    PYTHONPATH=src python3 benchmarks/gpu.py --json out.json # also write every number
    .venv/bin/python benchmarks/gpu.py --cpu-smoke           # degraded: torch-cpu, tiny shapes

One process, the same data for every contender. Each measurement is a warm-up followed by the
median of ``--repeat`` (>= 20 on the GPU) timed runs, timed with CUDA events recorded around
the call with a synchronize at the end (host-inclusive: what a caller from Python sees), or
``time.perf_counter`` in ``--cpu-smoke``.

1. Convolution (forward, data gradient, weights gradient), NCHW/OIHW and NHWC/HWIO,
   float32 (TF32 off) and bfloat16. Contenders:
   - ours: ``Executable.run`` of an executable compiled for that one op (GPU torch inputs);
   - torch: ``torch.ops.aten.convolution`` / ``convolution_backward`` (output mask with only the
     gradient needed; channels_last tensors for NHWC);
   - graph columns (device-only): torch's aten call captured in a ``torch.cuda.CUDAGraph`` and
     replayed; ours the same way (or through ``compile(..., cuda_graph=True)`` when the
     executable implements it);
   - JAX: ``jax.lax.conv_general_dilated`` under ``jax.jit`` (its vjp for the gradients),
     precision HIGHEST for float32, when JAX with a GPU backend is importable.
   Ours is checked against torch (and JAX against torch) once per case before timing.
2. LSTM training step (LSTM training=True + LSTMGradients with every gradient) vs
   ``torch.nn.LSTM`` forward+backward (cuDNN) eagerly and captured in a CUDA graph; and an LSTM
   with a peephole and a hardSigmoid input gate (no cuDNN equivalent) vs a plain torch per-step
   loop with autograd and vs the same loop whose cell function is ``torch.compile``-d.

Ratios are peer / ours: > 1 means mpsgraph is faster. A contender that raises prints
``error: <message>`` in its cell; one that cannot run here (no CUDA graph capture, no JAX,
torch.compile unavailable) prints ``n/a`` with the reason in the notes below the tables.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
import traceback
import warnings
from pathlib import Path

import numpy as np

# JAX must not grab most of the GPU's memory before torch allocates anything
os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")

try:
    import mpsgraph as mg
except ImportError:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
    import mpsgraph as mg

import torch

# (N, C, H, W, O, k, stride, groups); padding k // 2 on every side (explicit)
CONV_SHAPES = [
    (32, 64, 56, 56, 64, 3, 1, 1),
    (32, 128, 28, 28, 128, 3, 1, 1),
    (32, 256, 14, 14, 256, 3, 1, 1),
    (32, 512, 7, 7, 512, 3, 1, 1),
    (32, 64, 56, 56, 256, 1, 1, 1),
    (32, 64, 56, 56, 64, 3, 2, 1),
    (32, 128, 56, 56, 128, 3, 1, 128),
]
CONV_SHAPES_SMOKE = [
    (2, 8, 8, 8, 8, 3, 1, 1),
    (2, 8, 8, 8, 16, 1, 1, 1),
    (2, 8, 8, 8, 8, 3, 2, 1),
    (2, 8, 8, 8, 8, 3, 1, 8),
]
# (T, N, I, H, bidirectional)
LSTM_SHAPES = [
    (100, 64, 256, 256, False),
    (100, 64, 1024, 1024, False),
    (50, 8, 128, 128, False),
    (200, 256, 512, 512, False),
    (100, 64, 512, 512, True),
]
LSTM_SHAPES_SMOKE = [(6, 2, 8, 8, False), (5, 3, 8, 8, True)]
LAYOUTS = ("NCHW", "NHWC")
OPS = ("forward", "data_grad", "weights_grad")
DTYPES = {"float32": (torch.float32, mg.float32), "bfloat16": (torch.bfloat16, mg.bFloat16)}
# (rtol, atol relative to max |reference|)
TOL = {"float32": (2e-3, 2e-3), "bfloat16": (3e-2, 3e-2)}
LSTM_TOL = {"float32": (1e-2, 2e-3), "bfloat16": (8e-2, 8e-2)}

NOTES: list[str] = []


def note(msg: str) -> None:
    if msg not in NOTES:
        NOTES.append(msg)


def short(e: BaseException, n: int = 70) -> str:
    msg = f"{type(e).__name__}: {e}".replace("\n", " ").replace("|", "/")
    return msg if len(msg) <= n else msg[:n - 3] + "..."


# ------------------------------------------------------------------------------------------
# Timing


class Bench:
    """Timing and CUDA-graph helpers for one device ('cuda' or 'cpu')."""

    def __init__(self, device: str, repeat: int, warmup: int):
        self.cuda = device.startswith("cuda")
        self.device = torch.device(device)
        self.repeat, self.warmup = repeat, warmup

    def sync(self) -> None:
        if self.cuda:
            torch.cuda.synchronize()

    def time(self, fn, repeat: int | None = None, batch: int = 1) -> float:
        """Median ms of `fn()` (host-inclusive, synchronized at the end of each run). With
        `batch` > 1 each timed sample is `batch` calls queued back to back, divided by
        `batch` (for graph replays: the device time, without the host's launch gaps)."""
        repeat = repeat or self.repeat
        for _ in range(self.warmup):
            fn()
        self.sync()
        ts = []
        if self.cuda:
            for _ in range(repeat):
                s = torch.cuda.Event(enable_timing=True)
                e = torch.cuda.Event(enable_timing=True)
                s.record()
                for _ in range(batch):
                    fn()
                e.record()
                e.synchronize()
                ts.append(s.elapsed_time(e) / batch)
        else:
            for _ in range(repeat):
                t0 = time.perf_counter()
                fn()
                ts.append((time.perf_counter() - t0) * 1e3)
        return statistics.median(ts)

    def capture(self, fn, before=None):
        """Capture `fn` into a CUDA graph (after a warm-up on a side stream); returns
        (replay, outputs of the captured call). `before()` runs right before capturing."""
        if not self.cuda:
            raise RuntimeError("no CUDA: graph capture needs a GPU")
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            for _ in range(3):
                if before is not None:
                    before()
                fn()
        torch.cuda.current_stream().wait_stream(s)
        torch.cuda.synchronize()
        if before is not None:
            before()
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            out = fn()
        torch.cuda.synchronize()
        g.replay()
        torch.cuda.synchronize()
        return g, out

    def cleanup(self) -> None:
        if self.cuda:
            try:
                torch.cuda.synchronize()
            except Exception:  # noqa: BLE001 - a sticky error shows in the next cell anyway
                pass
            torch.cuda.empty_cache()


def tflops(flops: float, ms: float | None) -> float | None:
    return None if ms is None or ms <= 0 else flops / (ms * 1e-3) / 1e12


def agree(name: str, got, ref, rtol: float, atol_rel: float, max_bad: float = 0.0) -> None:
    got = _np(got)
    ref = _np(ref)
    if got.shape != ref.shape:
        raise AssertionError(f"{name}: shape {got.shape} != {ref.shape}")
    scale = float(np.max(np.abs(ref))) if ref.size else 1.0
    atol = atol_rel * max(scale, 1e-6)
    if max_bad > 0 and ref.size:
        # bfloat16 recurrences drift chaotically over long sequences in the REFERENCE too:
        # a tiny fraction of outliers is allowed, the bulk must agree
        bad = ~np.isclose(got, ref, rtol=rtol, atol=atol)
        if bad.mean() <= max_bad and np.isfinite(got).all():
            return
    np.testing.assert_allclose(got, ref, rtol=rtol, atol=atol, err_msg=name)


def _np(a) -> np.ndarray:
    if isinstance(a, mg.TensorData):
        a = a.array if isinstance(a.array, torch.Tensor) else a.numpy()
    if isinstance(a, torch.Tensor):
        return a.detach().float().cpu().numpy()
    return np.asarray(a, dtype=np.float32)


class Cell:
    """One measured contender: ms or a reason why there is none."""

    def __init__(self, ms: float | None = None, text: str | None = None, method: str = ""):
        self.ms, self.text, self.method = ms, text, method

    def show(self) -> str:
        return f"{self.ms:.3f}" if self.ms is not None else (self.text or "-")

    def json(self, flops: float) -> dict:
        return {"ms": self.ms, "tflops": tflops(flops, self.ms), "status": self.text or "ok",
                "method": self.method}


def measure(bench: Bench, fn, label: str, repeat: int | None = None, batch: int = 1) -> Cell:
    try:
        return Cell(bench.time(fn, repeat, batch))
    except Exception as e:  # noqa: BLE001 - one contender's failure must not stop the run
        print(f"  [{label}] {short(e, 300)}", file=sys.stderr)
        bench.cleanup()
        return Cell(text=f"error: {short(e)}")


def ratio(peer: Cell, ours: Cell) -> str:
    if peer.ms is None or ours.ms is None:
        return "-"
    return f"{peer.ms / ours.ms:.2f}"


def ratio_val(peer: Cell, ours: Cell) -> float | None:
    return None if peer.ms is None or ours.ms is None else peer.ms / ours.ms


GRAPH_BATCH = 10  # graph replays queued per timed sample (device-only columns)


def calibrate(bench: Bench, exe, inputs) -> str:
    """Run `exe` until its automatic CUDA-graph mode has chosen between replay and op by op
    (a one-time cost, like a warm-up); returns the choice."""
    calib = getattr(getattr(exe, "_replay", None), "calibration", None)
    for _ in range(12):
        if calib is None or calib.decided is not None:
            break
        exe.run(inputs)
    bench.sync()
    if calib is None:
        return "op by op" if getattr(exe, "_replay", None) is None else "graph"
    note("ours: run until the automatic mode has timed CUDA-graph replay against op by op "
         "and kept the faster (its first ten runs), then timed")
    return "graph" if calib.decided == "graph" else "op by op"


def ours_graph_cell(bench: Bench, compile_fn, exe, inputs, check, repeat=None) -> Cell:
    """Ours device-only: an executable compiled with cuda_graph=True, its CUDA graph bound to
    these inputs (`Executable.captured_graph`), replayed directly exactly as torch's captured
    call is; `check(outputs)` verifies the executable's results once."""
    del exe
    if not bench.cuda:
        note("graph columns: n/a without CUDA")
        return Cell(text="n/a")
    try:
        exe_cg = compile_fn(cuda_graph=True)
        check(exe_cg.run(inputs))
        g = exe_cg.captured_graph(inputs)
        bench.sync()
    except Exception as e:  # noqa: BLE001
        print(f"  [ours graph] {short(e, 300)}", file=sys.stderr)
        bench.cleanup()
        return Cell(text=f"error: {short(e)}")
    note(f"graph columns (device-only): a CUDA graph replayed, {GRAPH_BATCH} replays queued "
         "back to back per timed sample; ours = Executable.captured_graph(inputs) of an "
         "executable compiled with cuda_graph=True, torch = the same call captured in "
         "torch.cuda.graph")
    c = measure(bench, g.replay, "ours graph", repeat, batch=GRAPH_BATCH)
    c.method = "captured_graph replay"
    return c


def torch_graph_cell(bench: Bench, fn, label: str, before=None, repeat=None) -> Cell:
    if not bench.cuda:
        return Cell(text="n/a")
    try:
        g, out = bench.capture(fn, before)
    except Exception as e:  # noqa: BLE001
        print(f"  [{label} capture] {short(e, 300)}", file=sys.stderr)
        note(f"{label} capture failed: {short(e, 120)}")
        bench.cleanup()
        return Cell(text="n/a")
    c = measure(bench, g.replay, label, repeat, batch=GRAPH_BATCH)
    del g, out
    return c


# ------------------------------------------------------------------------------------------
# JAX


class Jax:
    def __init__(self, want_gpu: bool):
        self.jax = self.jnp = None
        self.reason = ""
        try:
            import jax
            import jax.numpy as jnp
        except Exception as e:  # noqa: BLE001
            self.reason = f"JAX not importable ({short(e)})"
            return
        try:
            backend = jax.default_backend()
        except Exception as e:  # noqa: BLE001
            self.reason = f"JAX has no backend ({short(e)})"
            return
        if want_gpu and backend not in ("gpu", "cuda"):
            self.reason = f"JAX backend is {backend!r}, not a GPU"
            return
        self.jax, self.jnp, self.backend = jax, jnp, backend
        self.version = jax.__version__
        self.devices = [str(d) for d in jax.devices()]

    @property
    def ok(self) -> bool:
        return self.jax is not None

    def array(self, t: torch.Tensor):
        a = self.jnp.asarray(t.detach().float().cpu().numpy())
        if t.dtype == torch.bfloat16:
            a = a.astype(self.jnp.bfloat16)
        return self.jax.device_put(a, self.jax.devices()[0])


# ------------------------------------------------------------------------------------------
# Convolution


def compiler(g, feeds, targets, device):
    """`compile_fn(**options)` of graph `g`: what the graph columns recompile with options."""
    return lambda **opts: g.compile(feeds=feeds, targetTensors=targets, device=device, **opts)


class ConvCase:
    def __init__(self, shape, layout: str, dtname: str, device: torch.device, seed: int = 0):
        n, c, h, w, o, k, s, g = shape
        self.shape, self.layout, self.dtname = shape, layout, dtname
        self.n, self.c, self.h, self.w, self.o, self.k, self.s, self.g = shape
        self.p = k // 2
        self.ho = (h + 2 * self.p - k) // s + 1
        self.wo = (w + 2 * self.p - k) // s + 1
        self.tdt, self.mdt = DTYPES[dtname]
        gen = torch.Generator().manual_seed(seed)
        x = torch.randn((n, c, h, w), generator=gen)
        wt = torch.randn((o, c // g, k, k), generator=gen) / float(np.sqrt(c // g * k * k))
        dy = torch.randn((n, o, self.ho, self.wo), generator=gen)
        x, wt, dy = (a.to(device=device, dtype=self.tdt) for a in (x, wt, dy))
        nhwc = layout == "NHWC"
        mf = torch.channels_last if nhwc else torch.contiguous_format
        # torch side: NCHW-logical tensors (channels_last for NHWC)
        self.tx, self.tw, self.tdy = (a.contiguous(memory_format=mf) for a in (x, wt, dy))
        # ours: arrays in the user-visible layout (NHWC / HWIO for NHWC rows)
        self.x_l = x.permute(0, 2, 3, 1).contiguous() if nhwc else x.contiguous()
        self.w_l = wt.permute(2, 3, 1, 0).contiguous() if nhwc else wt.contiguous()
        self.dy_l = dy.permute(0, 2, 3, 1).contiguous() if nhwc else dy.contiguous()
        # the same MACs for forward, data gradient and weights gradient
        self.flops = 2.0 * n * o * self.ho * self.wo * (c // g) * k * k

    def label(self) -> str:
        dw = " dw" if self.g > 1 and self.g == self.c else (f" g{self.g}" if self.g > 1 else "")
        return (f"{self.h}x{self.w} {self.c}->{self.o} k{self.k} s{self.s}{dw}")

    # torch -------------------------------------------------------------------------------
    def torch_fn(self, op: str):
        aten = torch.ops.aten
        st, pd, dl = [self.s, self.s], [self.p, self.p], [1, 1]
        x, w, dy, g = self.tx, self.tw, self.tdy, self.g
        if op == "forward":
            return lambda: aten.convolution(x, w, None, st, pd, dl, False, [0, 0], g)
        if op == "data_grad":
            return lambda: aten.convolution_backward(dy, x, w, None, st, pd, dl, False, [0, 0],
                                                     g, [True, False, False])[0]
        return lambda: aten.convolution_backward(dy, x, w, None, st, pd, dl, False, [0, 0], g,
                                                 [False, True, False])[1]

    def torch_in_layout(self, op: str, t: torch.Tensor) -> torch.Tensor:
        if self.layout == "NHWC":
            return t.permute(2, 3, 1, 0) if op == "weights_grad" else t.permute(0, 2, 3, 1)
        return t

    # ours --------------------------------------------------------------------------------
    def compile_ours(self, op: str, device, **options):
        nhwc = self.layout == "NHWC"
        TL = mg.TensorNamedDataLayout
        p = self.p
        d = mg.Convolution2DOpDescriptor(
            strideInX=self.s, strideInY=self.s, dilationRateInX=1, dilationRateInY=1,
            groups=self.g, paddingLeft=p, paddingRight=p, paddingTop=p, paddingBottom=p,
            paddingStyle=mg.PaddingStyle.explicit, dataLayout=TL.NHWC if nhwc else TL.NCHW,
            weightsLayout=TL.HWIO if nhwc else TL.OIHW)
        g = mg.Graph()
        dt = self.mdt

        def ph(t, name):
            return g.placeholder(shape=list(t.shape), dataType=dt, name=name)

        if op == "forward":
            a, b = ph(self.x_l, "x"), ph(self.w_l, "w")
            y = g.convolution2D(a, weights=b, descriptor=d, name="y")
            inputs = [self.x_l, self.w_l]
        elif op == "data_grad":
            a, b = ph(self.dy_l, "dy"), ph(self.w_l, "w")
            y = g.convolution2DDataGradient(a, weights=b, outputShape=list(self.x_l.shape),
                                            forwardConvolutionDescriptor=d, name="dx")
            inputs = [self.dy_l, self.w_l]
        else:
            a, b = ph(self.dy_l, "dy"), ph(self.x_l, "x")
            y = g.convolution2DWeightsGradient(a, source=b, outputShape=list(self.w_l.shape),
                                               forwardConvolutionDescriptor=d, name="dw")
            inputs = [self.dy_l, self.x_l]
        feeds = {t: mg.ShapedType(list(v.shape), dt) for t, v in zip((a, b), inputs)}
        compile_fn = compiler(g, feeds, [y], device)
        return compile_fn(**options), inputs, compile_fn

    # JAX ---------------------------------------------------------------------------------
    def jax_fn(self, J: Jax, op: str):
        jax, lax = J.jax, J.jax.lax
        nhwc = self.layout == "NHWC"
        dn = ("NHWC", "HWIO", "NHWC") if nhwc else ("NCHW", "OIHW", "NCHW")
        prec = lax.Precision.HIGHEST if self.dtname == "float32" else None
        pads = [(self.p, self.p), (self.p, self.p)]
        st, g = (self.s, self.s), self.g

        def conv(x, w):
            return lax.conv_general_dilated(x, w, st, pads, dimension_numbers=dn,
                                            feature_group_count=g, precision=prec)

        x, w, dy = J.array(self.x_l), J.array(self.w_l), J.array(self.dy_l)
        if op == "forward":
            f, args = jax.jit(conv), (x, w)
        elif op == "data_grad":
            def dgrad(x, w, dy):
                return jax.vjp(lambda xx: conv(xx, w), x)[1](dy)[0]
            f, args = jax.jit(dgrad), (x, w, dy)
        else:
            def wgrad(x, w, dy):
                return jax.vjp(lambda ww: conv(x, ww), w)[1](dy)[0]
            f, args = jax.jit(wgrad), (x, w, dy)
        return (lambda: f(*args).block_until_ready()), (lambda: f(*args))


def run_cases(bench: Bench, J: Jax, makers, mdev, tag: str = "") -> list[dict]:
    """The three ops of each case `makers` builds (a case that cannot be set up is skipped with
    its reason), one row each; the case's memory is freed before the next is built."""
    rows = []
    for make in makers:
        try:
            case = make()
        except Exception as e:  # noqa: BLE001
            print(f"  case setup failed: {short(e, 300)}", file=sys.stderr)
            bench.cleanup()
            continue
        rtol, atol = TOL[case.dtname]
        for op in OPS:
            rows.append(conv_row(bench, J, case, op, mdev, rtol, atol))
            print(f"  done: {tag}{case.label()} {case.layout} {case.dtname} {op}",
                  file=sys.stderr, flush=True)
        del case
        bench.cleanup()
    return rows


def run_conv(bench: Bench, J: Jax, shapes, dtypes, device, mdev) -> list[dict]:
    return run_cases(bench, J, (lambda s=s, l=l, d=d: ConvCase(s, l, d, device)
                                for s in shapes for l in LAYOUTS for d in dtypes), mdev, "conv ")


def conv_row(bench, J, case: ConvCase, op: str, mdev, rtol, atol) -> dict:
    name = f"{case.label()} {case.layout} {case.dtname} {op}"
    t_fn = case.torch_fn(op)
    ref = None
    try:
        ref = case.torch_in_layout(op, t_fn()).contiguous()
        bench.sync()
    except Exception as e:  # noqa: BLE001
        bench.cleanup()
        torch_eager = Cell(text=f"error: {short(e)}")
    else:
        torch_eager = measure(bench, t_fn, f"torch {name}")

    def check(out):
        if ref is not None:
            agree(f"ours vs torch {name}", out[0], ref, rtol, atol)

    verified = "no reference"
    try:
        exe, inputs, compile_fn = case.compile_ours(op, mdev)
        out = exe.run(inputs)
        bench.sync()
        check(out)
        verified = "ok" if ref is not None else verified
        way = calibrate(bench, exe, inputs)
        ours = measure(bench, lambda: exe.run(inputs), f"ours {name}")
        ours.method = way
    except AssertionError as e:
        verified = "MISMATCH"
        print(f"  [verify] {str(e)[:600]}", file=sys.stderr)
        ours = measure(bench, lambda: exe.run(inputs), f"ours {name}")
    except Exception as e:  # noqa: BLE001
        print(f"  [ours {name}] {traceback.format_exc()[-800:]}", file=sys.stderr)
        bench.cleanup()
        ours = Cell(text=f"error: {short(e)}")
        exe = None

    torch_graph = torch_graph_cell(bench, t_fn, "torch graph")
    if exe is not None:
        ours_graph = ours_graph_cell(bench, compile_fn, exe, inputs, check)
    else:
        ours_graph = Cell(text="-")

    if not J.ok:
        jax_cell = Cell(text="n/a")
    else:
        try:
            j_timed, j_call = case.jax_fn(J, op)
            got = np.asarray(j_call()).astype(np.float32)
            if ref is not None:
                agree(f"JAX vs torch {name}", got, ref, rtol, atol)
            jax_cell = measure(bench, j_timed, f"jax {name}")
        except AssertionError as e:
            print(f"  [verify jax] {str(e)[:600]}", file=sys.stderr)
            jax_cell = Cell(text="error: JAX result differs from torch")
        except Exception as e:  # noqa: BLE001
            print(f"  [jax {name}] {short(e, 300)}", file=sys.stderr)
            jax_cell = Cell(text=f"error: {short(e)}")
    f = case.flops
    return {
        "shape": case.label(), "N": case.n, "C": case.c, "H": case.h, "W": case.w,
        "O": case.o, "k": case.k, "stride": case.s, "groups": case.g,
        "layout": case.layout, "dtype": case.dtname, "op": op, "flops": f,
        "verified": verified,
        "cells": {"ours": ours, "torch": torch_eager, "ours_graph": ours_graph,
                  "torch_graph": torch_graph, "jax": jax_cell},
    }


class ExtraConvCase:
    """A case of the rest of the convolution family (issue 18): convolution3D, the transposed
    2-D convolution, and depthwise 2-D through depthwiseConvolution2D and through
    depthwiseConvolution3D as PyTorch's MPS backend calls it (rank-4 source, weights
    [1, C, kH, kW], channelDimensionIndex -3). The torch side is one aten.convolution /
    convolution_backward call (cuDNN) with the same meaning."""

    def __init__(self, kind: str, layout: str, dtname: str, device: torch.device, seed=0,
                 smoke: bool = False):
        self.kind, self.layout, self.dtname = kind, layout, dtname
        self.tdt, self.mdt = DTYPES[dtname]
        gen = torch.Generator().manual_seed(seed)
        self.p, self.transposed = 1, kind == "transpose2d"
        if kind == "conv3d":   # N=8, C=O=64, 16x56x56, 3x3x3, pad 1
            n, c, o, sp, self.k, self.s = (2, 4, 4, (3, 5, 6), 3, 1) if smoke else \
                (8, 64, 64, (16, 56, 56), 3, 1)
            xs, ws, ys = (n, c, *sp), (o, c, 3, 3, 3), (n, o, *sp)
            self.g, self.flops = 1, 2.0 * n * o * float(np.prod(sp)) * c * 27
        elif kind == "transpose2d":  # N=32, 128 -> 64, 28x28 -> 56x56, 4x4, stride 2, pad 1
            n, c, o, hw = (2, 6, 4, 5) if smoke else (32, 128, 64, 28)
            self.k, self.s, self.g, sp = 4, 2, 1, (hw, hw)
            xs, ws, ys = (n, c, hw, hw), (c, o, 4, 4), (n, o, 2 * hw, 2 * hw)
            self.flops = 2.0 * n * c * hw * hw * o * 16
        else:  # "dw2d" / "dw3d": N=32, C=256, 56x56, 3x3, pad 1
            n, c, hw = (2, 8, 7) if smoke else (32, 256, 56)
            o, self.k, self.s, self.g, sp = c, 3, 1, c, (hw, hw)
            xs, ws, ys = (n, c, hw, hw), (c, 1, 3, 3), (n, c, hw, hw)
            self.flops = 2.0 * n * c * hw * hw * 9
        self.n, self.c, self.o = n, c, o
        x = torch.randn(xs, generator=gen)
        wt = torch.randn(ws, generator=gen) / float(np.sqrt(np.prod(ws[1:])))
        dy = torch.randn(ys, generator=gen)
        self.h, self.w = sp[-2], sp[-1]
        x, wt, dy = (a.to(device=device, dtype=self.tdt) for a in (x, wt, dy))
        cl = layout in ("NHWC", "NDHWC")
        mf = ((torch.channels_last_3d if x.dim() == 5 else torch.channels_last) if cl
              else torch.contiguous_format)
        self.tx, self.tw, self.tdy = (a.contiguous(memory_format=mf) for a in (x, wt, dy))
        last = (0, *range(2, x.dim()), 1)                   # NC... -> N...C
        wlast = (*range(2, x.dim()), 1, 0)                  # OI... -> ...IO
        if kind in ("dw2d", "dw3d"):  # [M=1, C, kH, kW] (OIHW; dw3d: PyTorch's call) or HWIO
            self._wperm = (2, 3, 0, 1) if cl else (1, 0, 2, 3)
            self.w_l = wt.permute(*self._wperm).contiguous()
        else:
            self.w_l = wt.permute(*wlast).contiguous() if cl else wt.contiguous()
        self.x_l = x.permute(*last).contiguous() if cl else x.contiguous()
        self.dy_l = dy.permute(*last).contiguous() if cl else dy.contiguous()
        self._last, self._wlast = last, wlast

    def label(self) -> str:
        return {"conv3d": "conv3D 16x56x56 64->64 k3x3x3",
                "transpose2d": "convTranspose2D 28x28 128->64 k4 s2",
                "dw2d": "depthwiseConv2D 56x56 C256 k3",
                "dw3d": "depthwiseConv3D (PyTorch's call) 56x56 C256 k3"}[self.kind]

    def torch_fn(self, op: str):
        aten = torch.ops.aten
        nd = self.tx.dim() - 2
        st, pd, dl, op0 = [self.s] * nd, [self.p] * nd, [1] * nd, [0] * nd
        x, w, dy, g, tr = self.tx, self.tw, self.tdy, self.g, self.transposed
        if op == "forward":
            return lambda: aten.convolution(x, w, None, st, pd, dl, tr, op0, g)
        if op == "data_grad":
            return lambda: aten.convolution_backward(dy, x, w, None, st, pd, dl, tr, op0, g,
                                                     [True, False, False])[0]
        return lambda: aten.convolution_backward(dy, x, w, None, st, pd, dl, tr, op0, g,
                                                 [False, True, False])[1]

    def torch_in_layout(self, op: str, t: torch.Tensor) -> torch.Tensor:
        if op == "weights_grad":
            if self.kind in ("dw2d", "dw3d"):
                return t.permute(*self._wperm)
            return t.permute(*self._wlast) if self.layout in ("NHWC", "NDHWC") else t
        return t.permute(*self._last) if self.layout in ("NHWC", "NDHWC") else t

    def _descriptor(self):
        TL, p, s = mg.TensorNamedDataLayout, self.p, self.s
        cl = self.layout in ("NHWC", "NDHWC")
        if self.kind == "conv3d":
            return mg.Convolution3DOpDescriptor(
                paddingLeft=p, paddingRight=p, paddingTop=p, paddingBottom=p, paddingFront=p,
                paddingBack=p, dataLayout=TL.NDHWC if cl else TL.NCDHW,
                weightsLayout=TL.DHWIO if cl else TL.OIDHW)
        if self.kind == "dw3d":
            return mg.DepthwiseConvolution3DOpDescriptor(
                strides=[1, 1, 1], dilationRates=[1, 1, 1], paddingValues=[0, 0, p, p, p, p],
                paddingStyle=mg.PaddingStyle.explicit, channelDimensionIndex=-3)
        kw = dict(strideInX=s, strideInY=s, dilationRateInX=1, dilationRateInY=1,
                  paddingLeft=p, paddingRight=p, paddingTop=p, paddingBottom=p,
                  paddingStyle=mg.PaddingStyle.explicit, dataLayout=TL.NHWC if cl else TL.NCHW,
                  weightsLayout=TL.HWIO if cl else TL.OIHW)
        if self.kind == "dw2d":
            return mg.DepthwiseConvolution2DOpDescriptor(**kw)
        return mg.Convolution2DOpDescriptor(groups=1, **kw)

    def compile_ours(self, op: str, device, **options):
        g, dt, d = mg.Graph(), self.mdt, self._descriptor()

        def ph(t, name):
            return g.placeholder(shape=list(t.shape), dataType=dt, name=name)

        xs, ws = list(self.x_l.shape), list(self.w_l.shape)
        fwd = {"conv3d": g.convolution3D, "dw2d": g.depthwiseConvolution2D,
               "dw3d": g.depthwiseConvolution3D}
        if self.kind == "transpose2d":
            # source = x [N, 128, 28, 28] (the forward conv's output), result [N, 64, 56, 56]
            ys = list(self.dy_l.shape)
            if op == "forward":
                a, b = ph(self.x_l, "x"), ph(self.w_l, "w")
                y = g.convolutionTranspose2D(a, b, outputShape=ys, descriptor=d)
                inputs = [self.x_l, self.w_l]
            elif op == "data_grad":
                a, b = ph(self.dy_l, "dy"), ph(self.w_l, "w")
                y = g.convolutionTranspose2DDataGradient(a, b, outputShape=xs,
                                                         forwardConvolutionDescriptor=d)
                inputs = [self.dy_l, self.w_l]
            else:
                a, b = ph(self.dy_l, "dy"), ph(self.x_l, "x")
                y = g.convolutionTranspose2DWeightsGradient(a, source=b, outputShape=ws,
                                                            forwardConvolutionDescriptor=d)
                inputs = [self.dy_l, self.x_l]
        else:
            name = {"conv3d": "convolution3D", "dw2d": "depthwiseConvolution2D",
                    "dw3d": "depthwiseConvolution3D"}[self.kind]
            dkw = ("forwardConvolutionDescriptor" if self.kind == "conv3d" else "descriptor")
            if op == "forward":
                a, b = ph(self.x_l, "x"), ph(self.w_l, "w")
                y = fwd[self.kind](a, b, descriptor=d)
                inputs = [self.x_l, self.w_l]
            elif op == "data_grad":
                a, b = ph(self.dy_l, "dy"), ph(self.w_l, "w")
                y = getattr(g, name + "DataGradient")(a, b, outputShape=xs, **{dkw: d})
                inputs = [self.dy_l, self.w_l]
            else:
                a, b = ph(self.dy_l, "dy"), ph(self.x_l, "x")
                y = getattr(g, name + "WeightsGradient")(a, b, outputShape=ws, **{dkw: d})
                inputs = [self.dy_l, self.x_l]
        feeds = {t: mg.ShapedType(list(v.shape), dt) for t, v in zip((a, b), inputs)}
        compile_fn = compiler(g, feeds, [y], device)
        return compile_fn(**options), inputs, compile_fn


EXTRA_CASES = [("conv3d", "NCDHW"), ("conv3d", "NDHWC"), ("transpose2d", "NCHW"),
               ("transpose2d", "NHWC"), ("dw2d", "NCHW"), ("dw2d", "NHWC"), ("dw3d", "NCHW")]


def run_conv_extra(bench: Bench, dtypes, device, mdev, smoke: bool = False) -> list[dict]:
    no_jax = Jax.__new__(Jax)  # no JAX column for these rows
    no_jax.jax = None
    return run_cases(bench, no_jax, (lambda k=k, l=l, d=d: ExtraConvCase(k, l, d, device,
                                                                           smoke=smoke)
                                     for k, l in EXTRA_CASES for d in dtypes), mdev)


def print_conv_extra(rows) -> None:
    print("## The rest of the convolution family (issue 18): ours vs cuDNN (aten)\n")
    print("| case | layout | dtype | op | ours ms | torch ms | torch/ours | ours graph ms "
          "| torch graph ms | torch graph/ours graph | target | verified |")
    print("|---|---|---|---|---:|---:|---:|---:|---:|---:|---|---|")
    for r in rows:
        c = r["cells"]
        tgt = "1.5x" if r["groups"] > 1 else "0.95x"
        print(f"| {r['shape']} | {r['layout']} | {r['dtype']} | {r['op']} "
              f"| {c['ours'].show()} | {c['torch'].show()} | {ratio(c['torch'], c['ours'])} "
              f"| {c['ours_graph'].show()} | {c['torch_graph'].show()} "
              f"| {ratio(c['torch_graph'], c['ours_graph'])} | {tgt} | {r['verified']} |")
    print()


def print_conv(rows) -> None:
    ns = sorted({r["N"] for r in rows})
    print(f"## Convolution (N={', '.join(map(str, ns))}, padding k//2 explicit)\n")
    print("| shape | layout | dtype | op | ours ms | ours mode | ours TF/s | torch ms | torch/ours "
          "| ours graph ms | ours graph TF/s | torch graph ms | torch graph/ours graph "
          "| JAX ms | JAX/ours | verified |")
    print("|---|---|---|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
    for r in rows:
        c, f = r["cells"], r["flops"]

        def tf(cell, f=f):
            v = tflops(f, cell.ms)
            return "-" if v is None else f"{v:.1f}" if v >= 1 else f"{v:.3f}"

        print(f"| {r['shape']} | {r['layout']} | {r['dtype']} | {r['op']} "
              f"| {c['ours'].show()} | {c['ours'].method or '-'} | {tf(c['ours'])} "
              f"| {c['torch'].show()} "
              f"| {ratio(c['torch'], c['ours'])} | {c['ours_graph'].show()} "
              f"| {tf(c['ours_graph'])} | {c['torch_graph'].show()} "
              f"| {ratio(c['torch_graph'], c['ours_graph'])} | {c['jax'].show()} "
              f"| {ratio(c['jax'], c['ours'])} | {r['verified']} |")
    print()


# ------------------------------------------------------------------------------------------
# LSTM


def lstm_flops(T, N, I, H, D) -> float:
    """Matmul FLOPs of one training step: forward 2*T*N*4H*(I+H) per direction, backward
    twice that (data and weight gradients)."""
    return 3 * D * 2.0 * T * N * 4 * H * (I + H)


class LSTMCase:
    def __init__(self, T, N, I, H, bi, dtname, device, peephole: bool, seed: int = 0):
        self.T, self.N, self.I, self.H, self.bi = T, N, I, H, bi
        self.D = D = 2 if bi else 1
        self.dtname, self.peephole = dtname, peephole
        self.tdt, self.mdt = DTYPES[dtname]
        self.shapes = dict(source=[T, N, I], recurrentWeight=[2, 4 * H, H] if bi else [4 * H, H],
                           inputWeight=[D * 4 * H, I], bias=[D * 4 * H])
        if peephole:
            self.shapes["peephole"] = [2, 4 * H] if bi else [4 * H]
        self.shapes.update(initState=[N, D * H], initCell=[N, D * H], dstate=[T, N, D * H])
        gen = torch.Generator().manual_seed(seed)
        # weights ~ N(0, 1/H) (the scale of the usual uniform(+-1/sqrt(H)) init): with 0.1 at
        # H = 1024 the recurrence is chaotic (a 1e-7 perturbation grows 1000x over 100 steps),
        # so TF32 / bf16 results of two correct implementations part ways and cannot verify
        scale = {"dstate": 1.0, "recurrentWeight": H ** -0.5, "inputWeight": H ** -0.5}
        self.vals = {k: (torch.randn(v, generator=gen) * scale.get(k, 0.1))
                     .to(device=device, dtype=self.tdt) for k, v in self.shapes.items()}
        self.flops = lstm_flops(T, N, I, H, D)

    def label(self) -> str:
        return f"T={self.T} N={self.N} I=H={self.H}" + (" bidir" if self.bi else "")

    def compile_ours(self, device, **options):
        g = mg.Graph()
        ph = {k: g.placeholder(v, dataType=self.mdt, name=k) for k, v in self.shapes.items()}
        kw = {}
        if self.peephole:
            kw["inputGateActivation"] = mg.RNNActivation.hardSigmoid
        d = mg.LSTMDescriptor(bidirectional=self.bi, training=True, **kw)
        names = ["inputWeight", "bias", "initState", "initCell"]
        names += [k for k in ("peephole", "mask") if k in self.shapes]  # (mask: lstm_gpu.py)
        opt = {k: ph[k] for k in names}
        state, cell, z = g.LSTM(ph["source"], ph["recurrentWeight"], descriptor=d, **opt)
        grads = g.LSTMGradients(ph["source"], ph["recurrentWeight"], ph["dstate"], z, cell,
                                descriptor=d, **opt)
        feeds = {ph[k]: mg.ShapedType(v, self.mdt) for k, v in self.shapes.items()}

        def compile_fn(**opts):
            return g.compile(feeds, [state, *grads], device=device, **opts)

        exe = compile_fn(**options)
        inputs = [self.vals[t.operation.name] for t in exe.feedTensors]
        return exe, inputs, compile_fn

    # cuDNN -------------------------------------------------------------------------------
    def cudnn(self):
        N, I, H, D = self.N, self.I, self.H, self.D
        v = self.vals
        m = torch.nn.LSTM(I, H, bidirectional=self.bi).to(device=v["source"].device,
                                                              dtype=self.tdt)
        R = v["recurrentWeight"].reshape(D, 4 * H, H)
        with torch.no_grad():
            for d, s in enumerate(["", "_reverse"][:D]):
                sl = slice(d * 4 * H, (d + 1) * 4 * H)
                getattr(m, f"weight_ih_l0{s}").copy_(v["inputWeight"][sl])
                getattr(m, f"weight_hh_l0{s}").copy_(R[d])
                getattr(m, f"bias_ih_l0{s}").copy_(v["bias"][sl])
                getattr(m, f"bias_hh_l0{s}").zero_()
        if self.tdt == torch.bfloat16 and v["source"].is_cuda:
            note("torch.nn.LSTM bfloat16: torch's flatten_parameters() skips bfloat16, so "
                 "cuDNN compacts the weights on every call (part of torch's time)")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            m.flatten_parameters()
        x = v["source"].clone().requires_grad_()
        h0 = v["initState"].reshape(N, D, H).transpose(0, 1).contiguous().requires_grad_()
        c0 = v["initCell"].reshape(N, D, H).transpose(0, 1).contiguous().requires_grad_()
        dy = v["dstate"]
        leaves = [x, h0, c0]

        def clear():
            m.zero_grad(set_to_none=True)
            for t in leaves:
                t.grad = None

        def step():
            clear()
            y, _ = m(x, (h0, c0))
            y.backward(dy)
            return y

        # capture uses fresh leaves: AccumulateGrad nodes of the eager steps (default stream)
        # must not be reused inside the capture stream
        xc, h0c, c0c = (t.detach().clone().requires_grad_() for t in (x, h0, c0))

        def clear_capture():
            m.zero_grad(set_to_none=True)
            for t in (xc, h0c, c0c):
                t.grad = None

        def step_nozero():  # for capture: grads are None before capture, written by replay
            y, _ = m(xc, (h0c, c0c))
            y.backward(dy)
            return y

        def dW():
            return torch.cat([getattr(m, f"weight_ih_l0{s}").grad
                              for s in ["", "_reverse"][:D]], 0)

        return step, step_nozero, clear_capture, x, dW

    # plain torch loop --------------------------------------------------------------------
    def loop(self, cell_fn):
        """The peephole / hardSigmoid-input-gate LSTM as a per-step torch loop (autograd).
        The input projection of all steps is one matmul; `cell_fn` is one step."""
        T, N, H, D = self.T, self.N, self.H, self.D
        v = self.vals
        leaves = {k: v[k].clone().requires_grad_() for k in
                  ("source", "recurrentWeight", "inputWeight", "bias", "peephole",
                   "initState", "initCell")}
        dy = v["dstate"]

        def forward():
            x, W, b = leaves["source"], leaves["inputWeight"], leaves["bias"]
            R = leaves["recurrentWeight"].reshape(D, 4 * H, H)
            P = leaves["peephole"].reshape(D, 4 * H)
            xp = (x.reshape(T * N, -1) @ W.t()).reshape(T, N, D * 4 * H) + b
            outs = []
            for d in range(D):
                h = leaves["initState"][:, d * H:(d + 1) * H]
                c = leaves["initCell"][:, d * H:(d + 1) * H]
                Rd, pd = R[d], P[d]
                hs = [None] * T
                steps = range(T - 1, -1, -1) if d == 1 else range(T)
                for t in steps:
                    h, c = cell_fn(xp[t, :, d * 4 * H:(d + 1) * 4 * H], h, c, Rd, pd)
                    hs[t] = h
                outs.append(torch.stack(hs, 0))
            return outs[0] if D == 1 else torch.cat(outs, 2)

        def step():
            for t in leaves.values():
                t.grad = None
            y = forward()
            y.backward(dy)
            return y

        return step, leaves


def lstm_cell(xp_t, h, c, R, p):
    """One step of the LSTM with peephole and hardSigmoid input gate, gates (i, f, z, o):
    a = x@W^T + b + h@R^T + p*c_prev; c = f*c_prev + i*z; h = o*tanh(c)."""
    H = h.shape[1]
    a = xp_t + h @ R.t() + c.repeat(1, 4) * p
    i = torch.clamp(0.2 * a[:, :H] + 0.5, 0.0, 1.0)
    f = torch.sigmoid(a[:, H:2 * H])
    z = torch.tanh(a[:, 2 * H:3 * H])
    o = torch.sigmoid(a[:, 3 * H:])
    c2 = f * c + i * z
    return o * torch.tanh(c2), c2


def lstm_repeat(bench: Bench, T, N, H) -> int | None:
    """Fewer timed runs for the largest LSTM case (the per-step loops take long there)."""
    if bench.cuda and T * N * H >= 200 * 256 * 512:
        return max(20, bench.repeat // 2)
    return None


def run_lstm(bench: Bench, shapes, dtypes, device, mdev, compile_ok: bool) -> list[dict]:
    rows = []
    for T, N, I, H, bi in shapes:
        for dtname in dtypes:
            for peephole in (False, True):
                rep = lstm_repeat(bench, T, N, H)
                try:
                    case = LSTMCase(T, N, I, H, bi, dtname, device, peephole)
                    rows.append(lstm_row(bench, case, mdev, rep, compile_ok))
                except Exception as e:  # noqa: BLE001
                    print(f"  lstm case failed: {short(e, 300)}", file=sys.stderr)
                bench.cleanup()
                print(f"  done: lstm T={T} N={N} H={H} bi={bi} {dtname} peephole={peephole}",
                      file=sys.stderr, flush=True)
    return rows


def lstm_row(bench: Bench, case: LSTMCase, mdev, rep, compile_ok: bool) -> dict:
    name = f"LSTM {case.label()} {case.dtname}" + (" peephole" if case.peephole else "")
    rtol, atol = LSTM_TOL[case.dtname]
    cells: dict[str, Cell] = {}
    # the reference: cuDNN for the plain LSTM, the plain torch loop for the peephole one
    ref = None
    if not case.peephole:
        try:
            step, step_nozero, clear, x, dW = case.cudnn()
            y = step()
            bench.sync()
            ref = (y.detach().clone(), x.grad.detach().clone(), dW().detach().clone())
            del y  # frees the eager autograd graph before any capture
            cells["cudnn"] = measure(bench, step, f"cudnn {name}", rep)
            cells["cudnn_graph"] = torch_graph_cell(bench, step_nozero, "cuDNN graph",
                                                    before=clear, repeat=rep)
        except Exception as e:  # noqa: BLE001
            print(f"  [cudnn {name}] {short(e, 300)}", file=sys.stderr)
            bench.cleanup()
            cells.setdefault("cudnn", Cell(text=f"error: {short(e)}"))
            cells.setdefault("cudnn_graph", Cell(text="-"))
    else:
        try:
            step, leaves = case.loop(lstm_cell)
            y = step()
            bench.sync()
            ref = (y.detach().clone(), leaves["source"].grad.detach().clone(),
                   leaves["inputWeight"].grad.detach().clone())
            cells["loop"] = measure(bench, step, f"loop {name}", rep)
        except Exception as e:  # noqa: BLE001
            print(f"  [loop {name}] {short(e, 300)}", file=sys.stderr)
            bench.cleanup()
            cells["loop"] = Cell(text=f"error: {short(e)}")
        cells["compiled"] = compiled_cell(bench, case, name, rep, compile_ok, ref, rtol, atol)

    bad = 1e-3 if case.dtname == "bfloat16" else 0.0

    def check(out):
        if ref is not None:
            # outputs: state, d source, d recurrentWeight, d inputWeight, ...
            agree(f"{name}: state", out[0], ref[0], rtol, atol, bad)
            agree(f"{name}: d source", out[1], ref[1], rtol, atol, bad)
            agree(f"{name}: d inputWeight", out[3], ref[2], rtol, atol, bad)

    verified = "no reference"
    exe = None
    try:
        exe, inputs, compile_fn = case.compile_ours(mdev)
        out = exe.run(inputs)
        bench.sync()
        check(out)
        verified = "ok" if ref is not None else verified
        way = calibrate(bench, exe, inputs)
        cells["ours"] = measure(bench, lambda: exe.run(inputs), f"ours {name}", rep)
        cells["ours"].method = way
    except AssertionError as e:
        verified = "MISMATCH"
        print(f"  [verify] {str(e)[:800]}", file=sys.stderr)
        cells["ours"] = measure(bench, lambda: exe.run(inputs), f"ours {name}", rep)
    except Exception as e:  # noqa: BLE001
        print(f"  [ours {name}] {traceback.format_exc()[-800:]}", file=sys.stderr)
        bench.cleanup()
        cells["ours"] = Cell(text=f"error: {short(e)}")
        exe = None
    if exe is not None:
        cells["ours_graph"] = ours_graph_cell(bench, compile_fn, exe, inputs, check, rep)
    else:
        cells["ours_graph"] = Cell(text="-")
    return {"shape": case.label(), "T": case.T, "N": case.N, "I": case.I, "H": case.H,
            "bidirectional": case.bi, "dtype": case.dtname, "peephole": case.peephole,
            "flops": case.flops, "verified": verified, "repeat": rep or bench.repeat,
            "cells": cells}


def compiled_cell(bench, case: LSTMCase, name, rep, compile_ok, ref, rtol, atol) -> Cell:
    if not compile_ok:
        return Cell(text="n/a")
    try:
        # a fresh dynamo cache per case: every case is a new shape/dtype of the same code
        # object, and the recompile limit would otherwise silently fall back to eager
        torch._dynamo.reset()
        cfn = torch.compile(lstm_cell, dynamic=False)
        step, leaves = case.loop(cfn)
        t0 = time.perf_counter()
        y = step()
        bench.sync()
        print(f"  torch.compile of the cell: {time.perf_counter() - t0:.1f} s (first step)",
              file=sys.stderr)
        if ref is not None:
            bad = 1e-3 if case.dtname == "bfloat16" else 0.0
            agree(f"{name}: compiled loop state", y, ref[0], rtol, atol, bad)
            agree(f"{name}: compiled loop d source", leaves["source"].grad, ref[1], rtol, atol,
                  bad)
    except AssertionError as e:
        print(f"  [verify compiled] {str(e)[:600]}", file=sys.stderr)
        note(f"{name}: the torch.compile loop differs from the plain loop (timed anyway)")
    except Exception as e:  # noqa: BLE001
        print(f"  [torch.compile {name}] {short(e, 300)}", file=sys.stderr)
        note(f"torch.compile failed: {short(e, 150)}")
        bench.cleanup()
        return Cell(text="n/a")
    return measure(bench, step, f"compiled {name}", rep)


def print_lstm(rows) -> None:
    def tf(cell, f):
        v = tflops(f, cell.ms) if cell is not None else None
        return "-" if v is None else f"{v:.2f}"

    def show(cell):
        return "-" if cell is None else cell.show()

    def rat(a, b):
        return "-" if a is None or b is None else ratio(a, b)

    print("## LSTM training step (LSTM training=True + LSTMGradients, every gradient)\n")
    print("| shape | dtype | ours ms | ours TF/s | cuDNN ms | cuDNN/ours | ours graph ms "
          "| cuDNN graph ms | cuDNN graph/ours graph | verified |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---|")
    for r in rows:
        if r["peephole"]:
            continue
        c, f = r["cells"], r["flops"]
        print(f"| {r['shape']} | {r['dtype']} | {show(c.get('ours'))} | {tf(c.get('ours'), f)} "
              f"| {show(c.get('cudnn'))} | {rat(c.get('cudnn'), c.get('ours'))} "
              f"| {show(c.get('ours_graph'))} | {show(c.get('cudnn_graph'))} "
              f"| {rat(c.get('cudnn_graph'), c.get('ours_graph'))} | {r['verified']} |")
    print()
    print("## LSTM with peephole + hardSigmoid input gate (training step; no cuDNN "
          "equivalent)\n")
    print("| shape | dtype | ours ms | ours TF/s | torch loop ms | loop/ours "
          "| torch.compile loop ms | compiled/ours | ours graph ms | verified |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---|")
    for r in rows:
        if not r["peephole"]:
            continue
        c, f = r["cells"], r["flops"]
        print(f"| {r['shape']} | {r['dtype']} | {show(c.get('ours'))} | {tf(c.get('ours'), f)} "
              f"| {show(c.get('loop'))} | {rat(c.get('loop'), c.get('ours'))} "
              f"| {show(c.get('compiled'))} | {rat(c.get('compiled'), c.get('ours'))} "
              f"| {show(c.get('ours_graph'))} | {r['verified']} |")
    print()


# ------------------------------------------------------------------------------------------


def machine_info(cuda: bool, J: Jax) -> dict:
    info = {"python": platform.python_version(), "torch": torch.__version__,
            "torch_cuda": torch.version.cuda, "mpsgraph": str(Path(mg.__file__).parent),
            "cudnn": torch.backends.cudnn.version() if torch.backends.cudnn.is_available()
            else None}
    if cuda:
        p = torch.cuda.get_device_properties(0)
        info.update(gpu=torch.cuda.get_device_name(0), gpu_mem_gib=round(p.total_memory / 2**30),
                    sm=f"{p.major}.{p.minor}")
    else:
        info.update(gpu=None, cpu=platform.processor() or platform.machine(),
                    threads=torch.get_num_threads())
    info["jax"] = f"{J.version} ({J.backend}: {', '.join(J.devices)})" if J.ok else J.reason
    return info


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="first conv shape, first LSTM shape")
    ap.add_argument("--cpu-smoke", action="store_true",
                    help="degraded run on torch-cpu with tiny shapes and 2 repeats")
    ap.add_argument("--json", metavar="FILE", help="also write every number to FILE")
    ap.add_argument("--repeat", type=int, default=None, help="timed runs (GPU default 20)")
    ap.add_argument("--warmup", type=int, default=None, help="untimed runs first (default 3)")
    ap.add_argument("--only", choices=("conv", "conv-extra", "lstm"),
                    help="run one section only")
    ap.add_argument("--dtypes", default="float32,bfloat16", help="comma list")
    ap.add_argument("--cudnn-benchmark", action="store_true",
                    help="torch.backends.cudnn.benchmark = True (affects ours and torch alike)")
    ap.add_argument("--no-compile", action="store_true", help="skip torch.compile")
    args = ap.parse_args(argv)

    smoke = args.cpu_smoke
    if smoke:
        dev_name, mdev = "cpu", mg.Device("torch-cpu")
        repeat, warmup = args.repeat or 2, args.warmup if args.warmup is not None else 1
        conv_shapes, lstm_shapes = CONV_SHAPES_SMOKE, LSTM_SHAPES_SMOKE
    else:
        if not torch.cuda.is_available():
            print("no CUDA device: run with --cpu-smoke for the degraded CPU run",
                  file=sys.stderr)
            return 2
        dev_name, mdev = "cuda", mg.Device("cuda")
        repeat, warmup = args.repeat or 20, args.warmup if args.warmup is not None else 3
        conv_shapes, lstm_shapes = CONV_SHAPES, LSTM_SHAPES
    if args.quick:
        conv_shapes, lstm_shapes = conv_shapes[:1], lstm_shapes[:1]
    dtypes = [d.strip() for d in args.dtypes.split(",") if d.strip()]
    for d in dtypes:
        if d not in DTYPES:
            ap.error(f"unknown dtype {d!r} (float32, bfloat16)")

    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cudnn.benchmark = bool(args.cudnn_benchmark)
    warnings.filterwarnings("ignore", message="RNN module weights are not part of single")
    device = torch.device(dev_name)
    bench = Bench(dev_name, repeat, warmup)
    J = Jax(want_gpu=not smoke)
    info = machine_info(bench.cuda, J)
    t_start = time.perf_counter()

    where = (f"GPU {info['gpu']} ({info.get('gpu_mem_gib')} GiB, sm {info.get('sm')})"
             if bench.cuda else f"CPU smoke run (torch-cpu, {info['threads']} threads)")
    print(f"# mpsgraph GPU benchmark: {where}\n")
    print(f"torch {info['torch']} (CUDA {info['torch_cuda']}), cuDNN {info['cudnn']}, "
          f"JAX {info['jax']}, python {info['python']}; mpsgraph from {info['mpsgraph']}")
    print(f"TF32 off; cudnn.benchmark={torch.backends.cudnn.benchmark}; median of {repeat} "
          f"timed runs after {warmup} warm-up runs"
          + (" (CUDA events around each call, synchronized)" if bench.cuda
             else " (perf_counter)") + "; ratio = peer ms / ours ms (> 1: ours faster)\n")

    compile_ok = not args.no_compile
    if args.no_compile:
        note("torch.compile skipped (--no-compile)")
    if not J.ok:
        note(f"JAX column n/a: {J.reason}")
    note("verified: ours checked against torch (conv: aten; LSTM: cuDNN, peephole: the plain "
         "loop) before timing; bfloat16 LSTM rows allow 0.1% outlier elements (the bfloat16 "
         "references drift over long sequences); MISMATCH rows are timed anyway")

    conv_rows, lstm_rows = [], []
    if args.only in (None, "conv"):
        conv_rows = run_conv(bench, J, conv_shapes, dtypes, device, mdev)
        print_conv(conv_rows)
        sys.stdout.flush()
    if args.only == "conv-extra" or (args.only is None and not args.quick):
        extra_rows = run_conv_extra(bench, dtypes, device, mdev, smoke)
        print_conv_extra(extra_rows)
        conv_rows = conv_rows + extra_rows
        sys.stdout.flush()
    if args.only in (None, "lstm"):
        lstm_rows = run_lstm(bench, lstm_shapes, dtypes, device, mdev, compile_ok)
        print_lstm(lstm_rows)

    elapsed = time.perf_counter() - t_start
    print("Notes:")
    print("- conv TF/s counts 2*N*O*Ho*Wo*(C/g)*k*k for each op; LSTM TF/s counts the matmuls "
          "of one training step, 3 * D * 2*T*N*4H*(I+H).")
    print("- ours = Executable.run (inputs already torch tensors on the device), "
          "host-inclusive; graph columns replay a CUDA graph (device-only).")
    print("- the peephole loops hoist the input projection x@W^T+b of all steps into one "
          "matmul (as ours does); torch.compile compiles the per-step cell only.")
    for n in NOTES:
        print(f"- {n}")
    print(f"- total wall time {elapsed:.0f} s")

    if args.json:
        def rows_json(rows):
            out = []
            for r in rows:
                r2 = {k: v for k, v in r.items() if k != "cells"}
                r2["results"] = {k: c.json(r["flops"]) for k, c in r["cells"].items()}
                ours, ours_g = r["cells"].get("ours"), r["cells"].get("ours_graph")
                r2["ratios"] = {}
                for k, c in r["cells"].items():
                    if k in ("ours", "ours_graph"):
                        continue
                    base = ours_g if k.endswith("graph") else ours
                    if base is not None:
                        r2["ratios"][f"{k}/ours" + ("_graph" if k.endswith("graph") else "")] = \
                            ratio_val(c, base)
                out.append(r2)
            return out

        payload = {"machine": info, "repeat": repeat, "warmup": warmup, "quick": args.quick,
                   "cpu_smoke": smoke, "cudnn_benchmark": torch.backends.cudnn.benchmark,
                   "conv": rows_json(conv_rows), "lstm": rows_json(lstm_rows), "notes": NOTES,
                   "wall_s": elapsed}
        Path(args.json).write_text(json.dumps(payload, indent=1))
        print(f"\nwrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
