"""Benchmark (issue 21): mpsgraph's torch backend on CUDA against plain PyTorch for

- resizeBilinear [32, 64, 128, 128] float32 NCHW -> [256, 256] (centerResult, PyTorch's
  align_corners=False) and its gradient (resizeBilinear(gradient, input=...)) against
  torch.nn.functional.interpolate and its autograd backward;
- scaledDotProductAttention at (B=8, heads=16, L=2048, d=64) bfloat16 against
  torch.nn.functional.scaled_dot_product_attention.

Run (from the repository root)::

    python benchmarks/resize_sdpa.py            # CUDA, the issue's sizes
    python benchmarks/resize_sdpa.py --small    # a CPU dry run on small sizes (torch-cpu)

Each measurement is the median of --repeat timed runs (default 20) after 3 warm-ups, with
torch.cuda.synchronize() around each run; mpsgraph runs a compiled Executable fed torch
tensors already on the device (no copies), so both sides do the same work. Results are checked
against each other once (float32: 1e-4; bf16: 2e-2), then a table with the ratios
(mpsgraph / torch; the issue's targets: resize 1.2x, SDPA 1.1x) is printed. ONE run.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import mpsgraph as mg  # noqa: E402


def _timeit(fn, repeat, sync):
    for _ in range(3):
        fn()
    sync()
    ts = []
    for _ in range(repeat):
        sync()
        t0 = time.perf_counter()
        fn()
        sync()
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts) * 1e3


def _np(t):
    return t.detach().float().cpu().numpy()


def bench_resize(dev, tdev, shape, out_hw, repeat, sync):
    n, c, h, w = shape
    x = torch.randn(shape, device=tdev)
    dy = torch.randn((n, c) + out_hw, device=tdev)
    g = mg.Graph()
    px = g.placeholder(list(shape), mg.float32, name="x")
    pdy = g.placeholder([n, c, *out_hw], mg.float32, name="dy")
    y = g.resizeBilinear(px, list(out_hw), centerResult=True, alignCorners=False,
                         layout=mg.TensorNamedDataLayout.NCHW)
    gx = g.resizeBilinear(pdy, input=px, centerResult=True, alignCorners=False,
                          layout=mg.TensorNamedDataLayout.NCHW)
    fwd = g.compile({px: mg.ShapedType(list(shape), mg.float32)}, [y], device=dev)
    bwd = g.compile({pdy: mg.ShapedType([n, c, *out_hw], mg.float32),
                     px: mg.ShapedType(list(shape), mg.float32)}, [gx], device=dev)

    def t_fwd():
        return F.interpolate(x, size=out_hw, mode="bilinear", align_corners=False)

    xr = x.detach().requires_grad_()

    def t_bwd():
        out = F.interpolate(xr, size=out_hw, mode="bilinear", align_corners=False)
        return torch.autograd.grad(out, xr, dy)[0]

    ours_f = fwd.run([x])[0]
    ours_b = bwd.run([dy, x])[0]
    np.testing.assert_allclose(np.asarray(ours_f.numpy()), _np(t_fwd()), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(np.asarray(ours_b.numpy()), _np(t_bwd()), rtol=1e-4, atol=1e-3)
    rows = []
    for what, ours, theirs in (("resizeBilinear", lambda: fwd.run([x]), t_fwd),
                               ("resizeBilinear gradient", lambda: bwd.run([dy, x]), t_bwd)):
        a, b = _timeit(ours, repeat, sync), _timeit(theirs, repeat, sync)
        rows.append((what, list(shape), "float32", a, b))
    return rows


def bench_sdpa(dev, tdev, b, heads, length, d, dtype, repeat, sync):
    shp = (b, heads, length, d)
    q, k, v = (torch.randn(shp, device=tdev, dtype=dtype) for _ in range(3))
    g = mg.Graph()
    mdt = mg.bFloat16 if dtype == torch.bfloat16 else mg.float32
    ps = [g.placeholder(list(shp), mdt) for _ in range(3)]
    y = g.scaledDotProductAttention(*ps, scale=1.0 / d ** 0.5)
    exe = g.compile({p: mg.ShapedType(list(shp), mdt) for p in ps}, [y], device=dev)

    def theirs():
        return F.scaled_dot_product_attention(q, k, v, scale=1.0 / d ** 0.5)

    got = exe.run([q, k, v])[0]
    want = theirs()
    np.testing.assert_allclose(np.asarray(got.numpy(), np.float32), _np(want), rtol=2e-2,
                               atol=2e-2)
    a = _timeit(lambda: exe.run([q, k, v]), repeat, sync)
    bt = _timeit(theirs, repeat, sync)
    return [("scaledDotProductAttention", list(shp), str(dtype).replace("torch.", ""), a, bt)]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--small", action="store_true", help="CPU dry run on small sizes")
    ap.add_argument("--repeat", type=int, default=20)
    args = ap.parse_args(argv)
    if args.small:
        dev, tdev = mg.Device("torch-cpu"), torch.device("cpu")
        rshape, out_hw, sd = (2, 4, 16, 16), (32, 32), (2, 2, 64, 16, torch.float32)

        def sync():
            return None
    else:
        if not torch.cuda.is_available():
            sys.exit("no CUDA device: use --small for a CPU dry run")
        dev, tdev = mg.Device("cuda"), torch.device("cuda")
        rshape, out_hw, sd = (32, 64, 128, 128), (256, 256), (8, 16, 2048, 64, torch.bfloat16)
        sync = torch.cuda.synchronize
        print(f"# {torch.cuda.get_device_name()} torch {torch.__version__}")
    rows = bench_resize(dev, tdev, rshape, out_hw, args.repeat, sync)
    rows += bench_sdpa(dev, tdev, *sd, args.repeat, sync)
    print("| op | shape | dtype | mpsgraph ms | torch ms | ratio |")
    print("|---|---|---|---|---|---|")
    for what, shp, dt, a, b in rows:
        print(f"| {what} | {shp} | {dt} | {a:.3f} | {b:.3f} | {a / b:.2f}x |")


if __name__ == "__main__":
    main()
