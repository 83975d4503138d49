"""Entries of mpsgraph.distributed: allReduce, i.e. its two graph ops allReduceStart (flatten a
bucket and start the all-reduce) and allReduceWait (wait, divide for "mean", split).

The op database runs in one process, a job of world size 1 (init() without torchrun's
environment), where the all-reduce of every op is the identity: these entries pin the graph
plumbing - buckets by dataType and size, shapes (size-0 and size-1 axes), dataTypes, views and
torch feeds, NaN - on every backend. The reduction across ranks is tested with 2 and 3 gloo
processes by tests/distributed/test_data_parallel.py. Without torch there is no module and no
entry (its ops are then not registered either)."""

from __future__ import annotations

import numpy as np

from opdb import FLOAT, ErrorInput, OpInfo, Sample, add, arr, f64, n_samples, shape

from ._common import mg_module as _mg

try:
    import mpsgraph.distributed as dist
except ImportError:  # no torch: no module, no ops
    dist = None

OPS = ("mean", "sum", "max", "min")


def _build(g, *ts, op, bucketBytes):
    dist.init()  # a job of one (idempotent)
    return dist.allReduce(g, list(ts), op, bucketBytes=bucketBytes)


def _ref(*xs, op, bucketBytes):
    return [f64(x).astype(x.dtype) for x in xs]  # one rank: each op is the identity


def _samples(rng, dt):
    for k in range(n_samples()):
        n = int(rng.integers(1, 5))
        xs = [arr(rng, shape(rng), dt) for _ in range(n)]
        # small buckets split the tensors over several start / wait pairs
        bucket = int(rng.choice([8, 64, 1 << 20]))
        yield Sample(xs, {"op": OPS[k % len(OPS)], "bucketBytes": bucket},
                     desc=f"{n} tensors, buckets of {bucket} bytes")


def _errors(rng):
    mg = _mg()
    x = np.ones((2, 3), np.float32)
    yield ErrorInput(Sample([x], {"op": "prod", "bucketBytes": 64}), mg.GraphError, "op")
    yield ErrorInput(Sample([x], {"op": "mean", "bucketBytes": 0}), mg.GraphError,
                     "bucketBytes")
    yield ErrorInput(Sample([np.ones((2,), np.int32)], {"op": "mean", "bucketBytes": 64}),
                     mg.DataTypeError, "tensors[0]", "floating")


if dist is not None:
    add(OpInfo("allReduceStart", build=_build, ref=_ref, samples=_samples, dtypes=FLOAT,
               kinds=("allReduceWait",), errors=_errors,
               notes="world size 1 here; tests/distributed for 2 and 3 ranks"))
