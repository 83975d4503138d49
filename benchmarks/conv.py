"""Benchmark: mpsgraph's default CPU device vs PyTorch CPU on 2D convolution and its gradients.

Run (from the repository root)::

    python benchmarks/conv.py                 # all shapes, NCHW and NHWC, 10 timed runs each
    python benchmarks/conv.py --quick         # one shape only
    python benchmarks/conv.py --shape 3 -r 5  # shape number 3 (0-based) only, 5 timed runs
    python benchmarks/conv.py --repeat 20     # more timed runs per measurement
    python benchmarks/conv.py --repeat 40 --numpy-repeat 5 --stat min   # on a busy machine
    python benchmarks/conv.py --torch-only    # only the PyTorch half (no mpsgraph needed)

For every case (shape x layout) it times three ops on the same float32 data, in one process:
``convolution2D`` (forward), ``convolution2DDataGradient`` and
``convolution2DWeightsGradient`` against ``torch.nn.functional.conv2d``,
``torch.nn.grad.conv2d_input`` and ``torch.nn.grad.conv2d_weight``. mpsgraph runs twice, on the
same compiled executable of the default ``cpu`` device (the NumPy backend): once NumPy-only
(``MPSGRAPH_CPU_ACCEL=0``, what an install without PyTorch runs) and once as the default device
runs when PyTorch is installed (its convolutions on oneDNN through
``backends/numpy/conv_accel.py``). Inputs are prepared outside the timed region, and both sides
read the same memory (NHWC rows: mpsgraph gets the NHWC arrays with an NHWC/HWIO descriptor,
torch the same buffers as ``channels_last`` tensors, and channels-last weights). Each
measurement is the median of ``--repeat`` (10 by default) ``time.perf_counter`` runs after
warm-up (``--stat min`` reports the fastest run instead: the steadier figure on a busy
machine); the NumPy-only runs come first, on their own, then the default device and torch take
turns run by run (so that load from other processes falls on both alike). Once per case every
result is compared with torch's (``np.testing.assert_allclose`` at float32 tolerance, and torch
against a float64 torch run) so that the comparison is honest.

Output: a markdown table with shape, layout, op, NumPy-only ms, default-device ms, torch ms, the
two ratios (ours/torch) and, for the two gradient ops, whether the default device is within
1.5x of torch.

Environment notes: ``OPENBLAS_CORETYPE`` / ``OPENBLAS_L2_SIZE``, if set in the environment,
can force a slower OpenBLAS kernel and slow numpy down (the script warns when they are set).
The header prints numpy's BLAS (``threadpoolctl`` if installed, else ``np.show_config()``) and
torch's version and thread count. torch is limited to numpy's BLAS thread count (or
``--threads``) so both sides use the same number of cores.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import time
from pathlib import Path

import numpy as np

# (N, C, H, W, O, k, stride, groups); padding = k // 2 on every side (explicit).
SHAPES = [
    (8, 64, 28, 28, 64, 3, 1, 1),
    (8, 128, 14, 14, 128, 3, 1, 1),
    (8, 64, 28, 28, 128, 1, 1, 1),
    (8, 64, 28, 28, 64, 3, 2, 1),
    (8, 64, 28, 28, 64, 3, 1, 64),
    # issue 20: realistic CNN layers
    (8, 3, 112, 112, 64, 7, 2, 1),  # ResNet stem, 7x7 stride 2 (input at half resolution)
    (1, 64, 56, 56, 64, 3, 1, 1),  # ResNet stage 1 3x3, batch 1
    (8, 256, 14, 14, 64, 1, 1, 1),  # ResNet bottleneck 1x1 reduce
    (8, 256, 28, 28, 512, 1, 2, 1),  # ResNet downsample shortcut, 1x1 stride 2
    (4, 512, 7, 7, 512, 3, 1, 1),  # ResNet stage 4 3x3
    (8, 128, 28, 28, 128, 3, 1, 32),  # ResNeXt grouped 3x3 (32 groups of 4)
    (8, 32, 28, 28, 64, 5, 1, 1),  # 5x5 dense (Inception-style)
    (8, 144, 28, 28, 144, 3, 2, 144),  # MobileNetV2 depthwise, stride 2
    (8, 192, 14, 14, 192, 3, 1, 192),  # MobileNetV2 depthwise 3x3
    (8, 240, 14, 14, 240, 5, 1, 240),  # EfficientNet / MnasNet depthwise 5x5
]
LAYOUTS = ("NCHW", "NHWC")
OPS = ("forward", "data_grad", "weights_grad")
WITHIN = 1.5  # the target of issue 20 for both gradient ops
RTOL = 1e-4  # float32 accumulation over a few thousand terms; atol is scaled by max |ref|
ATOL_REL = 1e-4


# ------------------------------------------------------------------------------------------
# Environment report


def _blas_info() -> tuple[list[str], int | None]:
    """Lines describing numpy's BLAS, and its thread count when known."""
    try:
        import threadpoolctl
    except ImportError:
        threadpoolctl = None
    if threadpoolctl is not None:
        infos = [i for i in threadpoolctl.threadpool_info() if i.get("user_api") == "blas"]
        if infos:
            lines = [f"{i.get('internal_api')} {i.get('version')} "
                     f"({i.get('architecture', '?')}), {i.get('num_threads')} threads, "
                     f"{i.get('filepath')}" for i in infos]
            return lines, infos[0].get("num_threads")
        return ["threadpoolctl found no BLAS loaded by numpy"], None
    print("numpy BLAS (np.show_config(); install threadpoolctl for a shorter report):")
    np.show_config()
    return [], None


def _print_header(torch, threads: int, blas_lines: list[str]) -> None:
    print(f"python {platform.python_version()} on {platform.machine()}, "
          f"{os.cpu_count()} CPUs ({platform.processor() or 'cpu model unknown'})")
    if hasattr(os, "getloadavg"):  # other work on the machine skews every timing
        print("load average: " + ", ".join(f"{v:.2f}" for v in os.getloadavg()))
    print(f"numpy {np.__version__}")
    for line in blas_lines:
        print(f"  BLAS: {line}")
    for var in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE"):
        if os.environ.get(var):
            print(f"  WARNING: {var}={os.environ[var]} is set; it can slow numpy's BLAS down")
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        if os.environ.get(var):
            print(f"  {var}={os.environ[var]}")
    mkldnn = torch.backends.mkldnn.is_available()
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads "
          f"(requested {threads}), mkldnn {'on' if mkldnn else 'off'}")
    print()


# ------------------------------------------------------------------------------------------
# Helpers


def median_ms(fns, repeat: int, warmup: int, stat=statistics.median) -> list[float]:
    """`stat` (median, or min) ms of each callable; the callables take turns within every
    round."""
    for fn in fns:
        for _ in range(warmup):
            fn()
    times: list[list[float]] = [[] for _ in fns]
    for _ in range(repeat):
        for fn, ts in zip(fns, times):
            t0 = time.perf_counter()
            fn()
            ts.append(time.perf_counter() - t0)
    return [stat(ts) * 1e3 for ts in times]


def with_accel(run, on: bool):
    """`run` with the NumPy backend's accelerator forced off (`on` False) or left to default."""
    def call():
        old = os.environ.get("MPSGRAPH_CPU_ACCEL")
        os.environ["MPSGRAPH_CPU_ACCEL"] = "1" if on else "0"
        try:
            return run()
        finally:
            if old is None:
                del os.environ["MPSGRAPH_CPU_ACCEL"]
            else:
                os.environ["MPSGRAPH_CPU_ACCEL"] = old
    return call


def _check(name: str, got, ref) -> None:
    got = np.asarray(got, dtype=np.float64)
    ref = np.asarray(ref, dtype=np.float64)
    if got.shape != ref.shape:
        raise AssertionError(f"{name}: shape {got.shape} != {ref.shape}")
    scale = float(np.max(np.abs(ref))) if ref.size else 1.0
    np.testing.assert_allclose(got, ref, rtol=RTOL, atol=ATOL_REL * max(scale, 1.0),
                               err_msg=name)


def _to_layout_data(a_nchw: np.ndarray, layout: str) -> np.ndarray:
    return np.ascontiguousarray(a_nchw.transpose(0, 2, 3, 1) if layout == "NHWC" else a_nchw)


def _to_layout_weights(w_oihw: np.ndarray, layout: str) -> np.ndarray:
    # NHWC rows use HWIO weights, NCHW rows OIHW (SPEC 2.3)
    return np.ascontiguousarray(w_oihw.transpose(2, 3, 1, 0) if layout == "NHWC" else w_oihw)


class Case:
    """Data of one (shape, layout) row group, prepared outside the timed region."""

    def __init__(self, shape, layout: str, seed: int = 0):
        n, c, h, w, o, k, s, g = shape
        self.shape, self.layout = shape, layout
        self.n, self.c, self.h, self.w, self.o, self.k, self.s, self.g = shape
        self.p = k // 2
        self.ho = (h + 2 * self.p - k) // s + 1
        self.wo = (w + 2 * self.p - k) // s + 1
        rng = np.random.default_rng(seed)
        self.x = rng.standard_normal((n, c, h, w), dtype=np.float32)
        self.wt = rng.standard_normal((o, c // g, k, k), dtype=np.float32)
        self.wt /= np.float32(np.sqrt(c // g * k * k))
        self.dy = rng.standard_normal((n, o, self.ho, self.wo), dtype=np.float32)
        # the arrays in the user-visible layout (what mpsgraph receives)
        self.x_l = _to_layout_data(self.x, layout)
        self.w_l = _to_layout_weights(self.wt, layout)
        self.dy_l = _to_layout_data(self.dy, layout)

    def label(self) -> str:
        return (f"{self.n}x{self.c}x{self.h}x{self.w} -> {self.o}, k{self.k} s{self.s} "
                f"g{self.g}")


# ------------------------------------------------------------------------------------------
# torch side


class TorchSide:
    def __init__(self, torch, case: Case):
        self.torch = torch
        self.case = case
        mf = torch.channels_last if case.layout == "NHWC" else torch.contiguous_format
        # data and incoming gradient: the very memory mpsgraph is fed (an NHWC array is a
        # channels-last tensor), so both sides read the same buffers (alignment included)
        self.x = torch.from_numpy(case.x_l)
        self.dy = torch.from_numpy(case.dy_l)
        if case.layout == "NHWC":
            self.x, self.dy = self.x.permute(0, 3, 1, 2), self.dy.permute(0, 3, 1, 2)
        self.w = torch.from_numpy(case.wt).contiguous(memory_format=mf)
        self.args = dict(stride=case.s, padding=case.p, dilation=1, groups=case.g)

    def fn(self, op: str, dtype=None):
        torch = self.torch
        x, w, dy = self.x, self.w, self.dy
        if dtype is not None:
            x, w, dy = x.to(dtype), w.to(dtype), dy.to(dtype)
        a = self.args
        if op == "forward":
            def run():
                with torch.no_grad():
                    return torch.nn.functional.conv2d(x, w, None, a["stride"], a["padding"],
                                                      a["dilation"], a["groups"])
        elif op == "data_grad":
            def run():
                with torch.no_grad():
                    return torch.nn.grad.conv2d_input(x.shape, w, dy, **a)
        else:
            def run():
                with torch.no_grad():
                    return torch.nn.grad.conv2d_weight(x, w.shape, dy, **a)
        return run

    def result_in_layout(self, op: str, t) -> np.ndarray:
        """Torch results are NCHW/OIHW logically; return them in the case's layout."""
        if self.case.layout == "NHWC":
            t = t.permute(2, 3, 1, 0) if op == "weights_grad" else t.permute(0, 2, 3, 1)
        return t.contiguous().numpy()


# ------------------------------------------------------------------------------------------
# mpsgraph side


def import_mpsgraph():
    try:
        import mpsgraph as mg
    except ImportError:
        sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
        import mpsgraph as mg
    return mg


def build_mpsgraph(mg, case: Case, op: str):
    """Compile one executable for ``op``; return ``(run, inputs)``."""
    nhwc = case.layout == "NHWC"
    TL = mg.TensorNamedDataLayout
    d = mg.Convolution2DOpDescriptor(
        strideInX=case.s, strideInY=case.s, dilationRateInX=1, dilationRateInY=1,
        groups=case.g, paddingLeft=case.p, paddingRight=case.p, paddingTop=case.p,
        paddingBottom=case.p, paddingStyle=mg.PaddingStyle.explicit,
        dataLayout=TL.NHWC if nhwc else TL.NCHW, weightsLayout=TL.HWIO if nhwc else TL.OIHW)
    g = mg.Graph()

    def ph(arr, name):
        return g.placeholder(shape=list(arr.shape), dataType=mg.float32, name=name)

    if op == "forward":
        x, w = ph(case.x_l, "x"), ph(case.w_l, "w")
        y = g.convolution2D(x, weights=w, descriptor=d, name="y")
        feeds = {x: mg.ShapedType(list(case.x_l.shape), mg.float32),
                 w: mg.ShapedType(list(case.w_l.shape), mg.float32)}
        inputs = [case.x_l, case.w_l]
    elif op == "data_grad":
        dy, w = ph(case.dy_l, "dy"), ph(case.w_l, "w")
        y = g.convolution2DDataGradient(dy, weights=w, outputShape=list(case.x_l.shape),
                                        forwardConvolutionDescriptor=d, name="dx")
        feeds = {dy: mg.ShapedType(list(case.dy_l.shape), mg.float32),
                 w: mg.ShapedType(list(case.w_l.shape), mg.float32)}
        inputs = [case.dy_l, case.w_l]
    else:
        dy, x = ph(case.dy_l, "dy"), ph(case.x_l, "x")
        y = g.convolution2DWeightsGradient(dy, source=x, outputShape=list(case.w_l.shape),
                                           forwardConvolutionDescriptor=d, name="dw")
        feeds = {dy: mg.ShapedType(list(case.dy_l.shape), mg.float32),
                 x: mg.ShapedType(list(case.x_l.shape), mg.float32)}
        inputs = [case.dy_l, case.x_l]
    exe = g.compile(feeds=feeds, targetTensors=[y], device=mg.Device("cpu"))
    return (lambda: exe.run(inputs)), inputs


# ------------------------------------------------------------------------------------------


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("-r", "--repeat", type=int, default=10,
                    help="timed runs per measurement (10)")
    ap.add_argument("--numpy-repeat", type=int, default=None,
                    help="timed runs of the NumPy-only path (default: --repeat)")
    ap.add_argument("--warmup", type=int, default=2, help="untimed runs first (2)")
    ap.add_argument("--quick", action="store_true", help="only the first shape")
    ap.add_argument("--shape", type=int, action="append",
                    help="only this shape (0-based index into SHAPES; repeatable)")
    ap.add_argument("--stat", choices=("median", "min"), default="median",
                    help="which statistic of the timed runs is reported (median); min is the "
                         "steadier one on a machine shared with other work")
    ap.add_argument("--torch-only", action="store_true", help="skip mpsgraph (torch half only)")
    ap.add_argument("--threads", type=int, default=None,
                    help="torch threads (default: numpy's BLAS thread count, else CPU count)")
    args = ap.parse_args(argv)
    if args.repeat < 1:
        ap.error("--repeat must be >= 1")
    stat = min if args.stat == "min" else statistics.median

    import torch

    limiter = None
    if args.threads:
        try:  # give numpy's BLAS the same thread count as torch
            import threadpoolctl

            limiter = threadpoolctl.threadpool_limits(args.threads, user_api="blas")
        except ImportError:
            print("threadpoolctl not installed: --threads only applies to torch")
    blas_lines, blas_threads = _blas_info()
    threads = args.threads or blas_threads or os.cpu_count() or 1
    torch.set_num_threads(threads)
    _print_header(torch, threads, blas_lines)

    mg = None
    if not args.torch_only:
        mg = import_mpsgraph()
        from mpsgraph.backends.numpy import conv_accel

        os.environ["MPSGRAPH_CPU_ACCEL"] = "1"
        accel = conv_accel.enabled()
        os.environ.pop("MPSGRAPH_CPU_ACCEL")
        print(f"mpsgraph from {Path(mg.__file__).parent}, device cpu (NumPy backend); "
              f"accelerator: {'PyTorch CPU (oneDNN)' if accel else 'none (NumPy only)'}\n")

    if args.shape:
        shapes = [SHAPES[i] for i in args.shape]
    else:
        shapes = SHAPES[:1] if args.quick else SHAPES
    rows = []
    for shape in shapes:
        for layout in LAYOUTS:
            case = Case(shape, layout)
            ts = TorchSide(torch, case)
            for op in OPS:
                t_run = ts.fn(op)
                t_out = ts.result_in_layout(op, t_run())
                # torch float32 against a float64 torch run: the reference itself is sane
                ref64 = ts.result_in_layout(op, ts.fn(op, torch.float64)())
                _check(f"torch float32 vs float64 {case.label()} {layout} {op}", t_out, ref64)
                if mg is None:
                    (t_ms,) = median_ms([t_run], args.repeat, args.warmup, stat)
                    rows.append((case.label(), layout, op, None, None, t_ms))
                    continue
                m_run, _ = build_mpsgraph(mg, case, op)
                runs = {"numpy": with_accel(m_run, False), "default": with_accel(m_run, True)}
                for name, run in runs.items():
                    m_out = np.asarray(run()[0].numpy())
                    _check(f"mpsgraph ({name}) vs torch {case.label()} {layout} {op}", m_out,
                           t_out)
                # NumPy-only on its own first: OpenBLAS's idle threads poll for a while after
                # each GEMM, which can take a core from oneDNN's threads in a shared round
                (n_ms,) = median_ms([runs["numpy"]], args.numpy_repeat or args.repeat,
                                    args.warmup, stat)
                time.sleep(0.2)  # (OpenBLAS's threads go to sleep)
                d_ms, t_ms = median_ms([runs["default"], t_run], args.repeat, args.warmup,
                                       stat)
                rows.append((case.label(), layout, op, n_ms, d_ms, t_ms))
                print(f"  done: {case.label()} {layout} {op}", file=sys.stderr, flush=True)

    print("| shape | layout | op | NumPy-only ms | default ms | torch ms | NumPy-only/torch "
          f"| default/torch | within {WITHIN:g}x |")
    print("|---|---|---|---:|---:|---:|---:|---:|---|")
    worst = {}
    for label, layout, op, n_ms, d_ms, t_ms in rows:
        if n_ms is None:
            print(f"| {label} | {layout} | {op} | - | - | {t_ms:.2f} | - | - | - |")
            continue
        rn, rd = n_ms / t_ms, d_ms / t_ms
        within = "n/a" if op == "forward" else ("yes" if rd <= WITHIN else "no")
        if op != "forward":
            worst[op] = max(worst.get(op, (0, 0)), (rd, rn))
        print(f"| {label} | {layout} | {op} | {n_ms:.2f} | {d_ms:.2f} | {t_ms:.2f} | {rn:.2f} "
              f"| {rd:.2f} | {within} |")
    print(f"\n{args.stat} of {args.repeat} runs (NumPy-only: "
          f"{args.numpy_repeat or args.repeat}) after {args.warmup} warm-up runs; "
          f"float32; padding k//2 explicit; results verified (rtol {RTOL:g}).")
    for op, (rd, _) in sorted(worst.items()):
        print(f"worst default/torch on {op}: {rd:.2f}")
    if hasattr(os, "getloadavg"):
        print("load average at the end: " + ", ".join(f"{v:.2f}" for v in os.getloadavg()))
    del limiter
    return 0


if __name__ == "__main__":
    sys.exit(main())
