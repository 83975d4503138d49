"""Benchmark: data-parallel training steps through mpsgraph.distributed, 1..N processes.

Run (from the repository root)::

    PYTHONPATH=src python3 benchmarks/distributed.py --procs 1,2,3         # gloo, CPU
    PYTHONPATH=src python3 benchmarks/distributed.py --procs 1 --device cuda [--cuda-graph]
    PYTHONPATH=src python3 benchmarks/distributed.py --procs 1,2 --device cuda   # NCCL, 2 GPUs

For each world size the script starts that many processes of itself (RANK / WORLD_SIZE /
MASTER_ADDR / MASTER_PORT set as torchrun sets them; gloo on CPUs, NCCL on GPUs, one GPU per
rank), each of which trains one model data-parallel: the step is ONE compiled executable
(forward, loss, gradientForPrimaryTensor, allReduce of every gradient, adam, assigns). Models,
each large enough that the all-reduce matters:

- lstm: LSTM (T=16 on the CPU, T=100 on GPUs; I = H = 1024, ~8.4M weights in one layer) with
  a linear head, softmax cross-entropy; batch per rank 8 (CPU) / 64 (GPU);
- cnn: two 3x3 convolutions (1 -> 64 -> 128 channels, 8x8 images) and dense layers
  8192 -> 1024 -> 10 (~8.5M weights); batch per rank 32 (CPU) / 256 (GPU).

Timing: median of --steps steps after 3 warm-ups, per rank, then the slowest rank's median
(every step ends in a collective, so the ranks run in lock step). Throughput = world x batch /
step time; scaling efficiency = throughput(N) / (N x throughput(1)). On the CPU every process
gets one BLAS / OpenMP thread (so N processes use N cores, and N = 1 is not given the others).
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]


def build(kind: str, batch: int, gpu: bool, device, cuda_graph: bool):
    import mpsgraph as mg
    import mpsgraph.distributed as dist

    F32 = mg.float32
    g = mg.Graph()
    rng = np.random.default_rng(0)
    params = []

    def var(shape, scale):
        v = g.variable((rng.standard_normal(shape) * scale).astype(np.float32), shape, F32)
        params.append(v)
        return v

    if kind == "lstm":
        T, I, H = (100 if gpu else 16), 1024, 1024
        x = g.placeholder([T, batch, I], F32, name="x")
        W, R = var([4 * H, I], I ** -0.5), var([4 * H, H], H ** -0.5)
        d = mg.LSTMDescriptor()
        y = g.LSTM(x, R, inputWeight=W, descriptor=d)[0]
        last = g.reshape(g.sliceTensor(y, dimension=0, start=T - 1, length=1), [batch, H])
        head = var([H, 10], H ** -0.5)
        logits = g.matrixMultiplication(last, head)
        feed_x = rng.standard_normal((T, batch, I)).astype(np.float32)
    else:
        x = g.placeholder([batch, 1, 8, 8], F32, name="x")
        w1, w2 = var([64, 1, 3, 3], 1 / 3), var([128, 64, 3, 3], 1 / 24)
        desc = mg.Convolution2DOpDescriptor(paddingStyle=mg.PaddingStyle.TF_SAME)
        h = g.reLU(g.convolution2D(x, w1, descriptor=desc))
        h = g.reLU(g.convolution2D(h, w2, descriptor=desc))
        h = g.reshape(h, [batch, 128 * 64])
        d1, d2 = var([8192, 1024], 8192 ** -0.5), var([1024, 10], 1024 ** -0.5)
        logits = g.matrixMultiplication(g.reLU(g.matrixMultiplication(h, d1)), d2)
        feed_x = rng.standard_normal((batch, 1, 8, 8)).astype(np.float32)
    labels = g.placeholder([batch, 10], F32, name="labels")
    loss = g.softMaxCrossEntropy(logits, labels, -1, reductionType=mg.LossReductionType.mean)
    grads = dist.allReduce(g, g.gradientForPrimaryTensor(loss, params))
    lr = g.constant(1e-3, dataType=F32)
    updates = [g.assign(p, g.stochasticGradientDescent(learningRate=lr, values=p,
                                                       gradient=grads[p])) for p in params]
    dist.broadcastVariables(g)
    opts = {"cuda_graph": True} if cuda_graph else {}
    exe = g.compile({x: x.shapedType, labels: labels.shapedType}, [loss], updates,
                    device=device, **opts)
    onehot = np.eye(10, dtype=np.float32)[rng.integers(0, 10, batch)]
    n_params = sum(int(np.prod(p.shape)) for p in params)
    return exe, [feed_x, onehot], n_params


def worker(args) -> None:
    import mpsgraph.distributed as dist

    gpu = args.device == "cuda"
    ctx = dist.init(device=None if gpu else args.device, timeout=300)
    out = {}
    for kind in args.models.split(","):
        batch = {"lstm": 64 if gpu else 8, "cnn": 256 if gpu else 32}[kind]
        exe, feeds, n_params = build(kind, batch, gpu, ctx.device, args.cuda_graph)
        if gpu:
            import torch

            feeds = [torch.from_numpy(f).to(f"cuda:{ctx.device.index or 0}") for f in feeds]
        times = []
        for i in range(3 + args.steps):
            if gpu:
                torch.cuda.synchronize()
            t0 = time.perf_counter()
            exe.run(feeds)
            if gpu:
                torch.cuda.synchronize()
            if i >= 3:
                times.append(time.perf_counter() - t0)
        out[kind] = {"median": statistics.median(times), "batch": batch, "params": n_params}
    Path(args.out).joinpath(f"rank{ctx.rank}.json").write_text(json.dumps(out))
    dist.barrier()
    dist.shutdown()


def launch(world: int, args, out: Path) -> dict:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    procs = []
    for r in range(world):
        env = dict(os.environ, RANK=str(r), WORLD_SIZE=str(world), LOCAL_RANK=str(r),
                   MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port),
                   PYTHONPATH=os.pathsep.join([str(ROOT / "src"),
                                               os.environ.get("PYTHONPATH", "")]))
        if args.device != "cuda":
            env.update(OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1")
        env.setdefault("NCCL_NVLS_ENABLE", "0")
        cmd = [sys.executable, __file__, "--worker", "--out", str(out), "--device", args.device,
               "--steps", str(args.steps), "--models", args.models]
        if args.cuda_graph:
            cmd.append("--cuda-graph")
        procs.append(subprocess.Popen(cmd, env=env))
    for p in procs:
        if p.wait(timeout=args.timeout) != 0:
            raise SystemExit(f"world {world}: a rank exited {p.returncode}")
    ranks = [json.loads((out / f"rank{r}.json").read_text()) for r in range(world)]
    return {k: {**ranks[0][k], "median": max(rk[k]["median"] for rk in ranks)}
            for k in ranks[0]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--procs", default="1,2")
    ap.add_argument("--device", default="torch-cpu", help="cpu, torch-cpu or cuda")
    ap.add_argument("--models", default="lstm,cnn")
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--cuda-graph", action="store_true", help="compile(..., cuda_graph=True)")
    ap.add_argument("--timeout", type=float, default=900)
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--out", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        worker(args)
        return
    import tempfile

    import torch

    rows = {}
    for w in [int(p) for p in args.procs.split(",")]:
        with tempfile.TemporaryDirectory() as d:
            rows[w] = launch(w, args, Path(d))
    backend = "nccl" if args.device == "cuda" else "gloo"
    print(f"# data-parallel training step, {backend}, device {args.device}"
          f"{' (one CUDA graph per step)' if args.cuda_graph else ''}, torch {torch.__version__}, "
          f"median of {args.steps} steps, the slowest rank")
    print("| model | params | batch / rank | world | step (ms) | examples/s | scaling "
          "efficiency |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for kind in args.models.split(","):
        base = None
        for w, r in rows.items():
            tput = w * r[kind]["batch"] / r[kind]["median"]
            if w == min(rows):
                base = tput / w
            print(f"| {kind} | {r[kind]['params'] / 1e6:.1f}M | {r[kind]['batch']} | {w} | "
                  f"{r[kind]['median'] * 1e3:.1f} | {tput:.0f} | {tput / (w * base):.2f} |")


if __name__ == "__main__":
    main()
