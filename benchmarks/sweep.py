"""Broad GPU sweep: ours (autotuned path choice) against cuDNN, LSTM training steps and the
convolution family, every row verified against cuDNN before it is timed.

Run (from the repository root)::

    PYTHONPATH=src python3 benchmarks/sweep.py --json sweep.json   # full: <= ~8 min on an H200
    PYTHONPATH=src python3 benchmarks/sweep.py --quick             # a few shapes (~1 min)
    .venv/bin/python benchmarks/sweep.py --cpu-smoke               # tiny shapes, torch CPU

Budget: the full sweep (44 LSTM rows, 40 convolution cases x 3 ops) is sized to finish within
about 8 minutes on an H200, Triton compiles and the autotuner's first-call timing included: few
timed samples (5, of 3 queued replays each for the graph columns), and a wall-clock guard
(--budget, default 420 s; the LSTM rows stop at 62% of it) after which the remaining rows
are listed as skipped. Shapes that do
not fit in memory are skipped with a note.

Rows:

- LSTM training step: LSTM(training=True) + LSTMGradients with every gradient (source,
  recurrentWeight, inputWeight, bias, initState, initCell) against torch.nn.LSTM forward +
  backward (cuDNN), I = H, T in 8..1000, N in 1..1024, H in 32..2048, unidirectional and
  bidirectional; float32 (TF32 off everywhere), tf32 (ours compiled with allow_tf32=True;
  torch's TF32 flags on for cuDNN) and bfloat16. The issue's gap shapes come first.
- convolution: forward, data gradient, weights gradient (kernel 1..7, stride 1..2, groups 1 /
  grouped / depthwise, NCHW/OIHW and NHWC/HWIO, N 1..256, float32 and bfloat16) against
  aten.convolution / convolution_backward (channels_last tensors for NHWC).

Columns: ours graph (Executable.captured_graph replayed, device-only), ours eager
(Executable.run, host-inclusive, after the automatic CUDA-graph mode has decided), cuDNN
graph (torch's call captured in a CUDA graph, device-only), cuDNN eager, the ratios cuDNN /
ours (> 1: ours faster), the path the autotuner chose (backends/torch/autotune.py) and the
tuning time that first call spent (compile-time cost; 0 when read from the cache). The sweep
uses a fresh cache file unless --cache FILE is given. Summary lines: LSTM graph-ratio minimum
and geometric mean, convolution minimum, and the rows where ours eager is not faster than
cuDNN eager.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import tempfile
import time
import traceback
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

if "--cache" not in sys.argv:  # a fresh autotune cache: the tuning time is part of the table
    os.environ.setdefault("MPSGRAPH_AUTOTUNE_CACHE",
                          os.path.join(tempfile.mkdtemp(prefix="mpsgraph-sweep-"), "at.json"))
else:
    os.environ["MPSGRAPH_AUTOTUNE_CACHE"] = sys.argv[sys.argv.index("--cache") + 1]

import gpu as G  # noqa: E402  (benchmarks/gpu.py: timing helpers, the LSTM / conv cases)
import torch  # noqa: E402

from mpsgraph.backends.torch import autotune  # noqa: E402

mg = G.mg

# (T, N, H, bidirectional, precision); I = H. The gap shapes of issue 20 first.
LSTM_ROWS = [
    (400, 32, 128, False, "float32"), (32, 4, 512, False, "float32"),
    (50, 128, 256, False, "float32"), (16, 64, 2048, False, "bfloat16"),
    (100, 128, 512, True, "float32"), (64, 256, 1024, False, "bfloat16"),
    # float32
    (8, 1, 32, False, "float32"), (1000, 1, 64, False, "float32"),
    (200, 8, 128, False, "float32"), (100, 16, 256, False, "float32"),
    (100, 64, 256, False, "float32"), (50, 8, 128, False, "float32"),
    (20, 1024, 64, False, "float32"), (10, 512, 512, False, "float32"),
    (30, 2, 1024, False, "float32"), (8, 32, 2048, False, "float32"),
    (250, 64, 128, True, "float32"), (64, 16, 256, True, "float32"),
    (100, 64, 1024, False, "float32"), (200, 256, 512, False, "float32"),
    (500, 4, 64, False, "float32"),
    # tf32
    (100, 64, 256, False, "tf32"), (400, 32, 128, False, "tf32"),
    (50, 128, 256, False, "tf32"), (32, 4, 512, False, "tf32"),
    (100, 64, 1024, False, "tf32"), (16, 256, 1024, True, "tf32"),
    (8, 1024, 256, False, "tf32"), (300, 16, 512, False, "tf32"),
    (1000, 8, 32, False, "tf32"), (64, 1, 2048, False, "tf32"),
    # bfloat16
    (100, 64, 256, False, "bfloat16"), (50, 8, 128, False, "bfloat16"),
    (200, 256, 512, False, "bfloat16"), (1000, 32, 256, False, "bfloat16"),
    (8, 1, 32, False, "bfloat16"), (128, 1024, 128, False, "bfloat16"),
    (32, 512, 512, True, "bfloat16"), (100, 128, 512, True, "bfloat16"),
    (20, 4, 1024, False, "bfloat16"), (400, 2, 64, True, "bfloat16"),
    (24, 16, 2048, False, "bfloat16"), (100, 64, 1024, False, "bfloat16"),
    (12, 1024, 1024, False, "bfloat16"),
]
LSTM_QUICK = [LSTM_ROWS[0], LSTM_ROWS[3], LSTM_ROWS[4]]
LSTM_SMOKE = [(6, 2, 8, False, "float32"), (5, 3, 8, True, "float32"),
              (4, 1, 16, False, "bfloat16")]

# (N, C, H, W, O, k, stride, groups, layout, dtype); padding k // 2 explicit
CONV_ROWS = [
    (64, 128, 16, 16, 128, 3, 1, 1, "NHWC", "bfloat16"),   # the gap shape
    (32, 64, 56, 56, 64, 3, 1, 1, "NCHW", "float32"), (32, 64, 56, 56, 64, 3, 1, 1, "NHWC",
                                                      "bfloat16"),
    (32, 128, 28, 28, 128, 3, 1, 1, "NHWC", "float32"),
    (32, 256, 14, 14, 256, 3, 1, 1, "NCHW", "bfloat16"),
    (32, 512, 7, 7, 512, 3, 1, 1, "NHWC", "bfloat16"),
    (32, 64, 56, 56, 256, 1, 1, 1, "NCHW", "float32"),
    (32, 64, 56, 56, 256, 1, 1, 1, "NHWC", "bfloat16"),
    (32, 256, 56, 56, 64, 1, 1, 1, "NHWC", "float32"),
    (64, 256, 28, 28, 512, 1, 2, 1, "NHWC", "bfloat16"),
    (32, 64, 56, 56, 64, 3, 2, 1, "NCHW", "float32"),
    (32, 128, 56, 56, 128, 3, 2, 1, "NHWC", "bfloat16"),
    (16, 3, 224, 224, 64, 7, 2, 1, "NCHW", "float32"),
    (16, 3, 224, 224, 64, 7, 2, 1, "NHWC", "bfloat16"),
    (32, 32, 64, 64, 32, 5, 1, 1, "NCHW", "float32"),
    (32, 64, 32, 32, 64, 5, 2, 1, "NHWC", "float32"),
    (1, 256, 56, 56, 256, 3, 1, 1, "NCHW", "float32"),
    (1, 64, 112, 112, 64, 3, 1, 1, "NHWC", "bfloat16"),
    (256, 64, 14, 14, 64, 3, 1, 1, "NHWC", "bfloat16"),
    (256, 32, 32, 32, 64, 3, 1, 1, "NCHW", "float32"),
    (8, 128, 32, 32, 128, 7, 1, 1, "NCHW", "bfloat16"),
    (4, 16, 128, 128, 32, 2, 2, 1, "NHWC", "float32"),
    # grouped
    (32, 128, 28, 28, 128, 3, 1, 4, "NCHW", "float32"),
    (32, 256, 14, 14, 256, 3, 1, 32, "NHWC", "bfloat16"),
    (32, 128, 56, 56, 256, 3, 2, 2, "NHWC", "float32"),
    (64, 64, 28, 28, 64, 1, 1, 8, "NCHW", "bfloat16"),
    (16, 512, 14, 14, 512, 3, 1, 64, "NCHW", "bfloat16"),
    # depthwise
    (32, 128, 56, 56, 128, 3, 1, 128, "NCHW", "float32"),
    (32, 128, 56, 56, 128, 3, 1, 128, "NHWC", "float32"),
    (32, 256, 28, 28, 256, 3, 2, 256, "NCHW", "bfloat16"),
    (32, 256, 28, 28, 256, 3, 2, 256, "NHWC", "bfloat16"),
    (64, 96, 28, 28, 96, 5, 1, 96, "NHWC", "float32"),
    (64, 96, 28, 28, 96, 5, 1, 96, "NCHW", "bfloat16"),
    (8, 64, 112, 112, 64, 7, 1, 64, "NCHW", "float32"),
    (8, 64, 112, 112, 64, 7, 2, 64, "NHWC", "bfloat16"),
    (1, 512, 14, 14, 512, 3, 1, 512, "NHWC", "float32"),
    (256, 32, 16, 16, 32, 3, 1, 32, "NCHW", "bfloat16"),
    (128, 144, 14, 14, 144, 3, 1, 144, "NHWC", "bfloat16"),
    (32, 64, 56, 56, 128, 3, 1, 64, "NCHW", "float32"),      # depthwise multiplier 2
    (16, 32, 64, 64, 32, 1, 1, 32, "NHWC", "float32"),
]
CONV_QUICK = [CONV_ROWS[0], CONV_ROWS[1], CONV_ROWS[28]]
CONV_SMOKE = [(2, 8, 8, 8, 8, 3, 1, 1, "NCHW", "float32"), (2, 8, 8, 8, 8, 3, 2, 8, "NHWC",
                                                            "float32"),
              (1, 4, 6, 6, 8, 1, 1, 2, "NHWC", "bfloat16")]

PRECISIONS = {"float32": ("float32", False), "tf32": ("float32", True),
              "bfloat16": ("bfloat16", False)}
LSTM_TOL = {"float32": (1e-2, 2e-3), "tf32": (3e-2, 2e-2), "bfloat16": (8e-2, 8e-2)}
CONV_TOL = {"float32": (2e-3, 2e-3), "bfloat16": (3e-2, 3e-2)}
REPEAT, WARMUP, BATCH = 5, 1, 3
LSTM_SHARE = 0.62  # of --budget for the LSTM rows (the convolution rows get the rest)


class tf32_flags:
    def __init__(self, on: bool):
        self.on = on

    def __enter__(self):
        self.saved = (torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32)
        torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = self.on

    def __exit__(self, *exc):
        torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = self.saved


def _graph_cell(bench, fn, label, before=None) -> G.Cell:
    if not bench.cuda:
        return G.Cell(text="n/a")
    try:
        g, out = bench.capture(fn, before)
    except Exception as e:  # noqa: BLE001
        print(f"  [{label} capture] {G.short(e, 300)}", file=sys.stderr)
        bench.cleanup()
        return G.Cell(text="n/a")
    c = G.measure(bench, g.replay, label, batch=BATCH)
    del g, out
    return c


def _ours_graph(bench, compile_fn, inputs, check, opts) -> G.Cell:
    if not bench.cuda:
        return G.Cell(text="n/a")
    try:
        exe = compile_fn(cuda_graph=True, **opts)
        check(exe.run(inputs))
        g = exe.captured_graph(inputs)
        bench.sync()
    except Exception as e:  # noqa: BLE001
        print(f"  [ours graph] {traceback.format_exc()[-600:]}", file=sys.stderr)
        bench.cleanup()
        return G.Cell(text=f"error: {G.short(e)}")
    return G.measure(bench, g.replay, "ours graph", batch=BATCH)


def _tuned() -> tuple[str, float]:
    ev = autotune.events()
    autotune.reset_events()
    if not ev:
        return "hand rule", 0.0
    paths = ",".join(dict.fromkeys(e["key"].split(":", 1)[0].replace("conv2d.", "") + "="
                                   + e["choice"] + ("*" if e["cached"] else "") for e in ev))
    return paths, sum(e["tune_ms"] for e in ev)


def _oom(e: BaseException) -> bool:
    return isinstance(e, torch.cuda.OutOfMemoryError) or "out of memory" in str(e)


# ------------------------------------------------------------------------------------------


def lstm_row(bench, spec, mdev) -> dict:
    T, N, H, bi, precision = spec
    dtname, tf32 = PRECISIONS[precision]
    case = G.LSTMCase(T, N, H, H, bi, dtname, bench.device, peephole=False)
    name = f"LSTM {case.label()} {precision}"
    rtol, atol = LSTM_TOL[precision]
    bad = 1e-3 if dtname == "bfloat16" else 0.0
    cells: dict[str, G.Cell] = {}
    opts = {"allow_tf32": True} if tf32 else {}
    with tf32_flags(tf32):
        step, step_nozero, clear, x, dW = case.cudnn()
        y = step()
        bench.sync()
        ref = (y.detach().clone(), x.grad.detach().clone(), dW().detach().clone())
        del y
        cells["cudnn"] = G.measure(bench, step, f"cudnn {name}")
        cells["cudnn_graph"] = _graph_cell(bench, step_nozero, "cuDNN graph", before=clear)
        del step, step_nozero, clear, x, dW

    def check(out):
        G.agree(f"{name}: state", out[0], ref[0], rtol, atol, bad)
        G.agree(f"{name}: d source", out[1], ref[1], rtol, atol, bad)
        G.agree(f"{name}: d inputWeight", out[3], ref[2], rtol, atol, bad)

    autotune.reset_events()
    exe, inputs, compile_fn = case.compile_ours(mdev, **opts)
    t0 = time.perf_counter()
    out = exe.run(inputs)  # the first call: tunes a new key
    bench.sync()
    first_ms = (time.perf_counter() - t0) * 1e3
    path, tune_ms = _tuned()
    try:
        check(out)
        verified = "ok"
    except AssertionError as e:
        verified = "MISMATCH"
        print(f"  [verify] {str(e)[:800]}", file=sys.stderr)
    del out
    way = G.calibrate(bench, exe, inputs)
    cells["ours"] = G.measure(bench, lambda: exe.run(inputs), f"ours {name}")
    cells["ours"].method = way
    cells["ours_graph"] = _ours_graph(bench, compile_fn, inputs, check, opts)
    _tuned()
    return {"kind": "lstm", "shape": case.label(), "T": T, "N": N, "I": H, "H": H,
            "bidirectional": bi, "precision": precision, "verified": verified, "path": path,
            "tune_ms": tune_ms, "first_call_ms": first_ms, "cells": cells}


def conv_rows(bench, spec, mdev) -> list[dict]:
    n, c, h, w, o, k, s, g, layout, dtname = spec
    case = G.ConvCase((n, c, h, w, o, k, s, g), layout, dtname, bench.device)
    rtol, atol = CONV_TOL[dtname]
    rows = []
    for op in G.OPS:
        name = f"{case.label()} {layout} {dtname} {op}"
        t_fn = case.torch_fn(op)
        ref = case.torch_in_layout(op, t_fn()).contiguous()
        bench.sync()
        cells = {"cudnn": G.measure(bench, t_fn, f"torch {name}"),
                 "cudnn_graph": _graph_cell(bench, t_fn, "torch graph")}

        def check(out, ref=ref, name=name):
            G.agree(f"ours vs torch {name}", out[0], ref, rtol, atol)

        autotune.reset_events()
        exe, inputs, compile_fn = case.compile_ours(op, mdev)
        out = exe.run(inputs)
        bench.sync()
        path, tune_ms = _tuned()
        try:
            check(out)
            verified = "ok"
        except AssertionError as e:
            verified = "MISMATCH"
            print(f"  [verify] {str(e)[:600]}", file=sys.stderr)
        del out
        way = G.calibrate(bench, exe, inputs)
        cells["ours"] = G.measure(bench, lambda exe=exe, inputs=inputs: exe.run(inputs),
                                  f"ours {name}")
        cells["ours"].method = way
        cells["ours_graph"] = _ours_graph(bench, compile_fn, inputs, check, {})
        _tuned()
        rows.append({"kind": "conv", "shape": case.label(), "N": n, "C": c, "H": h, "W": w,
                     "O": o, "k": k, "stride": s, "groups": g, "layout": layout,
                     "dtype": dtname, "op": op, "verified": verified, "path": path,
                     "tune_ms": tune_ms, "cells": cells})
    return rows


# ------------------------------------------------------------------------------------------


def _r(peer: G.Cell, ours: G.Cell) -> float | None:
    return G.ratio_val(peer, ours)


def _fmt(v: float | None) -> str:
    return "-" if v is None else f"{v:.2f}"


def print_table(rows: list[dict], kind: str) -> None:
    if kind == "lstm":
        print("## LSTM training step (forward keeping state + backward, every gradient)\n")
        print("| shape | precision | ours graph ms | ours eager ms | cuDNN graph ms "
              "| cuDNN eager ms | graph ratio | eager ratio | path | tuning ms | verified |")
    else:
        print("## Convolution (forward, data gradient, weights gradient; padding k//2)\n")
        print("| shape | N | layout | dtype | op | ours graph ms | ours eager ms "
              "| cuDNN graph ms | cuDNN eager ms | graph ratio | eager ratio | path "
              "| tuning ms | verified |")
    ncol = 11 if kind == "lstm" else 14
    print("|" + "---|" * ncol)
    for r in rows:
        if r.get("skipped"):
            print(f"| {r['shape']} | skipped: {r['skipped']} |" + " |" * (ncol - 2))
            continue
        c = r["cells"]
        gr, er = _r(c["cudnn_graph"], c["ours_graph"]), _r(c["cudnn"], c["ours"])
        lead = (f"| {r['shape']} | {r['precision']} " if kind == "lstm" else
                f"| {r['shape']} | {r['N']} | {r['layout']} | {r['dtype']} | {r['op']} ")
        print(lead + f"| {c['ours_graph'].show()} | {c['ours'].show()} "
              f"| {c['cudnn_graph'].show()} | {c['cudnn'].show()} | {_fmt(gr)} | {_fmt(er)} "
              f"| {r['path']} | {r['tune_ms']:.0f} | {r['verified']} |")
    print()


def summary(rows: list[dict], kind: str) -> dict:
    done = [r for r in rows if not r.get("skipped")]
    gr = [_r(r["cells"]["cudnn_graph"], r["cells"]["ours_graph"]) for r in done]
    er = [_r(r["cells"]["cudnn"], r["cells"]["ours"]) for r in done]
    gv = [v for v in gr if v]
    out = {"rows": len(done), "skipped": len(rows) - len(done),
           "graph_ratio_min": min(gv) if gv else None,
           "graph_ratio_geomean": math.exp(sum(map(math.log, gv)) / len(gv)) if gv else None,
           "eager_not_faster": [r["shape"] + " " + r.get("precision", r.get("op", ""))
                                for r, v in zip(done, er) if v is not None and v <= 1.0],
           "mismatch": [r["shape"] for r in done if r["verified"] != "ok"],
           "tuning_ms_total": sum(r["tune_ms"] for r in done)}
    print(f"**{kind}**: {out['rows']} rows ({out['skipped']} skipped); graph ratio min "
          f"{_fmt(out['graph_ratio_min'])}, geometric mean {_fmt(out['graph_ratio_geomean'])}; "
          f"ours eager not faster than cuDNN eager on {len(out['eager_not_faster'])} rows; "
          f"verification failures: {len(out['mismatch'])}; tuning total "
          f"{out['tuning_ms_total'] / 1e3:.1f} s\n")
    return out


def _brief(r: dict) -> str:
    """": ours graph ms / cuDNN graph ms = ratio, path" of a measured row ("" otherwise)."""
    c = r.get("cells", {})
    try:
        o, d = c["ours_graph"].ms, c["cudnn_graph"].ms
        return f": ours {o:.3f} / cuDNN {d:.3f} ms = {d / o:.2f}x, {r.get('path', '?')}"
    except (KeyError, AttributeError, TypeError, ZeroDivisionError):
        return ""


def _json_row(r: dict) -> dict:
    d = {k: v for k, v in r.items() if k != "cells"}
    if "cells" in r:
        d["cells"] = {k: {"ms": c.ms, "status": c.text or "ok", "method": c.method}
                      for k, c in r["cells"].items()}
    return d


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="a few shapes of each kind")
    ap.add_argument("--cpu-smoke", action="store_true",
                    help="tiny shapes on the CPU (torch CPU in the cuDNN columns)")
    ap.add_argument("--json", metavar="FILE", help="also write every number to FILE")
    ap.add_argument("--only", choices=("conv", "lstm"), help="one section only")
    ap.add_argument("--budget", type=float, default=420.0,
                    help="seconds; rows after it are skipped (default 420)")
    ap.add_argument("--cache", metavar="FILE",
                    help="autotune cache file to use (default: a fresh temporary one)")
    ap.add_argument("--rows", metavar="START:STOP",
                    help="only these rows of each section (a Python slice, e.g. 27: for the "
                         "rows after the 27th)")
    args = ap.parse_args(argv)
    if args.cpu_smoke:
        dev, mdev = "cpu", mg.Device("torch-cpu")
        lstm, conv = LSTM_SMOKE, CONV_SMOKE
    else:
        if not torch.cuda.is_available():
            print("no CUDA device: run with --cpu-smoke", file=sys.stderr)
            return 2
        dev, mdev = "cuda", mg.Device("cuda")
        lstm, conv = (LSTM_QUICK, CONV_QUICK) if args.quick else (LSTM_ROWS, CONV_ROWS)
    if args.rows:
        try:
            sl = slice(*(int(v) if v.strip() else None for v in args.rows.split(":")))
        except ValueError:
            ap.error(f"--rows {args.rows!r}: expected START:STOP (integers, either may be empty)")
        lstm, conv = lstm[sl], conv[sl]
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    warnings.filterwarnings("ignore", message="RNN module weights are not part of single")
    bench = G.Bench(dev, REPEAT, WARMUP)
    t_start = time.perf_counter()
    gpu = torch.cuda.get_device_name() if bench.cuda else "CPU (smoke)"
    print(f"# mpsgraph sweep: {gpu}\n")
    print(f"torch {torch.__version__}, cuDNN {torch.backends.cudnn.version()}; autotune cache "
          f"{autotune.cache_path()} ({autotune.identity()}); median of {REPEAT} samples "
          f"({BATCH} queued replays each in the graph columns); ratio = cuDNN ms / ours ms "
          "(> 1: ours faster)\n")
    out: dict = {"gpu": gpu, "torch": torch.__version__, "identity": autotune.identity()}

    def over(share: float = 1.0) -> bool:
        return time.perf_counter() - t_start > args.budget * share

    if args.only in (None, "lstm"):
        rows = []
        for spec in lstm:
            T, N, H, bi, prec = spec
            label = f"T={T} N={N} I=H={H}" + (" bidir" if bi else "")
            if over(LSTM_SHARE if args.only is None else 1.0):
                rows.append({"shape": label, "precision": prec, "skipped": "time budget"})
                continue
            try:
                rows.append(lstm_row(bench, spec, mdev))
            except Exception as e:  # noqa: BLE001
                why = "out of memory" if _oom(e) else f"error {G.short(e, 120)}"
                print(f"  [lstm {label} {prec}] {traceback.format_exc()[-800:]}",
                      file=sys.stderr)
                rows.append({"shape": label, "precision": prec, "skipped": why})
            bench.cleanup()
            print(f"  done: {label} {prec}{_brief(rows[-1])} "
                  f"({time.perf_counter() - t_start:.0f} s)", file=sys.stderr, flush=True)
            if args.json:  # (after every row: a run stopped by a time limit keeps its rows)
                out["lstm"] = [_json_row(r) for r in rows]
                Path(args.json).write_text(json.dumps(out, indent=1, default=str))
        print_table(rows, "lstm")
        out["lstm_summary"] = summary(rows, "LSTM")
        out["lstm"] = [_json_row(r) for r in rows]
        sys.stdout.flush()
    if args.only in (None, "conv"):
        rows = []
        for spec in conv:
            n, c, h, w, o, k, s, g, layout, dt = spec
            label = f"{h}x{w} {c}->{o} k{k} s{s} g{g}"
            if over():
                rows.append({"shape": label, "N": n, "layout": layout, "dtype": dt, "op": "*",
                             "skipped": "time budget"})
                continue
            try:
                rows.extend(conv_rows(bench, spec, mdev))
            except Exception as e:  # noqa: BLE001
                why = "out of memory" if _oom(e) else f"error {G.short(e, 120)}"
                print(f"  [conv {label}] {traceback.format_exc()[-800:]}", file=sys.stderr)
                rows.append({"shape": label, "N": n, "layout": layout, "dtype": dt, "op": "*",
                             "skipped": why})
            bench.cleanup()
            print(f"  done: conv {label} {layout} {dt} ({time.perf_counter() - t_start:.0f} s)",
                  file=sys.stderr, flush=True)
            if args.json:
                out["conv"] = [_json_row(r) for r in rows]
                Path(args.json).write_text(json.dumps(out, indent=1, default=str))
        print_table(rows, "conv")
        out["conv_summary"] = summary(rows, "convolution")
        out["conv"] = [_json_row(r) for r in rows]
    elapsed = time.perf_counter() - t_start
    print(f"Total {elapsed:.0f} s. Paths: `*` = read from the autotune cache; 'hand rule' = "
          "no tuning (one candidate, or tuning off).")
    out["elapsed_s"] = elapsed
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
