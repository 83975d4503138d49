"""Sweep of the torch backend's LSTM paths, tilings and float32 dot precisions on a GPU.

Run (from the repository root, on a CUDA machine)::

    PYTHONPATH=src python3 benchmarks/lstm_sweep.py

Each row times `rnn.lstm_forward` and `rnn.lstm_backward` (everything a training step does:
the input projection, the recurrence, the weight-gradient GEMMs) captured in a CUDA graph,
device-only: 10 replays queued per sample, median of 15. The environment variables of
backends/torch/rnn.py select what runs: MPSGRAPH_LSTM_KERNEL (persistent | step | torch),
MPSGRAPH_LSTM_TILING ("BN,BU[,BKF,BKB[,WARPS[,STAGES]]]" of the persistent kernels;
MPSGRAPH_LSTM_TILING_BWD for the backward kernel alone),
MPSGRAPH_LSTM_FP32_DOT (ieee | tf32 | tf32x3 | split), MPSGRAPH_LSTM_R_RESIDENT (1, the default: the
persistent kernels load their R slice once per launch where `lstm_seq_fwd.r_resident`'s caps
hold; 0: the K-chunk loop, the "chunked" rows) and MPSGRAPH_LSTM_PREFETCH (0 turns the next-step
input prefetch off). "us/step" = (forward + backward) / (2T); "plan" shows the tiling and, with
R_RESIDENT, the resident K extents of the forward / backward ("-": that kernel runs the K-chunk
loop). Only the R_RESIDENT rows: ``python3 benchmarks/lstm_sweep.py --resident``.
Results and what they led to: benchmarks/RESULTS.md and benchmarks/LSTM_DESIGNS.md.
"""

from __future__ import annotations

import os
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

import torch  # noqa: E402

from mpsgraph.backends.torch import rnn  # noqa: E402
from mpsgraph.backends.torch.kernels import lstm_seq_fwd  # noqa: E402

DEV = torch.device("cuda")
DEFAULT_ACTS = (3, 3, 2, 3, 2)      # sigmoid i, f, o; tanh z and cell
PEEP_ACTS = (4, 3, 2, 3, 2)         # hardSigmoid input gate
TILINGS = ["16,16", "16,32", "32,16", "16,64", "32,32", "64,16", "16,16,32,64,4,1",
           "16,16,64,128,2", "16,16,64,128,8"]


def graph_us(fn, batch: int = 10, rep: int = 15) -> float:
    """Median device time (us) of `fn` captured in a CUDA graph."""
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(2):
            fn()
    torch.cuda.current_stream().wait_stream(s)
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        fn()
    for _ in range(3):
        g.replay()
    torch.cuda.synchronize()
    ts = []
    for _ in range(rep):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        for _ in range(batch):
            g.replay()
        b.record()
        b.synchronize()
        ts.append(a.elapsed_time(b) / batch)
    return statistics.median(ts) * 1e3


def case(T: int, N: int, H: int, dt: torch.dtype, masked: bool = False, bidir: bool = False):
    """(forward, backward) closures of an LSTM with I = H (bidirectional with `bidir`);
    `masked` adds a per-step mask, a peephole and a hardSigmoid input gate."""
    g = torch.Generator().manual_seed(0)

    def r(*s, sc=0.1):
        return (torch.randn(*s, generator=g) * sc).to(DEV, dt)

    D = 2 if bidir else 1
    x, R, W, b = r(T, N, H), r(D, 4 * H, H), r(D * 4 * H, H), r(D * 4 * H)
    h0, c0 = r(N, D * H), r(N, D * H)
    m = (torch.rand(T, N, D * H, generator=g) > 0.1).to(DEV, dt) if masked else None
    p = r(D, 4 * H) if masked else None
    kw = dict(reverse=False, bidirectional=bidir, forget_gate_last=False,
              activations=PEEP_ACTS if masked else DEFAULT_ACTS)
    st, ce, zs = rnn.lstm_forward(x, R, W, b, h0, c0, m, p, **kw)
    dst = r(T, N, D * H, sc=1.0)

    def fwd():
        return rnn.lstm_forward(x, R, W, b, h0, c0, m, p, **kw)

    def bwd():
        return rnn.lstm_backward(x, R, dst, zs, ce, W, b, h0, c0, m, p, **kw, need_b=True,
                                 need_peephole=masked, need_h0=True, need_c0=True)

    return fwd, bwd


def row(label: str, T: int, N: int, H: int, dt: torch.dtype, env: dict, masked=False,
        bidir=False) -> None:
    old = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    D = 2 if bidir else 1
    try:
        fwd, bwd = case(T, N, H, dt, masked, bidir)
        tf, tb = graph_us(fwd), graph_us(bwd)
        tf32 = bool(torch.backends.cuda.matmul.allow_tf32)
        pl = lstm_seq_fwd.plan(N, H, D, DEV, dt, allow_tf32=tf32)
        tiling = f"{pl.block_n}x{pl.block_u} P={pl.programs}" if pl else "-"
        # the cluster path (float32, N <= 16, Hopper+) takes these calls over from the plan
        r_probe = torch.empty((D, 4 * H, H), dtype=dt, device="meta")
        cl = lstm_seq_fwd.cluster_config(DEV, T, N, r_probe, D, None, None, ())
        if cl is not None and os.environ.get("MPSGRAPH_LSTM_KERNEL", "persistent") == "persistent":
            pl = None
            tiling = (f"cluster fwd {cl.cj_f}x{cl.kp_f} ({cl.nt_f} thr) "
                      f"bwd {cl.cj_b}x{cl.kp_b} ({cl.nt_b} thr)")
        if pl and os.environ.get("MPSGRAPH_LSTM_R_RESIDENT") != "0":
            prec = lstm_seq_fwd.precision(dt, tf32, H)
            ks = [lstm_seq_fwd.r_resident(H, pl, dt, prec, b) or "-" for b in (False, True)]
            tiling += f" R res K={ks[0]}/{ks[1]}"
        shape = f"T={T} N={N} H={H}{' bidir' if bidir else ''} {str(dt)[6:]}"
        print(f"| {label} | {shape} | {env} | {tf:.0f} | {tb:.0f} | {tf + tb:.0f} "
              f"| {(tf + tb) / (2 * T):.2f} | {tiling} |", flush=True)
    except Exception as e:  # noqa: BLE001 - one variant failing must not stop the sweep
        print(f"| {label} | T={T} N={N} H={H} {dt} | {env} | error {str(e)[:150]} |",
              flush=True)
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    torch.cuda.empty_cache()


def resident_rows(T: int, N: int, H: int, dt: torch.dtype) -> None:
    """MPSGRAPH_LSTM_R_RESIDENT=1 with the default tiling and with 16,32 (float32: also with
    "tf32" dots, whose larger operand cap lets (100, 64, 256) run resident; the default "tf32x3"
    does not fit there), each next to its chunked twin."""
    envs = [{}, {"MPSGRAPH_LSTM_TILING": "16,32"}]
    if dt == torch.float32:
        envs += [{"MPSGRAPH_LSTM_FP32_DOT": "tf32"},
                 {"MPSGRAPH_LSTM_FP32_DOT": "tf32", "MPSGRAPH_LSTM_TILING": "16,32"}]
    for extra in envs:
        env = {"MPSGRAPH_LSTM_KERNEL": "persistent", **extra}
        row("chunked", T, N, H, dt, {**env, "MPSGRAPH_LSTM_R_RESIDENT": "0"})
        row("R res", T, N, H, dt, {**env, "MPSGRAPH_LSTM_R_RESIDENT": "1"})
        if not extra:
            row("R res mask+peep", T, N, H, dt, {"MPSGRAPH_LSTM_R_RESIDENT": "1"}, masked=True)


def main() -> int:
    if not torch.cuda.is_available():
        print("needs a CUDA device", file=sys.stderr)
        return 2
    print("| what | shape | env | fwd us | bwd us | total us | us/step | plan |")
    print("|---|---|---|---:|---:|---:|---:|---|")
    if "--resident" in sys.argv[1:]:
        for T, N, H in [(100, 64, 256), (50, 8, 128)]:
            for dt in (torch.float32, torch.bfloat16):
                resident_rows(T, N, H, dt)
        return 0
    for T, N, H in [(100, 64, 256), (50, 8, 128)]:
        for dt in (torch.float32, torch.bfloat16):
            row("step path", T, N, H, dt, {"MPSGRAPH_LSTM_KERNEL": "step"})
            row("default", T, N, H, dt, {})
            if dt == torch.float32:
                for prec in ("ieee", "tf32x3", "split", "tf32"):
                    row(prec, T, N, H, dt, {"MPSGRAPH_LSTM_KERNEL": "persistent",
                                            "MPSGRAPH_LSTM_FP32_DOT": prec})
            for til in TILINGS:
                env = {"MPSGRAPH_LSTM_KERNEL": "persistent", "MPSGRAPH_LSTM_TILING": til}
                row("tiling", T, N, H, dt, env)
            row("mask+peep default", T, N, H, dt, {}, masked=True)
            resident_rows(T, N, H, dt)
    for T, N, H in [(100, 64, 1024), (200, 256, 512)]:
        for dt in (torch.float32, torch.bfloat16):
            row("step path", T, N, H, dt, {"MPSGRAPH_LSTM_KERNEL": "step"})
            row("default", T, N, H, dt, {})
            if dt == torch.float32:
                row("tf32x3", T, N, H, dt, {"MPSGRAPH_LSTM_KERNEL": "persistent",
                                            "MPSGRAPH_LSTM_FP32_DOT": "tf32x3"})
    return 0


if __name__ == "__main__":
    sys.exit(main())
