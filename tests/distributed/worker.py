"""One rank of the data-parallel tests (tests/distributed/test_data_parallel.py): joins the
job from the environment (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT), trains the demo's CNN
and LSTM data-parallel for a few steps and writes every parameter after every step to
OUT/rank<r>.npz. Argv: out_dir device steps batch [mode]; mode "die" makes rank 1 exit right
after joining (the others must fail, not hang)."""

from __future__ import annotations

import os
import sys

import numpy as np


def main() -> int:
    out, device, steps, batch = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    mode = sys.argv[5] if len(sys.argv) > 5 else "train"
    import mpsgraph as mg
    import mpsgraph.distributed as dist
    from mpsgraph import demo

    ctx = dist.init(device=device, timeout=float(os.environ.get("MPSGRAPH_TEST_TIMEOUT", 60)))
    if mode == "die" and ctx.rank == 1:
        os._exit(3)
    x_tr, x_te, y_tr, y_te = demo.load_digits_split(0)
    saved = {}
    for kind, cls in (("cnn", demo.CNN), ("lstm", demo.LSTMClassifier)):
        # a different seed per rank: broadcastVariables must make the weights equal
        model = cls(batch, 16, 0.01, 100 + ctx.rank, mg.Device(ctx.device.key),
                    distributed=True)
        for s, idx in enumerate(dist.shard(len(x_tr), epoch=0, batch=batch, seed=5)[:steps]):
            model.train_step(x_tr[idx], y_tr[idx])
            vals = model.g.run({}, model.params, device=ctx.device)
            for j, p in enumerate(model.params):
                saved[f"{kind}/{s}/{j}"] = vals[p].numpy()
    np.savez(os.path.join(out, f"rank{ctx.rank}.npz"), **saved)
    dist.barrier()
    dist.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
