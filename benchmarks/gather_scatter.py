"""Benchmark: mpsgraph's gather and its scatter-add gradient on an NVIDIA GPU vs PyTorch.

Run (from the repository root)::

    PYTHONPATH=src python3 benchmarks/gather_scatter.py           # CUDA: [100000, 512] table
    PYTHONPATH=src python3 benchmarks/gather_scatter.py --small   # CPU dry run, tiny shapes

The case: gather 65536 random int32 rows of an embedding table [100000, 512] float32 (axis 0),
and the gradient of that gather, a scatter-add of a [65536, 512] gradient into a table of
zeros (duplicate rows summed): the `scatter(..., mode: add)` op that gather's gradient rule
emits, compiled on its own. One process, the same data for every contender; each
measurement is a warm-up then the median of ``--repeat`` runs, synchronised (CUDA) around
each run: host-inclusive, what a caller from Python sees.

Contenders:
- ours, fed: ``Executable.run`` of a compiled executable whose indices are a feed (so the
  indices are range-checked on every run: one device -> host read; such an executable is
  never captured in a CUDA graph);
- ours, constant: the indices are a graph constant, checked once when the graph is built
  (the executable may then replay a CUDA graph);
- torch: ``torch.index_select(table, 0, idx)`` and ``torch.zeros(...).index_add_(0, idx,
  dy)`` (atomics: the sum order of duplicates varies from run to run; ours is the sort-based,
  deterministic ``index_put_(accumulate=True)``).

Ratios are torch / ours: > 1 means mpsgraph is faster. Each result is checked against torch
before timing.
"""

from __future__ import annotations

import argparse
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


def timer(device: torch.device, repeat: int, warmup: int):
    def sync():
        if device.type == "cuda":
            torch.cuda.synchronize(device)

    def time_ms(fn) -> float:
        for _ in range(warmup):
            fn()
        sync()
        ts = []
        for _ in range(repeat):
            t0 = time.perf_counter()
            fn()
            sync()
            ts.append((time.perf_counter() - t0) * 1e3)
        return statistics.median(ts)
    return time_ms


def build(rows: int, width: int, n: int, idx_np: np.ndarray | None, dev: str):
    """(gather executable, gradient executable): feeds table [, idx] / dy [, idx]."""
    g = mg.Graph()
    table = g.placeholder([rows, width], mg.float32, name="table")
    idx = g.constant(idx_np) if idx_np is not None else g.placeholder([n], mg.int32, "idx")
    y = g.gather(table, indicesTensor=idx, axis=0, name="rows")
    dy = g.placeholder([n, width], mg.float32, name="dy")
    # gather's gradient rule emits exactly this scatter-add (ops/gather.py); built directly so
    # that no elementwise op of a loss is timed with it
    dtable = g.scatter(dy, indices=idx, shape=[rows, width], axis=0, mode=mg.ScatterMode.add)
    feeds = {table: mg.ShapedType([rows, width], mg.float32)}
    if idx_np is None:
        feeds[idx] = mg.ShapedType([n], mg.int32)
    fwd = g.compile(feeds, [y], device=dev)
    gfeeds = {dy: mg.ShapedType([n, width], mg.float32)}
    if idx_np is None:
        gfeeds[idx] = mg.ShapedType([n], mg.int32)
    return fwd, g.compile(gfeeds, [dtable], device=dev)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--small", action="store_true", help="CPU dry run (torch-cpu, tiny shapes)")
    ap.add_argument("--repeat", type=int, default=None)
    args = ap.parse_args()
    if args.small:
        rows, width, n, dev, tdev = 1000, 16, 512, "torch-cpu", torch.device("cpu")
    else:
        if not torch.cuda.is_available():
            sys.exit("no CUDA device: run with --small for a CPU dry run")
        rows, width, n, dev, tdev = 100000, 512, 65536, "cuda", torch.device("cuda")
    repeat = args.repeat or (5 if args.small else 50)
    time_ms = timer(tdev, repeat, warmup=3 if args.small else 10)
    rng = np.random.default_rng(0)
    table = torch.from_numpy(rng.standard_normal((rows, width), dtype=np.float32)).to(tdev)
    idx_np = rng.integers(0, rows, size=n).astype(np.int32)
    idx = torch.from_numpy(idx_np).to(tdev)
    dy = torch.from_numpy(rng.standard_normal((n, width), dtype=np.float32)).to(tdev)

    def t_gather():
        return torch.index_select(table, 0, idx)

    def t_scatter():
        return torch.zeros((rows, width), dtype=torch.float32, device=tdev).index_add_(0, idx,
                                                                                      dy)

    want_y, want_dt = t_gather(), t_scatter()
    results = []
    for label, const in (("fed indices", None), ("constant indices", idx_np)):
        fwd, bwd = build(rows, width, n, const, dev)
        by_name = {"table": table, "idx": idx, "dy": dy}
        fin = [by_name[t.name] for t in fwd.feedTensors]
        bin_ = [by_name[t.name] for t in bwd.feedTensors]
        got_y = torch.from_dlpack(fwd.run(fin)[0]).to(tdev)
        got_dt = torch.from_dlpack(bwd.run(bin_)[0]).to(tdev)
        assert torch.equal(got_y, want_y), "gather differs from index_select"
        torch.testing.assert_close(got_dt, want_dt, rtol=1e-4, atol=1e-4)
        results.append((f"gather, {label}", time_ms(lambda f=fwd, x=fin: f.run(x)),
                        time_ms(t_gather)))
        results.append((f"scatter-add gradient, {label}",
                        time_ms(lambda b=bwd, x=bin_: b.run(x)), time_ms(t_scatter)))
    dev_name = torch.cuda.get_device_name(tdev) if tdev.type == "cuda" else "CPU (torch-cpu)"
    print(f"gather rows of [{rows}, {width}] float32 with {n} random int32 indices; "
          f"{dev_name}; torch {torch.__version__}; median of {repeat} runs (ms)\n")
    print(f"| {'case':<40} | {'ours':>9} | {'torch':>9} | {'torch/ours':>10} |")
    print(f"|{'-' * 42}|{'-' * 11}|{'-' * 11}|{'-' * 12}|")
    for name, ours, theirs in results:
        print(f"| {name:<40} | {ours:9.3f} | {theirs:9.3f} | {theirs / ours:10.2f} |")
    print("\ntorch: index_select / index_add_ (atomics, run-to-run order of duplicates varies); "
          "ours: compiled Executable.run, deterministic sort-based scatter-add")


if __name__ == "__main__":
    main()
