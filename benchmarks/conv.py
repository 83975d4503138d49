"""Benchmark: mpsgraph's NumPy backend vs PyTorch CPU on 2D convolution and its gradients.

Run (from the repository root)::

    python benchmarks/conv.py                 # all shapes, NCHW and NHWC, 10 timed runs each
    python benchmarks/conv.py --quick         # one shape only
    python benchmarks/conv.py --repeat 20     # more timed runs per measurement
    python benchmarks/conv.py --torch-only    # only the PyTorch half (no mpsgraph needed)

For every case (shape x layout) it times three ops on the same float32 data, in one process:
``convolution2D`` (forward), ``convolution2DDataGradient`` and
``convolution2DWeightsGradient`` against ``torch.nn.functional.conv2d``,
``torch.nn.grad.conv2d_input`` and ``torch.nn.grad.conv2d_weight``. Inputs are prepared
outside the timed region (NHWC rows use ``torch.channels_last`` tensors on the torch side and
NHWC/HWIO arrays with an NHWC/HWIO descriptor on the mpsgraph side); each measurement is the
median of ``--repeat`` (>= 10 by default) ``time.perf_counter`` runs after warm-up. Once per
case the two results are compared (``np.testing.assert_allclose`` at float32 tolerance, and
torch against a float64 torch run) so that the comparison is honest.

Output: a markdown table with shape, layout, op, mpsgraph ms, torch ms, ratio (ours/torch)
and, for the two gradient ops, whether mpsgraph is within 2x of torch.

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
]
LAYOUTS = ("NCHW", "NHWC")
OPS = ("forward", "data_grad", "weights_grad")
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
          f"{os.cpu_count()} CPUs")
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


def median_ms(fn, repeat: int, warmup: int) -> float:
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1e3


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
        self.x = torch.from_numpy(case.x).contiguous(memory_format=mf)
        self.w = torch.from_numpy(case.wt).contiguous(memory_format=mf)
        self.dy = torch.from_numpy(case.dy).contiguous(memory_format=mf)
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
    ap.add_argument("--repeat", type=int, default=10, help="timed runs per measurement (10)")
    ap.add_argument("--warmup", type=int, default=2, help="untimed runs first (2)")
    ap.add_argument("--quick", action="store_true", help="only the first shape")
    ap.add_argument("--torch-only", action="store_true", help="skip mpsgraph (torch half only)")
    ap.add_argument("--threads", type=int, default=None,
                    help="torch threads (default: numpy's BLAS thread count, else CPU count)")
    args = ap.parse_args(argv)
    if args.repeat < 1:
        ap.error("--repeat must be >= 1")

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
        print(f"mpsgraph from {Path(mg.__file__).parent}, device cpu (NumPy backend)\n")

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
                t_ms = median_ms(t_run, args.repeat, args.warmup)
                m_ms = None
                if mg is not None:
                    m_run, _ = build_mpsgraph(mg, case, op)
                    m_out = np.asarray(m_run()[0].numpy())
                    _check(f"mpsgraph vs torch {case.label()} {layout} {op}", m_out, t_out)
                    m_ms = median_ms(m_run, args.repeat, args.warmup)
                rows.append((case.label(), layout, op, m_ms, t_ms))
                print(f"  done: {case.label()} {layout} {op}", file=sys.stderr, flush=True)

    print("| shape | layout | op | mpsgraph ms | torch ms | ratio (ours/torch) | within 2x |")
    print("|---|---|---|---:|---:|---:|---|")
    for label, layout, op, m_ms, t_ms in rows:
        if m_ms is None:
            m_s, ratio_s, within = "-", "-", "-"
        else:
            ratio = m_ms / t_ms
            m_s, ratio_s = f"{m_ms:.2f}", f"{ratio:.2f}"
            within = "n/a" if op == "forward" else ("yes" if ratio <= 2.0 else "no")
        print(f"| {label} | {layout} | {op} | {m_s} | {t_ms:.2f} | {ratio_s} | {within} |")
    print(f"\nmedian of {args.repeat} runs after {args.warmup} warm-up runs; "
          f"float32; padding k//2 explicit; results verified (rtol {RTOL:g}).")
    del limiter
    return 0


if __name__ == "__main__":
    sys.exit(main())
