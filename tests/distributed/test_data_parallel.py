"""Data-parallel training through torch.distributed on gloo (mpsgraph.distributed): 2 and 3
processes spawned here train the demo's CNN and LSTM; every rank's parameters are bitwise
equal after each step, and equal single-process training on the concatenated batch within
float32 tolerance. A rank that dies makes the others fail within the timeout."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")
if not torch.distributed.is_available():  # pragma: no cover
    pytest.skip("torch.distributed is not available", allow_module_level=True)

import mpsgraph as mg  # noqa: E402
from mpsgraph import demo  # noqa: E402

WORKER = Path(__file__).with_name("worker.py")
ROOT = Path(__file__).resolve().parents[2]
STEPS, BATCH = 3, 8


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _launch(world: int, out: Path, device: str, mode: str = "train", timeout: float = 240):
    port = _free_port()
    procs = []
    for r in range(world):
        env = dict(os.environ, RANK=str(r), WORLD_SIZE=str(world), LOCAL_RANK=str(r),
                   MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), MPSGRAPH_TEST_TIMEOUT="30",
                   OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1",
                   PYTHONPATH=os.pathsep.join([str(ROOT / "src"), os.environ.get(
                       "PYTHONPATH", "")]))
        procs.append(subprocess.Popen(
            [sys.executable, str(WORKER), str(out), device, str(STEPS), str(BATCH), mode],
            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    t0 = time.monotonic()
    results = []
    try:
        for p in procs:
            left = max(1.0, timeout - (time.monotonic() - t0))
            so, se = p.communicate(timeout=left)
            results.append((p.returncode, so, se))
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
    return results, time.monotonic() - t0


def _single_process(device: str, world: int) -> dict[str, np.ndarray]:
    """The same training on one process, each step on the ranks' batches concatenated."""
    import mpsgraph.distributed as dist

    x_tr, _, y_tr, _ = demo.load_digits_split(0)
    perm = np.random.default_rng([5, 0]).permutation(len(x_tr))
    g_batch = BATCH * world
    out = {}
    for kind, cls in (("cnn", demo.CNN), ("lstm", demo.LSTMClassifier)):
        # rank 0's seed; no batch norm / dropout, as data-parallel models are built
        model = cls(g_batch, 16, 0.01, 100, mg.Device(device), regularize=False)
        for s in range(STEPS):
            idx = perm[s * g_batch:(s + 1) * g_batch]
            model.train_step(x_tr[idx], y_tr[idx])
            vals = model.g.run({}, model.params, device=device)
            for j, p in enumerate(model.params):
                out[f"{kind}/{s}/{j}"] = vals[p].numpy()
    assert dist  # the module imports without a job
    return out


@pytest.mark.parametrize("world,device", [(2, "cpu"), (3, "torch-cpu")])
def test_data_parallel_matches_single_process(tmp_path, world, device):
    results, secs = _launch(world, tmp_path, device)
    for r, (rc, _, se) in enumerate(results):
        assert rc == 0, f"rank {r} exited {rc}:\n{se[-3000:]}"
    ranks = [dict(np.load(tmp_path / f"rank{r}.npz")) for r in range(world)]
    keys = sorted(ranks[0])
    for kind in ("cnn", "lstm"):  # every step of both models was saved
        assert {int(k.split("/")[1]) for k in keys if k.startswith(kind)} == set(range(STEPS))
    for r in range(1, world):
        assert sorted(ranks[r]) == keys
        for k in keys:  # every rank holds the same bits after every step
            np.testing.assert_array_equal(ranks[r][k], ranks[0][k], err_msg=f"rank {r} {k}")
    ref = _single_process(device, world)
    assert sorted(ref) == keys
    for k in keys:
        np.testing.assert_allclose(ranks[0][k], ref[k], rtol=1e-4, atol=2e-5, err_msg=k)
    # and training moved the weights (the comparison is not between two initial states)
    first = [k for k in keys if k.startswith("cnn/0/")][0]
    last = first.replace("/0/", f"/{STEPS - 1}/")
    assert not np.array_equal(ranks[0][first], ranks[0][last])


def test_a_dead_rank_fails_the_others(tmp_path):
    results, secs = _launch(2, tmp_path, "cpu", mode="die", timeout=120)
    (rc0, _, se0), (rc1, _, _) = results
    assert rc1 == 3
    assert rc0 != 0, "rank 0 must fail when its peer is gone"
    assert secs < 110
    assert "Error" in se0 or "error" in se0, se0[-2000:]


def test_demo_under_torchrun_matches_one_process(tmp_path):
    """`torchrun --nproc_per_node=2 -m mpsgraph demo --distributed` trains to the same
    accuracy and loss as one process (each global batch split over the ranks)."""
    pytest.importorskip("sklearn")
    pytest.importorskip("matplotlib")
    args = ["demo", "--epochs", "2", "--limit-batches", "6", "--out", str(tmp_path)]
    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONPATH=os.pathsep.join(
        [str(ROOT / "src"), os.environ.get("PYTHONPATH", "")]))
    run = dict(capture_output=True, text=True, env=env, timeout=240, cwd=tmp_path)
    dist_run = subprocess.run([sys.executable, "-m", "torch.distributed.run",
                               "--nproc_per_node=2", "--master_port", str(_free_port()),
                               "-m", "mpsgraph", *args, "--distributed"], **run)
    assert dist_run.returncode == 0, dist_run.stderr[-3000:]
    one = subprocess.run([sys.executable, "-m", "mpsgraph", *args, "--no-batch-norm"], **run)
    assert one.returncode == 0, one.stderr[-3000:]

    def results(out):  # "cnn: test accuracy 97.3%, test loss 0.0855 after ..." per model
        return [ln.split(" after ")[0] for ln in out.splitlines() if ": test accuracy" in ln]

    assert len(results(dist_run.stdout)) == 2, dist_run.stdout  # rank 0 alone prints
    assert results(dist_run.stdout) == results(one.stdout)
    assert "2 ranks (gloo)" in dist_run.stdout
