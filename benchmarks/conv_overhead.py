"""Benchmark: the host time of one convolution call - ours (a one-op Executable) against
torch's own call on the same tiny tensors, where the kernels cost next to nothing.

    PYTHONPATH=src python benchmarks/conv_overhead.py [--device torch-cpu|cuda] [--calls N]

Issue 20's eager target (ours eager faster than cuDNN eager on every sweep row) is missed on
small convolutions by the host work around torch's call: canonical-stride checks, layout
permutes, the path choice and the weight transposes. Each row is a [1, 2, 2, 2] source with
2 -> 2 channels: forward, data gradient and weights gradient, NHWC data with HWIO weights
and NCHW with OIHW, 1x1 and 3x3 (TF_SAME padding). Peer: torch.nn.functional.conv2d (NCHW,
padding "same") and, for the gradients, torch.ops.aten.convolution_backward, called directly.
Times: the best of 5 rounds' median per call, in us (on cuda each call is followed by a
synchronisation, both sides). Ratio = ours / peer.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
import mpsgraph as mg  # noqa: E402

L = mg.TensorNamedDataLayout


def best_median_us(fn, calls: int, sync) -> float:
    for _ in range(min(200, calls)):
        fn()
    rounds = []
    for _ in range(5):
        ts = []
        for _ in range(max(calls // 5, 1)):
            t0 = time.perf_counter_ns()
            fn()
            sync()
            ts.append(time.perf_counter_ns() - t0)
        rounds.append(statistics.median(ts))
    return min(rounds) / 1e3


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--device", default="torch-cpu", choices=("torch-cpu", "cuda"))
    ap.add_argument("--calls", type=int, default=3000)
    args = ap.parse_args()
    tdev = "cpu" if args.device == "torch-cpu" else "cuda"
    if tdev == "cuda" and not torch.cuda.is_available():
        print("no CUDA device", file=sys.stderr)
        return 2
    sync = torch.cuda.synchronize if tdev == "cuda" else (lambda: None)
    torch.set_num_threads(1)
    bwd = torch.ops.aten.convolution_backward.default
    print(f"# convolution call host time: {args.device}, torch {torch.__version__}\n")
    print("| layouts | kernel | op | ours us | torch us | ours / torch |")
    print("|---|---|---|---:|---:|---:|")
    for k in (1, 3):
        for nhwc in (True, False):
            d = mg.Convolution2DOpDescriptor(
                paddingStyle=mg.PaddingStyle.TF_SAME, dataLayout=L.NHWC if nhwc else L.NCHW,
                weightsLayout=L.HWIO if nhwc else L.OIHW)
            xs, ws = [1, 2, 2, 2], ([k, k, 2, 2] if nhwc else [2, 2, k, k])
            g = mg.Graph()
            x = g.placeholder(xs, name="x")
            w = g.placeholder(ws, name="w")
            ops = {"forward": (g.convolution2D(x, w, d), [x, w]),
                   "data gradient": (g.convolution2DDataGradient(x, w, xs, d), [x, w]),
                   "weights gradient": (g.convolution2DWeightsGradient(x, x, ws, d), [x])}
            xt = torch.randn(1, 2, 2, 2, device=tdev)
            wt = torch.randn(2, 2, k, k, device=tdev)
            pad = [k // 2, k // 2]
            peers = {
                "forward": lambda xt=xt, wt=wt: torch.nn.functional.conv2d(xt, wt,
                                                                            padding="same"),
                "data gradient": lambda xt=xt, wt=wt, pad=pad: bwd(
                    xt, xt, wt, None, [1, 1], pad, [1, 1], False, [0, 0], 1,
                    [True, False, False]),
                "weights gradient": lambda xt=xt, wt=wt, pad=pad: bwd(
                    xt, xt, wt, None, [1, 1], pad, [1, 1], False, [0, 0], 1,
                    [False, True, False]),
            }
            for name, (y, phs) in ops.items():
                shapes = {x: xs, w: ws}
                exe = g.compile({p: mg.ShapedType(shapes[p], mg.float32) for p in phs}, [y],
                                device=args.device)
                feeds = [torch.randn(shapes[p], device=tdev) for p in exe.feedTensors]
                ours = best_median_us(lambda exe=exe, feeds=feeds: exe.run(feeds), args.calls,
                                      sync)
                peer = best_median_us(peers[name], args.calls, sync)
                lay = "NHWC / HWIO" if nhwc else "NCHW / OIHW"
                print(f"| {lay} | {k}x{k} | {name} | {ours:.2f} | {peer:.2f} | "
                      f"{ours / peer:.2f} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
