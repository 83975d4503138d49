"""Benchmark: the LSTM training step on an NVIDIA GPU - ours (fused Triton path) vs cuDNN vs
JAX vs our own per-step fallback, same data, one process.

Run (from the repository root)::

    PYTHONPATH=src python3 benchmarks/lstm_gpu.py                  # every case (~minutes)
    PYTHONPATH=src python3 benchmarks/lstm_gpu.py --quick          # (T=100,N=64,I=H=256) only
    PYTHONPATH=src python3 benchmarks/lstm_gpu.py --json out.json
    .venv/bin/python benchmarks/lstm_gpu.py --cpu-smoke            # degraded: torch-cpu, tiny

A training step is LSTM(training=True) + LSTMGradients with every gradient (mpsgraph), and
forward + backward of torch.nn.LSTM (cuDNN) or of the same LSTM written with jax.lax.scan
(unroll=8) under jax.jit, differentiated with jax.vjp. Contenders:

- ours eager: `Executable.run` of the compiled training step (inputs already on the device),
  host-inclusive (CUDA events around the call, synchronized) - what a Python caller sees;
- ours graph: `Executable.captured_graph(inputs)` replayed (device-only);
- ours step: the same, forced onto the per-step fallback (MPSGRAPH_LSTM_KERNEL=step: one
  addmm + one fused gate kernel per step), device-only;
- cuDNN eager / cuDNN graph: torch.nn.LSTM forward+backward, eagerly and captured in a CUDA
  graph (device-only);
- JAX: jax.jit of the vjp of a lax.scan LSTM (host-inclusive, block_until_ready).

Precisions: float32 (TF32 off everywhere), tf32 (ours compiled with allow_tf32=True; torch's
TF32 flags on for cuDNN; JAX matmul precision "tensorfloat32"), bfloat16. Graph timings queue
10 replays per sample. Ratios are peer / ours (> 1: ours faster). Plus, at (T=100,N=64,I=H=256):
the LSTM with a peephole, a hardSigmoid input gate and a per-step mask (no cuDNN equivalent),
against our default configuration at the same shape.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import traceback
import warnings
from pathlib import Path

os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
sys.path.insert(0, str(Path(__file__).resolve().parent))

import gpu as G  # noqa: E402  (the shared timing helpers of benchmarks/gpu.py)
import torch  # noqa: E402

mg = G.mg

SHAPES = [(100, 64, 256, 256, False), (50, 8, 128, 128, False), (100, 64, 1024, 1024, False),
          (200, 256, 512, 512, False), (100, 64, 512, 512, True)]
SMOKE = [(6, 2, 8, 8, False), (5, 3, 8, 8, True)]
PRECISIONS = {"float32": ("float32", False), "tf32": ("float32", True),
              "bfloat16": ("bfloat16", False)}
TOL = {"float32": (1e-2, 2e-3), "tf32": (3e-2, 2e-2), "bfloat16": (8e-2, 8e-2)}


class Case(G.LSTMCase):
    """gpu.py's LSTM case, plus an optional per-step mask (with the peephole configuration)."""

    def __init__(self, *args, mask: bool = False, **kw):
        super().__init__(*args, **kw)
        self.mask = mask
        if mask:
            gen = torch.Generator().manual_seed(7)
            m = (torch.rand((self.T, self.N, self.D * self.H), generator=gen) > 0.1)
            dev = self.vals["source"].device
            self.shapes["mask"] = [self.T, self.N, self.D * self.H]
            self.vals["mask"] = m.to(device=dev, dtype=self.tdt)


class tf32_flags:
    """torch's TF32 flags on (for cuDNN's TF32 rows), restored after."""

    def __init__(self, on: bool):
        self.on = on

    def __enter__(self):
        self.saved = (torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32)
        torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = self.on

    def __exit__(self, *exc):
        torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = self.saved


# ------------------------------------------------------------------------------------------
# JAX


def jax_step(J, case: Case, precision: str):
    """jit(vjp) of a lax.scan LSTM with cuDNN's equations (gates i, f, z, o; sigmoid, sigmoid,
    tanh, sigmoid; tanh cell), every gradient; returns (timed fn, call returning dx)."""
    jax, jnp, lax = J.jax, J.jnp, J.jax.lax
    T, N, H, D = case.T, case.N, case.H, case.D
    v = {k: J.array(t) for k, t in case.vals.items()}
    prec = {"float32": "highest", "tf32": "tensorfloat32", "bfloat16": "default"}[precision]

    def direction(xp, R, h0, c0, reverse):
        def cell(carry, a_x):
            h, c = carry
            a = a_x + h @ R.T
            i, f, z, o = jnp.split(a, 4, axis=-1)
            c2 = jax.nn.sigmoid(f) * c + jax.nn.sigmoid(i) * jnp.tanh(z)
            h2 = jax.nn.sigmoid(o) * jnp.tanh(c2)
            return (h2, c2), h2
        _, hs = lax.scan(cell, (h0, c0), xp, reverse=reverse, unroll=8)
        return hs

    def forward(x, W, R, b, h0, c0):
        xp = (x.reshape(T * N, -1) @ W.T).reshape(T, N, D * 4 * H) + b
        R = R.reshape(D, 4 * H, H)
        outs = [direction(xp[..., d * 4 * H:(d + 1) * 4 * H], R[d], h0[:, d * H:(d + 1) * H],
                          c0[:, d * H:(d + 1) * H], reverse=d == 1) for d in range(D)]
        return outs[0] if D == 1 else jnp.concatenate(outs, axis=-1)

    def step(x, W, R, b, h0, c0, dy):
        with jax.default_matmul_precision(prec):
            y, vjp = jax.vjp(forward, x, W, R, b, h0, c0)
            return (y, *vjp(dy))

    f = jax.jit(step)
    args = [v[k] for k in ("source", "inputWeight", "recurrentWeight", "bias", "initState",
                           "initCell", "dstate")]

    def timed():
        jax.block_until_ready(f(*args))

    return timed, lambda: f(*args)


# ------------------------------------------------------------------------------------------


def graph_of_ours(bench, compile_fn, inputs, **opts) -> G.Cell:
    try:
        exe = compile_fn(cuda_graph=True, **opts)
        exe.run(inputs)
        g = exe.captured_graph(inputs)
        bench.sync()
    except Exception as e:  # noqa: BLE001
        print(f"  [ours graph] {traceback.format_exc()[-600:]}", file=sys.stderr)
        bench.cleanup()
        return G.Cell(text=f"error: {G.short(e)}")
    return G.measure(bench, g.replay, "ours graph", batch=G.GRAPH_BATCH)


def row(bench, J, shape, precision: str, mdev, peephole=False, mask=False,
        step=True) -> dict:
    T, N, I, H, bi = shape
    dtname, tf32 = PRECISIONS[precision]
    case = Case(T, N, I, H, bi, dtname, bench.device, peephole, mask=mask)
    name = f"{case.label()} {precision}" + (" peephole+hardSigmoid+mask" if mask else "")
    rtol, atol = TOL[precision]
    bad = 1e-3 if dtname == "bfloat16" else 0.0
    cells: dict[str, G.Cell] = {}
    opts = {"allow_tf32": True} if tf32 else {}
    ref = None
    if not peephole:
        with tf32_flags(tf32):
            try:
                step, step_nozero, clear, x, dW = case.cudnn()
                y = step()
                bench.sync()
                ref = (y.detach().clone(), x.grad.detach().clone(), dW().detach().clone())
                del y
                cells["cudnn"] = G.measure(bench, step, f"cudnn {name}")
                cells["cudnn_graph"] = G.torch_graph_cell(bench, step_nozero, "cuDNN graph",
                                                          before=clear)
            except Exception as e:  # noqa: BLE001
                print(f"  [cudnn {name}] {G.short(e, 300)}", file=sys.stderr)
                bench.cleanup()

    verified = "no reference"
    exe, inputs, compile_fn = case.compile_ours(mdev, **opts)
    try:
        out = exe.run(inputs)
        bench.sync()
        if ref is not None:
            G.agree(f"{name}: state", out[0], ref[0], rtol, atol, bad)
            G.agree(f"{name}: d source", out[1], ref[1], rtol, atol, bad)
            G.agree(f"{name}: d inputWeight", out[3], ref[2], rtol, atol, bad)
            verified = "ok"
    except AssertionError as e:
        verified = "MISMATCH"
        print(f"  [verify] {str(e)[:800]}", file=sys.stderr)
    except Exception as e:  # noqa: BLE001
        print(f"  [ours {name}] {traceback.format_exc()[-800:]}", file=sys.stderr)
        bench.cleanup()
        return {"name": name, "precision": precision, "mask": mask, "verified": "error",
                "flops": case.flops, "cells": {"ours": G.Cell(text=f"error: {G.short(e)}")}}
    way = G.calibrate(bench, exe, inputs)
    cells["ours"] = G.measure(bench, lambda: exe.run(inputs), f"ours {name}")
    cells["ours"].method = way
    if bench.cuda:
        cells["ours_graph"] = graph_of_ours(bench, compile_fn, inputs, **opts)
        if step:
            os.environ["MPSGRAPH_LSTM_KERNEL"] = "step"
            try:
                cells["ours_step"] = graph_of_ours(bench, compile_fn, inputs, **opts)
            finally:
                del os.environ["MPSGRAPH_LSTM_KERNEL"]
    if J.ok and not peephole:
        try:
            timed, call = jax_step(J, case, precision)
            jr = call()
            if ref is not None:
                G.agree(f"{name}: JAX state", G.np.asarray(jr[0]).astype("float32"), ref[0],
                        rtol, atol, bad)
            cells["jax"] = G.measure(bench, timed, f"jax {name}")
        except Exception as e:  # noqa: BLE001
            print(f"  [jax {name}] {G.short(e, 300)}", file=sys.stderr)
            cells["jax"] = G.Cell(text=f"error: {G.short(e)}")
    exe = None  # frees its buffers before the next case
    bench.cleanup()
    return {"name": name, "precision": precision, "mask": mask, "verified": verified,
            "flops": case.flops, "cells": cells}


def show(rows) -> None:
    def c(r, k):
        return r["cells"].get(k) or G.Cell(text="-")

    print("## LSTM training step: ours vs cuDNN vs JAX\n")
    print("| case | ours eager ms | cuDNN eager ms | cuDNN eager/ours eager | ours graph ms "
          "| cuDNN graph ms | cuDNN graph/ours graph | ours step-path graph ms "
          "| step/ours | JAX ms | JAX/ours eager | verified |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
    for r in rows:
        if r["mask"]:
            continue
        print(f"| {r['name']} | {c(r, 'ours').show()} | {c(r, 'cudnn').show()} "
              f"| {G.ratio(c(r, 'cudnn'), c(r, 'ours'))} | {c(r, 'ours_graph').show()} "
              f"| {c(r, 'cudnn_graph').show()} "
              f"| {G.ratio(c(r, 'cudnn_graph'), c(r, 'ours_graph'))} "
              f"| {c(r, 'ours_step').show()} | {G.ratio(c(r, 'ours_step'), c(r, 'ours_graph'))} "
              f"| {c(r, 'jax').show()} | {G.ratio(c(r, 'jax'), c(r, 'ours'))} "
              f"| {r['verified']} |")
    masked = [r for r in rows if r["mask"]]
    if masked:
        print("\n## Peephole + hardSigmoid input gate + per-step mask vs our default "
              "configuration (same shape, device-only)\n")
        print("| case | ours graph ms | default config graph ms | cost (this / default) "
              "| ours eager ms |")
        print("|---|---:|---:|---:|---:|")
        for r in masked:
            base = next((b for b in rows if not b["mask"] and b["precision"] == r["precision"]
                         and b["name"].split(" ")[:3] == r["name"].split(" ")[:3]), None)
            bg = c(base, "ours_graph") if base else G.Cell(text="-")
            print(f"| {r['name']} | {c(r, 'ours_graph').show()} | {bg.show()} "
                  f"| {G.ratio(c(r, 'ours_graph'), bg)} | {c(r, 'ours').show()} |")
    print()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--cpu-smoke", action="store_true")
    ap.add_argument("--json", metavar="FILE")
    ap.add_argument("--repeat", type=int, default=None)
    ap.add_argument("--precisions", default="float32,tf32,bfloat16")
    ap.add_argument("--shapes", default=None,
                    help="comma list of indices into the five shapes (default: all)")
    ap.add_argument("--no-jax", action="store_true", help="skip the JAX column")
    ap.add_argument("--no-step", action="store_true", help="skip the step-path column")
    args = ap.parse_args(argv)
    smoke = args.cpu_smoke
    if smoke:
        dev, mdev, shapes, repeat = "cpu", mg.Device("torch-cpu"), SMOKE, args.repeat or 2
    else:
        if not torch.cuda.is_available():
            print("no CUDA device: use --cpu-smoke", file=sys.stderr)
            return 2
        dev, mdev, shapes, repeat = "cuda", mg.Device("cuda"), SHAPES, args.repeat or 20
    if args.quick:
        shapes = shapes[:1]
    if args.shapes:
        shapes = [shapes[int(i)] for i in args.shapes.split(",")]
    precisions = [p for p in args.precisions.split(",") if p]
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = False
    warnings.filterwarnings("ignore", message="RNN module weights are not part of single")
    bench = G.Bench(dev, repeat, 3 if not smoke else 1)
    J = G.Jax(want_gpu=not smoke)
    if args.no_jax:
        J.jax = None
        J.reason = "skipped (--no-jax)"
    info = G.machine_info(bench.cuda, J)
    print(f"# LSTM training step: {info.get('gpu') or 'CPU smoke'}; torch {info['torch']}, "
          f"cuDNN {info['cudnn']}, JAX {info['jax']}; median of {repeat}\n")
    t0 = time.perf_counter()
    rows = []
    for i, shape in enumerate(shapes):
        for p in precisions:
            if smoke and p == "tf32":
                continue
            rows.append(row(bench, J, shape, p, mdev, step=not args.no_step))
            if i == 0:
                rows.append(row(bench, J, shape, p, mdev, peephole=True, mask=True,
                                step=not args.no_step))
            for r in rows[-2 if i == 0 else -1:]:  # as it goes: a cut-off run keeps its rows
                cs = r["cells"]
                print("  row: " + r["name"] + " | " + " | ".join(
                    f"{k} {c.show()}" for k, c in cs.items()), file=sys.stderr, flush=True)
    show(rows)
    print(f"total wall time {time.perf_counter() - t0:.0f} s")
    if args.json:
        out = [{**{k: v for k, v in r.items() if k != "cells"},
                "cells": {k: c.json(r["flops"]) for k, c in r["cells"].items()}} for r in rows]
        Path(args.json).write_text(json.dumps({"machine": info, "rows": out}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
