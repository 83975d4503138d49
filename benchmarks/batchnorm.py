"""Benchmark: batch normalization in training on CUDA, mpsgraph vs torch's batch_norm.

Run (from the repository root)::

    PYTHONPATH=src python3 benchmarks/batchnorm.py               # [64, 256, 28, 28] NCHW, CUDA
    PYTHONPATH=src python3 benchmarks/batchnorm.py --nhwc        # the same batch as NHWC
    PYTHONPATH=src python3 benchmarks/batchnorm.py --profile     # + each plan's CUDA kernels
    PYTHONPATH=src python3 benchmarks/batchnorm.py --json out.json
    PYTHONPATH=src python3 benchmarks/batchnorm.py --cpu-smoke   # dry run: torch-cpu, tiny

One process, the same float32 data for every contender (x of [N, C, H, W], gamma and beta of
[1, C, 1, 1], an incoming gradient dy of x's shape; epsilon 1e-5; TF32 off; with --nhwc x is
[N, H, W, C], gamma and beta [1, 1, 1, C], the axes (0, 1, 2), and torch gets the same memory
as a channels_last NCHW tensor).

The graph (ours): y = normalize(x, m, variance(x, mean: m, axes: A), gamma, beta) with
m = mean(x, A), A = (0, 2, 3) (the batch statistics, as in training); for the backward
loss = reductionSum(y * dy) differentiated by gradientForPrimaryTensor for x, gamma and beta
(the gradient reaching y is then dy itself), targets [y, dx, dgamma, dbeta]. The compiled
plan is printed: mean + variance are one step (runtime/plan_fusion.py), normalize one, the
whole backward one (normalizationGradients).

Timings (median ms of --repeat samples):

- ``ours graph``: device-only, `Executable.captured_graph(inputs)` replayed (10 replays per
  sample between two CUDA events);
- ``ours run``: `Executable.run` (host-inclusive: CUDA events around the call, then a
  synchronize; what a Python caller sees, results copied out of the graph's buffers);
- ``torch eager``: ``torch.nn.functional.batch_norm(x, None, None, gamma, beta,
  training=True)``, and for the backward ``torch.autograd.grad(y, [x, gamma, beta], dy)``
  (cuDNN where torch picks it), host-inclusive like ``ours run``;
- ``torch graph``: the same torch calls captured in one ``torch.cuda.CUDAGraph`` and replayed
  (device-only, like ``ours graph``).

Ratios are ours / torch: the issue's bar is ``ours graph / torch graph <= 1.2`` for the
forward + backward. Results are checked against torch once before timing. ``--cpu-smoke``
runs the same code on torch-cpu and the NumPy backend with a tiny batch (perf_counter timings,
no graph columns): for checking the script, not for numbers.
"""

from __future__ import annotations

import argparse
import json
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

EPS = 1e-5
GRAPH_BATCH = 10  # graph replays per timed sample


def _median_ms(fn, cuda: bool, repeat: int, warmup: int, batch: int = 1) -> float:
    for _ in range(warmup):
        fn()
    if cuda:
        torch.cuda.synchronize()
    ts = []
    for _ in range(repeat):
        if cuda:
            s = torch.cuda.Event(enable_timing=True)
            e = torch.cuda.Event(enable_timing=True)
            s.record()
            for _ in range(batch):
                fn()
            e.record()
            e.synchronize()
            ts.append(s.elapsed_time(e) / batch)
        else:
            t0 = time.perf_counter()
            for _ in range(batch):
                fn()
            ts.append((time.perf_counter() - t0) * 1e3 / batch)
    return statistics.median(ts)


def _graph(shape, axes, cshape, training: bool):
    g = mg.Graph()
    x = g.placeholder(list(shape), name="x")
    gamma = g.placeholder(cshape, name="gamma")
    beta = g.placeholder(cshape, name="beta")
    m = g.mean(x, axes)
    v = g.variance(x, mean=m, axes=axes)
    y = g.normalize(x, m, v, gamma=gamma, beta=beta, epsilon=EPS)
    feeds, targets = [x, gamma, beta], [y]
    if training:
        dy = g.placeholder(list(shape), name="dy")
        loss = g.reductionSum(g.multiplication(y, dy))
        grads = g.gradientForPrimaryTensor(loss, [x, gamma, beta])
        targets += [grads[x], grads[gamma], grads[beta]]
        feeds.append(dy)
    return g, feeds, targets


def _check(got, want, what):
    for k, (a, b) in enumerate(zip(got, want)):
        a = np.asarray(a.numpy() if hasattr(a, "numpy") and not hasattr(a, "detach") else
                       a.detach().float().cpu().numpy())
        b = b.detach().float().cpu().numpy()
        a = a.reshape(b.shape) if a.size == b.size else a
        err = float(np.max(np.abs(a - b))) / max(float(np.max(np.abs(b))), 1e-30)
        if err > 1e-3:
            raise AssertionError(f"{what}: output {k} differs from torch (max rel. {err:.2e})")


def _capture(fn):
    """fn captured in a torch.cuda.CUDAGraph (after a warm-up on a side stream)."""
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            fn()
    torch.cuda.current_stream().wait_stream(s)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        fn()
    torch.cuda.synchronize()
    return graph


def _plan(exe) -> str:
    return " -> ".join(st.kind + (f"[{'+'.join(o.kind for o in st.fused)}]" if st.fused else "")
                       for st in exe._steps)


def _profile(fn, label: str) -> None:
    try:
        _profile_kernels(fn, label)
    except Exception as e:  # noqa: BLE001 - diagnostics only: never lose the timings
        print(f"\n{label}: profiling failed ({type(e).__name__}: {e})")


def _profile_kernels(fn, label: str) -> None:
    from torch.profiler import ProfilerActivity, profile

    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(10):
            fn()
        torch.cuda.synchronize()
    print(f"\n{label}: CUDA kernels (device us per call, 10 calls)")
    rows = [(e.key, e.device_time_total / 10, e.count // 10) for e in prof.key_averages()
            if e.device_time_total > 0]
    for key, us, cnt in sorted(rows, key=lambda r: -r[1]):
        print(f"  {us:9.1f} us  x{cnt}  {key[:110]}")
    print(f"  {sum(r[1] for r in rows):9.1f} us  total")


def run(shape, nhwc: bool, device: str, repeat: int, warmup: int, profile: bool) -> dict:
    cuda = device == "cuda"
    tdev = torch.device("cuda" if cuda else "cpu")
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False
    gen = torch.Generator().manual_seed(0)
    n, c, h, w = shape
    # torch's view: NCHW (channels_last memory for --nhwc); ours: x as laid out in memory
    xt = (torch.randn((n, c, h, w), generator=gen) * 2 + 0.5)
    dyt = torch.randn((n, c, h, w), generator=gen)
    gamma = torch.rand(c, generator=gen).add_(0.5)
    beta = torch.randn(c, generator=gen)
    if nhwc:
        xo, dyo = (t.permute(0, 2, 3, 1).contiguous() for t in (xt, dyt))
        xt, dyt = (t.permute(0, 3, 1, 2) for t in (xo, dyo))  # channels_last views
        axes, cshape = [0, 1, 2], [1, 1, 1, c]
    else:
        xo, dyo = xt, dyt
        axes, cshape = [0, 2, 3], [1, c, 1, 1]
    xo, dyo, xt, dyt = (t.to(tdev) for t in (xo, dyo, xt, dyt))
    gamma, beta = gamma.to(tdev), beta.to(tdev)
    go, bo = gamma.reshape(cshape), beta.reshape(cshape)
    res: dict = {"shape": list(xo.shape), "layout": "NHWC" if nhwc else "NCHW",
                 "device": device, "plans": {}}
    devices = ["cuda"] if cuda else ["torch-cpu", "cpu"]
    time_ms = lambda fn, batch=1: _median_ms(fn, cuda, repeat, warmup, batch)  # noqa: E731

    xr = xt.detach().clone().requires_grad_(True)
    gr = gamma.detach().clone().requires_grad_(True)
    br = beta.detach().clone().requires_grad_(True)

    def torch_f():
        return [torch.nn.functional.batch_norm(xt, None, None, gamma, beta, training=True,
                                               eps=EPS)]

    aten = torch.ops.aten

    def torch_b():  # batch_norm forward + backward: the kernels autograd runs, without it
        # (so it captures in a CUDA graph: autograd's stream sync with the incoming gradient
        # is refused during capture)
        y, m, inv = aten.native_batch_norm(xr, gr, br, None, None, True, 0.0, EPS)[:3]
        return [y, *aten.native_batch_norm_backward(dyt, xr, gr, None, None, m, inv, True, EPS,
                                                    [True, True, True])]

    def as_ours(ts):  # torch results in our layout, for the check
        return [t.permute(0, 2, 3, 1) if nhwc and t.dim() == 4 else t for t in ts]

    for what, training, torch_fn in (("forward", False, torch_f),
                                     ("forward + backward", True, torch_b)):
        g, feeds, targets = _graph(list(xo.shape), axes, cshape, training)
        inputs = [xo, go, bo] + ([dyo] if training else [])
        r: dict = {}
        want = as_ours(torch_fn())
        for dev in devices:
            mdev = mg.Device(dev)
            ins = inputs if dev != "cpu" else [t.cpu().numpy() for t in inputs]
            exe = g.compile({f: mg.ShapedType(list(t.shape), mg.float32)
                             for f, t in zip(feeds, inputs)}, targets, device=mdev)
            res["plans"][f"{what} ({dev})"] = _plan(exe)
            _check(exe.run(ins), want, f"{what} ({dev})")
            tag = "ours run" if dev != "cpu" else "ours run (NumPy)"
            r[tag] = time_ms(lambda e=exe, i=ins: e.run(i))
            if cuda:
                cg = exe.captured_graph(ins)
                r["ours graph"] = time_ms(cg.replay, GRAPH_BATCH)
                if profile:
                    _profile(cg.replay, f"ours graph, {what}")
        r["torch eager"] = time_ms(torch_fn)
        if cuda:
            tg = _capture(torch_fn)
            r["torch graph"] = time_ms(tg.replay, GRAPH_BATCH)
            if profile:
                _profile(tg.replay, f"torch graph, {what}")
        res[what] = r
    return res


def _table(res: dict) -> str:
    cuda = res["device"] == "cuda"
    lines = [f"batch norm (training) {res['shape']} {res['layout']} float32 on {res['device']}"
             " (median ms; ratio = ours / torch: <= 1.2 is the bar for graph fwd+bwd)", ""]
    for k, v in res["plans"].items():
        lines.append(f"plan, {k}: {v}")
    lines.append("")
    if cuda:
        lines += ["| pass | ours graph | torch graph | ours / torch (graph) | ours run | "
                  "torch eager | ours run / torch eager |", "|---|---:|---:|---:|---:|---:|---:|"]
        for k in ("forward", "forward + backward"):
            r = res[k]
            lines.append(f"| {k} | {r['ours graph']:.4f} | {r['torch graph']:.4f} | "
                         f"{r['ours graph'] / r['torch graph']:.2f} | {r['ours run']:.4f} | "
                         f"{r['torch eager']:.4f} | {r['ours run'] / r['torch eager']:.2f} |")
    else:
        lines += ["| pass | ours run (torch-cpu) | ours run (NumPy) | torch eager | "
                  "torch-cpu / torch |", "|---|---:|---:|---:|---:|"]
        for k in ("forward", "forward + backward"):
            r = res[k]
            lines.append(f"| {k} | {r['ours run']:.4f} | {r['ours run (NumPy)']:.4f} | "
                         f"{r['torch eager']:.4f} | {r['ours run'] / r['torch eager']:.2f} |")
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cpu-smoke", action="store_true",
                    help="a dry run on torch-cpu and NumPy with a tiny batch (no GPU)")
    ap.add_argument("--nhwc", action="store_true", help="x as NHWC, axes (0, 1, 2)")
    ap.add_argument("--profile", action="store_true", help="print each graph's CUDA kernels")
    ap.add_argument("--repeat", type=int, default=None)
    ap.add_argument("--json", type=str, default=None)
    args = ap.parse_args(argv)
    if args.cpu_smoke:
        shape, device, repeat, warmup = (4, 8, 6, 6), "cpu", args.repeat or 5, 2
    else:
        if not torch.cuda.is_available():
            print("no CUDA device: run with --cpu-smoke for a CPU dry run", file=sys.stderr)
            return 2
        shape, device, repeat, warmup = (64, 256, 28, 28), "cuda", args.repeat or 50, 10
    if device == "cpu":
        torch.set_num_threads(1)  # a shared CPU: steadier smoke numbers
    res = run(shape, args.nhwc, device, repeat, warmup, args.profile and device == "cuda")
    res["torch"] = torch.__version__
    res["python"] = platform.python_version()
    if device == "cuda":
        res["gpu"] = torch.cuda.get_device_name()
    print(_table(res))
    if args.json:
        Path(args.json).write_text(json.dumps(res, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
