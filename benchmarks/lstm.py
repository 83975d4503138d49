"""Benchmark: an LSTM / GRU / single-gate RNN training step on mpsgraph's NumPy backend vs
PyTorch CPU, same data.

    python benchmarks/lstm.py [--repeat 10] [--quick] [--memory]
                              [--cell lstm|gru|rnn|rnn_relu|all]

GRU / RNN rows (issue 19): GRU(training=True) with the torch.nn.GRU conventions
(resetGateFirst, resetAfter, secondaryBias; SPEC 4.2) followed by GRUGradients (every
gradient), against torch.nn.GRU forward + backward; singleGateRNN(tanh; relu for the
rnn_relu rows) + singleGateRNNGradients against torch.nn.RNN (nonlinearity tanh / relu).
Target for those rows: within 1.5x of torch.

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


GATES = {"lstm": 4, "gru": 3, "rnn": 1, "rnn_relu": 1}


def build(T, N, I, H, bi, cell="lstm"):
    D = 2 if bi else 1
    G = GATES[cell] * H
    g = mg.Graph()
    shapes = dict(source=[T, N, I], recurrentWeight=[2, G, H] if bi else [G, H],
                  inputWeight=[D * G, I], bias=[D * G], initState=[N, D * H],
                  dstate=[T, N, D * H])
    if cell == "lstm":
        shapes["initCell"] = [N, D * H]
    if cell == "gru":
        shapes["secondaryBias"] = [D * H]
    ph = {k: g.placeholder(v, name=k) for k, v in shapes.items()}
    opt = {k: ph[k] for k in ("inputWeight", "bias", "initState", "initCell", "secondaryBias")
           if k in ph}
    if cell == "lstm":
        d = mg.LSTMDescriptor(bidirectional=bi, training=True)
        state, cell_, z = g.LSTM(ph["source"], ph["recurrentWeight"], descriptor=d, **opt)
        grads = g.LSTMGradients(ph["source"], ph["recurrentWeight"], ph["dstate"], z, cell_,
                                descriptor=d, **opt)
    elif cell == "gru":
        d = mg.GRUDescriptor(bidirectional=bi, training=True, resetGateFirst=True,
                             resetAfter=True)
        state, z = g.GRU(ph["source"], ph["recurrentWeight"], descriptor=d, **opt)
        grads = g.GRUGradients(ph["source"], ph["recurrentWeight"], ph["dstate"], z, state,
                               descriptor=d, **opt)
    else:
        act = mg.RNNActivation.relu if cell == "rnn_relu" else mg.RNNActivation.tanh
        d = mg.SingleGateRNNDescriptor(bidirectional=bi, training=True, activation=act)
        state, z = g.singleGateRNN(ph["source"], ph["recurrentWeight"], descriptor=d, **opt)
        grads = g.singleGateRNNGradients(ph["source"], ph["recurrentWeight"], ph["dstate"], z,
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


def bench(T, N, I, H, bi, repeat, torch, cell="lstm"):
    D = 2 if bi else 1
    G = GATES[cell] * H
    rng = np.random.default_rng(0)
    exe, shapes = build(T, N, I, H, bi, cell)
    vals = {k: (rng.standard_normal(v) * (0.1 if k != "dstate" else 1.0)).astype(np.float32)
            for k, v in shapes.items()}
    if cell in ("rnn", "rnn_relu"):  # std 0.5/sqrt(H): a contracting recurrence (with std
        # 0.1 at H=256 the tanh one is chaotic: float32 runs of torch and ours both leave
        # float64 by 0.3% in dx)
        vals["recurrentWeight"] *= np.float32(5.0 / np.sqrt(H))
    inputs = [vals[t.operation.name] for t in exe.feedTensors]
    ours = timeit(lambda: exe.run(inputs), repeat)

    if cell == "rnn_relu":
        m = torch.nn.RNN(I, H, nonlinearity="relu", bidirectional=bi)
    else:
        cls = {"lstm": torch.nn.LSTM, "gru": torch.nn.GRU, "rnn": torch.nn.RNN}[cell]
        m = cls(I, H, bidirectional=bi)
    sfx = ["", "_reverse"][:D]
    W, R, b = vals["inputWeight"], vals["recurrentWeight"].reshape(D, G, H), vals["bias"]
    with torch.no_grad():
        for d, s in enumerate(sfx):
            getattr(m, f"weight_ih_l0{s}").copy_(torch.from_numpy(W[d * G:(d + 1) * G]))
            getattr(m, f"weight_hh_l0{s}").copy_(torch.from_numpy(R[d]))
            getattr(m, f"bias_ih_l0{s}").copy_(torch.from_numpy(b[d * G:(d + 1) * G]))
            bhh = getattr(m, f"bias_hh_l0{s}")
            bhh.zero_()
            if cell == "gru":  # b_hn = secondaryBias (SPEC 4.2)
                bhh[2 * H:] = torch.from_numpy(vals["secondaryBias"][d * H:(d + 1) * H])
    x = torch.from_numpy(vals["source"]).requires_grad_()
    h0 = torch.from_numpy(vals["initState"].reshape(N, D, H).transpose(1, 0, 2).copy())
    h0.requires_grad_()
    state0 = h0
    if cell == "lstm":
        c0 = torch.from_numpy(vals["initCell"].reshape(N, D, H).transpose(1, 0, 2).copy())
        c0.requires_grad_()
        state0 = (h0, c0)
    dy = torch.from_numpy(vals["dstate"])

    def step():
        m.zero_grad(set_to_none=True)
        x.grad = h0.grad = None
        y, _ = m(x, state0)
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
    p.add_argument("--cell", choices=("lstm", "gru", "rnn", "rnn_relu", "all"), default="all",
                   help="which recurrent op (default all)")
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
    print("| op | T | N | I=H | directions | mpsgraph ms | torch ms | ratio (ours/torch) | "
          "target | met |")
    print("|---|---|---|---|---|---:|---:|---:|---|---|")
    cells = ("lstm", "gru", "rnn", "rnn_relu") if args.cell == "all" else (args.cell,)
    for cell in cells:
        target = 2.0 if cell == "lstm" else 1.5
        for T, N, I, H, bi in SHAPES[:1] if args.quick else SHAPES:
            ours, theirs = bench(T, N, I, H, bi, args.repeat, torch, cell)
            r = ours / theirs
            print(f"| {cell.upper()} | {T} | {N} | {H} | {2 if bi else 1} | {ours:.2f} | "
                  f"{theirs:.2f} | {r:.2f} | {target:g}x | {'yes' if r <= target else 'no'} |",
                  flush=True)
    if args.memory:
        peak, saved = peak_memory()
        print(f"\npeak memory of one training step at T=1000, N=32, I=H=256: "
              f"{peak / 2**20:.1f} MiB; saved activations T*N*(4H+2H)*4 B = "
              f"{saved / 2**20:.1f} MiB; ratio {peak / saved:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
