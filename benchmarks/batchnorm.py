"""Benchmark: batch normalization on CUDA, mpsgraph vs torch's batch_norm (cuDNN).

Run (from the repository root)::

    PYTHONPATH=src python3 benchmarks/batchnorm.py               # [64, 256, 28, 28] NCHW, CUDA
    PYTHONPATH=src python3 benchmarks/batchnorm.py --json out.json
    PYTHONPATH=src python3 benchmarks/batchnorm.py --small       # dry run: torch-cpu, tiny

One process, the same float32 data for every contender (x of [N, C, H, W], gamma and beta of
[1, C, 1, 1], an incoming gradient dy of x's shape; epsilon 1e-5; TF32 off). Each measurement
is a warm-up and the median of ``--repeat`` timed runs, timed with CUDA events around the call
and a synchronize at the end (host-inclusive: what a caller from Python sees), or
``time.perf_counter`` with ``--small``.

- ours, forward: an Executable compiled for y = normalize(x, mean(x, [0, 2, 3]),
  variance(x, axes=[0, 2, 3]), gamma, beta) (the batch statistics, as in training);
- ours, forward + backward: the same graph with loss = reductionSum(y * dy) differentiated by
  gradientForPrimaryTensor for x, gamma and beta (so that the gradient reaching y is dy: one
  extra elementwise product over torch's call), the targets [y, dx, dgamma, dbeta]; and
  the same with loss = reductionSum(y) (the gradient reaching y is ones; torch: the
  autograd of y.sum());
- torch: ``torch.nn.functional.batch_norm(x, None, None, gamma, beta, training=True)``, and for
  the backward ``torch.autograd.grad(y, [x, gamma, beta], dy)`` on the same call;
- torch aten: ``native_batch_norm`` + ``native_batch_norm_backward`` called directly (no
  autograd bookkeeping: the floor of an eager torch caller).

Results are checked against torch once before timing. Ratios are peer / ours: > 1 means
mpsgraph is faster (the issue's bar: torch / ours >= 1 / 1.2 = 0.83 for forward + backward).
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


def _timer(cuda: bool, repeat: int, warmup: int):
    def time_ms(fn) -> float:
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
                fn()
                e.record()
                e.synchronize()
                ts.append(s.elapsed_time(e))
            else:
                t0 = time.perf_counter()
                fn()
                ts.append((time.perf_counter() - t0) * 1e3)
        return statistics.median(ts)
    return time_ms


def _graph(shape, training: bool, loss_of_y: bool = False):
    n, c, h, w = shape
    g = mg.Graph()
    x = g.placeholder([n, c, h, w], name="x")
    gamma = g.placeholder([1, c, 1, 1], name="gamma")
    beta = g.placeholder([1, c, 1, 1], name="beta")
    m = g.mean(x, [0, 2, 3])
    v = g.variance(x, axes=[0, 2, 3])
    y = g.normalize(x, m, v, gamma=gamma, beta=beta, epsilon=EPS)
    feeds = [x, gamma, beta]
    targets = [y]
    if training:
        if loss_of_y:  # loss = sum(y): the gradient reaching y is ones (no dy input)
            loss = g.reductionSum(y)
        else:
            dy = g.placeholder([n, c, h, w], name="dy")
            loss = g.reductionSum(g.multiplication(y, dy))
            feeds.append(dy)
        grads = g.gradientForPrimaryTensor(loss, [x, gamma, beta])
        targets += [grads[x], grads[gamma], grads[beta]]
    return g, feeds, targets


def _check(got, want, what):
    for k, (a, b) in enumerate(zip(got, want)):
        a = a.detach().float().cpu().numpy() if hasattr(a, "detach") else np.asarray(a)
        b = b.detach().float().cpu().numpy()
        a = a.reshape(b.shape)
        err = float(np.max(np.abs(a - b))) / max(float(np.max(np.abs(b))), 1e-30)
        if err > 1e-3:
            raise AssertionError(f"{what}: output {k} differs from torch (max rel. {err:.2e})")


def run(shape, device: str, repeat: int, warmup: int) -> dict:
    cuda = device == "cuda"
    tdev = torch.device("cuda" if cuda else "cpu")
    mdev = mg.Device("cuda" if cuda else "torch-cpu")
    torch.backends.cudnn.allow_tf32 = False
    time_ms = _timer(cuda, repeat, warmup)
    gen = torch.Generator().manual_seed(0)
    n, c, h, w = shape
    x = (torch.randn(shape, generator=gen) * 2 + 0.5).to(tdev)
    gamma = torch.rand((1, c, 1, 1), generator=gen).add_(0.5).to(tdev)
    beta = torch.randn((1, c, 1, 1), generator=gen).to(tdev)
    dy = torch.randn(shape, generator=gen).to(tdev)
    g1, w1, b1 = gamma.reshape(c), beta.reshape(c), None
    del b1
    out: dict = {"shape": list(shape), "device": device}

    # ---------------------------------------------------------------- forward
    g, feeds, targets = _graph(shape, training=False)
    exe = g.compile({f: mg.ShapedType(list(t.shape), mg.float32)
                     for f, t in zip(feeds, (x, gamma, beta))}, targets, device=mdev)
    ours_f = lambda: exe.run([x, gamma, beta])  # noqa: E731
    torch_f = lambda: torch.nn.functional.batch_norm(  # noqa: E731
        x, None, None, g1, w1, training=True, eps=EPS)
    aten_f = lambda: torch.ops.aten.native_batch_norm(  # noqa: E731
        x, g1, w1, None, None, True, 0.0, EPS)
    _check([r.array if hasattr(r, "array") else torch.from_dlpack(r) for r in ours_f()],
           [torch_f()], "forward")
    out["forward"] = {"ours": time_ms(ours_f), "torch": time_ms(torch_f),
                      "torch aten": time_ms(aten_f)}

    # ---------------------------------------------------------------- forward + backward
    g, feeds, targets = _graph(shape, training=True)
    exe = g.compile({f: mg.ShapedType(list(t.shape), mg.float32)
                     for f, t in zip(feeds, (x, gamma, beta, dy))}, targets, device=mdev)
    ours_b = lambda: exe.run([x, gamma, beta, dy])  # noqa: E731
    xr = x.detach().clone().requires_grad_(True)
    gr = g1.detach().clone().requires_grad_(True)
    br = w1.detach().clone().requires_grad_(True)

    def torch_b():
        y = torch.nn.functional.batch_norm(xr, None, None, gr, br, training=True, eps=EPS)
        return [y, *torch.autograd.grad(y, [xr, gr, br], dy)]

    def aten_b():
        y, mean, invstd = torch.ops.aten.native_batch_norm(x, g1, w1, None, None, True, 0.0,
                                                           EPS)
        return [y, *torch.ops.aten.native_batch_norm_backward(
            dy, x, g1, None, None, mean, invstd, True, EPS, [True, True, True])]

    got = [torch.from_dlpack(r) for r in ours_b()]
    _check(got, torch_b(), "forward + backward")
    out["forward + backward"] = {"ours": time_ms(ours_b), "torch": time_ms(torch_b),
                                 "torch aten": time_ms(aten_b)}

    # ---------------------------------------------------------------- loss = sum(y)
    g, feeds, targets = _graph(shape, training=True, loss_of_y=True)
    exe = g.compile({f: mg.ShapedType(list(t.shape), mg.float32)
                     for f, t in zip(feeds, (x, gamma, beta))}, targets, device=mdev)
    ours_s = lambda: exe.run([x, gamma, beta])  # noqa: E731
    ones = torch.ones_like(x)

    def torch_s():
        y = torch.nn.functional.batch_norm(xr, None, None, gr, br, training=True, eps=EPS)
        return [y, *torch.autograd.grad(y.sum(), [xr, gr, br])]

    def aten_s():
        y, mean, invstd = torch.ops.aten.native_batch_norm(x, g1, w1, None, None, True, 0.0,
                                                           EPS)
        return [y, *torch.ops.aten.native_batch_norm_backward(
            ones.expand_as(x), x, g1, None, None, mean, invstd, True, EPS, [True, True, True])]

    got, want = [torch.from_dlpack(r) for r in ours_s()], torch_s()
    # (dx and dgamma are ~0 here: sums of rounding errors; y and dbeta are checked)
    _check([got[0], got[3]], [want[0], want[3]], "loss sum(y)")
    out["fwd + bwd, loss sum(y)"] = {"ours": time_ms(ours_s), "torch": time_ms(torch_s),
                                     "torch aten": time_ms(aten_s)}
    return out


def _table(res: dict) -> str:
    lines = [f"batch norm {res['shape']} NCHW float32 on {res['device']} (median ms; "
             "ratio = peer / ours, > 1: mpsgraph faster)", "",
             "| pass | ours ms | torch ms | torch aten ms | torch / ours | aten / ours |",
             "|---|---:|---:|---:|---:|---:|"]
    for k in ("forward", "forward + backward", "fwd + bwd, loss sum(y)"):
        r = res[k]
        lines.append(f"| {k} | {r['ours']:.3f} | {r['torch']:.3f} | {r['torch aten']:.3f} | "
                     f"{r['torch'] / r['ours']:.2f} | {r['torch aten'] / r['ours']:.2f} |")
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--small", action="store_true", help="a CPU dry run (torch-cpu, tiny)")
    ap.add_argument("--repeat", type=int, default=None)
    ap.add_argument("--json", type=str, default=None)
    args = ap.parse_args(argv)
    if args.small:
        shape, device, repeat, warmup = (4, 8, 6, 6), "cpu", args.repeat or 5, 2
    else:
        if not torch.cuda.is_available():
            print("no CUDA device: run with --small for a CPU dry run", file=sys.stderr)
            return 2
        shape, device, repeat, warmup = (64, 256, 28, 28), "cuda", args.repeat or 50, 10
    res = run(shape, device, repeat, warmup)
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
