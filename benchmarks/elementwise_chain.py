"""Benchmark: a chain of 20 elementwise ops on [4096, 4096] float32, mpsgraph vs PyTorch.

Run (from the repository root)::

    PYTHONPATH=src python3 benchmarks/elementwise_chain.py            # CUDA, [4096, 4096]
    PYTHONPATH=src python3 benchmarks/elementwise_chain.py --small    # any device, [256, 256]

The chain (x, y inputs; two scalar constants) is the same 20 ops for every contender:
multiplication, addition, sin, multiplication by 0.5, tanh, addition, cos, square,
subtraction, absolute, squareRoot, negative, exponent, multiplication, sigmoid, maximum,
minimum, erf, addition of 1.5, logarithm. Contenders, in ONE process on the same inputs:

- torch eager: the 20 torch calls (20 kernels, each reading and writing 64 MiB);
- torch.compile: the same function compiled by Inductor (one fused kernel), default mode, and
  mode="reduce-overhead" (plus CUDA graphs);
- ours, op by op: an Executable compiled with `fuse_elementwise=False, cuda_graph=True` (the
  20 kernels replayed in one CUDA graph: no launch cost, all the memory traffic);
- ours, fused: `cuda_graph=True` and the default fusion (one generated kernel in a CUDA graph);
- ours, default: no options (fusion + the automatic CUDA graph, whose result is copied out of
  the graph's buffer: one more read and write).

Each is checked against torch eager first (max abs error printed). Times: median of --repeat
runs after warm-up, CUDA events around the call + synchronize (what a Python caller sees).
Ratios are peer / ours-fused: > 1 means ours is faster.
"""

from __future__ import annotations

import argparse
import platform
import statistics
import sys
import time
from pathlib import Path

import numpy as np

try:
    import mpsgraph as mg
except ImportError:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
    import mpsgraph as mg

import torch


def chain_torch(x, y):
    t = x * y
    t = t + x
    t = torch.sin(t)
    t = t * 0.5
    t = torch.tanh(t)
    t = t + y
    t = torch.cos(t)
    t = torch.square(t)
    t = t - x
    t = torch.abs(t)
    t = torch.sqrt(t)
    t = torch.neg(t)
    t = torch.exp(t)
    t = t * y
    t = torch.sigmoid(t)
    t = torch.maximum(t, x)
    t = torch.minimum(t, y)
    t = torch.erf(t)
    t = t + 1.5
    return torch.log(t)


def chain_graph(shape):
    g = mg.Graph()
    x = g.placeholder(shape=list(shape), dataType=mg.float32, name="x")
    y = g.placeholder(shape=list(shape), dataType=mg.float32, name="y")
    half = g.constant(0.5, dataType=mg.float32)
    c15 = g.constant(1.5, dataType=mg.float32)
    t = g.multiplication(x, y)
    t = g.addition(t, x)
    t = g.sin(t)
    t = g.multiplication(t, half)
    t = g.tanh(t)
    t = g.addition(t, y)
    t = g.cos(t)
    t = g.square(t)
    t = g.subtraction(t, x)
    t = g.absolute(t)
    t = g.squareRoot(t)
    t = g.negative(t)
    t = g.exponent(t)
    t = g.multiplication(t, y)
    t = g.sigmoid(t)
    t = g.maximum(t, x)
    t = g.minimum(t, y)
    t = g.erf(t)
    t = g.addition(t, c15)
    t = g.logarithm(t)
    return g, x, y, t


def timer(dev):
    if dev.type == "cuda":
        def measure(fn, repeat):
            times = []
            for _ in range(repeat):
                a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                a.record()
                fn()
                b.record()
                torch.cuda.synchronize()
                times.append(a.elapsed_time(b) / 1e3)
            return statistics.median(times)
    else:
        def measure(fn, repeat):
            times = []
            for _ in range(repeat):
                t0 = time.perf_counter()
                fn()
                times.append(time.perf_counter() - t0)
            return statistics.median(times)
    return measure


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--small", action="store_true", help="[256, 256], any device")
    ap.add_argument("--repeat", type=int, default=50)
    ap.add_argument("--no-compile", action="store_true", help="skip the torch.compile rows")
    args = ap.parse_args()
    cuda = torch.cuda.is_available()
    dev = torch.device("cuda" if cuda else "cpu")
    shape = (256, 256) if args.small else (4096, 4096)
    if not cuda and not args.small:
        sys.exit("no CUDA device: run with --small")
    gen = torch.Generator().manual_seed(0)
    x = (torch.rand(shape, generator=gen) * 2 - 1).to(dev)
    y = (torch.rand(shape, generator=gen) * 2 - 1).to(dev)
    ref = chain_torch(x, y)
    measure = timer(dev)
    mdev = "cuda" if cuda else "torch-cpu"
    g, px, py, out = chain_graph(shape)
    feeds = {px: px.shapedType, py: py.shapedType}

    rows = []  # (name, fn, notes)
    rows.append(("torch eager (20 kernels)", lambda: chain_torch(x, y)))
    if not args.no_compile:
        comp = torch.compile(chain_torch)
        rows.append(("torch.compile (default)", lambda: comp(x, y)))
        if cuda:
            comp_ro = torch.compile(chain_torch, mode="reduce-overhead")
            rows.append(("torch.compile reduce-overhead", lambda: comp_ro(x, y)))
    opts_plain = dict(fuse_elementwise=False)
    opts_fused = dict(fuse_elementwise=True)
    if cuda:
        opts_plain["cuda_graph"] = opts_fused["cuda_graph"] = True
    ex_plain = g.compile(feeds=feeds, targetTensors=[out], device=mdev, **opts_plain)
    ex_fused = g.compile(feeds=feeds, targetTensors=[out], device=mdev, **opts_fused)
    rows.append(("ours op by op" + (" (CUDA graph)" if cuda else ""),
                 lambda: ex_plain.run([x, y])))
    rows.append(("ours fused" + (" (CUDA graph)" if cuda else ""), lambda: ex_fused.run([x, y])))
    if cuda:
        ex_default = g.compile(feeds=feeds, targetTensors=[out], device=mdev)
        rows.append(("ours default (no options)", lambda: ex_default.run([x, y])))

    results = []
    for name, fn in rows:
        try:
            t0 = time.perf_counter()
            r = fn()
            first = time.perf_counter() - t0
            r = r[0] if isinstance(r, list) else r
            r = torch.as_tensor(np.asarray(r.numpy())) if hasattr(r, "numpy") and not isinstance(
                r, torch.Tensor) else r
            err = (r.to(ref.device).float() - ref).abs().max().item()
            for _ in range(5):
                fn()
            t = measure(fn, args.repeat)
            results.append((name, t, err, first))
        except Exception as e:  # noqa: BLE001 (a contender that fails prints its error)
            results.append((name, None, f"error: {type(e).__name__}: {e}", None))
    ours = next(t for n, t, _, _ in results if n.startswith("ours fused"))
    gib = 3 * np.prod(shape) * 4 / 2 ** 30  # ideal traffic: read x, y, write the result
    print(f"# elementwise chain of 20 ops, {list(shape)} float32, device "
          f"{torch.cuda.get_device_name() if cuda else platform.processor() or 'cpu'}, "
          f"torch {torch.__version__}, median of {args.repeat}")
    print(f"| contender | time (ms) | GB/s of the ideal 3 x {np.prod(shape) * 4 / 2 ** 20:g} "
          f"MiB | peer / ours fused | max abs err vs eager | first call (s) |")
    print("|---|---:|---:|---:|---:|---:|")
    for name, t, err, first in results:
        if t is None:
            print(f"| {name} | {err} | | | | |")
            continue
        print(f"| {name} | {t * 1e3:.3f} | {gib * 2 ** 30 / 1e9 / t:.0f} | {t / ours:.2f} | "
              f"{err:.1e} | {first:.1f} |")


if __name__ == "__main__":
    main()
