"""Benchmark: an LSTM training step on mpsgraph's NumPy backend vs PyTorch CPU, same data.

    python benchmarks/lstm.py [--repeat 10] [--quick] [--memory]

A training step is LSTM(training=True) followed by LSTMGradients (every gradient: source,
recurrentWeight, inputWeight, bias, initState, initCell), compiled once into an Executable and
timed through Executable.run; PyTorch's is torch.nn.LSTM forward + backward of sum(y * dy) with
the same weights, inputs and threads. Both sides are checked to agree before timing. Prints a
markdown table of median times and the ratio ours / torch.

--memory also measures the peak memory of one NumPy training step at T=1000, N=32, I=H=256
(tracemalloc counts NumPy's allocations) against what the saved activations need:
T*N*(4H + 2H) float32 values per direction (zState, state and cell).

If OPENBLAS_CORETYPE / OPENBLAS_L2_SIZE are set in the environment they slow current NumPy
builds; the script prints them and the BLAS in use.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "src"))
import mpsgraph as mg  # noqa: E402

SHAPES = [  # (T, N, I, H, bidirectional)
    (50, 32, 128, 128, False),
    (100, 64, 256, 256, False),
    (20, 8, 64, 64, False),
    (50, 8, 128, 128, False),
    (50, 32, 128, 128, True),
]


def build(T, N, I, H, bi):
    D = 2 if bi else 1
    g = mg.Graph()
    shapes = dict(source=[T, N, I], recurrentWeight=[2, 4 * H, H] if bi else [4 * H, H],
                  inputWeight=[D * 4 * H, I], bias=[D * 4 * H], initState=[N, D * H],
                  initCell=[N, D * H], dstate=[T, N, D * H])
    ph = {k: g.placeholder(v, name=k) for k, v in shapes.items()}
    d = mg.LSTMDescriptor(bidirectional=bi, training=True)
    opt = {k: ph[k] for k in ("inputWeight", "bias", "initState", "initCell")}
    state, cell, z = g.LSTM(ph["source"], ph["recurrentWeight"], descriptor=d, **opt)
    grads = g.LSTMGradients(ph["source"], ph["recurrentWeight"], ph["dstate"], z, cell,
                            descriptor=d, **opt)
    exe = g.compile({ph[k]: mg.ShapedType(v) for k, v in shapes.items()}, [state, *grads])
    return exe, shapes


def timeit(fn, repeat, warmup=2):
    for _ in range(warmup):
        fn()
    ts = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts) * 1e3


def bench(T, N, I, H, bi, repeat, torch):
    D = 2 if bi else 1
    rng = np.random.default_rng(0)
    exe, shapes = build(T, N, I, H, bi)
    vals = {k: (rng.standard_normal(v) * (0.1 if k != "dstate" else 1.0)).astype(np.float32)
            for k, v in shapes.items()}
    inputs = [vals[t.operation.name] for t in exe.feedTensors]
    ours = timeit(lambda: exe.run(inputs), repeat)

    m = torch.nn.LSTM(I, H, bidirectional=bi)
    sfx = ["", "_reverse"][:D]
    W, R, b = vals["inputWeight"], vals["recurrentWeight"].reshape(D, 4 * H, H), vals["bias"]
    with torch.no_grad():
        for d, s in enumerate(sfx):
            getattr(m, f"weight_ih_l0{s}").copy_(torch.from_numpy(W[d * 4 * H:(d + 1) * 4 * H]))
            getattr(m, f"weight_hh_l0{s}").copy_(torch.from_numpy(R[d]))
            getattr(m, f"bias_ih_l0{s}").copy_(torch.from_numpy(b[d * 4 * H:(d + 1) * 4 * H]))
            getattr(m, f"bias_hh_l0{s}").zero_()
    x = torch.from_numpy(vals["source"]).requires_grad_()
    h0 = torch.from_numpy(vals["initState"].reshape(N, D, H).transpose(1, 0, 2).copy())
    c0 = torch.from_numpy(vals["initCell"].reshape(N, D, H).transpose(1, 0, 2).copy())
    h0.requires_grad_()
    c0.requires_grad_()
    dy = torch.from_numpy(vals["dstate"])

    def step():
        m.zero_grad(set_to_none=True)
        x.grad = h0.grad = c0.grad = None
        y, _ = m(x, (h0, c0))
        y.backward(dy)
        return y

    y = step()
    res = exe.run(inputs)
    np.testing.assert_allclose(res[0].numpy(), y.detach().numpy(), rtol=1e-3, atol=1e-4)
    np.testing.assert_allclose(res[1].numpy(), x.grad.numpy(), rtol=1e-2, atol=1e-3)
    theirs = timeit(step, repeat)
    return ours, theirs


def peak_memory(T=1000, N=32, I=256, H=256):
    import tracemalloc

    rng = np.random.default_rng(0)
    exe, shapes = build(T, N, I, H, False)
    vals = {k: (rng.standard_normal(v) * 0.1).astype(np.float32) for k, v in shapes.items()}
    inputs = [vals[t.operation.name] for t in exe.feedTensors]
    exe.run(inputs)  # warm
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    out = exe.run(inputs)
    peak = tracemalloc.get_traced_memory()[1] - base
    tracemalloc.stop()
    del out
    saved = T * N * (4 * H + 2 * H) * 4
    return peak, saved


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--repeat", type=int, default=10)
    p.add_argument("--quick", action="store_true", help="only the first shape")
    p.add_argument("--memory", action="store_true", help="also the T=1000 peak-memory check")
    args = p.parse_args()
    import torch

    nthreads = None
    try:
        from threadpoolctl import threadpool_info

        info = [i for i in threadpool_info() if i.get("user_api") == "blas"]
        nthreads = info[0]["num_threads"] if info else None
        blas = ", ".join(f"{i['internal_api']} {i.get('version')} {i.get('architecture')} "
                         f"({i['num_threads']} threads)" for i in info)
    except ImportError:
        blas = "threadpoolctl not installed"
    torch.set_num_threads(nthreads or os.cpu_count() or 1)
    env = {k: os.environ[k] for k in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE") if k in os.environ}
    print(f"numpy {np.__version__} BLAS: {blas}; torch {torch.__version__} "
          f"({torch.get_num_threads()} threads); env {env or 'clean'}\n")
    print("| T | N | I=H | directions | mpsgraph ms | torch ms | ratio (ours/torch) | within 2x |")
    print("|---|---|---|---|---:|---:|---:|---|")
    for T, N, I, H, bi in SHAPES[:1] if args.quick else SHAPES:
        ours, theirs = bench(T, N, I, H, bi, args.repeat, torch)
        r = ours / theirs
        print(f"| {T} | {N} | {H} | {2 if bi else 1} | {ours:.2f} | {theirs:.2f} | {r:.2f} | "
              f"{'yes' if r <= 2 else 'no'} |", flush=True)
    if args.memory:
        peak, saved = peak_memory()
        print(f"\npeak memory of one training step at T=1000, N=32, I=H=256: "
              f"{peak / 2**20:.1f} MiB; saved activations T*N*(4H+2H)*4 B = "
              f"{saved / 2**20:.1f} MiB; ratio {peak / saved:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
