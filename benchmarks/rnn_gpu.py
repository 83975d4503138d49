"""Benchmark: GRU and single-gate RNN (tanh, relu) training steps on an NVIDIA GPU - ours
(fused Triton kernels, kernels/gru_seq.py) vs cuDNN (torch.nn.GRU / torch.nn.RNN) vs JAX
lax.scan, plus our LSTM training step at the same shape; same data, one process.

Run (from the repository root)::

    PYTHONPATH=src python3 benchmarks/rnn_gpu.py                 # every case
    PYTHONPATH=src python3 benchmarks/rnn_gpu.py --quick         # (T=100,N=64,I=H=256) only
    PYTHONPATH=src python3 benchmarks/rnn_gpu.py --json out.json
    PYTHONPATH=src python3 benchmarks/rnn_gpu.py --cpu-smoke     # degraded: torch-cpu, tiny

A training step is GRU / singleGateRNN (training=True) + its Gradients op with every gradient
(source, recurrentWeight, inputWeight, bias, initState; secondaryBias for the GRU), and forward
+ backward of torch.nn.GRU / torch.nn.RNN (cuDNN), or of the same recurrence written with
jax.lax.scan (unroll=8) under jax.jit, differentiated with jax.vjp. The GRU runs cuDNN's
convention on our side (resetGateFirst, resetAfter with secondaryBias = b_hn, flipZ off:
SPEC 4.2), so that all three compute the same function; results are compared against cuDNN
before timing (`verified`). Contenders:

- ours eager: `Executable.run` (inputs on the device), host-inclusive;
- ours graph: `Executable.captured_graph(inputs)` replayed (device-only);
- cuDNN eager / cuDNN graph: torch.nn.GRU / RNN forward+backward, eagerly and captured in a
  CUDA graph (device-only);
- JAX: jax.jit of the vjp of a lax.scan (host-inclusive); skipped when JAX is not importable;
- our LSTM graph: our LSTM training step at the same shape (benchmarks/lstm_gpu.py's case),
  device-only; "LSTM/ours" > 1 means our GRU / RNN step is faster than our LSTM step;
- our torch path: ours with MPSGRAPH_GRU_KERNEL=torch (the per-step torch fallback),
  device-only (--no-torch-path skips it).

Precisions: float32 (TF32 off everywhere) and bfloat16. Ratios are peer / ours (> 1: ours
faster). MPSGRAPH_GRU_KERNEL=torch runs our per-step torch path instead (to compare).
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
from lstm_gpu import graph_of_ours  # noqa: E402

mg = G.mg

SHAPES = [(100, 64, 256, 256, False), (50, 8, 128, 128, False), (100, 64, 1024, 1024, False),
          (200, 256, 512, 512, False), (128, 1, 384, 256, True)]
SMOKE = [(6, 2, 8, 8, False), (5, 3, 8, 8, True)]
KINDS = ("gru", "rnn_tanh", "rnn_relu")
TOL = {"float32": (1e-2, 2e-3), "bfloat16": (8e-2, 8e-2)}


class GatedCase:
    """One GRU / single-gate RNN training step: our graph, cuDNN's module, JAX's scan."""

    def __init__(self, kind, T, N, I, H, bi, dtname, device, seed=0):
        self.kind, self.T, self.N, self.I, self.H, self.bi = kind, T, N, I, H, bi
        self.D = D = 2 if bi else 1
        self.gates = k = 3 if kind == "gru" else 1
        self.dtname = dtname
        self.tdt, self.mdt = G.DTYPES[dtname]
        G_ = k * H
        self.shapes = dict(source=[T, N, I], recurrentWeight=[2, G_, H] if bi else [G_, H],
                           inputWeight=[D * G_, I], bias=[D * G_], initState=[N, D * H],
                           dstate=[T, N, D * H])
        if k == 3:
            self.shapes["secondaryBias"] = [D * H]
        gen = torch.Generator().manual_seed(seed)
        scale = {"dstate": 1.0, "recurrentWeight": H ** -0.5, "inputWeight": H ** -0.5}
        self.vals = {n: (torch.randn(v, generator=gen) * scale.get(n, 0.1))
                     .to(device=device, dtype=self.tdt) for n, v in self.shapes.items()}
        # multiply-adds x 2 x 3 (forward, backward data, weight gradients)
        self.flops = 6.0 * T * N * D * G_ * (I + H)

    def label(self) -> str:
        return f"{self.kind} T={self.T} N={self.N} I={self.I} H={self.H}" + (
            " bidir" if self.bi else "")

    def compile_ours(self, device, **options):
        g = mg.Graph()
        ph = {n: g.placeholder(v, dataType=self.mdt, name=n) for n, v in self.shapes.items()}
        common = dict(inputWeight=ph["inputWeight"], bias=ph["bias"],
                      initState=ph["initState"])
        if self.gates == 3:
            d = mg.GRUDescriptor(bidirectional=self.bi, training=True, resetGateFirst=True,
                                 resetAfter=True)
            state, z = g.GRU(ph["source"], ph["recurrentWeight"], **common,
                             secondaryBias=ph["secondaryBias"], descriptor=d)
            grads = g.GRUGradients(ph["source"], ph["recurrentWeight"], ph["dstate"], z, state,
                                   **common, secondaryBias=ph["secondaryBias"], descriptor=d)
        else:
            act = mg.RNNActivation.tanh if self.kind == "rnn_tanh" else mg.RNNActivation.relu
            d = mg.SingleGateRNNDescriptor(bidirectional=self.bi, training=True,
                                           activation=act)
            state, z = g.singleGateRNN(ph["source"], ph["recurrentWeight"], **common,
                                       descriptor=d)
            grads = g.singleGateRNNGradients(ph["source"], ph["recurrentWeight"], ph["dstate"],
                                             z, **common, descriptor=d)
        feeds = {ph[n]: mg.ShapedType(v, self.mdt) for n, v in self.shapes.items()}

        def compile_fn(**opts):
            return g.compile(feeds, [state, *grads], device=device, **opts)

        exe = compile_fn(**options)
        inputs = [self.vals[t.operation.name] for t in exe.feedTensors]
        return exe, inputs, compile_fn

    # cuDNN -------------------------------------------------------------------------------
    def cudnn(self):
        N, I, H, D, k = self.N, self.I, self.H, self.D, self.gates
        v = self.vals
        dev = v["source"].device
        if k == 3:
            m = torch.nn.GRU(I, H, bidirectional=self.bi)
        else:
            m = torch.nn.RNN(I, H, nonlinearity="tanh" if self.kind == "rnn_tanh" else "relu",
                             bidirectional=self.bi)
        m = m.to(device=dev, dtype=self.tdt)
        R = v["recurrentWeight"].reshape(D, k * H, H)
        with torch.no_grad():
            for d, s in enumerate(["", "_reverse"][:D]):
                sl = slice(d * k * H, (d + 1) * k * H)
                getattr(m, f"weight_ih_l0{s}").copy_(v["inputWeight"][sl])
                getattr(m, f"weight_hh_l0{s}").copy_(R[d])
                getattr(m, f"bias_ih_l0{s}").copy_(v["bias"][sl])
                bhh = getattr(m, f"bias_hh_l0{s}")
                bhh.zero_()
                if k == 3:  # b_hn = secondaryBias (resetAfter: inside the reset product)
                    bhh[2 * H:].copy_(v["secondaryBias"][d * H:(d + 1) * H])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            m.flatten_parameters()
        x = v["source"].clone().requires_grad_()
        h0 = v["initState"].reshape(N, D, H).transpose(0, 1).contiguous().requires_grad_()
        dy = v["dstate"]

        def clear():
            m.zero_grad(set_to_none=True)
            x.grad = h0.grad = None

        def step():
            clear()
            y, _ = m(x, h0)
            y.backward(dy)
            return y

        xc, h0c = (t.detach().clone().requires_grad_() for t in (x, h0))

        def clear_capture():
            m.zero_grad(set_to_none=True)
            xc.grad = h0c.grad = None

        def step_nozero():
            y, _ = m(xc, h0c)
            y.backward(dy)
            return y

        def dW():
            return torch.cat([getattr(m, f"weight_ih_l0{s}").grad
                              for s in ["", "_reverse"][:D]], 0)

        return step, step_nozero, clear_capture, x, dW


def jax_step(J, case: GatedCase):
    """jit(vjp) of a lax.scan GRU (torch's equations) / single-gate RNN, every gradient."""
    jax, jnp, lax = J.jax, J.jnp, J.jax.lax
    T, N, H, D, k = case.T, case.N, case.H, case.D, case.gates
    v = {n: J.array(t) for n, t in case.vals.items()}
    prec = "highest" if case.dtname == "float32" else "default"
    relu = case.kind == "rnn_relu"

    def direction(xp, R, h0, bhn, reverse):
        def cell(h, a_x):
            if k == 1:
                a = a_x + h @ R.T
                h2 = jnp.maximum(a, 0) if relu else jnp.tanh(a)
                return h2, h2
            p = h @ R.T
            r = jax.nn.sigmoid(a_x[:, :H] + p[:, :H])
            z = jax.nn.sigmoid(a_x[:, H:2 * H] + p[:, H:2 * H])
            n = jnp.tanh(a_x[:, 2 * H:] + r * (p[:, 2 * H:] + bhn))
            h2 = (1 - z) * n + z * h
            return h2, h2
        _, hs = lax.scan(cell, h0, xp, reverse=reverse, unroll=8)
        return hs

    def forward(x, W, R, b, h0, b2):
        G_ = k * H
        xp = (x.reshape(T * N, -1) @ W.T).reshape(T, N, D * G_) + b
        R = R.reshape(D, G_, H)
        outs = [direction(xp[..., d * G_:(d + 1) * G_], R[d], h0[:, d * H:(d + 1) * H],
                          b2[d * H:(d + 1) * H], reverse=d == 1) for d in range(D)]
        return outs[0] if D == 1 else jnp.concatenate(outs, axis=-1)

    b2 = v.get("secondaryBias", jnp.zeros((D * H,), v["source"].dtype))

    def step(x, W, R, b, h0, b2, dy):
        with jax.default_matmul_precision(prec):
            y, vjp = jax.vjp(forward, x, W, R, b, h0, b2)
            return (y, *vjp(dy))

    f = jax.jit(step)
    args = [v["source"], v["inputWeight"], v["recurrentWeight"], v["bias"], v["initState"], b2,
            v["dstate"]]

    def timed():
        jax.block_until_ready(f(*args))

    return timed, lambda: f(*args)


def lstm_graph(bench, shape, dtname, mdev) -> G.Cell:
    """Our LSTM training step at the same shape, device-only (graph), or eager on the CPU."""
    T, N, I, H, bi = shape
    try:
        case = G.LSTMCase(T, N, I, H, bi, dtname, bench.device, False)
        exe, inputs, compile_fn = case.compile_ours(mdev)
        exe.run(inputs)
        bench.sync()
        if bench.cuda:
            return graph_of_ours(bench, compile_fn, inputs)
        return G.measure(bench, lambda: exe.run(inputs), "our LSTM")
    except Exception as e:  # noqa: BLE001
        print(f"  [our LSTM] {traceback.format_exc()[-600:]}", file=sys.stderr)
        bench.cleanup()
        return G.Cell(text=f"error: {G.short(e)}")


def row(bench, J, kind, shape, dtname, mdev, lstm_cells: dict, torch_path: bool) -> dict:
    T, N, I, H, bi = shape
    case = GatedCase(kind, T, N, I, H, bi, dtname, bench.device)
    name = f"{case.label()} {dtname}"
    rtol, atol = TOL[dtname]
    bad = 1e-3 if dtname == "bfloat16" else 0.0
    cells: dict[str, G.Cell] = {}
    ref = None
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
    path = "hand rules"
    try:
        from mpsgraph.backends.torch import autotune

        autotune.reset_events()
        exe, inputs, compile_fn = case.compile_ours(mdev)
        out = exe.run(inputs)
        bench.sync()
        ev = [e for e in autotune.events() if e["key"].startswith(("GRU:", "singleGateRNN:"))]
        if ev:  # the autotuner's choice (gru_route.py: our kernels or cuDNN's own)
            path = ev[-1]["choice"] + (" (cached)" if ev[-1]["cached"] else "")
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
        return {"name": name, "verified": "error", "flops": case.flops,
                "cells": {"ours": G.Cell(text=f"error: {G.short(e)}")}}
    way = G.calibrate(bench, exe, inputs)
    cells["ours"] = G.measure(bench, lambda: exe.run(inputs), f"ours {name}")
    cells["ours"].method = way
    if bench.cuda:
        cells["ours_graph"] = graph_of_ours(bench, compile_fn, inputs)
        if torch_path:  # our per-step torch path (MPSGRAPH_GRU_KERNEL=torch), device-only
            os.environ["MPSGRAPH_GRU_KERNEL"] = "torch"
            try:
                cells["ours_torch"] = graph_of_ours(bench, compile_fn, inputs)
            finally:
                del os.environ["MPSGRAPH_GRU_KERNEL"]
    if J.ok:
        try:
            timed, call = jax_step(J, case)
            jr = call()
            if ref is not None:
                G.agree(f"{name}: JAX state", G.np.asarray(jr[0]).astype("float32"), ref[0],
                        rtol, atol, bad)
            cells["jax"] = G.measure(bench, timed, f"jax {name}")
        except Exception as e:  # noqa: BLE001
            print(f"  [jax {name}] {G.short(e, 300)}", file=sys.stderr)
            cells["jax"] = G.Cell(text=f"error: {G.short(e)}")
    key = (shape, dtname)
    if key not in lstm_cells:
        lstm_cells[key] = lstm_graph(bench, shape, dtname, mdev)
    cells["lstm"] = lstm_cells[key]
    exe = None
    bench.cleanup()
    return {"name": name, "verified": verified, "path": path, "flops": case.flops,
            "cells": cells}


def write_json(path: str, info: dict, rows: list) -> None:
    out = [{**{k: v for k, v in r.items() if k != "cells"},
            "cells": {k: c.json(r["flops"]) for k, c in r["cells"].items()}} for r in rows]
    Path(path).write_text(json.dumps({"machine": info, "rows": out}, indent=1))


def show(rows, cuda: bool) -> None:
    def c(r, k):
        return r["cells"].get(k) or G.Cell(text="-")

    ours_dev = "ours_graph" if cuda else "ours"
    print("## GRU / single-gate RNN training step: ours vs cuDNN vs JAX (and our LSTM)\n")
    print("| case | ours eager ms | cuDNN eager ms | cuDNN eager/ours eager | ours graph ms "
          "| cuDNN graph ms | cuDNN graph/ours graph | JAX ms | JAX/ours eager "
          "| our LSTM ms | LSTM/ours | our torch-path graph ms | torch-path/ours | path "
          "| verified |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---|")
    for r in rows:
        print(f"| {r['name']} | {c(r, 'ours').show()} | {c(r, 'cudnn').show()} "
              f"| {G.ratio(c(r, 'cudnn'), c(r, 'ours'))} | {c(r, 'ours_graph').show()} "
              f"| {c(r, 'cudnn_graph').show()} "
              f"| {G.ratio(c(r, 'cudnn_graph'), c(r, 'ours_graph'))} "
              f"| {c(r, 'jax').show()} | {G.ratio(c(r, 'jax'), c(r, 'ours'))} "
              f"| {c(r, 'lstm').show()} | {G.ratio(c(r, 'lstm'), c(r, ours_dev))} "
              f"| {c(r, 'ours_torch').show()} "
              f"| {G.ratio(c(r, 'ours_torch'), c(r, 'ours_graph'))} | {r.get('path', '-')} "
              f"| {r['verified']} |")
    print()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--cpu-smoke", action="store_true")
    ap.add_argument("--json", metavar="FILE")
    ap.add_argument("--repeat", type=int, default=None)
    ap.add_argument("--precisions", default="float32,bfloat16")
    ap.add_argument("--kinds", default=",".join(KINDS))
    ap.add_argument("--shapes", default=None,
                    help="comma list of indices into the five shapes (default: all)")
    ap.add_argument("--no-jax", action="store_true", help="skip the JAX column")
    ap.add_argument("--no-lstm", action="store_true", help="skip our LSTM column")
    ap.add_argument("--no-torch-path", action="store_true",
                    help="skip the column of our per-step torch path")
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
    kinds = [k for k in args.kinds.split(",") if k]
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = False
    warnings.filterwarnings("ignore", message="RNN module weights are not part of single")
    bench = G.Bench(dev, repeat, 3 if not smoke else 1)
    J = G.Jax(want_gpu=not smoke)
    if args.no_jax:
        J.jax = None
        J.reason = "skipped (--no-jax)"
    info = G.machine_info(bench.cuda, J)
    print(f"# GRU / RNN training step: {info.get('gpu') or 'CPU smoke'}; torch {info['torch']}"
          f", cuDNN {info['cudnn']}, JAX {info['jax']}; median of {repeat}; "
          f"MPSGRAPH_GRU_KERNEL={os.environ.get('MPSGRAPH_GRU_KERNEL', 'triton')}\n")
    t0 = time.perf_counter()
    rows = []
    lstm_cells: dict = {} if not args.no_lstm else None
    for shape in shapes:
        for p in precisions:
            for kind in kinds:
                cache = lstm_cells if lstm_cells is not None else {(shape, p): G.Cell(text="-")}
                rows.append(row(bench, J, kind, shape, p, mdev, cache,
                                not args.no_torch_path))
                r = rows[-1]
                print("  row: " + r["name"] + " | " + " | ".join(
                    f"{k} {c.show()}" for k, c in r["cells"].items())
                    + f" | path {r.get('path', '-')}", file=sys.stderr, flush=True)
                if args.json:  # after every row: a run stopped early keeps what it measured
                    write_json(args.json, info, rows)
    show(rows, bench.cuda)
    print(f"total wall time {time.perf_counter() - t0:.0f} s")
    bad = [r["name"] for r in rows if r["verified"] in ("MISMATCH", "error")]
    if args.json:
        write_json(args.json, info, rows)
    if bad:
        print("not verified: " + ", ".join(bad), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
