"""Benchmark: the cluster RNN kernels (kernels/lstm_cluster.py, gru_cluster.py) at every
cluster size they compile for (8, 4, 2, 1 CTAs per direction), against cuDNN, on an NVIDIA
Hopper GPU; float32 training steps (forward keeping state + every gradient), device-only
(CUDA graphs replayed), every row verified against cuDNN first.

Run (from the repository root)::

    PYTHONPATH=src python3 benchmarks/cluster_sizes.py                # every case
    PYTHONPATH=src python3 benchmarks/cluster_sizes.py --json out.json

Our side runs with the path forced (MPSGRAPH_LSTM_KERNEL=persistent for the LSTM,
MPSGRAPH_AUTOTUNE=0 for the GRU / single-gate RNN: the cluster kernels wherever they apply)
and the cluster size forced by MPSGRAPH_LSTM_CLUSTER_SIZE / MPSGRAPH_GRU_CLUSTER_SIZE. The
table gives ms per size, cuDNN's ms in a CUDA graph, the best size and cuDNN / best (> 1:
ours faster). It is the measurement behind the default size and the autotuner's candidates
(lstm_route.py, gru_route.py).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import traceback
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import gpu as G  # noqa: E402
import torch  # noqa: E402
from lstm_gpu import graph_of_ours  # noqa: E402
from rnn_gpu import GatedCase  # noqa: E402

from mpsgraph.backends.torch.kernels import gru_cluster, lstm_cluster  # noqa: E402

# (kind, T, N, H, bidirectional); I = H
CASES = [
    ("lstm", 1000, 1, 64, False), ("lstm", 500, 4, 64, False), ("lstm", 8, 1, 32, False),
    ("lstm", 1000, 8, 32, False), ("lstm", 50, 8, 128, False), ("lstm", 200, 8, 128, False),
    ("lstm", 100, 16, 256, False), ("lstm", 400, 16, 128, False), ("lstm", 64, 16, 256, True),
    ("lstm", 300, 2, 96, False),
    ("gru", 50, 8, 128, False), ("gru", 128, 1, 256, True), ("gru", 1000, 1, 64, False),
    ("gru", 200, 4, 64, False), ("gru", 100, 16, 128, False),
    ("rnn_tanh", 50, 8, 128, False), ("rnn_tanh", 1000, 1, 64, False),
    ("rnn_tanh", 128, 1, 256, True),
]
SMOKE = [("lstm", 6, 2, 64, False), ("gru", 5, 3, 64, False)]
TOL = (1e-2, 2e-3)


def _sizes(kind: str, N: int, H: int) -> list[int]:
    if kind == "lstm":
        return lstm_cluster.sizes(N, H)
    return gru_cluster.sizes(N, H, 3 if kind == "gru" else 1, True)


def row(bench, spec, mdev) -> dict:
    kind, T, N, H, bi = spec
    if kind == "lstm":
        case = G.LSTMCase(T, N, H, H, bi, "float32", bench.device, peephole=False)
        env_size, env_path = "MPSGRAPH_LSTM_CLUSTER_SIZE", ("MPSGRAPH_LSTM_KERNEL", "persistent")
        label = f"lstm {case.label()}"
    else:
        case = GatedCase(kind, T, N, H, H, bi, "float32", bench.device)
        env_size, env_path = "MPSGRAPH_GRU_CLUSTER_SIZE", ("MPSGRAPH_AUTOTUNE", "0")
        label = case.label()
    step, step_nozero, clear, x, dW = case.cudnn()
    y = step()
    bench.sync()
    ref = (y.detach().clone(), x.grad.detach().clone(), dW().detach().clone())
    cells = {"cudnn_graph": G.torch_graph_cell(bench, step_nozero, "cuDNN graph", before=clear)}
    del step, step_nozero, clear, x, dW, y
    verified = {}
    os.environ[env_path[0]] = env_path[1]
    try:
        for cl in _sizes(kind, N, H):
            os.environ[env_size] = str(cl)
            try:
                exe, inputs, compile_fn = case.compile_ours(mdev)
                out = exe.run(inputs)
                bench.sync()
                G.agree(f"{label} cl={cl}: state", out[0], ref[0], *TOL)
                G.agree(f"{label} cl={cl}: d source", out[1], ref[1], *TOL)
                G.agree(f"{label} cl={cl}: d inputWeight", out[3], ref[2], *TOL)
                verified[cl] = "ok"
                del out
                cells[f"cl{cl}"] = graph_of_ours(bench, compile_fn, inputs)
            except AssertionError as e:
                verified[cl] = "MISMATCH"
                print(f"  [verify] {str(e)[:600]}", file=sys.stderr)
            except Exception as e:  # noqa: BLE001
                verified[cl] = "error"
                print(f"  [cl={cl}] {traceback.format_exc()[-600:]}", file=sys.stderr)
                cells[f"cl{cl}"] = G.Cell(text=f"error: {G.short(e)}")
            bench.cleanup()
    finally:
        os.environ.pop(env_size, None)
        os.environ.pop(env_path[0], None)
    return {"kind": kind, "shape": label, "T": T, "N": N, "H": H, "bidirectional": bi,
            "verified": verified, "cells": cells}


def show(rows) -> None:
    print("| case | " + " | ".join(f"cl={c} ms" for c in lstm_cluster.SIZES)
          + " | cuDNN graph ms | best | cuDNN / best | verified |")
    print("|---|" + "---:|" * (len(lstm_cluster.SIZES) + 3) + "---|")
    for r in rows:
        c = r["cells"]
        times = {cl: c[f"cl{cl}"].ms for cl in lstm_cluster.SIZES
                 if f"cl{cl}" in c and c[f"cl{cl}"].ms is not None}
        best = min(times, key=times.get) if times else None
        cu = c["cudnn_graph"].ms
        ratio = f"{cu / times[best]:.2f}" if best is not None and cu else "-"
        cols = [c[f"cl{cl}"].show() if f"cl{cl}" in c else "n/a" for cl in lstm_cluster.SIZES]
        ok = ",".join(f"{k}:{v}" for k, v in r["verified"].items())
        print(f"| {r['shape']} | " + " | ".join(cols)
              + f" | {c['cudnn_graph'].show()} | {best} | {ratio} | {ok} |", flush=True)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--json", help="write the rows here (after every row)")
    ap.add_argument("--smoke", action="store_true", help="two tiny cases")
    ap.add_argument("--only", help="comma-separated kinds (lstm, gru, rnn_tanh)")
    args = ap.parse_args(argv)
    if not torch.cuda.is_available() or torch.cuda.get_device_capability()[0] < 9:
        print("cluster_sizes.py: needs a CUDA GPU of compute capability >= 9.0", file=sys.stderr)
        return 2
    bench = G.Bench("cuda", repeat=7, warmup=2)
    mdev = G.mg.Device("cuda")
    cases = SMOKE if args.smoke else CASES
    if args.only:
        kinds = set(args.only.split(","))
        cases = [c for c in cases if c[0] in kinds]
    rows = []
    for spec in cases:
        t0 = time.perf_counter()
        try:
            rows.append(row(bench, spec, mdev))
        except Exception:  # noqa: BLE001
            print(f"  [{spec}] {traceback.format_exc()[-800:]}", file=sys.stderr)
            bench.cleanup()
            continue
        print(f"  row {spec} done in {time.perf_counter() - t0:.1f}s", file=sys.stderr,
              flush=True)
        if args.json:
            Path(args.json).write_text(json.dumps(
                {"gpu": torch.cuda.get_device_name(), "torch": torch.__version__,
                 "rows": [{**r, "cells": {k: v.json(0.0) for k, v in r["cells"].items()}}
                          for r in rows]}, indent=1))
    print(f"\n{torch.cuda.get_device_name()}, torch {torch.__version__}, float32, "
          "training step device-only (ms)\n")
    show(rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
