"""Where an LSTM training step's device time goes: the CUDA kernels of ours (the graph of
LSTM + LSTMGradients, every gradient, the autotuned path) and of cuDNN's step (torch.nn.LSTM
forward + backward), from torch.profiler, for the shapes given.

Run (from the repository root, on a CUDA machine)::

    PYTHONPATH=src python3 benchmarks/profile_lstm.py 50,128,256,f32 20,1024,64,f32

Each shape is T,N,H,precision (f32 / tf32 / bf16; append ,bi for bidirectional). Prints, per
shape and side, the kernels by total device time over ITERS steps (per step), and the sum;
then the same for each candidate run the autotuner timed at the graph's first call (a fresh
tuning cache), to compare a candidate's kernels with the graph's.
"""

from __future__ import annotations

import contextlib
import os
import sys
import tempfile
from pathlib import Path

os.environ["MPSGRAPH_AUTOTUNE_CACHE"] = os.path.join(tempfile.mkdtemp(), "at.json")

sys.path.insert(0, str(Path(__file__).resolve().parent))

import gpu as G  # noqa: E402
import torch  # noqa: E402
from torch.profiler import ProfilerActivity, profile  # noqa: E402

from mpsgraph.backends.torch import lstm_route, rnn  # noqa: E402

ITERS = 10
PREC = {"f32": ("float32", False), "tf32": ("float32", True), "bf16": ("bfloat16", False)}


def _table(fn, label: str) -> None:
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(ITERS):
            fn()
        torch.cuda.synchronize()
    rows = [(e.key, e.device_time_total / ITERS, e.count // ITERS)
            for e in prof.key_averages() if e.device_time_total > 0]
    rows.sort(key=lambda r: -r[1])
    total = sum(r[1] for r in rows)
    print(f"\n  {label}: {total / 1e3:.3f} ms of kernels per step")
    for k, us, n in rows[:14]:
        print(f"    {us:9.1f} us  x{n:<3d} {k[:110]}")


@contextlib.contextmanager
def _recording():
    """([the tuner's run functions], [the candidate paths]) of the LSTM calls tuned inside."""
    runs, paths = [], []
    real_run, real_paths = rnn._tuning_run, lstm_route.ours_paths

    def run(*a, **k):
        runs.append(real_run(*a, **k))
        return runs[-1]

    def ours(*a, **k):
        paths.extend(real_paths(*a, **k))
        return paths  # (forward_choice appends "cudnn" to it)

    rnn._tuning_run, lstm_route.ours_paths = run, ours
    try:
        yield runs, paths
    finally:
        rnn._tuning_run, lstm_route.ours_paths = real_run, real_paths


def main(argv) -> int:
    mdev = "cuda"
    for spec in argv or ["50,128,256,f32"]:
        parts = spec.split(",")
        T, N, H, prec = int(parts[0]), int(parts[1]), int(parts[2]), parts[3]
        bi = len(parts) > 4 and parts[4] == "bi"
        dtname, tf32 = PREC[prec]
        torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = tf32
        case = G.LSTMCase(T, N, H, H, bi, dtname, torch.device("cuda"), peephole=False)
        print(f"== T={T} N={N} I=H={H} {prec}{' bidir' if bi else ''}")
        step = case.cudnn()[0]
        _table(step, "cuDNN (torch.nn.LSTM forward + backward)")
        with _recording() as (runs, paths):
            exe, inputs, _ = case.compile_ours(mdev, **({"allow_tf32": True} if tf32 else {}))
            exe.run(inputs)  # tunes, the candidates' runs recorded
        _table(lambda e=exe, i=inputs: e.run(i), "ours (LSTM + LSTMGradients)")
        for p in dict.fromkeys(paths):
            for r in runs[:1]:
                _table(lambda r=r, p=p: r(p, True), f"the tuner's candidate run {p!r}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
